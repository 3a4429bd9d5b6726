package orders_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/examples/orders"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// syncBuffer is a bytes.Buffer that a running service may write while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// openQueue connects a client of the test's own, for planting and
// inspection.
func openQueue(t *testing.T, srv *redistest.Server, name string) (*emq.Client, *emq.Queue) {
	t.Helper()
	c, err := emq.Connect(testCtx(t, 10*time.Second), emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true}})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(c.Close)
	q, err := c.Queue(name)
	if err != nil {
		t.Fatal(err)
	}
	return c, q
}

// produce runs the producer to the end and returns what it enqueued: order
// by job.
func produce(t *testing.T, ctx context.Context, args ...string) map[emq.ID]orders.Order {
	t.Helper()
	var out syncBuffer
	if err := orders.RunProducer(ctx, args, &out); err != nil {
		t.Fatalf("producer %v: %v\n%s", args, err, out.String())
	}
	return enqueuedLines(t, out.String())
}

var enqueuedRE = regexp.MustCompile(`^enqueued (\S+) order=(\S+) qty=(\d+)$`)

// enqueuedLines parses the producer's "enqueued" lines, checking the kinds
// of both ids.
func enqueuedLines(t *testing.T, out string) map[emq.ID]orders.Order {
	t.Helper()
	got := map[emq.ID]orders.Order{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := enqueuedRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		job, order := parseKind(t, m[1], emq.WorkKind), parseKind(t, m[2], emq.KindORD)
		qty, _ := strconv.Atoi(m[3])
		if _, dup := got[job]; dup {
			t.Errorf("job %s printed twice", job)
		}
		got[job] = orders.Order{ID: order, Qty: qty}
	}
	return got
}

func parseKind(t *testing.T, s string, want emq.Kind) emq.ID {
	t.Helper()
	id, err := emq.ParseID(s)
	if err != nil || id.Kind() != want {
		t.Fatalf("%q is not a %s id (err %v)", s, want, err)
	}
	return id
}

var processedRE = regexp.MustCompile(`msg="order processed" job=(\S+) order=(\S+) qty=(\d+) attempt=(\d+)`)

// counter reads one counter of the worker's final counters line.
func counter(t *testing.T, out, name string) int64 {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, `msg="final counters"`) {
			continue
		}
		m := regexp.MustCompile(`\b` + name + `=(\d+)`).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("no counter %s in %q", name, line)
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return n
	}
	t.Fatalf("no final counters in the worker's output:\n%s", out)
	return 0
}

// worker is a RunWorker running in the background.
type worker struct {
	out    syncBuffer
	cancel context.CancelFunc
	done   chan error
}

func startWorker(t *testing.T, args ...string) *worker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{cancel: cancel, done: make(chan error, 1)}
	go func() { w.done <- orders.RunWorker(ctx, args, &w.out) }()
	t.Cleanup(func() {
		cancel()
		<-w.done
	})
	return w
}

// stop cancels the worker as a signal would and waits for it to return,
// for up to within.
func (w *worker) stop(t *testing.T, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	w.cancel()
	select {
	case err := <-w.done:
		w.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("the worker returned %v; its output:\n%s", err, w.out.String())
		}
	case <-time.After(within):
		t.Fatalf("the worker did not stop within %v; its output:\n%s", within, w.out.String())
	}
	return time.Since(start)
}

// waitSizes polls the queue until ok accepts its sizes.
func waitSizes(t *testing.T, q *emq.Queue, within time.Duration, w *worker, ok func(map[emq.Set]int64) bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	var sizes map[emq.Set]int64
	for time.Now().Before(deadline) {
		var err error
		if sizes, err = q.Sizes(testCtx(t, time.Second)); err != nil {
			t.Fatal(err)
		}
		if ok(sizes) {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("the queue did not settle within %v: %v; the worker's output:\n%s", within, sizes, w.out.String())
}

// plant pushes a job whose payload is not an order, as a buggy or foreign
// producer would.
func plant(t *testing.T, c *emq.Client, q *emq.Queue, payload []byte) emq.ID {
	t.Helper()
	id, err := c.Mint(emq.WorkKind)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := q.Push(testCtx(t, time.Second), id, payload); !ok || err != nil {
		t.Fatalf("planting %s: %v %v", payload, ok, err)
	}
	return id
}

// TestEndToEnd produces orders three ways (Push, PushBatch, quantities read
// from a file), plants payloads that are not orders, and runs the worker
// until the queue is empty: every order is processed exactly once, with
// the ORD id it was produced with; some attempts fail and are retried; the
// planted jobs are buried; the shutdown is clean.
func TestEndToEnd(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t, 20*time.Second)
	addr := []string{"-addr", srv.Addr()}
	c, q := openQueue(t, srv, orders.DefaultQueue)

	want := produce(t, ctx, append(addr, "-n", "30")...) // Push, one by one
	// PushBatch: 16, 16 and 8 jobs a round trip.
	for id, o := range produce(t, ctx, append(addr, "-n", "40", "-batch", "16")...) {
		want[id] = o
	}
	in := filepath.Join(t.TempDir(), "orders.txt")
	if err := os.WriteFile(in, []byte("3\n\nnot a number\n-1\n7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile := produce(t, ctx, append(addr, "-in", in, "-batch", "5")...)
	if len(fromFile) != 2 {
		t.Fatalf("the file of 2 good lines produced %d orders", len(fromFile))
	}
	for id, o := range fromFile {
		want[id] = o
	}
	if len(want) != 72 {
		t.Fatalf("produced %d distinct jobs, want 72", len(want))
	}
	if n, err := q.PendingSize(ctx); err != nil || n != 72 {
		t.Fatalf("pending %d (%v), want 72", n, err)
	}
	// The cargo on the wire is the order, by its ORD id.
	for id, o := range want {
		info, ok, err := q.Get(ctx, id)
		if err != nil || !ok {
			t.Fatalf("Get(%s): %v %v", id, ok, err)
		}
		got, err := orders.Decode(info.Payload)
		if err != nil || got != o {
			t.Fatalf("job %s carries %+v (%v), want %+v", id, got, err, o)
		}
	}

	notAnOrder, err := c.Mint(emq.WorkKind)
	if err != nil {
		t.Fatal(err)
	}
	wrongKind, err := json.Marshal(orders.Order{ID: notAnOrder, Qty: 1})
	if err != nil {
		t.Fatal(err)
	}
	bad := []emq.ID{
		plant(t, c, q, []byte(`{"order": "`+string(emq.KindORD))),                       // not JSON
		plant(t, c, q, []byte(`{"qty":2}`)),                                             // no order
		plant(t, c, q, []byte(`{"order":"`+string(emq.KindORD)+`-not-an-id","qty":2}`)), // an id that does not parse
		plant(t, c, q, wrongKind),                                                       // a JOB id where the ORD id belongs
	}

	w := startWorker(t, append(addr, "-concurrency", "8", "-work", "5ms", "-fail-rate", "0.15",
		"-max-attempts", "25", "-retry-base", "10ms", "-report", "200ms", "-shutdown-timeout", "2s")...)
	waitSizes(t, q, 8*time.Second, w, func(s map[emq.Set]int64) bool {
		return s[emq.SetPending]+s[emq.SetActive]+s[emq.SetSchedule] == 0 && s[emq.SetDead] == 4
	})
	w.stop(t, 3*time.Second)
	out := w.out.String()

	seen := map[emq.ID]int{}
	for _, m := range processedRE.FindAllStringSubmatch(out, -1) {
		job, order := parseKind(t, m[1], emq.WorkKind), parseKind(t, m[2], emq.KindORD)
		qty, _ := strconv.Atoi(m[3])
		seen[job]++
		if o, ok := want[job]; !ok || o != (orders.Order{ID: order, Qty: qty}) {
			t.Errorf("processed job %s with %s qty %d; produced %+v (%v)", job, order, qty, o, ok)
		}
	}
	for id := range want {
		if seen[id] != 1 {
			t.Errorf("job %s was processed %d times, want exactly once", id, seen[id])
		}
	}
	completed, retried, buried, claimed := counter(t, out, "completed"), counter(t, out, "retried"), counter(t, out, "buried"), counter(t, out, "claimed")
	if completed != 72 || buried != 4 || retried == 0 || claimed != completed+retried+buried {
		t.Errorf("counters completed=%d retried=%d buried=%d claimed=%d; want 72, some, 4, their sum", completed, retried, buried, claimed)
	}
	if !strings.Contains(out, `msg="queue sizes" pending=0 active=0 schedule=0 dead=4`) || !strings.Contains(out, `msg="worker stopped cleanly"`) {
		t.Errorf("the worker did not report a clean stop and an empty queue")
	}
	for _, id := range bad {
		info, ok, err := q.Get(ctx, id)
		if err != nil || !ok || info.State != emq.StateDead {
			t.Errorf("planted job %s: %+v %v %v, want it buried", id, info, ok, err)
		}
	}
	for id := range want { // completion retires the row
		if _, ok, err := q.Get(ctx, id); ok || err != nil {
			t.Errorf("completed job %s still has a row (%v)", id, err)
		}
	}
	if t.Failed() {
		t.Logf("worker output:\n%s", out)
	}
}

// TestWorkerShutdown stops a worker while its handlers run: within the
// shutdown timeout they finish and their jobs complete; past it their jobs
// are handed back to pending at once, not left to an expiring lease. Either
// way Run returns nil and no job is lost.
func TestWorkerShutdown(t *testing.T) {
	for _, tc := range []struct {
		name            string
		work, timeout   string
		completed       int64
		pendingAfterRun int64
	}{
		{name: "drain", work: "300ms", timeout: "5s", completed: 3, pendingAfterRun: 0},
		{name: "hand back", work: "1m", timeout: "200ms", completed: 0, pendingAfterRun: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			ctx := testCtx(t, 10*time.Second)
			addr := []string{"-addr", srv.Addr()}
			_, q := openQueue(t, srv, orders.DefaultQueue)
			produced := produce(t, ctx, append(addr, "-n", "3", "-batch", "3")...)
			w := startWorker(t, append(addr, "-concurrency", "3", "-work", tc.work, "-fail-rate", "0",
				"-shutdown-timeout", tc.timeout, "-report", "0")...)
			waitSizes(t, q, 5*time.Second, w, func(s map[emq.Set]int64) bool { return s[emq.SetActive] == 3 })
			took := w.stop(t, 3*time.Second)
			out := w.out.String()
			if got := counter(t, out, "completed"); got != tc.completed {
				t.Errorf("completed %d, want %d", got, tc.completed)
			}
			if tc.pendingAfterRun > 0 && counter(t, out, "handed_back") != tc.pendingAfterRun {
				t.Errorf("handed_back %d, want every running job handed back", counter(t, out, "handed_back"))
			}
			sizes, err := q.Sizes(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := map[emq.Set]int64{emq.SetPending: tc.pendingAfterRun, emq.SetActive: 0, emq.SetSchedule: 0, emq.SetDead: 0}
			for s, n := range want {
				if sizes[s] != n {
					t.Errorf("after the shutdown %s holds %d, want %d (took %v)", s, sizes[s], n, took)
				}
			}
			for id := range produced {
				_, exists, err := q.Get(ctx, id)
				if err != nil || exists != (tc.pendingAfterRun > 0) {
					t.Errorf("job %s exists=%v (%v) after the shutdown", id, exists, err)
				}
			}
			if t.Failed() {
				t.Logf("worker output:\n%s", out)
			}
		})
	}
}

// TestProducerInterrupted cancels a rate-limited producer as a signal
// would: it returns nil, says so, and every order it printed is on the
// queue.
func TestProducerInterrupted(t *testing.T) {
	srv := redistest.Start(t)
	_, q := openQueue(t, srv, orders.DefaultQueue)
	for _, batch := range []string{"1", "50"} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second) // connect and some sends fit, 1000 at 100/s do not
		var out syncBuffer
		err := orders.RunProducer(ctx, []string{"-addr", srv.Addr(), "-n", "1000", "-rate", "100", "-batch", batch, "-linger", "1m"}, &out)
		cancel()
		if err != nil {
			t.Fatalf("-batch %s: %v\n%s", batch, err, out.String())
		}
		if !strings.Contains(out.String(), "interrupted:") {
			t.Errorf("-batch %s: no interruption reported:\n%s", batch, out.String())
		}
		got := enqueuedLines(t, out.String())
		if len(got) == 0 || len(got) >= 1000 {
			t.Errorf("-batch %s: %d orders enqueued in 2s at 100/s", batch, len(got))
		}
		for id := range got {
			if _, ok, err := q.Get(testCtx(t, time.Second), id); !ok || err != nil {
				t.Errorf("-batch %s: printed job %s is not on the queue (%v)", batch, id, err)
			}
		}
	}
}

// TestProducerFlags refuses what makes no sense, before connecting.
func TestProducerFlags(t *testing.T) {
	for _, args := range [][]string{{"-batch", "0"}, {"-n", "-1"}, {"-nope"}, {"extra"}} {
		var out syncBuffer
		if err := orders.RunProducer(context.Background(), append(args, "-addr", "127.0.0.1:1"), &out); err == nil {
			t.Errorf("%v was accepted", args)
		}
	}
	var out syncBuffer
	if err := orders.RunWorker(context.Background(), []string{"-fail-rate", "2"}, &out); err == nil {
		t.Error("-fail-rate 2 was accepted")
	}
}

// TestDecode is the payload contract: an ORD id and a positive quantity,
// the id re-parsed on decoding.
func TestDecode(t *testing.T) {
	gen, err := wire.NewGenerator(1)
	if err != nil {
		t.Fatal(err)
	}
	ord, _ := gen.Mint(emq.KindORD)
	job, _ := gen.Mint(emq.WorkKind)
	o := orders.Order{ID: ord, Qty: 3}
	payload, err := o.Payload()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"order":"` + ord.String() + `","qty":3}`; string(payload) != want {
		t.Errorf("payload %s, want %s", payload, want)
	}
	if got, err := orders.Decode(payload); err != nil || got != o {
		t.Errorf("Decode: %+v %v, want %+v", got, err, o)
	}
	if _, err := (orders.Order{ID: job, Qty: 1}).Payload(); !errors.Is(err, orders.ErrBadOrder) {
		t.Errorf("a JOB id as the order: %v", err)
	}
	for _, p := range []string{``, `[]`, `{}`, `{"order":"` + ord.String() + `"}`, `{"order":"` + ord.String() + `","qty":-2}`,
		`{"order":"` + job.String() + `","qty":1}`, `{"order":"` + ord.String()[:13] + `","qty":1}`} {
		if _, err := orders.Decode([]byte(p)); !errors.Is(err, orders.ErrBadOrder) {
			t.Errorf("Decode(%s): %v, want ErrBadOrder", p, err)
		}
	}
	if _, err := orders.Decode([]byte(`{"order":"x","qty":1}`)); !errors.Is(err, emq.ErrID) {
		t.Errorf("a malformed id: %v, want emq.ErrID", err)
	}
}

// TestNoProtocolLiterals scans the string literals of the examples' Go
// files for the protocol's literals: no key prefix or version inside any
// string, and no row field, state, set or kind name as a whole string. The
// examples use the SDK's names only.
func TestNoProtocolLiterals(t *testing.T) {
	keys, err := wire.NewQueueKeys("q")
	if err != nil {
		t.Fatal(err)
	}
	prefix, _, _ := strings.Cut(keys.Pending, "{")
	reserve, _, _ := strings.Cut(wire.KeyVersion, ":")
	inside := []string{prefix, reserve, emq.Version, wire.VersionRecord}
	whole := map[string]bool{}
	for _, f := range wire.RowFields() {
		whole[f] = true
	}
	for _, k := range wire.Kinds() {
		whole[string(k)] = true
	}
	for _, s := range wire.States() {
		whole[string(s)] = true
	}
	for _, s := range wire.Sets() {
		whole[string(s)] = true
	}
	files, _ := filepath.Glob("../*/*.go")
	if len(files) < 4 {
		t.Fatalf("found only %v", files)
	}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		var sc scanner.Scanner
		sc.Init(fset.AddFile(file, -1, len(src)), src, nil, 0)
		for {
			pos, tok, lit := sc.Scan()
			if tok == token.EOF {
				break
			}
			if tok != token.STRING {
				continue
			}
			str, err := strconv.Unquote(lit)
			if err != nil {
				t.Fatalf("%s: %v", fset.Position(pos), err)
			}
			for _, p := range inside {
				if strings.Contains(str, p) {
					t.Errorf("%s: %s holds the protocol literal %q; use the SDK", fset.Position(pos), lit, p)
				}
			}
			if whole[str] {
				t.Errorf("%s: %s is a protocol literal; use the SDK's name", fset.Position(pos), lit)
			}
		}
	}
}
