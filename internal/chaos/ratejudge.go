package chaos

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// This file is what the rates and mixed27rate scenarios share (echomq
// 2.8.0's rate limits): the controller that sets and removes a queue's
// rate limit through the Go SDK's Queue.SetRateLimit and keeps, for each
// change, the server's time before it was sent and after it was answered;
// a watcher that samples the pending set's size and the queue's starts
// log with the server's TIME; and the judge that holds the leases'
// starts to the limit.
//
// The rule the judge checks. A rate limit of N per period P counts the
// jobs started (leased) across every worker: at most N starts in any
// window of P consecutive server milliseconds, paced (a GCRA) at one start
// every P/N ms with one interval's tolerance. A lease's start is the server
// millisecond of its claim, which is its first deadline less the lease (a
// worker's S line, d=); every lease of a job has its own token (the row's
// attempts, one more per lease), so the tokens a job's records lack are
// leases whose holder was killed before its handler began: those are
// found in the starts log (each member is a lease, id:token, scored by the
// millisecond of its start; it stays there a period at least, so a
// watcher that reads it more often than once a period sees them all). A
// start is under the limit when its whole millisecond lies between the
// server's TIME read after the limit was set was answered and the TIME read
// before the next change was sent; a start within a change's bracket is
// judged by neither side (counted). Every window of P ms is checked over
// the starts under one setting of the limit (removing a limit deletes its
// log, and a limit set again begins a log of its own). Over the saturated
// part of each setting (the watcher saw jobs pending at every sample) the
// starts per second are measured against the limit: never above its pace
// (the span over P/N, plus the tolerance's two starts at most), and within
// the scenario's tolerance below it.

// rateLimit is a rate limit: N starts per period; N == 0 is none.
type rateLimit struct {
	N      int64
	Period time.Duration
}

func (l rateLimit) String() string {
	if l.N == 0 {
		return "no rate limit"
	}
	return fmt.Sprintf("%d per %v", l.N, l.Period)
}

// perSecond is the limit's pace in starts per second.
func (l rateLimit) perSecond() float64 { return float64(l.N) / l.Period.Seconds() }

// rateChange is one change of the controller: the server's TIME (µs) read
// before the call was sent and after it was answered, and the limit it
// left.
type rateChange struct {
	Before, After int64
	To            rateLimit
}

// rateCtl sets and removes the run's queue's rate limit and keeps the
// changes.
type rateCtl struct {
	r *run

	mu      sync.Mutex
	cur     rateLimit
	changes []rateChange
}

// set sets the limit (n == 0 removes it) through the Go SDK and keeps the
// change; what the server answered must be what was asked, and the
// tripwire must name this tree's minor while the queue has a limit and
// none once it has no policy left.
func (c *rateCtl) set(ctx context.Context, lim rateLimit) error {
	rc := c.r.chk.Client()
	before, err := serverMicros(ctx, rc)
	if err != nil {
		return err
	}
	p, err := c.r.queue.SetRateLimit(ctx, int(lim.N), lim.Period)
	if err != nil {
		return fmt.Errorf("chaos: SetRateLimit(%s): %w", lim, err)
	}
	after, err := serverMicros(ctx, rc)
	if err != nil {
		return err
	}
	got := rateLimit{N: int64(p.RateLimit), Period: p.RatePeriod}
	if lim.N == 0 {
		got.Period, lim.Period = 0, 0
	}
	c.mu.Lock()
	c.cur = got
	c.changes = append(c.changes, rateChange{Before: before, After: after, To: got})
	c.mu.Unlock()
	if got != lim {
		c.r.violate("SetRateLimit(%s) left the queue with %s", lim, got)
	}
	if minor := thisMinor(); lim.N > 0 && int64(p.Requires) != minor || lim.N == 0 && !p.Paused && p.Concurrency == 0 && p.Requires != 0 {
		c.r.violate("SetRateLimit(%s) left the tripwire naming minor %d; want %d with a limit, 0 with no policy", lim, p.Requires, minor)
	}
	c.r.count("rate_changes", 1)
	c.r.logf("rate limit: %s (server µs %d..%d)", got, before, after)
	return nil
}

// history returns the changes made so far.
func (c *rateCtl) history() []rateChange {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.changes)
}

// last returns the last change (the zero change before any).
func (c *rateCtl) last() rateChange {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.changes) == 0 {
		return rateChange{}
	}
	return c.changes[len(c.changes)-1]
}

// serverMicros reads the server's TIME, in µs.
func serverMicros(ctx context.Context, rc rueidis.Client) (int64, error) {
	return microsOf(rc.Do(ctx, rc.B().Time().Build()))
}

// microsOf reads a TIME reply, in µs.
func microsOf(m interface{ AsStrSlice() ([]string, error) }) (int64, error) {
	t, err := m.AsStrSlice()
	if err != nil {
		return 0, err
	}
	if len(t) != 2 {
		return 0, fmt.Errorf("chaos: TIME answered %v", t)
	}
	s, err1 := strconv.ParseInt(t[0], 10, 64)
	us, err2 := strconv.ParseInt(t[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("chaos: TIME answered %v", t)
	}
	return s*1_000_000 + us, nil
}

// pendingSample is one sample of the watcher: the server's TIME (µs) and
// the pending set's size then.
type pendingSample struct {
	US, Pending int64
}

// rateWatch samples the run's queue: every tick the server's TIME and the
// pending set's size, and every few ticks its starts log, each in one
// MULTI.
type rateWatch struct {
	r        *run
	every    time.Duration
	logEvery int

	mu      sync.Mutex
	samples []pendingSample
	logSeen map[string]int64 // starts log member (id:token) -> its score (ms)
	polls   []int64          // the server µs of each read of the log
	errs    int64

	stop func()
	done chan struct{}
}

// watchRates starts the watcher: samples every every, the starts log every
// logEvery samples.
func watchRates(r *run, every time.Duration, logEvery int) *rateWatch {
	ctx, stop := context.WithCancel(context.Background())
	w := &rateWatch{r: r, every: every, logEvery: max(1, logEvery), logSeen: map[string]int64{}, stop: stop, done: make(chan struct{})}
	go w.loop(ctx)
	return w
}

func (w *rateWatch) loop(ctx context.Context) {
	defer close(w.done)
	t := time.NewTicker(w.every)
	defer t.Stop()
	for i := 0; ; i++ {
		w.sample(ctx, i%w.logEvery == 0)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample reads TIME, ZCARD pending and, with log, the starts log, in one
// MULTI.
func (w *rateWatch) sample(ctx context.Context, log bool) {
	rc := w.r.chk.Client()
	k := w.r.queue.Keys()
	cmds := rueidis.Commands{rc.B().Multi().Build(), rc.B().Time().Build(), rc.B().Zcard().Key(k.Pending).Build()}
	if log {
		cmds = append(cmds, rc.B().Zrange().Key(k.Starts).Min("0").Max("-1").Withscores().Build())
	}
	cmds = append(cmds, rc.B().Exec().Build())
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	res := rc.DoMulti(sctx, cmds...)
	parts, err := res[len(res)-1].ToArray()
	if err != nil || len(parts) < 2 {
		w.mu.Lock()
		w.errs++
		w.mu.Unlock()
		return
	}
	us, err := microsOf(&parts[0])
	if err != nil {
		return
	}
	pending, err := parts[1].AsInt64()
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.samples = append(w.samples, pendingSample{US: us, Pending: pending})
	if !log || len(parts) < 3 {
		return
	}
	zs, err := parts[2].AsZScores()
	if err != nil {
		w.errs++
		return
	}
	w.polls = append(w.polls, us)
	for _, z := range zs {
		w.logSeen[z.Member] = int64(z.Score)
	}
}

// finish stops the watcher after one last sample and returns what it saw.
func (w *rateWatch) finish() (samples []pendingSample, log map[string]int64, polls []int64) {
	w.stop()
	<-w.done
	w.sample(context.Background(), true)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.errs > 0 {
		w.r.note("%d of the rate watcher's samples failed", w.errs)
	}
	return slices.Clone(w.samples), w.logSeen, slices.Clone(w.polls)
}

// rateStart is one start the judge knows of.
type rateStart struct {
	ms  int64
	key string    // id:token, as the starts log names it
	l   *leaseRec // its records; nil when only the starts log saw it
}

// rateSeg is one setting of the limit: starts whose whole millisecond lies
// in (from, to) µs are under it.
type rateSeg struct {
	from, to int64
	lim      rateLimit
}

// rateVerdict is what the judge found.
type rateVerdict struct {
	Leases, Timed int64 // leases recorded; of them with a claim time
	// Unrecorded leases: tokens a job's records lack (its holder killed
	// before its handler began); FromLog of them found in the starts log,
	// Unseen not; UnseenUnder of those surely leased under a limit (the
	// job's recorded leases before and after it were), which is a
	// violation when the watcher read the log often enough: an attempt
	// spent with no start logged.
	Unrecorded, FromLog, Unseen, UnseenUnder int64
	// LogMatched recorded starts the starts log holds at their claim's
	// millisecond; LogMismatched at another (violations); LogMissing
	// recorded starts under the limit the log never showed although the
	// watcher read it often enough (violations).
	LogMatched, LogMismatched, LogMissing int64
	LogCovered                            bool  // the watcher read the log at least once a period under every setting
	LogMaxGapMS                           int64 // the longest the watcher went without reading the log under a setting
	UnderLimit, InBrackets                int64 // starts surely under a limit; starts within a change's bracket
	WindowMax                             int64 // the most starts in a window of the period (under one setting)
	WindowBreaches                        int64 // starts that ended a window holding more than the limit (violations)
	// Over the saturated spans: the starts, the spans' total (µs), and
	// the spans whose starts outran the limit's pace (violations).
	SatStarts, SatUS, SatOver int64
	SatSpans                  int64
	OldUnderLimit             int64 // the old side's leases claimed while the queue surely had a limit (violations)
	Problems                  []string
	more                      int
}

func (v *rateVerdict) problem(format string, args ...any) {
	if len(v.Problems) >= maxProblems {
		v.more++
		return
	}
	v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
}

// satRate is the measured start rate over the saturated spans, per second
// (0 when none).
func (v *rateVerdict) satRate() float64 {
	if v.SatUS == 0 {
		return 0
	}
	return float64(v.SatStarts) / (float64(v.SatUS) / 1e6)
}

// rateSegments cuts the run's time at the changes: the settings with a
// limit, each from its change's answer to the next change's send.
func rateSegments(changes []rateChange) []rateSeg {
	var out []rateSeg
	for i, ch := range changes {
		if ch.To.N == 0 {
			continue
		}
		to := int64(math.MaxInt64)
		if i+1 < len(changes) {
			to = changes[i+1].Before
		}
		out = append(out, rateSeg{from: ch.After, to: to, lim: ch.To})
	}
	return out
}

// judgeRates holds the starts of tl (and the leases only the starts log
// saw) to the changes; samples are the watcher's, log what it read of the
// starts log, polls when it read it; old says which languages are the old
// side (nil: none).
func judgeRates(tl *timeline, changes []rateChange, samples []pendingSample, log map[string]int64, polls []int64, old func(Lang) bool) rateVerdict {
	v := rateVerdict{LogCovered: true}
	if old == nil {
		old = func(Lang) bool { return false }
	}
	segs := rateSegments(changes)
	// The log is read often enough when, under every setting, no two
	// reads (nor the setting's start and the first, nor the last and its
	// end) are a period apart.
	polls = slices.Clone(polls)
	slices.Sort(polls)
	for _, s := range segs {
		last := s.from
		gap := int64(0)
		for _, p := range polls {
			if p <= s.from || p >= s.to {
				continue
			}
			gap, last = max(gap, p-last), p
		}
		if s.to != math.MaxInt64 {
			gap = max(gap, s.to-last)
		}
		v.LogMaxGapMS = max(v.LogMaxGapMS, gap/1000)
		if gap+5000 >= s.lim.Period.Microseconds() {
			v.LogCovered = false
		}
	}
	var starts []rateStart
	tokens := map[string][]int64{}
	byID := map[string][]*leaseRec{}
	for _, l := range tl.leases {
		v.Leases++
		tokens[l.id] = append(tokens[l.id], l.token)
		byID[l.id] = append(byID[l.id], l)
		if l.claimMS < 0 {
			continue
		}
		v.Timed++
		key := l.id + ":" + strconv.FormatInt(l.token, 10)
		starts = append(starts, rateStart{ms: l.claimMS, key: key, l: l})
		if ms, ok := log[key]; ok {
			if ms == l.claimMS {
				v.LogMatched++
			} else {
				v.LogMismatched++
				v.problem("%s: recorded as claimed at %d ms, the starts log says %d ms", key, l.claimMS, ms)
			}
		}
	}
	// The tokens a job's records lack. One that is in no log was leased
	// surely under a limit when the job's recorded leases around it were
	// (before the job's first recorded lease: the run's first lease).
	first := int64(math.MaxInt64)
	for _, l := range tl.leases {
		if l.claimMS >= 0 {
			first = min(first, l.claimMS)
		}
	}
	sameSeg := func(lo, hi int64) bool {
		for _, seg := range segs {
			if lo*1000 > seg.from && (hi+1)*1000 <= seg.to {
				return true
			}
		}
		return false
	}
	for _, id := range slices.Sorted(maps.Keys(tokens)) {
		toks := tokens[id]
		slices.Sort(toks)
		claimed := map[int64]int64{}
		for _, l := range byID[id] {
			claimed[l.token] = l.claimMS
		}
		for t := int64(1); t < toks[len(toks)-1]; t++ {
			if _, ok := claimed[t]; ok {
				continue
			}
			v.Unrecorded++
			key := id + ":" + strconv.FormatInt(t, 10)
			if ms, ok := log[key]; ok {
				v.FromLog++
				starts = append(starts, rateStart{ms: ms, key: key})
				continue
			}
			v.Unseen++
			lo, hi := first-1, int64(-1)
			for u, ms := range claimed {
				if u < t && ms >= 0 {
					lo = max(lo, ms)
				}
				if u > t && ms >= 0 && (hi < 0 || ms < hi) {
					hi = ms
				}
			}
			if hi >= 0 && sameSeg(lo, hi) {
				v.UnseenUnder++
				v.problem("%s: an attempt of the job with no lease recorded and no start logged, between leases at %d and %d ms under a limit", key, lo, hi)
			}
		}
	}
	sort.Slice(starts, func(i, j int) bool {
		if starts[i].ms != starts[j].ms {
			return starts[i].ms < starts[j].ms
		}
		return starts[i].key < starts[j].key
	})
	for _, ch := range changes {
		for _, s := range starts {
			if (s.ms+1)*1000 > ch.Before && s.ms*1000 <= ch.After {
				v.InBrackets++
			}
		}
	}
	lastPoll := int64(0)
	if len(polls) > 0 {
		lastPoll = polls[len(polls)-1]
	}
	for _, seg := range segs {
		var under []rateStart
		for _, s := range starts {
			if s.ms*1000 > seg.from && (s.ms+1)*1000 <= seg.to {
				under = append(under, s)
			}
		}
		v.UnderLimit += int64(len(under))
		per := seg.lim.Period.Milliseconds()
		i := 0
		for j, s := range under {
			if s.l != nil && old(s.l.lang) {
				v.OldUnderLimit++
				v.problem("%s: the old side (%s, process %d) leased it at %d ms, while the queue had a rate limit (%s)", s.key, s.l.lang, s.l.proc, s.ms, seg.lim)
			}
			if s.l != nil && v.LogCovered {
				// A start was in the log a period at least, unless the
				// limit was removed first (its log deleted with it).
				if _, ok := log[s.key]; !ok && s.ms*1000+seg.lim.Period.Microseconds() <= min(lastPoll, seg.to) {
					v.LogMissing++
					v.problem("%s: leased at %d ms under a rate limit (%s), yet the starts log never held it", s.key, s.ms, seg.lim)
				}
			}
			for s.ms-under[i].ms >= per {
				i++
			}
			n := int64(j - i + 1)
			v.WindowMax = max(v.WindowMax, n)
			if n > seg.lim.N {
				v.WindowBreaches++
				v.problem("%d starts in the %d ms from %d to %d ms, under a limit of %s (the last: %s)", n, s.ms-under[i].ms+1, under[i].ms, s.ms, seg.lim, s.key)
			}
		}
		v.saturated(seg, under, samples)
	}
	return v
}

// saturated measures the start rate over the spans of seg in which the
// watcher saw jobs pending at every sample (a span at least two periods
// long), and checks each against the limit's pace.
func (v *rateVerdict) saturated(seg rateSeg, under []rateStart, samples []pendingSample) {
	gap := float64(seg.lim.Period.Microseconds()) / float64(seg.lim.N)
	span := func(a, b int64) {
		if b-a < 2*seg.lim.Period.Microseconds() {
			return
		}
		n := int64(0)
		for _, s := range under {
			if s.ms*1000 >= a && s.ms*1000 < b {
				n++
			}
		}
		v.SatSpans++
		v.SatStarts += n
		v.SatUS += b - a
		if pace := float64(b-a)/gap + 2; float64(n) > pace {
			v.SatOver++
			v.problem("%d starts in the %.0f ms from %d µs, with jobs pending throughout: the limit's pace (%s) allows %.0f", n, float64(b-a)/1000, a, seg.lim, pace)
		}
	}
	from := int64(-1)
	prev := int64(0)
	for _, s := range samples {
		if s.US <= seg.from || s.US >= seg.to {
			continue
		}
		switch {
		case s.Pending > 0 && from < 0:
			from = s.US
		case s.Pending == 0 && from >= 0:
			span(from, prev)
			from = -1
		}
		prev = s.US
	}
	if from >= 0 {
		span(from, prev)
	}
}

// judge adds the verdict's figures to res and its breaches to the
// violations; c are res's counts.
func (v *rateVerdict) judge(res *Result) {
	c := res.Counts
	c["leases"], c["timed_leases"], c["unrecorded_leases"], c["unrecorded_from_log"], c["unrecorded_unseen"], c["unrecorded_unseen_under_limit"] = v.Leases, v.Timed, v.Unrecorded, v.FromLog, v.Unseen, v.UnseenUnder
	c["starts_log_matched"], c["starts_log_mismatched"], c["starts_log_missing"], c["starts_log_max_gap_ms"] = v.LogMatched, v.LogMismatched, v.LogMissing, v.LogMaxGapMS
	c["starts_under_limit"], c["starts_in_brackets"], c["window_max"], c["window_breaches"] = v.UnderLimit, v.InBrackets, v.WindowMax, v.WindowBreaches
	c["saturated_starts"], c["saturated_ms"], c["saturated_spans"], c["saturated_over_pace"] = v.SatStarts, v.SatUS/1000, v.SatSpans, v.SatOver
	c["old_leases_under_limit"] = v.OldUnderLimit
	if v.WindowBreaches > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%d starts ended a window of the period holding more starts than the rate limit (at most %d in one window)", v.WindowBreaches, v.WindowMax))
	}
	if v.SatOver > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("%d saturated spans started jobs faster than the rate limit's pace", v.SatOver))
	}
	if v.LogMismatched > 0 || v.LogMissing > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("the starts log disagrees with the leases: %d recorded at another millisecond, %d under the limit never in it", v.LogMismatched, v.LogMissing))
	}
	if v.UnseenUnder > 0 && v.LogCovered {
		res.Violations = append(res.Violations, fmt.Sprintf("%d attempts of jobs were spent under a limit with no lease recorded and no start logged (the watcher read the starts log at least once a period): a job failed or leased past the limit", v.UnseenUnder))
	}
	if v.OldUnderLimit > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("the old side leased %d jobs while the queue had a rate limit", v.OldUnderLimit))
	}
	if v.Timed < v.Leases {
		res.Violations = append(res.Violations, fmt.Sprintf("%d of %d leases recorded no claim time (an S line without d=)", v.Leases-v.Timed, v.Leases))
	}
	for _, p := range v.Problems {
		res.Violations = append(res.Violations, "rate judge: "+p)
	}
	if v.more > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("rate judge: %d more problems", v.more))
	}
}

// judgeLogged counts the warnings and errors the worker processes' SDKs
// logged, by side, op and class (logged_<side>_<op>_<class>), and makes a
// violation of every claim or settle of this tree's side that met the
// tripwire or a policy refusal, saying breach of it; the other ops' are
// counted in new_maintenance_tripwire.
func judgeLogged(res *Result, tl *timeline, old func(Lang) bool, breach string) {
	c := res.Counts
	for _, lg := range tl.logs {
		side := "new"
		if old != nil && old(lg.lang) {
			side = "old"
		}
		c[fmt.Sprintf("logged_%s_%s_%s", side, lg.op, lg.class)]++
	}
	c["new_maintenance_tripwire"] = 0
	for _, k := range sortedKeys(c) {
		what, ok := strings.CutPrefix(k, "logged_new_")
		n := c[k]
		if !ok || n == 0 || !strings.HasSuffix(what, "_"+wrongType) && !strings.HasSuffix(what, "_"+wire.ClassPolicy) {
			continue
		}
		op, _, _ := strings.Cut(what, "_")
		switch op {
		case "claiming", "completing", "settling", "extending":
			res.Violations = append(res.Violations, fmt.Sprintf("this tree's workers logged %d failures %s: %s", n, what, breach))
		default:
			c["new_maintenance_tripwire"] += n
		}
	}
}

// rateFigures describes the verdict's figures for the notes.
func rateFigures(v rateVerdict, lim rateLimit) string {
	cover := fmt.Sprintf("the watcher read the starts log at least every %d ms", v.LogMaxGapMS)
	if !v.LogCovered {
		cover = fmt.Sprintf("the watcher once went %d ms without reading the starts log (longer than the period: leases it missed are not judged)", v.LogMaxGapMS)
	}
	return fmt.Sprintf("%s leases judged (%s started under the limit, %s within a change's bracket); %s leases whose holder died before its handler began (tokens the records lack), %s of them found in the starts log, %s not (%s of those surely under a limit); %s recorded starts agree with the starts log's millisecond, %d disagree; %s; at most %d starts in any window of %v (the limit %d); over %d saturated spans (%.1f s, jobs pending at every sample) %s starts: %.2f per second against the limit's %.2f (%.2f%%)",
		thousands(v.Leases), thousands(v.UnderLimit), thousands(v.InBrackets), thousands(v.Unrecorded), thousands(v.FromLog), thousands(v.Unseen), thousands(v.UnseenUnder),
		thousands(v.LogMatched), v.LogMismatched, cover, v.WindowMax, lim.Period, lim.N, v.SatSpans, float64(v.SatUS)/1e6, thousands(v.SatStarts),
		v.satRate(), lim.perSecond(), 100*v.satRate()/lim.perSecond())
}
