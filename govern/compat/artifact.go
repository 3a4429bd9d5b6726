package compat

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/echomq/echomq/gen/header"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/target"
	"github.com/echomq/echomq/gen/targets"
	"github.com/echomq/echomq/gen/targets/golang"
	"github.com/echomq/echomq/gen/targets/lua"
	"github.com/echomq/echomq/govern/apirecord"
)

// Surface is what users compile and call against, taken from the
// artifacts generated from one manifest.
type Surface struct {
	// API is the public API of the Go SDK, packages emq and emq/wire,
	// one package-qualified feature per line (see apirecord.SDKAPI).
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
	// Py is the public API of the Python SDK (sdk/python, package echomq),
	// one feature per line (apirecord.PyAPI); nil when it was not read, and
	// then the Python API is not compared (PyRules). PyFile and PyLines
	// locate a recorded one.
	Py      []string
	PyFile  string
	PyLines map[string]int
}

// SurfaceOf generates the artifacts of p in memory and reads their
// surface: the Lua slots of the bundle, and the public API of the Go SDK
// from the generated Go files (in memory) together with the hand-written
// files beside them in the working tree at root (HandWritten).
func SurfaceOf(root string, p *model.Protocol) (*Surface, error) {
	files, err := targets.Generate(p, SurfaceTargets())
	if err != nil {
		return nil, err
	}
	hand, err := HandWritten(root, files)
	if err != nil {
		return nil, err
	}
	api, err := apirecord.SDKAPI(append(goFiles(files), hand...))
	if err != nil {
		return nil, err
	}
	slots, err := apirecord.LuaSlots(files)
	if err != nil {
		return nil, err
	}
	return &Surface{API: api, Slots: slots}, nil
}

// SurfaceTargets are the targets whose files a surface is read from: the
// Go SDK (golang) and the Lua bundle with its index (lua). The others
// (docs, conformance vectors, the TypeScript wire layer) emit no Go or
// Lua, and generating them would only slow every check down.
func SurfaceTargets() []target.Target {
	return []target.Target{golang.Target, lua.Target}
}

func goFiles(files []target.File) []target.File {
	var out []target.File
	for _, f := range files {
		if strings.HasSuffix(f.Path, ".go") {
			out = append(out, f)
		}
	}
	return out
}

// HandWritten reads, from the working tree at root, the hand-written Go
// files of every directory that generated holds a Go file in: each .go
// file there that is not a test, not among generated (the in-memory
// version is the one that counts) and does not carry the generated-file
// marker (a stale generated file the next emqgen gen removes). A
// directory missing from the tree contributes nothing.
func HandWritten(root string, generated []target.File) ([]target.File, error) {
	gen := map[string]bool{}
	dirs := map[string]bool{}
	for _, f := range generated {
		if strings.HasSuffix(f.Path, ".go") {
			gen[f.Path] = true
			dirs[path.Dir(f.Path)] = true
		}
	}
	var out []target.File
	for _, d := range sortedDirs(dirs) {
		entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(d)))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			n := e.Name()
			rel := d + "/" + n
			if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") || gen[rel] {
				continue
			}
			data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
			if err != nil {
				return nil, err
			}
			if header.Check(rel, data) == nil {
				continue
			}
			out = append(out, target.File{Path: rel, Data: data})
		}
	}
	return out, nil
}

func sortedDirs(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for d := range m {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// ArtifactRules are the rules that compare generated artifacts. They apply
// when both sides of a comparison carry a Surface.
func ArtifactRules() []Rule {
	return []Rule{
		{ID: "GO_API_NO_DELETE", Bump: Major, Wire: true, Category: CategoryAPI, Purpose: "Code compiled against the Go SDK (packages emq and emq/wire, generated and hand-written) stops compiling when an exported name it uses is gone (golang.org/x/exp/apidiff: removal is incompatible)."},
		{ID: "GO_API_SAME_SIGNATURE", Bump: Major, Wire: true, Category: CategoryAPI, Purpose: "Code compiled against the Go SDK (packages emq and emq/wire, generated and hand-written) stops compiling when an exported name changes its type or signature, or an interface it implements grows."},
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
			msg = "gone from the Go SDK's public API (was: " + shortGo(b.Old) + ")"
		case apirecord.Changed:
			msg = "was: " + shortGo(b.Old) + "; now: " + shortGo(b.New)
		}
		f := Finding{Rule: r.ID, Bump: r.Bump, Wire: r.Wire, Category: r.category(), Path: "go: " + shortGo(b.Where), Message: msg, File: new.File, Judged: true}
		// The manifest element that generates the name locates the
		// finding, whatever the baseline: the element in the new manifest,
		// or, when it is gone, the old one (the anchor then is what
		// enclosed it in the new manifest).
		f.Anchor = d.top(new.File)
		if p, ok := locateGo(bareGo(b.Where)+" "+bareGo(b.Old)+" "+bareGo(b.New), newIdents); ok {
			l := d.new[p]
			f.Line, f.Column = l.pos.Line, l.pos.Col
			f.Anchor = Location{File: new.File, Line: l.pos.Line, Column: l.pos.Col}
			f.Message += " (manifest: " + p + ")"
		} else if p, ok := locateGo(bareGo(b.Where)+" "+bareGo(b.Old), oldIdents); ok && d.new.has(p) {
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
		if f.Line == 0 {
			// No element generates the name alone (a wire-layer type the
			// whole of a section generates, a hand-written name): the
			// section of the manifest it comes from, or the top.
			f.Anchor = d.newAnchor(goSection(bareGo(b.Where)), new.File)
			f.File, f.Line, f.Column = f.Anchor.File, f.Anchor.Line, f.Anchor.Column
		}
		if n := old.Surface.APILines[b.Old]; old.Surface.APIFile != "" && n > 0 {
			// The recorded line that broke is the place to look.
			f.File, f.Line, f.Column = old.Surface.APIFile, n, 1
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

// goSections are the manifest sections that the Go SDK's names come from
// when no single element does, by the name's first word: the wire layer's
// types and functions over the whole of a section.
var goSections = []struct{ prefix, section string }{
	{"QueueKeys", "keys"}, {"NewQueueKeys", "keys"}, {"ValidateQueueName", "queues"}, {"QueuePattern", "queues"}, {"ErrQueueName", "queues"},
	{"KeyMigration", "reserve"}, {"ReserveKey", "reserve"}, {"Lock", "reserve"}, {"Probes", "reserve"},
	{"Script", "scripts"}, {"BundleDigest", "scripts"}, {"Decode", "scripts"},
	{"ID", "ids"}, {"ParseID", "ids"}, {"MustParseID", "ids"}, {"NewID", "ids"}, {"Generator", "ids"}, {"NewGenerator", "ids"}, {"ErrID", "ids"},
	{"Kind", "kinds"}, {"State", "row"}, {"ParseState", "row"}, {"RowFields", "row"}, {"FieldByRole", "row"}, {"Set", "sets"},
	{"ClassError", "classes"}, {"Classes", "classes"}, {"Class", "classes"},
	{"Protocol", "protocol"}, {"Version", "version"},
}

// goSection is the manifest section a Go API key's name comes from
// (goSections), or "protocol", the top, when none is known.
func goSection(key string) string {
	name := ""
	for _, w := range identsOf(key) {
		switch w {
		case "pkg", "type", "func", "var", "const", "method", "struct", "interface":
			continue
		}
		if w != "" && w[0] >= 'A' && w[0] <= 'Z' {
			name = w
			break
		}
	}
	best := ""
	section := "protocol"
	for _, g := range goSections {
		if strings.HasPrefix(name, g.prefix) && len(g.prefix) > len(best) {
			best, section = g.prefix, g.section
		}
	}
	return section
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

// sdkPackages is the import path prefix of the Go SDK's packages.
const sdkPackages = "pkg " + apirecord.ModulePath + "/sdk/go/"

// shortGo spells a package-qualified API line or key with the package's
// path inside the Go SDK module ("emq/wire, func ParseID"), for findings.
func shortGo(s string) string {
	if rest, ok := strings.CutPrefix(s, sdkPackages); ok {
		return rest
	}
	return s
}

// bareGo is an API line or key without its "pkg <path>, " qualifier.
func bareGo(s string) string {
	if rest, ok := strings.CutPrefix(s, "pkg "); ok {
		if _, feature, ok := strings.Cut(rest, ", "); ok {
			return feature
		}
	}
	return s
}
