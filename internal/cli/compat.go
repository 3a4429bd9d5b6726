package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/echomq/echomq/gen/manifest"
	"github.com/echomq/echomq/govern/compat"
	"github.com/echomq/echomq/govern/gate"
	"github.com/echomq/echomq/govern/release"
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
	if !validWitness(e, *witnessMode) || !e.locate(file, root) {
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
	res, err := gate.Check(context.Background(), gate.Options{
		Root: *root, Manifest: *file, Base: *base, Judging: opts,
		Witness: *witnessMode == "on", WitnessOffReason: "opted out with -witness=off", Addr: *addr,
	})
	if res != nil {
		e.notes(res.Notes)
	}
	if err != nil {
		return e.failed(err)
	}
	if err := res.Report.Write(e.stdout, *format); err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	if !res.Report.OK {
		return ExitFindings
	}
	return ExitOK
}

// validWitness checks a -witness flag's value.
func validWitness(e *env, mode string) bool {
	if mode != "on" && mode != "off" {
		e.errorf("-witness %q is not one of on, off", mode)
		return false
	}
	return true
}

// notes prints the gate's notes on stderr.
func (e *env) notes(ns []string) {
	for _, n := range ns {
		e.errorf("note: %s", n)
	}
}

// failed prints a gate error and returns its exit status: a manifest that
// does not decode prints its errors as FILE:LINE:COL lines.
func (e *env) failed(err error) int {
	var dec *gate.DecodeError
	if errors.As(err, &dec) {
		var errs *manifest.Errors
		if errors.As(dec.Err, &errs) {
			fmt.Fprintln(e.stderr, errs.Error())
		} else {
			e.errorf("%v", dec.Err)
		}
		e.errorf("%s cannot be compared: it does not decode", dec.Label)
		return ExitUsage
	}
	e.errorf("%v", err)
	return ExitUsage
}

func runRelease(e *env, args []string) int {
	fs := e.flags("release", "[-manifest FILE] [-root DIR] [-waivers FILE] [-witness on|off] [-addr HOST:PORT]",
		"Freezes the manifest as golden/releases/<version>.yaml, byte for byte, with the exported API of the Go package it generates\n(golden/releases/<version>.api.txt), the public API of the TypeScript SDK under ROOT/sdk/ts (<version>.ts-api.txt, read\nwith tsc under node; a root without sdk/ts records none), the public API of the Python SDK under\nROOT/sdk/python/src/echomq (<version>.py-api.txt, its sources parsed by python3; a root without it records none), its bundle identity (<version>.bundle.txt) and its witness (<version>.witness/scenarios:\nthe conformance scenarios, which check replays against every later bundle). The manifest must validate, its version must be the history's current entry, and it must\npass check against the newest older frozen release (with check's waivers), behavioural witness included (-witness=off opts out, and says so): when the\nwitness fails or cannot run, nothing is frozen. A frozen release is never rewritten: freezing other content under an\nexisting version fails; freezing the same content again writes nothing.")
	file := fs.String("manifest", "", manifestHelp)
	root := fs.String("root", "", rootHelp("where golden/releases lives"))
	witnessMode := fs.String("witness", "on", "the behavioural witness of the gate release runs: on (fail closed when it cannot run) or off (an explicit opt-out)")
	addr := fs.String("addr", "", "a scratch redis-server for the witness (it is flushed); default: start one")
	waivers := fs.String("waivers", "", "the waivers file of the gate release runs (default: ROOT/"+compat.WaiversFile+" when it exists, as check)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		e.errorf("release takes no arguments")
		return ExitUsage
	}
	if !validWitness(e, *witnessMode) || !e.locate(file, root) {
		return ExitUsage
	}
	if p, code := e.load(*file); p == nil {
		return code
	}
	if *waivers == "" {
		if def := filepath.Join(*root, compat.WaiversFile); fileExists(def) {
			*waivers = def
		}
	}
	opts, code, ok := e.options(compat.CategoryWireAPI, *waivers)
	if !ok {
		return code
	}
	out, err := gate.Release(context.Background(), gate.ReleaseOptions{
		Root: *root, Manifest: *file, Witness: *witnessMode == "on", WitnessOffReason: "opted out with release -witness=off", Addr: *addr,
		Judging: opts,
	})
	if out != nil && errors.Is(err, gate.ErrRefused) {
		_ = out.Report.Write(e.stdout, "text")
		e.notes(out.Notes)
		e.errorf("%v", err)
		return ExitFindings
	}
	if out != nil {
		e.notes(out.Notes)
	}
	if err != nil {
		e.errorf("%v", err)
		if errors.Is(err, release.ErrFrozen) {
			return ExitFindings
		}
		return ExitUsage
	}
	if out.Report != nil && out.Report.Witness != nil && out.Report.Witness.Status == compat.WitnessOff {
		e.errorf("note: the behavioural witness did not run (%s): the scripts' behaviour was not checked against the frozen releases", out.Report.Witness.Reason)
	}
	rel := out.Release
	if len(out.Written) == 0 {
		fmt.Fprintf(e.stdout, "%s is already frozen as %s; nothing written\n", rel.Version, rel.Manifest)
		return ExitOK
	}
	fmt.Fprintf(e.stdout, "froze %s\n", rel.Version)
	if w := out.Report; w != nil && w.Witness != nil && w.Witness.Status == compat.WitnessRan {
		fmt.Fprintf(e.stdout, "  witness: %d/%d cases of %s pass on its bundle\n", w.Witness.Passed, w.Witness.Cases, w.Witness.Baseline)
	}
	for _, w := range out.Written {
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

// side loads a manifest as one side of a comparison (diff): a manifest
// that decodes but does not validate is still compared, on its leaves
// only; when invalid is not nil its validation errors are stored there,
// else they are noted on stderr.
func (e *env) side(root, file string, invalid *error) (*compat.Side, int) {
	s, err := gate.Side(root, file)
	if err != nil {
		return nil, e.failed(err)
	}
	if s.Invalid != nil {
		if invalid != nil {
			*invalid = s.Invalid
		} else {
			e.errorf("note: %s does not validate, so its generated artifacts are not compared:\n%v", file, s.Invalid)
		}
		s.Invalid = nil
	}
	return s, ExitOK
}
