package emq

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
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
}

// Get reads one job: its row and its score in the set its state names, in
// one round trip. ok is false when the job does not exist (never enqueued,
// or completed and retired).
func (q *Queue) Get(ctx context.Context, id ID) (JobInfo, bool, error) {
	row, err := q.row(ctx, id)
	if err != nil {
		return JobInfo{}, false, err
	}
	rc := q.c.rc
	cmds := rueidis.Commands{rc.B().Hgetall().Key(row).Build()}
	sets := Sets()
	for _, s := range sets {
		cmds = append(cmds, rc.B().Zscore().Key(q.keys.Set(s)).Member(id.String()).Build())
	}
	res := rc.DoMulti(ctx, cmds...)
	m, err := res[0].AsStrMap()
	if err != nil {
		return JobInfo{}, false, fmt.Errorf("emq: get %s: %w", id, err)
	}
	if len(m) == 0 {
		return JobInfo{}, false, nil
	}
	info := JobInfo{ID: id, Payload: []byte(m[FieldPayload])}
	st, ok := ParseState(m[FieldState])
	if !ok {
		return JobInfo{}, false, fmt.Errorf("emq: get %s: the row holds an unknown state %q", id, m[FieldState])
	}
	info.State = st
	if info.Attempts, err = strconv.ParseInt(m[FieldToken], 10, 64); err != nil {
		return JobInfo{}, false, fmt.Errorf("emq: get %s: the row's token %q: %w", id, m[FieldToken], err)
	}
	for i, s := range sets {
		if s != st.Set() || s.Lex() {
			continue
		}
		if score, err := res[i+1].AsFloat64(); err == nil {
			info.At = time.UnixMilli(int64(score))
		}
	}
	return info, true, nil
}

// Cursor marks where a page of a set ended; the zero Cursor starts at the
// newest. It is opaque: pass back what Page returned.
type Cursor string

// Page returns up to n ids of set s, newest first, starting after cursor
// ("" for the first page), and the cursor of the next page ("" when this
// was the last). Pages are stable under concurrent change: an id never
// shows twice across pages, and an id present throughout is never skipped.
func (q *Queue) Page(ctx context.Context, s Set, after Cursor, n int) ([]ID, Cursor, error) {
	cursor := string(after)
	key := q.keys.Set(s)
	if key == "" {
		return nil, "", fmt.Errorf("%w: unknown set %q", ErrArgument, s)
	}
	if n <= 0 {
		return nil, "", fmt.Errorf("%w: page size %d", ErrArgument, n)
	}
	if err := validCursor(s, cursor); err != nil {
		return nil, "", err
	}
	if err := q.c.ensure(ctx); err != nil {
		return nil, "", err
	}
	rc := q.c.rc
	var members []string
	var scores []float64
	if s.Lex() {
		// Every score is zero: members sort by their bytes, which for ids is
		// mint order.
		max := "+"
		if cursor != "" {
			if _, err := ParseID(cursor); err != nil {
				return nil, "", fmt.Errorf("%w: cursor %q", ErrArgument, cursor)
			}
			max = "(" + cursor
		}
		got, err := rc.Do(ctx, rc.B().Zrange().Key(key).Min(max).Max("-").Bylex().Rev().Limit(0, int64(n)).Build()).AsStrSlice()
		if err != nil {
			return nil, "", fmt.Errorf("emq: page of %s: %w", s, err)
		}
		members = got
	} else {
		// Members sort by score, then by their bytes; the cursor is the last
		// one shown: its score and id. The next page is the members of that
		// score below the id, then the members of lower scores.
		rest := "+inf"
		if cursor != "" {
			sc, id, ok := strings.Cut(cursor, "/")
			if _, err := strconv.ParseInt(sc, 10, 64); !ok || err != nil {
				return nil, "", fmt.Errorf("%w: cursor %q", ErrArgument, cursor)
			}
			if _, err := ParseID(id); err != nil {
				return nil, "", fmt.Errorf("%w: cursor %q", ErrArgument, cursor)
			}
			same, err := rc.Do(ctx, rc.B().Zrange().Key(key).Min(sc).Max(sc).Byscore().Rev().Withscores().Build()).AsZScores()
			if err != nil {
				return nil, "", fmt.Errorf("emq: page of %s: %w", s, err)
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
				return nil, "", fmt.Errorf("emq: page of %s: %w", s, err)
			}
			for _, z := range zs {
				members, scores = append(members, z.Member), append(scores, z.Score)
			}
		}
	}
	ids := make([]ID, 0, len(members))
	for _, m := range members {
		id, err := ParseID(m)
		if err != nil {
			return nil, "", fmt.Errorf("emq: page of %s: %w", s, err)
		}
		ids = append(ids, id)
	}
	if len(ids) < n {
		return ids, "", nil
	}
	last := len(ids) - 1
	if s.Lex() {
		return ids, Cursor(ids[last].String()), nil
	}
	return ids, Cursor(strconv.FormatInt(int64(scores[last]), 10) + "/" + ids[last].String()), nil
}

// validCursor refuses a cursor Page cannot have returned, before anything
// is sent.
func validCursor(s Set, cursor string) error {
	if cursor == "" {
		return nil
	}
	id := cursor
	if !s.Lex() {
		sc, rest, ok := strings.Cut(cursor, "/")
		if _, err := strconv.ParseInt(sc, 10, 64); !ok || err != nil {
			return fmt.Errorf("%w: cursor %q", ErrArgument, cursor)
		}
		id = rest
	}
	if _, err := ParseID(id); err != nil {
		return fmt.Errorf("%w: cursor %q", ErrArgument, cursor)
	}
	return nil
}

// Purge deletes a dead job for good: its row and its id. It reports false
// when the job is not dead (nothing is deleted).
func (q *Queue) Purge(ctx context.Context, id ID) (bool, error) {
	row, err := q.row(ctx, id)
	if err != nil {
		return false, err
	}
	call := PurgeCall{Dead: q.keys.Dead, Row: row, ID: id}
	n, err := call.Exec(ctx, q.c.rc)
	return n == PurgePurged, err
}
