package dashboard_test

import (
	"bytes"
	"context"
	"flag"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/echomq/echomq/dashboard"
	"github.com/echomq/echomq/sdk/go/emq"
)

var screenshot = flag.String("screenshot", "", "write the overview's screenshot to this PNG file (../docs/dashboard.png)")

// chromium finds the headless browser, failing with the install hint.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium on PATH: install it with `apt-get install chromium` (./test.sh does)")
	return ""
}

// TestBrowser drives the dashboard in a real headless Chromium against a
// real redis-server: the overview, a queue paused, capped and resumed from
// its page (echomq 2.7.0) and rate-limited (2.8.0) with the overview's
// badges, paging past the
// first page of a set, a job page, a revive through its confirmation, and
// actions refused in a read-only dashboard and without the CSRF token.
func TestBrowser(t *testing.T) {
	exe := chromium(t)
	w := seed(t, 60, 3)
	ctx := ctxT(t)
	orders, _ := w.c.Queue("orders")
	settled := settle24(t, w) // echomq 2.4.0: progress, a kept result, counters

	d, rw := serve(t, w.srv, dashboard.Options{Actions: true, PageSize: 20})
	_, ro := serve(t, w.srv, dashboard.Options{})
	// A few samples with work in between, so that the charts have lines.
	for i := range 4 {
		if err := d.Sample(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := orders.ClaimMany(ctx, time.Hour, 3+i); err != nil {
			t.Fatal(err)
		}
		for range 2 * i {
			id, _ := w.c.Mint(emq.WorkKind)
			if _, err := orders.Push(ctx, id, []byte(`{"late":true}`)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(150 * time.Millisecond)
	}
	if err := d.Sample(ctx); err != nil {
		t.Fatal(err)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", "new"),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 860),
	)
	actx, cancelA := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	bctx, cancelT := context.WithTimeout(bctx, 50*time.Second)
	defer cancelT()
	start := time.Now()

	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(css(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return strings.TrimSpace(s)
	}

	// The overview: every queue, and its screenshot.
	do("overview", chromedp.Navigate(rw.URL+"/"), chromedp.WaitVisible(css("#queues")))
	overview := text("#queues")
	for _, q := range []string{"orders", "emails", "reports.v2"} {
		if !strings.Contains(overview, q) {
			t.Errorf("the overview in the browser lacks %s:\n%s", q, overview)
		}
	}
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#queues .pill.paused, #queues .pill.cap").length`)); err != nil || n != 0 {
		t.Errorf("the overview marks %d queues with a policy before any, %v", n, err)
	}

	// Queue policies (echomq 2.7.0): pause orders from its page, cap emails
	// at 2 with the form, and limit it to 30 starts a second (2.8.0); the
	// overview marks both (and its screenshot shows them).
	do("pause: the confirmation", chromedp.Navigate(rw.URL+"/queue/orders"), chromedp.WaitVisible(css("#policy")),
		chromedp.Click(css("#pause")), chromedp.WaitVisible(css("#confirm")))
	if warn := text("#tripwire"); !strings.Contains(warn, "tripwire") {
		t.Errorf("the pause's confirmation warns %q", warn)
	}
	if p, _ := orders.Policy(ctx); p.Paused {
		t.Fatalf("the pause's confirmation paused the queue")
	}
	do("pause", chromedp.Click(css("#confirm")), chromedp.WaitVisible(css("#flash")))
	if state, flash := text("#policy-state"), text("#flash"); state != "paused" || !strings.HasPrefix(flash, "Paused") {
		t.Errorf("after pause the queue page shows %q, %q", state, flash)
	}
	if p, err := orders.Policy(ctx); err != nil || !p.Paused {
		t.Errorf("after pause in the browser the policy is %+v, %v", p, err)
	}
	do("cap emails", chromedp.Navigate(rw.URL+"/queue/emails"), chromedp.WaitVisible(css("#cap-form")),
		chromedp.SetValue(css("#cap-n"), "2"), chromedp.Click(css("#set-cap")), chromedp.WaitVisible(css("#confirm")),
		chromedp.Click(css("#confirm")), chromedp.WaitVisible(css("#flash")))
	if c, flash := text("#policy-cap"), text("#flash"); c != "2" || flash != "Concurrency cap set to 2." {
		t.Errorf("after the cap the queue page shows %q, %q", c, flash)
	}
	emails, _ := w.c.Queue("emails")
	if p, err := emails.Policy(ctx); err != nil || p.Concurrency != 2 || p.Paused {
		t.Errorf("after the cap in the browser emails' policy is %+v, %v", p, err)
	}
	// A rate limit (echomq 2.8.0) on emails with the form: 30 per second.
	do("rate-limit emails", chromedp.Navigate(rw.URL+"/queue/emails"), chromedp.WaitVisible(css("#rate-form")),
		chromedp.SetValue(css("#rate-n"), "30"), chromedp.SetValue(css("#rate-per"), "1000"), chromedp.Click(css("#set-rate")), chromedp.WaitVisible(css("#confirm")))
	if b := text("#confirm"); b != "Set the limit to 30 per 1s" {
		t.Errorf("the rate limit's confirmation button says %q", b)
	}
	do("rate-limit emails: confirm", chromedp.Click(css("#confirm")), chromedp.WaitVisible(css("#flash")))
	if rl, admit, flash := text("#policy-rate"), text("#policy-admit"), text("#flash"); rl != "30 per 1s" || admit != "admitted now" || flash != "Rate limit set to 30 per 1s." {
		t.Errorf("after the rate limit the queue page shows %q, %q, %q", rl, admit, flash)
	}
	if p, err := emails.Policy(ctx); err != nil || p.RateLimit != 30 || p.RatePeriod != time.Second || p.Concurrency != 2 {
		t.Errorf("after the rate limit in the browser emails' policy is %+v, %v", p, err)
	}
	do("the overview's badges", chromedp.Navigate(rw.URL+"/"), chromedp.WaitVisible(css("#queues")))
	if b := text(`tr[data-queue="orders"] .pill.paused`); b != "paused" {
		t.Errorf("orders' badge shows %q", b)
	}
	if b := text(`tr[data-queue="emails"] .pill.cap`); b != "cap 2" {
		t.Errorf("emails' badge shows %q", b)
	}
	if b := text(`tr[data-queue="emails"] .pill.rate`); b != "rate 30/1s" {
		t.Errorf("emails' rate badge shows %q", b)
	}
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 300 {
		t.Errorf("the screenshot is %v", b)
	}
	out := filepath.Join(t.TempDir(), "dashboard.png")
	if *screenshot != "" {
		out = *screenshot
	}
	if err := os.WriteFile(out, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("overview screenshot: %s (%d bytes)", out, len(shot))

	// Resume orders from its page: the badge is gone.
	do("resume", chromedp.Navigate(rw.URL+"/queue/orders"), chromedp.WaitVisible(css("#policy")),
		chromedp.Click(css("#resume")), chromedp.WaitVisible(css("#confirm")),
		chromedp.Click(css("#confirm")), chromedp.WaitVisible(css("#flash")))
	if state, flash := text("#policy-state"), text("#flash"); state != "running" || !strings.HasPrefix(flash, "Resumed") {
		t.Errorf("after resume the queue page shows %q, %q", state, flash)
	}
	if p, err := orders.Policy(ctx); err != nil || p.Paused || p.Requires != 0 {
		t.Errorf("after resume in the browser the policy is %+v, %v", p, err)
	}
	do("the overview after resume", chromedp.Navigate(rw.URL+"/"), chromedp.WaitVisible(css("#queues")))
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll('tr[data-queue="orders"] .pill.paused').length`)); err != nil || n != 0 {
		t.Errorf("after resume the overview still marks orders paused (%d, %v)", n, err)
	}

	// Browse orders' pending set past its first page, then open a job.
	do("the pending set", chromedp.Click(css(`tr[data-queue="orders"] a[href$="/set/`+string(emq.SetPending)+`"]`)), chromedp.WaitVisible(css("#jobs")))
	first := text("#jobs tbody tr:first-child td:first-child")
	do("the next page", chromedp.Click(css(`a[rel="next"]`)), chromedp.WaitVisible(css("#newest")))
	second := text("#jobs tbody tr:first-child td:first-child")
	if first == second || !(second < first) {
		t.Errorf("the second page starts at %s, after a first page starting at %s: want older", second, first)
	}
	do("a job", chromedp.Click(css("#jobs tbody tr:first-child td:first-child a")), chromedp.WaitVisible(css("#state")))
	if state := text("#state"); state != string(emq.StatePending) {
		t.Errorf("the job page shows state %q", state)
	}
	if p := text("#payload"); !strings.Contains(p, `"customer"`) {
		t.Errorf("the job page shows payload %q", p)
	}

	// The queue page's settle counters (echomq 2.4.0), and the job pages'
	// progress and kept result.
	do("the queue page", chromedp.Navigate(rw.URL+"/queue/orders"), chromedp.WaitVisible(css("#counters svg")))
	if n := text("#total-" + string(emq.EventCompleted)); n != "1" {
		t.Errorf("the queue page counts %q completed; want 1", n)
	}
	if n := text("#total-" + string(emq.EventRetried)); n != "1" {
		t.Errorf("the queue page counts %q retried; want 1", n)
	}
	do("a running job", chromedp.Navigate(rw.URL+"/queue/orders/job/"+settled.running.String()), chromedp.WaitVisible(css("#progress")))
	if p := text("#progress"); p != testProgress {
		t.Errorf("the running job's page shows progress %q", p)
	}
	do("a completed job", chromedp.Navigate(rw.URL+"/queue/orders/job/"+settled.completed.String()), chromedp.WaitVisible(css("#result")))
	if r, a := text("#result"), text("#completed-attempt"); !strings.Contains(r, `"INV-7"`) || a != "1" {
		t.Errorf("the completed job's page shows result %q, attempt %q", r, a)
	}

	// Revive a dead job through its confirmation: it shows pending.
	dead := w.ids["orders"][emq.StateDead]
	do("the dead job", chromedp.Navigate(rw.URL+"/queue/orders/job/"+dead[0].String()), chromedp.WaitVisible(css("#state")))
	if state := text("#state"); state != string(emq.StateDead) {
		t.Fatalf("the dead job shows %q", state)
	}
	do("revive", chromedp.Click(css(`a.action[href$="/revive"]`)), chromedp.WaitVisible(css("#confirm")),
		chromedp.Click(css("#confirm")), chromedp.WaitVisible(css(".flash")))
	if state, flash := text("#state"), text(".flash"); state != string(emq.StatePending) || !strings.Contains(flash, "revived") {
		t.Errorf("after revive the page shows %q, %q", state, flash)
	}
	if info, _, _ := orders.Get(ctx, dead[0]); info.State != emq.StatePending {
		t.Errorf("after revive in the browser the job is %s", info.State)
	}

	// Refused: in a read-only dashboard, and without the CSRF token.
	do("read-only", chromedp.Navigate(ro.URL+"/queue/orders/job/"+dead[1].String()+"/revive"), chromedp.WaitVisible(css("#error")))
	if refusal := text("#error"); !strings.Contains(refusal, "read-only") {
		t.Errorf("the read-only dashboard answered %q", refusal)
	}
	do("no token", chromedp.Navigate(rw.URL+"/queue/orders/job/"+dead[1].String()+"/revive"), chromedp.WaitVisible(css("#confirm")),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('input[name=csrf]').remove()`),
		chromedp.Click(css("#confirm")), chromedp.WaitVisible(css("#error")))
	if refusal := text("#error"); !strings.Contains(refusal, "CSRF") {
		t.Errorf("a revive without its token answered %q", refusal)
	}
	if info, _, _ := orders.Get(ctx, dead[1]); info.State != emq.StateDead {
		t.Errorf("a revive without its token left the job %s", info.State)
	}
	// Queue names never wrap, and the page uses the window's width.
	do("layout", chromedp.Navigate(rw.URL+"/"), chromedp.WaitVisible(css("#queues")))
	nowrap, err := chromedp.Run(bctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('tr[data-queue="reports.v2"] td.q')).whiteSpace`))
	if err != nil {
		t.Fatal(err)
	}
	mainWidth, err := chromedp.Run(bctx, chromedp.Evaluate[float64](`document.querySelector("main").getBoundingClientRect().width`))
	if err != nil {
		t.Fatal(err)
	}
	if nowrap != "nowrap" {
		t.Errorf("the overview's queue names have white-space %q; want nowrap", nowrap)
	}
	if mainWidth < 1200 {
		t.Errorf("the page's main column is %.0f px wide in a 1280 px window", mainWidth)
	}

	// The dead set's page: counts on the set links, relative times with the
	// absolute one as a tooltip, a payload preview; then revive every dead
	// job through the dry run.
	deadSet := string(emq.SetDead)
	do("the dead set", chromedp.Navigate(rw.URL+"/queue/orders/set/"+deadSet), chromedp.WaitVisible(css("#jobs")))
	if n := text(`#sets a[data-set="` + deadSet + `"] .count`); n != "2" {
		t.Errorf("the dead set's link counts %q; want 2 (3 buried, 1 revived)", n)
	}
	if n := text(`#sets a[data-set="` + string(emq.SetActive) + `"] .count`); n == "" || n == "0" {
		t.Errorf("the active set's link counts %q; want the seeded active jobs", n)
	}
	if minted := text("#jobs tbody tr:first-child td.t"); !strings.HasSuffix(minted, " ago") {
		t.Errorf("the minted column shows %q; want a relative time", minted)
	}
	tip, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector("#jobs tbody tr:first-child td.t").title`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(tip, "UTC") {
		t.Errorf("the minted column's tooltip is %q; want the absolute time", tip)
	}
	if p := text("#jobs tbody tr:first-child td.preview"); !strings.Contains(p, `"order":`) {
		t.Errorf("the payload preview shows %q", p)
	}
	// The error column: the last failure's class and the first line of its
	// error.
	if e := text("#jobs tbody tr:first-child td.err"); !strings.Contains(e, string(emq.FailureClassError)) || !strings.Contains(e, "card declined for order") || strings.Contains(e, "billing.go") {
		t.Errorf("the dead set's error column shows %q; want the class and the first line", e)
	}
	if *screenshot != "" {
		setShot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		sp := strings.TrimSuffix(*screenshot, ".png") + "-dead.png"
		if err := os.WriteFile(sp, setShot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("dead set screenshot: %s", sp)
	}
	// A dead job's page: its failure history and when it died.
	do("a dead job's history", chromedp.Navigate(rw.URL+"/queue/orders/job/"+dead[2].String()), chromedp.WaitVisible(css("#failures")))
	info, _, err := orders.Get(ctx, dead[2])
	if err != nil || len(info.Failures) != 1 {
		t.Fatalf("Get(dead) = %+v, %v", info, err)
	}
	if h := text("#failures tbody"); !strings.Contains(h, string(emq.FailureClassError)) || !strings.Contains(h, "billing-7:4242") || !strings.Contains(h, "card declined for order 2") || !strings.Contains(h, "billing.go:42") {
		t.Errorf("the failure history shows %q", h)
	}
	if at := text("#died-at"); at != info.DiedAt.UTC().Format("2006-01-02 15:04:05.000 UTC") {
		t.Errorf("died at shows %q; want %v", at, info.DiedAt.UTC())
	}
	do("back to the dead set", chromedp.Navigate(rw.URL+"/queue/orders/set/"+deadSet), chromedp.WaitVisible(css("#jobs")))
	do("revive all: the dry run", chromedp.Click(css("#bulk-revive")), chromedp.WaitVisible(css("#dry-run")))
	if would := text("#would"); would != "2" {
		t.Errorf("the dry run would revive %q jobs; want 2", would)
	}
	if ids := text("#preview"); !strings.Contains(ids, dead[1].String()) || !strings.Contains(ids, dead[2].String()) {
		t.Errorf("the dry run lists %q; want %s and %s", ids, dead[1], dead[2])
	}
	if n, _ := orders.Size(ctx, emq.SetDead); n != 2 {
		t.Errorf("the dry run changed the dead set: %d jobs", n)
	}
	do("revive all", chromedp.Click(css("#confirm")), chromedp.WaitVisible(css("#flash")))
	if flash := text("#flash"); !strings.HasPrefix(flash, "2 ") || !strings.Contains(flash, "revived") {
		t.Errorf("after revive all the page says %q", flash)
	}
	for _, id := range dead[1:] {
		if info, _, _ := orders.Get(ctx, id); info.State != emq.StatePending {
			t.Errorf("after revive all, %s is %s", id, info.State)
		}
	}
	if n := text(`#sets a[data-set="` + deadSet + `"] .count`); n != "0" {
		t.Errorf("after revive all the dead set's link counts %q", n)
	}
	// The job schedulers (echomq 2.6.0): the queue page's card, the
	// schedulers page, and a scheduler's last run.
	scheds := seedSchedulers(t, w, 4)
	do("the queue page's schedulers", chromedp.Navigate(rw.URL+"/queue/orders"), chromedp.WaitVisible(css("#job-schedulers #schedulers")))
	row := func(id, cell string) string { return text(`#schedulers tr[data-scheduler="` + id + `"] .` + cell) }
	if n := row("hourly-sync", "sched-count"); n != "2" {
		t.Errorf("the queue page counts %q runs of hourly-sync; want 2", n)
	}
	do("the schedulers page", chromedp.Click(css("#all-schedulers")), chromedp.WaitVisible(css("main #schedulers")))
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#schedulers tbody tr[data-scheduler]").length`)); err != nil || n != len(scheds) {
		t.Errorf("the schedulers page shows %d schedulers, %v; want %d", n, err, len(scheds))
	}
	if st := row("paused-digest", "sched-state"); st != "paused" {
		t.Errorf("the paused scheduler's state shows %q", st)
	}
	if nx := row("never", "sched-next"); nx != "none" {
		t.Errorf("the ended scheduler's next slot shows %q", nx)
	}
	if sc := row("nightly-report", "sched-schedule"); sc != "30 2 * * * in Europe/Berlin" {
		t.Errorf("the cron scheduler's schedule shows %q", sc)
	}
	do("a scheduler's last run", chromedp.Click(css(`#schedulers tr[data-scheduler="hourly-sync"] .sched-last a`)), chromedp.WaitVisible(css("#state")))
	if state := text("#state"); state != string(emq.StatePending) {
		t.Errorf("the last run's job page shows state %q", state)
	}
	t.Logf("browser steps took %v", time.Since(start).Round(time.Millisecond))
}
