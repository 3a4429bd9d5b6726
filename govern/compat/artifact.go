package compat

import (
	"context"
	"fmt"

	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/target"
	"github.com/echomq/echomq/gen/targets"
	"github.com/echomq/echomq/gen/targets/lua"
	"github.com/echomq/echomq/govern/apirecord"
	"github.com/echomq/echomq/govern/lang"
	"github.com/echomq/echomq/govern/langs"
)

// Surface is what users compile and call against, taken from the
// artifacts generated from one manifest.
type Surface struct {
	// Records are the public APIs of the SDKs, by language name
	// (lang.Language.Name, govern/langs): one feature per line. A
	// language without a record here is not compared.
	Records map[string]*Record
	// Slots are each script's KEYS and ARGV slot names, in order.
	Slots map[string]apirecord.Slots
	// Lua is each script's body rendered to Lua (its snippets in place):
	// a body or snippet whose source changed while every script renders
	// the same Lua changed nothing a server runs.
	Lua map[string]string
}

// Record is one language's API record on one side.
type Record struct {
	// Lines are the features, one per line (lang.Language.Read).
	Lines []string
	// File names where the record was read from, for positions, and At
	// gives the 1-based line of each feature in it; both are empty when
	// the record was read from an SDK rather than a recorded file.
	File string
	At   map[string]int
}

// Record returns the record of the language named name, or nil.
func (s *Surface) Record(name string) *Record {
	if s == nil {
		return nil
	}
	return s.Records[name]
}

// SetRecord sets the record of the language named name.
func (s *Surface) SetRecord(name string, r *Record) {
	if s.Records == nil {
		s.Records = map[string]*Record{}
	}
	s.Records[name] = r
}

// SurfaceOf generates the artifacts of p in memory and reads their
// surface: the Lua slots of the bundle, the records of every language
// whose record follows from the manifest (lang.Language.FromManifest: the
// Go SDK's, from the generated Go files with the hand-written files beside
// them in the working tree at root).
func SurfaceOf(root string, p *model.Protocol) (*Surface, error) {
	files, err := targets.Generate(p, SurfaceTargets())
	if err != nil {
		return nil, err
	}
	slots, err := apirecord.LuaSlots(files)
	if err != nil {
		return nil, err
	}
	s := &Surface{Slots: slots, Records: map[string]*Record{}, Lua: map[string]string{}}
	for _, sc := range p.Scripts {
		s.Lua[sc.Name] = sc.Body
	}
	for _, l := range langs.All() {
		if l.FromManifest() {
			lines, err := l.Read(context.Background(), lang.Source{Root: root, Protocol: p, Files: files})
			if err != nil {
				return nil, err
			}
			s.Records[l.Name()] = &Record{Lines: lines}
		}
	}
	return s, nil
}

// SurfaceTargets are the targets whose files a surface is read from: the
// ones the FromManifest languages read their records from (the Go SDK's,
// golang) and the Lua bundle with its index (lua). The others (docs,
// conformance vectors, the TypeScript wire layer) emit no Go or Lua, and
// generating them would only slow every check down.
func SurfaceTargets() []target.Target {
	want := map[string]bool{lua.Target.Name(): true}
	for _, l := range langs.All() {
		if l.FromManifest() && l.Target() != "" {
			want[l.Target()] = true
		}
	}
	var out []target.Target
	for _, t := range targets.All() {
		if want[t.Name()] {
			out = append(out, t)
		}
	}
	return out
}

// ArtifactRules are the rules that compare generated artifacts. They apply
// when both sides of a comparison carry a Surface: the two of each
// language whose record follows from the manifest (LanguageRules; Go's),
// the Lua slots', then the two of each language whose record is read from
// its SDK's sources (TypeScript's, Python's), in the order of govern/langs.
func ArtifactRules() []Rule {
	var out, sdk []Rule
	for _, l := range langs.All() {
		if l.FromManifest() {
			out = append(out, LanguageRules(l)...)
		} else {
			sdk = append(sdk, LanguageRules(l)...)
		}
	}
	out = append(out, Rule{ID: "LUA_SAME_SLOTS", Bump: Major, Wire: true, Purpose: "Callers of a script of the baseline pass KEYS and ARGV by position: a slot lost, added or reordered sends values to the wrong place."})
	return append(out, sdk...)
}

// LanguageRules are the two rules of a language's API record: a feature
// gone (<prefix>_API_NO_DELETE) and a feature changed
// (<prefix>_API_SAME_SIGNATURE), both majors of category api.
func LanguageRules(l lang.Language) []Rule {
	removed, changed := l.Purposes()
	return []Rule{
		{ID: l.RulePrefix() + "_API_NO_DELETE", Bump: Major, Wire: true, Category: CategoryAPI, Purpose: removed},
		{ID: l.RulePrefix() + "_API_SAME_SIGNATURE", Bump: Major, Wire: true, Category: CategoryAPI, Purpose: changed},
	}
}

func compareSurfaces(d *differ, old, new Side) []Finding {
	var out []Finding
	for _, l := range langs.All() {
		out = append(out, compareRecords(d, l, old, new)...)
	}
	for _, b := range apirecord.CompareSlots(old.Surface.Slots, new.Surface.Slots) {
		r := Rule{ID: "LUA_SAME_SLOTS", Bump: Major, Wire: true}
		f := Finding{Rule: r.ID, Bump: r.Bump, Wire: r.Wire, Category: r.category(), Path: "lua: " + b.Where, Message: b.Message, Judged: true}
		// Point at the script in the manifest: the new one, or the old one
		// when the script is gone.
		name := scriptOf(b.Where)
		path := "scripts[" + escapeIdent(name) + "]"
		if l, ok := d.new[path]; ok {
			f.File, f.Line, f.Column = new.File, l.pos.Line, l.pos.Col
		} else if l, ok := d.old[path]; ok {
			f.File, f.Line, f.Column = old.File, l.pos.Line, l.pos.Col
		} else {
			f.File = new.File
		}
		f.Anchor = d.newAnchor(path, new.File)
		out = append(out, f)
	}
	return out
}

// compareRecords judges a language's record on the new side against the
// old one's, when both sides carry one. A break is located at the
// manifest element that generates its identifier, read from the
// language's annotations (the element in the new manifest, or, when it is
// gone, the old one: the anchor then is what enclosed it in the new
// manifest), else at the section whose family of names it belongs to,
// else at the top; and at the recorded line that broke when the baseline
// is a record.
func compareRecords(d *differ, l lang.Language, old, new Side) []Finding {
	or, nr := old.Surface.Record(l.Name()), new.Surface.Record(l.Name())
	if or == nil || nr == nil {
		return nil
	}
	rules := LanguageRules(l)
	newNames, oldNames := d.newNames.of(l.Name()), d.oldNames.of(l.Name())
	var out []Finding
	for _, b := range l.Compare(or.Lines, nr.Lines) {
		r := rules[1]
		if b.Kind == apirecord.Removed || b.Kind == apirecord.Moved {
			// A feature gone, or moved to another entry point (one finding
			// per move, naming every name moved: one waiver acknowledges it).
			r = rules[0]
		}
		where, msg := l.Explain(b)
		f := Finding{Rule: r.ID, Bump: r.Bump, Wire: r.Wire, Category: r.category(), Path: l.Name() + ": " + where, Message: msg, File: new.File, Judged: true}
		f.Anchor = d.top(new.File)
		if newNames != nil || oldNames != nil {
			at := func(t tree, file, p string) {
				pos := t[p].pos
				f.File, f.Line, f.Column = file, pos.Line, pos.Col
				f.Message += " (manifest: " + p + ")"
			}
			bare := lang.Unqualified
			if p, ok := newNames.locate(bare(b.Where) + " " + bare(b.Old) + " " + bare(b.New)); ok {
				at(d.new, new.File, p)
				f.Anchor = Location{File: new.File, Line: f.Line, Column: f.Column}
			} else if p, ok := oldNames.locate(bare(b.Where) + " " + bare(b.Old)); ok && d.new.has(p) {
				at(d.new, new.File, p)
				f.Anchor = Location{File: new.File, Line: f.Line, Column: f.Column}
			} else if ok {
				at(d.old, old.File, p)
				f.Anchor = d.newAnchor(p, new.File)
			}
			if f.Line == 0 {
				// No element generates the name alone (a wire-layer type the
				// whole of a section generates, a hand-written name): the
				// section of the manifest it comes from, or the top.
				f.Anchor = d.newAnchor(newNames.section(bare(b.Where)), new.File)
				f.File, f.Line, f.Column = f.Anchor.File, f.Anchor.Line, f.Anchor.Column
			}
		}
		if n := or.At[b.Old]; or.File != "" && n > 0 {
			// The recorded line that broke is the place to look.
			f.File, f.Line, f.Column = or.File, n, 1
		}
		out = append(out, f)
	}
	return out
}

// scriptOf reads the script name out of a slot break's Where ("script
// NAME", "script NAME KEYS").
func scriptOf(where string) string {
	var name string
	if _, err := fmt.Sscanf(where, "script %s", &name); err != nil {
		return where
	}
	return name
}
