package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/echomq/echomq/sdk/go/emq"
)

// MaxBulk is the most jobs one bulk action (revive or purge every dead job
// of a queue) handles; a larger dead set takes several.
const MaxBulk = 10_000

// bulkPreview is how many of the ids a bulk action would handle its
// confirmation (the dry run) lists.
const bulkPreview = 20

// bulkChunk is how many dead jobs one ReviveAll call revives.
const bulkChunk = 100

// bulkAction is something the dashboard does to every job of a queue's
// dead set, up to MaxBulk at a time.
type bulkAction struct {
	Name  string // in the URL
	Label string
	From  emq.State // the state of the jobs it handles: the set it acts on
	Warn  string    // what the confirmation says
	Done  string    // what the flash says after it, after the count
	Do    func(ctx context.Context, q *emq.Queue, ids []emq.ID) (int, error)
}

var bulkActions = []bulkAction{
	{Name: "revive", Label: "Revive all", From: emq.StateDead, Warn: "Move every dead job back to the queue, keeping its attempts.",
		Done: "dead jobs revived: they are claimable again", Do: reviveAll},
	{Name: "purge", Label: "Purge all", From: emq.StateDead, Warn: "Delete every dead job for good: its row and its id. This cannot be undone.",
		Done: "dead jobs purged", Do: purgeAll},
}

// bulkOf is the bulk action the request's path names on its set.
func bulkOf(r *http.Request) (bulkAction, error) {
	set, err := parseSet(r.PathValue("set"))
	if err != nil {
		return bulkAction{}, err
	}
	for _, a := range bulkActions {
		if a.Name == r.PathValue("action") && a.From.Set() == set {
			return a, nil
		}
	}
	return bulkAction{}, badRequest{fmt.Sprintf("no bulk action %q on set %s", r.PathValue("action"), set)}
}

// reviveAll revives ids in chunks of bulkChunk, one doorbell ring a chunk,
// and counts the jobs it revived (an id no longer dead is left alone).
func reviveAll(ctx context.Context, q *emq.Queue, ids []emq.ID) (int, error) {
	n := 0
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), bulkChunk)]
		ids = ids[len(chunk):]
		revived, _, err := q.ReviveAll(ctx, chunk)
		for _, ok := range revived {
			if ok {
				n++
			}
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// purgeAll purges ids one by one and counts the jobs it deleted.
func purgeAll(ctx context.Context, q *emq.Queue, ids []emq.ID) (int, error) {
	n := 0
	for _, id := range ids {
		ok, err := q.Purge(ctx, id)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// setIDs returns up to limit ids of q's set s, newest first, and whether
// more remain.
func setIDs(ctx context.Context, q *emq.Queue, s emq.Set, limit int) ([]emq.ID, bool, error) {
	var out []emq.ID
	var after emq.Cursor
	for len(out) < limit {
		ids, next, err := q.Page(ctx, s, after, min(200, limit-len(out)))
		if err != nil {
			return out, false, err
		}
		out = append(out, ids...)
		if next == "" {
			return out, false, nil
		}
		after = next
	}
	return out, true, nil
}

// bulkConfirmPage is the dry run of a bulk action: how many dead jobs it
// would handle and the first of them, with the form that does it.
func (d *Dashboard) bulkConfirmPage(w http.ResponseWriter, r *http.Request) {
	a, err := bulkOf(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if !d.opt.Actions {
		d.readOnly(w, r)
		return
	}
	q, err := d.queueOf(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	size, err := q.Size(r.Context(), a.From.Set())
	if err != nil {
		d.fail(w, r, err)
		return
	}
	ids, _, err := setIDs(r.Context(), q, a.From.Set(), bulkPreview)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	preview := make([]string, len(ids))
	for i, id := range ids {
		preview[i] = id.String()
	}
	d.render(w, r, http.StatusOK, "bulk", map[string]any{
		"Queue": q.Name(), "Set": a.From.Set(), "Action": a, "Size": size, "Would": min(size, int64(MaxBulk)), "Max": int64(MaxBulk),
		"Preview": preview, "More": size > int64(len(preview)),
		"Token": d.tokens.issue(d.now(), "bulk-"+a.Name, q.Name(), string(a.From.Set())),
	})
}

// bulkAct does a bulk action on the dead set as it is when it runs, up to
// MaxBulk jobs, and redirects to the dead set with the count.
func (d *Dashboard) bulkAct(w http.ResponseWriter, r *http.Request) {
	a, err := bulkOf(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	q, err := d.queueOf(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if !d.confirmed(w, r, "bulk-"+a.Name, q.Name(), string(a.From.Set())) {
		return
	}
	ids, more, err := setIDs(r.Context(), q, a.From.Set(), MaxBulk)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	n, err := a.Do(r.Context(), q, ids)
	d.opt.Logger.Info("dashboard: bulk action", "action", a.Name, "queue", q.Name(), "jobs", len(ids), "done", n, "more", more, "err", err, "remote", r.RemoteAddr)
	if n > 0 {
		d.queues.forget()
	}
	if err != nil {
		d.fail(w, r, fmt.Errorf("%s stopped after %d of %d jobs: %w", a.Label, n, len(ids), err))
		return
	}
	http.Redirect(w, r, d.opt.Base+"/queue/"+q.Name()+"/set/"+string(a.From.Set())+"?bulk="+a.Name+"&n="+strconv.Itoa(n), http.StatusSeeOther)
}

// bulkOfQuery is the bulk action a redirect after one names (?bulk=NAME&n=K)
// on set s, for the page's flash.
func bulkOfQuery(r *http.Request, s emq.Set) (bulkAction, error) {
	name := r.URL.Query().Get("bulk")
	if _, err := strconv.Atoi(r.URL.Query().Get("n")); name == "" || err != nil {
		return bulkAction{}, badRequest{"no bulk action done"}
	}
	for _, a := range bulkActions {
		if a.Name == name && a.From.Set() == s {
			return a, nil
		}
	}
	return bulkAction{}, badRequest{fmt.Sprintf("no bulk action %q on set %s", name, s)}
}
