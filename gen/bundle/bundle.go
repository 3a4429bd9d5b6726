// Package bundle renders the Lua bundle, the protocol's identity: the exact
// EVAL text of every script (its generated header and its resolved body),
// the SHA-1 of each, the bundle digest, and the machine-readable index that
// clients in other languages read. It is computed once per manifest, before
// any target runs; every target, the prober and the release records read
// the same Bundle and never render a script themselves.
package bundle

import (
	"bytes"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"fmt"
	"strings"
	"text/template"

	"github.com/echomq/echomq/gen/header"
	"github.com/echomq/echomq/gen/model"
)

//go:embed script.lua.tmpl
var scriptTemplate string

// Script is one rendered script of the bundle.
type Script struct {
	Name   string `json:"name"`
	File   string `json:"file"`   // file name of the script in the bundle directory
	Source string `json:"source"` // the exact text sent with EVAL
	SHA1   string `json:"sha1"`   // hex SHA-1 of Source, as EVALSHA takes it
}

// Bundle is the rendered bundle.
type Bundle struct {
	Scripts []Script `json:"scripts"` // in manifest order
	// Digest identifies the bundle: the hex SHA-1 of the scripts' hex
	// SHA-1s, in manifest order, each followed by a newline.
	Digest string `json:"digest"`
}

// Script returns the rendered script named name.
func (b *Bundle) Script(name string) (Script, bool) {
	for _, s := range b.Scripts {
		if s.Name == name {
			return s, true
		}
	}
	return Script{}, false
}

// SHA1s maps each script's name to the hex SHA-1 of its source.
func (b *Bundle) SHA1s() map[string]string {
	m := make(map[string]string, len(b.Scripts))
	for _, s := range b.Scripts {
		m[s.Name] = s.SHA1
	}
	return m
}

// Render renders every script of p: the file header generated from the
// script's manifest entry (KEYS, ARGV, Output, refusals, transitions)
// followed by the body the model resolved.
func Render(p *model.Protocol) (*Bundle, error) {
	t, err := template.New("script.lua.tmpl").Funcs(template.FuncMap{
		"inc":         func(i int) int { return i + 1 },
		"source":      func() string { return header.Source },
		"regenerate":  func() string { return header.Regenerate },
		"keyShape":    p.KeyShape,
		"replyLines":  func(s model.Script) []string { return s.ReplyLines() },
		"transitions": func(s model.Script) string { return s.TransitionText() },
	}).Parse(scriptTemplate)
	if err != nil {
		return nil, err
	}
	b := &Bundle{Scripts: []Script{}}
	var all strings.Builder
	for _, s := range p.Scripts {
		var out bytes.Buffer
		if err := t.Execute(&out, s); err != nil {
			return nil, fmt.Errorf("bundle: script %s: %w", s.Name, err)
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
