// Package inspect reads and repairs the queues of a live EchoMQ keyspace
// from the resolved model alone: the size of every set, newest-first pages
// of a set, one job's row and score, and the revive and purge of dead
// jobs. It is emqgen inspect's engine.
//
// Like gen/live, whose key grammar and script runner it uses, it never
// imports the generated SDK, so it works from any manifest, before or
// without generating code. It agrees with the SDK's inspection API: Page
// takes and returns the SDK's cursors (an id for a set whose members all
// score zero, "score/id" for a scored set) and pages exactly as the SDK's
// Queue.Page does; Get reads what Queue.Get reads.
//
// It never runs the fence script and never writes the version record or
// the bundle identity. The version record is read (Inspector.Version) so
// that a caller can refuse to write a keyspace that no client of this
// manifest's major has fenced (Version.Writable).
package inspect

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/gen/live"
	"github.com/echomq/echomq/gen/model"
)

// The scripts inspect runs, by their names in the manifest: revive (since
// 2.0.0), ring and purge (since 2.1.0). Their keys, arguments, replies and
// transitions are read from the model; a manifest without one of them can
// still be used to read queues.
const (
	scriptRevive = "revive"
	scriptRing   = "ring"
	scriptPurge  = "purge"
)

// argID is the model's argument type of an id (model.Arg.Type), fixed by
// gen/model.
const argID = "id"

// cursorSep separates the score from the id in the cursor of a scored set,
// as the SDK's Queue.Page writes it.
const cursorSep = "/"

// scoreUnit ends the score kinds of scored sets (lease_deadline_ms,
// run_at_ms); what precedes it names the time the score is.
const scoreUnit = "_ms"

// ErrInput means a queue name, an id, a set or a cursor is malformed, or an
// argument is out of range; nothing was sent. Errors match it with
// errors.Is; their text says what is wrong.
var ErrInput = errors.New("malformed input")

// inputError is an error of ErrInput, printed as its own message.
type inputError struct{ msg string }

func (e inputError) Error() string        { return e.msg }
func (e inputError) Is(target error) bool { return target == ErrInput }

func inputf(format string, args ...any) error {
	return inputError{fmt.Sprintf(format, args...)}
}

// Inspector inspects the queues of keyspaces that speak one manifest.
type Inspector struct {
	p      *model.Protocol
	ks     *live.Keyspace
	sets   []Set
	fields struct{ state, token, payload model.Field }
	bell   string // the doorbell's key type (the ring script's key), "" without a ring script
}

// Set is one of a queue's sorted sets, as the model declares it.
type Set struct {
	Name  string // the set's key type
	State string // the state of the ids it holds
	Score string // the model's score kind
	// Lex reports that every member scores zero, so that newest first is
	// reverse id (mint) order and the cursor is an id.
	Lex bool
}

// AtName names the time a scored set's score is (lease_deadline, run_at);
// it is empty for a set whose members all score zero.
func (s Set) AtName() string {
	if s.Lex {
		return ""
	}
	return strings.TrimSuffix(s.Score, scoreUnit)
}

// New derives an inspector from the model: its sets, its row fields by
// role, its scripts rendered.
func New(p *model.Protocol) (*Inspector, error) {
	ks, err := live.NewKeyspace(p)
	if err != nil {
		return nil, err
	}
	in := &Inspector{p: p, ks: ks}
	var ok [3]bool
	in.fields.state, ok[0] = p.Field(model.RoleState)
	in.fields.token, ok[1] = p.Field(model.RoleToken)
	in.fields.payload, ok[2] = p.Field(model.RolePayload)
	if !ok[0] || !ok[1] || !ok[2] {
		return nil, errors.New("inspect: the model's row lacks a field of a role")
	}
	for _, s := range p.Sets {
		in.sets = append(in.sets, Set{Name: s.Key, State: s.State, Score: s.Score, Lex: s.Score == model.ScoreZero})
	}
	if ring, ok := p.Script(scriptRing); ok {
		for _, k := range ring.Keys {
			if _, ok := ks.QueueKey("", k.Type); ok {
				in.bell = k.Type
			}
		}
	}
	return in, nil
}

// Protocol returns the model.
func (in *Inspector) Protocol() *model.Protocol { return in.p }

// Field returns the row field of a role (model.RoleState, RoleToken,
// RolePayload).
func (in *Inspector) Field(role string) model.Field {
	f, _ := in.p.Field(role)
	return f
}

// Sets returns the queue's sets in manifest order.
func (in *Inspector) Sets() []Set { return append([]Set(nil), in.sets...) }

// Set finds a set by its name or by the state of the ids it holds.
func (in *Inspector) Set(name string) (Set, error) {
	for _, s := range in.sets {
		if s.Name == name || s.State == name {
			return s, nil
		}
	}
	var names []string
	for _, s := range in.sets {
		names = append(names, s.Name)
	}
	return Set{}, inputf("%q is not a set of the manifest (its sets: %s)", name, strings.Join(names, ", "))
}

// CheckQueue refuses a queue name outside the manifest's queue grammar.
func (in *Inspector) CheckQueue(q string) error {
	if err := in.ks.CheckQueue(q); err != nil {
		return inputf("%v", err)
	}
	return nil
}

// CheckID refuses a string that is not an id of the manifest's canon (of
// any kind: which kinds a queue admits is the scripts' policy).
func (in *Inspector) CheckID(id string) error {
	if _, err := in.p.IDs.ParseID(id); err != nil {
		return inputf("%v", err)
	}
	return nil
}

// CheckCursor refuses a cursor that set s cannot have given: an id for a
// set whose members score zero, "score/id" for a scored set.
func (in *Inspector) CheckCursor(s Set, cursor string) error {
	if cursor == "" {
		return nil
	}
	_, _, err := in.cursor(s, cursor)
	return err
}

func (in *Inspector) cursor(s Set, cursor string) (score, id string, err error) {
	bad := inputf("cursor %q is not one of set %s's (%s)", cursor, s.Name, cursorForm(s))
	if s.Lex {
		if in.CheckID(cursor) != nil {
			return "", "", bad
		}
		return "", cursor, nil
	}
	sc, id, ok := strings.Cut(cursor, cursorSep)
	if _, err := strconv.ParseInt(sc, 10, 64); !ok || err != nil || in.CheckID(id) != nil {
		return "", "", bad
	}
	return sc, id, nil
}

func cursorForm(s Set) string {
	if s.Lex {
		return "an id"
	}
	return "score" + cursorSep + "id"
}

// Version is the keyspace's version record as found, judged by the
// manifest's fence.
type Version struct {
	Key      string       // the version record's key
	Record   string       // what it holds; "" when absent
	Verdict  live.Verdict // the fence's judgement of Record
	Manifest string       // the manifest's version, major.minor.patch
	Major    int          // the manifest's major
}

// Version reads the keyspace's version record (a GET; the fence script is
// never run) and judges it by the manifest's fence.
func (in *Inspector) Version(ctx context.Context, rc rueidis.Client) (Version, error) {
	f := in.ks.Fence()
	v := Version{Key: f.VersionKey, Manifest: f.Semver, Major: in.p.Version.Major}
	rec, verdict, err := f.Read(ctx, rc)
	if err != nil {
		return v, fmt.Errorf("reading the version record %s: %w", f.VersionKey, err)
	}
	v.Record, v.Verdict = rec, verdict
	return v, nil
}

// Writable returns nil when the manifest's scripts may write the keyspace:
// its record is of the manifest's major. Otherwise it says why not: no
// record (no client has fenced the keyspace, so nothing says which
// protocol it speaks) or a record of another major or protocol.
func (v Version) Writable() error {
	switch v.Verdict {
	case live.Absent:
		return fmt.Errorf("the keyspace has no version record (%s is absent): no client has fenced it, so nothing says it speaks major %d of the manifest (%s); connect a client of the SDK first, which fences it", v.Key, v.Major, v.Manifest)
	case live.Foreign:
		return fmt.Errorf("the keyspace's version record %s holds %q, which is not a record of major %d (the manifest is %s): it belongs to another major or protocol, whose scripts and rows may differ", v.Key, v.Record, v.Major, v.Manifest)
	}
	return nil
}

// Warning is what a reader of the keyspace should know about its version
// record, or "" when it is the manifest's version.
func (v Version) Warning() string {
	switch v.Verdict {
	case live.Absent, live.Foreign:
		return v.Writable().Error() + "; reading it with the manifest's grammar anyway"
	case live.Behind:
		return fmt.Sprintf("the keyspace's version record %q is below the manifest's %s; a client of the SDK would raise it at connect, this command does not", v.Record, v.Manifest)
	case live.Ahead:
		return fmt.Sprintf("the keyspace's version record %q is ahead of the manifest's %s; what a later minor added is not shown", v.Record, v.Manifest)
	}
	return ""
}

// Sizes is the size of every set of a queue and the state of its doorbell.
type Sizes struct {
	Queue    string
	Sets     []SetSize // manifest order
	Doorbell *Doorbell // nil when the manifest has no doorbell
}

// SetSize is the size of one set.
type SetSize struct {
	Set
	Key  string
	Size int64
}

// Doorbell is the state of a queue's doorbell.
type Doorbell struct {
	Key  string
	Type string // its key type
	Rung bool   // the marker is there: an idle worker would wake
}

// Sizes reads the size of every set of queue q and whether its doorbell is
// rung, in one round trip.
func (in *Inspector) Sizes(ctx context.Context, rc rueidis.Client, q string) (Sizes, error) {
	if err := in.CheckQueue(q); err != nil {
		return Sizes{}, err
	}
	out := Sizes{Queue: q}
	var cmds rueidis.Commands
	for _, s := range in.sets {
		key, _ := in.ks.QueueKey(q, s.Name)
		out.Sets = append(out.Sets, SetSize{Set: s, Key: key})
		cmds = append(cmds, rc.B().Zcard().Key(key).Build())
	}
	if in.bell != "" {
		key, _ := in.ks.QueueKey(q, in.bell)
		out.Doorbell = &Doorbell{Key: key, Type: in.bell}
		// A list exists exactly while it holds an element: the marker.
		cmds = append(cmds, rc.B().Exists().Key(key).Build())
	}
	res := rc.DoMulti(ctx, cmds...)
	for i := range out.Sets {
		n, err := res[i].AsInt64()
		if err != nil {
			return Sizes{}, fmt.Errorf("size of %s: %w", out.Sets[i].Key, err)
		}
		out.Sets[i].Size = n
	}
	if out.Doorbell != nil {
		n, err := res[len(out.Sets)].AsInt64()
		if err != nil {
			return Sizes{}, fmt.Errorf("reading the doorbell %s: %w", out.Doorbell.Key, err)
		}
		out.Doorbell.Rung = n > 0
	}
	return out, nil
}

// Page is one page of a set, newest first.
type Page struct {
	Queue   string
	Set     Set
	Entries []Entry
	// Next is the cursor of the next page, "" when this was the last.
	Next string
	// Now is the server's clock when the page was read; zero when the
	// server did not tell.
	Now time.Time
}

// Entry is one id of a page and what its row says.
type Entry struct {
	ID       string
	Row      bool   // the id has a row
	State    string // the row's state
	Attempts int64  // the row's token
	// Score is the id's score in a scored set: At in Unix milliseconds.
	Score int64
	// At is the lease deadline or run-at a scored set's score is; zero in
	// a set whose members score zero.
	At time.Time
}

// Page returns up to n ids of set s of queue q, newest first, after cursor
// ("" for the first page), each with its row's state and attempts, and the
// cursor of the next page. Ids, order and cursors are the SDK's Queue.Page:
// a set whose members score zero pages by reverse id, a scored set by
// score then id, both descending, and an id never shows twice across pages
// even while the set changes.
func (in *Inspector) Page(ctx context.Context, rc rueidis.Client, q string, s Set, cursor string, n int) (Page, error) {
	if err := in.CheckQueue(q); err != nil {
		return Page{}, err
	}
	key, ok := in.ks.QueueKey(q, s.Name)
	if !ok {
		return Page{}, inputf("%q is not a set of the manifest", s.Name)
	}
	if n <= 0 {
		return Page{}, inputf("page size %d; give 1 or more", n)
	}
	var sc, after string
	if cursor != "" {
		var err error
		if sc, after, err = in.cursor(s, cursor); err != nil {
			return Page{}, err
		}
	}
	page := Page{Queue: q, Set: s}
	var members []string
	var scores []float64
	if s.Lex {
		// Every score is zero: members sort by their bytes, which for ids
		// is mint order.
		top := "+"
		if after != "" {
			top = "(" + after
		}
		got, err := rc.Do(ctx, rc.B().Zrange().Key(key).Min(top).Max("-").Bylex().Rev().Limit(0, int64(n)).Build()).AsStrSlice()
		if err != nil {
			return Page{}, fmt.Errorf("page of %s: %w", key, err)
		}
		members = got
	} else {
		// Members sort by score, then by their bytes; the cursor is the last
		// one shown. The next page is the members of its score below its
		// id, then the members of lower scores.
		rest := "+inf"
		if after != "" {
			same, err := rc.Do(ctx, rc.B().Zrange().Key(key).Min(sc).Max(sc).Byscore().Rev().Withscores().Build()).AsZScores()
			if err != nil {
				return Page{}, fmt.Errorf("page of %s: %w", key, err)
			}
			for _, z := range same {
				if z.Member < after && len(members) < n {
					members, scores = append(members, z.Member), append(scores, z.Score)
				}
			}
			rest = "(" + sc
		}
		if len(members) < n {
			zs, err := rc.Do(ctx, rc.B().Zrange().Key(key).Min(rest).Max("-inf").Byscore().Rev().Limit(0, int64(n-len(members))).Withscores().Build()).AsZScores()
			if err != nil {
				return Page{}, fmt.Errorf("page of %s: %w", key, err)
			}
			for _, z := range zs {
				members, scores = append(members, z.Member), append(scores, z.Score)
			}
		}
	}
	for i, m := range members {
		if err := in.CheckID(m); err != nil {
			return Page{}, fmt.Errorf("%s holds %q, which is not an id: %w", key, m, err)
		}
		e := Entry{ID: m}
		if !s.Lex {
			e.Score = int64(scores[i])
			e.At = time.UnixMilli(e.Score)
		}
		page.Entries = append(page.Entries, e)
	}
	if err := in.rows(ctx, rc, q, &page); err != nil {
		return Page{}, err
	}
	if last := len(page.Entries) - 1; len(page.Entries) == n {
		page.Next = page.Entries[last].ID
		if !s.Lex {
			page.Next = strconv.FormatInt(page.Entries[last].Score, 10) + cursorSep + page.Next
		}
	}
	return page, nil
}

// rows reads the state and token of every entry's row, and the server's
// clock, in one round trip.
func (in *Inspector) rows(ctx context.Context, rc rueidis.Client, q string, page *Page) error {
	cmds := rueidis.Commands{rc.B().Time().Build()}
	for _, e := range page.Entries {
		cmds = append(cmds, rc.B().Hmget().Key(in.ks.RowKey(q, e.ID)).Field(in.fields.state.Name, in.fields.token.Name).Build())
	}
	res := rc.DoMulti(ctx, cmds...)
	page.Now = serverTime(res[0])
	for i := range page.Entries {
		e := &page.Entries[i]
		vals, err := res[i+1].ToArray()
		if err != nil {
			return fmt.Errorf("reading the row of %s: %w", e.ID, err)
		}
		if len(vals) != 2 {
			return fmt.Errorf("reading the row of %s: HMGET answered %d values", e.ID, len(vals))
		}
		st, err := vals[0].ToString()
		if rueidis.IsRedisNil(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading the row of %s: %w", e.ID, err)
		}
		e.Row, e.State = true, st
		if e.Attempts, err = in.attempts(e.ID, vals[1]); err != nil {
			return err
		}
	}
	return nil
}

func (in *Inspector) attempts(id string, m rueidis.RedisMessage) (int64, error) {
	s, err := m.ToString()
	if err != nil {
		return 0, fmt.Errorf("the row of %s has no %s: %w", id, in.fields.token.Name, err)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("the row of %s holds %s %q, not a decimal", id, in.fields.token.Name, s)
	}
	return n, nil
}

// serverTime reads the reply of TIME; zero when there is none.
func serverTime(r rueidis.RedisResult) time.Time {
	t, err := r.AsStrSlice()
	if err != nil || len(t) != 2 {
		return time.Time{}
	}
	sec, err1 := strconv.ParseInt(t[0], 10, 64)
	usec, err2 := strconv.ParseInt(t[1], 10, 64)
	if err1 != nil || err2 != nil {
		return time.Time{}
	}
	return time.Unix(sec, usec*1000)
}

// Job is one job as inspection shows it.
type Job struct {
	ID       string
	Queue    string
	Row      bool   // the job has a row; false for one never enqueued, or completed and retired
	State    string // the row's state
	Attempts int64  // the row's token: how many times the job was claimed
	Payload  []byte
	// In are the sets holding the id, in manifest order. The invariant
	// says exactly the one set the row's state names, and none without a
	// row.
	In []string
	// At is the lease deadline or run-at when the set the state names is
	// scored and holds the id (AtName names which); zero otherwise. Score
	// is At in Unix milliseconds.
	At     time.Time
	Score  int64
	AtName string
	// Now is the server's clock when the job was read; zero when the server
	// did not tell.
	Now time.Time
}

// Get reads job id of queue q: its row, and its score in every set, in one
// round trip. ok is false when the id has no row (Job.In still tells
// whether a set holds it).
func (in *Inspector) Get(ctx context.Context, rc rueidis.Client, q, id string) (Job, bool, error) {
	if err := in.CheckQueue(q); err != nil {
		return Job{}, false, err
	}
	if err := in.CheckID(id); err != nil {
		return Job{}, false, err
	}
	cmds := rueidis.Commands{rc.B().Time().Build(), rc.B().Hgetall().Key(in.ks.RowKey(q, id)).Build()}
	for _, s := range in.sets {
		key, _ := in.ks.QueueKey(q, s.Name)
		cmds = append(cmds, rc.B().Zscore().Key(key).Member(id).Build())
	}
	res := rc.DoMulti(ctx, cmds...)
	job := Job{ID: id, Queue: q, Now: serverTime(res[0])}
	row, err := res[1].AsStrMap()
	if err != nil {
		return Job{}, false, fmt.Errorf("reading the row of %s: %w", id, err)
	}
	scores := map[string]float64{}
	for i, s := range in.sets {
		sc, err := res[i+2].AsFloat64()
		if rueidis.IsRedisNil(err) {
			continue
		}
		if err != nil {
			return Job{}, false, fmt.Errorf("reading the score of %s in %s: %w", id, s.Name, err)
		}
		job.In = append(job.In, s.Name)
		scores[s.Name] = sc
	}
	if len(row) == 0 {
		return job, false, nil
	}
	job.Row = true
	job.State = row[in.fields.state.Name]
	job.Payload = []byte(row[in.fields.payload.Name])
	tok, ok := row[in.fields.token.Name]
	if !ok {
		return Job{}, false, fmt.Errorf("the row of %s has no %s", id, in.fields.token.Name)
	}
	if job.Attempts, err = strconv.ParseInt(tok, 10, 64); err != nil {
		return Job{}, false, fmt.Errorf("the row of %s holds %s %q, not a decimal", id, in.fields.token.Name, tok)
	}
	if st, ok := in.p.State(job.State); ok {
		for _, s := range in.sets {
			if s.Name == st.Set && !s.Lex {
				if sc, ok := scores[s.Name]; ok {
					job.Score = int64(sc)
					job.At = time.UnixMilli(job.Score)
					job.AtName = s.AtName()
				}
			}
		}
	}
	return job, true, nil
}

// Outcome is what a script answered for one job.
type Outcome struct {
	ID string
	// Done reports that the script acted: revived, purged, rung. The
	// scripts inspect runs answer 1 when they act and 0 when they do not.
	Done bool
	// Reply is the script's answer; Name and Summary are the manifest's
	// for that value.
	Reply   int64
	Name    string
	Summary string
}

func outcome(s model.Script, id string, n int64) Outcome {
	o := Outcome{ID: id, Done: n > 0, Reply: n, Name: strconv.FormatInt(n, 10)}
	for _, v := range s.Reply.Values {
		if v.Value == n {
			o.Name, o.Summary = v.Name, v.Summary
		}
	}
	return o
}

// script returns a script the manifest must have for an operation.
func (in *Inspector) script(name string) (model.Script, error) {
	s, ok := in.p.Script(name)
	if !ok {
		return model.Script{}, fmt.Errorf("the manifest (%s) has no %s script", in.p.Version, name)
	}
	return s, nil
}

// run runs a script that takes one id.
func (in *Inspector) run(ctx context.Context, rc rueidis.Client, s model.Script, q, id string) (Outcome, error) {
	args := map[string]string{}
	for _, a := range s.Argv {
		if a.Type != argID {
			return Outcome{}, fmt.Errorf("the %s script takes %s (%s), which inspect cannot fill", s.Name, a.Name, a.Type)
		}
		args[a.Name] = id
	}
	n, err := in.ks.Exec(ctx, rc, q, s.Name, args).AsInt64()
	if err != nil {
		return Outcome{}, fmt.Errorf("%s %s: %w", s.Name, id, err)
	}
	return outcome(s, id, n), nil
}

// Revive runs the manifest's revive script on each id of queue q, in
// order, then, when one was revived, rings the queue's doorbell with the
// ring script (once, after the last). It returns the outcome of each id it
// ran, and the ring's (nil when nothing was revived or the manifest has no
// ring script). Every id is checked before anything is sent; the caller
// checks the keyspace's version first (Version.Writable).
func (in *Inspector) Revive(ctx context.Context, rc rueidis.Client, q string, ids []string) (outs []Outcome, ring *Outcome, err error) {
	s, err := in.script(scriptRevive)
	if err != nil {
		return nil, nil, err
	}
	if err := in.checkAll(q, ids); err != nil {
		return nil, nil, err
	}
	revived := false
	defer func() {
		// Ring even when a later id failed: the revived jobs are pending.
		r, ok := in.p.Script(scriptRing)
		if !revived || !ok {
			return
		}
		n, rerr := in.ks.Exec(ctx, rc, q, r.Name, nil).AsInt64()
		if rerr != nil {
			err = errors.Join(err, fmt.Errorf("ringing the doorbell: %w", rerr))
			return
		}
		o := outcome(r, "", n)
		ring = &o
	}()
	for _, id := range ids {
		o, err := in.run(ctx, rc, s, q, id)
		if err != nil {
			return outs, nil, err
		}
		revived = revived || o.Done
		outs = append(outs, o)
	}
	return outs, nil, nil
}

// Purge runs the manifest's purge script on each id of queue q, in order:
// a dead job's row and id are deleted for good, any other is left as it
// is. Every id is checked before anything is sent; the caller checks the
// keyspace's version first (Version.Writable).
func (in *Inspector) Purge(ctx context.Context, rc rueidis.Client, q string, ids []string) ([]Outcome, error) {
	s, err := in.script(scriptPurge)
	if err != nil {
		return nil, err
	}
	if err := in.checkAll(q, ids); err != nil {
		return nil, err
	}
	var outs []Outcome
	for _, id := range ids {
		o, err := in.run(ctx, rc, s, q, id)
		if err != nil {
			return outs, err
		}
		outs = append(outs, o)
	}
	return outs, nil
}

// Preview is what Purge would do to one job.
type Preview struct {
	Job
	// Would reports that Purge would delete the job: its row is in the
	// state the purge script takes jobs from, and that state's set holds
	// it (the script's two checks).
	Would bool
	// From is the state the purge script takes jobs from.
	From string
}

// PurgePreview reads, without writing anything, what Purge would do to
// each id of queue q.
func (in *Inspector) PurgePreview(ctx context.Context, rc rueidis.Client, q string, ids []string) ([]Preview, error) {
	s, err := in.script(scriptPurge)
	if err != nil {
		return nil, err
	}
	if err := in.checkAll(q, ids); err != nil {
		return nil, err
	}
	from := map[string]bool{}
	var names []string
	for _, t := range s.Transitions {
		if t.To == model.None && !from[t.From] {
			from[t.From] = true
			names = append(names, t.From)
		}
	}
	var out []Preview
	for _, id := range ids {
		job, ok, err := in.Get(ctx, rc, q, id)
		if err != nil {
			return out, err
		}
		pv := Preview{Job: job, From: strings.Join(names, " or ")}
		if ok && from[job.State] {
			st, _ := in.p.State(job.State)
			for _, set := range job.In {
				pv.Would = pv.Would || set == st.Set
			}
		}
		out = append(out, pv)
	}
	return out, nil
}

func (in *Inspector) checkAll(q string, ids []string) error {
	if err := in.CheckQueue(q); err != nil {
		return err
	}
	for _, id := range ids {
		if err := in.CheckID(id); err != nil {
			return err
		}
	}
	return nil
}

// Text returns a payload as text when it is safe to print on a terminal:
// valid UTF-8 without control characters (C0, DEL, C1: no newlines, tabs
// or escape sequences) and without the invisible characters that reorder
// or hide text (bidirectional controls). ok is false otherwise; show it in
// hex.
func Text(payload []byte) (string, bool) {
	if !utf8.Valid(payload) {
		return "", false
	}
	s := string(payload)
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return "", false
		}
	}
	return s, true
}
