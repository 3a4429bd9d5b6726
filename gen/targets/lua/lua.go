// Package lua is the target that writes the Lua bundle gen/bundle renders:
// one EVAL-ready file per script, each with the header generated from its
// manifest entry, and index.json, the machine-readable bundle (names,
// SHA-1s, KEYS, ARGV, replies, refusals, digest) for clients in other
// languages.
package lua

import (
	"encoding/json"

	"github.com/echomq/echomq/gen/header"
	"github.com/echomq/echomq/gen/target"
)

// Dir is where the bundle is written, relative to the repository root.
const Dir = "sdk/lua"

// index is the shape of index.json.
type index struct {
	Generated     string        `json:"generated"`
	Protocol      string        `json:"protocol"`
	Version       string        `json:"version"`
	VersionRecord string        `json:"version_record"`
	Digest        string        `json:"bundle_digest"`
	Scripts       []indexScript `json:"scripts"`
}

type indexScript struct {
	Name     string         `json:"name"`
	File     string         `json:"file"`
	SHA1     string         `json:"sha1"`
	Keys     []indexKey     `json:"keys"`
	Argv     []indexArg     `json:"argv"`
	Reply    indexReply     `json:"reply"`
	Refusals []indexRefusal `json:"refusals"`
}

// indexKey is one KEYS slot; Repeated marks a group of zero or more keys,
// the script's last, one per value of its repeated ARGV group.
type indexKey struct {
	Name     string `json:"name"`
	Shape    string `json:"shape"`
	Repeated bool   `json:"repeated,omitempty"`
}

// indexArg is one ARGV slot or reply element; Repeated marks a group of
// zero or more ARGV, the script's last.
type indexArg struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Repeated bool   `json:"repeated,omitempty"`
}

type indexReply struct {
	Type     string         `json:"type"`
	Nil      bool           `json:"nil"`
	Repeated bool           `json:"repeated,omitempty"`
	Values   map[string]int `json:"values,omitempty"`
	Elements []indexArg     `json:"elements,omitempty"`
}

type indexRefusal struct {
	Class   string `json:"class"`
	Message string `json:"message"`
}

// Target writes the bundle: one EVAL-ready .lua file per script and
// index.json.
var Target = target.Func("lua", Generate)

// Generate returns the bundle's files: one .lua per script and index.json.
func Generate(in *target.Input) ([]target.File, error) {
	p, b := in.Protocol, in.Bundle
	var files []target.File
	idx := index{
		Generated:     header.Marker,
		Protocol:      p.Name,
		Version:       p.Version.String(),
		VersionRecord: p.VersionRecord(),
		Digest:        b.Digest,
		Scripts:       []indexScript{},
	}
	for i, s := range p.Scripts {
		r := b.Scripts[i]
		files = append(files, target.File{Path: Dir + "/" + r.File, Data: []byte(r.Source)})
		is := indexScript{Name: s.Name, File: r.File, SHA1: r.SHA1, Keys: []indexKey{}, Argv: []indexArg{}, Refusals: []indexRefusal{}}
		for _, k := range s.Keys {
			is.Keys = append(is.Keys, indexKey{Name: k.Name, Shape: p.KeyShape(k), Repeated: k.Repeated})
		}
		for _, a := range s.Argv {
			is.Argv = append(is.Argv, indexArg{Name: a.Name, Type: a.Type, Repeated: a.Repeated})
		}
		is.Reply = indexReply{Type: s.Reply.Type, Nil: s.Reply.Nil != "", Repeated: s.Reply.Repeated}
		if len(s.Reply.Values) > 0 {
			is.Reply.Values = map[string]int{}
			for _, v := range s.Reply.Values {
				is.Reply.Values[v.Name] = int(v.Value)
			}
		}
		for _, e := range s.Reply.Elements {
			is.Reply.Elements = append(is.Reply.Elements, indexArg{Name: e.Name, Type: e.Type})
		}
		for _, f := range s.Refusals {
			is.Refusals = append(is.Refusals, indexRefusal{Class: f.Class, Message: f.Message})
		}
		idx.Scripts = append(idx.Scripts, is)
	}
	data, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return nil, err
	}
	files = append(files, target.File{Path: Dir + "/index.json", Data: append(data, '\n')})
	return files, nil
}
