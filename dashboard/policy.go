package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// What the pages show and change of a queue's policies: a pause and a
// concurrency cap (echomq 2.7.0: emq.Queue.Pause, Resume, SetConcurrency)
// and a rate limit (2.8.0: emq.Queue.SetRateLimit), each through a
// confirmation page whose form carries a CSRF token bound to the action,
// the queue and (for a cap or a limit) the value, like the job actions.

// policyValue is what a cap or a rate limit action sets: N, the cap or the
// limit's starts (0 removes it), and Per, the limit's period.
type policyValue struct {
	N   int
	Per time.Duration
}

// policyAction is something the dashboard does to a queue's policy.
type policyAction struct {
	Name  string // in the URL
	Label string
	Warn  string // what the confirmation says
	// Cap reports that the action takes a cap (the form's n); Rate that
	// it takes a rate limit (the form's n and per, the period in ms).
	Cap, Rate bool
	Do        func(ctx context.Context, q *emq.Queue, v policyValue) (emq.QueuePolicy, error)
	// Noop reports that the action would change nothing on a queue with
	// policy p.
	Noop func(p emq.QueuePolicy, v policyValue) bool
	// Lays reports that the action would lay the queue's tripwire: its
	// first policy.
	Lays func(p emq.QueuePolicy, v policyValue) bool
}

var policyActions = []policyAction{
	{Name: "pause", Label: "Pause",
		Warn: "Pause this queue: from their next claim on, the workers of every client lease none of its jobs. Producers keep enqueueing, and the jobs leased now run to their end.",
		Do:   func(ctx context.Context, q *emq.Queue, _ policyValue) (emq.QueuePolicy, error) { return q.Pause(ctx) },
		Noop: func(p emq.QueuePolicy, _ policyValue) bool { return p.Paused },
		Lays: func(p emq.QueuePolicy, _ policyValue) bool { return p.Requires == 0 }},
	{Name: "resume", Label: "Resume",
		Warn: "Resume this queue: the workers lease its jobs again (up to its concurrency cap, if it has one), and an idle worker is woken when jobs are pending.",
		Do:   func(ctx context.Context, q *emq.Queue, _ policyValue) (emq.QueuePolicy, error) { return q.Resume(ctx) },
		Noop: func(p emq.QueuePolicy, _ policyValue) bool { return !p.Paused },
		Lays: func(emq.QueuePolicy, policyValue) bool { return false }},
	{Name: "cap", Label: "Set the concurrency cap", Cap: true,
		Warn: "Cap how many of this queue's jobs are leased at once, across every worker of every client; 0 removes the cap. Jobs leased beyond a lowered cap run to their end; raising or removing it wakes an idle worker when jobs are pending.",
		Do: func(ctx context.Context, q *emq.Queue, v policyValue) (emq.QueuePolicy, error) {
			return q.SetConcurrency(ctx, v.N)
		},
		Noop: func(p emq.QueuePolicy, v policyValue) bool { return p.Concurrency == v.N },
		Lays: func(p emq.QueuePolicy, v policyValue) bool { return p.Requires == 0 && v.N > 0 }},
	{Name: "rate", Label: "Set the rate limit", Rate: true,
		Warn: "Limit how many of this queue's jobs are started (leased) in any window of the period, across every worker of every client, paced one start every period / limit; 0 removes the limit. A job the limit holds back stays pending, never failed; setting, changing or removing the limit wakes an idle worker when jobs are pending. While the queue has a rate limit, the claims of every 2.7 client are refused on it (its settles still go through).",
		Do: func(ctx context.Context, q *emq.Queue, v policyValue) (emq.QueuePolicy, error) {
			return q.SetRateLimit(ctx, v.N, v.Per)
		},
		Noop: func(p emq.QueuePolicy, v policyValue) bool {
			return p.RateLimit == v.N && (v.N == 0 || p.RatePeriod == v.Per)
		},
		Lays: func(p emq.QueuePolicy, v policyValue) bool { return p.Requires == 0 && v.N > 0 }},
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

// The rate limit bounds the form takes (Queue.SetRateLimit's).
const (
	maxRateLimit    = 1000000
	maxRatePeriodMS = 24 * 60 * 60 * 1000
)

// parseRate checks a rate limit from a form or a query: n a whole number
// from 0 (no limit) to maxRateLimit, and, when n is not 0, per a period in
// whole milliseconds from 1 to maxRatePeriodMS.
func parseRate(n, per string) (policyValue, error) {
	n, per = strings.TrimSpace(n), strings.TrimSpace(per)
	v, err := strconv.Atoi(n)
	if err != nil || v < 0 || v > maxRateLimit || n[0] == '+' {
		return policyValue{}, badRequest{fmt.Sprintf("rate limit %q: a whole number from 0 (no limit) to %d", n, maxRateLimit)}
	}
	if v == 0 {
		return policyValue{}, nil
	}
	ms, err := strconv.Atoi(per)
	if err != nil || ms < 1 || ms > maxRatePeriodMS || per[0] == '+' {
		return policyValue{}, badRequest{fmt.Sprintf("rate period %q: a whole number of milliseconds from 1 to %d", per, maxRatePeriodMS)}
	}
	return policyValue{N: v, Per: time.Duration(ms) * time.Millisecond}, nil
}

// valueOf is the value an action's request carries in fields n (and per,
// for a rate limit) (the query of its confirmation, the form of its POST),
// with the target its token is bound to; the zero value and no error for
// an action that takes none.
func valueOf(a policyAction, get func(string) string) (policyValue, string, error) {
	switch {
	case a.Cap:
		n, err := parseCap(get("n"))
		return policyValue{N: n}, strconv.Itoa(n), err
	case a.Rate:
		v, err := parseRate(get("n"), get("per"))
		return v, strconv.Itoa(v.N) + "/" + strconv.FormatInt(v.Per.Milliseconds(), 10), err
	}
	return policyValue{}, "", nil
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
	v, target, err := valueOf(a, r.URL.Query().Get)
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
		"Queue": q.Name(), "Action": a, "Policy": p, "N": v.N, "Per": v.Per, "PerMS": v.Per.Milliseconds(),
		"Noop": a.Noop(p, v), "Lays": a.Lays(p, v), "Release": sdkRelease(), "Floor": wire.ActiveTripwireFloor,
		// A first rate limit on a queue whose tripwire lets 2.7 claimers
		// through moves it: from then on their claims are refused.
		"Moves": a.Rate && v.N > 0 && p.RateLimit == 0 && p.Requires > 0 && p.Requires < sdkMinor(),
		// The release before the SDK's (2.7 for 2.8): the least a pause's
		// or a cap's tripwire lets through, and the claimers a rate
		// limit's refuses while letting their settles through.
		"Claimers": release(sdkMinor() - 1),
		"Token":    d.tokens.issue(d.now(), "policy-"+a.Name, q.Name(), target),
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
	v, target, err := valueOf(a, r.PostForm.Get)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if !d.confirmed(w, r, "policy-"+a.Name, q.Name(), target) {
		return
	}
	p, err := a.Do(r.Context(), q, v)
	d.opt.Logger.Info("dashboard: policy action", "action", a.Name, "queue", q.Name(), "n", v.N, "per", v.Per,
		"paused", p.Paused, "concurrency", p.Concurrency, "rate_limit", p.RateLimit, "rate_period", p.RatePeriod, "err", err, "remote", r.RemoteAddr)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	target = d.opt.Base + "/queue/" + q.Name() + "?changed=" + a.Name
	switch {
	case a.Cap:
		target += "&n=" + strconv.Itoa(v.N)
	case a.Rate:
		target += "&n=" + strconv.Itoa(v.N) + "&per=" + strconv.FormatInt(v.Per.Milliseconds(), 10)
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
	case "rate":
		v, err := parseRate(r.URL.Query().Get("n"), r.URL.Query().Get("per"))
		switch {
		case err != nil:
			return ""
		case v.N == 0:
			return "Rate limit removed."
		default:
			return fmt.Sprintf("Rate limit set to %d per %v.", v.N, v.Per)
		}
	}
	return ""
}

// policyCard is the queue page's policy: read with emq.Queue.Policy (the
// pause, the cap and the leased jobs in one read), the forms that change
// it when actions are enabled, and the flash of the last change.
func (d *Dashboard) policyCard(r *http.Request, q *emq.Queue) map[string]any {
	data := map[string]any{"PolicyActions": d.opt.Actions, "Flash": policyFlash(r), "MaxCap": maxCap, "MaxRate": maxRateLimit, "MaxRatePeriodMS": maxRatePeriodMS}
	p, err := q.Policy(r.Context())
	if err != nil {
		d.opt.Logger.Warn("dashboard: reading the policy", "queue", q.Name(), "err", err)
		data["PolicyErr"] = err.Error()
		return data
	}
	data["Policy"] = p
	data["RatePeriodMS"] = p.RatePeriod.Milliseconds()
	if p.RateLimit == 0 {
		data["RatePeriodMS"] = 1000 // the form's default period
	}
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

// sdkRelease is the SDK's major and minor ("2.8"): the least release a
// tripwire the dashboard lays lets through.
func sdkRelease() string {
	major, rest, _ := strings.Cut(emq.Version, ".")
	minor, _, _ := strings.Cut(rest, ".")
	return major + "." + minor
}

// sdkMinor is the SDK's minor (8 for 2.8.0).
func sdkMinor() int {
	_, rest, _ := strings.Cut(emq.Version, ".")
	minor, _, _ := strings.Cut(rest, ".")
	n, _ := strconv.Atoi(minor)
	return n
}
