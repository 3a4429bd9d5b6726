package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq/dashboard"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

var idRE = regexp.MustCompile(`/job/([0-9A-Za-z]{14})"`)

// pageIDs are the job ids a set page links to, in order.
func pageIDs(body string) []string {
	var out []string
	for _, m := range idRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

var nextRE = regexp.MustCompile(`rel="next" href="([^"]+)"`)

func TestOverviewQueueAndJobPages(t *testing.T) {
	w := seed(t, 30, 4)
	_, hs := serve(t, w.srv, dashboard.Options{PageSize: 7})

	code, body := get(t, hs.URL+"/")
	if code != http.StatusOK {
		t.Fatalf("GET / = %d\n%s", code, body)
	}
	for _, q := range []string{"orders", "emails", "reports.v2"} {
		if !strings.Contains(body, `data-queue="`+q+`"`) {
			t.Errorf("the overview lacks queue %s", q)
		}
	}
	// orders: its sizes in Sets order, linked to the set pages.
	for _, s := range emq.Sets() {
		want := len(w.ids["orders"][s.State()])
		if !strings.Contains(body, `/queue/orders/set/`+string(s)+`">`+itoa(want)+`</a>`) {
			t.Errorf("the overview does not show %d in orders' %s", want, s)
		}
	}
	if strings.Contains(body, "<script") {
		t.Errorf("the overview has a script")
	}
	if !strings.Contains(body, "read-only") {
		t.Errorf("the overview does not say it is read-only")
	}

	if _, body := get(t, hs.URL+"/?refresh=10"); !strings.Contains(body, `<meta http-equiv="refresh" content="10">`) {
		t.Errorf("?refresh=10 does not reload the page")
	}
	code, body = get(t, hs.URL+"/queue/orders")
	if code != http.StatusOK || !strings.Contains(body, "oldest pending") || !strings.Contains(body, "<svg") {
		t.Fatalf("GET /queue/orders = %d\n%s", code, body)
	}
	if !strings.Contains(body, w.ids["orders"][emq.StatePending][0].String()) {
		t.Errorf("the queue page does not name the oldest pending job")
	}

	// Browse every set page by page: newest first, every id once.
	for _, s := range emq.Sets() {
		want := slices.Clone(w.ids["orders"][s.State()])
		if s.Lex() {
			slices.Reverse(want)
		}
		var got []string
		// Scored sets by 2 (the page size rides along in the next link).
		next, per := "/queue/orders/set/"+string(s), 7
		if !s.Lex() {
			next, per = next+"?n=2", 2
		}
		for pages := 0; next != ""; pages++ {
			if pages > 10 {
				t.Fatalf("%s: more than 10 pages", s)
			}
			code, body := get(t, hs.URL+next)
			if code != http.StatusOK {
				t.Fatalf("GET %s = %d\n%s", next, code, body)
			}
			ids := pageIDs(body)
			if len(ids) > per {
				t.Fatalf("GET %s: %d rows, page size %d", next, len(ids), per)
			}
			got = append(got, ids...)
			next = ""
			if m := nextRE.FindStringSubmatch(body); m != nil {
				next = strings.ReplaceAll(m[1], "&amp;", "&")
			}
		}
		if s.Lex() {
			var ws []string
			for _, id := range want {
				ws = append(ws, id.String())
			}
			if !slices.Equal(got, ws) {
				t.Errorf("%s pages: %v, want newest first %v", s, got, ws)
			}
		} else {
			var ws []string
			for _, id := range want {
				ws = append(ws, id.String())
			}
			slices.Sort(ws)
			slices.Sort(got)
			if !slices.Equal(got, ws) {
				t.Errorf("%s pages: %v, want %v", s, got, ws)
			}
		}
	}

	// A job: state, attempts, mint time, JSON payload.
	dead := w.ids["orders"][emq.StateDead][0]
	code, body = get(t, hs.URL+"/queue/orders/job/"+dead.String())
	if code != http.StatusOK {
		t.Fatalf("job page = %d\n%s", code, body)
	}
	for _, want := range []string{`id="state">` + string(emq.StateDead), "attempts</dt><dd>1", dead.Time().UTC().Format("2006-01-02 15:04:05"), "&#34;order&#34;: 0", "JSON"} {
		if !strings.Contains(body, want) {
			t.Errorf("the job page lacks %q", want)
		}
	}
	if strings.Contains(body, `class="action"`) {
		t.Errorf("a read-only dashboard offers actions")
	}
	// A scheduled job shows its run-at; a binary payload shows as hex.
	sched := w.ids["orders"][emq.StateScheduled][0]
	if _, body := get(t, hs.URL+"/queue/orders/job/"+sched.String()); !strings.Contains(body, "run at") {
		t.Errorf("a scheduled job's page lacks its run-at")
	}
	bin := w.ids["emails"][emq.StatePending][0]
	if _, body := get(t, hs.URL+"/queue/emails/job/"+bin.String()); !strings.Contains(body, "00 ff 68 69 7f") || !strings.Contains(body, "hex") {
		t.Errorf("a binary payload is not shown as hex:\n%s", body)
	}
	// Search redirects to the job; an unknown job is a 404.
	resp, err := noRedirect.Get(hs.URL + "/queue/orders/search?id=" + url.QueryEscape(" "+dead.String()+" "))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/queue/orders/job/"+dead.String() {
		t.Errorf("search = %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	// Search every queue: one match redirects, none is a 404, a bad id a 400.
	resp, err = noRedirect.Get(hs.URL + "/search?id=" + bin.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/queue/emails/job/"+bin.String() {
		t.Errorf("search of every queue = %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	unknown, _ := emq.NewID(emq.WorkKind, time.Now(), 0, 1)
	if code, body := get(t, hs.URL+"/search?id="+unknown.String()); code != http.StatusNotFound || !strings.Contains(body, "No queue of the 3 searched") {
		t.Errorf("search of an unknown id = %d\n%s", code, body)
	}
	if code, _ := get(t, hs.URL+"/queue/orders/job/"+unknown.String()); code != http.StatusNotFound {
		t.Errorf("an unknown job = %d, want 404", code)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestPayloadCapAndMask(t *testing.T) {
	w := seed(t, 3, 1)
	id := w.ids["orders"][emq.StatePending][0]
	_, hs := serve(t, w.srv, dashboard.Options{PayloadCap: 20})
	_, body := get(t, hs.URL+"/queue/orders/job/"+id.String())
	if !strings.Contains(body, ", cut)") {
		t.Errorf("a payload over the cap is not said to be cut")
	}
	if pre := body[strings.Index(body, `id="payload"`):]; strings.Contains(pre[:strings.Index(pre, "</pre>")], "items") {
		t.Errorf("the payload was shown past the cap of 20 bytes")
	}

	_, hs = serve(t, w.srv, dashboard.Options{Mask: dashboard.MaskJSONFields("card")})
	_, body = get(t, hs.URL+"/queue/orders/job/"+id.String())
	if strings.Contains(body, "4111") || !strings.Contains(body, "&#34;***&#34;") || !strings.Contains(body, "masked") {
		t.Errorf("the masked field shows:\n%s", body)
	}
	if !strings.Contains(body, "&#34;customer&#34;: &#34;ORD0") {
		t.Errorf("masking hid the fields it was not asked to")
	}
	_, hs = serve(t, w.srv, dashboard.Options{Mask: dashboard.MaskAll})
	if _, body = get(t, hs.URL+"/queue/orders/job/"+id.String()); strings.Contains(body, "ORD0") {
		t.Errorf("MaskAll shows the payload")
	}
}

// Hostile queue names, sets, ids, cursors and page sizes in URLs are
// answered 400 before any command is sent.
func TestHostileInputRefusedBeforeAnyCommand(t *testing.T) {
	w := seed(t, 3, 1)
	_, hs := serve(t, w.srv, dashboard.Options{Actions: true})
	good := w.ids["orders"][emq.StatePending][0].String()
	paths := []string{
		"/queue/Orders", "/queue/a%7Bb%7D", "/queue/a:b", "/queue/a%20b", "/queue/-x", "/queue/a%0Ab",
		"/queue/" + strings.Repeat("a", 65), "/queue/%E2%9C%93",
		"/queue/a%7Bb%7D/set/" + string(emq.SetPending), "/queue/orders/set/nope", "/queue/orders/set/%2A",
		"/queue/orders/set/" + string(emq.SetPending) + "?after=" + url.QueryEscape("*"),
		"/queue/orders/set/" + string(emq.SetPending) + "?after=" + url.QueryEscape("(JOB0"),
		"/queue/orders/set/" + string(emq.SetActive) + "?after=" + url.QueryEscape("x/"+good),
		"/queue/orders/set/" + string(emq.SetActive) + "?after=" + url.QueryEscape("1/ORD0NgWEfAEJf"),
		"/queue/orders/set/" + string(emq.SetPending) + "?n=0", "/queue/orders/set/" + string(emq.SetPending) + "?n=100000",
		"/queue/orders/set/" + string(emq.SetPending) + "?n=-1",
		"/queue/orders/job/JOB0NgWEfAEJf", "/queue/orders/job/JOBzzzzzzzzzzz", "/queue/orders/job/job0NgWEfAEJfs",
		"/queue/orders/job/" + url.PathEscape("JOB0NgWEfAEJf!"), "/queue/Bad/job/" + good,
		"/queue/orders/search?id=nope", "/queue/orders/search?id=",
		"/queue/orders/job/JOB0NgWEfAEJf/revive", "/queue/orders/job/" + good + "/explode",
		"/?page=0", "/?page=x", "/?refresh=1", "/queue/orders?refresh=x", "/search?id=JOB0NgWEfAEJf", "/search?id=" + url.QueryEscape("*"),
	}
	for _, p := range paths {
		before := commands(t, w.srv)
		code, body := get(t, hs.URL+p)
		if code != http.StatusBadRequest {
			t.Errorf("GET %s = %d, want 400\n%s", p, code, body)
		}
		if after := commands(t, w.srv); after != before {
			t.Errorf("GET %s sent %d commands", p, after-before)
		}
	}
	for _, p := range []string{"/queue/Bad/job/" + good + "/revive", "/queue/orders/job/JOB0NgWEfAEJf/revive", "/queue/orders/job/" + good + "/explode"} {
		before := commands(t, w.srv)
		resp, err := http.PostForm(hs.URL+p, url.Values{"csrf": {"x"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("POST %s = %d, want 400", p, resp.StatusCode)
		}
		if after := commands(t, w.srv); after != before {
			t.Errorf("POST %s sent %d commands", p, after-before)
		}
	}
}

// confirmToken opens an action's confirmation page and returns its token.
func confirmToken(t *testing.T, base, queue string, id emq.ID, action string) string {
	t.Helper()
	code, body := get(t, base+"/queue/"+queue+"/job/"+id.String()+"/"+action)
	if code != http.StatusOK {
		t.Fatalf("confirmation of %s = %d\n%s", action, code, body)
	}
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the confirmation of %s has no token:\n%s", action, body)
	}
	return m[1]
}

func post(t *testing.T, u string, form url.Values) *http.Response {
	t.Helper()
	resp, err := noRedirect.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func TestActions(t *testing.T) {
	w := seed(t, 3, 3)
	ctx := ctxT(t)
	orders, _ := w.c.Queue("orders")
	dead := w.ids["orders"][emq.StateDead]
	state := func(id emq.ID) emq.State {
		info, _, err := orders.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return info.State
	}

	// Read-only (the default): no confirmation, every POST refused.
	_, ro := serve(t, w.srv, dashboard.Options{})
	if code, _ := get(t, ro.URL+"/queue/orders/job/"+dead[0].String()+"/revive"); code != http.StatusForbidden {
		t.Errorf("read-only confirmation = %d, want 403", code)
	}
	if resp := post(t, ro.URL+"/queue/orders/job/"+dead[0].String()+"/revive", url.Values{"csrf": {"anything"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("read-only revive = %d, want 403", resp.StatusCode)
	}
	if state(dead[0]) != emq.StateDead {
		t.Fatalf("a read-only dashboard revived a job")
	}

	_, rw := serve(t, w.srv, dashboard.Options{Actions: true})
	u := rw.URL + "/queue/orders/job/" + dead[0].String() + "/revive"
	// Without a token, with a token of another action or job, forged.
	wrongAction := confirmToken(t, rw.URL, "orders", dead[0], "purge")
	wrongJob := confirmToken(t, rw.URL, "orders", dead[1], "revive")
	for name, form := range map[string]url.Values{
		"no token": {}, "empty": {"csrf": {""}}, "other action": {"csrf": {wrongAction}},
		"other job": {"csrf": {wrongJob}}, "forged": {"csrf": {"9999999999.AAAA"}},
	} {
		if resp := post(t, u, form); resp.StatusCode != http.StatusForbidden {
			t.Errorf("revive with %s = %d, want 403", name, resp.StatusCode)
		}
	}
	if state(dead[0]) != emq.StateDead {
		t.Fatalf("a refused revive revived the job")
	}
	// From another origin, even with a token.
	tok := confirmToken(t, rw.URL, "orders", dead[0], "revive")
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(url.Values{"csrf": {tok}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site revive = %d, want 403", resp.StatusCode)
	}
	// With its token: revived, and the job page says so.
	resp = post(t, u, url.Values{"csrf": {tok}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("revive = %d, want 303", resp.StatusCode)
	}
	if state(dead[0]) != emq.StatePending {
		t.Errorf("after revive the job is %s", state(dead[0]))
	}
	if _, body := get(t, rw.URL+resp.Header.Get("Location")); !strings.Contains(body, "revived") || !strings.Contains(body, `id="state">`+string(emq.StatePending)) {
		t.Errorf("the job page after revive:\n%s", body)
	}
	// The same again: the job is no longer dead, nothing is done.
	if resp := post(t, u, url.Values{"csrf": {tok}}); resp.StatusCode != http.StatusConflict {
		t.Errorf("revive of a pending job = %d, want 409", resp.StatusCode)
	}
	// Purge a dead job; run a scheduled one now.
	resp = post(t, rw.URL+"/queue/orders/job/"+dead[1].String()+"/purge", url.Values{"csrf": {confirmToken(t, rw.URL, "orders", dead[1], "purge")}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("purge = %d", resp.StatusCode)
	}
	if _, ok, _ := orders.Get(ctx, dead[1]); ok {
		t.Errorf("the purged job has a row")
	}
	sched := w.ids["orders"][emq.StateScheduled][0]
	if _, body := get(t, rw.URL+"/queue/orders/job/"+sched.String()); !strings.Contains(body, "/run-now") {
		t.Errorf("a scheduled job's page offers no run-now")
	}
	resp = post(t, rw.URL+"/queue/orders/job/"+sched.String()+"/run-now", url.Values{"csrf": {confirmToken(t, rw.URL, "orders", sched, "run-now")}})
	if resp.StatusCode != http.StatusSeeOther || state(sched) != emq.StatePending {
		t.Errorf("run-now = %d, the job %s", resp.StatusCode, state(sched))
	}
}

func TestBasicAuth(t *testing.T) {
	w := seed(t, 1, 0)
	_, hs := serve(t, w.srv, dashboard.Options{Auth: dashboard.BasicAuth("ops", "s3cret")})
	if code, _ := get(t, hs.URL+"/"); code != http.StatusUnauthorized {
		t.Errorf("without credentials = %d, want 401", code)
	}
	for _, pw := range []string{"wrong", "s3cret"} {
		req, _ := http.NewRequest(http.MethodGet, hs.URL+"/", nil)
		req.SetBasicAuth("ops", pw)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := http.StatusOK
		if pw == "wrong" {
			want = http.StatusUnauthorized
		}
		if resp.StatusCode != want {
			t.Errorf("password %q = %d, want %d", pw, resp.StatusCode, want)
		}
	}
}

func TestSampleThroughput(t *testing.T) {
	w := seed(t, 20, 0)
	ctx := ctxT(t)
	d, hs := serve(t, w.srv, dashboard.Options{Queues: []string{"orders", "emails"}})
	if err := d.Sample(ctx); err != nil {
		t.Fatal(err)
	}
	// Claim 5 of the 20 pending, push 3 more: 5 left pending.
	orders, _ := w.c.Queue("orders")
	if _, err := orders.ClaimMany(ctx, time.Minute, 5); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		id, _ := w.c.Mint(emq.WorkKind)
		if _, err := orders.Push(ctx, id, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	if err := d.Sample(ctx); err != nil {
		t.Fatal(err)
	}
	ps := d.Points("orders")
	if len(ps) != 2 || ps[0].LeftPending != -1 || ps[1].LeftPending != 5 {
		t.Fatalf("points %+v, want the second to count 5 left pending", ps)
	}
	if got := ps[1].Sizes[slices.Index(emq.Sets(), emq.SetPending)]; got != 18 {
		t.Errorf("pending at the second sample = %d, want 18", got)
	}
	if len(d.Points("reports.v2")) != 0 {
		t.Errorf("a queue outside Options.Queues was sampled")
	}
	if code, body := get(t, hs.URL+"/queue/orders"); code != http.StatusOK || !strings.Contains(body, "<polyline") {
		t.Errorf("the queue page draws no line after two samples:\n%s", body)
	}
	// A queue outside Options.Queues is refused.
	if code, _ := get(t, hs.URL+"/queue/reports.v2"); code != http.StatusBadRequest {
		t.Errorf("a queue outside Options.Queues = %d, want 400", code)
	}

	// Completions reported through Metrics become the completed rate.
	d.Metrics().Add(emq.Completed, "orders", 4)
	if err := d.Sample(ctx); err != nil {
		t.Fatal(err)
	}
	d.Metrics().Add(emq.Completed, "orders", 6)
	if err := d.Sample(ctx); err != nil {
		t.Fatal(err)
	}
	ps = d.Points("orders")
	if got := ps[len(ps)-1].Completed; got != 6 {
		t.Errorf("completed at the last sample = %d, want 6", got)
	}
}

// The overview pages its queue list; the list is found with SCAN, never
// KEYS.
func TestOverviewPagesQueues(t *testing.T) {
	w := seed(t, 1, 0)
	ctx := ctxT(t)
	for i := range 12 {
		q, _ := w.c.Queue("extra-" + itoa(i))
		id, _ := w.c.Mint(emq.WorkKind)
		if _, err := q.Push(ctx, id, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	_, hs := serve(t, w.srv, dashboard.Options{QueuesPerPage: 5, ListEvery: 50 * time.Millisecond})
	var seen []string
	next := "/"
	re := regexp.MustCompile(`data-queue="([^"]+)"`)
	for next != "" {
		_, body := get(t, hs.URL+next)
		for _, m := range re.FindAllStringSubmatch(body, -1) {
			seen = append(seen, m[1])
		}
		next = ""
		if m := nextRE.FindStringSubmatch(body); m != nil {
			next = m[1]
		}
	}
	if len(seen) != 15 || !slices.IsSorted(seen) {
		t.Errorf("the overview pages showed %v, want 15 queues sorted", seen)
	}
	// A queue created later shows once the list is older than ListEvery:
	// the page that finds it stale starts a listing in the background.
	q, _ := w.c.Queue("zz-new")
	id, _ := w.c.Mint(emq.WorkKind)
	if _, err := q.Push(ctx, id, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	found := false
	for deadline := time.Now().Add(10 * time.Second); !found && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		_, body := get(t, hs.URL+"/?page=4")
		found = strings.Contains(body, `data-queue="zz-new"`)
	}
	if !found {
		t.Errorf("a new queue never showed on the overview")
	}
	if n := commandCalls(t, w.srv, "keys"); n != 0 {
		t.Errorf("the dashboard sent KEYS %d times", n)
	}
}

// Mounted under a path with http.StripPrefix, every link carries Base.
func TestMountedUnderABase(t *testing.T) {
	w := seed(t, 3, 1)
	d, err := dashboard.New(dashboard.Options{Client: observe(t, w.srv), Base: "/ops/emq/"})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ops/emq/", http.StripPrefix("/ops/emq", d))
	hs := httptest.NewServer(mux)
	defer hs.Close()
	_, body := get(t, hs.URL+"/ops/emq/")
	hrefs := regexp.MustCompile(`href="([^"]+)"`).FindAllStringSubmatch(body, -1)
	if len(hrefs) < 5 {
		t.Fatalf("the overview has %d links", len(hrefs))
	}
	for _, h := range hrefs {
		if !strings.HasPrefix(h[1], "/ops/emq/") {
			t.Errorf("link %q outside the base", h[1])
			continue
		}
		if code, _ := get(t, hs.URL+h[1]); code != http.StatusOK {
			t.Errorf("link %s = %d", h[1], code)
		}
	}
}

// On a keyspace without a version record an observing client refuses to
// write: an action answers 409 and changes nothing.
func TestActionOnAnUnfencedKeyspace(t *testing.T) {
	w := seed(t, 1, 1)
	if _, err := w.srv.Do("DEL", wire.KeyVersion); err != nil {
		t.Fatal(err)
	}
	_, hs := serve(t, w.srv, dashboard.Options{Actions: true})
	dead := w.ids["orders"][emq.StateDead][0]
	tok := confirmToken(t, hs.URL, "orders", dead, "revive")
	if resp := post(t, hs.URL+"/queue/orders/job/"+dead.String()+"/revive", url.Values{"csrf": {tok}}); resp.StatusCode != http.StatusConflict {
		t.Errorf("revive on an unfenced keyspace = %d, want 409", resp.StatusCode)
	}
	orders, _ := w.c.Queue("orders")
	if info, _, _ := orders.Get(ctxT(t), dead); info.State != emq.StateDead {
		t.Errorf("the job is %s", info.State)
	}
}

// A job whose row and sets disagree is shown with a warning.
func TestJobPageShowsABrokenInvariant(t *testing.T) {
	w := seed(t, 2, 0)
	_, hs := serve(t, w.srv, dashboard.Options{})
	id := w.ids["orders"][emq.StatePending][0]
	orders, _ := w.c.Queue("orders")
	if _, err := w.srv.Do("ZADD", orders.Keys().Dead, "0", id.String()); err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, hs.URL+"/queue/orders/job/"+id.String()); !strings.Contains(body, "the sets disagree with the row") {
		t.Errorf("no warning for a job in two sets")
	}
	orphan, _ := w.c.Mint(emq.WorkKind)
	if _, err := w.srv.Do("ZADD", orders.Keys().Dead, "0", orphan.String()); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, hs.URL+"/queue/orders/job/"+orphan.String()); code != http.StatusNotFound || !strings.Contains(body, "has no row") {
		t.Errorf("no warning for an id without a row: %d", code)
	}
	if _, body := get(t, hs.URL+"/queue/orders/job/"+w.ids["orders"][emq.StatePending][1].String()); strings.Contains(body, `class="warn"`) {
		t.Errorf("a warning for a sound job")
	}
}
