package dashboard_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq/dashboard"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// policyOf reads queue name's policy through the SDK.
func policyOf(t *testing.T, w *world, name string) emq.QueuePolicy {
	t.Helper()
	q, _ := w.c.Queue(name)
	p, err := q.Policy(ctxT(t))
	if err != nil {
		t.Fatalf("Policy(%s): %v", name, err)
	}
	return p
}

var queueRowRE = regexp.MustCompile(`(?s)<tr data-queue="([^"]+)">(.*?)</tr>`)

// overviewRows are the overview's rows by queue.
func overviewRows(body string) map[string]string {
	rows := map[string]string{}
	for _, m := range queueRowRE.FindAllStringSubmatch(body, -1) {
		rows[m[1]] = m[2]
	}
	return rows
}

// TestPolicyView: the overview marks a paused queue and a capped one, the
// queue page shows the policy (paused or running, the cap, leased now /
// cap, the tripwire), read-only without a form; the pages of a paused
// queue's leased jobs still read.
func TestPolicyView(t *testing.T) {
	w := seed(t, 5, 1)
	ctx := ctxT(t)
	orders, _ := w.c.Queue("orders")
	emails, _ := w.c.Queue("emails")
	if _, err := orders.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := emails.SetConcurrency(ctx, 3); err != nil {
		t.Fatal(err)
	}
	_, hs := serve(t, w.srv, dashboard.Options{})

	code, body := get(t, hs.URL+"/")
	if code != http.StatusOK {
		t.Fatalf("GET / = %d\n%s", code, body)
	}
	rows := overviewRows(body)
	if r := rows["orders"]; !strings.Contains(r, `class="pill paused"`) || strings.Contains(r, `class="pill cap"`) {
		t.Errorf("the overview's paused orders row:\n%s", r)
	}
	if r := rows["emails"]; !strings.Contains(r, `class="pill cap"`) || !strings.Contains(r, ">cap 3</span>") || strings.Contains(r, `class="pill paused"`) {
		t.Errorf("the overview's capped emails row:\n%s", r)
	}
	if r := rows["reports.v2"]; strings.Contains(r, `pill paused`) || strings.Contains(r, `pill cap`) {
		t.Errorf("the overview marks reports.v2, which has no policy:\n%s", r)
	}
	// orders' two leased jobs are counted in its active column, from the
	// running set.
	if r := rows["orders"]; !strings.Contains(r, `/set/`+string(emq.SetActive)+`">2</a>`) {
		t.Errorf("the paused queue's active column:\n%s", r)
	}

	code, body = get(t, hs.URL+"/queue/orders")
	if code != http.StatusOK {
		t.Fatalf("GET /queue/orders = %d\n%s", code, body)
	}
	for _, want := range []string{`id="policy-state"><span class="pill paused">paused<`, `id="policy-cap">none<`, `id="policy-leased">2 / <span class="mute">no cap`,
		`id="policy-tripwire">` + minorRelease(policyOf(t, w, "orders").Requires) + ` and later clients only`} {
		if !strings.Contains(body, want) {
			t.Errorf("the paused queue's page lacks %q", want)
		}
	}
	if strings.Contains(body, `id="pause"`) || strings.Contains(body, `id="resume"`) || strings.Contains(body, `id="cap-form"`) {
		t.Errorf("a read-only queue page offers policy forms")
	}
	_, body = get(t, hs.URL+"/queue/emails")
	for _, want := range []string{`id="policy-state"><span class="pill on">running<`, `id="policy-cap">3<`, `id="policy-leased">0 / 3<`, `<span class="pill cap">cap 3</span></h1>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the capped queue's page lacks %q", want)
		}
	}
	_, body = get(t, hs.URL+"/queue/reports.v2")
	if !strings.Contains(body, `id="policy-state"><span class="pill on">running<`) || !strings.Contains(body, `id="policy-tripwire">none`) {
		t.Errorf("the page of a queue without a policy:\n%s", body)
	}

	// The paused queue's leased jobs: their set's page and a job's page,
	// with no warning that the sets disagree.
	active := w.ids["orders"][emq.StateActive][0]
	code, body = get(t, hs.URL+"/queue/orders/set/"+string(emq.SetActive))
	if code != http.StatusOK || !strings.Contains(body, active.String()) {
		t.Errorf("the paused queue's active set page (%d) lacks %s:\n%s", code, active, body)
	}
	code, body = get(t, hs.URL+"/queue/orders/job/"+active.String())
	if code != http.StatusOK || !strings.Contains(body, `id="state">`+string(emq.StateActive)) || strings.Contains(body, `class="warn"`) {
		t.Errorf("a leased job's page on the paused queue (%d):\n%s", code, body)
	}
}

// release is the SDK's major.minor, what a rate limit's tripwire names.
func release() string {
	parts := strings.SplitN(emq.Version, ".", 3)
	return parts[0] + "." + parts[1]
}

// minorRelease is minor m of the SDK's major ("2.7" for 7).
func minorRelease(m int) string {
	major, _, _ := strings.Cut(emq.Version, ".")
	return major + "." + strconv.Itoa(m)
}

// policyToken opens a policy action's confirmation (query: ?n=K for a cap)
// and returns its form's token.
func policyToken(t *testing.T, base, queue, action, query string) (string, string) {
	t.Helper()
	code, body := get(t, base+"/queue/"+queue+"/policy/"+action+query)
	if code != http.StatusOK {
		t.Fatalf("confirmation of %s = %d\n%s", action, code, body)
	}
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the confirmation of %s has no token:\n%s", action, body)
	}
	return m[1], body
}

// TestPolicyActions: pause, resume and the concurrency cap through their
// confirmations and POSTs, read back through the SDK; refused read-only,
// without the token, with another action's or value's token and from
// another origin; a bad cap refused before any command.
func TestPolicyActions(t *testing.T) {
	w := seed(t, 3, 1)

	// Read-only: no confirmation, every POST refused, nothing changed.
	_, ro := serve(t, w.srv, dashboard.Options{})
	for _, a := range []string{"pause", "resume", "cap?n=2"} {
		if code, _ := get(t, ro.URL+"/queue/orders/policy/"+a); code != http.StatusForbidden {
			t.Errorf("read-only confirmation of %s = %d, want 403", a, code)
		}
	}
	for _, a := range []string{"pause", "resume", "cap"} {
		if resp := post(t, ro.URL+"/queue/orders/policy/"+a, url.Values{"csrf": {"anything"}, "n": {"2"}}); resp.StatusCode != http.StatusForbidden {
			t.Errorf("read-only %s = %d, want 403", a, resp.StatusCode)
		}
	}
	if p := policyOf(t, w, "orders"); p.Paused || p.Concurrency != 0 || p.Requires != 0 {
		t.Fatalf("a read-only dashboard changed the policy: %+v", p)
	}

	_, rw := serve(t, w.srv, dashboard.Options{Actions: true})
	_, body := get(t, rw.URL+"/queue/orders")
	if !strings.Contains(body, `id="pause"`) || !strings.Contains(body, `id="cap-form"`) || strings.Contains(body, `id="resume"`) {
		t.Errorf("the queue page does not offer pause and the cap form:\n%s", body)
	}
	u := rw.URL + "/queue/orders/policy/pause"
	tok, body := policyToken(t, rw.URL, "orders", "pause", "")
	// A pause lays the tripwire that lets 2.7 clients through (the release
	// before the SDK's).
	if !strings.Contains(body, `id="tripwire"`) || !strings.Contains(body, "older than "+minorRelease(sdkMinor()-1)+" is refused on this queue") {
		t.Errorf("the first policy's confirmation does not warn of the tripwire:\n%s", body)
	}
	// The confirmation writes nothing.
	if p := policyOf(t, w, "orders"); p.Paused {
		t.Fatalf("the confirmation paused the queue")
	}
	// Resuming a queue that is not paused: nothing to do, no form.
	if _, body := get(t, rw.URL+"/queue/orders/policy/resume"); !strings.Contains(body, `id="noop"`) || strings.Contains(body, `name="csrf"`) {
		t.Errorf("the confirmation of resuming a running queue:\n%s", body)
	}
	capTok, _ := policyToken(t, rw.URL, "orders", "cap", "?n=2")
	for name, form := range map[string]url.Values{
		"no token": {}, "empty": {"csrf": {""}}, "the cap's token": {"csrf": {capTok}, "n": {"2"}}, "forged": {"csrf": {"9999999999.AAAA"}},
	} {
		if resp := post(t, u, form); resp.StatusCode != http.StatusForbidden {
			t.Errorf("pause with %s = %d, want 403", name, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(url.Values{"csrf": {tok}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site pause = %d, want 403", resp.StatusCode)
	}
	if p := policyOf(t, w, "orders"); p.Paused {
		t.Fatalf("a refused pause paused the queue")
	}

	// Pause: the queue page says so, the overview marks it.
	resp = post(t, u, url.Values{"csrf": {tok}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/queue/orders?changed=pause" {
		t.Fatalf("pause = %d %s, want 303 to the queue page", resp.StatusCode, resp.Header.Get("Location"))
	}
	if p := policyOf(t, w, "orders"); !p.Paused || p.Requires == 0 || p.Leased != 2 {
		t.Errorf("after pause the policy is %+v", p)
	}
	_, body = get(t, rw.URL+resp.Header.Get("Location"))
	if !strings.Contains(body, `id="flash">Paused`) || !strings.Contains(body, `id="policy-state"><span class="pill paused">`) || !strings.Contains(body, `id="resume"`) || strings.Contains(body, `id="pause"`) {
		t.Errorf("the queue page after pause:\n%s", body)
	}
	if _, body := get(t, rw.URL+"/"); !strings.Contains(overviewRows(body)["orders"], `class="pill paused"`) {
		t.Errorf("the overview does not mark the paused queue")
	}
	// Pausing a paused queue: the confirmation says there is nothing to do.
	if _, body := get(t, u); !strings.Contains(body, `id="noop"`) || strings.Contains(body, `id="confirm"`) {
		t.Errorf("the confirmation of pausing a paused queue:\n%s", body)
	}

	// A cap: the token is bound to its value.
	capURL := rw.URL + "/queue/orders/policy/cap"
	tok4, body := policyToken(t, rw.URL, "orders", "cap", "?n=4")
	if !strings.Contains(body, `name="n" value="4"`) || strings.Contains(body, `id="tripwire"`) {
		t.Errorf("the cap's confirmation on a paused queue:\n%s", body)
	}
	if resp := post(t, capURL, url.Values{"csrf": {tok4}, "n": {"5"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cap 5 with cap 4's token = %d, want 403", resp.StatusCode)
	}
	if resp := post(t, capURL, url.Values{"csrf": {tok}, "n": {"4"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cap 4 with pause's token = %d, want 403", resp.StatusCode)
	}
	resp = post(t, capURL, url.Values{"csrf": {tok4}, "n": {"4"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("cap 4 = %d, want 303", resp.StatusCode)
	}
	if p := policyOf(t, w, "orders"); !p.Paused || p.Concurrency != 4 {
		t.Errorf("after cap 4 the policy is %+v", p)
	}
	_, body = get(t, rw.URL+resp.Header.Get("Location"))
	if !strings.Contains(body, `id="flash">Concurrency cap set to 4.`) || !strings.Contains(body, `id="policy-leased">2 / 4<`) || !strings.Contains(body, `id="cap-n" min="0"`) {
		t.Errorf("the queue page after cap 4:\n%s", body)
	}

	// Resume: still capped, the tripwire stays.
	resumeTok, _ := policyToken(t, rw.URL, "orders", "resume", "")
	if resp := post(t, rw.URL+"/queue/orders/policy/resume", url.Values{"csrf": {resumeTok}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("resume = %d, want 303", resp.StatusCode)
	}
	if p := policyOf(t, w, "orders"); p.Paused || p.Concurrency != 4 || p.Requires == 0 {
		t.Errorf("after resume the policy is %+v", p)
	}
	if _, body := get(t, rw.URL+"/"); !strings.Contains(overviewRows(body)["orders"], ">cap 4</span>") || strings.Contains(overviewRows(body)["orders"], "pill paused") {
		t.Errorf("the overview after resume:\n%s", overviewRows(body)["orders"])
	}
	// Cap 0 removes the cap, the last policy: the classic layout is back.
	tok0, _ := policyToken(t, rw.URL, "orders", "cap", "?n=0")
	resp = post(t, capURL, url.Values{"csrf": {tok0}, "n": {"0"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("cap 0 = %d, want 303", resp.StatusCode)
	}
	if p := policyOf(t, w, "orders"); p.Paused || p.Concurrency != 0 || p.Requires != 0 || p.Leased != 2 {
		t.Errorf("after cap 0 the policy is %+v", p)
	}
	orders, _ := w.c.Queue("orders")
	if typ, err := w.srv.Do("TYPE", orders.Keys().Active); err != nil || typ != "zset" {
		t.Errorf("after the last policy the active key is a %q (%v)", typ, err)
	}
	if _, body := get(t, rw.URL+resp.Header.Get("Location")); !strings.Contains(body, `id="flash">Concurrency cap removed.`) || !strings.Contains(body, `id="policy-tripwire">none`) {
		t.Errorf("the queue page after cap 0:\n%s", body)
	}

	// A bad cap, an unknown action: 400 before any command.
	tok2, _ := policyToken(t, rw.URL, "orders", "cap", "?n=2")
	for _, n := range []string{"-1", "x", "", " ", "1.5", "2147483648", "99999999999999999999", "+2", "0x10", "2e3"} {
		before := commands(t, w.srv)
		if code, body := get(t, rw.URL+"/queue/orders/policy/cap?n="+url.QueryEscape(n)); code != http.StatusBadRequest {
			t.Errorf("the confirmation of cap %q = %d, want 400\n%s", n, code, body)
		}
		if resp := post(t, capURL, url.Values{"csrf": {tok2}, "n": {n}}); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("cap %q = %d, want 400", n, resp.StatusCode)
		}
		if after := commands(t, w.srv); after != before {
			t.Errorf("cap %q sent %d commands", n, after-before)
		}
	}
	for _, p := range []string{"/queue/orders/policy/explode", "/queue/Orders/policy/pause", "/queue/a%7Bb%7D/policy/cap?n=2"} {
		before := commands(t, w.srv)
		if code, _ := get(t, rw.URL+p); code != http.StatusBadRequest {
			t.Errorf("GET %s = %d, want 400", p, code)
		}
		if resp := post(t, rw.URL+strings.Split(p, "?")[0], url.Values{"csrf": {tok2}, "n": {"2"}}); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("POST %s = %d, want 400", p, resp.StatusCode)
		}
		if after := commands(t, w.srv); after != before {
			t.Errorf("%s sent %d commands", p, after-before)
		}
	}
	if p := policyOf(t, w, "orders"); p.Concurrency != 0 || p.Paused {
		t.Errorf("the refused caps changed the policy: %+v", p)
	}
}

// TestPolicyRefusals: the SDK's typed refusals are shown as the other
// actions show theirs, 409 with the message, never a 500, and change
// nothing: a deployment whose bundle record names a release below the
// tripwire's floor, and a queue whose tripwire names a later minor.
func TestPolicyRefusals(t *testing.T) {
	w := seed(t, 2, 0)
	_, rw := serve(t, w.srv, dashboard.Options{Actions: true})

	// A 2.0.0 client once fenced here: laying a tripwire is refused.
	if _, err := w.srv.Do("HSET", wire.KeyBundle, "2.0.0", "x"); err != nil {
		t.Fatal(err)
	}
	for _, a := range []struct{ action, query string }{{"pause", ""}, {"cap", "?n=3"}} {
		tok, _ := policyToken(t, rw.URL, "orders", a.action, a.query)
		form := url.Values{"csrf": {tok}, "n": {"3"}}
		resp, err := noRedirect.PostForm(rw.URL+"/queue/orders/policy/"+a.action, form)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusConflict || !strings.Contains(errorText(body), "2.0.0") || !strings.Contains(errorText(body), wire.ActiveTripwireFloor) {
			t.Errorf("%s with a 2.0.0 client recorded = %d: %s", a.action, resp.StatusCode, errorText(body))
		}
	}
	if p := policyOf(t, w, "orders"); p.Paused || p.Concurrency != 0 || p.Requires != 0 {
		t.Errorf("a refused pause changed the policy: %+v", p)
	}
	if _, err := w.srv.Do("HDEL", wire.KeyBundle, "2.0.0"); err != nil {
		t.Fatal(err)
	}

	// A tripwire of a later minor at emails' active key: set_policy
	// refuses with EMQPOLICY and writes nothing.
	emails, _ := w.c.Queue("emails")
	later := "99 99"
	if _, err := w.srv.Do("SET", emails.Keys().Active, later); err != nil {
		t.Fatal(err)
	}
	tok, _ := policyToken(t, rw.URL, "emails", "pause", "")
	resp, err := noRedirect.PostForm(rw.URL+"/queue/emails/policy/pause", url.Values{"csrf": {tok}})
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(errorText(body), wire.ClassPolicy) {
		t.Errorf("pause under a later minor's tripwire = %d: %s", resp.StatusCode, errorText(body))
	}
	if v, err := w.srv.Do("GET", emails.Keys().Active); err != nil || v != later {
		t.Errorf("the tripwire is now %q (%v)", v, err)
	}
	if n, err := w.srv.Do("EXISTS", emails.Keys().Policy); err != nil || n != "0" {
		t.Errorf("the refused pause wrote the policy record: EXISTS = %q (%v)", n, err)
	}
}

// sdkMinor is the SDK's minor (8 for 2.8.0).
func sdkMinor() int {
	n, _ := strconv.Atoi(strings.SplitN(emq.Version, ".", 3)[1])
	return n
}

// readAll reads and closes resp's body.
func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPolicyRate: the rate limit (echomq 2.8.0) through its confirmation
// and POST, read back through the SDK: the queue page and the overview
// show it (the limit, its period, when the next start is admitted), the
// token is bound to the value, a limit on a paused queue warns that the
// tripwire moves, removing it is the classic layout back; refused
// read-only; a bad limit or period refused before any command.
func TestPolicyRate(t *testing.T) {
	w := seed(t, 3, 1)
	ctx := ctxT(t)

	_, ro := serve(t, w.srv, dashboard.Options{})
	if code, _ := get(t, ro.URL+"/queue/orders/policy/rate?n=20&per=500"); code != http.StatusForbidden {
		t.Errorf("read-only confirmation of a rate limit = %d, want 403", code)
	}
	if resp := post(t, ro.URL+"/queue/orders/policy/rate", url.Values{"csrf": {"anything"}, "n": {"20"}, "per": {"500"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("read-only rate limit = %d, want 403", resp.StatusCode)
	}
	if _, body := get(t, ro.URL+"/queue/orders"); !strings.Contains(body, `id="policy-rate">none<`) || !strings.Contains(body, `id="policy-admit"><span class="mute">no limit`) || strings.Contains(body, `id="rate-form"`) {
		t.Errorf("the read-only page of a queue without a rate limit:\n%s", body)
	}

	_, rw := serve(t, w.srv, dashboard.Options{Actions: true})
	if _, body := get(t, rw.URL+"/queue/orders"); !strings.Contains(body, `id="rate-form"`) || !strings.Contains(body, `id="rate-per" min="1"`) {
		t.Errorf("the queue page does not offer the rate form:\n%s", body)
	}
	rateURL := rw.URL + "/queue/orders/policy/rate"
	tok, body := policyToken(t, rw.URL, "orders", "rate", "?n=20&per=500")
	if !strings.Contains(body, "to 20 per 500ms?") || !strings.Contains(body, `name="per" value="500"`) || !strings.Contains(body, `id="tripwire"`) || !strings.Contains(body, "older than "+release()+" is refused a claim") {
		t.Errorf("the first rate limit's confirmation:\n%s", body)
	}
	if p := policyOf(t, w, "orders"); p.RateLimit != 0 {
		t.Fatalf("the confirmation set the limit: %+v", p)
	}
	for name, form := range map[string]url.Values{
		"another period": {"csrf": {tok}, "n": {"20"}, "per": {"600"}}, "another limit": {"csrf": {tok}, "n": {"21"}, "per": {"500"}}, "no token": {"n": {"20"}, "per": {"500"}},
	} {
		if resp := post(t, rateURL, form); resp.StatusCode != http.StatusForbidden {
			t.Errorf("rate limit with %s = %d, want 403", name, resp.StatusCode)
		}
	}
	resp := post(t, rateURL, url.Values{"csrf": {tok}, "n": {"20"}, "per": {"500"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/queue/orders?changed=rate&n=20&per=500" {
		t.Fatalf("rate limit = %d %s, want 303 to the queue page", resp.StatusCode, resp.Header.Get("Location"))
	}
	if p := policyOf(t, w, "orders"); p.RateLimit != 20 || p.RatePeriod != 500*time.Millisecond || p.Requires != sdkMinor() || p.Paused || p.Concurrency != 0 {
		t.Errorf("after the rate limit the policy is %+v", p)
	}
	_, body = get(t, rw.URL+resp.Header.Get("Location"))
	for _, want := range []string{`id="flash">Rate limit set to 20 per 500ms.`, `id="policy-rate">20 per 500ms<`, `id="policy-admit">admitted now<`,
		`<span class="pill rate">rate 20/500ms</span></h1>`, `id="rate-n" min="0" max="1000000" step="1" required value="20"`, `id="rate-per" min="1" max="86400000" step="1" required value="500"`,
		`id="policy-tripwire">` + release() + ` and later clients only`} {
		if !strings.Contains(body, want) {
			t.Errorf("the queue page after the rate limit lacks %q", want)
		}
	}
	if _, body := get(t, rw.URL+"/"); !strings.Contains(overviewRows(body)["orders"], `class="pill rate"`) || !strings.Contains(overviewRows(body)["orders"], ">rate 20/500ms</span>") {
		t.Errorf("the overview's rate-limited orders row:\n%s", overviewRows(body)["orders"])
	}
	if _, body := get(t, rateURL+"?n=20&per=500"); !strings.Contains(body, `id="noop"`) || !strings.Contains(body, "already limited to 20 per 500ms") || strings.Contains(body, `name="csrf"`) {
		t.Errorf("the confirmation of the limit in force:\n%s", body)
	}

	// One start an hour, one lease taken: the next start is an hour off.
	orders, _ := w.c.Queue("orders")
	if _, err := orders.SetRateLimit(ctx, 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	if js, err := orders.ClaimIDs(ctx, time.Minute, w.ids["orders"][emq.StatePending]); err != nil || len(js) != 1 {
		t.Fatalf("a claim under a limit of 1 per hour leased %d (%v); want 1", len(js), err)
	}
	if _, body := get(t, rw.URL+"/queue/orders"); !strings.Contains(body, `id="policy-rate">1 per 1h0m0s<`) || !strings.Contains(body, `id="policy-admit">admitted in 59m`) {
		t.Errorf("the queue page with the next start an hour off:\n%s", body)
	}

	// A limit on a paused queue moves its tripwire: 2.7 claimers are
	// refused from then on.
	emails, _ := w.c.Queue("emails")
	if _, err := emails.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if _, body := policyToken(t, rw.URL, "emails", "rate", "?n=5&per=1000"); !strings.Contains(body, `id="tripwire-moves"`) || strings.Contains(body, `id="tripwire"`) {
		t.Errorf("the confirmation of a rate limit on a paused queue:\n%s", body)
	}

	// Removing it: n 0, no period; the classic layout is back.
	tok0, body := policyToken(t, rw.URL, "orders", "rate", "?n=0")
	if !strings.Contains(body, "Remove the rate limit of queue") || !strings.Contains(body, `id="confirm">Remove the limit<`) {
		t.Errorf("the confirmation of removing the limit:\n%s", body)
	}
	resp = post(t, rateURL, url.Values{"csrf": {tok0}, "n": {"0"}, "per": {""}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("removing the limit = %d, want 303", resp.StatusCode)
	}
	if p := policyOf(t, w, "orders"); p.RateLimit != 0 || p.RatePeriod != 0 || p.Requires != 0 {
		t.Errorf("after removing the limit the policy is %+v", p)
	}
	if typ, err := w.srv.Do("TYPE", orders.Keys().Active); err != nil || typ != "zset" {
		t.Errorf("after the last policy the active key is a %q (%v)", typ, err)
	}
	if _, body := get(t, rw.URL+resp.Header.Get("Location")); !strings.Contains(body, `id="flash">Rate limit removed.`) || !strings.Contains(body, `id="policy-rate">none<`) {
		t.Errorf("the queue page after removing the limit:\n%s", body)
	}

	// Bad limits and periods: 400 before any command.
	tok2, _ := policyToken(t, rw.URL, "orders", "rate", "?n=2&per=100")
	for _, q := range []url.Values{
		{"n": {"-1"}, "per": {"100"}}, {"n": {"x"}, "per": {"100"}}, {"n": {""}, "per": {"100"}}, {"n": {"1000001"}, "per": {"100"}}, {"n": {"+5"}, "per": {"100"}},
		{"n": {"5"}, "per": {"0"}}, {"n": {"5"}, "per": {"-1"}}, {"n": {"5"}, "per": {"x"}}, {"n": {"5"}, "per": {""}}, {"n": {"5"}, "per": {"86400001"}}, {"n": {"5"}, "per": {"1.5"}}, {"n": {"5"}, "per": {"+100"}},
	} {
		before := commands(t, w.srv)
		if code, body := get(t, rateURL+"?"+q.Encode()); code != http.StatusBadRequest {
			t.Errorf("the confirmation of rate %v = %d, want 400\n%s", q, code, body)
		}
		q.Set("csrf", tok2)
		if resp := post(t, rateURL, q); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("rate %v = %d, want 400", q, resp.StatusCode)
		}
		if after := commands(t, w.srv); after != before {
			t.Errorf("rate %v sent %d commands", q, after-before)
		}
	}
}
