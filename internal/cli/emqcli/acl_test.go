package emqcli_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/internal/cli/emqcli"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// The least-privilege ACL of emq's commands, one ACL SETUSER word
// per rule, built from generated names. docs/security.md shows the same
// lines, with why each rule is there; TestCLIACLDocumented keeps them in
// step, and the tests below show each rule is needed.

// aclSetUser is the ACL SETUSER command of a user with exactly rules: reset
// first, then enabled with password, no channel.
func aclSetUser(name, password string, rules []string) []string {
	return append([]string{"ACL", "SETUSER", name, "reset", "on", ">" + password, "resetchannels"}, rules...)
}

const aclPassword = "s3cret-acl-test"

// aclOperator runs every emq inspect subcommand on the queue of k: it
// reads the version record and every key of the queue, and writes only
// what revive, the doorbell's ring and purge write.
func aclOperator(k wire.QueueKeys) []string {
	return []string{
		"+ping", "+cluster|slots",
		"+get", "+time", "+zcard", "+exists", "+zrange", "+zscore", "+hmget", "+hgetall", // sizes, browse, show
		"+evalsha", "+eval", "+hget", "+hset", "+hlen", "+zadd", "+zrem", "+llen", "+rpush", "+del", // revive, ring, purge; show's failures
		"+hdel",                   // purge forgets the job's failure record (2.3.0)
		"+evalsha_ro", "+eval_ro", // show and browse read failure records with the read-only failures script (2.3.0)
		"+xlen", "+xrange", // events reads the events stream with the read-only events script (2.4.0)
		"+hexists", "+spublish", "+xadd", // dedup judges a key held while a result is kept; cancel tells the lease holder and reports (2.5.0)
		"+type",                     // the 2.7.0 scripts and the SDK's reads of the leased set find the queue's layout (the tripwire at active)
		"+zcount", "+zrangebyscore", // sizes reads a rate limit's next start from its starts log (read_policy, 2.8.0)
		"%R~" + wire.KeyVersion, "%R~" + aclPrefix(k.Pending, k.Active, k.Schedule, k.Dead, k.Wake, k.RowPrefix()) + "*",
		"~" + k.Pending, "~" + k.Dead, "~" + k.Wake, "~" + k.RowPrefix() + "*", "~" + k.Failures,
		"~" + k.Schedule, "~" + k.Active, "~" + k.Progress, "~" + k.Options, "~" + k.Events, "~" + k.Cancel, "&" + k.Cancel, // what cancel writes
		"~" + k.Running, "~" + k.Policy, // cancel_policy_ids declares them (2.7.0)
	}
}

// aclProber runs emq probe on a keyspace a client already fenced (no
// -claim, no -fence-db): the version record and the bundle identity are
// only read; it writes its scratch queues, their migration record and its
// own lock field.
func aclProber(t testing.TB) []string {
	return []string{
		"+ping", "+cluster|slots", "+evalsha", "+eval", "+command|info",
		"+get", "+type", "+exists", "+hget", "+hexists", "+hdel", "+del", // the probes' commands, the clean-up
		"+hset", "+hlen", "+time", "+zadd", "+zcard", "+zpopmin", "+zrem", "+hincrby", // what the probed scripts call
		"+zscore", "+zrange", "+llen", "+rpush", // and the 2.3.0 steps' promote and reap_failed_ids
		"+hmget", "+xadd", "+xlen", "+xrange", // and the 2.4.0 steps' settles, their events and the events read
		"+hscan", "+spublish", // and the 2.5.0 steps' sweep_dedup (its walk) and cancel_ids (its publication)
		"+zcount",                             // and the 2.6.0 steps' due_schedulers (how many schedulers are due)
		"+set", "+rename", "+command|getkeys", // and the 2.7.0 steps: set_policy lays the tripwire (its ACL check asks for every command it may run: +rename), a step plants a later minor's (its keys asked of the server)
		"+zremrangebyscore", "+zrangebyscore", // and the 2.8.0 steps: the rate limit's claims drop the starts a period old, read_policy reads a full log's oldest start
		"&" + aclScratch(t, func(q string) (string, error) {
			k, err := wire.NewQueueKeys(q)
			return k.Cancel, err
		}) + "*",
		"%R~" + wire.KeyVersion, "%R~" + wire.KeyBundle, "~" + wire.KeyLocks,
		"~" + aclScratch(t, wire.KeyMigration) + "*",
		"~" + aclScratch(t, func(q string) (string, error) {
			k, err := wire.NewQueueKeys(q)
			return k.Pending, err
		}) + "*",
	}
}

// aclProberFence is aclProber with -claim (the fence writes the version
// record and the bundle identity of a fresh keyspace) and -fence-db (the
// fence's checks in a logical database of their own).
func aclProberFence(t testing.TB) []string {
	rules := slices.DeleteFunc(aclProber(t), func(r string) bool {
		return r == "%R~"+wire.KeyVersion || r == "%R~"+wire.KeyBundle
	})
	return append(rules, "+hsetnx", "+strlen", "+select", "+dbsize", "+dump", "~"+wire.KeyVersion, "~"+wire.KeyBundle)
}

// aclScratch is what every scratch queue's key of key shares: the common
// prefix of two scratch queues' keys.
func aclScratch(t testing.TB, key func(queue string) (string, error)) string {
	t.Helper()
	a, err := key(emq.ScratchPrefix + "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := key(emq.ScratchPrefix + "b")
	if err != nil {
		t.Fatal(err)
	}
	return aclPrefix(a, b)
}

func aclPrefix(keys ...string) string {
	p := keys[0]
	for _, k := range keys[1:] {
		n := 0
		for n < len(p) && n < len(k) && p[n] == k[n] {
			n++
		}
		p = p[:n]
	}
	return p
}

// aclUser creates user name with exactly rules on srv.
func aclUser(t testing.TB, srv *redistest.Server, name string, rules []string) []string {
	t.Helper()
	if _, err := srv.Do(aclSetUser(name, aclPassword, rules)...); err != nil {
		t.Fatalf("ACL SETUSER %s: %v", name, err)
	}
	return []string{"-user", name, "-password", aclPassword}
}

// aclDenials is srv's ACL LOG as "reason object (context)" lines.
func aclDenials(t testing.TB, srv *redistest.Server) []string {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	entries, err := rc.Do(ctx, rc.B().Arbitrary("ACL", "LOG").Build()).ToArray()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		m, err := e.AsMap()
		if err != nil {
			t.Fatal(err)
		}
		field := func(name string) string {
			v := m[name]
			s, _ := v.ToString()
			return s
		}
		out = append(out, fmt.Sprintf("%s %s (%s)", field("reason"), field("object"), field("context")))
	}
	return out
}

// aclCursor is the cursor a browse page printed, or "".
func aclCursor(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if c, ok := strings.CutPrefix(l, "next: -cursor "); ok {
			return c
		}
	}
	return ""
}

// operatorFlow runs every inspect subcommand as user on the seeded queue
// orders, with an empty script cache and the doorbell taken: sizes, browse
// of every set and a second page of a lexical and a scored set, show,
// revive (which rings), purge without and with -yes. It returns what went
// otherwise than with every right.
func operatorFlow(t *testing.T, s *seeded, user []string) []string {
	t.Helper()
	return operatorFlowIn(t, s, user, true)
}

// operatorFlowIn is operatorFlow with the queue in the policy layout, or
// in the classic layout when policy is false.
func operatorFlowIn(t *testing.T, s *seeded, user []string, policy bool) []string {
	t.Helper()
	for _, cmd := range [][]string{{"SCRIPT", "FLUSH"}, {"DEL", s.q.Keys().Wake}} {
		if _, err := s.srv.Do(cmd...); err != nil {
			t.Fatal(err)
		}
	}
	// The queue has a policy (a cap that never binds): the operator's
	// reads find its leased jobs under the tripwire (+type, +get). It has
	// a rate limit too (2.8.0), whose log is full (a start planted in it):
	// the policy's read counts the log's window and finds its oldest start
	// in it (+zcount, +zrangebyscore).
	if policy {
		if _, err := s.q.SetConcurrency(ctxP(t), 1000); err != nil {
			t.Fatal(err)
		}
		if _, err := s.q.SetRateLimit(ctxP(t), 1, time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, err := s.srv.Do("ZADD", s.q.Keys().Starts, strconv.FormatInt(time.Now().UnixMilli(), 10), "planted:1"); err != nil {
			t.Fatal(err)
		}
		// Setting the limit rang the doorbell: revive is to ring it.
		if _, err := s.srv.Do("DEL", s.q.Keys().Wake); err != nil {
			t.Fatal(err)
		}
	}
	var wrong []string
	step := func(want int, sub string, args ...string) string {
		code, out, errs := inspectRun(t, s.srv, sub, append(append([]string{"-queue", "orders"}, user...), args...)...)
		if code != want || (want == emqcli.ExitOK && errs != "") {
			wrong = append(wrong, fmt.Sprintf("inspect %s %v = %d, want %d: %s%s", sub, args, code, want, out, errs))
		}
		return out
	}
	step(emqcli.ExitOK, "sizes")
	step(emqcli.ExitOK, wire.ScriptCounters.Name)
	step(emqcli.ExitOK, wire.ScriptEvents.Name)
	for _, set := range emq.Sets() {
		out := step(emqcli.ExitOK, "browse", "-set", string(set), "-n", "1")
		if c := aclCursor(out); c != "" {
			step(emqcli.ExitOK, "browse", "-set", string(set), "-n", "1", "-cursor", c)
		}
	}
	step(emqcli.ExitOK, "show", s.ids["claimed"].String())
	step(emqcli.ExitOK, "show", "-format", "json", s.ids["later1"].String())
	if out := step(emqcli.ExitOK, "revive", s.ids["dead1"].String()); !strings.Contains(out, "doorbell  rung") {
		wrong = append(wrong, "revive did not ring the doorbell:\n"+out)
	}
	step(emqcli.ExitFindings, "purge", s.ids["dead2"].String())
	step(emqcli.ExitOK, "purge", "-yes", s.ids["dead2"].String())
	// echomq 2.5.0: a key's entry, and cancellation by key (a pending
	// holder) and by id (an active job: its lease holder is told).
	id, err := s.c.Mint(emq.WorkKind)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.q.PushDedup(ctxP(t), id, []byte("keyed"), "op-key", emq.WithDedup(emq.DedupPolicy{HoldWhileResultKept: true})); err != nil {
		t.Fatal(err)
	}
	step(emqcli.ExitOK, wire.ScriptDedupEntries.Name, "op-key")
	step(emqcli.ExitFindings, wire.ScriptCancelIDs.Name, "-key", "op-key")
	if out := step(emqcli.ExitOK, wire.ScriptCancelIDs.Name, "-yes", "-key", "op-key"); !strings.Contains(out, id.String()+"  cancelled") {
		wrong = append(wrong, "cancel -key did not cancel the holder:\n"+out)
	}
	step(emqcli.ExitOK, wire.ScriptDedupEntries.Name, "-format", "json", "op-key")
	if out := step(emqcli.ExitOK, wire.ScriptCancelIDs.Name, "-yes", s.ids["claimed"].String()); !strings.Contains(out, "cancelled (was "+string(emq.StateActive)) {
		wrong = append(wrong, "cancel did not cancel the active job:\n"+out)
	}
	// echomq 2.6.0: the job schedulers, a page and by id.
	if _, err := s.q.UpsertScheduler(ctxP(t), "op-nightly", emq.Schedule{Cron: "0 3 * * *", TZ: "Europe/Berlin"}); err != nil {
		t.Fatal(err)
	}
	if out := step(emqcli.ExitOK, wire.ScriptListSchedulers.Name); !strings.Contains(out, `"op-nightly"`) {
		wrong = append(wrong, "list_schedulers did not list the scheduler:\n"+out)
	}
	step(emqcli.ExitOK, wire.ScriptListSchedulers.Name, "-format", "json", "op-nightly")
	return wrong
}

// TestInspectACL: emq inspect as a user with exactly the operator's ACL
// (-user, -password) runs every subcommand with nothing refused; without
// any one rule something fails or the server logs a refusal; and the
// operator of one queue is refused another.
func TestInspectACL(t *testing.T) {
	k, err := wire.NewQueueKeys("orders")
	if err != nil {
		t.Fatal(err)
	}
	rules := aclOperator(k)
	t.Run("all", func(t *testing.T) {
		s := seed(t)
		user := aclUser(t, s.srv, "emq-operator", rules)
		if wrong := operatorFlow(t, s, user); len(wrong) > 0 {
			t.Fatalf("as the operator:\n%s", strings.Join(wrong, "\n"))
		}
		if d := aclDenials(t, s.srv); len(d) > 0 {
			t.Fatalf("refused: %q", d)
		}
		code, out, errs := inspectRun(t, s.srv, "sizes", append([]string{"-queue", "invoices"}, user...)...)
		if code != emqcli.ExitUsage || out != "" || !strings.Contains(errs, "NOPERM") {
			t.Errorf("sizes of another queue = %d; want %d and NOPERM\n%s%s", code, emqcli.ExitUsage, out, errs)
		}
		code, out, errs = inspectRun(t, s.srv, "sizes", "-queue", "orders", "-user", "emq-operator", "-password", "wrong")
		if code != emqcli.ExitUsage || out != "" || !strings.Contains(errs, "WRONGPASS") {
			t.Errorf("a wrong password = %d\n%s%s", code, out, errs)
		}
	})
	t.Run("all, the classic layout", func(t *testing.T) {
		s := seed(t)
		if wrong := operatorFlowIn(t, s, aclUser(t, s.srv, "emq-operator", rules), false); len(wrong) > 0 {
			t.Fatalf("as the operator:\n%s", strings.Join(wrong, "\n"))
		}
		if d := aclDenials(t, s.srv); len(d) > 0 {
			t.Fatalf("refused: %q", d)
		}
	})
	for i, rule := range rules {
		t.Run("without "+rule, func(t *testing.T) {
			t.Parallel()
			s := seed(t)
			wrong := operatorFlow(t, s, aclUser(t, s.srv, "u", slices.Delete(slices.Clone(rules), i, i+1)))
			d := aclDenials(t, s.srv)
			if len(wrong) == 0 && len(d) == 0 {
				t.Fatalf("every subcommand passed and nothing was refused without %s", rule)
			}
			t.Logf("refused %q; %d steps went wrong", d, len(wrong))
		})
	}
}

// TestInspectTLS: emq inspect over TLS (-tls-ca trusts the CA made
// here) reads and revives, also as the operator (-user, -password and
// TLS together); without the CA it is a certificate error.
func TestInspectTLS(t *testing.T) {
	x := redistest.NewTLS(t)
	srv := redistest.Start(t, x.Option())
	c := connect(t, srv)
	q, err := c.Queue("orders")
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxP(t)
	var dead []string
	for i := 0; i < 3; i++ {
		id, _ := c.Mint(emq.WorkKind)
		if _, err := q.Push(ctx, id, []byte("over TLS")); err != nil {
			t.Fatal(err)
		}
		j, _, err := q.Claim(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Bury(ctx, j.ID, j.Token); err != nil {
			t.Fatal(err)
		}
		dead = append(dead, j.ID.String())
	}
	tlsRun := func(sub string, args ...string) (int, string, string) {
		return run(t, append([]string{"inspect", sub, "-addr", x.Addr(), "-tls-ca", x.CA, "-timeout", "10s", "-queue", "orders"}, args...)...)
	}
	if code, out, errs := tlsRun("sizes"); code != emqcli.ExitOK || !strings.Contains(lineWith(out, q.Keys().Dead), " 3 ") {
		t.Fatalf("sizes over TLS = %d\n%s%s", code, out, errs)
	}
	if code, out, errs := tlsRun("revive", dead[0]); code != emqcli.ExitOK {
		t.Fatalf("revive over TLS = %d\n%s%s", code, out, errs)
	}
	k := q.Keys()
	user := aclUser(t, srv, "emq-operator", aclOperator(k))
	if code, out, errs := tlsRun("revive", append(user, dead[1])...); code != emqcli.ExitOK {
		t.Fatalf("revive over TLS as the operator = %d\n%s%s", code, out, errs)
	}
	if code, out, errs := tlsRun("purge", append(user, "-yes", dead[2])...); code != emqcli.ExitOK {
		t.Fatalf("purge over TLS as the operator = %d\n%s%s", code, out, errs)
	}
	if d := aclDenials(t, srv); len(d) > 0 {
		t.Errorf("refused: %q", d)
	}
	if sz, err := q.Sizes(ctx); err != nil || sz[emq.SetDead] != 0 || sz[emq.SetPending] != 2 {
		t.Errorf("sizes after revive, revive, purge: %v, %v", sz, err)
	}
	code, _, errs := run(t, "inspect", "sizes", "-addr", x.Addr(), "-tls", "-timeout", "5s", "-queue", "orders")
	if code != emqcli.ExitUsage || !strings.Contains(errs, "certificate") {
		t.Errorf("-tls without the CA = %d; want %d and a certificate error\n%s", code, emqcli.ExitUsage, errs)
	}
}

// TestProbeLeastPrivilegeACL: emq probe as a user with exactly the
// prober's ACL passes every check on a fenced keyspace with an empty script
// cache, nothing refused, and cannot without any one rule; with -claim and
// -fence-db on a fresh server, the fence prober's ACL is exactly enough
// too. (TestProbeACL grants every key; this one grants the least.)
func TestProbeLeastPrivilegeACL(t *testing.T) {
	env := loadProbeEnv(t)
	n := fmt.Sprint(env.checks)
	cases := []struct {
		name  string
		rules []string
		args  []string
		fresh bool   // no client fenced the keyspace before
		pass  string // the transcript's last lines
	}{
		{"emq-prober", aclProber(t), nil, false, "\nPASS " + n + "/" + n + "\n"},
		{"emq-prober-fence", aclProberFence(t), []string{"-claim", "-fence-db", "1"}, true, "\nPASS 8/8\n"},
	}
	for _, tc := range cases {
		flow := func(t *testing.T, rules []string) (ok bool, out string, denied []string) {
			srv := redistest.Start(t)
			if !tc.fresh {
				if code, out, errs := probe(t, "-addr", srv.Addr(), "-claim"); code != emqcli.ExitOK {
					t.Fatalf("claiming as the default user = %d\n%s%s", code, out, errs)
				}
				if _, err := srv.Do("SCRIPT", "FLUSH"); err != nil {
					t.Fatal(err)
				}
			}
			user := aclUser(t, srv, tc.name, rules)
			code, out, errs := probe(t, append(append([]string{"-addr", srv.Addr()}, user...), tc.args...)...)
			return code == emqcli.ExitOK && strings.HasSuffix(out, tc.pass), out + errs, aclDenials(t, srv)
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Run("all", func(t *testing.T) {
				t.Parallel()
				if ok, out, d := flow(t, tc.rules); !ok || len(d) > 0 {
					t.Fatalf("passed %v, refused %q\n%s", ok, d, out)
				}
			})
			for i, rule := range tc.rules {
				t.Run("without "+rule, func(t *testing.T) {
					t.Parallel()
					ok, _, d := flow(t, slices.Delete(slices.Clone(tc.rules), i, i+1))
					if ok && len(d) == 0 {
						t.Fatalf("every check passed and nothing was refused without %s", rule)
					}
					t.Logf("passed %v, refused %q", ok, d)
				})
			}
		})
	}
}

// TestCLIACLDocumented: docs/security.md shows the operator's and the
// probers' ACL SETUSER lines exactly as these tests enforce them.
func TestCLIACLDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	k, err := wire.NewQueueKeys("orders")
	if err != nil {
		t.Fatal(err)
	}
	for name, rules := range map[string][]string{"emq-operator": aclOperator(k), "emq-prober": aclProber(t), "emq-prober-fence": aclProberFence(t)} {
		line := strings.Join(aclSetUser(name, "PASSWORD", rules), " ")
		if !strings.Contains(string(doc), line+"\n") {
			t.Errorf("docs/security.md does not show the %s line:\n%s", name, line)
		}
	}
}
