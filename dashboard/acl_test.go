package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/dashboard"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// The least-privilege ACLs of the dashboard, one ACL SETUSER word per
// rule, built from generated names; docs/security.md shows the same lines
// (TestDashboardACLDocumented).

func aclSetUser(name, password string, rules []string) []string {
	return append([]string{"ACL", "SETUSER", name, "reset", "on", ">" + password, "resetchannels"}, rules...)
}

const aclPassword = "s3cret-dashboard-acl"

// aclDashboard reads queue q's pages, read-only, with Options.Queues
// naming it: no SCAN.
func aclDashboard(q string) []string {
	k, _ := wire.NewQueueKeys(q)
	mig, _ := wire.KeyMigration(q)
	return []string{
		"+ping", "+cluster|slots",
		"+get", "+time", "+zcard", "+exists", "+zrange", "+zscore", "+hmget", "+hgetall", "+zcount", "+zlexcount",
		"+evalsha_ro", "+eval_ro", "+hlen", "+hget", // a job's failure record (the failures script)
		"+type",          // the queue's policy (the queue_policy script, 2.7.0) and the layout it leaves the leased jobs in
		"+zrangebyscore", // a rate limit's next start, when its starts log is full (the read_policy script, 2.8.0; +zcount counts the log)
		"%R~" + wire.KeyVersion, "%R~" + mig, "%R~" + commonPrefix(k.Pending, k.Active, k.Schedule, k.Dead, k.Wake, k.RowPrefix()) + "*",
	}
}

// commonPrefix is what keys share at their start.
func commonPrefix(keys ...string) string {
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

func mustNew(t *testing.T, o dashboard.Options) *dashboard.Dashboard {
	t.Helper()
	d, err := dashboard.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs
}

// aclDashboardActions adds what revive, purge and run-now write, and
// what pause, resume and the concurrency cap (echomq 2.7.0) read and
// write (aclPolicyRules).
func aclDashboardActions(q string) []string {
	k, _ := wire.NewQueueKeys(q)
	return append(append(aclDashboard(q),
		"+evalsha", "+eval", "+hset", "+zadd", "+zrem", "+llen", "+rpush", "+del", "+hdel",
		"~"+k.Pending, "~"+k.Schedule, "~"+k.Dead, "~"+k.Wake, "~"+k.RowPrefix()+"*", "~"+k.Failures),
		aclPolicyRules(q)...)
}

// aclPolicyRules are the rules the policy actions add: the bundle record
// the floor check reads (HKEYS), and the configure_policy script's RENAME
// and SET of the active key and the keys it declares (the starts log of a
// rate limit, echomq 2.8.0, among them).
func aclPolicyRules(q string) []string {
	k, _ := wire.NewQueueKeys(q)
	return []string{"+hkeys", "%R~" + wire.KeyBundle, "+rename", "+set", "~" + k.Active, "~" + k.Running, "~" + k.Policy, "~" + k.Starts}
}

// policyFlow pauses queue orders, caps it, resumes it and removes the
// cap through the dashboard's pages; it reports the first failure.
func policyFlow(t *testing.T, base string) string {
	t.Helper()
	for _, step := range []struct{ action, n string }{{"pause", ""}, {"cap", "2"}, {"resume", ""}, {"cap", "0"}} {
		query := ""
		if step.n != "" {
			query = "?n=" + step.n
		}
		code, body := get(t, base+"/queue/orders/policy/"+step.action+query)
		if code != http.StatusOK {
			return step.action + " (confirmation): " + http.StatusText(code) + ": " + errorText(body)
		}
		tok := csrfRE.FindStringSubmatch(body)
		if tok == nil {
			return step.action + ": the confirmation has no form"
		}
		resp, err := noRedirect.PostForm(base+"/queue/orders/policy/"+step.action, url.Values{"csrf": {tok[1]}, "n": {step.n}})
		if err != nil {
			t.Fatal(err)
		}
		body = readAll(t, resp)
		if resp.StatusCode != http.StatusSeeOther {
			return step.action + ": " + http.StatusText(resp.StatusCode) + ": " + errorText(body)
		}
	}
	return ""
}

// rateLimited gives q a rate limit of one start an hour with its starts
// log full (a start planted in it), so that reading its policy finds the
// log's oldest start in the window (echomq 2.8.0); on false it removes the
// limit again.
func rateLimited(t *testing.T, w *world, q *emq.Queue, on bool) {
	t.Helper()
	if !on {
		if _, err := q.SetRateLimit(ctxT(t), 0, 0); err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := q.SetRateLimit(ctxT(t), 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := w.srv.Do("ZADD", q.Keys().Starts, strconv.FormatInt(time.Now().UnixMilli(), 10), "planted:1"); err != nil {
		t.Fatal(err)
	}
}

// repairPolicy puts queue name back in the classic layout without a
// policy, whatever a set_policy refused midway left.
func repairPolicy(t *testing.T, w *world, name string) {
	t.Helper()
	q, _ := w.c.Queue(name)
	k := q.Keys()
	if typ, _ := w.srv.Do("TYPE", k.Active); typ == wire.ActiveTripwireType {
		if _, err := w.srv.Do("DEL", k.Active); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := w.srv.Do("EXISTS", k.Running); n == "1" {
		if _, err := w.srv.Do("RENAME", k.Running, k.Active); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.srv.Do("DEL", k.Policy); err != nil {
		t.Fatal(err)
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// asUser is an observing client of srv logged in as user.
func asUser(t *testing.T, srv *redistest.Server, user string) (*emq.Client, error) {
	t.Helper()
	return emq.Observe(ctxT(t), emq.Options{Redis: rueidis.ClientOption{
		InitAddress: []string{srv.Addr()}, Username: user, Password: aclPassword,
		DisableCache: true, ClientSetInfo: rueidis.DisableClientSetInfo,
	}})
}

// aclLog is what ACL LOG holds; ACL LOG RESET empties it.
func aclLog(t *testing.T, srv *redistest.Server) string {
	t.Helper()
	out, err := srv.Do("ACL", "LOG")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// readFlow loads every page of queue orders as the user and samples it;
// it reports the first failure.
func readFlow(t *testing.T, w *world, c *emq.Client) string {
	t.Helper()
	d := mustNew(t, dashboard.Options{Client: c, Queues: []string{"orders"}, PageSize: 2})
	for range 2 {
		if err := d.Sample(ctxT(t)); err != nil {
			return "sample: " + err.Error()
		}
	}
	hs := newServer(t, d)
	paths := []string{"/", "/queue/orders"}
	for _, s := range emq.Sets() {
		paths = append(paths, "/queue/orders/set/"+string(s))
		for _, id := range w.ids["orders"][s.State()][:1] {
			paths = append(paths, "/queue/orders/job/"+id.String())
		}
	}
	pending := w.ids["orders"][emq.StatePending]
	paths = append(paths, "/queue/orders/set/"+string(emq.SetPending)+"?after="+pending[len(pending)-1].String(),
		"/search?id="+pending[0].String())
	for _, p := range paths {
		code, body := get(t, hs.URL+p)
		if code != http.StatusOK && !(code == http.StatusSeeOther && strings.HasPrefix(p, "/search")) {
			return p + ": " + http.StatusText(code) + ": " + errorText(body)
		}
	}
	return ""
}

func errorText(body string) string {
	if _, rest, ok := strings.Cut(body, `id="error">`); ok {
		msg, _, _ := strings.Cut(rest, "<")
		return msg
	}
	return ""
}

func TestDashboardACL(t *testing.T) {
	w := seed(t, 5, 2)
	rules := aclDashboard("orders")
	if _, err := w.srv.Do(aclSetUser("emq-dashboard", aclPassword, rules)...); err != nil {
		t.Fatal(err)
	}
	if _, err := w.srv.Do("ACL", "LOG", "RESET"); err != nil {
		t.Fatal(err)
	}
	c, err := asUser(t, w.srv, "emq-dashboard")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if msg := readFlow(t, w, c); msg != "" {
		t.Fatalf("the dashboard's ACL: %s", msg)
	}
	if l := aclLog(t, w.srv); l != "" {
		t.Fatalf("the dashboard's ACL: refusals logged:\n%s", l)
	}
	// The same on a paused and capped queue (echomq 2.7.0): its leased
	// jobs in the running set, its active key the tripwire.
	orders, _ := w.c.Queue("orders")
	if _, err := orders.Pause(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := orders.SetConcurrency(ctxT(t), 3); err != nil {
		t.Fatal(err)
	}
	if msg := readFlow(t, w, c); msg != "" {
		t.Fatalf("the dashboard's ACL on a paused queue: %s", msg)
	}
	if l := aclLog(t, w.srv); l != "" {
		t.Fatalf("the dashboard's ACL on a paused queue: refusals logged:\n%s", l)
	}
	if _, err := orders.Resume(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := orders.SetConcurrency(ctxT(t), 0); err != nil {
		t.Fatal(err)
	}
	// The same under a rate limit whose starts log is full (echomq 2.8.0).
	rateLimited(t, w, orders, true)
	if msg := readFlow(t, w, c); msg != "" {
		t.Fatalf("the dashboard's ACL on a rate-limited queue: %s", msg)
	}
	if l := aclLog(t, w.srv); l != "" {
		t.Fatalf("the dashboard's ACL on a rate-limited queue: refusals logged:\n%s", l)
	}
	rateLimited(t, w, orders, false)
	// Every rule is needed: without any one of them a page fails or the
	// server logs a refusal.
	for i, r := range rules {
		less := slices.Delete(slices.Clone(rules), i, i+1)
		if _, err := w.srv.Do(aclSetUser("emq-dashboard-less", aclPassword, less)...); err != nil {
			t.Fatal(err)
		}
		// A server that holds no script (restarted, failed over) makes the
		// read-only script's EVAL_RO fallback needed too.
		if _, err := w.srv.Do("SCRIPT", "FLUSH"); err != nil {
			t.Fatal(err)
		}
		if _, err := w.srv.Do("ACL", "LOG", "RESET"); err != nil {
			t.Fatal(err)
		}
		c, err := asUser(t, w.srv, "emq-dashboard-less")
		if err != nil {
			continue // refused at connect: needed
		}
		msg := readFlow(t, w, c)
		if msg == "" && aclLog(t, w.srv) == "" {
			// Some rules serve only a queue with a policy (+type: its
			// layout; +zrangebyscore: a rate limit whose log is full): the
			// same pages of the queue paused under such a limit.
			if _, err := orders.Pause(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			rateLimited(t, w, orders, true)
			msg = readFlow(t, w, c)
			rateLimited(t, w, orders, false)
			if _, err := orders.Resume(ctxT(t)); err != nil {
				t.Fatal(err)
			}
		}
		c.Close()
		if strings.Contains(msg, "refused the dashboard's user") && !strings.Contains(msg, "NOPERM") {
			t.Errorf("without %s: %s", r, msg)
		}
		if msg == "" && aclLog(t, w.srv) == "" && r != "+cluster|slots" {
			t.Errorf("rule %s is not needed: everything passed without it", r)
		}
	}
	// Read-only, every action is refused by the dashboard before Redis.
	ro := newServer(t, mustNew(t, dashboard.Options{Client: c, Queues: []string{"orders"}}))
	dead := w.ids["orders"][emq.StateDead][0]
	if resp := post(t, ro.URL+"/queue/orders/job/"+dead.String()+"/revive", url.Values{"csrf": {"x"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a read-only revive = %d", resp.StatusCode)
	}

	// With actions: revive, purge, run-now pass with nothing refused.
	if _, err := w.srv.Do(aclSetUser("emq-dashboard-actions", aclPassword, aclDashboardActions("orders"))...); err != nil {
		t.Fatal(err)
	}
	if _, err := w.srv.Do("ACL", "LOG", "RESET"); err != nil {
		t.Fatal(err)
	}
	ca, err := asUser(t, w.srv, "emq-dashboard-actions")
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	rw := newServer(t, mustNew(t, dashboard.Options{Client: ca, Queues: []string{"orders"}, Actions: true}))
	for _, a := range []struct {
		id     emq.ID
		action string
	}{{w.ids["orders"][emq.StateDead][0], "revive"}, {w.ids["orders"][emq.StateDead][1], "purge"}, {w.ids["orders"][emq.StateScheduled][0], "run-now"}} {
		tok := confirmToken(t, rw.URL, "orders", a.id, a.action)
		if resp := post(t, rw.URL+"/queue/orders/job/"+a.id.String()+"/"+a.action, url.Values{"csrf": {tok}}); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("%s as emq-dashboard-actions = %d", a.action, resp.StatusCode)
		}
	}
	// Pause, cap, resume, uncap: nothing refused, and the policy as the
	// last step left it.
	if msg := policyFlow(t, rw.URL); msg != "" {
		t.Errorf("the actions' ACL: %s", msg)
	}
	if p := policyOf(t, w, "orders"); p.Paused || p.Concurrency != 0 || p.Requires != 0 {
		t.Errorf("after the policy flow the policy is %+v", p)
	}
	if l := aclLog(t, w.srv); l != "" {
		t.Errorf("the actions' ACL: refusals logged:\n%s", l)
	}
	if msg := readFlow(t, w, ca); msg != "" {
		t.Errorf("the actions' ACL cannot read: %s", msg)
	}
	// Every policy rule is needed: without any one, the flow fails (the
	// pause, the first step, lays the tripwire), and the refused pause
	// writes nothing: a key the user may not touch is refused before the
	// script runs (logged), and set_policy checks every command it may run
	// against the user's ACL before its first write (redis.acl_check_cmd,
	// which logs nothing), so no policy record is left without its
	// tripwire.
	all := aclDashboardActions("orders")
	for _, r := range aclPolicyRules("orders") {
		less := slices.DeleteFunc(slices.Clone(all), func(x string) bool { return x == r })
		if _, err := w.srv.Do(aclSetUser("emq-dashboard-actions-less", aclPassword, less)...); err != nil {
			t.Fatal(err)
		}
		if _, err := w.srv.Do("ACL", "LOG", "RESET"); err != nil {
			t.Fatal(err)
		}
		c, err := asUser(t, w.srv, "emq-dashboard-actions-less")
		if err != nil {
			t.Fatal(err)
		}
		hs := newServer(t, mustNew(t, dashboard.Options{Client: c, Queues: []string{"orders"}, Actions: true}))
		msg := policyFlow(t, hs.URL)
		c.Close()
		if msg == "" {
			t.Errorf("policy rule %s is not needed: the flow passed without it", r)
		}
		// The server logs the refusal, except set_policy's own check of the
		// commands it may run (acl_check_cmd logs nothing).
		if r != "+rename" && r != "+set" && aclLog(t, w.srv) == "" {
			t.Errorf("without policy rule %s nothing was logged", r)
		}
		if p := policyOf(t, w, "orders"); p.Paused || p.Concurrency != 0 || p.Requires != 0 {
			t.Errorf("without %s the refused pause wrote something: the policy is %+v", r, p)
		}
		repairPolicy(t, w, "orders")
	}
}

// Finding every queue itself: +scan and the patterns widened to every
// queue, as docs/security.md says.
func TestDashboardACLDiscovery(t *testing.T) {
	w := seed(t, 3, 1)
	var rules []string
	for _, r := range aclDashboard("orders") {
		switch {
		case strings.HasPrefix(r, "%R~{emq}:migration:"):
			r = "%R~{emq}:migration:*"
		case strings.HasPrefix(r, "%R~emq:"):
			r = "%R~emq:*"
		}
		rules = append(rules, r)
	}
	rules = append(rules, "+scan")
	if _, err := w.srv.Do(aclSetUser("emq-dashboard-all", aclPassword, rules)...); err != nil {
		t.Fatal(err)
	}
	if _, err := w.srv.Do("ACL", "LOG", "RESET"); err != nil {
		t.Fatal(err)
	}
	c, err := asUser(t, w.srv, "emq-dashboard-all")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hs := newServer(t, mustNew(t, dashboard.Options{Client: c}))
	code, body := get(t, hs.URL+"/")
	if code != http.StatusOK || !strings.Contains(body, `data-queue="emails"`) || !strings.Contains(body, `data-queue="reports.v2"`) {
		t.Errorf("the overview with +scan = %d %s", code, errorText(body))
	}
	if l := aclLog(t, w.srv); l != "" {
		t.Errorf("refusals logged:\n%s", l)
	}
}

func TestDashboardACLDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, rules := range map[string][]string{"emq-dashboard": aclDashboard("orders"), "emq-dashboard-actions": aclDashboardActions("orders")} {
		line := strings.Join(aclSetUser(name, "PASSWORD", rules), " ")
		if !strings.Contains(string(doc), line+"\n") {
			t.Errorf("docs/security.md does not show the %s line:\n%s", name, line)
		}
	}
}
