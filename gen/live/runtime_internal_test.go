package live

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/sdk/go/probe"
	"github.com/echomq/echomq/sdk/go/redistest"
)

func setup(t *testing.T) (*machine, rueidis.Client, context.Context) {
	t.Helper()
	p, err := model.Load("../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m, err := newMachine(p)
	if err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t)
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return m, rc, ctx
}

// TestRuntimeNeverWritesTheFence: a command that would write a key of the
// fence, or any key outside the scratch queue, is not sent; reads are, and
// so are writes of the scratch queue's own keys; the fence script is not
// run at all.
func TestRuntimeNeverWritesTheFence(t *testing.T) {
	m, rc, ctx := setup(t)
	r, err := m.open(ctx, rc)
	if err != nil {
		t.Fatal(err)
	}
	f := m.fence
	for _, cmd := range [][]string{
		{"SET", f.VersionKey, "x"}, {"DEL", f.BundleKey}, {"HSET", f.BundleKey, f.Semver, "x"}, {"GETDEL", f.VersionKey},
		{"SET", "app:data", "x"}, {"FLUSHALL"}, {"FLUSHDB"}, {"EVAL", "return 1", "1", f.VersionKey}, {"NOSUCHCOMMAND", "x"},
	} {
		if err := r.Do(ctx, cmd).Error(); err == nil || !strings.Contains(err.Error(), "not sent") {
			t.Errorf("%v: %v; want it not sent", cmd, err)
		}
	}
	if err := r.Do(ctx, []string{"GET", f.VersionKey}).Error(); !rueidis.IsRedisNil(err) {
		t.Errorf("GET of the record: %v; want nil", err)
	}
	job, _ := r.Lookup("job")
	mine := []string{r.m.rowKey(r.queue, job)}
	for _, typ := range m.p.KeyTypes {
		if k, ok := m.queueKey(r.queue, typ.Name); ok {
			mine = append(mine, k)
		}
	}
	for _, k := range mine {
		if err := r.Do(ctx, []string{"SET", k, "x"}).Error(); err != nil {
			t.Errorf("SET of the scratch key %s: %v", k, err)
		}
	}
	args := map[string]string{probe.VarVersion: f.Record, probe.VarSemver: f.Semver, probe.VarBundle: f.Digest}
	if err := r.RunScript(ctx, f.Script, args).Error(); err == nil || !strings.Contains(err.Error(), "not run") {
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

// TestCloseRemovesWhatAFailedProbeLeft: a probe that stops while holding
// its lock and with jobs in its queue leaves nothing once closed; a lock
// field that was there before the probe is never removed.
func TestCloseRemovesWhatAFailedProbeLeft(t *testing.T) {
	m, rc, ctx := setup(t)
	r, err := m.open(ctx, rc)
	if err != nil {
		t.Fatal(err)
	}
	job, _ := r.Lookup("job")
	var lockScript, enqueue string
	var lock fieldRef
	for _, f := range m.queueFields(r.queue) {
		if strings.Contains(f.field, r.queue) {
			lock = f
		}
	}
	// The scripts are found by their shape, not by name: the one taking
	// the lock hash alone with a ttl, and the one that admits a row.
	for _, s := range m.p.Scripts {
		if len(s.Keys) == 1 && s.Keys[0].Type == slotReserve && len(s.Argv) == 3 && lockScript == "" {
			lockScript = s.Name
		}
		for _, tr := range s.Transitions {
			if tr.From == model.None && len(s.Argv) == 2 {
				enqueue = s.Name
			}
		}
	}
	// Take every queue-naming field of the probe's queue, then admit a job.
	for _, f := range m.queueFields(r.queue) {
		name := strings.TrimSuffix(f.field, r.queue)
		var argName [3]string
		s, _ := m.scripts[lockScript]
		for i, a := range s.Argv {
			argName[i] = a.Name
		}
		res := r.RunScript(ctx, lockScript, map[string]string{argName[0]: name + r.queue, argName[1]: job, argName[2]: "60000"})
		if n, err := res.AsInt64(); err != nil || n <= 0 {
			t.Fatalf("taking %s: %v %v", f.field, n, err)
		}
	}
	s := m.scripts[enqueue]
	if n, err := r.RunScript(ctx, enqueue, map[string]string{s.Argv[0].Name: job, s.Argv[1].Name: "x"}).AsInt64(); err != nil || n != 1 {
		t.Fatalf("enqueue: %v %v", n, err)
	}
	if n, _ := rc.Do(ctx, rc.B().Dbsize().Build()).AsInt64(); n < 3 {
		t.Fatalf("only %d keys written", n)
	}
	// A lock field of the same hash that was there before stays.
	other := "emqtest-" + strings.ToLower(job)
	if err := rc.Do(ctx, rc.B().Hset().Key(lock.key).FieldValue().FieldValue(other, "someone 1").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	keys, _ := rc.Do(ctx, rc.B().Keys().Pattern("*").Build()).AsStrSlice()
	if len(keys) != 1 || keys[0] != lock.key {
		t.Fatalf("left behind: %v", keys)
	}
	fields, _ := rc.Do(ctx, rc.B().Hkeys().Key(lock.key).Build()).AsStrSlice()
	if len(fields) != 1 || fields[0] != other {
		t.Fatalf("lock fields after Close: %v; want only %s", fields, other)
	}
}

// TestMinterIsUniqueAndParses: minted ids parse under the canon, carry the
// kind, and never repeat even past the sequence's end in one millisecond.
func TestMinterIsUniqueAndParses(t *testing.T) {
	p, err := model.Load("../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	mt, err := newMinter(p.IDs)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	prev := ""
	kind := p.WorkKind().Name
	for i := 0; i < 3*int(mt.maxSeq+1); i++ {
		id := mt.next(kind)
		d, err := p.IDs.ParseID(id)
		if err != nil || d.Kind != kind || int64(mt.node) != d.Node {
			t.Fatalf("%s: %v %+v", id, err, d)
		}
		if seen[id] || id <= prev {
			t.Fatalf("%s repeats or goes back after %s", id, prev)
		}
		seen[id], prev = true, id
	}
}
