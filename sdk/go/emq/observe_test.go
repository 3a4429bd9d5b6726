package emq_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

func observe(t *testing.T, srv *redistest.Server) *emq.Client {
	t.Helper()
	c, err := emq.Observe(ctxT(t), options(srv))
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// recordAt is the version record of major.minor.patch, built from
// VersionRecord by replacing its version.
func recordAt(major, minor, patch int) string {
	return strings.TrimSuffix(wire.VersionRecord, emq.Version) + strconv.Itoa(major) + "." + strconv.Itoa(minor) + "." + strconv.Itoa(patch)
}

// TestJudgeVersionRecord: the verdict on every kind of record, and
// CheckVersionRecord agrees with it (admitted exactly when current or
// ahead, ahead exactly when ahead).
func TestJudgeVersionRecord(t *testing.T) {
	M, m, p := wire.VersionMajor, wire.VersionMinor, wire.VersionPatch
	prefix := strings.TrimSuffix(wire.VersionRecord, emq.Version)
	cases := map[string]emq.Verdict{
		wire.VersionRecord:           emq.VersionCurrent,
		"":                           emq.VersionForeign,
		"garbage":                    emq.VersionForeign,
		wire.VersionRecord + " ":     emq.VersionForeign,
		" " + wire.VersionRecord:     emq.VersionForeign,
		wire.VersionRecord + "-rc.1": emq.VersionForeign,
		prefix + strconv.Itoa(M) + "." + strconv.Itoa(m): emq.VersionForeign,
		recordAt(M, m+1, 0): emq.VersionAhead,
		recordAt(M, m, p+1): emq.VersionAhead,
		recordAt(M+1, 0, 0): emq.VersionForeign,
		recordAt(M-1, 9, 0): emq.VersionForeign,
		prefix + "0" + strconv.Itoa(M) + "." + strconv.Itoa(m) + "." + strconv.Itoa(p): emq.VersionForeign,
		"other:" + emq.Version: emq.VersionForeign,
		// Canonical but longer than an int: a higher minor, as the fence
		// script (and the Python and TypeScript SDKs) compare it (2.2.1).
		prefix + strconv.Itoa(M) + ".99999999999999999999.0":                      emq.VersionAhead,
		prefix + "99999999999999999999." + strconv.Itoa(m) + ".0":                 emq.VersionForeign,
		prefix + strconv.Itoa(M) + "." + strconv.Itoa(m) + ".0" + strconv.Itoa(p): emq.VersionForeign,
		prefix + strconv.Itoa(M) + ".+" + strconv.Itoa(m) + "." + strconv.Itoa(p): emq.VersionForeign,
		prefix + strconv.Itoa(M) + ".-1.0":                                        emq.VersionForeign,
	}
	if m > 0 {
		cases[recordAt(M, m-1, 9)] = emq.VersionBehind
		cases[recordAt(M, 0, 0)] = emq.VersionBehind
	}
	if p > 0 {
		cases[recordAt(M, m, p-1)] = emq.VersionBehind
	}
	for r, want := range cases {
		got := emq.JudgeVersionRecord(r)
		if got != want {
			t.Errorf("JudgeVersionRecord(%q) = %s; want %s", r, got, want)
		}
		ahead, err := emq.CheckVersionRecord(r)
		if got.Admitted() != (err == nil) || (got == emq.VersionAhead) != (err == nil && ahead) {
			t.Errorf("CheckVersionRecord(%q) = %v, %v; the verdict is %s", r, ahead, err, got)
		}
		var fe *emq.FenceError
		if err != nil && (!errors.As(err, &fe) || fe.Found != r) {
			t.Errorf("CheckVersionRecord(%q) = %v; want a *FenceError", r, err)
		}
	}
}

// writes are the writes of a Queue, each of which an observing client
// must refuse on a keyspace it may not write.
func writes(q *emq.Queue, id emq.ID) map[string]func(context.Context) error {
	return map[string]func(context.Context) error{
		"Enqueue": func(ctx context.Context) error { _, err := q.Enqueue(ctx, id, []byte("x")); return err },
		"Push":    func(ctx context.Context) error { _, err := q.Push(ctx, id, []byte("x")); return err },
		"Claim":   func(ctx context.Context) error { _, _, err := q.Claim(ctx, time.Minute); return err },
		"Revive":  func(ctx context.Context) error { _, err := q.Revive(ctx, id); return err },
		"ReviveAll": func(ctx context.Context) error {
			_, _, err := q.ReviveAll(ctx, []emq.ID{id})
			return err
		},
		"Purge":   func(ctx context.Context) error { _, err := q.Purge(ctx, id); return err },
		"Ring":    func(ctx context.Context) error { _, err := q.Ring(ctx); return err },
		"Promote": func(ctx context.Context) error { _, err := q.Promote(ctx, 10); return err },
		"Reap":    func(ctx context.Context) error { _, err := q.Reap(ctx, 10, 0); return err },
	}
}

// snapshotDB is every key of the server's database 0 with its DUMP.
func snapshotDB(t *testing.T, srv *redistest.Server) map[string]string {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	ctx := ctxT(t)
	keys, err := rc.Do(ctx, rc.B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		v, err := rc.Do(ctx, rc.B().Dump().Key(k).Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	return out
}

func sameDB(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestObserveRefusesToWriteAForeignKeyspace: on a keyspace without a
// record, with a record of another major, a value that is not a record,
// or a key of another type, an observing client reads, refuses every
// write with a *KeyspaceError before anything is sent, leases no node,
// never runs the fence script, and leaves the keyspace byte for byte.
func TestObserveRefusesToWriteAForeignKeyspace(t *testing.T) {
	for name, plant := range map[string][]string{
		"absent":        nil,
		"another major": {"SET", wire.KeyVersion, recordAt(wire.VersionMajor+1, 0, 0)},
		"not a record":  {"SET", wire.KeyVersion, "garbage"},
		"another type":  {"HSET", wire.KeyVersion, "record", wire.VersionRecord},
	} {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			srv := redistest.Start(t)
			if plant != nil {
				if _, err := srv.Do(plant...); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := srv.Do("SET", "app:data", "precious"); err != nil {
				t.Fatal(err)
			}
			before := snapshotDB(t, srv)
			c := observe(t, srv)
			v := c.Keyspace()
			want := emq.VersionForeign
			if plant == nil {
				want = emq.VersionAbsent
			}
			if v.Verdict != want || !c.Observing() {
				t.Fatalf("Keyspace() = %+v; want %s", v, want)
			}
			if _, err := c.Mint(emq.WorkKind); !errors.Is(err, emq.ErrNoNode) {
				t.Errorf("Mint on an observing client = %v; want ErrNoNode", err)
			}
			q := queue(t, c, "orders")
			ctx := ctxT(t)
			if _, err := q.Sizes(ctx); err != nil {
				t.Errorf("Sizes: %v", err)
			}
			if _, _, err := q.Page(ctx, emq.SetDead, "", 10); err != nil {
				t.Errorf("Page: %v", err)
			}
			id, _ := wire.NewGenerator(1)
			jid, _ := id.Mint(emq.WorkKind)
			if _, _, err := q.Get(ctx, jid); err != nil {
				t.Errorf("Get: %v", err)
			}
			if _, err := q.Rung(ctx); err != nil {
				t.Errorf("Rung: %v", err)
			}
			if _, err := srv.Do("CONFIG", "RESETSTAT"); err != nil {
				t.Fatal(err)
			}
			for op, f := range writes(q, jid) {
				err := f(ctx)
				var ke *emq.KeyspaceError
				if !errors.Is(err, emq.ErrNotWritable) || !errors.As(err, &ke) || ke.Verdict != want {
					t.Errorf("%s = %v; want a *KeyspaceError (%s)", op, err, want)
				}
			}
			info, _ := srv.Do("INFO", "commandstats")
			for _, l := range strings.Split(info, "\n") {
				if strings.HasPrefix(l, "cmdstat_") && !strings.HasPrefix(l, "cmdstat_info:") && !strings.HasPrefix(l, "cmdstat_config|resetstat:") {
					t.Errorf("a refused write sent %s", l)
				}
			}
			c.Close()
			if after := snapshotDB(t, srv); !sameDB(before, after) {
				t.Errorf("the keyspace changed: %v -> %v", before, after)
			}
			if got, _ := srv.Do("SCRIPT", "EXISTS", wire.ScriptFence.SHA1); got != "0" {
				t.Error("the fence script ran")
			}
		})
	}
}

// TestObserveWritesAKeyspaceOfItsMajor: on a keyspace fenced at this
// version, ahead of it or behind it, an observing client revives, rings
// and purges, and never raises or rewrites the record.
func TestObserveWritesAKeyspaceOfItsMajor(t *testing.T) {
	recs := map[string]string{"current": wire.VersionRecord, "ahead": recordAt(wire.VersionMajor, wire.VersionMinor+1, 0)}
	if wire.VersionMinor > 0 {
		recs["behind"] = recordAt(wire.VersionMajor, 0, 0)
	}
	for name, rec := range recs {
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t)
			owner := connect(t, srv)
			oq := queue(t, owner, "orders")
			ctx := ctxT(t)
			id := mint(t, owner, emq.WorkKind)
			if _, err := oq.Push(ctx, id, []byte("x")); err != nil {
				t.Fatal(err)
			}
			j, _, _ := oq.Claim(ctx, time.Minute)
			if err := oq.Bury(ctx, j.ID, j.Token); err != nil {
				t.Fatal(err)
			}
			owner.Close()
			if _, err := srv.Do("SET", wire.KeyVersion, rec); err != nil {
				t.Fatal(err)
			}
			if _, err := srv.Do("DEL", oq.Keys().Wake); err != nil {
				t.Fatal(err)
			}
			c := observe(t, srv)
			if v := c.Keyspace(); v.Record != rec || v.Verdict.String() != name || v.Writable() != nil {
				t.Fatalf("Keyspace() = %+v (writable: %v); want %s", v, v.Writable(), name)
			}
			q := queue(t, c, "orders")
			revived, rung, err := q.ReviveAll(ctx, []emq.ID{id, id})
			if err != nil || len(revived) != 2 || !revived[0] || revived[1] || !rung {
				t.Fatalf("ReviveAll(dead, again) = %v, %v, %v; want [true false], rung", revived, rung, err)
			}
			if r, err := q.Rung(ctx); err != nil || !r {
				t.Errorf("Rung after the revive = %v, %v", r, err)
			}
			if again, err := q.Ring(ctx); err != nil || again {
				t.Errorf("Ring with the marker there = %v, %v; want false", again, err)
			}
			info, ok, err := q.Get(ctx, id)
			if err != nil || !ok || info.State != emq.StatePending || info.Attempts != 1 || len(info.In) != 1 || info.In[0] != emq.SetPending {
				t.Errorf("the revived job = %+v, %v, %v", info, ok, err)
			}
			if got, _ := srv.Do("GET", wire.KeyVersion); got != rec {
				t.Errorf("the record became %q", got)
			}
		})
	}
}

// TestClaimKeyspace: a fresh keyspace is claimed once, exactly as Connect
// claims it; a keyspace with any record is not touched.
func TestClaimKeyspace(t *testing.T) {
	srv := redistest.Start(t)
	c := observe(t, srv)
	ctx := ctxT(t)
	claimed, err := c.ClaimKeyspace(ctx)
	if err != nil || !claimed {
		t.Fatalf("ClaimKeyspace on a fresh keyspace = %v, %v", claimed, err)
	}
	if v := c.Keyspace(); v.Record != wire.VersionRecord || v.Verdict != emq.VersionCurrent {
		t.Errorf("Keyspace after the claim = %+v", v)
	}
	if d, _ := srv.Do("HGET", wire.KeyBundle, emq.Version); d != wire.BundleDigest {
		t.Errorf("the recorded digest is %q", d)
	}
	before := snapshotDB(t, srv)
	if claimed, err := c.ClaimKeyspace(ctx); err != nil || claimed {
		t.Errorf("a second ClaimKeyspace = %v, %v; want nothing done", claimed, err)
	}
	if _, err := srv.Do("SET", wire.KeyVersion, recordAt(wire.VersionMajor+1, 0, 0)); err != nil {
		t.Fatal(err)
	}
	before = snapshotDB(t, srv)
	if claimed, err := c.ClaimKeyspace(ctx); err != nil || claimed || c.Keyspace().Verdict != emq.VersionForeign {
		t.Errorf("ClaimKeyspace on a foreign keyspace = %v, %v (%+v)", claimed, err, c.Keyspace())
	}
	if after := snapshotDB(t, srv); !sameDB(before, after) {
		t.Error("ClaimKeyspace changed a foreign keyspace")
	}
}

// scratchLeft lists what the probes left of their scratch queues: keys and
// lock fields naming ScratchPrefix.
func scratchLeft(t *testing.T, srv *redistest.Server) []string {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	ctx := ctxT(t)
	left, err := rc.Do(ctx, rc.B().Keys().Pattern("*"+emq.ScratchPrefix+"*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	locks, _ := rc.Do(ctx, rc.B().Hkeys().Key(wire.KeyLocks).Build()).AsStrSlice()
	for _, l := range locks {
		if strings.Contains(l, emq.ScratchPrefix) {
			left = append(left, wire.KeyLocks+" "+l)
		}
	}
	return left
}

// TestObserveRunProbes: an observing client that claimed a fresh keyspace
// passes every probe and leaves nothing of its scratch queues behind; the
// keyspace then holds exactly the version record and the bundle identity.
func TestObserveRunProbes(t *testing.T) {
	srv := redistest.Start(t)
	c := observe(t, srv)
	if _, err := c.ClaimKeyspace(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	tr, err := c.RunProbes(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + tr.String())
	if !tr.OK() {
		t.Errorf("transcript:\n%s", tr)
	}
	if left := scratchLeft(t, srv); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	if snap := snapshotDB(t, srv); len(snap) != 2 {
		t.Errorf("keys after the run: %v; want only %s and %s", snap, wire.KeyVersion, wire.KeyBundle)
	}
}

// TestRunProbesOnAnUnfencedKeyspace: on a fresh keyspace nobody claimed,
// and on one behind this version, the checks that touch the fence fail
// saying why (ErrNotFenced), the others pass, the record is as it was,
// and nothing of the scratch queues remains.
func TestRunProbesOnAnUnfencedKeyspace(t *testing.T) {
	cases := map[string]string{"absent": ""}
	if wire.VersionMinor > 0 {
		cases["behind"] = recordAt(wire.VersionMajor, 0, 0)
	} else if wire.VersionPatch > 0 {
		cases["behind"] = recordAt(wire.VersionMajor, wire.VersionMinor, 0)
	}
	cases["foreign"] = recordAt(wire.VersionMajor+1, 0, 0)
	for name, rec := range cases {
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t)
			if rec != "" {
				if _, err := srv.Do("SET", wire.KeyVersion, rec); err != nil {
					t.Fatal(err)
				}
			}
			c := observe(t, srv)
			tr, err := c.RunProbes(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			says := map[string]string{"absent": "no version record", "behind": "behind", "foreign": "foreign keyspace"}[name]
			if tr.OK() || !strings.Contains(tr.String(), says) {
				t.Fatalf("transcript on a keyspace %s:\n%s", name, tr)
			}
			fenced := map[string]bool{"reserve member " + wire.KeyVersion: true, "reserve member " + wire.KeyBundle: true}
			for _, r := range tr.Results {
				var nf *emq.NotFencedError
				switch {
				case r.Err != nil && !fenced[r.Target]:
					t.Errorf("unexpected failure %s: %s: %v", r.Target, r.Check, r.Err)
				case r.Err != nil && (!errors.Is(r.Err, emq.ErrNotFenced) || !errors.As(r.Err, &nf) || nf.Verdict.String() != name):
					t.Errorf("%s: %s: %v; want it explained by the %s keyspace", r.Target, r.Check, r.Err, name)
				}
			}
			got, _ := srv.Do("GET", wire.KeyVersion)
			if rec == "" {
				got, _ = srv.Do("EXISTS", wire.KeyVersion)
				rec = "0"
			}
			if got != rec {
				t.Errorf("the record became %q; want %q", got, rec)
			}
			if left := scratchLeft(t, srv); len(left) != 0 {
				t.Errorf("left behind: %v", left)
			}
			if gotScript, _ := srv.Do("SCRIPT", "EXISTS", wire.ScriptFence.SHA1); gotScript != "0" {
				t.Error("the fence script ran")
			}
		})
	}
}

// TestFenceChecksAndProbesOnACluster: RunFenceChecks refuses a cluster
// client before any command (a cluster has no logical databases to run
// in apart); the probes themselves run on a cluster, every script being
// single-slot by grammar.
func TestFenceChecksAndProbesOnACluster(t *testing.T) {
	srv := redistest.Start(t, redistest.WithArgs("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"))
	if _, err := srv.Do("CLUSTER", "ADDSLOTSRANGE", "0", "16383"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if info, _ := srv.Do("CLUSTER", "INFO"); strings.Contains(info, "cluster_state:ok") {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the cluster did not come up:\n%s", info)
		}
	}
	c := observe(t, srv)
	if c.Redis().Mode() != rueidis.ClientModeCluster {
		t.Fatalf("mode %v; want a cluster client", c.Redis().Mode())
	}
	if tr, err := emq.RunFenceChecks(ctxT(t), c.Redis()); !errors.Is(err, emq.ErrFenceDBCluster) || tr != nil {
		t.Fatalf("RunFenceChecks on a cluster = %v, %v; want ErrFenceDBCluster", tr, err)
	}
	if n, _ := srv.Do("DBSIZE"); n != "0" {
		t.Fatalf("the refused fence checks wrote %s keys", n)
	}
	if _, err := c.ClaimKeyspace(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if tr, err := c.RunProbes(ctxT(t)); err != nil || !tr.OK() {
		t.Fatalf("probes on a cluster: %v\n%s", err, tr)
	}
}

// TestRunFenceChecks: the eight checks pass in an empty database, which is
// empty again afterwards.
func TestRunFenceChecks(t *testing.T) {
	srv := redistest.Start(t)
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true, SelectDB: 4, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr, err := emq.RunFenceChecks(ctxT(t), rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + tr.String())
	if !tr.OK() || len(tr.Results) != 8 || !strings.HasSuffix(tr.String(), "PASS 8/8\n") {
		t.Fatalf("fence checks:\n%s", tr)
	}
	for _, r := range tr.Results {
		if r.Target != emq.FenceTarget {
			t.Errorf("target %q; want %q", r.Target, emq.FenceTarget)
		}
	}
	if n, _ := rc.Do(ctxT(t), rc.B().Dbsize().Build()).AsInt64(); n != 0 {
		t.Errorf("%d keys left", n)
	}
	if n, _ := srv.Do("DBSIZE"); n != "0" {
		t.Errorf("database 0 holds %s keys", n)
	}
}

// TestPageEntriesMatchPage: PageEntries pages exactly as Page does (the
// same ids and cursors, for every page size), each entry with its score
// and its row as Get reads them; a cursor Page cannot have returned is
// refused with ErrArgument before anything is sent, by the documented
// rule (an id for a set whose members score zero, "score/id" otherwise).
func TestPageEntriesMatchPage(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "pages")
	ctx := ctxT(t)
	var jobs []emq.NewJob
	for i := 0; i < 12; i++ {
		jobs = append(jobs, emq.NewJob{ID: mint(t, c, emq.WorkKind), Payload: []byte(strconv.Itoa(i))})
	}
	if _, err := q.PushBatch(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, _, err := q.Claim(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	ob := observe(t, srv)
	oq := queue(t, ob, "pages")
	for _, s := range []emq.Set{emq.SetPending, emq.SetActive} {
		for _, n := range []int{1, 2, 3, 7, 20} {
			var cursor emq.Cursor
			seen := 0
			for pages := 0; ; pages++ {
				ids, next, err := oq.Page(ctx, s, cursor, n)
				if err != nil {
					t.Fatal(err)
				}
				entries, enext, err := oq.PageEntries(ctx, s, cursor, n)
				if err != nil || enext != next || len(entries) != len(ids) {
					t.Fatalf("%s page of %d after %q: PageEntries %d entries next %q (%v); Page %v next %q", s, n, cursor, len(entries), enext, err, ids, next)
				}
				for i, e := range entries {
					info, ok, err := oq.Get(ctx, e.ID)
					if e.ID != ids[i] || err != nil || !ok || !e.Exists || e.State != info.State || e.Attempts != info.Attempts || !e.At.Equal(info.At) {
						t.Errorf("entry %+v; Page says %s, Get %+v %v %v", e, ids[i], info, ok, err)
					}
				}
				seen += len(ids)
				if next == "" || pages > 50 {
					break
				}
				cursor = next
			}
			if size, _ := oq.Size(ctx, s); int64(seen) != size {
				t.Errorf("%s in pages of %d: %d ids; the set holds %d", s, n, seen, size)
			}
		}
	}
	id := jobs[0].ID.String()
	if _, err := srv.Do("CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
	for _, s := range wire.Sets() {
		for _, cur := range []string{id, "1/" + id, "-5/" + id, "x/" + id, "1/" + id + "x", "1", "garbage", "1.5/" + id} {
			want := false
			if s.Lex() {
				_, err := emq.ParseID(cur)
				want = err == nil
			} else if sc, rest, ok := strings.Cut(cur, "/"); ok {
				_, err1 := strconv.ParseInt(sc, 10, 64)
				_, err2 := emq.ParseID(rest)
				want = err1 == nil && err2 == nil
			}
			_, _, err := oq.Page(ctx, s, emq.Cursor(cur), 1)
			if (err == nil) != want || (err != nil && !errors.Is(err, emq.ErrArgument)) {
				t.Errorf("Page(%s, cursor %q) = %v; want accepted %v", s, cur, err, want)
			}
			if !want {
				if _, _, err := oq.PageEntries(ctx, s, emq.Cursor(cur), 1); !errors.Is(err, emq.ErrArgument) {
					t.Errorf("PageEntries(%s, cursor %q) = %v; want ErrArgument", s, cur, err)
				}
			}
		}
	}
	if _, _, err := oq.Page(ctx, emq.Set("nope"), "", 1); !errors.Is(err, emq.ErrArgument) {
		t.Errorf("Page of an unknown set = %v", err)
	}
	if _, _, err := oq.PageEntries(ctx, emq.SetDead, "", 0); !errors.Is(err, emq.ErrArgument) {
		t.Errorf("PageEntries of 0 = %v", err)
	}
	stats, _ := srv.Do("INFO", "commandstats")
	// The accepted cursors sent ZRANGE; nothing else was sent but INFO and
	// the reset.
	for _, l := range strings.Split(stats, "\n") {
		if strings.HasPrefix(l, "cmdstat_") && !strings.HasPrefix(l, "cmdstat_zrange:") && !strings.HasPrefix(l, "cmdstat_hmget:") && !strings.HasPrefix(l, "cmdstat_info:") && !strings.HasPrefix(l, "cmdstat_config|resetstat:") {
			t.Errorf("the cursor checks sent %s", l)
		}
	}
	now, err := ob.ServerTime(ctx)
	if err != nil || time.Since(now).Abs() > time.Minute {
		t.Errorf("ServerTime = %v, %v", now, err)
	}
}

// ExampleObserve reads a queue of a keyspace the program does not own,
// without fencing it, and revives a dead job only when the keyspace speaks
// this major.
func ExampleObserve() {
	ctx := context.Background()
	c, err := emq.Observe(ctx, emq.Options{Addr: "127.0.0.1:6379"})
	if err != nil {
		return
	}
	defer c.Close()
	q, _ := c.Queue("orders")
	ids, next, _ := q.Page(ctx, emq.SetDead, "", 20) // newest first; pass next for the page after
	_ = next
	if err := c.Keyspace().Writable(); err != nil {
		return // absent or foreign: every write would be refused with a *KeyspaceError
	}
	_, _, _ = q.ReviveAll(ctx, ids)
}

// TestCheckCursor: CheckCursor agrees with Page on every cursor, sends
// nothing, and names the form the set takes.
func TestCheckCursor(t *testing.T) {
	g, _ := wire.NewGenerator(3)
	id, _ := g.Mint(emq.WorkKind)
	for _, s := range wire.Sets() {
		for _, cur := range []string{"", id.String(), "5/" + id.String(), "garbage", "5/x"} {
			err := emq.CheckCursor(s, emq.Cursor(cur))
			lexOK := cur == "" || cur == id.String()
			scoreOK := cur == "" || cur == "5/"+id.String()
			if want := (s.Lex() && lexOK) || (!s.Lex() && scoreOK); (err == nil) != want {
				t.Errorf("CheckCursor(%s, %q) = %v; want accepted %v", s, cur, err, want)
			}
			if err != nil && (!errors.Is(err, emq.ErrArgument) || !strings.Contains(err.Error(), map[bool]string{true: "an id", false: "score/id"}[s.Lex()])) {
				t.Errorf("CheckCursor(%s, %q) = %v", s, cur, err)
			}
		}
	}
	if err := emq.CheckCursor(emq.Set("nope"), ""); !errors.Is(err, emq.ErrArgument) {
		t.Errorf("CheckCursor of an unknown set = %v", err)
	}
}
