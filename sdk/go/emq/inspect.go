package emq

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// JobInfo is what inspection shows of one job.
type JobInfo struct {
	ID       ID
	State    State
	Attempts int64 // the fencing token: how many times the job was claimed
	Payload  []byte
	// At is the lease deadline of an active job and the run-at of a
	// scheduled one (server clock); zero in the other states.
	At time.Time
	// In are the sets that hold the id, in Sets order: exactly the set
	// State names, unless the job moved while it was read or the sets
	// invariant is broken. Get fills it also for an id without a row.
	In []Set
	// Failures are the job's recorded failed attempts, oldest first (at
	// most the last 10; echomq 2.3.0): empty when none was recorded.
	Failures []FailedAttempt
	// DiedAt is when a dead job died: the time of its last recorded
	// attempt, when that attempt is the row's Attempts. It is zero for a
	// job that is not dead, and for one whose last attempt was settled by
	// a client that records nothing (a 2.2 client): not recorded, never
	// guessed.
	DiedAt time.Time
	// Progress is the lease holder's last progress report (echomq 2.4.0),
	// read while the row exists; empty when none was made.
	Progress []byte
	// Completed is the job's completion record (echomq 2.4.0), which Get
	// answers beside ok false once the row is gone, when the completing
	// worker kept one; nil while the row exists and when none was kept.
	Completed *CompletionRecord
}

// Get reads one job: its row, its score in every set, its failure
// record (Failures, DiedAt) and its output (Progress, Completed: the
// output script, as Output reads it), in one round trip. ok is false when
// the job has no row (never enqueued, or completed and retired); the
// JobInfo's ID and In are filled even then, so that a set holding an id
// without a row shows, and so is Completed when the job's completion was
// kept. It only reads, also on an observing client.
func (q *Queue) Get(ctx context.Context, id ID) (info JobInfo, ok bool, err error) {
	err = q.c.idempotent(ctx, func(ctx context.Context) (err error) {
		info, ok, err = q.getOnce(ctx, id)
		return err
	})
	return info, ok, err
}

// getOnce is one attempt of Get.
func (q *Queue) getOnce(ctx context.Context, id ID) (JobInfo, bool, error) {
	row, err := q.keys.Row(id)
	if err != nil {
		return JobInfo{}, false, err
	}
	if err := q.c.ensureRead(ctx); err != nil {
		return JobInfo{}, false, err
	}
	rc := q.c.rc
	cmds := rueidis.Commands{rc.B().Hgetall().Key(row).Build()}
	sets := wire.Sets()
	for _, s := range sets {
		cmds = append(cmds, rc.B().Zscore().Key(q.keys.Set(s)).Member(id.String()).Build())
	}
	fc := wire.FailuresCall{Row: row, Failures: q.keys.Failures, ID: id}
	fx := fc.LuaExec()
	oc := q.outputCall(row, id)
	ox := oc.LuaExec()
	cmds = append(cmds, q.c.evalshaRO(wire.ScriptFailures, fx), q.c.evalshaRO(wire.ScriptOutput, ox))
	res := rc.DoMulti(ctx, cmds...)
	m, err := res[0].AsStrMap()
	if err != nil {
		return JobInfo{}, false, errorf("emq: get %s: %w", id, err)
	}
	// The scripts a server does not hold (restarted, failed over) are
	// sent again as EVAL_RO, together.
	scripts := q.c.againRO(ctx, []*wire.Script{wire.ScriptFailures, wire.ScriptOutput}, []rueidis.LuaExec{fx, ox}, res[len(res)-2:])
	fres, ores := scripts[0], scripts[1]
	out, err := decodeOutput(ores)
	if err != nil {
		return JobInfo{}, false, errorf("emq: get %s: the output: %w", id, err)
	}
	info := JobInfo{ID: id}
	scores := make([]float64, len(sets))
	for i, s := range sets {
		r := res[i+1]
		if key, retry := q.c.leasedKey(ctx, q.keys, s, r.Error()); retry {
			r = rc.Do(ctx, rc.B().Zscore().Key(key).Member(id.String()).Build())
		}
		sc, err := r.AsFloat64()
		if _, isRedis := rueidis.IsRedisErr(err); isRedis || rueidis.IsRedisNil(err) {
			continue // not a member, or not a set at all (a foreign key)
		}
		if err != nil {
			return JobInfo{}, false, errorf("emq: get %s: the score in %s: %w", id, s, err)
		}
		info.In, scores[i] = append(info.In, s), sc
	}
	if len(m) == 0 {
		info.Completed = out.Completed
		return info, false, nil
	}
	info.Progress = out.Progress
	info.Payload = []byte(m[wire.FieldPayload])
	st, ok := wire.ParseState(m[wire.FieldState])
	if !ok {
		return JobInfo{}, false, errorf("emq: get %s: the row holds an unknown state %q", id, m[wire.FieldState])
	}
	info.State = st
	if info.Attempts, err = strconv.ParseInt(m[wire.FieldToken], 10, 64); err != nil {
		return JobInfo{}, false, errorf("emq: get %s: the row's token %q: %w", id, m[wire.FieldToken], err)
	}
	for i, s := range sets {
		if s == st.Set() && !s.Lex() && slices.Contains(info.In, s) {
			info.At = time.UnixMilli(int64(scores[i]))
		}
	}
	if info.Failures, err = decodeFailures(fres); err != nil {
		return JobInfo{}, false, errorf("emq: get %s: the failure record: %w", id, err)
	}
	info.DiedAt = diedAt(info.State, info.Attempts, info.Failures)
	return info, true, nil
}

// Cursor marks where a page of a set ended; the zero Cursor starts at the
// newest. It is opaque: pass back what Page returned.
type Cursor string

// Page returns up to n ids of set s, newest first, starting after cursor
// ("" for the first page), and the cursor of the next page ("" when this
// was the last). Pages are stable under concurrent change: an id never
// shows twice across pages, and an id present throughout is never skipped.
// A set whose members all score zero (Set.Lex) pages in reverse id, that
// is mint, order and its cursor is an id; a scored set pages by score, then
// id, both descending, and its cursor is "score/id". A cursor Page cannot
// have returned is refused with ErrArgument before anything is sent. It
// only reads, also on an observing client.
func (q *Queue) Page(ctx context.Context, s Set, after Cursor, n int) (ids []ID, next Cursor, err error) {
	err = q.c.idempotent(ctx, func(ctx context.Context) (err error) {
		ids, next, err = q.pageOnce(ctx, s, after, n)
		return err
	})
	return ids, next, err
}

// pageOnce is one attempt of Page.
func (q *Queue) pageOnce(ctx context.Context, s Set, after Cursor, n int) ([]ID, Cursor, error) {
	ids, _, next, err := q.page(ctx, s, after, n)
	return ids, next, err
}

// Entry is one id of a page with its score and what its row says.
type Entry struct {
	ID ID
	// At is the id's score in a scored set, a time on the server's clock
	// (the lease deadline of an active job, the run-at of a scheduled
	// one); zero in a set whose members all score zero.
	At time.Time
	// Exists reports that the id has a row; State and Attempts are the
	// row's. State differs from the set's when the job moved between the
	// page and the row's read (or the sets invariant is broken), and holds
	// the row's value as found even when it is not a known State.
	Exists   bool
	State    State
	Attempts int64
}

// PageEntries returns the page Page returns, the same ids in the same
// order and the same next cursor, each with its score and its row's state
// and attempts (read in a second round trip, one HMGET per id). It only
// reads, also on an observing client.
func (q *Queue) PageEntries(ctx context.Context, s Set, after Cursor, n int) (entries []Entry, next Cursor, err error) {
	err = q.c.idempotent(ctx, func(ctx context.Context) (err error) {
		entries, next, err = q.pageEntriesOnce(ctx, s, after, n)
		return err
	})
	return entries, next, err
}

// pageEntriesOnce is one attempt of PageEntries.
func (q *Queue) pageEntriesOnce(ctx context.Context, s Set, after Cursor, n int) ([]Entry, Cursor, error) {
	ids, scores, next, err := q.page(ctx, s, after, n)
	if err != nil || len(ids) == 0 {
		return nil, next, err
	}
	rc := q.c.rc
	cmds := make(rueidis.Commands, len(ids))
	for i, id := range ids {
		row, _ := q.keys.Row(id)
		cmds[i] = rc.B().Hmget().Key(row).Field(wire.FieldState, wire.FieldToken).Build()
	}
	out := make([]Entry, len(ids))
	for i, res := range rc.DoMulti(ctx, cmds...) {
		e := Entry{ID: ids[i]}
		if !s.Lex() {
			e.At = time.UnixMilli(int64(scores[i]))
		}
		vals, err := res.ToArray()
		if err != nil || len(vals) != 2 {
			return nil, "", errorf("emq: page of %s: reading the row of %s: %v (%d values)", s, ids[i], err, len(vals))
		}
		if st, err := vals[0].ToString(); err == nil {
			e.Exists, e.State = true, State(st)
			tok, err := vals[1].ToString()
			if err != nil {
				return nil, "", errorf("emq: page of %s: the row of %s has no %s: %w", s, ids[i], wire.FieldToken, err)
			}
			if e.Attempts, err = strconv.ParseInt(tok, 10, 64); err != nil {
				return nil, "", errorf("emq: page of %s: the row of %s holds %s %q: %w", s, ids[i], wire.FieldToken, tok, err)
			}
		} else if !rueidis.IsRedisNil(err) {
			return nil, "", errorf("emq: page of %s: reading the row of %s: %w", s, ids[i], err)
		}
		out[i] = e
	}
	return out, next, nil
}

// page is Page with each id's score.
func (q *Queue) page(ctx context.Context, s Set, after Cursor, n int) ([]ID, []float64, Cursor, error) {
	cursor := string(after)
	key := q.keys.Set(s)
	if key == "" {
		return nil, nil, "", errorf("%w: unknown set %q", ErrArgument, s)
	}
	if n <= 0 {
		return nil, nil, "", errorf("%w: page size %d", ErrArgument, n)
	}
	if err := validCursor(s, cursor); err != nil {
		return nil, nil, "", err
	}
	if err := q.c.ensureRead(ctx); err != nil {
		return nil, nil, "", err
	}
	members, scores, err := q.pageIn(ctx, s, key, cursor, n)
	if k, retry := q.c.leasedKey(ctx, q.keys, s, err); retry {
		key = k
		members, scores, err = q.pageIn(ctx, s, key, cursor, n)
	}
	if err != nil {
		return nil, nil, "", errorf("emq: page of %s: %w", s, err)
	}
	ids := make([]ID, 0, len(members))
	for _, m := range members {
		id, err := ParseID(m)
		if err != nil {
			return nil, nil, "", errorf("emq: page of %s: %s holds %q, which is not an id: %w", s, key, m, err)
		}
		ids = append(ids, id)
	}
	if len(ids) < n {
		return ids, scores, "", nil
	}
	last := len(ids) - 1
	if s.Lex() {
		return ids, scores, Cursor(ids[last].String()), nil
	}
	return ids, scores, Cursor(strconv.FormatFloat(scores[last], 'f', -1, 64) + "/" + ids[last].String()), nil
}

// pageIn reads one page of the set at key: its members and their scores.
func (q *Queue) pageIn(ctx context.Context, s Set, key, cursor string, n int) (members []string, scores []float64, err error) {
	rc := q.c.rc
	if s.Lex() {
		// Every score is zero: members sort by their bytes, which for ids is
		// mint order.
		max := "+"
		if cursor != "" {
			max = "(" + cursor
		}
		got, err := rc.Do(ctx, rc.B().Zrange().Key(key).Min(max).Max("-").Bylex().Rev().Limit(0, int64(n)).Build()).AsStrSlice()
		if err != nil {
			return nil, nil, err
		}
		members = got
		scores = make([]float64, len(got))
	} else {
		// Members sort by score, then by their bytes; the cursor is the last
		// one shown: its score and id. The next page is the members of that
		// score below the id, then the members of lower scores.
		rest := "+inf"
		if cursor != "" {
			sc, id, _ := strings.Cut(cursor, "/")
			same, err := rc.Do(ctx, rc.B().Zrange().Key(key).Min(sc).Max(sc).Byscore().Rev().Withscores().Build()).AsZScores()
			if err != nil {
				return nil, nil, err
			}
			for _, z := range same {
				if z.Member < id && len(members) < n {
					members, scores = append(members, z.Member), append(scores, z.Score)
				}
			}
			rest = "(" + sc
		}
		if len(members) < n {
			zs, err := rc.Do(ctx, rc.B().Zrange().Key(key).Min(rest).Max("-inf").Byscore().Rev().Limit(0, int64(n-len(members))).Withscores().Build()).AsZScores()
			if err != nil {
				return nil, nil, err
			}
			for _, z := range zs {
				members, scores = append(members, z.Member), append(scores, z.Score)
			}
		}
	}
	return members, scores, nil
}

// ServerTime reads the server's clock (TIME), by which lease deadlines and
// run-ats are kept.
func (c *Client) ServerTime(ctx context.Context) (_ time.Time, err error) {
	defer c.afterFailure(ctx, &err)
	t, err := c.rc.Do(ctx, c.rc.B().Time().Build()).AsStrSlice()
	if err != nil {
		return time.Time{}, errorf("emq: server time: %w", err)
	}
	if len(t) != 2 {
		return time.Time{}, errorf("emq: server time: TIME answered %d values", len(t))
	}
	sec, err1 := strconv.ParseInt(t[0], 10, 64)
	usec, err2 := strconv.ParseInt(t[1], 10, 64)
	if err1 != nil || err2 != nil {
		return time.Time{}, errorf("emq: server time: TIME answered %q", t)
	}
	return time.Unix(sec, usec*1000), nil
}

// Rung reports whether the queue's doorbell holds its marker, so that an
// idle worker would wake. It only reads, also on an observing client.
func (q *Queue) Rung(ctx context.Context) (_ bool, err error) {
	defer q.c.afterFailure(ctx, &err)
	if err := q.c.ensureRead(ctx); err != nil {
		return false, err
	}
	// A list exists exactly while it holds an element: the marker.
	n, err := q.c.rc.Do(ctx, q.c.rc.B().Exists().Key(q.keys.Wake).Build()).AsInt64()
	if err != nil {
		return false, errorf("emq: reading the doorbell %s: %w", q.keys.Wake, err)
	}
	return n > 0, nil
}

// Ring rings the queue's doorbell, waking an idle worker. It reports false
// when the marker was already there.
func (q *Queue) Ring(ctx context.Context) (_ bool, err error) {
	defer q.c.afterFailure(ctx, &err)
	if err := q.c.ensure(ctx); err != nil {
		return false, err
	}
	call := wire.RingCall{Wake: q.keys.Wake}
	n, err := call.Exec(ctx, q.c.rc)
	return n == wire.RingRung, err
}

// ReviveAll moves each dead job of ids back to pending, in order, keeping
// its attempts, and then, when one was revived, rings the doorbell once
// (Revive rings after each). revived[i] tells whether ids[i] was revived
// (false: it was not dead, and is left as it is); rung whether the ring
// put the marker there (false when nothing was revived or the marker was
// already there). Every id is checked before anything is sent. It stops at
// the first error, returning what it did and still ringing for the jobs it
// revived.
func (q *Queue) ReviveAll(ctx context.Context, ids []ID) (revived []bool, rung bool, err error) {
	defer q.c.afterFailure(ctx, &err)
	rows := make([]string, len(ids))
	for i, id := range ids {
		if rows[i], err = q.keys.Row(id); err != nil {
			return nil, false, err
		}
	}
	if err := q.c.ensure(ctx); err != nil {
		return nil, false, err
	}
	any := false
	for i, id := range ids {
		call := wire.ReviveCall{Dead: q.keys.Dead, Pending: q.keys.Pending, Row: rows[i], ID: id}
		n, cerr := call.Exec(ctx, q.c.rc)
		if cerr != nil {
			err = errorf("emq: revive %s: %w", id, cerr)
			break
		}
		revived = append(revived, n == wire.ReviveRevived)
		any = any || n == wire.ReviveRevived
	}
	if any {
		ring := wire.RingCall{Wake: q.keys.Wake}
		n, rerr := ring.Exec(ctx, q.c.rc)
		if rerr != nil {
			err = join(err, errorf("emq: ringing the doorbell: %w", rerr))
		}
		rung = n == wire.RingRung
	}
	return revived, rung, err
}

// CheckCursor returns nil when cursor is one Page can have returned for set
// s (or the empty Cursor, the first page): an id for a set whose members all
// score zero, "score/id" with a decimal score for a scored set. Otherwise
// it returns an error wrapping ErrArgument that says which form s takes.
// It sends nothing; Page and PageEntries check their cursor with it.
func CheckCursor(s Set, cursor Cursor) error {
	if s.State() == "" {
		return errorf("%w: unknown set %q", ErrArgument, s)
	}
	return validCursor(s, string(cursor))
}

// validCursor refuses a cursor Page cannot have returned, before anything
// is sent.
func validCursor(s Set, cursor string) error {
	if cursor == "" {
		return nil
	}
	form := "score/id"
	if s.Lex() {
		form = "an id"
	}
	bad := errorf("%w: cursor %q is not one of set %s's (%s)", ErrArgument, cursor, s, form)
	id := cursor
	if !s.Lex() {
		sc, rest, ok := strings.Cut(cursor, "/")
		if _, err := strconv.ParseInt(sc, 10, 64); !ok || err != nil {
			return bad
		}
		id = rest
	}
	if _, err := ParseID(id); err != nil {
		return bad
	}
	return nil
}

// Purge deletes a dead job for good: its row, its id and its failure
// record (forget_failures, pipelined right behind the purge in the same
// round trip: it deletes the record only once the row is gone). It
// reports false when the job is not dead (nothing is deleted).
func (q *Queue) Purge(ctx context.Context, id ID) (_ bool, err error) {
	defer q.c.afterFailure(ctx, &err)
	row, err := q.row(ctx, id)
	if err != nil {
		return false, err
	}
	call := wire.PurgeCall{Dead: q.keys.Dead, Row: row, ID: id}
	forget := wire.ForgetFailuresCall{Failures: q.keys.Failures, Rows: []string{row}, IDs: []ID{id}}
	res := q.c.execScripts(ctx, []*wire.Script{wire.ScriptPurge, wire.ScriptForgetFailures}, []rueidis.LuaExec{call.LuaExec(), forget.LuaExec()})
	n, err := wire.DecodePurge(res[0])
	if err != nil {
		return false, err
	}
	if _, ferr := wire.DecodeForgetFailures(res[1]); ferr != nil {
		q.c.log.Debug("emq: forgetting a purged job's failure record failed; maintenance sweeps it", "id", id, "err", ferr)
	}
	return n == wire.PurgePurged, nil
}
