// Package witness is the gate's behavioural witness. The classifier
// (govern/compat) judges what the manifest says; the witness judges what
// the scripts do: it replays the conformance scenarios of the baseline
// release (golden/releases/<v>.witness/) against the NEW bundle — through
// the Go SDK generated from the new manifest (the repository's hand-written
// SDK files with the new generated ones, in a scratch copy of the module)
// and the Go conformance testee built on it — on a real redis-server. A
// baseline case that fails there is a WITNESS_BEHAVIOUR_CHANGED finding
// (a major), whatever the text diff says. The baseline is replayed twice:
// through the idiomatic SDK, and through every script's generated call
// (the testee's wire mode, WireMode), so that a script the idiomatic layer
// no longer calls is still exercised; a failure of the second run is
// named "<case>@wire". For a change classified
// additive it also replays today's scenarios against the OLD bundle, to
// tell new behaviour (a new scenario the old bundle fails, reported only)
// from changed behaviour.
//
// The probes ride along: every scenario of probes.yaml runs run_probes,
// which runs every probe of the new manifest through the SDK; the
// classifier guarantees that short of a major or invalid finding the new
// manifest holds every probe of the baseline unchanged (a changed probe is
// a major, a removed one is refused), so the baseline's probes are
// replayed against the new bundle too.
//
// There is one runtime: the SDK. Nothing here interprets the scripts or
// talks to a server: the conformance runner (package runner, in this
// process) drives the testee and checks the keyspace, on one redis-server
// this package starts for every replay of a run; this package builds the
// testee and reads the runner's results. Both are cached: the testee by
// what it is built from (Build), the results of each scenario file's
// replay by every input its outcome depends on (results.go), so that a
// replay already run on the same inputs is a lookup.
package witness

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/echomq/echomq/conformance/runner"
	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/header"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/govern/apirecord"
	"github.com/echomq/echomq/govern/compat"
	"github.com/echomq/echomq/govern/lang/golang"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// Side is one manifest the witness builds an SDK from: the file
// placeholders resolve from, and its model.
type Side struct {
	File     string
	Protocol *model.Protocol
}

// Options configure Run.
type Options struct {
	// Root is the repository root: the hand-written SDK (sdk/go), the Go
	// testee (conformance/testees/go), go.mod and today's scenarios
	// (conformance/scenarios).
	Root string
	// New is the manifest under review; Old the baseline's.
	New, Old Side
	// Baseline is the directory of the baseline's scenario files;
	// BaselineLabel names it in the report.
	Baseline      string
	BaselineLabel string
	// Also lists more witnesses to replay against the new bundle after
	// the baseline's, on the same server and testee: the witness of the
	// newest frozen release older than the new version, when the baseline
	// is older still (its scripts' behaviour is on record there, not in
	// the baseline's). Their failures count like the baseline's.
	Also []Replay
	// Additive asks for the reverse run: today's scenarios against the old
	// bundle.
	Additive bool
	// Addr is a scratch server to use (it is flushed); empty: Run starts a
	// redis-server of its own.
	Addr string
	// CacheDir holds built testees by what they are built from; default
	// the user's cache dir (os.UserCacheDir)/emqgen/witness.
	CacheDir string
	// ResultCache is where the results of replays are kept by every
	// input they depend on (results.go), so that a replay of inputs
	// already replayed is a lookup: a directory, or "off" to run every
	// replay. Default: the environment variable ResultCacheEnv
	// (EMQ_WITNESS_CACHE, the same values), else CacheDir's results.
	// There is none on a server of Addr.
	ResultCache string
	// Timeout bounds one request to the testee; default 30s.
	Timeout time.Duration
	// Log, when set, receives progress (builds, timings).
	Log io.Writer
}

// Replay is a witness to replay: its scenario directory, and what to call
// it in the report ("the frozen release 2.6.0") and in the verdict's
// witness line ("2.6.0").
type Replay struct {
	Dir, Label, Short string
}

// ScenarioDir is where a release's witness keeps its scenario files,
// relative to the release's witness directory.
const ScenarioDir = "scenarios"

// Run runs the witness and returns its part of the verdict. It does not
// fail: what stops it (no server, a testee that does not build) is the
// Witness's status "failed" with the reason, which fails the gate closed.
func Run(ctx context.Context, o Options) *compat.Witness {
	w := &compat.Witness{Status: compat.WitnessRan, Baseline: o.BaselineLabel, NewBehaviour: []string{}, Notes: []string{}}
	failedWith := func(remedy, format string, a ...any) *compat.Witness {
		w.Status, w.Reason, w.Remedy = compat.WitnessFailed, fmt.Sprintf(format, a...), remedy
		return w
	}
	failed := func(format string, a ...any) *compat.Witness { return failedWith("", format, a...) }
	logf := func(format string, a ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, "witness: "+format+"\n", a...)
		}
	}
	if o.Root == "" {
		o.Root = "."
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	b, err := bundle.Render(o.New.Protocol)
	if err != nil {
		return failed("rendering the new bundle: %v", err)
	}
	w.Bundle = b.Digest
	if files, _ := filepath.Glob(filepath.Join(o.Baseline, "*.yaml")); len(files) == 0 {
		return failedWith(compat.RemedyNoBase, "the baseline %s has no scenario files under %s", o.BaselineLabel, o.Baseline)
	}
	// The results of replays already run on these inputs are looked up
	// (results.go); the server is started for the first that is not.
	rc := openResults(ctx, o.ResultCache, o.CacheDir, o.Addr)
	var srv *redistest.Server
	defer func() {
		if srv != nil {
			srv.Close()
		}
	}()
	addr := o.Addr
	server := func() (string, error) {
		if addr != "" {
			return addr, nil
		}
		s, err := redistest.StartServer()
		if err != nil {
			return "", &serverError{err}
		}
		srv, addr = s, s.Addr()
		return addr, nil
	}
	if o.Addr != "" {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			return failedWith(compat.RemedyServer, "no server at -addr %s: %v", addr, err)
		}
		c.Close()
	} else if rc == nil {
		if _, err := server(); err != nil {
			return failedWith(compat.RemedyServer, "%v", err)
		}
	}
	run := func(in replayInput, argv []string) (*result, string, error) {
		return replayCached(ctx, o, rc, server, in, argv, logf)
	}
	started := time.Now()
	bin, key, cached, err := build(ctx, o.Root, o.New.Protocol, o.CacheDir)
	if err != nil {
		return failedWith(compat.RemedyBuild, "building the Go testee on an SDK generated from %s: %v", o.New.File, err)
	}
	logf("testee for bundle %s: %s (cached: %v, %.1fs)", short(b.Digest), bin, cached, time.Since(started).Seconds())
	anchor := compat.Location{File: o.New.File, Line: 1, Column: 1}
	// A scenario file of a later witness byte for byte like one already
	// replayed would replay the same cases: it is skipped.
	seen := map[string]string{}
	for i, rp := range append([]Replay{{o.Baseline, "the baseline " + o.BaselineLabel, o.BaselineLabel}}, o.Also...) {
		files, _ := filepath.Glob(filepath.Join(rp.Dir, "*.yaml"))
		if len(files) == 0 {
			return failedWith(compat.RemedyNoBase, "the witness %s has no scenario files under %s", rp.Label, rp.Dir)
		}
		skip := map[string]bool{}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return failed("%v", err)
			}
			name := strings.TrimSuffix(filepath.Base(f), ".yaml")
			if prev, ok := seen[name]; ok && i > 0 && prev == string(data) {
				skip[name] = true
			}
			seen[name] = string(data)
		}
		if len(skip) == len(files) {
			logf("%s: every scenario file replayed already", rp.Label)
			continue
		}
		for _, mode := range []string{"", WireMode} {
			started = time.Now()
			in := replayInput{kind: "new", testee: key, mode: mode, manifest: manifestOf(o.Root, o.New.File), dir: rp.Dir, skip: skip}
			res, note, err := run(in, testee(bin, mode))
			if se := (*serverError)(nil); errors.As(err, &se) {
				return failedWith(compat.RemedyServer, "%v", err)
			}
			if err != nil {
				return failed("%v", err)
			}
			logf("%s on the new bundle%s: PASS %d/%d (%.1fs)%s", rp.Label, mode, res.Passed, res.Total, time.Since(started).Seconds(), note)
			w.Cases += res.Total
			w.Passed += res.Passed
			for _, f := range res.Failures {
				if mode != "" {
					f.Case += "@wire"
					f.Message += " (through the scripts' generated calls: the Go testee's " + mode + " mode)"
				}
				w.Findings = append(w.Findings, finding(o, rp, f, anchor))
			}
		}
	}
	if len(o.Also) > 0 {
		for _, rp := range o.Also {
			w.Baseline += " + " + rp.Short
		}
	}
	if o.Additive && o.Old.Protocol != nil {
		if err := reverse(ctx, o, run, w, logf); err != nil {
			return failedWith(compat.RemedyServer, "%v", err)
		}
	}
	return w
}

// serverError is a redis-server that could not be started.
type serverError struct{ err error }

func (e *serverError) Error() string {
	return fmt.Sprintf("no redis-server could be started: %v", e.err)
}
func (e *serverError) Unwrap() error { return e.err }

// manifestOf is the manifest the runner resolves placeholders from: file,
// or root's protocol.yaml when file is empty (runner.Options.Manifest).
func manifestOf(root, file string) string {
	if file == "" {
		return filepath.Join(root, "protocol.yaml")
	}
	return file
}

// finding turns a baseline case failing on the new bundle into a finding
// that names the scenario, the step, what was expected and what came.
func finding(o Options, rp Replay, f failure, anchor compat.Location) compat.Finding {
	step := "the case as a whole"
	if f.Step >= 0 {
		step = fmt.Sprintf("step %d (%s)", f.Step+1, f.Op)
	}
	if f.Step < 0 && f.Op == "" && f.Case == "hello" {
		step = "hello"
	}
	msg := fmt.Sprintf("%s's case fails against the new bundle %s at %s: %s", rp.Label, short(bundleOf(o.New.Protocol)), step, f.Message)
	file, line := f.File, f.Line
	if file == "" {
		file = rp.Dir
	}
	fd := compat.WitnessFinding(f.Case, file, line, msg, anchor)
	fd.Column = max(f.Column, 1)
	return fd
}

// reverse runs today's scenarios against the old bundle: a scenario the
// old bundle fails is new behaviour, reported and never counted. Its
// error is a server that could not be started; what else stops it is a
// note.
func reverse(ctx context.Context, o Options, run func(replayInput, []string) (*result, string, error), w *compat.Witness, logf func(string, ...any)) error {
	dir := filepath.Join(o.Root, "conformance", "scenarios")
	if files, _ := filepath.Glob(filepath.Join(dir, "*.yaml")); len(files) == 0 {
		w.Notes = append(w.Notes, fmt.Sprintf("today's scenarios (%s) are missing, so new behaviour was not told apart", dir))
		return nil
	}
	started := time.Now()
	bin, key, _, err := build(ctx, o.Root, o.Old.Protocol, o.CacheDir)
	if err != nil {
		w.Notes = append(w.Notes, fmt.Sprintf("today's SDK does not build against the old bundle (%v), so today's scenarios were not run against it", firstLine(err.Error())))
		return nil
	}
	res, note, err := run(replayInput{kind: "reverse", testee: key, manifest: manifestOf(o.Root, o.Old.File), dir: dir}, testee(bin, ""))
	if se := (*serverError)(nil); errors.As(err, &se) {
		return err
	}
	if err != nil {
		w.Notes = append(w.Notes, fmt.Sprintf("today's scenarios could not run against the old bundle: %v", err))
		return nil
	}
	logf("today's scenarios on the old bundle: PASS %d/%d (%.1fs)%s", res.Passed, res.Total, time.Since(started).Seconds(), note)
	for _, f := range res.Failures {
		w.NewBehaviour = append(w.NewBehaviour, f.String())
	}
	return nil
}

// failure is one failed case as the runner reports it.
type failure = runner.Failure

// result is one language's outcome as the runner reports it.
type result = runner.Result

// WireMode is the Go testee's flag that runs every op that is a
// per-queue script through that script's generated call (package wire)
// rather than the idiomatic SDK call: the witness replays the baseline in
// both modes, so that every script of the bundle is exercised whether or
// not the idiomatic layer still calls it (conformance/testees/go/wire.go).
const WireMode = "-wire"

// testee is the command line of the built testee in a mode ("" or
// WireMode).
func testee(bin, mode string) []string {
	if mode == "" {
		return []string{bin}
	}
	return []string{bin, mode}
}

// loadReplay reads the scenario files of dir but those skip names.
func loadReplay(dir string, skip map[string]bool) ([]runner.ScenarioFile, error) {
	sc, err := runner.LoadScenarios(dir)
	if err != nil {
		return nil, fmt.Errorf("the scenarios %s: %w", dir, err)
	}
	kept := sc[:0]
	for _, f := range sc {
		if !skip[f.Name] {
			kept = append(kept, f)
		}
	}
	return kept, nil
}

// replay runs hello and the scenario files sc against a built testee,
// placeholders resolved from manifest, through the conformance runner (in
// this process: package runner), on the server at addr.
func replay(ctx context.Context, o Options, addr string, testee []string, manifest string, sc []runner.ScenarioFile) (*result, error) {
	rs, err := runner.Run(ctx, runner.Options{
		Root: o.Root, Out: io.Discard, Timeout: o.Timeout, Manifest: manifest, Addr: addr,
		Suite:   &runner.Suite{Scenarios: sc},
		Testees: []runner.Language{{Name: "go", Run: testee}}, NoExpected: true,
	})
	if err != nil {
		return nil, err
	}
	if len(rs) != 1 {
		return nil, fmt.Errorf("the conformance runner reported %d results", len(rs))
	}
	return rs[0], nil
}

// DefaultCacheDir is where built testees are kept: the user's cache
// directory's emqgen/witness, or the temporary directory's
// emqgen-witness when the user has no cache directory (no $HOME). The
// environment variable apirecord.CacheEnv (EMQGEN_CACHE_DIR) moves it to
// that directory's witness, as it moves the API records' cache.
func DefaultCacheDir() (string, error) {
	if d := os.Getenv(apirecord.CacheEnv); d != "" && d != "off" {
		return filepath.Join(d, "witness"), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "emqgen-witness"), nil
	}
	return filepath.Join(d, "emqgen", "witness"), nil
}

// Build returns the Go testee built on an SDK generated from p: a scratch
// copy of the module tree holding root's go.mod and go.sum, the
// hand-written files of sdk/go (tests, test data and generated files
// left out), the files the golang target generates from p, and the
// testee's own files. The binary is kept in cacheDir under the bundle
// digest and a hash of every one of those files and the Go version, so a
// second build of the same inputs is a lookup; cached reports that.
func Build(ctx context.Context, root string, p *model.Protocol, cacheDir string) (bin string, cached bool, err error) {
	bin, _, cached, err = build(ctx, root, p, cacheDir)
	return bin, cached, err
}

// build is Build that also returns the testee's key: the bundle digest
// and the digest of every source and the Go version, what the replay
// results of the testee are kept under (results.go).
func build(ctx context.Context, root string, p *model.Protocol, cacheDir string) (bin, key string, cached bool, err error) {
	if cacheDir == "" {
		if cacheDir, err = DefaultCacheDir(); err != nil {
			return "", "", false, err
		}
	}
	srcs, err := sources(root, p)
	if err != nil {
		return "", "", false, err
	}
	gover, err := exec.CommandContext(ctx, "go", "env", "GOVERSION").Output()
	if err != nil {
		return "", "", false, fmt.Errorf("go env GOVERSION: %w (the witness builds the Go testee: install Go)", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "go %s\n", bytes.TrimSpace(gover))
	paths := make([]string, 0, len(srcs))
	for path := range srcs {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		fmt.Fprintf(h, "%s %d\n", path, len(srcs[path]))
		h.Write(srcs[path])
	}
	b, err := bundle.Render(p)
	if err != nil {
		return "", "", false, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	key = b.Digest + "-" + sum
	dir := filepath.Join(cacheDir, short(b.Digest)+"-"+sum[:16])
	bin = filepath.Join(dir, "testee")
	if st, err := os.Stat(bin); err == nil && st.Mode().IsRegular() {
		// Used now: pruning (by age of use) keeps it while other checks,
		// in this process or others sharing the cache, build theirs.
		now := time.Now()
		_ = os.Chtimes(dir, now, now)
		return bin, key, true, nil
	}
	// A build that failed to compile fails again on the same inputs (an
	// older bundle's generated code under today's hand-written SDK, which
	// every check against an older release tries for its reverse run):
	// its compiler errors are kept and returned without building.
	if out, err := os.ReadFile(filepath.Join(dir, failedFile)); err == nil {
		now := time.Now()
		_ = os.Chtimes(dir, now, now)
		return "", key, true, fmt.Errorf("go build ./%s: %s", testeeDir, out)
	}
	// A scratch tree of its own, so that concurrent builds of the same
	// inputs (two checks, two test packages) never share one; the first
	// binary renamed into place wins, and both are the same.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", false, err
	}
	src, err := os.MkdirTemp(dir, "src-")
	if err != nil {
		return "", "", false, err
	}
	defer os.RemoveAll(src)
	for _, path := range paths {
		dst := filepath.Join(src, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", "", false, err
		}
		if err := os.WriteFile(dst, srcs[path], 0o644); err != nil {
			return "", "", false, err
		}
	}
	tmp := filepath.Join(src, "testee")
	// -trimpath: the scratch tree is another directory every time, and
	// without it the directory is part of every package's build-cache key.
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", tmp, "./"+testeeDir)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		if compileError.Match(out) {
			_ = os.WriteFile(filepath.Join(dir, failedFile), fmt.Appendf(nil, "%v (cached)\n%s", err, out), 0o644)
		}
		return "", key, false, fmt.Errorf("go build ./%s in %s: %w\n%s", testeeDir, src, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", "", false, err
	}
	prune(cacheDir, dir)
	return bin, key, false, nil
}

// failedFile keeps, beside where the testee would be, the compiler
// errors of a build that failed to compile.
const failedFile = "build-failed.txt"

// compileError matches a compiler error of the Go toolchain (file:line:col:
// message): a failure the same inputs reproduce, unlike a module download
// that failed, which is never cached.
var compileError = regexp.MustCompile(`(?m)^\S+\.go:\d+:\d+: `)

// keep is how many built testees (and kept build failures) the cache
// keeps, the most recently used.
const keep = 32

// prune removes the oldest cache entries beyond keep, never the one just
// built.
func prune(cacheDir, fresh string) {
	ents, err := os.ReadDir(cacheDir)
	if err != nil {
		return
	}
	type entry struct {
		path string
		mod  time.Time
	}
	var es []entry
	for _, e := range ents {
		if e.Name() == resultsDir {
			continue // the replay results: pruned by their own count (results.go)
		}
		if info, err := e.Info(); err == nil && e.IsDir() {
			es = append(es, entry{filepath.Join(cacheDir, e.Name()), info.ModTime()})
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].mod.After(es[j].mod) })
	for i, e := range es {
		if i >= keep && e.path != fresh {
			os.RemoveAll(e.path)
		}
	}
}

// testeeDir is the Go testee's package, relative to the repository root.
const testeeDir = "conformance/testees/go"

// sources is every file of the scratch module, by slash path.
func sources(root string, p *model.Protocol) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, f := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		out[f] = data
	}
	sdk := filepath.Join(root, "sdk", "go")
	err := filepath.WalkDir(sdk, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != sdk {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if strings.HasSuffix(name, "_test.go") || !(strings.HasSuffix(name, ".go") || name == "go.mod" || name == "go.sum") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if strings.HasSuffix(name, ".go") && header.Check(rel, data) == nil {
			return nil // generated: the new manifest's take its place
		}
		out[rel] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("the hand-written SDK: %w", err)
	}
	gen, err := golang.Generate(p)
	if err != nil {
		return nil, fmt.Errorf("generating the Go SDK: %w", err)
	}
	n := 0
	for _, f := range gen {
		if strings.HasPrefix(f.Path, "sdk/go/") {
			out[f.Path] = f.Data
			n++
		}
	}
	if n == 0 {
		return nil, errors.New("the golang target generated nothing under sdk/go")
	}
	testee := filepath.Join(root, filepath.FromSlash(testeeDir))
	ents, err := os.ReadDir(testee)
	if err != nil {
		return nil, fmt.Errorf("the Go testee: %w", err)
	}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(testee, e.Name()))
		if err != nil {
			return nil, err
		}
		out[testeeDir+"/"+e.Name()] = data
	}
	return out, nil
}

func bundleOf(p *model.Protocol) string {
	b, err := bundle.Render(p)
	if err != nil {
		return "?"
	}
	return b.Digest
}

// short is a digest's first 12 characters.
func short(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
