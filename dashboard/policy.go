package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// What the pages show and change of echomq 2.7.0's queue policies: a pause
// and a concurrency cap (emq.Queue.Pause, Resume, SetConcurrency), each
// through a confirmation page whose form carries a CSRF token bound to the
// action, the queue and (for a cap) the value, like the job actions.

// policyAction is something the dashboard does to a queue's policy.
type policyAction struct {
	Name  string // in the URL
	Label string
	Warn  string // what the confirmation says
	// Cap reports that the action takes a cap (the form's n).
	Cap bool
	Do  func(ctx context.Context, q *emq.Queue, n int) (emq.QueuePolicy, error)
	// Noop reports that the action would change nothing on a queue with
	// policy p.
	Noop func(p emq.QueuePolicy, n int) bool
	// Lays reports that the action would lay the queue's tripwire: its
	// first policy.
	Lays func(p emq.QueuePolicy, n int) bool
}

var policyActions = []policyAction{
	{Name: "pause", Label: "Pause",
		Warn: "Pause this queue: from their next claim on, the workers of every client lease none of its jobs. Producers keep enqueueing, and the jobs leased now run to their end.",
		Do:   func(ctx context.Context, q *emq.Queue, _ int) (emq.QueuePolicy, error) { return q.Pause(ctx) },
		Noop: func(p emq.QueuePolicy, _ int) bool { return p.Paused },
		Lays: func(p emq.QueuePolicy, _ int) bool { return p.Requires == 0 }},
	{Name: "resume", Label: "Resume",
		Warn: "Resume this queue: the workers lease its jobs again (up to its concurrency cap, if it has one), and an idle worker is woken when jobs are pending.",
		Do:   func(ctx context.Context, q *emq.Queue, _ int) (emq.QueuePolicy, error) { return q.Resume(ctx) },
		Noop: func(p emq.QueuePolicy, _ int) bool { return !p.Paused },
		Lays: func(emq.QueuePolicy, int) bool { return false }},
	{Name: "cap", Label: "Set the concurrency cap", Cap: true,
		Warn: "Cap how many of this queue's jobs are leased at once, across every worker of every client; 0 removes the cap. Jobs leased beyond a lowered cap run to their end; raising or removing it wakes an idle worker when jobs are pending.",
		Do: func(ctx context.Context, q *emq.Queue, n int) (emq.QueuePolicy, error) {
			return q.SetConcurrency(ctx, n)
		},
		Noop: func(p emq.QueuePolicy, n int) bool { return p.Concurrency == n },
		Lays: func(p emq.QueuePolicy, n int) bool { return p.Requires == 0 && n > 0 }},
}

// maxCap is the largest concurrency cap the form takes.
const maxCap = 1<<31 - 1

// policyOf is the policy action r's path names.
func policyOf(r *http.Request) (policyAction, error) {
	for _, a := range policyActions {
		if a.Name == r.PathValue("action") {
			return a, nil
		}
	}
	return policyAction{}, badRequest{fmt.Sprintf("no policy action %q", r.PathValue("action"))}
}

// parseCap checks a cap from a form or a query: a whole number from 0
// (no cap) to maxCap.
func parseCap(v string) (int, error) {
	v = strings.TrimSpace(v)
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > maxCap || v[0] == '+' {
		return 0, badRequest{fmt.Sprintf("concurrency cap %q: a whole number from 0 (no cap) to %d", v, maxCap)}
	}
	return n, nil
}

// capOf is the cap an action's request carries in field n (the query of
// its confirmation, the form of its POST); 0 and no error for an action
// that takes none.
func capOf(a policyAction, v string) (int, string, error) {
	if !a.Cap {
		return 0, "", nil
	}
	n, err := parseCap(v)
	return n, strconv.Itoa(n), err
}

// policyConfirmPage shows what a policy action would do to the queue's
// policy as it is now, with the form that does it.
func (d *Dashboard) policyConfirmPage(w http.ResponseWriter, r *http.Request) {
	a, err := policyOf(r)
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
	n, target, err := capOf(a, r.URL.Query().Get("n"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	p, err := q.Policy(r.Context())
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "policyconfirm", map[string]any{
		"Queue": q.Name(), "Action": a, "Policy": p, "N": n,
		"Noop": a.Noop(p, n), "Lays": a.Lays(p, n), "Release": sdkRelease(), "Floor": wire.ActiveTripwireFloor,
		"Token": d.tokens.issue(d.now(), "policy-"+a.Name, q.Name(), target),
	})
}

// policyAct does a policy action and redirects to the queue's page, whose
// flash says what was done.
func (d *Dashboard) policyAct(w http.ResponseWriter, r *http.Request) {
	a, err := policyOf(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	q, err := d.queueOf(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if !d.opt.Actions {
		d.readOnly(w, r)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil {
		d.fail(w, r, badRequest{"the form: " + err.Error()})
		return
	}
	n, target, err := capOf(a, r.PostForm.Get("n"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if !d.confirmed(w, r, "policy-"+a.Name, q.Name(), target) {
		return
	}
	p, err := a.Do(r.Context(), q, n)
	d.opt.Logger.Info("dashboard: policy action", "action", a.Name, "queue", q.Name(), "n", n,
		"paused", p.Paused, "concurrency", p.Concurrency, "err", err, "remote", r.RemoteAddr)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	target = d.opt.Base + "/queue/" + q.Name() + "?changed=" + a.Name
	if a.Cap {
		target += "&n=" + strconv.Itoa(n)
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// policyFlash is what the queue page says after a policy action, from the
// query of the redirect (?changed=NAME, and &n=K for a cap).
func policyFlash(r *http.Request) string {
	switch r.URL.Query().Get("changed") {
	case "pause":
		return "Paused: no worker leases this queue's jobs until it is resumed."
	case "resume":
		return "Resumed: the workers lease this queue's jobs again."
	case "cap":
		n, err := parseCap(r.URL.Query().Get("n"))
		switch {
		case err != nil:
			return ""
		case n == 0:
			return "Concurrency cap removed."
		default:
			return fmt.Sprintf("Concurrency cap set to %d.", n)
		}
	}
	return ""
}

// policyCard is the queue page's policy: read with emq.Queue.Policy (the
// pause, the cap and the leased jobs in one read), the forms that change
// it when actions are enabled, and the flash of the last change.
func (d *Dashboard) policyCard(r *http.Request, q *emq.Queue) map[string]any {
	data := map[string]any{"PolicyActions": d.opt.Actions, "Flash": policyFlash(r), "MaxCap": maxCap}
	p, err := q.Policy(r.Context())
	if err != nil {
		d.opt.Logger.Warn("dashboard: reading the policy", "queue", q.Name(), "err", err)
		data["PolicyErr"] = err.Error()
		return data
	}
	data["Policy"] = p
	if p.Requires > 0 {
		data["Requires"] = release(p.Requires)
	}
	return data
}

// release names the minor m of the SDK's major ("2.7" for 7).
func release(m int) string {
	major, _, _ := strings.Cut(emq.Version, ".")
	return major + "." + strconv.Itoa(m)
}

// sdkRelease is the SDK's major and minor ("2.7"): the least release a
// tripwire the dashboard lays lets through.
func sdkRelease() string {
	major, rest, _ := strings.Cut(emq.Version, ".")
	minor, _, _ := strings.Cut(rest, ".")
	return major + "." + minor
}
