package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
)

// What the pages show of echomq 2.6.0's job schedulers: the first of a
// queue's schedulers on the queue page, all of them page by page on the
// queue's schedulers page.

// queueSchedulers is how many schedulers the queue page shows.
const queueSchedulers = 10

// schedulerRuns is how many next runs a scheduler's row shows.
const schedulerRuns = 3

// schedulerRow is one job scheduler as the pages show it.
type schedulerRow struct {
	ID string
	// Schedule is the schedule in words: the cron expression and its zone,
	// or the interval and its anchor.
	Schedule string
	Missed   string
	Paused   bool
	// Next is its stored next slot; zero when the schedule has no further
	// slot (Ended). Due reports that it is not after the server's time of
	// the read.
	Next, Now  time.Time
	Due, Ended bool
	// NextRuns are the next slots of its schedule from Next (the SDK's
	// NextRuns); NextErr why they could not be computed.
	NextRuns []time.Time
	NextErr  string
	Runs     int64
	LastSlot time.Time
	LastID   emq.ID
	LastHref string
	Template *Output
}

// schedulerRowOf is info's row; base and queue make the last run's link.
func (d *Dashboard) schedulerRowOf(queue string, info emq.SchedulerInfo) schedulerRow {
	row := schedulerRow{ID: info.ID, Paused: info.Paused, Next: info.Next, Now: info.Now, Runs: info.Runs, LastSlot: info.LastSlot, LastID: info.LastID,
		Ended: info.Next.IsZero(), Due: !info.Next.IsZero() && !info.Next.After(info.Now), Template: d.output(queue, info.Template)}
	if info.Cron != "" {
		row.Schedule = fmt.Sprintf("%s in %s", info.Cron, info.TZ)
	} else {
		row.Schedule = fmt.Sprintf("every %v from %s", info.Every, stamp(info.Start))
	}
	row.Missed = fmt.Sprintf("%s, grace %v", info.Missed, info.Grace)
	if info.Missed == emq.MissedBackfill {
		row.Missed += fmt.Sprintf(", at most %d", info.Backfill)
	}
	if !row.Ended {
		runs, err := emq.NextRuns(info.Schedule, info.Next, schedulerRuns)
		if err != nil {
			row.NextErr = err.Error()
		}
		row.NextRuns = runs
	}
	if !info.LastID.IsZero() {
		row.LastHref = d.opt.Base + "/queue/" + queue + "/job/" + info.LastID.String()
	}
	return row
}

// schedulerRows reads a page of q's schedulers (next-slot order) as rows.
func (d *Dashboard) schedulerRows(ctx context.Context, q *emq.Queue, offset, n int) ([]schedulerRow, error) {
	infos, err := q.ListSchedulers(ctx, offset, n)
	if err != nil {
		return nil, err
	}
	rows := make([]schedulerRow, len(infos))
	for i, info := range infos {
		rows[i] = d.schedulerRowOf(q.Name(), info)
	}
	return rows, nil
}

// schedulersCard is what the queue page shows of q's schedulers: the first
// queueSchedulers, and whether there are more. A read that fails is
// logged and shown as unavailable: the rest of the page does not need it.
func (d *Dashboard) schedulersCard(ctx context.Context, q *emq.Queue) map[string]any {
	rows, err := d.schedulerRows(ctx, q, 0, queueSchedulers+1)
	if err != nil {
		d.opt.Logger.Warn("dashboard: reading the job schedulers", "queue", q.Name(), "err", err)
		return map[string]any{"SchedulersErr": err.Error()}
	}
	more := len(rows) > queueSchedulers
	if more {
		rows = rows[:queueSchedulers]
	}
	return map[string]any{"Schedulers": rows, "MoreSchedulers": more}
}

// schedulersPath is the path of a queue's schedulers page under the
// queue's.
const schedulersPath = "/job-schedulers"

// schedulersPage lists a queue's job schedulers, a page at a time
// (?offset=N&n=M), in next-slot order, paused and ended ones last.
func (d *Dashboard) schedulersPage(w http.ResponseWriter, r *http.Request) {
	q, err := d.queueOf(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	n, err := d.pageSize(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	n = min(n, emq.MaxSchedulerPage)
	offset := 0
	if v := r.URL.Query().Get("offset"); v != "" {
		if offset, err = strconv.Atoi(v); err != nil || offset < 0 {
			d.fail(w, r, badRequest{fmt.Sprintf("offset %q: a whole number, 0 or more", v)})
			return
		}
	}
	rows, err := d.schedulerRows(r.Context(), q, offset, n)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := map[string]any{"Queue": q.Name(), "Schedulers": rows, "Offset": offset, "N": n, "Path": schedulersPath}
	if offset > 0 {
		data["Prev"] = max(0, offset-n)
	}
	if len(rows) == n {
		data["Next"] = offset + n
	}
	if r.URL.Query().Get("n") != "" {
		data["NextN"] = n
	}
	d.render(w, r, http.StatusOK, "jobschedulers", data)
}
