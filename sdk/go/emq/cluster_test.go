package emq_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// TestCluster runs the SDK against a real Redis Cluster of three primaries
// (redistest.StartCluster: redis-server processes formed with redis-cli
// --cluster create), one cluster for every subtest. The subtests that move
// slots run last; the others find the slots' owners when they start.
func TestCluster(t *testing.T) {
	start := time.Now()
	// A short node timeout: ClusterDownIsNoFenceRefusal waits for a killed
	// primary to be failed.
	cl := redistest.StartCluster(t, redistest.WithNodeTimeout(time.Second))
	t.Logf("cluster of %d primaries up in %v", len(cl.Primaries()), time.Since(start).Round(time.Millisecond))

	t.Run("SlotFunction", func(t *testing.T) { clusterSlotFunction(t, cl) })
	t.Run("Connect", func(t *testing.T) { clusterConnectFenceLease(t, cl) })
	t.Run("QueuesOnEveryPrimary", func(t *testing.T) { clusterQueuesOnEveryPrimary(t, cl) })
	t.Run("Probes", func(t *testing.T) { clusterProbes(t, cl) })
	t.Run("PipelineAcrossSlots", func(t *testing.T) { clusterPipeline(t, cl) })
	t.Run("Schedulers", func(t *testing.T) { clusterSchedulers(t, cl) })
	t.Run("MigrationUnderWorkers", func(t *testing.T) { clusterMigrationUnderWorkers(t, cl, 1<<20) })
	t.Run("MigrationInBatchesUnderWorkers", func(t *testing.T) { clusterMigrationUnderWorkers(t, cl, 4) })
	t.Run("MigrationInBatches", func(t *testing.T) { clusterMigrationInBatches(t, cl) })
	t.Run("ReserveMigration", func(t *testing.T) { clusterReserveMigration(t, cl) })
	t.Run("ClaimOnSplitSlotLosesNothing", func(t *testing.T) { clusterClaimOnSplitSlot(t, cl) })
	t.Run("ClusterDownIsNoFenceRefusal", func(t *testing.T) { clusterDown(t, cl) })
}

// clusterCRC16 is CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0), the
// checksum Redis Cluster hashes keys with.
func clusterCRC16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for i := 0; i < 8; i++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// clusterSlot is a key's hash slot: CRC16 of its hashtag (what lies
// between the first { and the next } when that is not empty), or of the
// whole key, modulo 16384.
func clusterSlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(clusterCRC16([]byte(key)) % redistest.ClusterSlots)
}

// reserveSlot is the slot of every reserve member ({emq}:...).
var reserveSlot = clusterSlot("{emq}")

// clusterConnect connects a client to the cluster through every node's
// address; mod adjusts the options first.
func clusterConnect(t *testing.T, cl *redistest.Cluster, mod func(*emq.Options)) *emq.Client {
	t.Helper()
	opt := emq.Options{Redis: rueidis.ClientOption{InitAddress: cl.Addrs(), DisableCache: true}}
	if mod != nil {
		mod(&opt)
	}
	c, err := emq.Connect(ctxT(t), opt)
	if err != nil {
		t.Fatalf("Connect to the cluster: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// clusterQueueOn returns the first queue name prefix-N whose slot, computed
// here with CRC16, is served by the primary at owner and differs from the
// reserve's.
func clusterQueueOn(t *testing.T, cl *redistest.Cluster, prefix, owner string) string {
	t.Helper()
	for i := 0; i < 1000; i++ {
		name := prefix + "-" + strconv.Itoa(i)
		s := clusterSlot(name)
		if s != reserveSlot && cl.NodeForSlot(s) == owner {
			return name
		}
	}
	t.Fatalf("no queue %s-N lands on %s", prefix, owner)
	return ""
}

// clusterOther returns a primary other than addr.
func clusterOther(t *testing.T, cl *redistest.Cluster, addr string) string {
	t.Helper()
	for _, p := range cl.Primaries() {
		if p != addr {
			return p
		}
	}
	t.Fatalf("no primary other than %s", addr)
	return ""
}

// wantMoved checks that the node at addr refuses a command on key with
// MOVED to owner: the key is not served there.
func wantMoved(t *testing.T, cl *redistest.Cluster, addr, owner, key string) {
	t.Helper()
	_, err := cl.Do(addr, "EXISTS", key)
	want := fmt.Sprintf("MOVED %d %s", clusterSlot(key), owner)
	if err == nil || err.Error() != want {
		t.Errorf("EXISTS %s on %s answered %v, want %s", key, addr, err, want)
	}
}

// clusterErrorStats returns INFO errorstats of the node at addr: error
// replies by their prefix (ASK, MOVED, TRYAGAIN, ...).
func clusterErrorStats(t *testing.T, cl *redistest.Cluster, addr string) map[string]int64 {
	t.Helper()
	info, err := cl.Do(addr, "INFO", "errorstats")
	if err != nil {
		t.Fatalf("INFO errorstats on %s: %v", addr, err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\r\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "errorstat_"), ":count=")
		if ok && strings.HasPrefix(line, "errorstat_") {
			out[name], _ = strconv.ParseInt(rest, 10, 64)
		}
	}
	return out
}

// clusterCommandCalls returns how many times the node at addr ran command
// (INFO commandstats), such as asking: only a client following ASK sends it.
func clusterCommandCalls(t *testing.T, cl *redistest.Cluster, addr, command string) int64 {
	t.Helper()
	info, err := cl.Do(addr, "INFO", "commandstats")
	if err != nil {
		t.Fatalf("INFO commandstats on %s: %v", addr, err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+command+":calls="); ok {
			n, _ := strconv.ParseInt(strings.Split(rest, ",")[0], 10, 64)
			return n
		}
	}
	return 0
}

func clusterResetStats(t *testing.T, cl *redistest.Cluster, addrs ...string) {
	t.Helper()
	for _, a := range addrs {
		if _, err := cl.Do(a, "CONFIG", "RESETSTAT"); err != nil {
			t.Fatal(err)
		}
	}
}

// clusterLogSink keeps the client's and workers' log records at Warn and
// above: on a healthy migration there must be none.
type clusterLogSink struct {
	mu   sync.Mutex
	recs []string
}

func (s *clusterLogSink) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (s *clusterLogSink) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	s.mu.Lock()
	s.recs = append(s.recs, b.String())
	s.mu.Unlock()
	return nil
}

func (s *clusterLogSink) WithAttrs([]slog.Attr) slog.Handler { return s }
func (s *clusterLogSink) WithGroup(string) slog.Handler      { return s }

func (s *clusterLogSink) records() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.recs)
}

// clusterWait polls cond every 5ms until it holds, failing after limit.
func clusterWait(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", limit, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// clusterSlotFunction: the test's CRC16 slot function agrees with the
// server's CLUSTER KEYSLOT, every key of a queue (rows included) shares the
// queue's slot, and every reserve member shares one slot of its own.
func clusterSlotFunction(t *testing.T, cl *redistest.Cluster) {
	if got := clusterCRC16([]byte("123456789")); got != 0x31C3 {
		t.Fatalf("CRC16(123456789) = %#x, want 0x31c3", got)
	}
	keys := []string{"foo", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}", "{}x", "emq:{orders}:pending", wire.KeyVersion}
	for _, k := range keys {
		if got, want := clusterSlot(k), cl.KeySlot(k); got != want {
			t.Errorf("slot of %q: CRC16 says %d, CLUSTER KEYSLOT %d", k, got, want)
		}
	}
	qk, err := wire.NewQueueKeys("orders")
	if err != nil {
		t.Fatal(err)
	}
	row, _ := qk.Row(emq.MustParseID("JOB0SURKM5IuRN"))
	for _, k := range []string{qk.Pending, qk.Active, qk.Schedule, qk.Dead, qk.Wake, row} {
		if s := cl.KeySlot(k); s != clusterSlot("orders") {
			t.Errorf("%s is in slot %d, not the queue's %d", k, s, clusterSlot("orders"))
		}
	}
	mig, _ := wire.KeyMigration("orders")
	for _, k := range []string{wire.KeyVersion, wire.KeyLocks, wire.KeyBundle, mig} {
		if s := cl.KeySlot(k); s != reserveSlot {
			t.Errorf("reserve member %s is in slot %d, not the reserve's %d", k, s, reserveSlot)
		}
	}
	if reserveSlot == clusterSlot("orders") {
		t.Errorf("the reserve shares the slot of queue orders")
	}
}

// clusterConnectFenceLease: Connect with nothing but the cluster's
// addresses fences the keyspace and leases a node on the reserve's slot,
// on the primary that serves it and only there.
func clusterConnectFenceLease(t *testing.T, cl *redistest.Cluster) {
	ctx := ctxT(t)
	c, err := emq.Connect(ctx, emq.Options{Redis: rueidis.ClientOption{InitAddress: cl.Addrs()}})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer c.Close()
	if m := c.Redis().Mode(); m != rueidis.ClientModeCluster {
		t.Fatalf("client mode %s, want cluster", m)
	}
	if c.VersionFound() != wire.VersionRecord {
		t.Fatalf("VersionFound %q, want %q", c.VersionFound(), wire.VersionRecord)
	}
	owner := cl.NodeForSlot(reserveSlot)
	if v, err := cl.Do(owner, "GET", wire.KeyVersion); err != nil || v != wire.VersionRecord {
		t.Errorf("GET %s on the reserve's primary: %q, %v", wire.KeyVersion, v, err)
	}
	if v, err := cl.Do(owner, "HGET", wire.KeyBundle, emq.Version); err != nil || v != wire.BundleDigest {
		t.Errorf("HGET %s %s on the reserve's primary: %q, %v", wire.KeyBundle, emq.Version, v, err)
	}
	lease, err := cl.Do(owner, "HGET", wire.KeyLocks, wire.LockNode(c.Node()))
	if err != nil || lease == "(nil)" || !strings.Contains(lease, " ") {
		t.Errorf("the node lease %s is %q (%v), want \"<owner> <deadline>\"", wire.LockNode(c.Node()), lease, err)
	}
	for _, p := range cl.Primaries() {
		if p != owner {
			wantMoved(t, cl, p, owner, wire.KeyVersion)
			wantMoved(t, cl, p, owner, wire.KeyLocks)
		}
	}
	if _, err := c.Mint(emq.WorkKind); err != nil {
		t.Fatalf("Mint: %v", err)
	}

	// A second client leases another node; closing it releases its lease.
	c2, err := emq.Connect(ctx, emq.Options{Redis: rueidis.ClientOption{InitAddress: cl.Addrs()}})
	if err != nil {
		t.Fatalf("second Connect: %v", err)
	}
	n2 := c2.Node()
	if n2 == c.Node() || n2 < 0 {
		t.Fatalf("the clients hold nodes %d and %d", c.Node(), n2)
	}
	c2.Close()
	if v, err := cl.Do(owner, "HEXISTS", wire.KeyLocks, wire.LockNode(n2)); err != nil || v != "0" {
		t.Errorf("the closed client's lease is still there (%q, %v)", v, err)
	}
}

// clusterQueuesOnEveryPrimary: one queue per primary, chosen by CRC16 and
// checked on the servers themselves; Enqueue and Push, Claim and ClaimMany,
// Complete round trips on each.
func clusterQueuesOnEveryPrimary(t *testing.T, cl *redistest.Cluster) {
	ctx := ctxT(t)
	c := clusterConnect(t, cl, nil)
	prim := cl.Primaries()
	if len(prim) != 3 {
		t.Fatalf("primaries %v", prim)
	}
	for _, owner := range prim {
		name := clusterQueueOn(t, cl, "rt", owner)
		q := queue(t, c, name)
		ids := map[emq.ID]string{}
		for i := 0; i < 6; i++ {
			id := mint(t, c, emq.WorkKind)
			payload := fmt.Sprintf("%s #%d", name, i)
			var ok bool
			var err error
			if i%2 == 0 {
				ok, err = q.Enqueue(ctx, id, []byte(payload))
			} else {
				ok, err = q.Push(ctx, id, []byte(payload))
			}
			if err != nil || !ok {
				t.Fatalf("%s: enqueue %d: %v, %v", name, i, ok, err)
			}
			ids[id] = payload
		}
		// The queue's keys are on its primary, and nowhere else.
		if n, err := cl.Do(owner, "ZCARD", q.Keys().Pending); err != nil || n != "6" {
			t.Errorf("%s: ZCARD pending on %s: %q, %v", name, owner, n, err)
		}
		for _, p := range prim {
			if p != owner {
				wantMoved(t, cl, p, owner, q.Keys().Pending)
			}
		}
		job, ok, err := q.Claim(ctx, time.Minute)
		if err != nil || !ok || ids[job.ID] != string(job.Payload) {
			t.Fatalf("%s: Claim: %+v, %v, %v", name, job, ok, err)
		}
		if err := q.Complete(ctx, job.ID, job.Token); err != nil {
			t.Fatalf("%s: Complete: %v", name, err)
		}
		delete(ids, job.ID)
		call := wire.ClaimManyCall{Pending: q.Keys().Pending, Active: q.Keys().Active, Wake: q.Keys().Wake, Prefix: q.Keys().RowPrefix(), LeaseMS: 60000, Count: 10}
		recs, err := call.Exec(ctx, c.Redis())
		if err != nil || len(recs) != 5 {
			t.Fatalf("%s: ClaimMany: %d records, %v", name, len(recs), err)
		}
		for _, r := range recs {
			if ids[r.ID] != r.Payload {
				t.Errorf("%s: claimed %s with payload %q, want %q", name, r.ID, r.Payload, ids[r.ID])
			}
			if err := q.Complete(ctx, r.ID, r.Token); err != nil {
				t.Fatalf("%s: Complete %s: %v", name, r.ID, err)
			}
			delete(ids, r.ID)
		}
		sizes, err := q.Sizes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for s, n := range sizes {
			if n != 0 {
				t.Errorf("%s: %s holds %d after every job completed", name, s, n)
			}
		}
		// Nothing is left but the doorbell Push rang (a hint, kept).
		if keys, err := cl.Do(owner, "CLUSTER", "GETKEYSINSLOT", strconv.Itoa(clusterSlot(name)), "10"); err != nil || (keys != "" && keys != q.Keys().Wake) {
			t.Errorf("%s: keys left in its slot: %q (%v)", name, keys, err)
		}
	}
}

// clusterProbes: every probe of the manifest passes on the cluster, and
// nothing of the scratch queues is left on any node.
func clusterProbes(t *testing.T, cl *redistest.Cluster) {
	c := clusterConnect(t, cl, nil)
	tr, err := c.RunProbes(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, p := range wire.Probes() {
		total += len(p.Steps)
	}
	out := tr.String()
	if !tr.OK() || len(tr.Results) != total || !strings.HasSuffix(out, fmt.Sprintf("PASS %d/%d\n", total, total)) {
		t.Fatalf("probe transcript on the cluster:\n%s\nwant PASS %d/%d", out, total, total)
	}
	t.Logf("probes on the cluster: PASS %d/%d", total, total)
	for _, addr := range cl.Primaries() {
		if keys, err := cl.Do(addr, "KEYS", "*emqprobe-*"); err != nil || keys != "" {
			t.Errorf("the probes left %q behind on %s (%v)", keys, addr, err)
		}
	}
	locks, err := cl.Do(cl.NodeForSlot(reserveSlot), "HKEYS", wire.KeyLocks)
	if err != nil || strings.Contains(locks, "emqprobe-") {
		t.Errorf("the probes left locks behind: %q (%v)", locks, err)
	}
}

// clusterPipeline: pipelined batches over many queues on every primary:
// the generated calls' LuaExec through rueidis ExecMulti, PushBatch, and
// raw DoMulti, each one call across slots.
func clusterPipeline(t *testing.T, cl *redistest.Cluster) {
	ctx := ctxT(t)
	c := clusterConnect(t, cl, nil)
	const queues, per = 24, 5
	var qs []*emq.Queue
	owners, slots := map[string]bool{}, map[int]bool{}
	for i := 0; i < queues; i++ {
		name := "batch-" + strconv.Itoa(i)
		qs = append(qs, queue(t, c, name))
		slots[clusterSlot(name)] = true
		owners[cl.NodeForSlot(clusterSlot(name))] = true
	}
	if len(owners) != 3 || len(slots) != queues {
		t.Fatalf("%d queues on %d slots of %d primaries; want every queue its own slot, on all 3", queues, len(slots), len(owners))
	}
	want := map[string]map[emq.ID]bool{}
	var execs []rueidis.LuaExec
	for _, q := range qs {
		want[q.Name()] = map[emq.ID]bool{}
		for j := 0; j < per; j++ {
			id := mint(t, c, emq.WorkKind)
			row, _ := q.Keys().Row(id)
			call := wire.EnqueueCall{Row: row, Pending: q.Keys().Pending, ID: id, Payload: "p"}
			execs = append(execs, call.LuaExec())
			want[q.Name()][id] = true
		}
	}
	for i, r := range wire.ScriptEnqueue.Lua().ExecMulti(ctx, c.Redis(), execs...) {
		if n, err := wire.DecodeEnqueue(r); err != nil || n != wire.EnqueueEnqueued {
			t.Fatalf("pipelined enqueue %d: %d, %v", i, n, err)
		}
	}
	for _, q := range qs {
		jobs := make([]emq.NewJob, per)
		for j := range jobs {
			jobs[j] = emq.NewJob{ID: mint(t, c, emq.WorkKind), Payload: []byte("b")}
			want[q.Name()][jobs[j].ID] = true
		}
		got, err := q.PushBatch(ctx, jobs)
		if err != nil || slices.Contains(got, false) {
			t.Fatalf("%s: PushBatch: %v, %v", q.Name(), got, err)
		}
	}
	zcard := func(key func(wire.QueueKeys) string) []int64 {
		cmds := make(rueidis.Commands, len(qs))
		for i, q := range qs {
			cmds[i] = c.Redis().B().Zcard().Key(key(q.Keys())).Build()
		}
		var out []int64
		for i, r := range c.Redis().DoMulti(ctx, cmds...) {
			n, err := r.AsInt64()
			if err != nil {
				t.Fatalf("pipelined ZCARD of %s: %v", qs[i].Name(), err)
			}
			out = append(out, n)
		}
		return out
	}
	for i, n := range zcard(func(k wire.QueueKeys) string { return k.Pending }) {
		if n != 2*per {
			t.Errorf("%s: %d pending, want %d", qs[i].Name(), n, 2*per)
		}
	}
	var claims []rueidis.LuaExec
	for _, q := range qs {
		call := wire.ClaimManyCall{Pending: q.Keys().Pending, Active: q.Keys().Active, Wake: q.Keys().Wake, Prefix: q.Keys().RowPrefix(), LeaseMS: 60000, Count: 2 * per}
		claims = append(claims, call.LuaExec())
	}
	var completes []rueidis.LuaExec
	for i, r := range wire.ScriptClaimMany.Lua().ExecMulti(ctx, c.Redis(), claims...) {
		q := qs[i]
		recs, err := wire.DecodeClaimMany(r)
		if err != nil || len(recs) != 2*per {
			t.Fatalf("%s: pipelined claim_many: %d records, %v", q.Name(), len(recs), err)
		}
		for _, rec := range recs {
			if !want[q.Name()][rec.ID] {
				t.Errorf("%s: claimed %s, not one of its jobs", q.Name(), rec.ID)
			}
			delete(want[q.Name()], rec.ID)
			row, _ := q.Keys().Row(rec.ID)
			call := wire.CompleteCall{Active: q.Keys().Active, Row: row, ID: rec.ID, Token: rec.Token}
			completes = append(completes, call.LuaExec())
		}
	}
	for i, r := range wire.ScriptComplete.Lua().ExecMulti(ctx, c.Redis(), completes...) {
		if _, err := wire.DecodeComplete(r); err != nil {
			t.Fatalf("pipelined complete %d: %v", i, err)
		}
	}
	for name, left := range want {
		if len(left) != 0 {
			t.Errorf("%s: %d jobs never claimed", name, len(left))
		}
	}
	pending := zcard(func(k wire.QueueKeys) string { return k.Pending })
	active := zcard(func(k wire.QueueKeys) string { return k.Active })
	for i := range qs {
		if pending[i] != 0 || active[i] != 0 {
			t.Errorf("%s: %d pending, %d active after the batch", qs[i].Name(), pending[i], active[i])
		}
	}
}

// clusterMigrationUnderWorkers moves the slot of a busy queue to another
// primary in the middle of work: two workers (each its own client) run
// jobs while a producer keeps pushing and enqueuing. The slot is moved with
// MIGRATE ... KEYS of batch keys at a time: with one batch of all its keys
// it stays open 300ms after it, so the clients meet ASK (the source holds
// nothing), TRYAGAIN (the importing node lacks some key of a script) and
// then MOVED; with small batches (as redis-cli --cluster reshard moves a
// slot) the queue's keys are split between the two primaries for the
// whole move, 5ms after each batch, and every script call whose keys are
// split is answered TRYAGAIN and resent. Every job, enqueued before,
// during and after, runs exactly once — none is lost, because every
// script the workers run declares every key it touches (2.2.0); no error
// reaches a caller and the clients log no warning; the reserve, on the
// busy queue's former primary, stays where it is.
func clusterMigrationUnderWorkers(t *testing.T, cl *redistest.Cluster, batch int) {
	ctx := ctxT(t)
	sink := &clusterLogSink{}
	tally := &emq.Tally{}
	mod := func(o *emq.Options) {
		o.Logger = slog.New(sink)
		o.Metrics = tally
		o.NodeLease = 900 * time.Millisecond // renewed every 300ms, on the reserve, all along
	}
	producer := clusterConnect(t, cl, mod)
	from := cl.NodeForSlot(reserveSlot)
	name := clusterQueueOn(t, cl, "busy"+strconv.Itoa(batch), from)
	slot := clusterSlot(name)
	to := clusterOther(t, cl, from)
	q := queue(t, producer, name)

	var mu sync.Mutex
	phaseOf := map[emq.ID]int{} // enqueued: 0 before the migration, 1 during, 2 after
	runs := map[emq.ID]int{}
	var phase atomic.Int32
	var errs []error
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}

	// Before: a backlog.
	backlog := make([]emq.NewJob, 300)
	for i := range backlog {
		backlog[i] = emq.NewJob{ID: mint(t, producer, emq.WorkKind), Payload: []byte("backlog")}
		phaseOf[backlog[i].ID] = 0
	}
	if _, err := q.PushBatch(ctx, backlog); err != nil {
		t.Fatal(err)
	}

	handler := func(_ context.Context, job emq.Job) error {
		time.Sleep(2 * time.Millisecond)
		mu.Lock()
		runs[job.ID]++
		mu.Unlock()
		return nil
	}
	var wg sync.WaitGroup
	wctx, stopWorkers := context.WithCancel(context.Background())
	defer stopWorkers()
	for i := 0; i < 2; i++ {
		c := clusterConnect(t, cl, mod)
		w, err := emq.NewWorker(queue(t, c, name), handler, emq.WorkerOptions{Concurrency: 4, Wait: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(wctx); err != nil {
				fail(fmt.Errorf("worker: %w", err))
			}
		}()
	}

	// Throughout: a producer, one job a millisecond, Push and Enqueue in
	// turn; each job is filed under the phase its call returned in.
	stopProducing := make(chan struct{})
	var produced sync.WaitGroup
	produced.Add(1)
	go func() {
		defer produced.Done()
		for i := 0; ; i++ {
			select {
			case <-stopProducing:
				return
			case <-time.After(time.Millisecond):
			}
			id, err := producer.Mint(emq.WorkKind)
			if err != nil {
				fail(fmt.Errorf("mint: %w", err))
				return
			}
			var ok bool
			if i%2 == 0 {
				ok, err = q.Push(ctx, id, []byte("live"))
			} else {
				ok, err = q.Enqueue(ctx, id, []byte("live"))
			}
			if err != nil || !ok {
				fail(fmt.Errorf("enqueue %d: %v, %w", i, ok, err))
				return
			}
			mu.Lock()
			phaseOf[id] = int(phase.Load())
			mu.Unlock()
		}
	}()
	ran := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(runs)
	}
	clusterWait(t, 10*time.Second, "the workers ran 60 jobs", func() bool { return ran() >= 60 })

	clusterResetStats(t, cl, from, to)
	phase.Store(1)
	began := time.Now()
	pause, batches := 300*time.Millisecond, 0
	if batch < 100 {
		pause = 5 * time.Millisecond
	}
	moved := cl.MigrateSlotWith(t, slot, from, to, redistest.MigrateOptions{Batch: batch, Pause: pause, AfterBatch: func(int) { batches++ }})
	phase.Store(2)
	t.Logf("slot %d of %s (%d keys) moved from %s to %s in %d batches in %v, %d jobs run by then", slot, name, moved, from, to, batches, time.Since(began).Round(time.Millisecond), ran())
	if moved < 10 {
		t.Errorf("only %d keys moved: the queue was not busy", moved)
	}
	if batch < 100 && batches < 5 {
		t.Errorf("the slot moved in %d batches: it was not split for long", batches)
	}
	time.Sleep(200 * time.Millisecond) // after: more work on the new primary
	close(stopProducing)
	produced.Wait()
	mu.Lock()
	total := len(phaseOf)
	mu.Unlock()
	clusterWait(t, 20*time.Second, "every job ran", func() bool { return ran() >= total })
	stopWorkers()
	wg.Wait()

	for _, err := range errs {
		t.Error(err)
	}
	var byPhase [3]int
	for id, p := range phaseOf {
		byPhase[p]++
		if runs[id] != 1 {
			t.Errorf("job %s (phase %d) ran %d times", id, p, runs[id])
		}
	}
	for id := range runs {
		if _, ok := phaseOf[id]; !ok {
			t.Errorf("job %s ran but was never enqueued", id)
		}
	}
	t.Logf("jobs enqueued before/during/after the migration: %v, each run once", byPhase)
	if byPhase[0] == 0 || byPhase[2] == 0 {
		t.Errorf("jobs by phase %v: want some enqueued before and some after the migration", byPhase)
	}
	if n := tally.Get(emq.Completed); n != int64(total) {
		t.Errorf("%d completions counted, want %d", n, total)
	}
	for _, k := range []emq.Counter{emq.Stale, emq.Retried, emq.Buried, emq.Reaped} {
		if n := tally.Get(k); n != 0 {
			t.Errorf("%s: %d, want 0", k, n)
		}
	}
	for _, r := range sink.records() {
		t.Errorf("logged: %s", r)
	}

	// Where everything is now.
	if got := cl.NodeForSlot(slot); got != to {
		t.Errorf("slot %d is served by %s, want %s", slot, got, to)
	}
	if got := cl.NodeForSlot(reserveSlot); got != from {
		t.Errorf("the reserve moved to %s with the queue; it has a slot of its own on %s", got, from)
	}
	if n := cl.CountKeysInSlot(from, slot); n != 0 {
		t.Errorf("%d keys of the queue left on %s", n, from)
	}
	sizes, err := q.Sizes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for s, n := range sizes {
		if n != 0 {
			t.Errorf("%s holds %d after the drain", s, n)
		}
	}
	if _, err := producer.Mint(emq.WorkKind); err != nil {
		t.Errorf("Mint after the migration: %v", err)
	}

	// The clients met the migration: the servers answered ASK, TRYAGAIN and
	// MOVED, and none of it reached a caller.
	src, dst := clusterErrorStats(t, cl, from), clusterErrorStats(t, cl, to)
	t.Logf("error replies during the migration: %s %v, %s %v", from, src, to, dst)
	switch {
	case batch >= 100 && (src["ASK"] == 0 || src["MOVED"] == 0 || src["TRYAGAIN"]+dst["TRYAGAIN"] == 0):
		t.Errorf("want ASK and MOVED from %s and TRYAGAIN from either: %v, %v", from, src, dst)
	case batch < 100 && (src["MOVED"] == 0 || src["TRYAGAIN"]+dst["TRYAGAIN"] < 10):
		// Split keys: the scripts meet TRYAGAIN throughout (ASK only for a
		// command whose keys have all moved, which small batches may not
		// leave time for).
		t.Errorf("want MOVED from %s and TRYAGAIN from either throughout: %v, %v", from, src, dst)
	}
	if n := clusterCommandCalls(t, cl, to, "asking"); n == 0 && src["ASK"] > 0 {
		t.Errorf("no client sent ASKING to %s: the ASK redirections were not followed", to)
	}
}

// clusterMigrationInBatches moves a queue's slot the way redis-cli
// --cluster reshard does, four keys per MIGRATE, so that for a while the
// queue's keys are split between the two primaries. After each batch the
// test looks where each held job's keys are (EXISTS on the source answers
// ASK for a key that moved) and acts on those that are whole on one side:
// it extends a job whose row and the active set are both still on the
// source (served there), and completes one whose row and active set have
// both moved (the source answers ASK; only the importing node, reached with
// ASKING, can run it). Meanwhile a producer pushes and enqueues: a new row
// is a missing key, so the split slot answers TRYAGAIN until it settles,
// and the calls return only then, without error. These are the scripts
// whose keys are all in KEYS; claims wait for the slot to settle (see
// ClaimOnSplitSlotLosesNothing). Afterwards every job is claimed and
// completed exactly once.
func clusterMigrationInBatches(t *testing.T, cl *redistest.Cluster) {
	ctx := ctxT(t)
	c := clusterConnect(t, cl, nil)
	from := cl.Primaries()[0]
	name := clusterQueueOn(t, cl, "split", from)
	slot := clusterSlot(name)
	to := clusterOther(t, cl, from)
	q := queue(t, c, name)

	// 15 leased jobs, then 15 pending ones: GETKEYSINSLOT lists the newest
	// keys first, so the pending rows move first, then the active set with
	// the held rows, newest first.
	enqueue := func(n int) []emq.ID {
		var ids []emq.ID
		for i := 0; i < n; i++ {
			id := mint(t, c, emq.WorkKind)
			if ok, err := q.Enqueue(ctx, id, []byte("x")); err != nil || !ok {
				t.Fatal(ok, err)
			}
			ids = append(ids, id)
		}
		return ids
	}
	all := map[emq.ID]bool{}
	for _, id := range enqueue(15) {
		all[id] = true
	}
	var held []emq.Job
	for i := 0; i < 15; i++ {
		j, ok, err := q.Claim(ctx, time.Minute)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		held = append(held, j)
	}
	for _, id := range enqueue(15) {
		all[id] = true
	}

	clusterResetStats(t, cl, from, to)
	var mu sync.Mutex
	var errs []error
	added := make(chan emq.ID, 20)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // a producer
		defer wg.Done()
		defer close(added)
		for i := 0; i < 10; i++ {
			time.Sleep(5 * time.Millisecond)
			id, err := c.Mint(emq.WorkKind)
			var ok bool
			if err == nil && i%2 == 0 {
				ok, err = q.Push(ctx, id, []byte("y"))
			} else if err == nil {
				ok, err = q.Enqueue(ctx, id, []byte("y"))
			}
			if err == nil && !ok {
				err = fmt.Errorf("enqueue %s: a duplicate", id)
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			added <- id
		}
	}()

	onSource := func(key string) (here bool) {
		r, err := cl.Do(from, "EXISTS", key)
		switch {
		case err == nil:
			return r == "1"
		case strings.HasPrefix(err.Error(), "ASK "):
			return false
		}
		t.Fatalf("EXISTS %s on %s: %v", key, from, err)
		return false
	}
	done := map[emq.ID]bool{}
	var extended, completed, batches int
	moved := cl.MigrateSlotWith(t, slot, from, to, redistest.MigrateOptions{Batch: 4, Pause: 10 * time.Millisecond, AfterBatch: func(int) {
		batches++
		activeHere := onSource(q.Keys().Active)
		for _, j := range held {
			if done[j.ID] {
				continue
			}
			row, _ := q.Keys().Row(j.ID)
			rowHere := onSource(row)
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			switch {
			case rowHere && activeHere:
				if _, err := q.Extend(cctx, j.ID, j.Token, time.Minute); err != nil {
					t.Errorf("Extend %s with its keys on the source: %v", j.ID, err)
				}
				extended++
			case !rowHere && !activeHere:
				if err := q.Complete(cctx, j.ID, j.Token); err != nil {
					t.Errorf("Complete %s with its keys moved: %v", j.ID, err)
				}
				done[j.ID] = true
				completed++
			}
			cancel()
		}
	}})
	wg.Wait()
	for id := range added {
		all[id] = true
	}
	for _, err := range errs {
		t.Error(err)
	}
	asking := clusterCommandCalls(t, cl, to, "asking")
	t.Logf("%d keys moved in %d batches; meanwhile %d extends on the source, %d completes through ASK (%d ASKING on %s)", moved, batches, extended, completed, asking, to)
	if batches < 5 || extended == 0 || completed == 0 || asking == 0 {
		t.Errorf("the split slot was not exercised: %d batches, %d extends, %d completes, %d ASKING", batches, extended, completed, asking)
	}

	// Afterwards: the held jobs not completed yet, then every other job,
	// each exactly once.
	for _, j := range held {
		delete(all, j.ID)
		if !done[j.ID] {
			if err := q.Complete(ctx, j.ID, j.Token); err != nil {
				t.Errorf("Complete %s after the migration: %v", j.ID, err)
			}
		}
	}
	for {
		j, ok, err := q.Claim(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if !all[j.ID] {
			t.Errorf("claimed %s twice, or a job never enqueued", j.ID)
		}
		delete(all, j.ID)
		if err := q.Complete(ctx, j.ID, j.Token); err != nil {
			t.Fatal(err)
		}
	}
	if len(all) != 0 {
		t.Errorf("%d jobs were never claimed", len(all))
	}
	sizes, err := q.Sizes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for s, n := range sizes {
		if n != 0 {
			t.Errorf("%s holds %d", s, n)
		}
	}
	src, dst := clusterErrorStats(t, cl, from), clusterErrorStats(t, cl, to)
	t.Logf("error replies: %s %v, %s %v", from, src, to, dst)
	if src["TRYAGAIN"]+dst["TRYAGAIN"] == 0 {
		t.Errorf("the producer never met TRYAGAIN: %v, %v", src, dst)
	}
}

// clusterReserveMigration moves the reserve's own slot, a key per MIGRATE,
// while a client mints on a short node lease (renewed by the lock script
// on {emq}:locks every 200ms; a missed renewal makes Mint fail) and other
// clients connect (the fence script on {emq}:version and {emq}:bundle) and
// close (unlock). Nothing fails, and the reserve ends whole on the new
// primary.
func clusterReserveMigration(t *testing.T, cl *redistest.Cluster) {
	ctx := ctxT(t)
	sink := &clusterLogSink{}
	c := clusterConnect(t, cl, func(o *emq.Options) {
		o.NodeLease = 600 * time.Millisecond
		o.Logger = slog.New(sink)
	})
	from := cl.NodeForSlot(reserveSlot)
	to := clusterOther(t, cl, from)
	clusterResetStats(t, cl, from, to)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mints, connects atomic.Int64
	var mu sync.Mutex
	var errs []error
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			if _, err := c.Mint(emq.WorkKind); err != nil {
				fail(fmt.Errorf("mint: %w", err))
				return
			}
			mints.Add(1)
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			c2, err := emq.Connect(ctx, emq.Options{Redis: rueidis.ClientOption{InitAddress: cl.Addrs(), DisableCache: true}, Logger: slog.New(sink)})
			if err != nil {
				fail(fmt.Errorf("connect: %w", err))
				return
			}
			c2.Close()
			connects.Add(1)
		}
	}()
	moved := cl.MigrateSlotWith(t, reserveSlot, from, to, redistest.MigrateOptions{Batch: 1, Pause: 150 * time.Millisecond})
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	for _, r := range sink.records() {
		t.Errorf("logged: %s", r)
	}
	t.Logf("reserve slot %d (%d keys) moved from %s to %s; meanwhile %d mints, %d connects", reserveSlot, moved, from, to, mints.Load(), connects.Load())
	if v, err := cl.Do(to, "GET", wire.KeyVersion); err != nil || v != wire.VersionRecord {
		t.Errorf("GET %s on the new primary: %q, %v", wire.KeyVersion, v, err)
	}
	if v, err := cl.Do(to, "HGET", wire.KeyLocks, wire.LockNode(c.Node())); err != nil || v == "(nil)" {
		t.Errorf("the node lease is not on the new primary: %q, %v", v, err)
	}
	wantMoved(t, cl, from, to, wire.KeyLocks)
	src := clusterErrorStats(t, cl, from)
	if src["ASK"] == 0 && src["TRYAGAIN"] == 0 {
		t.Errorf("the clients never met the migration: %v", src)
	}
	t.Logf("error replies: %s %v, %s %v", from, src, to, clusterErrorStats(t, cl, to))
}

// clusterClaimOnSplitSlot claims from a queue whose slot is split between
// two nodes by a migration in batches, at the two worst moments, and loses
// nothing. The 2.x pop scripts (claim, claim_many, complete_claim, promote,
// reap) reach rows through the row prefix, not KEYS, and lost jobs there:
// with the sets moved first, the importing node ran claim with ASKING,
// popped every pending id and found none of their rows (still on the
// source) and dropped them all; with rows moved first, the source popped an
// id whose row had moved and died on a non local key after the pop. The
// worker's paths (ClaimMany, the Worker) read the head and claim those ids
// with claim_ids, their rows in KEYS: the split slot answers TRYAGAIN (some
// keys here, some there), the call is resent with a backoff until its
// context ends, and nothing is popped. Once the slot settles every job is
// claimed exactly once, and no row is left pending in no set.
func clusterClaimOnSplitSlot(t *testing.T, cl *redistest.Cluster) {
	ctx := ctxT(t)
	c := clusterConnect(t, cl, nil)
	for _, tc := range []string{"sets", "rows"} {
		from := cl.Primaries()[1]
		name := clusterQueueOn(t, cl, "split-"+tc, from)
		slot := clusterSlot(name)
		to := clusterOther(t, cl, from)
		q := queue(t, c, name)
		var ids []emq.ID
		for i := 0; i < 6; i++ {
			id := mint(t, c, emq.WorkKind)
			if ok, err := q.Push(ctx, id, []byte("x")); err != nil || !ok {
				t.Fatal(ok, err)
			}
			ids = append(ids, id)
		}
		held, err := q.ClaimMany(ctx, time.Minute, 1) // ids[0]; the active set exists
		if err != nil || len(held) != 1 || held[0].ID != ids[0] {
			t.Fatal(held, err)
		}
		must := func(addr string, args ...string) {
			t.Helper()
			if _, err := cl.Do(addr, args...); err != nil {
				t.Fatalf("%s on %s: %v", strings.Join(args, " "), addr, err)
			}
		}
		s := strconv.Itoa(slot)
		must(to, "CLUSTER", "SETSLOT", s, "IMPORTING", cl.Node(from).ID())
		must(from, "CLUSTER", "SETSLOT", s, "MIGRATING", cl.Node(to).ID())
		var first []string
		if tc == "sets" {
			first = []string{q.Keys().Pending, q.Keys().Active, q.Keys().Wake}
		} else {
			for _, id := range ids[1:4] {
				row, _ := q.Keys().Row(id)
				first = append(first, row)
			}
		}
		_, port, _ := strings.Cut(to, ":")
		must(from, append([]string{"MIGRATE", "127.0.0.1", port, "", "0", "5000", "KEYS"}, first...)...)

		claimed := map[emq.ID]int{}
		var claimErrs []string
		for i := 0; i < 3; i++ {
			cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			jobs, err := q.ClaimMany(cctx, time.Minute, 5)
			cancel()
			if err != nil {
				claimErrs = append(claimErrs, err.Error())
				// The last TRYAGAIN, or the context ending while a resend
				// was on its way.
				if !strings.Contains(err.Error(), "TRYAGAIN") && !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("%s moved first: a claim on the split slot failed with %v; want TRYAGAIN, resent until its context ended", tc, err)
				}
			}
			for _, j := range jobs {
				claimed[j.ID]++
			}
		}
		if n := cl.CountKeysInSlot(to, slot) + cl.CountKeysInSlot(from, slot); n != 6+3 {
			// 6 rows, pending, active, wake: nothing popped, nothing dropped
			t.Errorf("%s moved first: %d keys of the queue on the two nodes while split, want 9", tc, n)
		}
		cl.MigrateSlot(t, slot, from, to) // the rest; the slot settles on to
		for {
			jobs, err := q.ClaimMany(ctx, time.Minute, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) == 0 {
				break
			}
			for _, j := range jobs {
				claimed[j.ID]++
			}
		}
		for _, id := range ids[1:] {
			if claimed[id] != 1 {
				row, _ := q.Keys().Row(id)
				st, err := cl.Do(to, "HGET", row, wire.FieldState)
				t.Errorf("%s moved first: job %s claimed %d times (its row's state %q, %v); want once", tc, id, claimed[id], st, err)
			}
		}
		t.Logf("%s moved first: %d claims on the split slot failed (%q), then all %d pending jobs claimed once", tc, len(claimErrs), claimErrs, len(claimed))
		if len(claimErrs) == 0 {
			t.Errorf("%s moved first: every claim on the split slot succeeded; the slot was not split", tc)
		}
		sizes, err := q.Sizes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if sizes[emq.SetActive] != 6 || sizes[emq.SetPending] != 0 {
			t.Errorf("%s moved first: sizes %v; want the 6 jobs active", tc, sizes)
		}
	}
}

// clusterDown kills a primary (no replica takes over) and waits for the
// cluster to fail: Connect then fails with the cluster's CLUSTERDOWN, not
// with ErrVersionFence, which would say the keyspace is incompatible. The
// node is restarted and the cluster heals.
func clusterDown(t *testing.T, cl *redistest.Cluster) {
	owner := cl.NodeForSlot(reserveSlot)
	victim := clusterOther(t, cl, owner)
	killed := time.Now()
	cl.Kill(victim)
	deadline := time.Now().Add(15 * time.Second)
	for {
		info, err := cl.Do(owner, "CLUSTER", "INFO")
		if err == nil && strings.Contains(info, "cluster_state:fail") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster did not fail after %s was killed", victim)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the cluster failed %v after %s was killed", time.Since(killed).Round(time.Millisecond), victim)
	ctx, cancel := context.WithTimeout(ctxT(t), 5*time.Second)
	defer cancel()
	c, err := emq.Connect(ctx, emq.Options{Redis: rueidis.ClientOption{InitAddress: cl.Addrs(), DisableCache: true}})
	if err == nil {
		c.Close()
		t.Fatal("Connect succeeded on a cluster that is down")
	}
	if errors.Is(err, emq.ErrVersionFence) || !strings.Contains(err.Error(), "CLUSTERDOWN") {
		t.Errorf("Connect on a cluster that is down: %v; want the CLUSTERDOWN error, not a version fence refusal", err)
	}
	restarted := time.Now()
	cl.Restart(victim)
	t.Logf("healed %v after the restart", time.Since(restarted).Round(time.Millisecond))
}
