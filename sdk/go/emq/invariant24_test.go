package emq_test

// TestInvariant's echomq 2.4.0 operations: add_many with delays and
// policies of the jobs' own, complete_result_claim_ids with a retention,
// fail by policy, reap_recorded_ids, progress, revive_recorded and
// forget_ids, through the SDK's Queue methods; output, counters and
// events through their generated calls. The model follows the options and
// progress hashes, the kept completion records, the number of events and
// the counters' totals, and check holds the keyspace to it.

import (
	"errors"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// invResult is a kept completion record.
type invResult struct {
	at      int64
	attempt int64
	result  string
}

// invPolicy is a job's own retry policy, as add_many recorded it.
type invPolicy struct {
	attempts int64
	backoff  emq.BackoffPolicy
}

const (
	invCompleted = iota
	invFailed
	invRetried
	invDead
)

// scan24 reads a 2.4.0 key into the snapshot; false when key is none.
func (v *invariant) scan24(s *invSnap, key, typ string, r rueidis.RedisResult) bool {
	v.t.Helper()
	ids := func(what string) map[emq.ID]bool {
		fields, err := r.AsStrSlice()
		if err != nil {
			v.fail("HKEYS %s: %v", key, err)
		}
		out := map[emq.ID]bool{}
		for _, f := range fields {
			id, err := emq.ParseID(f)
			if err != nil {
				v.fail("the %s hold %q, not an id: %v", what, f, err)
			}
			out[id] = true
		}
		return out
	}
	want := map[string]string{v.k.Options: "hash", v.k.Results: "hash", v.k.Progress: "hash", v.k.ResultTimes: "zset", v.k.Events: "stream", v.k.Counters: "hash"}
	w, ok := want[key]
	if !ok {
		return false
	}
	if typ != w {
		v.fail("%s is a %s; want a %s", key, typ, w)
	}
	switch key {
	case v.k.Options:
		s.options = ids("retry policies")
	case v.k.Results:
		s.results = ids("completion records")
	case v.k.Progress:
		m, err := r.AsStrMap()
		if err != nil {
			v.fail("HGETALL %s: %v", key, err)
		}
		for f, p := range m {
			id, err := emq.ParseID(f)
			if err != nil {
				v.fail("the progress reports hold %q, not an id: %v", f, err)
			}
			s.progress[id] = p
		}
	case v.k.ResultTimes:
		zs, err := r.AsZScores()
		if err != nil {
			v.fail("ZRANGE %s: %v", key, err)
		}
		for _, z := range zs {
			id, err := emq.ParseID(z.Member)
			if err != nil {
				v.fail("the retention index holds %q, not an id: %v", z.Member, err)
			}
			s.resultTimes[id] = int64(z.Score)
		}
	case v.k.Events:
		n, err := r.AsInt64()
		if err != nil {
			v.fail("XLEN %s: %v", key, err)
		}
		s.events = n
	case v.k.Counters:
		recs, err := wire.DecodeCounters(r)
		if err != nil || len(recs) == 0 {
			v.fail("counters %s: %d records, %v", key, len(recs), err)
		}
		t := recs[0]
		s.counters = [4]int64{t.Completed, t.Failed, t.Retried, t.Dead}
	}
	return true
}

// check24 holds the 2.4.0 keys to the model.
func (v *invariant) check24(s invSnap) {
	v.t.Helper()
	if !sameIDs(s.options, v.model.options) {
		v.fail("the retry policies are of %v; the model has %v", keysOf(s.options), keysOf(v.model.options))
	}
	if len(s.progress) != len(v.model.progress) {
		v.fail("the progress reports %v; the model has %v", s.progress, v.model.progress)
	}
	for id, p := range v.model.progress {
		if s.progress[id] != p {
			v.fail("the progress of %v is %q; the model says %q", id, s.progress[id], p)
		}
	}
	if len(s.results) != len(v.model.results) || len(s.resultTimes) != len(v.model.results) {
		v.fail("%d completion records and %d in the retention index; the model has %d", len(s.results), len(s.resultTimes), len(v.model.results))
	}
	for id, r := range v.model.results {
		if !s.results[id] || s.resultTimes[id] != r.at {
			v.fail("the completion record of %v: kept %v at %d; the model says at %d", id, s.results[id], s.resultTimes[id], r.at)
		}
	}
	if s.events != v.model.events {
		v.fail("the events stream holds %d entries; the model wrote %d", s.events, v.model.events)
	}
	if s.counters != v.model.counters {
		v.fail("the counters' totals %v; the model says %v", s.counters, v.model.counters)
	}
}

func sameIDs[V any](a map[emq.ID]bool, b map[emq.ID]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

func keysOf[V any](m map[emq.ID]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k.String())
	}
	sort.Strings(out)
	return out
}

// eventsMax picks an events bound: none, or one no run reaches.
func (v *invariant) eventsMax() int {
	if v.rnd.IntN(4) == 0 {
		return 0
	}
	return 100000
}

// event counts n entries written when eventsMax is above 0.
func (v *invariant) event(eventsMax, n int) {
	if eventsMax > 0 {
		v.model.events += int64(n)
	}
}

// scheduleHead is the id the schedule ranks first, and its run-at.
func (v *invariant) scheduleHead() (emq.ID, int64, bool) {
	order, _, _ := v.due(emq.StateScheduled, 0, 0)
	if len(order) == 0 {
		return emq.ID{}, 0, false
	}
	return order[0], v.model.jobs[order[0]].score, true
}

// policy picks a job's own policy: mostly none, else attempts and/or a
// backoff.
func (v *invariant) policy() ([]emq.PushOption, invPolicy, bool) {
	var p invPolicy
	p.backoff.Type = emq.BackoffInherit
	if v.rnd.IntN(2) == 0 {
		return nil, p, false
	}
	var opts []emq.PushOption
	if v.rnd.IntN(3) > 0 {
		p.attempts = int64(1 + v.rnd.IntN(4))
		opts = append(opts, emq.Attempts(int(p.attempts)))
	}
	if v.rnd.IntN(2) == 0 {
		p.backoff = v.backoff()
		opts = append(opts, emq.WithBackoff(p.backoff))
	}
	return opts, p, p.attempts > 0 || p.backoff.Type != emq.BackoffInherit
}

// backoff picks a short fixed or bounded exponential backoff.
func (v *invariant) backoff() emq.BackoffPolicy {
	base := time.Duration(v.rnd.IntN(3)) * time.Millisecond
	if v.rnd.IntN(2) == 0 {
		return emq.FixedBackoff(base)
	}
	return emq.ExponentialPolicy(base, time.Duration(1+v.rnd.IntN(5))*time.Millisecond)
}

// addMany admits like push_many, pending or scheduled after a delay, with
// a policy of the jobs' own when given, and rings the doorbell when it
// admits a pending job or schedules the earliest; a foreign kind refuses
// the whole call.
func (v *invariant) addMany() {
	var jobs []emq.NewJob
	for n := v.rnd.IntN(4); len(jobs) < n; {
		jobs = append(jobs, emq.NewJob{ID: v.pick(), Payload: []byte(v.payload() + "." + strconv.Itoa(len(jobs)))})
	}
	foreign := len(jobs) > 0 && v.rnd.IntN(8) == 0
	if foreign {
		jobs = append(jobs, emq.NewJob{ID: mint(v.t, v.c, emq.KindORD), Payload: []byte("order")})
	}
	var delay time.Duration
	if v.rnd.IntN(2) == 0 {
		delay = time.Duration(20+v.rnd.IntN(300)) * time.Millisecond
	}
	opts, pol, own := v.policy()
	opts = append(opts, emq.Delay(delay))
	v.note("add_many %d jobs delay %v policy %+v (foreign %v)", len(jobs), delay, pol, foreign)
	_, head, scheduled := v.scheduleHead()
	t0 := v.now()
	got, err := v.q.AddMany(v.ctx, jobs, opts...)
	t1 := v.now()
	if foreign {
		var ce *emq.ClassError
		if got != nil || !errors.Is(err, emq.ErrKind) || !errors.As(err, &ce) || ce.Script != wire.ScriptAddMany.Name {
			v.fail("AddMany with a foreign kind = %v, %v; want EMQKIND", got, err)
		}
		v.count(wire.ScriptAddMany.Name, false)
		return
	}
	if err != nil || len(got) != len(jobs) {
		v.fail("AddMany(%d jobs) = %v, %v", len(jobs), got, err)
	}
	added := 0
	var runAt int64
	for i, j := range jobs {
		_, exists := v.model.jobs[j.ID]
		if got[i].Enqueued == exists {
			v.fail("AddMany job %d (%v) enqueued %v; the row exists: %v", i, j.ID, got[i].Enqueued, exists)
		}
		if !got[i].Enqueued {
			if !got[i].RunAt.IsZero() {
				v.fail("AddMany job %d: a duplicate with a run-at %v", i, got[i].RunAt)
			}
			continue
		}
		added++
		job := &invJob{state: emq.StatePending, payload: string(j.Payload)}
		if delay > 0 {
			at := got[i].RunAt.UnixMilli()
			v.within("add_many run-at", at, t0+delay.Milliseconds(), t1+delay.Milliseconds())
			if runAt != 0 && at != runAt {
				v.fail("AddMany job %d runs at %d; the call's run-at is %d", i, at, runAt)
			}
			runAt = at
			job.state, job.score = emq.StateScheduled, at
		} else if !got[i].RunAt.IsZero() {
			v.fail("AddMany job %d admitted pending with a run-at %v", i, got[i].RunAt)
		}
		v.model.jobs[j.ID] = job
		if own {
			v.model.options[j.ID] = pol
		}
	}
	if added > 0 && (delay == 0 || !scheduled || runAt < head) {
		v.model.wake = true
	}
	v.count(wire.ScriptAddMany.Name, added > 0)
}

// completeResult completes like complete_claim_ids, deletes the job's
// failure record, progress and policy, keeps its result by the
// retention, reports and counts the completion.
func (v *invariant) completeResult() {
	id := v.target()
	tok, ids, lease := v.token(id), v.someIDs(emq.StatePending), v.lease()
	keep := v.rnd.IntN(4)
	var age time.Duration
	if v.rnd.IntN(4) == 0 {
		age = time.Hour
	}
	c := emq.Completion{Result: []byte("r" + strconv.Itoa(v.step)), Keep: emq.Retention{Count: keep, Age: age}, EventsMax: v.eventsMax()}
	if v.rnd.IntN(4) == 0 {
		c.Result = nil
	}
	v.note("complete_result_claim_ids %v token %d %v %v keep %d", id, tok, ids, lease, keep)
	if keep > 0 {
		// A record strictly younger than every kept one, so that the
		// retention's order (by time, then id) is the model's.
		last := int64(0)
		for _, r := range v.model.results {
			last = max(last, r.at)
		}
		for v.now() <= last {
			time.Sleep(time.Millisecond)
		}
	}
	t0 := v.now()
	got, err := v.q.CompleteResult(v.ctx, id, tok, lease, ids, c)
	t1 := v.now()
	v.count(wire.ScriptCompleteRateIDs.Name, err == nil)
	if !v.current(id, tok) {
		v.wantStale(err, wire.ScriptCompleteRateIDs.Name)
		if got != nil {
			v.fail("the refused complete_result_claim_ids leased %+v", got)
		}
		return
	}
	if err != nil {
		v.fail("CompleteResult(%v, %d) with the current token: %v", id, tok, err)
	}
	attempt := v.model.jobs[id].attempts
	v.retire(id)
	delete(v.model.records, id)
	delete(v.model.progress, id)
	delete(v.model.options, id)
	v.model.counters[invCompleted]++
	v.event(c.EventsMax, 1)
	if keep > 0 {
		// The record's time is read back (the call's clock, inside its
		// window); then the oldest beyond keep are dropped, ties in id
		// order, as the retention index ranks them.
		rc := v.c.Redis()
		at, err := rc.Do(v.ctx, rc.B().Zscore().Key(v.k.ResultTimes).Member(id.String()).Build()).AsInt64()
		if err != nil {
			v.fail("ZSCORE of %v's completion (keep %d): %v", id, keep, err)
		}
		kept := true
		v.within("completion time", at, t0, t1)
		v.model.results[id] = invResult{at: at, attempt: attempt, result: string(c.Result)}
		order := make([]emq.ID, 0, len(v.model.results))
		for r := range v.model.results {
			order = append(order, r)
		}
		sort.Slice(order, func(a, b int) bool {
			ra, rb := v.model.results[order[a]], v.model.results[order[b]]
			if ra.at != rb.at {
				return ra.at < rb.at
			}
			return order[a].String() < order[b].String()
		})
		for _, r := range order[:max(len(order)-keep, 0)] {
			delete(v.model.results, r)
		}
		if _, in := v.model.results[id]; in != kept {
			v.fail("the completion of %v kept %v; the retention keeps it: %v", id, kept, in)
		}
	}
	v.leasedIDs(wire.ScriptCompleteRateIDs.Name, got, ids, lease, t0, t1)
}

// failDelay is the delay fail applies for an attempt by backoff b and the
// jitter draw.
func failDelay(b emq.BackoffPolicy, attempt int64, jitter int) int64 {
	d := b.Delay.Milliseconds()
	if b.Type != emq.BackoffExponential {
		return d
	}
	f := float64(d) * math.Pow(2, float64(min(attempt-1, 60)))
	if m := b.Max.Milliseconds(); m > 0 && f > float64(m) {
		f = float64(m)
	}
	f = math.Min(f, 1e15)
	return int64(f - math.Floor(math.Floor(f/2)*float64(jitter)/1000))
}

// failPolicy settles a failed attempt by the job's own policy, else the
// given one: retried at its run-at (ringing the doorbell when it is the
// schedule's earliest) or buried; recorded, reported and counted.
func (v *invariant) failPolicy() {
	id := v.target()
	tok := v.token(id)
	f := v.failure()
	o := emq.FailOptions{MaxAttempts: v.rnd.IntN(5), Backoff: v.backoff(), Jitter: v.rnd.IntN(1001), Bury: v.rnd.IntN(6) == 0, EventsMax: v.eventsMax()}
	if o.Backoff.Type == emq.BackoffInherit {
		o.Backoff.Type = emq.BackoffFixed
	}
	v.note("fail %v token %d %s %+v", id, tok, f.Class, o)
	t0 := v.now()
	outcome, at, err := v.q.Fail(v.ctx, id, tok, f, o)
	t1 := v.now()
	v.count(wire.ScriptFailPolicy.Name, err == nil)
	if !v.current(id, tok) {
		v.wantStale(err, wire.ScriptFailPolicy.Name)
		return
	}
	if err != nil {
		v.fail("Fail(%v, %d) with the current token: %v", id, tok, err)
	}
	j := v.model.jobs[id]
	limit, b := int64(o.MaxAttempts), o.Backoff
	if p, ok := v.model.options[id]; ok {
		if p.attempts > 0 {
			limit = p.attempts
		}
		if p.backoff.Type != emq.BackoffInherit {
			b = p.backoff
		}
	}
	v.model.counters[invFailed]++
	v.event(o.EventsMax, 2)
	if o.Bury || (limit > 0 && tok >= limit) {
		if outcome != emq.EventDead || !at.IsZero() {
			v.fail("Fail(%v) = %s at %v; want dead (limit %d, bury %v)", id, outcome, at, limit, o.Bury)
		}
		j.state, j.score = emq.StateDead, 0
		v.model.counters[invDead]++
		v.record(id, emq.FailedAttempt{Attempt: tok, At: time.UnixMilli(-(t0 + t1)), Class: f.Class, Worker: f.Worker, Message: f.Message})
		return
	}
	d := failDelay(b, tok, o.Jitter)
	if outcome != emq.EventRetried {
		v.fail("Fail(%v) = %s; want retried (limit %d)", id, outcome, limit)
	}
	v.within("fail run-at", at.UnixMilli(), t0+d, t1+d)
	j.state, j.score = emq.StateScheduled, at.UnixMilli()
	v.model.counters[invRetried]++
	v.record(id, emq.FailedAttempt{Attempt: tok, At: time.UnixMilli(at.UnixMilli() - d), Class: f.Class, Worker: f.Worker, Message: f.Message})
	if head, _, _ := v.scheduleHead(); head == id {
		v.model.wake = true
	}
}

// reapRecordedIDs moves like reap_failed_ids, burying at the job's own
// attempts when it has them; each is reported and counted.
func (v *invariant) reapRecordedIDs() {
	ids, maxAttempts, eventsMax := v.someIDs(emq.StateActive), 0, v.eventsMax()
	if v.rnd.IntN(2) == 0 {
		maxAttempts = 1 + v.rnd.IntN(4)
	}
	v.note("reap_recorded_ids %v max %d", ids, maxAttempts)
	t0 := v.now()
	n, err := v.q.ReapRecordedIDs(v.ctx, ids, maxAttempts, eventsMax)
	t1 := v.now()
	if err != nil {
		v.fail("ReapRecordedIDs(%v): %v", ids, err)
	}
	v.count(wire.ScriptReapPolicyIDs.Name, n > 0)
	for _, id := range v.movedIDs(wire.ScriptReapPolicyIDs.Name, n, ids, emq.StateActive, t0, t1) {
		j := v.model.jobs[id]
		v.record(id, emq.FailedAttempt{Attempt: j.attempts, At: time.UnixMilli(-(t0 + t1)), Class: emq.FailureClassLeaseLost})
		limit := int64(maxAttempts)
		if p, ok := v.model.options[id]; ok && p.attempts > 0 {
			limit = p.attempts
		}
		v.model.counters[invFailed]++
		v.event(eventsMax, 2)
		if limit > 0 && j.attempts >= limit {
			j.state = emq.StateDead
			v.model.counters[invDead]++
			v.count("reap buried", true)
		} else {
			j.state = emq.StatePending
			v.model.counters[invRetried]++
			v.model.wake = true
		}
		j.score = 0
	}
}

// reportProgress replaces the lease holder's report; anyone else is
// refused.
func (v *invariant) reportProgress() {
	id := v.target()
	tok, p, eventsMax := v.token(id), "at "+strconv.Itoa(v.step), v.eventsMax()
	v.note("progress %v token %d", id, tok)
	err := v.q.ReportProgress(v.ctx, id, tok, []byte(p), eventsMax)
	v.count(wire.ScriptProgress.Name, err == nil)
	if !v.current(id, tok) {
		v.wantStale(err, wire.ScriptProgress.Name)
		return
	}
	if err != nil {
		v.fail("ReportProgress(%v, %d) with the current token: %v", id, tok, err)
	}
	v.model.progress[id] = p
	v.event(eventsMax, 1)
}

// reviveRecorded revives like revive, rings the doorbell and reports it.
func (v *invariant) reviveRecorded() {
	id := v.pickIn(emq.StateDead)
	if v.rnd.IntN(4) == 0 {
		id = v.pick()
	}
	eventsMax := v.eventsMax()
	v.note("revive_recorded %v", id)
	ok, err := v.q.ReviveRecorded(v.ctx, id, eventsMax)
	j := v.model.jobs[id]
	want := j != nil && j.state == emq.StateDead
	if err != nil || ok != want {
		v.fail("ReviveRecorded(%v) = %v, %v; want %v", id, ok, err, want)
	}
	v.count(wire.ScriptReviveRecorded.Name, ok)
	if ok {
		j.state, j.score = emq.StatePending, 0
		v.model.wake = true
		v.event(eventsMax, 1)
	}
}

// orphaned returns the ids with a failure record, a progress report or a
// policy, in id order.
func (v *invariant) orphaned() []emq.ID {
	set := map[emq.ID]bool{}
	for id := range v.model.records {
		set[id] = true
	}
	for id := range v.model.progress {
		set[id] = true
	}
	for id := range v.model.options {
		set[id] = true
	}
	ids := make([]emq.ID, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b emq.ID) int { return cmpString(a.String(), b.String()) })
	return ids
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// forgetIDs deletes the failure records, progress reports and policies
// of rows that are gone, and keeps the others.
func (v *invariant) forgetIDs() {
	ids := v.someIDs(emq.StateDead)
	for _, r := range v.orphaned() {
		if v.rnd.IntN(2) == 0 {
			ids = append(ids, r)
		}
		if len(ids) > 6 {
			break
		}
	}
	v.note("forget_ids %v", ids)
	n, err := v.q.ForgetIDs(v.ctx, ids)
	if err != nil {
		v.fail("ForgetIDs(%v): %v", ids, err)
	}
	v.count(wire.ScriptForgetIDs.Name, n > 0)
	want := 0
	for _, id := range ids {
		if v.model.jobs[id] != nil {
			continue
		}
		if len(v.model.records[id]) > 0 {
			delete(v.model.records, id)
			want++
		}
		if _, ok := v.model.progress[id]; ok {
			delete(v.model.progress, id)
			want++
		}
		if _, ok := v.model.options[id]; ok {
			delete(v.model.options, id)
			want++
		}
	}
	if n != want {
		v.fail("ForgetIDs(%v) = %d; the model deletes %d", ids, n, want)
	}
}

// output reads a job's progress while its row exists, its kept
// completion record once it is gone.
func (v *invariant) output() {
	id := v.pick()
	if v.rnd.IntN(2) == 0 && len(v.model.results) > 0 {
		var kept []emq.ID
		for r := range v.model.results {
			kept = append(kept, r)
		}
		slices.SortFunc(kept, func(a, b emq.ID) int { return cmpString(a.String(), b.String()) })
		id = kept[v.rnd.IntN(len(kept))]
	}
	v.note("output %v", id)
	call := wire.OutputCall{Row: mustRow(v.t, v.q, id), Results: v.k.Results, Progress: v.k.Progress, ID: id}
	got, err := call.Exec(v.ctx, v.c.Redis())
	if err != nil {
		v.fail("output(%v): %v", id, err)
	}
	var want wire.OutputReply
	if v.model.jobs[id] != nil {
		want.Progress = v.model.progress[id]
	} else if r, ok := v.model.results[id]; ok {
		want = wire.OutputReply{CompletedAtMS: r.at, Attempt: r.attempt, Result: r.result}
	}
	if got != want {
		v.fail("output(%v) = %+v; the model says %+v", id, got, want)
	}
	v.count(wire.ScriptOutput.Name, got != wire.OutputReply{})
}

// readCounters reads the totals (and minutes, refused beyond 1440).
func (v *invariant) readCounters() {
	minutes := int64(v.rnd.IntN(3))
	if v.rnd.IntN(4) == 0 {
		minutes = 1441
	}
	v.note("counters %d", minutes)
	call := wire.CountersCall{Counters: v.k.Counters, Minutes: minutes}
	got, err := call.Exec(v.ctx, v.c.Redis())
	v.count(wire.ScriptCounters.Name, err == nil)
	if minutes > 1440 {
		if err == nil {
			v.fail("counters(%d) = %v; want a refusal", minutes, got)
		}
		return
	}
	if err != nil || int64(len(got)) != 1+minutes {
		v.fail("counters(%d) = %v, %v", minutes, got, err)
	}
	tot := [4]int64{got[0].Completed, got[0].Failed, got[0].Retried, got[0].Dead}
	if got[0].MinuteMS != 0 || tot != v.model.counters {
		v.fail("counters totals %+v; the model says %v", got[0], v.model.counters)
	}
}

// readEvents reads a page from the oldest kept, or after an id past the
// last (empty).
func (v *invariant) readEvents() {
	count, after := int64(1+v.rnd.IntN(5)), ""
	if v.rnd.IntN(3) == 0 {
		after = strconv.FormatInt(math.MaxInt64/2, 10) + "-0"
	}
	v.note("events after %q count %d", after, count)
	call := wire.EventsCall{Events: v.k.Events, After: after, Count: count}
	got, err := call.Exec(v.ctx, v.c.Redis())
	if err != nil {
		v.fail("events(%q, %d): %v", after, count, err)
	}
	want := min(count, v.model.events)
	if after != "" {
		want = 0
	}
	if int64(len(got)) != want {
		v.fail("events(%q, %d) = %d entries; the model says %d", after, count, len(got), want)
	}
	for _, e := range got {
		if !e.Event.Registered() {
			v.fail("an event %q outside the vocabulary", e.Event)
		}
	}
	v.count(wire.ScriptEvents.Name, len(got) > 0)
}
