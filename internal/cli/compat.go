package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/echomq/echomq/gen/manifest"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/govern/compat"
	"github.com/echomq/echomq/govern/release"
	"github.com/echomq/echomq/govern/witness"
)

func runDiff(e *env, args []string) int {
	fs := e.flags("diff", "[-format text|markdown|json|github] [-category wire|wire+api] [-waivers FILE] OLD NEW",
		"Classifies every change from the manifest OLD to the manifest NEW: one finding per change with its rule, the bump it requires\n(patch, minor, major, or invalid at any bump), its manifest path and file:line:col (a deletion points into OLD, the rest into NEW),\nthen the bump required overall and the one the two versions declare. When both manifests validate, the generated Go API and\nthe Lua scripts' KEYS/ARGV slots are compared too. Exit 0 when the report was produced, whatever it says; 2 on bad input.")
	format := fs.String("format", "text", "report format: "+strings.Join(compat.Formats, ", "))
	category := fs.String("category", compat.CategoryWireAPI, "strictness: wire (what Lua and raw-Redis consumers see) or wire+api (also the generated APIs)")
	waivers := fs.String("waivers", "", "a waivers file (see docs/reviewing.md); none by default")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 2 {
		e.errorf("diff takes two manifests, OLD and NEW")
		return ExitUsage
	}
	if !validFormat(*format) {
		e.errorf("-format %q is not one of %s", *format, strings.Join(compat.Formats, ", "))
		return ExitUsage
	}
	opts, code, ok := e.options(*category, *waivers)
	if !ok {
		return code
	}
	old, code := e.side(".", fs.Arg(0), nil)
	if old == nil {
		return code
	}
	var invalid error
	new, code := e.side(".", fs.Arg(1), &invalid)
	if new == nil {
		return code
	}
	new.Invalid = invalid
	r, err := compat.JudgeWith(*old, *new, opts)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	if err := r.Write(e.stdout, *format); err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	return ExitOK
}

// options reads -category and a waivers file into judging options.
func (e *env) options(category, waivers string) (compat.Options, int, bool) {
	if !slices.Contains(compat.Categories, category) {
		e.errorf("-category %q is not one of %s", category, strings.Join(compat.Categories, ", "))
		return compat.Options{}, ExitUsage, false
	}
	o := compat.Options{Category: category}
	if waivers != "" {
		if _, err := os.Stat(waivers); err != nil {
			e.errorf("-waivers: %v", err)
			return o, ExitUsage, false
		}
		ws, err := compat.LoadWaivers(waivers)
		if err != nil {
			e.errorf("%v", err)
			return o, ExitUsage, false
		}
		o.Waivers = ws
	}
	return o, ExitOK, true
}

func runCheck(e *env, args []string) int {
	fs := e.flags("check", "[-base REF|FILE] [-manifest FILE] [-format text|markdown|json|github] [-category wire|wire+api] [-waivers FILE] [-witness on|off] [-addr HOST:PORT]",
		"The pull-request gate. Compares the manifest with a baseline — by default the newest frozen release under golden/releases;\n-base takes a file or a git ref (origin/main, a tag, a commit: the manifest at that ref) — and passes only when the version\nnever decreases, no change is invalid, the declared bump is at least the required one (prose-only changes may wait for the\nnext release), the history records a changed version, and a minor keeps the baseline's generated Go API and Lua slots, and\nthe TypeScript and Python SDKs' public APIs when the baseline records them (sdk/ts is read with tsc under node,\nsdk/python/src/echomq's sources are parsed by python3).\nThe behavioural witness then replays the baseline's conformance scenarios (a release's <version>.witness/, or\nconformance/scenarios at a git ref) against the Go SDK generated from the manifest, on a redis-server it starts (or -addr):\na failing case is WITNESS_BEHAVIOUR_CHANGED (major). When it cannot run the gate fails closed, unless -witness=off, which\nevery report format then states. Exit 0 pass; 1 the gate fails (every problem says what to do); 2 bad input or a tool error.")
	base := fs.String("base", "", "baseline: a manifest file or a git ref (default: the newest frozen release)")
	file := fs.String("manifest", "", manifestHelp)
	root := fs.String("root", "", rootHelp("where golden/releases lives"))
	format := fs.String("format", "text", "report format: "+strings.Join(compat.Formats, ", "))
	category := fs.String("category", compat.CategoryWireAPI, "strictness: wire (what Lua and raw-Redis consumers see) or wire+api (also the generated APIs)")
	waivers := fs.String("waivers", "", "the waivers file (default: ROOT/"+compat.WaiversFile+" when it exists)")
	witnessMode := fs.String("witness", "on", "the behavioural witness: on (replay the baseline's scenarios against the new bundle; fail closed when it cannot run) or off (an explicit opt-out, stated in the verdict)")
	addr := fs.String("addr", "", "a scratch redis-server for the witness (it is flushed); default: start one")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		e.errorf("check takes no arguments (got %q); the baseline is given with -base", strings.Join(fs.Args(), " "))
		return ExitUsage
	}
	if *witnessMode != "on" && *witnessMode != "off" {
		e.errorf("-witness %q is not one of on, off", *witnessMode)
		return ExitUsage
	}
	if !e.locate(file, root) {
		return ExitUsage
	}
	if !validFormat(*format) {
		e.errorf("-format %q is not one of %s", *format, strings.Join(compat.Formats, ", "))
		return ExitUsage
	}
	if *waivers == "" {
		if def := filepath.Join(*root, compat.WaiversFile); fileExists(def) {
			*waivers = def
		}
	}
	opts, code, ok := e.options(*category, *waivers)
	if !ok {
		return code
	}
	old, code := e.baseline(*root, *base, *file)
	if old == nil {
		return code
	}
	var invalid error
	new, code := e.side(*root, *file, &invalid)
	if new == nil {
		return code
	}
	new.Invalid = invalid
	prebuilt := make(chan struct{})
	if *witnessMode == "on" && new.Invalid == nil {
		// The witness's testee is built (or found in its cache) while the
		// TypeScript and Python APIs are read: on a cold cache both take
		// seconds, and the witness's own Build then finds it built.
		np, err := model.Load(*file)
		go func() {
			defer close(prebuilt)
			if err == nil {
				_, _, _ = witness.Build(context.Background(), *root, np, "")
			}
		}()
	} else {
		close(prebuilt)
	}
	defer func() { <-prebuilt }()
	tsBase, pyBase := "the baseline "+*base, "the baseline "+*base
	rel, isRelease := release.Open(*root, *base)
	if *base == "" {
		var err error
		rel, err = release.Newest(*root)
		isRelease = err == nil
	}
	if isRelease {
		tsBase = "the frozen release " + rel.Version.String() + " (no " + rel.TSAPI() + ")"
		pyBase = "the frozen release " + rel.Version.String() + " (no " + rel.PyAPI() + ")"
	}
	if opts.Category == compat.CategoryWire {
		// API findings are not judged under -category wire: the
		// TypeScript and Python SDKs are not read (so neither node nor
		// their sources are needed).
		e.errorf("note: -category %s judges the wire only: the TypeScript and Python SDKs' APIs are not read", compat.CategoryWire)
	} else {
		if code := e.compareTS(*root, tsBase, old, new); code != ExitOK {
			return code
		}
		if code := e.comparePy(*root, pyBase, old, new); code != ExitOK {
			return code
		}
	}
	first, err := compat.JudgeWith(*old, *new, opts)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	if *witnessMode == "off" {
		opts.Witness = &compat.Witness{Status: compat.WitnessOff, Reason: "opted out with -witness=off", NewBehaviour: []string{}, Notes: []string{}}
	} else {
		<-prebuilt
		opts.Witness = e.witness(*root, *base, *file, *addr, new, first.Required == compat.Minor)
	}
	if new.Invalid == nil {
		fs, err := coverage(*root, old, new)
		if errors.Is(err, errNoSuite) {
			e.errorf("note: %s has no %s, so the scripts added since %s are not asked for their probes and scenarios", *root, scenariosDir, old.Manifest.Version.V)
			err = nil
		}
		if err != nil {
			e.errorf("%v", err)
			return ExitUsage
		}
		opts.Witness.Findings = append(opts.Witness.Findings, fs...)
	}
	r, err := compat.JudgeWith(*old, *new, opts)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	if err := r.Write(e.stdout, *format); err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	if !r.OK {
		return ExitFindings
	}
	return ExitOK
}

// witness runs the behavioural witness of check: the baseline's
// scenarios against the new manifest's SDK, and for an additive change
// today's scenarios against the baseline's.
func (e *env) witness(root, base, file, addr string, new *compat.Side, additive bool) *compat.Witness {
	w := func(status, format string, a ...any) *compat.Witness {
		return &compat.Witness{Status: status, Reason: fmt.Sprintf(format, a...), NewBehaviour: []string{}, Notes: []string{}}
	}
	if new.Invalid != nil {
		return w(compat.WitnessSkipped, "%s does not validate, so no SDK can be generated from it", file)
	}
	np, err := model.Load(file)
	if err != nil {
		return w(compat.WitnessSkipped, "%s does not validate, so no SDK can be generated from it", file)
	}
	src, err := e.witnessBaseline(root, base, file)
	if err != nil {
		f := w(compat.WitnessFailed, "%v", err)
		f.Remedy = compat.RemedyNoBase
		return f
	}
	defer src.cleanup()
	op, err := model.Load(src.manifest)
	if err != nil {
		f := w(compat.WitnessFailed, "the baseline %s does not validate: %v", src.manifest, err)
		f.Remedy = compat.RemedyInvalid
		return f
	}
	return witness.Run(context.Background(), witness.Options{
		Root: root, New: witness.Side{File: file, Protocol: np}, Old: witness.Side{File: src.manifest, Protocol: op},
		Baseline: src.scenarios, BaselineLabel: src.label, Additive: additive, Addr: addr,
	})
}

// witnessSource is where the baseline's witness comes from: its scenario
// directory, its manifest file and what to call it.
type witnessSource struct {
	scenarios, manifest, label string
	cleanup                    func()
}

// witnessBaseline finds the baseline's scenarios: a frozen release's
// witness (the newest, or the release -base names by its file), or the
// conformance scenarios at the git ref -base names.
func (e *env) witnessBaseline(root, base, file string) (witnessSource, error) {
	none := func() {}
	if base == "" {
		r, err := release.Newest(root)
		if err != nil {
			return witnessSource{}, err
		}
		if !r.HasWitness() {
			return witnessSource{}, fmt.Errorf("the frozen release %s keeps no witness (%s/*.yaml), so there is nothing to replay", r.Version, r.WitnessScenarios())
		}
		return witnessSource{scenarios: r.WitnessScenarios(), manifest: r.Manifest, label: r.Version.String(), cleanup: none}, nil
	}
	if st, err := os.Stat(base); err == nil && !st.IsDir() {
		if r, ok := release.Open(root, base); ok && !r.HasWitness() {
			return witnessSource{}, fmt.Errorf("the frozen release %s keeps no witness (%s/*.yaml): it was frozen before releases kept their conformance scenarios", r.Version, r.WitnessScenarios())
		}
		r := release.Release{Witness: strings.TrimSuffix(base, filepath.Ext(base)) + ".witness"}
		if !r.HasWitness() {
			return witnessSource{}, fmt.Errorf("the baseline %s has no witness beside it (%s/*.yaml): give -base a frozen release or a git ref, whose conformance scenarios are replayed", base, r.WitnessScenarios())
		}
		return witnessSource{scenarios: r.WitnessScenarios(), manifest: base, label: base, cleanup: none}, nil
	}
	// A git ref: its conformance scenarios and its manifest, into a scratch directory.
	tmp, err := os.MkdirTemp("", "emqgen-witness-")
	if err != nil {
		return witnessSource{}, err
	}
	cleanup := func() { os.RemoveAll(tmp) }
	gitOut := func(args ...string) ([]byte, error) {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return stdout.Bytes(), nil
	}
	names, err := gitOut("ls-tree", "--name-only", base+":./conformance/scenarios")
	if err != nil {
		cleanup()
		return witnessSource{}, fmt.Errorf("the conformance scenarios at %s: %v", base, err)
	}
	dir := filepath.Join(tmp, "scenarios")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		cleanup()
		return witnessSource{}, err
	}
	for _, n := range strings.Fields(string(names)) {
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		data, err := gitOut("show", base+":./conformance/scenarios/"+n)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, filepath.Base(n)), data, 0o644)
		}
		if err != nil {
			cleanup()
			return witnessSource{}, err
		}
	}
	mdir, mname := filepath.Split(file)
	if mdir == "" {
		mdir = "."
	}
	data, err := exec.Command("git", "-C", mdir, "show", base+":./"+mname).Output()
	manifestFile := filepath.Join(tmp, mname)
	if err == nil {
		err = os.WriteFile(manifestFile, data, 0o644)
	}
	if err != nil {
		cleanup()
		return witnessSource{}, fmt.Errorf("the manifest at %s: %v", base, err)
	}
	return witnessSource{scenarios: dir, manifest: manifestFile, label: base, cleanup: cleanup}, nil
}

func runRelease(e *env, args []string) int {
	fs := e.flags("release", "[-manifest FILE] [-root DIR]",
		"Freezes the manifest as golden/releases/<version>.yaml, byte for byte, with the exported API of the Go package it generates\n(golden/releases/<version>.api.txt), the public API of the TypeScript SDK under ROOT/sdk/ts (<version>.ts-api.txt, read\nwith tsc under node; a root without sdk/ts records none), the public API of the Python SDK under\nROOT/sdk/python/src/echomq (<version>.py-api.txt, its sources parsed by python3; a root without it records none), its bundle identity (<version>.bundle.txt) and its witness (<version>.witness/scenarios:\nthe conformance scenarios, which check replays against every later bundle). The manifest must validate, its version must be the history's current entry, and it must\npass check against the newest older frozen release. A frozen release is never rewritten: freezing other content under an\nexisting version fails; freezing the same content again writes nothing.")
	file := fs.String("manifest", "", manifestHelp)
	root := fs.String("root", "", rootHelp("where golden/releases lives"))
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		e.errorf("release takes no arguments")
		return ExitUsage
	}
	if !e.locate(file, root) {
		return ExitUsage
	}
	p, code := e.load(*file)
	if p == nil {
		return code
	}
	rs, err := release.List(*root)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	// The TypeScript API is read first, when the version is not frozen
	// yet: when it cannot be read, nothing is frozen.
	var ts, py []string
	if !fileExists(filepath.Join(*root, release.Dir, p.Version.String()+".yaml")) {
		var code int
		if ts, code = e.tsAPI(*root, "release records the TypeScript SDK's API"); code != ExitOK {
			e.errorf("nothing was frozen")
			return code
		}
		if py, code = e.pyAPI(*root, "release records the Python SDK's API"); code != ExitOK {
			e.errorf("nothing was frozen")
			return code
		}
	}
	var prev *release.Release
	for i := range rs {
		if rs[i].Version.Compare(p.Version) < 0 {
			prev = &rs[i]
		}
	}
	if prev != nil {
		old, err := prev.Side()
		if err != nil {
			e.errorf("%v", err)
			return ExitUsage
		}
		new, code := e.side(*root, *file, nil)
		if new == nil {
			return code
		}
		if old.Surface != nil && old.Surface.TS != nil && new.Surface != nil && ts != nil {
			new.Surface.TS = ts
		}
		if old.Surface != nil && old.Surface.Py != nil && new.Surface != nil && py != nil {
			new.Surface.Py = py
		}
		r, err := compat.Judge(old, *new)
		if err != nil {
			e.errorf("%v", err)
			return ExitUsage
		}
		if !r.OK {
			_ = r.Write(e.stdout, "text")
			e.errorf("%s %s does not pass check against the frozen %s; nothing was frozen", *file, p.Version, prev.Version)
			return ExitFindings
		}
	}
	rel, written, err := release.Freeze(*root, *file)
	if err != nil {
		e.errorf("%v", err)
		if errors.Is(err, release.ErrFrozen) {
			return ExitFindings
		}
		return ExitUsage
	}
	switch {
	case ts != nil && slices.Contains(written, rel.Manifest):
		// Recorded with the manifest it was released with, never added to
		// a release frozen before.
		w, err := release.FreezeTS(rel, ts)
		if err != nil {
			e.errorf("%v", err)
			return ExitUsage
		}
		if w != "" {
			written = append(written, w)
		}
	case ts == nil && len(written) > 0:
		e.errorf("note: %s has no TypeScript SDK: no TypeScript API recorded for %s", filepath.Join(*root, tsDir), rel.Version)
	}
	switch {
	case py != nil && slices.Contains(written, rel.Manifest):
		// Like the TypeScript record: written with the manifest only.
		w, err := release.FreezePy(rel, py)
		if err != nil {
			e.errorf("%v", err)
			return ExitUsage
		}
		if w != "" {
			written = append(written, w)
		}
	case py == nil && len(written) > 0:
		e.errorf("note: %s has no Python SDK: no Python API recorded for %s", filepath.Join(*root, pyDir), rel.Version)
	}
	if len(written) == 0 {
		fmt.Fprintf(e.stdout, "%s is already frozen as %s; nothing written\n", rel.Version, rel.Manifest)
		return ExitOK
	}
	fmt.Fprintf(e.stdout, "froze %s\n", rel.Version)
	for _, w := range written {
		fmt.Fprintf(e.stdout, "  wrote %s\n", w)
	}
	return ExitOK
}

func fileExists(name string) bool {
	st, err := os.Stat(name)
	return err == nil && !st.IsDir()
}

func validFormat(f string) bool {
	for _, x := range compat.Formats {
		if x == f {
			return true
		}
	}
	return false
}

// side loads a manifest as one side of a comparison. A manifest that
// decodes but does not validate is still compared, on its leaves only
// (its artifacts cannot be generated); when invalid is not nil its
// validation errors are stored there, else they are noted on stderr.
func (e *env) side(root, file string, invalid *error) (*compat.Side, int) {
	data, err := os.ReadFile(file)
	if err != nil {
		e.errorf("%v", err)
		return nil, ExitUsage
	}
	return e.sideOf(root, file, data, invalid)
}

// sideOf decodes a manifest as one side of a comparison; the hand-written
// layer of the Go SDK, part of its surface, is read from the working tree
// at root.
func (e *env) sideOf(root, label string, data []byte, invalid *error) (*compat.Side, int) {
	m, err := manifest.Parse(label, data)
	if err != nil {
		var errs *manifest.Errors
		if errors.As(err, &errs) {
			fmt.Fprintln(e.stderr, errs.Error())
		} else {
			e.errorf("%v", err)
		}
		e.errorf("%s cannot be compared: it does not decode", label)
		return nil, ExitUsage
	}
	s := &compat.Side{File: label, Manifest: m}
	p, err := model.Resolve(label, m)
	if err != nil {
		if invalid != nil {
			*invalid = err
		} else {
			e.errorf("note: %s does not validate, so its generated artifacts are not compared:\n%v", label, err)
		}
		return s, ExitOK
	}
	if s.Surface, err = compat.SurfaceOf(root, p); err != nil {
		e.errorf("%v", err)
		return nil, ExitUsage
	}
	return s, ExitOK
}

// baseline loads the side to check against: the newest frozen release, a
// manifest file, or the manifest at a git ref.
func (e *env) baseline(root, base, file string) (*compat.Side, int) {
	if base == "" {
		r, err := release.Newest(root)
		if err != nil {
			e.errorf("%v", err)
			return nil, ExitUsage
		}
		s, err := r.Side()
		if err != nil {
			e.errorf("baseline %s: %v", r.Manifest, err)
			return nil, ExitUsage
		}
		return &s, ExitOK
	}
	if st, err := os.Stat(base); err == nil && !st.IsDir() {
		if r, ok := release.Open(root, base); ok {
			// A frozen release named by its file: every record beside it
			// (the Go, TypeScript and Python APIs), as for the newest.
			s, err := r.Side()
			if err != nil {
				e.errorf("baseline %s: %v", r.Manifest, err)
				return nil, ExitUsage
			}
			return &s, ExitOK
		}
		return e.side(root, base, nil)
	}
	dir, name := filepath.Split(file)
	if dir == "" {
		dir = "."
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("git", "-C", dir, "show", base+":./"+name)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		e.errorf("-base %q is neither a file nor a git ref with %s: git show: %v: %s", base, name, err, strings.TrimSpace(stderr.String()))
		return nil, ExitUsage
	}
	return e.sideOf(root, base+":"+filepath.ToSlash(file), stdout.Bytes(), nil)
}
