package emqcli_test

import (
	"context"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/internal/cli/emqcli"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// probeEnv is what the tests derive from the SDK: the probes, the fence,
// and the keys a probe may touch outside its scratch queue.
type probeEnv struct {
	probes []probeTarget
	checks int      // the number of probe checks
	shared []string // reserve keys a probe may touch outside its scratch queue: the locks, whose fields name a queue
	fenced map[string]bool
}

// probeTarget is one probe's target and number of checks.
type probeTarget struct {
	target string
	steps  int
}

func loadProbeEnv(t *testing.T) probeEnv {
	t.Helper()
	env := probeEnv{shared: []string{wire.KeyLocks}, fenced: map[string]bool{}}
	for _, pr := range wire.Probes() {
		env.probes = append(env.probes, probeTarget{pr.Target, len(pr.Steps)})
		env.checks += len(pr.Steps)
	}
	for _, k := range []string{wire.KeyVersion, wire.KeyBundle} {
		env.fenced["reserve member "+k] = true
	}
	if env.checks == 0 || len(env.fenced) != 2 {
		t.Fatalf("no probes, or the fence's targets are not among them: %+v", env)
	}
	found := 0
	for _, p := range env.probes {
		if env.fenced[p.target] {
			found++
		}
	}
	if found != 2 {
		t.Fatalf("the probes do not name the fence's reserve members: %+v", env.probes)
	}
	return env
}

// recordOf is the version record of major.minor.patch.
func recordOf(major, minor, patch int) string {
	return strings.TrimSuffix(wire.VersionRecord, emq.Version) + strconv.Itoa(major) + "." + strconv.Itoa(minor) + "." + strconv.Itoa(patch)
}

// probe runs emq probe.
func probe(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return run(t, append([]string{"probe"}, args...)...)
}

func ctxP(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func rclient(t *testing.T, addr string, db int) rueidis.Client {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, SelectDB: db, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	return rc
}

// snapshot is every key of one database with its DUMP.
func snapshot(t *testing.T, rc rueidis.Client) map[string]string {
	t.Helper()
	ctx := ctxP(t)
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

// writes records every key written in any database while a test runs,
// through keyspace notifications (the server must run with
// notify-keyspace-events KA).
type writes struct {
	mu     sync.Mutex
	events map[string][]string // key (prefixed @db:) -> events
	synced chan string
	rc     rueidis.Client
}

const syncChannel = "emqtest-sync"

var keyspaceChannel = regexp.MustCompile(`^__keyspace@(\d+)__:(.*)$`)

func watch(t *testing.T, srv *redistest.Server) *writes {
	t.Helper()
	w := &writes{events: map[string][]string{}, synced: make(chan string, 16)}
	sub, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	w.rc = sub
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = sub.Receive(ctx, sub.B().Psubscribe().Pattern("__keyspace@*__:*", syncChannel).Build(), func(m rueidis.PubSubMessage) {
			if m.Channel == syncChannel {
				w.synced <- m.Message
				return
			}
			if g := keyspaceChannel.FindStringSubmatch(m.Channel); g != nil {
				w.mu.Lock()
				w.events["@"+g[1]+":"+g[2]] = append(w.events["@"+g[1]+":"+g[2]], m.Message)
				w.mu.Unlock()
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done; sub.Close() })
	w.sync(t) // subscribed
	w.mu.Lock()
	w.events = map[string][]string{}
	w.mu.Unlock()
	return w
}

// sync waits until every notification sent so far has arrived: the server
// sends them in order on one connection, so a message published now
// arrives after all of them.
func (w *writes) sync(t *testing.T) {
	t.Helper()
	token := strconv.FormatInt(time.Now().UnixNano(), 10)
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		_ = w.rc.Do(context.Background(), w.rc.B().Publish().Channel(syncChannel).Message(token).Build()).Error()
		select {
		case got := <-w.synced:
			if got == token {
				return
			}
		case <-tick.C:
		case <-deadline:
			t.Fatal("keyspace notifications did not arrive")
		}
	}
}

// taken returns every key written so far, as @db:key -> events.
func (w *writes) taken(t *testing.T) map[string][]string {
	t.Helper()
	w.sync(t)
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string][]string{}
	for k, v := range w.events {
		out[k] = v
	}
	return out
}

// checkWrites fails for every key written in db 0 that is neither a key of
// a scratch queue nor allowed.
func checkWrites(t *testing.T, got map[string][]string, allowed ...string) {
	t.Helper()
	ok := map[string]bool{}
	for _, a := range allowed {
		ok["@0:"+a] = true
	}
	scratch := 0
	for k, ev := range got {
		switch {
		case strings.Contains(k, emq.ScratchPrefix):
			scratch++
		case !ok[k]:
			t.Errorf("the probe wrote %s (%v), which is neither a scratch key nor allowed", k, ev)
		}
	}
	if scratch == 0 {
		t.Error("no scratch key was written: are keyspace notifications on?")
	}
}

func notifying(t *testing.T, opts ...redistest.Option) *redistest.Server {
	return redistest.Start(t, append([]redistest.Option{redistest.WithArgs("--notify-keyspace-events", "KA")}, opts...)...)
}

// lines returns the transcript lines of a target, by status.
func lines(out, target string) (ok, fail int) {
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "ok    "+target+": "):
			ok++
		case strings.HasPrefix(l, "FAIL  "+target+": "):
			fail++
		}
	}
	return ok, fail
}

// TestProbeClaimsAFreshServer: with -claim every check passes, every
// reserve member and wire class is a target, the run claimed the version
// record and bundle digest as an SDK client does, and wrote nothing else
// that remains.
func TestProbeClaimsAFreshServer(t *testing.T) {
	env := loadProbeEnv(t)
	srv := notifying(t)
	w := watch(t, srv)
	code, out, errs := probe(t, "-addr", srv.Addr(), "-claim")
	t.Logf("transcript:\n%s%s", out, errs)
	n := strconv.Itoa(env.checks)
	if code != emqcli.ExitOK || !strings.HasSuffix(out, "\nPASS "+n+"/"+n+"\n") {
		t.Fatalf("probe -claim = %d; want every one of %d checks to pass\n%s%s", code, env.checks, out, errs)
	}
	for _, p := range env.probes {
		if ok, _ := lines(out, p.target); ok == 0 || ok != p.steps {
			t.Errorf("%s: %d passing lines; want %d", p.target, ok, p.steps)
		}
	}
	if !env.fenceRan(t, srv) || !strings.Contains(errs, "claimed") {
		t.Errorf("stderr does not report the claim:\n%s", errs)
	}
	checkWrites(t, w.taken(t), append(env.shared, wire.KeyVersion, wire.KeyBundle)...)
	rc := rclient(t, srv.Addr(), 0)
	snap := snapshot(t, rc)
	if len(snap) != 2 {
		t.Errorf("keys after the run: %v; want only the version record and the bundle identity", keysOf(snap))
	}
	ctx := ctxP(t)
	if v, _ := rc.Do(ctx, rc.B().Get().Key(wire.KeyVersion).Build()).ToString(); v != wire.VersionRecord {
		t.Errorf("the claimed record is %q; want %q", v, wire.VersionRecord)
	}
	if d, _ := rc.Do(ctx, rc.B().Hget().Key(wire.KeyBundle).Field(emq.Version).Build()).ToString(); d != wire.BundleDigest {
		t.Errorf("the recorded digest is %q; want %q", d, wire.BundleDigest)
	}

	// A second run on the claimed keyspace does not fence again: it
	// writes only scratch keys and the probe lock, -claim or not.
	w2 := watch(t, srv)
	if code, out, errs := probe(t, "-addr", srv.Addr(), "-claim"); code != emqcli.ExitOK {
		t.Fatalf("second run = %d\n%s%s", code, out, errs)
	}
	checkWrites(t, w2.taken(t), env.shared...)
	if after := snapshot(t, rc); !equal(snap, after) {
		t.Errorf("the second run changed the keyspace: %v -> %v", keysOf(snap), keysOf(after))
	}
}

// fenceRan reports whether the fence script ever ran on the server since
// it started (the prober runs scripts with EVALSHA and loads them with
// EVAL only on NOSCRIPT, so a script that never ran is not cached).
func (env probeEnv) fenceRan(t *testing.T, srv *redistest.Server) bool {
	t.Helper()
	got, err := srv.Do("SCRIPT", "EXISTS", wire.ScriptFence.SHA1)
	if err != nil {
		t.Fatal(err)
	}
	return got != "0"
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestProbeWithoutClaimWritesNothing: a fresh server is not claimed
// without -claim; the version and bundle checks fail saying why, the
// others pass, and the keyspace is empty afterwards.
func TestProbeWithoutClaimWritesNothing(t *testing.T) {
	env := loadProbeEnv(t)
	srv := notifying(t)
	w := watch(t, srv)
	code, out, errs := probe(t, "-addr", srv.Addr())
	if code != emqcli.ExitFindings {
		t.Fatalf("probe on a fresh server without -claim = %d; want %d\n%s%s", code, emqcli.ExitFindings, out, errs)
	}
	checkWrites(t, w.taken(t), env.shared...)
	if env.fenceRan(t, srv) {
		t.Error("the fence script ran without -claim")
	}
	if snap := snapshot(t, rclient(t, srv.Addr(), 0)); len(snap) != 0 {
		t.Errorf("the run left %v", keysOf(snap))
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "FAIL") && !strings.Contains(l, "-claim") {
			t.Errorf("a failed check does not say why: %s", l)
		}
	}
	fails := 0
	for _, p := range env.probes {
		_, fail := lines(out, p.target)
		if (fail > 0) != env.fenced[p.target] {
			t.Errorf("%s: %d failed checks", p.target, fail)
		}
		fails += fail
	}
	if fails == 0 || !strings.Contains(errs, "-claim") {
		t.Errorf("want failed fence checks and a note about -claim:\n%s%s", out, errs)
	}
}

// TestProbeLeavesAForeignKeyspaceAlone: a record of another major, one
// that is not a record, and one of another Redis type are never fenced:
// the version record, the bundle identity and an application's key are
// byte for byte as found, the scratch queues are gone, and the checks of
// the scratch queue and the probe lock still pass.
func TestProbeLeavesAForeignKeyspaceAlone(t *testing.T) {
	env := loadProbeEnv(t)
	srv := notifying(t)
	rc := rclient(t, srv.Addr(), 0)
	ctx := ctxP(t)
	otherMajor := strconv.Itoa(wire.VersionMajor+1) + ".0.0"
	plants := map[string][]string{
		"another major": {"SET", wire.KeyVersion, recordOf(wire.VersionMajor+1, 0, 0)},
		"not a record":  {"SET", wire.KeyVersion, "garbage"},
		"another type":  {"HSET", wire.KeyVersion, "record", wire.VersionRecord},
	}
	for name, plant := range plants {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			for _, cmd := range [][]string{
				{"FLUSHALL"}, {"SCRIPT", "FLUSH"}, plant,
				{"HSET", wire.KeyBundle, otherMajor, "a foreign digest", emq.Version, "a foreign digest too"},
				{"SET", "app:data", "precious"},
			} {
				if err := rc.Do(ctx, rc.B().Arbitrary(cmd...).Build()).Error(); err != nil {
					t.Fatal(err)
				}
			}
			before := snapshot(t, rc)
			w := watch(t, srv)
			code, out, errs := probe(t, "-addr", srv.Addr(), "-claim")
			if code != emqcli.ExitFindings {
				t.Fatalf("probe on a foreign keyspace = %d; want %d\n%s%s", code, emqcli.ExitFindings, out, errs)
			}
			checkWrites(t, w.taken(t), env.shared...)
			if env.fenceRan(t, srv) {
				t.Error("the fence script ran on a foreign keyspace")
			}
			if after := snapshot(t, rc); !equal(before, after) {
				t.Errorf("the keyspace changed: %v -> %v", keysOf(before), keysOf(after))
			}
			for _, p := range env.probes {
				if env.fenced[p.target] {
					continue
				}
				if ok, fail := lines(out, p.target); fail > 0 || ok == 0 {
					t.Errorf("%s: %d passed, %d failed\n%s", p.target, ok, fail, out)
				}
			}
			if !strings.Contains(out, "foreign keyspace") || !strings.Contains(errs, "not fenced") {
				t.Errorf("the transcript does not say the keyspace is foreign:\n%s%s", out, errs)
			}
		})
	}
}

// TestProbeFenceDB: -fence-db prints the fence's eight checks, all passing,
// in a database that is empty again afterwards; the probes' own database
// is untouched by them.
func TestProbeFenceDB(t *testing.T) {
	srv := notifying(t)
	w := watch(t, srv)
	code, out, errs := probe(t, "-addr", srv.Addr(), "-claim", "-fence-db", "3")
	t.Logf("transcript:\n%s%s", out, errs)
	if code != emqcli.ExitOK {
		t.Fatalf("probe -fence-db 3 = %d\n%s%s", code, out, errs)
	}
	ok, fail := lines(out, emq.FenceTarget)
	if ok != 8 || fail != 0 || !strings.HasSuffix(out, "\nPASS 8/8\n") {
		t.Errorf("fence lines: %d ok, %d failed; want 8 ok ending PASS 8/8\n%s", ok, fail, out)
	}
	if snap := snapshot(t, rclient(t, srv.Addr(), 3)); len(snap) != 0 {
		t.Errorf("the fence database holds %v afterwards", keysOf(snap))
	}
	touched := false
	for k := range w.taken(t) {
		touched = touched || strings.HasPrefix(k, "@3:")
	}
	if !touched {
		t.Error("the fence checks wrote nothing in database 3")
	}
}

// TestProbeFenceDBMustBeEmpty: a database holding a key is refused with
// exit 2 before anything runs; nothing is written anywhere.
func TestProbeFenceDBMustBeEmpty(t *testing.T) {
	srv := notifying(t)
	rc3 := rclient(t, srv.Addr(), 3)
	ctx := ctxP(t)
	if err := rc3.Do(ctx, rc3.B().Set().Key("app:data").Value("precious").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, rc3)
	w := watch(t, srv)
	code, out, errs := probe(t, "-addr", srv.Addr(), "-claim", "-fence-db", "3")
	if code != emqcli.ExitUsage || !strings.Contains(errs, "not empty") || out != "" {
		t.Fatalf("probe -fence-db on a non-empty database = %d; want %d and a clear refusal\n%s%s", code, emqcli.ExitUsage, out, errs)
	}
	if got := w.taken(t); len(got) != 0 {
		t.Errorf("a refused run wrote %v", got)
	}
	if after := snapshot(t, rc3); !equal(before, after) {
		t.Error("the refused database changed")
	}
}

// TestProbeACL: an ACL user with the rights the help lists runs every
// check, its password given by flag or by environment; a wrong password is
// a clear connection error.
func TestProbeACL(t *testing.T) {
	srv := redistest.Start(t)
	acl := []string{"ACL", "SETUSER", "prober", "on", ">s3cret", "resetkeys", "~*", "resetchannels", "-@all",
		"+get", "+type", "+exists", "+hget", "+hexists", "+hdel", "+del",
		"+evalsha", "+eval", "+command|info", "+select", "+dbsize", "+dump", "+set", "+hset",
		// what the scripts call
		"+time", "+zadd", "+zpopmin", "+zrem", "+zrange", "+zscore", "+hincrby", "+hsetnx", "+strlen", "+hlen", "+zcard", "+llen", "+rpush",
		"+hmget", "+xadd", "+xlen", "+xrange", "+hscan", "+spublish", "+zcount", "+rename", "+command|getkeys", "+zremrangebyscore", "+zrangebyscore", "allchannels"}
	if _, err := srv.Do(acl...); err != nil {
		t.Fatal(err)
	}
	code, out, errs := probe(t, "-addr", srv.Addr(), "-user", "prober", "-password", "s3cret", "-claim", "-fence-db", "1")
	if code != emqcli.ExitOK {
		t.Fatalf("probe as an ACL user = %d\n%s%s", code, out, errs)
	}
	t.Setenv("EMQ_REDIS_PASSWORD", "s3cret")
	if code, out, errs := probe(t, "-addr", srv.Addr(), "-user", "prober"); code != emqcli.ExitOK {
		t.Fatalf("probe with the password from the environment = %d\n%s%s", code, out, errs)
	}
	code, out, errs = probe(t, "-addr", srv.Addr(), "-user", "prober", "-password", "wrong")
	if code != emqcli.ExitUsage || out != "" || !strings.HasPrefix(errs, "emq: connecting to "+srv.Addr()+": ") || !strings.Contains(errs, "WRONGPASS") {
		t.Fatalf("a wrong password = %d; want %d and a clear message\n%s%s", code, emqcli.ExitUsage, out, errs)
	}
	// A user without the right to run scripts gets failed checks naming
	// the permission, not a crash.
	if _, err := srv.Do("ACL", "SETUSER", "prober", "-evalsha", "-eval"); err != nil {
		t.Fatal(err)
	}
	code, out, errs = probe(t, "-addr", srv.Addr(), "-user", "prober", "-password", "s3cret")
	if code != emqcli.ExitFindings || !strings.Contains(out, "NOPERM") {
		t.Fatalf("a user who may not run scripts = %d\n%s%s", code, out, errs)
	}
}

// TestProbeTLS runs the probe over TLS against a server whose certificate
// is signed by a CA made here: trusted with -tls-ca it passes; without it,
// or with the wrong server name, it is a connection error.
func TestProbeTLS(t *testing.T) {
	x := redistest.NewTLS(t)
	srv := redistest.Start(t, x.Option())
	addr, ca := x.Addr(), x.CA
	code, out, errs := probe(t, "-addr", addr, "-tls", "-tls-ca", ca, "-claim", "-fence-db", "2")
	if code != emqcli.ExitOK {
		t.Fatalf("probe over TLS = %d\n%s%s", code, out, errs)
	}
	if v, err := srv.Do("EXISTS", wire.KeyVersion); err != nil || v != "1" {
		t.Errorf("the TLS run did not reach the server behind the plain port: %q %v", v, err)
	}
	if code, _, errs := probe(t, "-addr", addr, "-tls"); code != emqcli.ExitUsage || !strings.Contains(errs, "certificate") {
		t.Errorf("an untrusted certificate = %d; want %d\n%s", code, emqcli.ExitUsage, errs)
	}
	if code, _, errs := probe(t, "-addr", addr, "-tls-ca", ca, "-tls-server-name", "elsewhere.example"); code != emqcli.ExitUsage || !strings.Contains(errs, "certificate") {
		t.Errorf("a wrong server name = %d; want %d\n%s", code, emqcli.ExitUsage, errs)
	}
	if code, _, errs := probe(t, "-addr", addr); code != emqcli.ExitUsage || !strings.Contains(errs, "connecting to") {
		t.Errorf("plain text to the TLS port = %d; want %d\n%s", code, emqcli.ExitUsage, errs)
	}
}

// TestProbeUsage: bad flags and an unreachable server exit 2 with a
// message; -h explains the safety guarantees.
func TestProbeUsage(t *testing.T) {
	if code, out, _ := probe(t, "-h"); code != emqcli.ExitOK || !strings.Contains(out, "safe on a production deployment") || !strings.Contains(out, "-fence-db") {
		t.Errorf("probe -h = %d\n%s", code, out)
	}
	for _, args := range [][]string{
		{"-nope"}, {"extra"}, {"-fence-db", "-2"}, {"-addr", "nohostport"}, {"-timeout", "0s"},
		{"-manifest", filepath.Join(t.TempDir(), "protocol.yaml")}, // emq has no manifest: it speaks the SDK's protocol
	} {
		if code, _, errs := probe(t, args...); code != emqcli.ExitUsage || errs == "" {
			t.Errorf("probe %v = %d; want %d with a message\n%s", args, code, emqcli.ExitUsage, errs)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if code, out, errs := probe(t, "-addr", addr, "-timeout", "2s"); code != emqcli.ExitUsage || out != "" || !strings.HasPrefix(errs, "emq: connecting to "+addr) {
		t.Errorf("an unreachable server = %d\n%s%s", code, out, errs)
	}
}

// TestProbeFenceDBRefusedOnCluster: a cluster has no logical databases, so
// -fence-db is refused with exit 2 before anything runs.
func TestProbeFenceDBRefusedOnCluster(t *testing.T) {
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
	code, out, errs := probe(t, "-addr", srv.Addr(), "-claim", "-fence-db", "0")
	if code != emqcli.ExitUsage || out != "" || !strings.Contains(errs, "Redis Cluster has no logical databases") {
		t.Fatalf("-fence-db on a cluster = %d; want %d and a clear refusal\n%s%s", code, emqcli.ExitUsage, out, errs)
	}
	if n, err := srv.Do("DBSIZE"); err != nil || n != "0" {
		t.Errorf("a refused run wrote %s keys (%v)", n, err)
	}
}
