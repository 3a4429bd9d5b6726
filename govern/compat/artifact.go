package compat

import (
	"fmt"
	"github.com/echomq/echomq/gen/targets"

	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/govern/apirecord"
)

// Surface is what users compile and call against, taken from the
// artifacts generated from one manifest.
type Surface struct {
	// API is the exported API of the generated Go package, one feature per
	// line (see package surface).
	API []string
	// APIFile names where API was read from, for positions; APILines gives
	// the 1-based line of each feature in it. Both are empty when the API
	// was generated in memory.
	APIFile  string
	APILines map[string]int
	// Slots are each script's KEYS and ARGV slot names, in order.
	Slots map[string]apirecord.Slots
	// TS is the public API of the TypeScript SDK (sdk/ts), one feature per
	// line (apirecord.TSAPI); nil when it was not read, and then the
	// TypeScript API is not compared (TSRules). TSFile and TSLines locate a
	// recorded one, as APIFile and APILines do.
	TS      []string
	TSFile  string
	TSLines map[string]int
}

// SurfaceOf generates the artifacts of p in memory and reads their
// surface.
func SurfaceOf(p *model.Protocol) (*Surface, error) {
	files, err := targets.Generate(p, nil)
	if err != nil {
		return nil, err
	}
	api, err := apirecord.GoAPI(files)
	if err != nil {
		return nil, err
	}
	slots, err := apirecord.LuaSlots(files)
	if err != nil {
		return nil, err
	}
	return &Surface{API: api, Slots: slots}, nil
}

// ArtifactRules are the rules that compare generated artifacts. They apply
// when both sides of a comparison carry a Surface.
func ArtifactRules() []Rule {
	return []Rule{
		{ID: "GO_API_NO_DELETE", Bump: Major, Wire: true, Category: CategoryAPI, Purpose: "Code compiled against the generated Go package stops compiling when an exported name it uses is gone (golang.org/x/exp/apidiff: removal is incompatible)."},
		{ID: "GO_API_SAME_SIGNATURE", Bump: Major, Wire: true, Category: CategoryAPI, Purpose: "Code compiled against the generated Go package stops compiling when an exported name changes its type or signature, or an interface it implements grows."},
		{ID: "LUA_SAME_SLOTS", Bump: Major, Wire: true, Purpose: "Callers of a script of the baseline pass KEYS and ARGV by position: a slot lost, added or reordered sends values to the wrong place."},
	}
}

func compareSurfaces(d *differ, old, new Side) []Finding {
	rules := map[string]Rule{}
	for _, r := range ArtifactRules() {
		rules[r.ID] = r
	}
	var out []Finding
	newIdents, oldIdents := goIdents(d.new), goIdents(d.old)
	for _, b := range apirecord.CompareAPI(old.Surface.API, new.Surface.API) {
		r := rules["GO_API_SAME_SIGNATURE"]
		if b.Kind == apirecord.Removed {
			r = rules["GO_API_NO_DELETE"]
		}
		msg := b.Message
		switch b.Kind {
		case apirecord.Removed:
			msg = "gone from the generated Go package (was: " + b.Old + ")"
		case apirecord.Changed:
			msg = "was: " + b.Old + "; now: " + b.New
		}
		f := Finding{Rule: r.ID, Bump: r.Bump, Wire: r.Wire, Category: r.category(), Path: "go: " + b.Where, Message: msg, File: new.File, Judged: true}
		// The manifest element that generates the name locates the
		// finding, whatever the baseline: the element in the new manifest,
		// or, when it is gone, the old one (the anchor then is what
		// enclosed it in the new manifest).
		f.Anchor = d.top(new.File)
		if p, ok := locateGo(b.Where+" "+b.Old+" "+b.New, newIdents); ok {
			l := d.new[p]
			f.Line, f.Column = l.pos.Line, l.pos.Col
			f.Anchor = Location{File: new.File, Line: l.pos.Line, Column: l.pos.Col}
			f.Message += " (manifest: " + p + ")"
		} else if p, ok := locateGo(b.Where+" "+b.Old, oldIdents); ok && d.new.has(p) {
			l := d.new[p]
			f.Line, f.Column = l.pos.Line, l.pos.Col
			f.Anchor = Location{File: new.File, Line: l.pos.Line, Column: l.pos.Col}
			f.Message += " (manifest: " + p + ")"
		} else if ok {
			l := d.old[p]
			f.File, f.Line, f.Column = old.File, l.pos.Line, l.pos.Col
			f.Anchor = d.newAnchor(p, new.File)
			f.Message += " (manifest: " + p + ")"
		}
		if old.Surface.APIFile != "" {
			// The recorded line that broke is the place to look.
			f.File, f.Line, f.Column = old.Surface.APIFile, old.Surface.APILines[b.Old], 1
		}
		out = append(out, f)
	}
	for _, b := range apirecord.CompareSlots(old.Surface.Slots, new.Surface.Slots) {
		r := rules["LUA_SAME_SLOTS"]
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

// scriptOf reads the script name out of a slot break's Where ("script
// NAME", "script NAME KEYS").
func scriptOf(where string) string {
	var name string
	if _, err := fmt.Sscanf(where, "script %s", &name); err != nil {
		return where
	}
	return name
}

// locateGo finds the manifest element that generates an identifier of an
// API line: the first identifier (or Type.Field pair) the element map
// knows.
func locateGo(line string, idents map[string]string) (string, bool) {
	ws := identsOf(line)
	for i, w := range ws {
		if i+1 < len(ws) {
			if p, ok := idents[w+"."+ws[i+1]]; ok {
				return p, true
			}
		}
		if p, ok := idents[w]; ok {
			return p, true
		}
	}
	return "", false
}
