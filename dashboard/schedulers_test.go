package dashboard_test

import (
	"fmt"
	"html"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq/dashboard"
	"github.com/echomq/echomq/sdk/go/emq"
)

// seedSchedulers upserts n job schedulers on queue orders (echomq 2.6.0):
// a cron in a zone whose template holds a card number, an interval from an
// hour ago that has fired, a paused one, one whose schedule has no slot
// (advanced to none by a tick), and hourly intervals for the rest. It
// returns their records in next-slot order.
func seedSchedulers(t testing.TB, w *world, n int) []emq.SchedulerInfo {
	t.Helper()
	ctx := ctxT(t)
	q, _ := w.c.Queue("orders")
	now := time.Now()
	ups := []struct {
		id string
		s  emq.Schedule
		o  []emq.SchedulerOption
	}{
		{"nightly-report", emq.Schedule{Cron: "30 2 * * *", TZ: "Europe/Berlin"}, []emq.SchedulerOption{emq.WithTemplate([]byte(`{"report":"{scheduler}","card":"4111-1111"}`))}},
		{"hourly-sync", emq.Schedule{Every: time.Hour, Start: now.Add(-time.Hour - time.Minute)}, []emq.SchedulerOption{emq.WithMissed(emq.MissedBackfill), emq.WithBackfill(3), emq.WithGrace(10 * time.Minute)}},
		{"paused-digest", emq.Schedule{Every: time.Minute, Start: now.Add(time.Hour)}, nil},
		{"never", emq.Schedule{Cron: "0 0 30 2 *"}, nil},
	}
	for i := len(ups); i < n; i++ {
		ups = append(ups, struct {
			id string
			s  emq.Schedule
			o  []emq.SchedulerOption
		}{fmt.Sprintf("tenant-%02d", i), emq.Schedule{Every: time.Hour, Start: now.Add(time.Duration(i) * time.Minute)}, nil})
	}
	for _, u := range ups[:n] {
		if _, err := q.UpsertScheduler(ctx, u.id, u.s, u.o...); err != nil {
			t.Fatalf("UpsertScheduler(%q): %v", u.id, err)
		}
	}
	if _, err := q.PauseSchedulers(ctx, "paused-digest"); err != nil {
		t.Fatal(err)
	}
	if fired, err := q.FireDue(ctx, 0); err != nil || len(fired) == 0 {
		t.Fatalf("FireDue = %v, %v", fired, err)
	}
	infos, err := q.ListSchedulers(ctx, 0, emq.MaxSchedulerPage)
	if err != nil || len(infos) != n {
		t.Fatalf("ListSchedulers = %d, %v", len(infos), err)
	}
	return infos
}

var schedRowRE = regexp.MustCompile(`(?s)<tr data-scheduler="([^"]*)">(.*?)</tr>`)

// schedRows are the schedulers rows of a page, by id, in order.
func schedRows(body string) (ids []string, rows map[string]string) {
	rows = map[string]string{}
	for _, m := range schedRowRE.FindAllStringSubmatch(body, -1) {
		id := html.UnescapeString(m[1])
		ids = append(ids, id)
		rows[id] = m[2]
	}
	return ids, rows
}

// TestSchedulersPages: the queue page shows the first ten of a queue's job
// schedulers and links to all of them; the schedulers page pages through
// them in the SDK's next-slot order, each with its schedule, missed policy,
// state, next slot, the next runs the SDK's NextRuns computes, runs and a
// link to the last run's job, and its template masked as payloads are.
func TestSchedulersPages(t *testing.T) {
	w := seed(t, 5, 1)
	infos := seedSchedulers(t, w, 13)
	_, hs := serve(t, w.srv, dashboard.Options{})
	var order []string
	byID := map[string]emq.SchedulerInfo{}
	for _, i := range infos {
		order = append(order, i.ID)
		byID[i.ID] = i
	}

	code, body := get(t, hs.URL+"/queue/orders")
	if code != 200 || !strings.Contains(body, `id="job-schedulers"`) || !strings.Contains(body, `id="all-schedulers"`) {
		t.Fatalf("queue page = %d\n%s", code, body)
	}
	if ids, _ := schedRows(body); !slices.Equal(ids, order[:10]) {
		t.Errorf("the queue page shows schedulers %q; want the first ten %q", ids, order[:10])
	}
	link := regexp.MustCompile(`id="all-schedulers" href="([^"]*)"`).FindStringSubmatch(body)
	if link == nil {
		t.Fatal("no link to the schedulers page")
	}

	// All of them, five a page.
	var got []string
	rows := map[string]string{}
	next := hs.URL + html.UnescapeString(link[1]) + "?n=5"
	for page := 0; next != ""; page++ {
		code, body := get(t, next)
		if code != 200 {
			t.Fatalf("schedulers page %s = %d\n%s", next, code, body)
		}
		ids, rs := schedRows(body)
		got = append(got, ids...)
		for id, r := range rs {
			rows[id] = r
		}
		next = ""
		if m := regexp.MustCompile(`rel="next" href="([^"]*)"`).FindStringSubmatch(body); m != nil {
			next = hs.URL + html.UnescapeString(m[1])
		}
		if page > 5 {
			t.Fatal("the pages do not end")
		}
	}
	if !slices.Equal(got, order) {
		t.Errorf("the pages show %q; the SDK lists %q", got, order)
	}
	for _, id := range order {
		i, r := byID[id], rows[id]
		if !i.Next.IsZero() {
			runs, err := emq.NextRuns(i.Schedule, i.Next, 3)
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, t := range runs {
				s = append(s, t.UTC().Format("2006-01-02 15:04:05.000 UTC"))
			}
			if !strings.Contains(r, strings.Join(s, "<br>")) {
				t.Errorf("%q: the next runs are not NextRuns' %v:\n%s", id, s, r)
			}
		}
		if !strings.Contains(r, html.EscapeString(string(i.Missed))) {
			t.Errorf("%q: the missed policy %s is not shown:\n%s", id, i.Missed, r)
		}
		if i.Runs > 0 && (!strings.Contains(r, `/queue/orders/job/`+i.LastID.String()+`"`) || !strings.Contains(r, fmt.Sprintf(`<td class="n sched-count">%d</td>`, i.Runs))) {
			t.Errorf("%q: the runs and the last run's link are not shown:\n%s", id, r)
		}
	}
	for id, want := range map[string]string{
		"nightly-report": "30 2 * * * in Europe/Berlin",
		"hourly-sync":    ", at most 3",
		"paused-digest":  `<span class="pill class">paused</span>`,
		"never":          `<span class="pill">ended</span>`,
	} {
		if !strings.Contains(rows[id], want) {
			t.Errorf("%q does not show %q:\n%s", id, want, rows[id])
		}
	}
	if h := byID["hourly-sync"]; h.Runs != 2 {
		t.Errorf("the seed's hourly-sync fired %d runs; want 2 (backfill and the slot within its grace)", h.Runs)
	} else if code, _ := get(t, hs.URL+"/queue/orders/job/"+h.LastID.String()); code != 200 {
		t.Errorf("the last run's job page = %d", code)
	}
	if !strings.Contains(rows["nightly-report"], "4111-1111") {
		t.Errorf("the template is not shown:\n%s", rows["nightly-report"])
	}

	// Masked as payloads are.
	_, masked := serve(t, w.srv, dashboard.Options{Mask: dashboard.MaskJSONFields("card")})
	if _, body := get(t, masked.URL+"/queue/orders"+schedulersPathOf(link[1])); strings.Contains(body, "4111-1111") || !strings.Contains(body, "nightly-report") {
		t.Errorf("the masked schedulers page shows the card\n%s", body)
	}
	// A queue without schedulers, and a bad offset.
	if code, body := get(t, hs.URL+"/queue/emails"); code != 200 || !strings.Contains(body, "No job schedulers") || strings.Contains(body, `id="all-schedulers"`) {
		t.Errorf("a queue without schedulers = %d\n%s", code, body)
	}
	for _, bad := range []string{"?offset=-1", "?offset=x", "?n=0"} {
		if code, _ := get(t, hs.URL+"/queue/orders"+schedulersPathOf(link[1])+bad); code != http.StatusBadRequest {
			t.Errorf("schedulers page %s = %d; want 400", bad, code)
		}
	}
}

// schedulersPathOf is the schedulers page's path under its queue's, from
// the queue page's link.
func schedulersPathOf(href string) string {
	_, p, _ := strings.Cut(html.UnescapeString(href), "/queue/orders")
	return p
}
