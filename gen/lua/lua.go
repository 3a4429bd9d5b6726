// Package lua emits the Lua bundle: one EVAL-ready file per script, each
// with a header generated from its manifest entry, and index.json, the
// machine-readable bundle for clients in other languages.
package lua

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"

	"github.com/echomq/echomq/gen/emit"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/templates"
)

// Dir is where the bundle is written, relative to the repository root.
const Dir = "sdk/lua"

// Script is one rendered script of the bundle.
type Script struct {
	Name   string
	File   string // file name inside Dir
	Source string // the exact text sent with EVAL
	SHA1   string // hex SHA-1 of Source, as EVALSHA takes it
}

// Bundle is the rendered bundle.
type Bundle struct {
	Scripts []Script
	// Digest identifies the bundle: the hex SHA-1 of the scripts' hex
	// SHA-1s, in manifest order, each followed by a newline.
	Digest string
}

// Render renders every script of p.
func Render(p *model.Protocol) (*Bundle, error) {
	t, err := template.New("script.lua.tmpl").Funcs(template.FuncMap{
		"inc":         func(i int) int { return i + 1 },
		"source":      func() string { return emit.Source },
		"regenerate":  func() string { return emit.Regenerate },
		"keyShape":    p.KeyShape,
		"replyLines":  func(s model.Script) []string { return s.ReplyLines() },
		"transitions": func(s model.Script) string { return s.TransitionText() },
	}).ParseFS(templates.FS, "lua/script.lua.tmpl")
	if err != nil {
		return nil, err
	}
	b := &Bundle{}
	var all strings.Builder
	for _, s := range p.Scripts {
		var out bytes.Buffer
		if err := t.Execute(&out, s); err != nil {
			return nil, fmt.Errorf("lua: script %s: %w", s.Name, err)
		}
		src := out.String()
		sum := sha1.Sum([]byte(src))
		sc := Script{Name: s.Name, File: s.Name + ".lua", Source: src, SHA1: hex.EncodeToString(sum[:])}
		b.Scripts = append(b.Scripts, sc)
		all.WriteString(sc.SHA1 + "\n")
	}
	sum := sha1.Sum([]byte(all.String()))
	b.Digest = hex.EncodeToString(sum[:])
	return b, nil
}

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

type indexKey struct {
	Name  string `json:"name"`
	Shape string `json:"shape"`
}

type indexArg struct {
	Name string `json:"name"`
	Type string `json:"type"`
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

// Emit returns the bundle's files: one .lua per script and index.json.
func Emit(p *model.Protocol, b *Bundle) ([]emit.File, error) {
	var files []emit.File
	idx := index{
		Generated:     emit.Marker,
		Protocol:      p.Name,
		Version:       p.Version.String(),
		VersionRecord: p.VersionRecord(),
		Digest:        b.Digest,
		Scripts:       []indexScript{},
	}
	for i, s := range p.Scripts {
		r := b.Scripts[i]
		files = append(files, emit.File{Path: Dir + "/" + r.File, Data: []byte(r.Source)})
		is := indexScript{Name: s.Name, File: r.File, SHA1: r.SHA1, Keys: []indexKey{}, Argv: []indexArg{}, Refusals: []indexRefusal{}}
		for _, k := range s.Keys {
			is.Keys = append(is.Keys, indexKey{Name: k.Name, Shape: p.KeyShape(k)})
		}
		for _, a := range s.Argv {
			is.Argv = append(is.Argv, indexArg{Name: a.Name, Type: a.Type})
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
	files = append(files, emit.File{Path: Dir + "/index.json", Data: append(data, '\n')})
	return files, nil
}
