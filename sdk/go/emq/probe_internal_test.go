package emq

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/probe"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// observed starts a server and an observing client on it.
func observed(t *testing.T) (*Client, rueidis.Client, context.Context) {
	t.Helper()
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c, err := Observe(ctx, Options{Redis: rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, c.Redis(), ctx
}

func openRuntime(t *testing.T, c *Client, ctx context.Context) *probeRuntime {
	t.Helper()
	g, err := wire.NewGenerator(7)
	if err != nil {
		t.Fatal(err)
	}
	p := &prober{c: c, gen: g, readOnly: map[string]bool{}}
	rt, err := p.open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rt.(*probeRuntime)
}

// TestRuntimeNeverWritesTheFence: a command that would write a key of the
// fence, or any key outside the scratch queue, is not sent; reads are, and
// so are writes of the scratch queue's own keys; the fence script is not
// run at all.
func TestRuntimeNeverWritesTheFence(t *testing.T) {
	c, rc, ctx := observed(t)
	r := openRuntime(t, c, ctx)
	for _, cmd := range [][]string{
		{"SET", wire.KeyVersion, "x"}, {"DEL", wire.KeyBundle}, {"HSET", wire.KeyBundle, Version, "x"}, {"GETDEL", wire.KeyVersion},
		{"SET", "app:data", "x"}, {"FLUSHALL"}, {"FLUSHDB"}, {"EVAL", "return 1", "1", wire.KeyVersion}, {"NOSUCHCOMMAND", "x"},
		{"HSET", wire.KeyLocks, wire.LockProbe(r.keys.Queue()), "x"},
	} {
		if err := r.Do(ctx, cmd).Error(); err == nil || !strings.Contains(err.Error(), "not sent") {
			t.Errorf("%v: %v; want it not sent", cmd, err)
		}
	}
	if err := r.Do(ctx, []string{"GET", wire.KeyVersion}).Error(); !rueidis.IsRedisNil(err) {
		t.Errorf("GET of the record: %v; want nil", err)
	}
	job, _ := r.Lookup("job")
	row, _ := r.keys.Row(MustParseID(job))
	mine := append([]string{row}, r.scratch...)
	for _, k := range mine {
		if err := r.Do(ctx, []string{"SET", k, "x"}).Error(); err != nil {
			t.Errorf("SET of the scratch key %s: %v", k, err)
		}
	}
	args := map[string]string{probe.VarVersion: wire.VersionRecord, probe.VarSemver: Version, probe.VarBundle: wire.BundleDigest}
	if err := r.RunScript(ctx, wire.ScriptFence.Name, args).Error(); err == nil || !strings.Contains(err.Error(), "not run") {
		t.Errorf("the fence script ran through the runtime: %v", err)
	}
	if n, _ := rc.Do(ctx, rc.B().Dbsize().Build()).AsInt64(); n != int64(len(mine)) {
		t.Errorf("%d keys written; want the %d scratch keys", n, len(mine))
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := rc.Do(ctx, rc.B().Dbsize().Build()).AsInt64(); n != 0 {
		t.Errorf("%d keys left after Close", n)
	}
}

// TestScratchKeysCoverTheQueue: the keys Close deletes are every per-queue
// key type (every key QueueKeys.Key knows) and the migration record.
func TestScratchKeysCoverTheQueue(t *testing.T) {
	k, _ := wire.NewQueueKeys(ScratchPrefix + "x")
	keys := scratchKeys(k)
	for _, s := range wire.Scripts() {
		for _, typ := range s.KeyTypes {
			if key, ok := k.Key(typ); ok && !strings.Contains(strings.Join(keys, " "), key) {
				t.Errorf("%s (%s) is not a scratch key", key, typ)
			}
		}
	}
	for _, key := range []string{k.Pending, k.Active, k.Schedule, k.Dead, k.Wake} {
		found := false
		for _, s := range keys {
			found = found || s == key
		}
		if !found {
			t.Errorf("%s is not a scratch key: %v", key, keys)
		}
	}
	if m, _ := wire.KeyMigration(k.Queue()); keys[len(keys)-1] != m {
		t.Errorf("the migration record %s is not a scratch key: %v", m, keys)
	}
}

// TestRefusedScratchQueue: a scratch queue one of whose keys exists is not
// used; open takes another.
func TestRefusedScratchQueue(t *testing.T) {
	c, rc, ctx := observed(t)
	g, _ := wire.NewGenerator(9)
	p := &prober{c: c, gen: g, readOnly: map[string]bool{}}
	// The next id the generator mints names the first candidate; plant a
	// key of each candidate of the next few milliseconds.
	next, _ := g.Mint(WorkKind)
	g, _ = wire.NewGenerator(9)
	p.gen = g
	k, _ := wire.NewQueueKeys(ScratchPrefix + strings.ToLower(next.String()))
	if err := rc.Do(ctx, rc.B().Set().Key(k.Dead).Value("someone's").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	rt, err := p.open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := rt.(*probeRuntime).keys.Queue(); got == k.Queue() {
		t.Fatalf("open took %s, whose dead set exists", got)
	}
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := rc.Do(ctx, rc.B().Get().Key(k.Dead).Build()).ToString(); v != "someone's" {
		t.Errorf("the planted key became %q", v)
	}
}

// TestCloseRemovesWhatAFailedProbeLeft: a probe that stops while holding
// its locks and with a job in its queue leaves nothing once closed; a lock
// field that was there before the probe is never removed.
func TestCloseRemovesWhatAFailedProbeLeft(t *testing.T) {
	c, rc, ctx := observed(t)
	r := openRuntime(t, c, ctx)
	job, _ := r.Lookup("job")
	q := r.keys.Queue()
	for _, f := range queueLocks(q) {
		res := r.RunScript(ctx, wire.ScriptLock.Name, map[string]string{wire.ScriptLock.Argv[0]: f, wire.ScriptLock.Argv[1]: job, wire.ScriptLock.Argv[2]: "60000"})
		if n, err := res.AsInt64(); err != nil || n <= 0 {
			t.Fatalf("taking %s: %v %v", f, n, err)
		}
	}
	if n, err := r.RunScript(ctx, wire.ScriptEnqueue.Name, map[string]string{wire.ScriptEnqueue.Argv[0]: job, wire.ScriptEnqueue.Argv[1]: "x"}).AsInt64(); err != nil || n != wire.EnqueueEnqueued {
		t.Fatalf("enqueue: %v %v", n, err)
	}
	if n, _ := rc.Do(ctx, rc.B().Dbsize().Build()).AsInt64(); n < 3 {
		t.Fatalf("only %d keys written", n)
	}
	// A lock field of the same hash that was there before stays.
	other := wire.LockMaintenance("someone-else")
	if err := rc.Do(ctx, rc.B().Hset().Key(wire.KeyLocks).FieldValue().FieldValue(other, "someone 1").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	keys, _ := rc.Do(ctx, rc.B().Keys().Pattern("*").Build()).AsStrSlice()
	if len(keys) != 1 || keys[0] != wire.KeyLocks {
		t.Fatalf("left behind: %v", keys)
	}
	fields, _ := rc.Do(ctx, rc.B().Hkeys().Key(wire.KeyLocks).Build()).AsStrSlice()
	if len(fields) != 1 || fields[0] != other {
		t.Fatalf("lock fields after Close: %v; want only %s", fields, other)
	}

	// A lock field naming the scratch queue that was there before the
	// probe is kept too.
	r = openRuntime(t, c, ctx)
	held := wire.LockProbe(r.keys.Queue())
	if err := rc.Do(ctx, rc.B().Hset().Key(wire.KeyLocks).FieldValue().FieldValue(held, "someone 1").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	r.held[held] = true // as open would have found it, had it been there
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := rc.Do(ctx, rc.B().Hexists().Key(wire.KeyLocks).Field(held).Build()).AsInt64(); n != 1 {
		t.Error("Close removed a lock field that was there before the probe")
	}
}

// TestFenceChecksOfAMinor: for a version above major.0.0 the fifth check
// plants major.0.0 and sees it raised; all eight pass. The fence script is
// the same for every version of the major: its ARGV carry the version.
func TestFenceChecksOfAMinor(t *testing.T) {
	_, rc, ctx := observed(t)
	spec := fenceSpec{version: [3]int{wire.VersionMajor, wire.VersionMinor + 1, 0}, digest: wire.BundleDigest}
	tr, err := spec.run(ctx, rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + tr.String())
	low := recordOf([3]int{wire.VersionMajor, 0, 0})
	if !tr.OK() || len(tr.Results) != 8 || !strings.Contains(tr.Results[4].Check, low+") is raised") {
		t.Fatalf("fence checks of %s:\n%s", spec.semver(), tr)
	}
	if n, _ := rc.Do(ctx, rc.B().Dbsize().Build()).AsInt64(); n != 0 {
		t.Errorf("%d keys left", n)
	}
}

// TestFenceChecksOfAMajorZero: for a major.0.0 version nothing of the
// major is lower, so the fifth check plants a pre-release of it and sees
// it refused and left as found; all eight pass.
func TestFenceChecksOfAMajorZero(t *testing.T) {
	_, rc, ctx := observed(t)
	spec := fenceSpec{version: [3]int{wire.VersionMajor, 0, 0}, digest: wire.BundleDigest}
	tr, err := spec.run(ctx, rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + tr.String())
	if !tr.OK() || len(tr.Results) != 8 || !strings.Contains(tr.Results[4].Check, "pre-release") {
		t.Fatalf("fence checks of %s:\n%s", spec.semver(), tr)
	}
	if n, _ := rc.Do(ctx, rc.B().Dbsize().Build()).AsInt64(); n != 0 {
		t.Errorf("%d keys left", n)
	}
}

// TestFenceChecksNeedAnEmptyDatabase: a database holding a key is refused
// before anything runs, and the key is left as it was.
func TestFenceChecksNeedAnEmptyDatabase(t *testing.T) {
	_, rc, ctx := observed(t)
	if err := rc.Do(ctx, rc.B().Hset().Key(wire.KeyBundle).FieldValue().FieldValue(Version, "x").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	tr, err := RunFenceChecks(ctx, rc)
	if !errors.Is(err, ErrFenceDBNotEmpty) || tr != nil {
		t.Fatalf("a non-empty database: %v, %v", tr, err)
	}
	if m, _ := rc.Do(ctx, rc.B().Hgetall().Key(wire.KeyBundle).Build()).AsStrMap(); len(m) != 1 || m[Version] != "x" {
		t.Errorf("the refused database changed: %v", m)
	}
	if n, _ := rc.Do(ctx, rc.B().Exists().Key(wire.KeyVersion).Build()).AsInt64(); n != 0 {
		t.Error("the refused run wrote the version record")
	}
}
