package emq_test

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// undeclaredScripts are the bundle's scripts that reach keys they do not
// declare (rows through the row prefix): exactly the ones gen/bundle's
// TestDeclaredKeys pins under its instrumented redis.call.
var undeclaredScripts = []string{
	wire.ScriptClaim.Name, wire.ScriptClaimMany.Name, wire.ScriptCompleteClaim.Name, wire.ScriptPromote.Name, wire.ScriptReap.Name,
}

// monitored is one script call as MONITOR showed it: the script, its
// KEYS, and every command it called from Lua.
type monitored struct {
	script string
	keys   []string
	inner  [][]string
}

// monitor records what a server runs, with MONITOR on a connection of its
// own, until stop; calls returns the script calls seen.
type monitor struct {
	conn  net.Conn
	mu    sync.Mutex
	lines []string
	done  chan struct{}
}

func startMonitor(t *testing.T, addr string) *monitor {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	m := &monitor{conn: conn, done: make(chan struct{})}
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReaderSize(conn, 1<<20)
	if line, err := r.ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("MONITOR = %q, %v", line, err)
	}
	go func() {
		defer close(m.done)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			m.mu.Lock()
			m.lines = append(m.lines, strings.TrimRight(line, "\r\n"))
			m.mu.Unlock()
		}
	}()
	t.Cleanup(func() { conn.Close() })
	return m
}

// stop sends a marker through srv, waits until MONITOR shows it (so
// every command sent before it has been shown) and returns the lines.
func (m *monitor) stop(t *testing.T, srv *redistest.Server) []string {
	t.Helper()
	marker := "emq-monitor-end-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	if _, err := srv.Do("ECHO", marker); err != nil {
		t.Fatal(err)
	}
	for deadline, from := time.Now().Add(10*time.Second), 0; ; time.Sleep(time.Millisecond) {
		seen := false
		m.mu.Lock()
		for ; from < len(m.lines) && !seen; from++ {
			seen = strings.Contains(m.lines[from], marker)
		}
		m.mu.Unlock()
		if seen {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("MONITOR did not show the end marker within 10s")
		}
	}
	m.conn.Close()
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lines
}

// monitorArgs parses the quoted arguments of a MONITOR line (after the
// client's bracket): "a" "b\x00" ..., with Redis's escapes.
func monitorArgs(s string) ([]string, error) {
	var out []string
	for i := 0; i < len(s); {
		if s[i] == ' ' {
			i++
			continue
		}
		if s[i] != '"' {
			return nil, fmt.Errorf("argument at %d does not start with a quote: %q", i, s)
		}
		var b strings.Builder
		i++
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] != '\\' {
				b.WriteByte(s[i])
				continue
			}
			i++
			switch s[i] {
			case 'x':
				v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
				if err != nil {
					return nil, err
				}
				b.WriteByte(byte(v))
				i += 2
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			default:
				b.WriteByte(s[i])
			}
		}
		i++
		out = append(out, b.String())
	}
	return out, nil
}

// calibration is a script the test runs first under MONITOR, to learn
// where a server shows the commands a script calls from Lua: after the
// EVAL line (Redis 7.0) or before it (servers that show a command once it
// ran). Nothing else runs while a script does, so a script's commands are
// contiguous with its own EVAL line either way.
const calibration = "redis.call('TIME') return 1"

func calibrate(t *testing.T, srv *redistest.Server) {
	t.Helper()
	if _, err := srv.Do("EVAL", calibration, "0"); err != nil {
		t.Fatal(err)
	}
}

// monitoredCalls groups MONITOR lines into script calls, with the
// commands each ran from Lua; the calibration script tells on which side
// of its EVAL line a server shows them.
func monitoredCalls(t *testing.T, lines []string) []monitored {
	t.Helper()
	byHash := map[string]string{}
	for _, s := range wire.Scripts() {
		byHash[s.SHA1] = s.Name
	}
	type entry struct {
		lua  bool
		args []string
		line string
	}
	var entries []entry
	for _, line := range lines {
		_, rest, ok := strings.Cut(line, " [")
		if !ok {
			t.Fatalf("MONITOR line %q", line)
		}
		who, rest, ok := strings.Cut(rest, "] ")
		if !ok {
			t.Fatalf("MONITOR line %q", line)
		}
		args, err := monitorArgs(rest)
		if err != nil || len(args) == 0 {
			t.Fatalf("MONITOR line %q: %v", line, err)
		}
		entries = append(entries, entry{lua: strings.HasSuffix(who, " lua"), args: args, line: line})
	}
	isScript := func(e entry) bool {
		c := strings.ToUpper(e.args[0])
		return !e.lua && (c == "EVAL" || c == "EVALSHA")
	}
	before := false
	found := false
	for i, e := range entries {
		if isScript(e) && len(e.args) > 1 && e.args[1] == calibration {
			switch {
			case i+1 < len(entries) && entries[i+1].lua:
			case i > 0 && entries[i-1].lua:
				before = true
			default:
				t.Fatalf("MONITOR shows no Lua command next to the calibration script")
			}
			found = true
			break
		}
	}
	if !found {
		t.Fatal("MONITOR did not show the calibration script: run calibrate first")
	}
	var calls []monitored
	var inner [][]string
	var cur *monitored
	for _, e := range entries {
		if e.lua {
			if before {
				inner = append(inner, e.args)
			} else if cur != nil {
				cur.inner = append(cur.inner, e.args)
			} else {
				t.Fatalf("a command from Lua %q follows no script call", e.line)
			}
			continue
		}
		if cur != nil && cur.script != "" {
			calls = append(calls, *cur)
		}
		cur = nil
		if !isScript(e) {
			if len(inner) > 0 {
				t.Fatalf("commands from Lua %q before %q, not a script call", inner, e.line)
			}
			continue
		}
		args := e.args
		if args[1] == calibration {
			cur, inner = &monitored{}, nil // dropped below: no script of the bundle
			continue
		}
		hash := args[1]
		if strings.ToUpper(args[0]) == "EVAL" {
			sum := sha1.Sum([]byte(args[1]))
			hash = hex.EncodeToString(sum[:])
		}
		name, ok := byHash[hash]
		if !ok {
			t.Fatalf("a script that is not the bundle's ran: %.80q", e.line)
		}
		n, err := strconv.Atoi(args[2])
		if err != nil || 3+n > len(args) {
			t.Fatalf("script call %.200q: bad numkeys", e.line)
		}
		cur = &monitored{script: name, keys: args[3 : 3+n], inner: inner}
		inner = nil
	}
	if cur != nil && cur.script != "" {
		calls = append(calls, *cur)
	}
	return calls
}

// undeclaredKeys returns the keys a script call's Lua commands touched
// that are not among its KEYS: key positions as in gen/bundle's
// instrumented prelude (DEL and EXISTS take keys only, TIME none, every
// other command of the bundle one key first).
func undeclaredKeys(c monitored) []string {
	var out []string
	for _, cmd := range c.inner {
		var keys []string
		switch strings.ToUpper(cmd[0]) {
		case "TIME":
		case "DEL", "EXISTS":
			keys = cmd[1:]
		default:
			keys = cmd[1:min(2, len(cmd))]
		}
		for _, k := range keys {
			if !slices.Contains(c.keys, k) {
				out = append(out, strings.ToUpper(cmd[0])+" "+k)
			}
		}
	}
	return out
}

// TestWorkerTouchesOnlyDeclaredKeys runs a real Worker against a server
// under MONITOR through every path it has: claims of a backlog, completes
// chained to claims, handler failures retried after a short backoff (a
// retry promoted when due), permanent failures buried, a handler slower
// than a third of its lease (extended), an expired lease taken back by
// maintenance, and one buried by it out of attempts. Every script call of
// the run is then checked: each is a bundle script that is not one of the
// five that reach undeclared keys, and every key each of its Lua commands
// touched is among the KEYS of that very call.
func TestWorkerTouchesOnlyDeclaredKeys(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxT(t)
	mon := startMonitor(t, srv.Addr())
	calibrate(t, srv)
	tally := &emq.Tally{}
	opt := options(srv)
	opt.Metrics = tally
	c, err := emq.Connect(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q := queue(t, c, "declared")

	// Two jobs leased by someone else for a millisecond: their leases
	// expire, and the worker's maintenance takes them back (one to run
	// again, one out of attempts to the dead set).
	reaped, doomed := mint(t, c, emq.WorkKind), mint(t, c, emq.WorkKind)
	if _, err := q.PushMany(ctx, []emq.NewJob{{ID: reaped, Payload: []byte("ok")}, {ID: doomed, Payload: []byte("ok")}}); err != nil {
		t.Fatal(err)
	}
	if jobs, err := q.ClaimIDs(ctx, time.Millisecond, []emq.ID{reaped}); err != nil || len(jobs) != 1 {
		t.Fatalf("ClaimIDs = %v, %v", jobs, err)
	}
	for i := 0; i < 3; i++ { // doomed: three claims, so MaxAttempts 3 buries it
		if i > 0 {
			time.Sleep(5 * time.Millisecond)
			if _, err := q.ReapIDs(ctx, []emq.ID{doomed}, 0); err != nil {
				t.Fatal(err)
			}
		}
		if jobs, err := q.ClaimIDs(ctx, time.Millisecond, []emq.ID{doomed}); err != nil || len(jobs) != 1 {
			t.Fatalf("ClaimIDs(doomed) attempt %d = %v, %v", i+1, jobs, err)
		}
	}

	var jobs []emq.NewJob
	kinds := map[emq.ID]string{}
	add := func(n int, kind string) {
		for range n {
			id := mint(t, c, emq.WorkKind)
			jobs = append(jobs, emq.NewJob{ID: id, Payload: []byte(kind)})
			kinds[id] = kind
		}
	}
	add(200, "ok")
	add(5, "fail-once")
	add(3, "permanent")
	add(2, "slow")
	if _, err := q.PushBatch(ctx, jobs); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	ran := map[emq.ID]int{}
	h := func(ctx context.Context, j emq.Job) error {
		mu.Lock()
		ran[j.ID]++
		mu.Unlock()
		switch string(j.Payload) {
		case "fail-once":
			if j.Attempt() == 1 {
				return errors.New("first attempt fails")
			}
		case "permanent":
			return emq.Permanent(errors.New("never works"))
		case "slow":
			select {
			case <-time.After(400 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	w, err := emq.NewWorker(q, h, emq.WorkerOptions{
		Concurrency: 8, Lease: 300 * time.Millisecond, MaxAttempts: 3,
		Backoff: func(int64) time.Duration { return 20 * time.Millisecond }, Maintenance: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	want := int64(200 + 5 + 2 + 1) // ok, fail-once (second attempt), slow, reaped
	eventually(t, 20*time.Second, "every job settled", func() bool {
		n, _ := q.Size(ctx, emq.SetDead)
		return tally.Get(emq.Completed) >= want && n == 3+1
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	lines := mon.stop(t, srv)

	for id, kind := range kinds {
		wantRuns := map[string]int{"ok": 1, "fail-once": 2, "permanent": 1, "slow": 1}[kind]
		if ran[id] != wantRuns {
			t.Errorf("%s job %v ran %d times; want %d", kind, id, ran[id], wantRuns)
		}
	}
	if ran[reaped] != 1 || ran[doomed] != 0 {
		t.Errorf("the expired lease ran %d times (want 1), the one out of attempts %d (want 0)", ran[reaped], ran[doomed])
	}
	if info, ok, err := q.Get(ctx, doomed); err != nil || !ok || info.State != emq.StateDead {
		t.Errorf("the lease out of attempts: %+v, %v, %v; want dead", info, ok, err)
	}
	for _, m := range []emq.Counter{emq.Retried, emq.Buried, emq.Promoted, emq.Reaped} {
		if tally.Get(m) == 0 {
			t.Errorf("the run never counted %s", m)
		}
	}

	calls := monitoredCalls(t, lines)
	seen := map[string]int{}
	for _, call := range calls {
		seen[call.script]++
		if slices.Contains(undeclaredScripts, call.script) {
			t.Errorf("the run called %s, which reaches keys it does not declare", call.script)
		}
		if bad := undeclaredKeys(call); len(bad) > 0 {
			t.Errorf("%s touched keys not in its KEYS %q: %q", call.script, call.keys, bad)
		}
	}
	t.Logf("%d script calls: %v", len(calls), seen)
	// 2.4.0: failures are settled by fail (retried or buried, with their
	// records), expired leases reaped with reap_recorded_ids, completions
	// made with complete_result_claim_ids (which forgets a record itself),
	// and the sweep forgets orphans with forget_ids; 2.7.0: each through
	// its twin, which serves a queue with a policy as well (2.8.0: claims
	// and completions through the twins that honour a rate limit too).
	for _, s := range []*wire.Script{wire.ScriptClaimRateIDs, wire.ScriptCompleteRateIDs, wire.ScriptPromoteIDs, wire.ScriptReapPolicyIDs,
		wire.ScriptExtendPolicy, wire.ScriptFailPolicy, wire.ScriptForgetIDs, wire.ScriptLock} {
		if seen[s.Name] == 0 {
			t.Errorf("the run never called %s: the test does not exercise the path that uses it", s.Name)
		}
	}
	// The checker itself: it finds the undeclared rows of a 2.0 claim.
	mon = startMonitor(t, srv.Addr())
	calibrate(t, srv)
	id := mint(t, c, emq.WorkKind)
	if _, err := q.Push(ctx, id, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := q.Claim(ctx, time.Minute); err != nil || !ok {
		t.Fatalf("Claim = %v, %v", ok, err)
	}
	var claims int // the EVALSHA the server did not know shows too, without commands
	for _, call := range monitoredCalls(t, mon.stop(t, srv)) {
		if call.script == wire.ScriptClaim.Name && len(call.inner) > 0 {
			claims++
			if len(undeclaredKeys(call)) == 0 {
				t.Errorf("the checker finds no undeclared key in claim's commands %q (KEYS %q)", call.inner, call.keys)
			}
		}
	}
	if claims != 1 {
		t.Errorf("MONITOR showed %d claim calls that ran; want 1", claims)
	}
}
