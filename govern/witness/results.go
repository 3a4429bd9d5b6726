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
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The results of a replay are kept like the testees it runs: a replay
// whose every input is one already replayed is a lookup, not a run of the
// testee against a server. The key (resultKey) covers everything the
// outcome depends on — this program (the runner that judges the cases
// and the witness itself, by the executable's content), the
// redis-server's version, the testee (its build key: the bundle and every
// source of the build, the Go version), the mode, the manifest the
// placeholders resolve from, and the replayed scenario directory (every
// file, by name and content, and the files skipped) — and the format of
// the entries. Only a replay that ran to its end is kept: a genuine pass
// or fail of every case; one whose testee stopped (exited, stopped
// answering), whose server went away, or whose context ended is not.

// ResultCacheEnv names the environment variable that moves the cache of
// replay results to a directory, or turns it off ("off": every replay
// runs). By default the results are kept in the testees' cache directory
// (Options.CacheDir), in results.
const ResultCacheEnv = "EMQ_WITNESS_CACHE"

// resultFormat is the version of the entries' layout and of the keys: a
// change of either starts a new cache. Bump it when result's shape or
// resultKey changes.
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
// server (fresh) and how many it found in the result cache (cached).
func ReplayCounts() (fresh, cached int64) { return replays.fresh.Load(), replays.cached.Load() }

// resultCache is an on-disk cache of replay results; nil is no cache.
type resultCache struct {
	dir     string
	program string // the executable's digest
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
	program, err := programDigest()
	if err != nil {
		return nil
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil
	}
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return nil
	}
	return &resultCache{dir: dir, program: program, server: string(bytes.TrimSpace(out))}
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

// key is the digest of every input of a replay; an error when one
// cannot be read (then the replay is not cached).
func (c *resultCache) key(in replayInput) (string, error) {
	h := sha256.New()
	field := func(name string, data []byte) {
		fmt.Fprintf(h, "%s %d\n", name, len(data))
		h.Write(data)
	}
	field("format", []byte(resultFormat))
	field("program", []byte(c.program))
	field("redis-server", []byte(c.server))
	field("kind", []byte(in.kind))
	field("testee", []byte(in.testee))
	field("mode", []byte(in.mode))
	m, err := os.ReadFile(in.manifest)
	if err != nil {
		return "", err
	}
	field("manifest", m)
	if err := hashDir(h, in.dir); err != nil {
		return "", err
	}
	skip := make([]string, 0, len(in.skip))
	for name, ok := range in.skip {
		if ok {
			skip = append(skip, name)
		}
	}
	sort.Strings(skip)
	field("skip", []byte(strings.Join(skip, "\n")))
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashDir adds every file under dir to h, in lexical order, by its slash
// path relative to dir and its content.
func hashDir(h hash.Hash, dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "file %s %d\n", filepath.ToSlash(rel), len(data))
		h.Write(data)
		return nil
	})
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
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			es = append(es, kept{filepath.Join(c.dir, e.Name()), info.ModTime()})
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
// replays of t.Parallel tests that share a key wait for the first, then
// find its result.
var inflight sync.Map // key → chan struct{} (a lock of capacity 1)

func lockKey(ctx context.Context, key string) (unlock func(), err error) {
	v, _ := inflight.LoadOrStore(key, make(chan struct{}, 1))
	ch := v.(chan struct{})
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
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
