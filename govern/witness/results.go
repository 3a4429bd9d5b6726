package witness

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq/conformance/runner"
)

// The results of replays are kept like the testees they run on: a
// scenario file already replayed on the same inputs is a lookup, not a run
// of the testee against a server. The keys (resultCache.keys) cover
// everything the outcome depends on — this program (the runner that
// judges the cases and the witness itself, by the executable's content),
// the redis-server's version, the testee (its build key: the bundle and
// every source of the build, the Go version), the mode, the manifest the
// placeholders resolve from, and the scenario file's name and content —
// and the format of the entries. Only a replay that ran to its end is
// kept, a genuine pass or fail of every case: not one whose testee
// stopped (exited, stopped answering, did not exit cleanly), whose server
// went away, or whose context ended.

// ResultCacheEnv names the environment variable that moves the cache of
// replay results to a directory, or turns it off ("off": every replay
// runs). By default the results are kept in the testees' cache directory
// (Options.CacheDir), in results.
const ResultCacheEnv = "EMQ_WITNESS_CACHE"

// resultFormat is the version of the entries' layout and of the keys: a
// change of either starts a new cache. Bump it when entry's or
// keptResult's shape, or what keys digests, changes.
const resultFormat = "emqgen-witness-result-v1"

// resultsDir is the directory of the results, in a testees' cache
// directory; prune leaves it alone.
const resultsDir = "results"

// keepResults is how many replay results the cache keeps, the most
// recently used (a few kilobytes each).
const keepResults = 1024

// replays counts the replays this process ran and looked up, for tests.
var replays struct{ fresh, cached atomic.Int64 }

// ReplayCounts reports how many replays this process ran against a
// server (fresh: every file, or those not in the result cache) and how
// many it found whole in the result cache (cached), for tests.
func ReplayCounts() (fresh, cached int64) { return replays.fresh.Load(), replays.cached.Load() }

// resultCache is an on-disk cache of replay results; nil is no cache.
type resultCache struct {
	dir     string
	program string // the executable's digest; "": programDigest's
	server  string // redis-server --version
	keep    int    // how many entries prune keeps; 0: keepResults
}

// openResults returns the result cache a run uses: setting ("" for the
// environment's, else a directory or "off"), under the testees' cache
// directory cacheDir by default. None (nil) when it is off, when the
// witness runs on a server it did not start (addr: its version is not
// known), or when this program's or redis-server's identity cannot be
// read — then the run starts the server as it would without a cache,
// and fails as it would.
func openResults(ctx context.Context, setting, cacheDir, addr string) *resultCache {
	if setting == "" {
		setting = os.Getenv(ResultCacheEnv)
	}
	if setting == "off" || addr != "" {
		return nil
	}
	dir := setting
	if dir == "" {
		if cacheDir == "" {
			var err error
			if cacheDir, err = DefaultCacheDir(); err != nil {
				return nil
			}
		}
		dir = filepath.Join(cacheDir, resultsDir)
	}
	// The executable is read (tens of megabytes) while the testee is
	// built or looked up; keys waits for it.
	go programDigest()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil
	}
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return nil
	}
	return &resultCache{dir: dir, server: string(bytes.TrimSpace(out))}
}

// programDigest is the digest of this program's executable, read once.
var programDigest = sync.OnceValues(func() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	f, err := os.Open(exe)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := bufio.NewReaderSize(f, 1<<20).WriteTo(h); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
})

// replayInput is what a replay runs, as far as its outcome goes.
type replayInput struct {
	kind     string // "new" (a witness against the new bundle) or "reverse" (today's scenarios against the old)
	testee   string // the testee's build key
	mode     string // "" or WireMode
	manifest string // the manifest placeholders resolve from
	dir      string // the scenario directory
	skip     map[string]bool
}

// replayKeys are the keys a replay's results are kept under: its hello
// case's, and each scenario file's (in the order of the files).
type replayKeys struct {
	hello string
	files []string
}

// keys digests every input of a replay of the scenario files sc of
// in.dir: what every case shares (this program, the server, the testee,
// the mode, the manifest), then each file's name and content. A file is
// kept on its own — a scenario runs on a fresh keyspace, whatever ran
// before it (which is what lets a later witness skip the files of an
// earlier one already replayed) — so the files two witnesses share are
// replayed once. An error when an input cannot be read (the replay is
// then not cached).
func (c *resultCache) keys(in replayInput, sc []runner.ScenarioFile) (*replayKeys, error) {
	field := func(h hash.Hash, name string, data []byte) {
		fmt.Fprintf(h, "%s %d\n", name, len(data))
		h.Write(data)
	}
	program := c.program
	if program == "" {
		var err error
		if program, err = programDigest(); err != nil {
			return nil, fmt.Errorf("this program's executable: %w", err)
		}
	}
	h := sha256.New()
	field(h, "format", []byte(resultFormat))
	field(h, "program", []byte(program))
	field(h, "redis-server", []byte(c.server))
	field(h, "kind", []byte(in.kind))
	field(h, "testee", []byte(in.testee))
	field(h, "mode", []byte(in.mode))
	m, err := os.ReadFile(in.manifest)
	if err != nil {
		return nil, err
	}
	field(h, "manifest", m)
	base := h.Sum(nil)
	sub := func(kind, name string, data []byte) string {
		h := sha256.New()
		field(h, "base", base)
		field(h, kind, []byte(name))
		field(h, "content", data)
		return hex.EncodeToString(h.Sum(nil))
	}
	k := &replayKeys{hello: sub("hello", "", nil)}
	for _, f := range sc {
		data, err := os.ReadFile(filepath.Join(in.dir, f.Name+".yaml"))
		if err != nil {
			return nil, err
		}
		k.files = append(k.files, sub("file", f.Name, data))
	}
	return k, nil
}

// entry is a kept result: the key it is kept under, the runner's result
// with the failures' files relative to the replayed directory, and the
// digest of both (an entry that does not match it is ignored).
type entry struct {
	Format string      `json:"format"`
	Key    string      `json:"key"`
	Result *keptResult `json:"result"`
	Sum    string      `json:"sum"`
}

// keptResult is the part of the runner's result the witness reads.
type keptResult struct {
	Passed   int       `json:"passed"`
	Total    int       `json:"total"`
	Failures []failure `json:"failures"`
}

func (e *entry) digest() string {
	data, _ := json.Marshal(struct {
		Format string
		Key    string
		Result *keptResult
	}{e.Format, e.Key, e.Result})
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func (c *resultCache) path(key string) string { return filepath.Join(c.dir, key+".json") }

// load returns the result kept under key, its failures' files under dir,
// or nil.
func (c *resultCache) load(key, dir string) *result {
	path := c.path(key)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var e entry
	if json.Unmarshal(data, &e) != nil || e.Format != resultFormat || e.Key != key || e.Result == nil || e.Sum != e.digest() {
		return nil
	}
	// Used now: pruning (by age of use) keeps it while other processes
	// sharing the cache store theirs.
	now := time.Now()
	_ = os.Chtimes(path, now, now)
	r := &result{Language: "go", Passed: e.Result.Passed, Total: e.Result.Total}
	for _, f := range e.Result.Failures {
		if f.File != "" {
			f.File = filepath.Join(dir, f.File)
		}
		r.Failures = append(r.Failures, f)
	}
	return r
}

// errNotKept says why a result is not kept.
var errNotKept = errors.New("not kept")

// store keeps r under key: written whole to a file of its own and
// renamed into place, so that a reader (in this process or another)
// finds the entry whole or not at all, and two writers of one key leave
// one of their equal entries.
func (c *resultCache) store(key, dir string, r *result) error {
	kept := &keptResult{Passed: r.Passed, Total: r.Total, Failures: []failure{}}
	clean := filepath.Clean(dir)
	for _, f := range r.Failures {
		if f.File != "" {
			if filepath.Dir(f.File) != clean {
				return fmt.Errorf("%w: the failure of %s is in %s, outside %s", errNotKept, f.Case, f.File, dir)
			}
			f.File = filepath.Base(f.File)
		}
		kept.Failures = append(kept.Failures, f)
	}
	e := &entry{Format: resultFormat, Key: key, Result: kept}
	e.Sum = e.digest()
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(c.dir, ".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), c.path(key)); err != nil {
		return err
	}
	c.prune(c.path(key))
	return nil
}

// prune removes the least recently used results beyond keepResults,
// never the one just stored; a lookup marks an entry used (load), so the
// entry another process just read is among the newest.
func (c *resultCache) prune(fresh string) {
	keep := c.keep
	if keep <= 0 {
		keep = keepResults
	}
	ents, err := os.ReadDir(c.dir)
	if err != nil || len(ents) <= keep {
		return
	}
	type kept struct {
		path string
		mod  time.Time
	}
	var es []kept
	for _, e := range ents {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		path := filepath.Join(c.dir, e.Name())
		switch {
		case strings.HasSuffix(e.Name(), ".json"):
			es = append(es, kept{path, info.ModTime()})
		case strings.HasPrefix(e.Name(), ".tmp-") && time.Since(info.ModTime()) > time.Hour:
			os.Remove(path) // left by a process that stopped between writing and renaming
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].mod.After(es[j].mod) })
	for i, e := range es {
		if i >= keep && e.path != fresh {
			os.Remove(e.path)
		}
	}
}

// inflight serializes the replays of one key in this process: the
// replays of t.Parallel tests that share a scenario file wait for the
// first, then find its result.
var inflight sync.Map // key → chan struct{} (a lock of capacity 1)

// lockKeys takes the locks of keys in their sorted order (so that two
// replays that share keys never each hold one the other waits for) and
// returns what releases them.
func lockKeys(ctx context.Context, keys []string) (unlock func(), err error) {
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	var held []chan struct{}
	unlock = func() {
		for _, ch := range held {
			<-ch
		}
	}
	for _, key := range keys {
		v, _ := inflight.LoadOrStore(key, make(chan struct{}, 1))
		ch := v.(chan struct{})
		select {
		case ch <- struct{}{}:
			held = append(held, ch)
		case <-ctx.Done():
			unlock()
			return nil, ctx.Err()
		}
	}
	return unlock, nil
}

// replayCached runs a replay of in, or looks its results up in rc (nil:
// no cache) — hello's and each scenario file's — and runs only what is
// not kept (hello with it), keeping what it ran when that is a genuine
// outcome of its inputs (cacheable). The result is the one a replay of
// every file gives, case for case in its order; note, for the log, says
// what was looked up. server returns the server's address, starting it
// the first time.
func replayCached(ctx context.Context, o Options, rc *resultCache, server func() (string, error), in replayInput, argv []string, logf func(string, ...any)) (res *result, note string, err error) {
	sc, err := loadReplay(in.dir, in.skip)
	if err != nil {
		return nil, "", err
	}
	fresh := func(sc []runner.ScenarioFile) (*result, string, error) {
		addr, err := server()
		if err != nil {
			return nil, "", err
		}
		replays.fresh.Add(1)
		res, err := replay(ctx, o, addr, argv, in.manifest, sc)
		return res, addr, err
	}
	if rc == nil {
		res, _, err := fresh(sc)
		return res, "", err
	}
	keys, err := rc.keys(in, sc)
	if err != nil {
		logf("the replay of %s is not cached: %v", in.dir, err)
		res, _, err := fresh(sc)
		return res, "", err
	}
	unlock, err := lockKeys(ctx, keys.files)
	if err != nil {
		return nil, "", err
	}
	defer unlock()
	hello := rc.load(keys.hello, "")
	parts := make([]*result, len(sc))
	var missing []runner.ScenarioFile
	for i, f := range sc {
		if parts[i] = rc.load(keys.files[i], in.dir); parts[i] == nil {
			missing = append(missing, f)
		}
	}
	hits := len(sc) - len(missing)
	ran := hello == nil || len(missing) > 0
	if ran {
		ran, addr, err := fresh(missing)
		if err != nil {
			return nil, "", err
		}
		h, byFile, ok := split(ran, missing)
		if !ok {
			logf("the result of %s is not kept: the runner's cases are not hello and the files'", in.dir)
			if hits == 0 {
				return ran, "", nil
			}
			res, _, err := fresh(sc)
			return res, "", err
		}
		keep := cacheable(ctx, ran, addr, argv)
		if keep != nil {
			logf("the result of %s is not kept: %v", in.dir, keep)
		}
		store := func(key string, r *result) {
			if keep != nil {
				return
			}
			if err := rc.store(key, in.dir, r); err != nil {
				logf("the result of %s is not kept: %v", in.dir, err)
			}
		}
		hello = h
		store(keys.hello, h)
		for i, f := range sc {
			if parts[i] == nil {
				parts[i] = byFile[f.Name]
				store(keys.files[i], parts[i])
			}
		}
	} else {
		replays.cached.Add(1)
	}
	res = &result{Language: "go"}
	for _, p := range append([]*result{hello}, parts...) {
		res.Total += p.Total
		res.Passed += p.Passed
		res.Failures = append(res.Failures, p.Failures...)
	}
	switch {
	case !ran:
		note = " (cached result)"
	case hits > 0:
		note = fmt.Sprintf(" (cached result for %d of %d scenario files)", hits, len(sc))
	}
	return res, note, nil
}

// split divides a runner's result of hello and the scenario files sc
// into hello's and each file's; false when its cases are not those.
func split(r *result, sc []runner.ScenarioFile) (hello *result, byFile map[string]*result, ok bool) {
	hello = &result{Language: "go", Total: 1, Passed: 1}
	byFile = map[string]*result{}
	total := 1
	for _, f := range sc {
		byFile[f.Name] = &result{Language: "go", Total: len(f.Scenarios), Passed: len(f.Scenarios)}
		total += len(f.Scenarios)
	}
	for _, f := range r.Failures {
		part := hello
		if f.Case != "hello" {
			rest, found := strings.CutPrefix(f.Case, "scenarios/")
			name, _, _ := strings.Cut(rest, "/")
			if part = byFile[name]; !found || part == nil {
				return nil, nil, false
			}
		}
		part.Passed--
		part.Failures = append(part.Failures, f)
	}
	if total != r.Total || r.Passed+len(r.Failures) != r.Total || hello.Passed < 0 {
		return nil, nil, false
	}
	for _, p := range byFile {
		if p.Passed < 0 {
			return nil, nil, false
		}
	}
	return hello, byFile, true
}

// cacheable says why a replay's result is not a genuine outcome of its
// inputs (nil when it is): its testee stopped before the end or did not
// exit cleanly, the context ended, the server at addr no longer answers,
// or a failure names something outside the key (the server's address,
// the testee's path).
func cacheable(ctx context.Context, r *result, addr string, testee []string) error {
	if r.TesteeError != nil {
		return fmt.Errorf("%w: the testee: %v", errNotKept, r.TesteeError)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %v", errNotKept, err)
	}
	if err := ping(ctx, addr); err != nil {
		return fmt.Errorf("%w: the server: %v", errNotKept, err)
	}
	for _, f := range r.Failures {
		for _, s := range append([]string{addr}, testee[0]) {
			if strings.Contains(f.Message, s) {
				return fmt.Errorf("%w: the failure of %s names %s", errNotKept, f.Case, s)
			}
		}
	}
	return nil
}

// ping checks that the server at addr answers PING.
func ping(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: 5 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}
