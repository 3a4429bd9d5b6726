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

// This file holds what an operator's tool (a dashboard, a command line)
// needs beyond a queue's transitions: finding the queues of a keyspace,
// the age of a backlog, the leases and run-ats that are due, a queue's
// migration record, and running a scheduled job now.

// ListOptions bounds ListQueues. The zero value uses the defaults.
type ListOptions struct {
	// Count is SCAN's COUNT hint, the keys the server looks at per call
	// (default 1000).
	Count int64
	// MaxCalls bounds the SCAN calls sent to each node (default 10000);
	// at the bound ListQueues stops and reports the list incomplete.
	MaxCalls int
	// Limit bounds how many queue names are returned (default 10000);
	// when one more is found ListQueues stops and reports the list
	// incomplete.
	Limit int
}

// QueueList is what ListQueues found.
type QueueList struct {
	// Names are the queues found, sorted, without duplicates.
	Names []string
	// Complete reports that every node's SCAN ran to its end within the
	// bounds, so that Names holds every queue that had a set throughout.
	Complete bool
}

// keyShape is the queue class of the key grammar, split around the
// queue's hashtag: a per-queue key is prefix + "{" + queue + "}" + suffix,
// and the suffixes of the sets are kept to recognise their keys.
type keyShape struct {
	prefix   string
	suffixes []string
}

// shapeQueue is any well-formed queue name; only the keys built for it are
// read, to learn the grammar's shape.
const shapeQueue = "q"

func queueShape() keyShape {
	k, err := wire.NewQueueKeys(shapeQueue)
	if err != nil {
		panic(err) // shapeQueue is well formed
	}
	tag := "{" + shapeQueue + "}"
	prefix, _, _ := strings.Cut(k.Set(SetPending), tag)
	var sh keyShape
	sh.prefix = prefix
	for _, s := range Sets() {
		sh.suffixes = append(sh.suffixes, strings.TrimPrefix(k.Set(s), prefix+tag))
	}
	return sh
}

// queueOf returns the queue whose set key is key, and whether key is one.
func (sh keyShape) queueOf(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, sh.prefix+"{")
	if !ok {
		return "", false
	}
	name, suffix, ok := strings.Cut(rest, "}")
	if !ok || !slices.Contains(sh.suffixes, suffix) || ValidateQueueName(name) != nil {
		return "", false
	}
	return name, true
}

// globEscape escapes the characters SCAN's MATCH treats as special.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ListQueues finds the queues of the keyspace: every queue with at least
// one of its sorted sets, on every node of a cluster. It never sends KEYS:
// it walks each node with SCAN, matching the key grammar's per-queue keys
// and only sorted sets (TYPE), so job rows are filtered out by the server;
// a key that does not parse as a set of a well-formed queue is ignored. The
// walk is bounded by o; a queue created or emptied during the walk may or
// may not be listed. It only reads, also on an observing client.
func (c *Client) ListQueues(ctx context.Context, o ListOptions) (_ QueueList, err error) {
	defer c.afterFailure(ctx, &err)
	if o.Count <= 0 {
		o.Count = 1000
	}
	if o.MaxCalls <= 0 {
		o.MaxCalls = 10000
	}
	if o.Limit <= 0 {
		o.Limit = 10000
	}
	if err := c.ensureRead(ctx); err != nil {
		return QueueList{}, err
	}
	sh := queueShape()
	match := globEscape(sh.prefix) + "{*}*"
	found := map[string]bool{}
	complete := true
	nodes := c.rc.Nodes()
	addrs := make([]string, 0, len(nodes))
	for a := range nodes {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	for _, addr := range addrs {
		node := nodes[addr]
		cursor, calls := uint64(0), 0
		for {
			if calls == o.MaxCalls || !complete {
				complete = false
				break
			}
			calls++
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(match).Count(o.Count).Type("zset").Build()).AsScanEntry()
			if err != nil {
				return QueueList{}, errorf("emq: listing queues: SCAN on %s: %w", addr, err)
			}
			for _, k := range e.Elements {
				name, ok := sh.queueOf(k)
				switch {
				case !ok || found[name]:
				case len(found) < o.Limit:
					found[name] = true
				default:
					complete = false // a queue beyond the limit
				}
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	names := make([]string, 0, len(found))
	for n := range found {
		names = append(names, n)
	}
	slices.Sort(names)
	return QueueList{Names: names, Complete: complete}, nil
}

// Oldest returns the id Page shows last in set s: in a set whose members
// all score zero (Set.Lex: pending, dead) the oldest by mint time, whose
// ID.Time says how long the backlog has waited; in a scored set the one
// with the lowest score (the earliest lease deadline or run-at). ok is
// false when the set is empty. One command; it only reads, also on an
// observing client.
func (q *Queue) Oldest(ctx context.Context, s Set) (id ID, ok bool, err error) {
	defer q.c.afterFailure(ctx, &err)
	key := q.keys.Set(s)
	if key == "" {
		return ID{}, false, errorf("%w: unknown set %q", ErrArgument, s)
	}
	if err := q.c.ensureRead(ctx); err != nil {
		return ID{}, false, err
	}
	rc := q.c.rc
	got, err := q.doSet(ctx, s, func(key string) rueidis.Completed {
		if s.Lex() {
			return rc.B().Zrange().Key(key).Min("-").Max("+").Bylex().Limit(0, 1).Build()
		}
		return rc.B().Zrange().Key(key).Min("0").Max("0").Build()
	}).AsStrSlice()
	if err != nil {
		return ID{}, false, errorf("emq: oldest of %s: %w", s, err)
	}
	if len(got) == 0 {
		return ID{}, false, nil
	}
	if id, err = ParseID(got[0]); err != nil {
		return ID{}, false, errorf("emq: oldest of %s: %s holds %q, which is not an id: %w", s, key, got[0], err)
	}
	return id, true, nil
}

// Due counts the members of the scored set s whose score is at or before
// at: in the active set the leases that have expired by then (maintenance
// reaps them), in the schedule set the jobs whose run-at has come
// (maintenance promotes them). Pass the server's clock (Client.ServerTime)
// to count what is due now. A set whose members all score zero is refused
// with ErrArgument. One command; it only reads, also on an observing
// client.
func (q *Queue) Due(ctx context.Context, s Set, at time.Time) (_ int64, err error) {
	defer q.c.afterFailure(ctx, &err)
	key := q.keys.Set(s)
	if key == "" || s.Lex() {
		return 0, errorf("%w: %q is not a scored set", ErrArgument, s)
	}
	if err := q.c.ensureRead(ctx); err != nil {
		return 0, err
	}
	rc := q.c.rc
	n, err := q.doSet(ctx, s, func(key string) rueidis.Completed {
		return rc.B().Zcount().Key(key).Min("-inf").Max(strconv.FormatInt(at.UnixMilli(), 10)).Build()
	}).AsInt64()
	if err != nil {
		return 0, errorf("emq: due in %s: %w", s, err)
	}
	return n, nil
}

// Migration reads the queue's migration record in the reserve
// (KeyMigration): the fields a migration tool wrote, as found, or an empty
// map for a queue that was never migrated. One command; it only reads,
// also on an observing client.
func (q *Queue) Migration(ctx context.Context) (_ map[string]string, err error) {
	defer q.c.afterFailure(ctx, &err)
	key, err := wire.KeyMigration(q.Name())
	if err != nil {
		return nil, err
	}
	if err := q.c.ensureRead(ctx); err != nil {
		return nil, err
	}
	m, err := q.c.rc.Do(ctx, q.c.rc.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil {
		return nil, errorf("emq: reading %s: %w", key, err)
	}
	return m, nil
}

// RunNow makes a scheduled job pending now instead of at its run-at. It
// reports false, changing nothing, when the job is not scheduled. It moves
// the job's run-at to the epoch (ZADD XX, so a job that left the schedule
// meanwhile is not put back), which makes it due and sorts it before every
// job whose run-at was not moved, then runs the promote script for the
// due jobs that sort up to it (jobs that were due anyway) and rings the
// doorbell. true means the job left the schedule: promoted here, or by
// maintenance in between.
func (q *Queue) RunNow(ctx context.Context, id ID) (_ bool, err error) {
	defer q.c.afterFailure(ctx, &err)
	if _, err := q.keys.Row(id); err != nil {
		return false, err
	}
	if err := q.c.ensure(ctx); err != nil {
		return false, err
	}
	rc, key := q.c.rc, q.keys.Schedule
	n, err := rc.Do(ctx, rc.B().Zadd().Key(key).Xx().Ch().ScoreMember().ScoreMember(0, id.String()).Build()).AsInt64()
	if err != nil {
		return false, errorf("emq: run %s now: %w", id, err)
	}
	if n == 0 {
		// Either not scheduled, or its run-at was already the epoch.
		if _, err := rc.Do(ctx, rc.B().Zscore().Key(key).Member(id.String()).Build()).AsFloat64(); rueidis.IsRedisNil(err) {
			return false, nil
		} else if err != nil {
			return false, errorf("emq: run %s now: %w", id, err)
		}
	}
	// The jobs at the epoch were all asked to run now; a few rounds cover
	// the ones that other callers add meanwhile.
	for range 3 {
		due, err := rc.Do(ctx, rc.B().Zcount().Key(key).Min("-inf").Max("0").Build()).AsInt64()
		if err != nil {
			return false, errorf("emq: run %s now: %w", id, err)
		}
		if due > 0 {
			if _, err := q.Promote(ctx, int(due)); err != nil {
				return false, errorf("emq: run %s now: %w", id, err)
			}
		}
		if _, err := rc.Do(ctx, rc.B().Zscore().Key(key).Member(id.String()).Build()).AsFloat64(); rueidis.IsRedisNil(err) {
			if _, err := q.Ring(ctx); err != nil {
				return true, errorf("emq: run %s now: ringing the doorbell: %w", id, err)
			}
			return true, nil
		} else if err != nil {
			return false, errorf("emq: run %s now: %w", id, err)
		}
	}
	return false, errorf("emq: run %s now: the job is still scheduled after three promotions", id)
}

// CountUpTo counts the ids of set s minted at or before id, in a set whose
// members all score zero (Set.Lex: pending, dead), where byte order is mint
// order: a sampler that noted the newest pending id counts, later, how many
// of the jobs pending then are pending still. A scored set is refused with
// ErrArgument. One command (ZLEXCOUNT); it only reads, also on an observing
// client.
func (q *Queue) CountUpTo(ctx context.Context, s Set, id ID) (_ int64, err error) {
	defer q.c.afterFailure(ctx, &err)
	key := q.keys.Set(s)
	if key == "" || !s.Lex() {
		return 0, errorf("%w: %q is not a set ordered by id", ErrArgument, s)
	}
	if id.IsZero() {
		return 0, errorf("%w: the zero ID", ErrID)
	}
	if err := q.c.ensureRead(ctx); err != nil {
		return 0, err
	}
	rc := q.c.rc
	n, err := rc.Do(ctx, rc.B().Zlexcount().Key(key).Min("-").Max("["+id.String()).Build()).AsInt64()
	if err != nil {
		return 0, errorf("emq: counting %s up to %s: %w", s, id, err)
	}
	return n, nil
}

// QueueStats is the state of one queue at one moment, as an operator's
// tool shows it.
type QueueStats struct {
	Queue string
	// Sizes are the sizes of the queue's sets.
	Sizes map[Set]int64
	// Rung reports that the doorbell holds its marker.
	Rung bool
	// Migration is the queue's migration record as found, empty for a
	// queue that was never migrated.
	Migration map[string]string
	// OldestPending is the oldest pending job (Oldest of the pending set),
	// the zero ID when none is pending; its age is At minus its mint time.
	OldestPending ID
	// ExpiredLeases and DueScheduled are Due of the active and the
	// schedule sets at At.
	ExpiredLeases, DueScheduled int64
	// Paused and Concurrency are the queue's policy (echomq 2.7.0; see
	// Queue.Policy): claims lease nothing while it is paused, and at most
	// Concurrency of its jobs are leased at once (0: no cap). Under a
	// policy, Sizes[SetActive] counts the running set.
	Paused      bool
	Concurrency int
	// RateLimit and RatePeriod are the queue's rate limit (echomq 2.8.0;
	// see Queue.SetRateLimit): at most RateLimit of its jobs started in
	// any window of RatePeriod (0, 0: no limit); AdmitIn is how long until
	// the limit admits the next start (0: now, or no limit).
	RateLimit           int
	RatePeriod, AdmitIn time.Duration
	// At is the server's clock when the stats were read.
	At time.Time
}

// OldestPendingAge is how long the oldest pending job has waited since it
// was minted, at At; zero when nothing is pending.
func (st QueueStats) OldestPendingAge() time.Duration {
	if st.OldestPending.IsZero() {
		return 0
	}
	return max(0, st.At.Sub(st.OldestPending.Time()))
}

// MaxStatsQueues is the most queues one Stats call reads.
const MaxStatsQueues = 1000

// Stats reads the state of each queue of names: what Sizes, Rung,
// Migration, Oldest of the pending set and Due of the active and schedule
// sets read, for all of them in one pipelined round trip after reading the
// server's clock (TIME), in the order of names. Every name is checked
// first, and more than MaxStatsQueues are refused with ErrArgument, before
// anything is sent. It only reads, also on an observing client.
func (c *Client) Stats(ctx context.Context, names []string) (_ []QueueStats, err error) {
	defer c.afterFailure(ctx, &err)
	if len(names) > MaxStatsQueues {
		return nil, errorf("%w: %d queues, more than %d", ErrArgument, len(names), MaxStatsQueues)
	}
	keys := make([]wire.QueueKeys, len(names))
	migration := make([]string, len(names))
	for i, n := range names {
		var err error
		if keys[i], err = wire.NewQueueKeys(n); err != nil {
			return nil, err
		}
		if migration[i], err = wire.KeyMigration(n); err != nil {
			return nil, err
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	if err := c.ensureRead(ctx); err != nil {
		return nil, err
	}
	now, err := c.ServerTime(ctx)
	if err != nil {
		return nil, err
	}
	at := strconv.FormatInt(now.UnixMilli(), 10)
	rc, sets := c.rc, Sets()
	per := len(sets) + 6
	cmds := make(rueidis.Commands, 0, per*len(names))
	pols := make([]rueidis.LuaExec, len(names))
	for i, k := range keys {
		pc := wire.ReadPolicyCall{Active: k.Active, Running: k.Running, Policy: k.Policy, Starts: k.Starts}
		pols[i] = pc.LuaExec()
		for _, s := range sets {
			cmds = append(cmds, rc.B().Zcard().Key(k.Set(s)).Build())
		}
		cmds = append(cmds,
			rc.B().Exists().Key(k.Wake).Build(),
			rc.B().Hgetall().Key(migration[i]).Build(),
			rc.B().Zrange().Key(k.Pending).Min("-").Max("+").Bylex().Limit(0, 1).Build(),
			rc.B().Zcount().Key(k.Active).Min("-inf").Max(at).Build(),
			rc.B().Zcount().Key(k.Schedule).Min("-inf").Max(at).Build(),
			c.evalshaRO(wire.ScriptReadPolicy, pols[i]))
	}
	res := rc.DoMulti(ctx, cmds...)
	out := make([]QueueStats, len(names))
	for i, n := range names {
		r := res[i*per : (i+1)*per]
		st := QueueStats{Queue: n, Sizes: make(map[Set]int64, len(sets)), At: now}
		pol := c.againRO(ctx, []*wire.Script{wire.ScriptReadPolicy}, pols[i:i+1], r[per-1:])[0]
		rp, err := wire.DecodeReadPolicy(pol)
		if err != nil {
			return nil, errorf("emq: stats of %s: the policy: %w", n, err)
		}
		p := policyOf(rp)
		st.Paused, st.Concurrency, st.RateLimit, st.RatePeriod, st.AdmitIn = p.Paused, p.Concurrency, p.RateLimit, p.RatePeriod, p.AdmitIn
		for j, s := range sets {
			if key, retry := c.leasedKey(ctx, keys[i], s, r[j].Error()); retry {
				r[j] = rc.Do(ctx, rc.B().Zcard().Key(key).Build())
			}
			if st.Sizes[s], err = r[j].AsInt64(); err != nil {
				return nil, errorf("emq: stats of %s: the size of %s: %w", n, s, err)
			}
		}
		r = r[len(sets):]
		bell, err := r[0].AsInt64()
		if err != nil {
			return nil, errorf("emq: stats of %s: the doorbell: %w", n, err)
		}
		st.Rung = bell > 0
		if st.Migration, err = r[1].AsStrMap(); err != nil {
			return nil, errorf("emq: stats of %s: %s: %w", n, migration[i], err)
		}
		oldest, err := r[2].AsStrSlice()
		if err != nil {
			return nil, errorf("emq: stats of %s: the oldest pending job: %w", n, err)
		}
		if len(oldest) == 1 {
			if st.OldestPending, err = ParseID(oldest[0]); err != nil {
				return nil, errorf("emq: stats of %s: %s holds %q, which is not an id: %w", n, keys[i].Pending, oldest[0], err)
			}
		}
		if key, retry := c.leasedKey(ctx, keys[i], SetActive, r[3].Error()); retry {
			r[3] = rc.Do(ctx, rc.B().Zcount().Key(key).Min("-inf").Max(at).Build())
		}
		if st.ExpiredLeases, err = r[3].AsInt64(); err != nil {
			return nil, errorf("emq: stats of %s: expired leases: %w", n, err)
		}
		if st.DueScheduled, err = r[4].AsInt64(); err != nil {
			return nil, errorf("emq: stats of %s: due run-ats: %w", n, err)
		}
		out[i] = st
	}
	return out, nil
}
