// Package dashboard is the operator's web view of an EchoMQ keyspace, an
// http.Handler to embed in a Go service or to run with the emq command
// line (emq dashboard).
//
// It is built on the public Go SDK only. It lists every queue of the
// keyspace (emq.Client.ListQueues: a bounded SCAN, never KEYS) with the
// sizes of its sets, its doorbell and its migration record, the age of
// its oldest pending job and the leases and run-ats that are due; draws
// each queue's backlog and drain over time from samples it takes (Run);
// browses each set newest first with the SDK's stable cursors, so that a
// page costs the same at a million jobs as at ten; finds a job by id; and
// shows a job's state, attempts, mint time, lease deadline or run-at and
// payload (indented JSON when it parses, hex otherwise, cut at a cap).
// From echomq 2.4.0 the queue page also shows the server's settle counters
// (totals, and a chart of the last hour by the minute), and the job page a
// job's last progress report and, once it is completed, its kept
// completion record and result.
//
// From echomq 2.7.0 the overview marks a paused queue and a capped one,
// and the queue page shows its policy: paused or running, its
// concurrency cap and the jobs leased now; from 2.8.0 also its rate limit
// (marked on the overview too) and when the limit admits the next start.
//
// It is read-only unless Options.Actions is set; then a dead job can be
// revived or purged, a scheduled job run now, and a queue paused, resumed,
// capped or rate-limited (emq.Queue.Pause, Resume, SetConcurrency,
// SetRateLimit), each after a
// confirmation page whose form carries a CSRF token bound to that one
// action. Authentication is the embedder's middleware (Options.Auth;
// BasicAuth is one); payloads can be masked (Options.Mask). Pages are
// html/template, with inline CSS and server-rendered SVG charts: nothing
// is loaded from elsewhere, and no page needs JavaScript.
//
// A queue name, set, id or cursor in a URL that is malformed is answered
// with 400 before any command is sent.
package dashboard

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
)

// Options configure a Dashboard. Client is required; every other field has
// a default.
type Options struct {
	// Client reads (and, with Actions, writes) the keyspace. An observing
	// client (emq.Observe) suits: it never fences, and refuses writes to a
	// keyspace of another major.
	Client *emq.Client
	// Queues, when set, are the only queues shown, and the keyspace is not
	// scanned for others.
	Queues []string
	// List bounds the scan that finds the queues (emq.ListOptions);
	// ListEvery is how long a list is reused before the keyspace is
	// scanned again (default 30s).
	List      emq.ListOptions
	ListEvery time.Duration
	// Actions enables revive, purge and run-now, and (echomq 2.7.0) a
	// queue's pause, resume and concurrency cap. Off, the dashboard is
	// read-only: no form is shown and every action is refused with 403.
	Actions bool
	// Auth, when set, wraps every request: the embedder's authentication
	// (BasicAuth, a session check, a reverse proxy's header...).
	Auth func(http.Handler) http.Handler
	// Mask, when set, rewrites a payload before it is shown (MaskAll,
	// MaskJSONFields), and a job's progress report and kept result too
	// (echomq 2.4.0).
	Mask func(queue string, payload []byte) []byte
	// Base is the path the handler is mounted at, without a trailing
	// slash ("" for the root), used in links; mount it with
	// http.StripPrefix(Base, d).
	Base string
	// PageSize is the rows of a set's page (default 25); a request may ask
	// for up to MaxPageSize (default 200).
	PageSize, MaxPageSize int
	// QueuesPerPage is the queues of an overview page (default 50).
	QueuesPerPage int
	// PayloadCap is the most bytes of a payload shown (default 16 KiB).
	PayloadCap int
	// SampleEvery is Run's interval (default 5s); History the samples kept
	// per queue (default 120); MaxSampled the queues sampled (default 100,
	// the first by name).
	SampleEvery time.Duration
	History     int
	MaxSampled  int
	// Logger receives failures (default slog.Default()).
	Logger *slog.Logger
	// Title heads every page (default "EchoMQ").
	Title string
}

// Dashboard is the handler. It is safe for concurrent use.
type Dashboard struct {
	opt     Options
	mux     http.Handler
	pages   map[string]*template.Template
	queues  *queueList
	hist    *history
	metrics *counters
	tokens  csrf
	now     func() time.Time
}

//go:embed templates/*.html
var templateFS embed.FS

// New returns a dashboard for o. It starts nothing: call Run to sample.
func New(o Options) (*Dashboard, error) {
	if o.Client == nil {
		return nil, errors.New("dashboard: Options.Client is nil")
	}
	for _, q := range o.Queues {
		if err := emq.ValidateQueueName(q); err != nil {
			return nil, fmt.Errorf("dashboard: Options.Queues: %w", err)
		}
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.PageSize, 25)
	def(&o.MaxPageSize, 200)
	o.PageSize = min(o.PageSize, o.MaxPageSize)
	def(&o.QueuesPerPage, 50)
	def(&o.PayloadCap, 16<<10)
	def(&o.History, 120)
	def(&o.MaxSampled, 100)
	if o.SampleEvery <= 0 {
		o.SampleEvery = 5 * time.Second
	}
	if o.ListEvery <= 0 {
		o.ListEvery = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Title == "" {
		o.Title = "EchoMQ"
	}
	o.Base = strings.TrimSuffix(o.Base, "/")
	d := &Dashboard{
		opt:     o,
		hist:    &history{keep: o.History, points: map[string][]Point{}, done: map[string]int64{}},
		metrics: newCounters(),
		now:     time.Now,
	}
	d.queues = &queueList{c: o.Client, ttl: o.ListEvery, opts: o.List}
	if o.Queues != nil {
		d.queues.fixed = slices.Sorted(slices.Values(o.Queues))
	}
	d.tokens.key = make([]byte, 32)
	if _, err := rand.Read(d.tokens.key); err != nil {
		return nil, err
	}
	if err := d.parseTemplates(); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", d.overview)
	mux.HandleFunc("GET /search", d.searchAll)
	mux.HandleFunc("GET /queue/{queue}", d.queuePage)
	mux.HandleFunc("GET /queue/{queue}/set/{set}", d.setPage)
	mux.HandleFunc("GET /queue/{queue}/set/{set}/{action}", d.bulkConfirmPage)
	mux.Handle("POST /queue/{queue}/set/{set}/{action}", http.NewCrossOriginProtection().Handler(http.HandlerFunc(d.bulkAct)))
	mux.HandleFunc("GET /queue/{queue}/search", d.search)
	mux.HandleFunc("GET /queue/{queue}"+schedulersPath, d.schedulersPage)
	mux.HandleFunc("GET /queue/{queue}/job/{id}", d.jobPage)
	mux.HandleFunc("GET /queue/{queue}/job/{id}/{action}", d.confirmPage)
	mux.HandleFunc("GET /queue/{queue}/policy/{action}", d.policyConfirmPage)
	mux.Handle("POST /queue/{queue}/policy/{action}", http.NewCrossOriginProtection().Handler(http.HandlerFunc(d.policyAct)))
	mux.Handle("POST /queue/{queue}/job/{id}/{action}", http.NewCrossOriginProtection().Handler(http.HandlerFunc(d.act)))
	var h http.Handler = mux
	if o.Auth != nil {
		h = o.Auth(h)
	}
	d.mux = h
	return d, nil
}

// ServeHTTP serves the dashboard's pages. Any page reloads itself every N
// seconds with ?refresh=N (2 to 3600), without JavaScript.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "same-origin")
	if v := r.URL.Query().Get("refresh"); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 2 || n > 3600 {
			d.fail(w, r, badRequest{fmt.Sprintf("refresh %q: seconds between 2 and 3600", v)})
			return
		}
	}
	d.mux.ServeHTTP(w, r)
}

// Metrics returns an emq.Metrics to pass to emq.Options.Metrics of the
// clients whose workers run in this process: their completions per queue
// are then drawn as the queue's throughput.
func (d *Dashboard) Metrics() emq.Metrics { return d.metrics }

// action is one thing a dashboard can do to a job.
type action struct {
	Name  string // in the URL
	Label string
	// From is the state a job must be in.
	From emq.State
	Do   func(q *emq.Queue, ctx context.Context, id emq.ID) (bool, error)
	Done string // what the flash says after it
	Warn string // what the confirmation says
}

var actions = []action{
	{Name: "revive", Label: "Revive", From: emq.StateDead, Do: (*emq.Queue).Revive,
		Done: "revived: the job is claimable again", Warn: "Move this dead job back to the queue, keeping its attempts."},
	{Name: "purge", Label: "Purge", From: emq.StateDead, Do: (*emq.Queue).Purge,
		Done: "purged: the job is deleted", Warn: "Delete this dead job for good: its row and its id. This cannot be undone."},
	{Name: "run-now", Label: "Run now", From: emq.StateScheduled, Do: (*emq.Queue).RunNow,
		Done: "made claimable now", Warn: "Make this scheduled job claimable now instead of at its run-at."},
}

func actionNamed(name string) (action, bool) {
	for _, a := range actions {
		if a.Name == name {
			return a, true
		}
	}
	return action{}, false
}

// badRequest is an input refused before any command.
type badRequest struct{ msg string }

func (e badRequest) Error() string { return e.msg }

// queueOf checks the {queue} of r's path and returns its handle; nothing
// is sent.
func (d *Dashboard) queueOf(r *http.Request) (*emq.Queue, error) {
	name := r.PathValue("queue")
	if err := emq.ValidateQueueName(name); err != nil {
		return nil, badRequest{err.Error()}
	}
	if d.queues.fixed != nil && !slices.Contains(d.queues.fixed, name) {
		return nil, badRequest{fmt.Sprintf("queue %q is not one of this dashboard's", name)}
	}
	return d.opt.Client.Queue(name)
}

func parseSet(s string) (emq.Set, error) {
	for _, set := range emq.Sets() {
		if string(set) == s {
			return set, nil
		}
	}
	return "", badRequest{fmt.Sprintf("%q is not a set", s)}
}

func parseID(s string) (emq.ID, error) {
	id, err := emq.ParseID(s)
	if err != nil {
		return emq.ID{}, badRequest{err.Error()}
	}
	return id, nil
}

// fail answers err: 400 for input refused before any command, 409 for a
// write the keyspace's version refuses or a queue's policy refuses (its
// tripwire names a later minor, or the deployment records a client below
// the tripwire's floor), 500 (logged) otherwise.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, err error) {
	var br badRequest
	switch {
	case errors.Is(err, emq.ErrTripwireFloor), errors.Is(err, emq.ErrPolicy):
		// Checked before ErrArgument, which the floor's refusal matches too.
		d.render(w, r, http.StatusConflict, "error", map[string]any{"Status": http.StatusConflict, "Message": err.Error()})
	case errors.As(err, &br), errors.Is(err, emq.ErrQueueName), errors.Is(err, emq.ErrID), errors.Is(err, emq.ErrArgument):
		d.render(w, r, http.StatusBadRequest, "error", map[string]any{"Status": http.StatusBadRequest, "Message": err.Error()})
	case errors.As(err, new(*emq.KeyspaceError)):
		// A write refused by an observing client: the keyspace is not of
		// the SDK's major (or has no version record).
		d.render(w, r, http.StatusConflict, "error", map[string]any{"Status": http.StatusConflict, "Message": err.Error()})
	default:
		d.opt.Logger.Error("dashboard: request failed", "path", r.URL.Path, "err", err)
		msg := "The server could not be read; the dashboard's log has the error."
		if strings.Contains(err.Error(), "NOPERM") {
			// The dashboard's Redis user lacks a rule (docs/security.md).
			msg = "The server refused the dashboard's user: " + err.Error()
		}
		d.render(w, r, http.StatusInternalServerError, "error", map[string]any{"Status": http.StatusInternalServerError, "Message": msg})
	}
}

func (d *Dashboard) overview(w http.ResponseWriter, r *http.Request) {
	page := 1
	if p := r.URL.Query().Get("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 1_000_000 {
			d.fail(w, r, badRequest{fmt.Sprintf("page %q", p)})
			return
		}
		page = n
	}
	list, err := d.queues.get(r.Context())
	if err != nil {
		d.fail(w, r, err)
		return
	}
	per := d.opt.QueuesPerPage
	from := min((page-1)*per, len(list.Names))
	to := min(from+per, len(list.Names))
	stats, err := statsOf(r.Context(), d.opt.Client, list.Names[from:to])
	if err != nil {
		d.fail(w, r, err)
		return
	}
	rows := make([]queueRow, len(stats))
	for i, st := range stats {
		rows[i] = d.queueRow(st)
	}
	data := map[string]any{
		"Queues": rows, "Total": len(list.Names), "Complete": list.Complete,
		"Page": page, "From": from + 1, "To": to,
	}
	if page > 1 {
		data["Prev"] = page - 1
	}
	if to < len(list.Names) {
		data["Next"] = page + 1
	}
	d.render(w, r, http.StatusOK, "overview", data)
}

// queueRow is one queue of the overview, ready to print: the page holds
// many, and every action of a template costs.
type queueRow struct {
	Queue, Href  string
	Paused       bool // the queue's policy (echomq 2.7.0)
	Concurrency  int  // its concurrency cap, 0 for none
	RateLimit    int  // its rate limit (echomq 2.8.0), 0 for none, and its period
	RatePeriod   time.Duration
	Sets         []setCell
	Rung         bool
	Migration    string
	Oldest       string // how long ago the oldest pending job was minted, "" when none
	Expired, Due int64
	Spark        template.HTML
}

type setCell struct {
	Href string
	N    int64
}

func (d *Dashboard) queueRow(st emq.QueueStats) queueRow {
	href := d.opt.Base + "/queue/" + st.Queue
	row := queueRow{Queue: st.Queue, Href: href, Paused: st.Paused, Concurrency: st.Concurrency, RateLimit: st.RateLimit, RatePeriod: st.RatePeriod, Rung: st.Rung, Expired: st.ExpiredLeases, Due: st.DueScheduled, Spark: d.spark(st.Queue)}
	for _, s := range emq.Sets() {
		row.Sets = append(row.Sets, setCell{Href: href + "/set/" + string(s), N: st.Sizes[s]})
	}
	if len(st.Migration) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(st.Migration)) {
			kv = append(kv, k+"="+st.Migration[k])
		}
		row.Migration = strings.Join(kv, " ")
	}
	if !st.OldestPending.IsZero() {
		row.Oldest = ago(st.At, st.OldestPending.Time())
	}
	return row
}

// entryRow is one job of a set's page, ready to print.
type entryRow struct {
	Href, ID, Minted, At, State string
	// MintedAgo and AtAgo are Minted and At relative to now ("3m0s ago",
	// "in 2s"), which the page shows, with the absolute time as a tooltip.
	MintedAgo, AtAgo string
	// Preview is the payload on one line, cut at previewCap (masked as
	// the job page masks it); "" for an id without a row.
	Preview  string
	Attempts int64
	Exists   bool
	// Failure is the job's last recorded failure (echomq 2.3.0), shown in
	// the dead set's error column; nil when none was recorded.
	Failure *failureCell
}

// failureCell is a failure as a set page shows it: its class and the
// first line of its error, cut at errorCap.
type failureCell struct {
	Class, Message, Full string
}

// errorCap is how much of an error's first line a set page shows.
const errorCap = 100

// lastFailure is the cell of the last of history, nil for none.
func lastFailure(history []emq.FailedAttempt) *failureCell {
	if len(history) == 0 {
		return nil
	}
	last := history[len(history)-1]
	line, _, _ := strings.Cut(last.Message, "\n")
	line = strings.TrimSuffix(line, "\r")
	full := line
	if r := []rune(line); len(r) > errorCap {
		line = string(r[:errorCap]) + "…"
	}
	return &failureCell{Class: string(last.Class), Message: line, Full: full}
}

// setLink is a set's link on a set page, with the set's size.
type setLink struct {
	Set     emq.Set
	N       int64
	Current bool
}

// spark is the small backlog chart of the overview: the pending and
// active sets over the samples.
func (d *Dashboard) spark(name string) template.HTML {
	ps := d.Points(name)
	times := make([]time.Time, len(ps))
	shown := []emq.Set{emq.SetPending, emq.SetActive}
	ss := make([]series, len(shown))
	for j, s := range shown {
		ss[j].Name = string(s)
		at := slices.Index(emq.Sets(), s)
		for _, p := range ps {
			ss[j].Values = append(ss[j].Values, float64(p.Sizes[at]))
		}
	}
	for i, p := range ps {
		times[i] = p.At
	}
	return svgChart("", times, ss, 240, 64)
}

func (d *Dashboard) queuePage(w http.ResponseWriter, r *http.Request) {
	q, err := d.queueOf(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	all, err := statsOf(r.Context(), d.opt.Client, []string{q.Name()})
	if err != nil {
		d.fail(w, r, err)
		return
	}
	st := all[0]
	ps := d.Points(q.Name())
	times := make([]time.Time, len(ps))
	backlog := make([]series, len(emq.Sets()))
	for i, s := range emq.Sets() {
		backlog[i].Name = string(s)
	}
	left := series{Name: "left pending /s"}
	done := series{Name: "completed /s"}
	reported := false
	for i, p := range ps {
		times[i] = p.At
		for j := range backlog {
			backlog[j].Values = append(backlog[j].Values, float64(p.Sizes[j]))
		}
		rate := func(n int64) float64 {
			if n < 0 || i == 0 {
				return -1
			}
			sec := p.At.Sub(ps[i-1].At).Seconds()
			if sec <= 0 {
				return -1
			}
			return float64(n) / sec
		}
		left.Values = append(left.Values, rate(p.LeftPending))
		done.Values = append(done.Values, rate(p.Completed))
		reported = reported || p.Completed >= 0
	}
	through := []series{left}
	if reported {
		through = append(through, done)
	}
	data := d.counters(r.Context(), q)
	maps.Copy(data, d.schedulersCard(r.Context(), q))
	maps.Copy(data, d.policyCard(r, q))
	data["SchedulersPath"] = schedulersPath
	maps.Copy(data, map[string]any{
		"Stats":      st,
		"Backlog":    svgChart("backlog (jobs per set)", times, backlog, 640, 200),
		"Throughput": svgChart("throughput (jobs per second)", times, through, 640, 200),
		"Samples":    len(ps),
		"Every":      d.opt.SampleEvery,
	})
	d.render(w, r, http.StatusOK, "queue", data)
}

func (d *Dashboard) pageSize(r *http.Request) (int, error) {
	v := r.URL.Query().Get("n")
	if v == "" {
		return d.opt.PageSize, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > d.opt.MaxPageSize {
		return 0, badRequest{fmt.Sprintf("page size %q: between 1 and %d", v, d.opt.MaxPageSize)}
	}
	return n, nil
}

func (d *Dashboard) setPage(w http.ResponseWriter, r *http.Request) {
	q, err := d.queueOf(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	set, err := parseSet(r.PathValue("set"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	n, err := d.pageSize(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	after := emq.Cursor(r.URL.Query().Get("after"))
	entries, next, err := q.PageEntries(r.Context(), set, after, n)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	sizes, err := q.Sizes(r.Context())
	if err != nil {
		d.fail(w, r, err)
		return
	}
	now := d.now()
	rows := make([]entryRow, len(entries))
	for i, e := range entries {
		rows[i] = entryRow{
			Href: d.opt.Base + "/queue/" + q.Name() + "/job/" + e.ID.String(), ID: e.ID.String(),
			Minted: stamp(e.ID.Time()), At: stamp(e.At), State: string(e.State), Attempts: e.Attempts, Exists: e.Exists,
			MintedAgo: ago(now, e.ID.Time()), AtAgo: ago(now, e.At),
		}
		if !e.Exists {
			continue
		}
		info, ok, err := q.Get(r.Context(), e.ID)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		if ok {
			payload := info.Payload
			if d.opt.Mask != nil {
				payload = d.opt.Mask(q.Name(), payload)
			}
			rows[i].Preview = previewPayload(payload, previewCap)
			rows[i].Failure = lastFailure(info.Failures) // Get read the failure record in its round trip
		}
	}
	links := make([]setLink, 0, len(emq.Sets()))
	for _, s := range emq.Sets() {
		links = append(links, setLink{Set: s, N: sizes[s], Current: s == set})
	}
	var bulk []bulkAction
	if d.opt.Actions && sizes[set] > 0 {
		for _, a := range bulkActions {
			if a.From.Set() == set {
				bulk = append(bulk, a)
			}
		}
	}
	data := map[string]any{
		"Queue": q.Name(), "Set": set, "Sets": links, "Rows": rows,
		"Size": sizes[set], "Scored": !set.Lex(), "First": after == "", "N": n,
		"AtLabel": atLabel[set.State()], "Bulk": bulk,
		"Dead": set.State() == emq.StateDead,
	}
	if a, err := bulkOfQuery(r, set); err == nil {
		data["Flash"] = r.URL.Query().Get("n") + " " + a.Done + "."
	}
	if next != "" {
		data["Next"] = string(next)
		if n != d.opt.PageSize {
			data["NextN"] = n
		}
	}
	d.render(w, r, http.StatusOK, "set", data)
}

func (d *Dashboard) search(w http.ResponseWriter, r *http.Request) {
	q, err := d.queueOf(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	id, err := parseID(strings.TrimSpace(r.URL.Query().Get("id")))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, d.opt.Base+"/queue/"+q.Name()+"/job/"+id.String(), http.StatusSeeOther)
}

// searchAll finds a job by id in every listed queue (the first
// emq.MaxStatsQueues): one match redirects to its page, several are
// listed.
func (d *Dashboard) searchAll(w http.ResponseWriter, r *http.Request) {
	id, err := parseID(strings.TrimSpace(r.URL.Query().Get("id")))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	list, err := d.queues.get(r.Context())
	if err != nil {
		d.fail(w, r, err)
		return
	}
	names := list.Names
	complete := list.Complete
	if len(names) > emq.MaxStatsQueues {
		names, complete = names[:emq.MaxStatsQueues], false
	}
	found, err := d.opt.Client.FindJob(r.Context(), id, names)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if len(found) == 1 {
		http.Redirect(w, r, d.opt.Base+"/queue/"+found[0]+"/job/"+id.String(), http.StatusSeeOther)
		return
	}
	status := http.StatusOK
	if len(found) == 0 {
		status = http.StatusNotFound
	}
	d.render(w, r, status, "search", map[string]any{"ID": id, "Found": found, "Searched": len(names), "Complete": complete})
}

// job reads the job of r's path.
func (d *Dashboard) job(r *http.Request) (*emq.Queue, emq.JobInfo, bool, error) {
	q, err := d.queueOf(r)
	if err != nil {
		return nil, emq.JobInfo{}, false, err
	}
	id, err := parseID(r.PathValue("id"))
	if err != nil {
		return nil, emq.JobInfo{}, false, err
	}
	info, ok, err := q.Get(r.Context(), id)
	return q, info, ok, err
}

func (d *Dashboard) jobPage(w http.ResponseWriter, r *http.Request) {
	q, info, ok, err := d.job(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	payload := info.Payload
	masked := false
	if d.opt.Mask != nil && ok {
		payload, masked = d.opt.Mask(q.Name(), payload), true
	}
	p := renderPayload(payload, d.opt.PayloadCap)
	p.Masked = masked
	if masked {
		p.Size = len(info.Payload)
	}
	var can []action
	if d.opt.Actions && ok {
		for _, a := range actions {
			if a.From == info.State {
				can = append(can, a)
			}
		}
	}
	status := http.StatusOK
	if !ok && info.Completed == nil {
		status = http.StatusNotFound
	}
	// The sets invariant: a row's state names exactly the set holding its
	// id, and no set holds an id without a row.
	mismatch := ""
	switch {
	case ok && !slices.Equal(info.In, []emq.Set{info.State.Set()}):
		mismatch = fmt.Sprintf("the row says %s: the job moved while it was read, or the sets disagree with the row", info.State)
	case !ok && len(info.In) > 0:
		mismatch = "a set holds this id, which has no row"
	}
	data := d.outputData(q.Name(), info, ok)
	maps.Copy(data, map[string]any{
		"Mismatch": mismatch,
		"Queue":    q.Name(), "Job": info, "Exists": ok, "Payload": p,
		"Minted": info.ID.Time(), "Actions": can, "ReadOnly": !d.opt.Actions,
		"Flash":   flash(r.URL.Query().Get("done")),
		"AtLabel": atLabel[info.State],
		"Dead":    ok && info.State == emq.StateDead,
	})
	d.render(w, r, status, "job", data)
}

// atLabel names the time a job's score is, by state.
var atLabel = map[emq.State]string{emq.StateActive: "lease deadline", emq.StateScheduled: "run at"}

// flash is the message of a finished action, by its name.
func flash(name string) string {
	if a, ok := actionNamed(name); ok {
		return a.Done
	}
	return ""
}

func (d *Dashboard) confirmPage(w http.ResponseWriter, r *http.Request) {
	a, ok := actionNamed(r.PathValue("action"))
	if !ok {
		d.fail(w, r, badRequest{fmt.Sprintf("no action %q", r.PathValue("action"))})
		return
	}
	if !d.opt.Actions {
		d.readOnly(w, r)
		return
	}
	q, info, exists, err := d.job(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "confirm", map[string]any{
		"Queue": q.Name(), "Job": info, "Exists": exists, "Action": a,
		"Applies": exists && info.State == a.From,
		"Token":   d.tokens.issue(d.now(), a.Name, q.Name(), info.ID.String()),
	})
}

func (d *Dashboard) readOnly(w http.ResponseWriter, r *http.Request) {
	d.render(w, r, http.StatusForbidden, "error", map[string]any{"Status": http.StatusForbidden,
		"Message": "This dashboard is read-only: actions are not enabled."})
}

// confirmed answers a POST of an action unless actions are enabled and its
// form carries the CSRF token bound to that action, queue and target (a
// job's id, or a set for a bulk action); it reports whether the action may
// go on.
func (d *Dashboard) confirmed(w http.ResponseWriter, r *http.Request, action, queue, target string) bool {
	if !d.opt.Actions {
		d.readOnly(w, r)
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil {
		d.fail(w, r, badRequest{"the form: " + err.Error()})
		return false
	}
	if !d.tokens.check(d.now(), r.PostForm.Get("csrf"), action, queue, target) {
		d.render(w, r, http.StatusForbidden, "error", map[string]any{"Status": http.StatusForbidden,
			"Message": "The form's CSRF token is missing, expired or not for this action: open the confirmation again."})
		return false
	}
	return true
}

func (d *Dashboard) act(w http.ResponseWriter, r *http.Request) {
	a, ok := actionNamed(r.PathValue("action"))
	if !ok {
		d.fail(w, r, badRequest{fmt.Sprintf("no action %q", r.PathValue("action"))})
		return
	}
	q, err := d.queueOf(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	id, err := parseID(r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if !d.confirmed(w, r, a.Name, q.Name(), id.String()) {
		return
	}
	done, err := a.Do(q, r.Context(), id)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.opt.Logger.Info("dashboard: action", "action", a.Name, "queue", q.Name(), "id", id.String(), "done", done, "remote", r.RemoteAddr)
	if !done {
		d.render(w, r, http.StatusConflict, "error", map[string]any{"Status": http.StatusConflict,
			"Message": fmt.Sprintf("Nothing done: job %s is no longer %s.", id, a.From)})
		return
	}
	d.queues.forget()
	target := d.opt.Base + "/queue/" + q.Name() + "/job/" + id.String() + "?done=" + a.Name
	if a.Name == "purge" {
		target = d.opt.Base + "/queue/" + q.Name() + "/set/" + string(a.From.Set())
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}
