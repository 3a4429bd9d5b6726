package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

func init() { Register(MixedSchedulers{}) }

// schedMixLangs are the sides of the mixed25 scenario: the Go SDK of this
// tree (the new side) and the Go SDK of the frozen release before this
// tree's minor (LangPrev25, 2.5.0).
var schedMixLangs = []Lang{LangGo, LangPrev25}

// mixed25Template is the payload template of the scenario's scheduler
// runs: each run's payload names its scheduler, slot and until.
const mixed25Template = "{scheduler} {slot} {until}"

// MixedSchedulers is the mixed-fleet scenario of 2.6.0 against the
// previous frozen release: worker processes built from the frozen 2.5.0
// release beside worker processes of this tree's Go SDK work one queue,
// while producers of both sides push to it and this tree's Go scheduler
// processes (Queue.RunSchedulers, the harness's scheduler processes of the
// jobschedulers scenario) fire interval schedulers whose runs are jobs of
// the same queue. Worker processes of both sides are SIGKILLed and frozen
// past their leases; the scheduler processes are SIGKILLed and restarted,
// frozen, and all stopped at once for longer than the schedulers' grace.
// A run is an ordinary job, so a 2.5 worker, which knows nothing of
// schedulers, runs it. Every job — pushed, or fired as a run — must finish
// exactly once, none lost; every run a scheduler process recorded firing
// is finished by a worker of one side or the other (the old side must run
// some); each scheduler's runs tile its timeline from its start to its
// final next slot, no slot missed and none fired twice (judgeScheduler);
// and after the drain the scheduler keys hold exactly the upserted
// schedulers, as the fleet left them: the old side never touches them.
type MixedSchedulers struct{}

// Name is "mixed25".
func (MixedSchedulers) Name() string { return "mixed25" }

// mixed25Size sizes the scheduler side of the scenario.
type mixed25Size struct {
	schedulers int
	horizons   []time.Duration // one scheduler process each, firing that far ahead
	poll       time.Duration
	// The scheduler faults' minimums: SIGKILLs (each process replaced),
	// freezes, and blackouts (every process down past the grace).
	minKills, minFreezes, minBlackouts int64
}

func mixed25Sizes(cfg Config) mixed25Size {
	s := mixed25Size{schedulers: 8, horizons: []time.Duration{0, 250 * time.Millisecond}, poll: 30 * time.Millisecond,
		minKills: 2, minFreezes: 1, minBlackouts: 1}
	if cfg.Long {
		s.schedulers, s.horizons = 40, []time.Duration{0, 250 * time.Millisecond, 0}
		s.minKills, s.minFreezes, s.minBlackouts = 10, 6, 3
	}
	return s
}

func mixed25Plan(cfg Config) *plan {
	p := mixedPlan(cfg)
	p.name = "mixed25"
	p.workerLangs, p.producerLangs = schedMixLangs, schedMixLangs
	if !cfg.Long && cfg.Jobs == 0 {
		p.jobs = 1200
	}
	return p
}

// mixed25Specs are the scenario's schedulers: intervals of 100 ms to 1 s
// from a common anchor (start, server milliseconds), half under run_once
// and half under backfill, with a grace of 150 or 300 ms.
func mixed25Specs(n int, start int64) []SchedulerSpec {
	everys := []time.Duration{100 * time.Millisecond, 150 * time.Millisecond, 250 * time.Millisecond, 400 * time.Millisecond, time.Second}
	graces := []time.Duration{150 * time.Millisecond, 300 * time.Millisecond}
	var specs []SchedulerSpec
	for i := range n {
		s := SchedulerSpec{ID: fmt.Sprintf("mix-%03d", i), Every: everys[i%len(everys)], StartMS: start + int64(i%4)*50,
			Missed: emq.MissedRunOnce, Grace: graces[i%len(graces)]}
		if i%2 == 1 {
			s.Missed, s.Backfill = emq.MissedBackfill, emq.MaxBackfill
		}
		specs = append(specs, s)
	}
	return specs
}

// Run runs the scenario.
func (MixedSchedulers) Run(ctx context.Context, cfg Config) (Result, error) {
	p := mixed25Plan(cfg)
	size := mixed25Sizes(cfg)
	minKills, minFreezes := int64(2), int64(len(schedMixLangs))
	if cfg.Long {
		minKills, minFreezes = 8, 6
	}
	freeze := 2*p.worker.Lease + 500*time.Millisecond
	pairs := langPairs(schedMixLangs)
	sc := &schedMix{size: size}
	p.faults = func(ctx context.Context, r *run) error {
		if err := crossStaleChecks(ctx, r, pairs); err != nil {
			return err
		}
		// On an error path the scheduler processes are stopped here, as
		// on every other before the drain.
		defer func() {
			if sc.fleet != nil {
				sc.fleet.stop(5 * time.Second)
			}
		}()
		if err := sc.start(ctx, r); err != nil {
			return err
		}
		sctx, stop := context.WithCancel(ctx)
		defer stop()
		enough := make(chan struct{})
		done := make(chan error, 1)
		go func() { done <- sc.faults(sctx, enough) }()
		sleepCtx(ctx, 500*time.Millisecond)
		err := killAndFreeze(ctx, r, schedMixLangs, minKills, minFreezes, freeze)
		close(enough)
		if serr := <-done; err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
		// The fleet stops (each process SIGKILLed at a point where
		// every run the server counts is recorded), so that the queue
		// drains; every run it recorded is a job to account for.
		return sc.finish(ctx)
	}
	p.afterDrain = func(ctx context.Context, r *run) error { return sc.judge(ctx) }
	cleanup, err := scratchDir(&cfg)
	if err != nil {
		return Result{}, err
	}
	defer cleanup()
	o, err := execute(ctx, cfg, p)
	if err != nil {
		return Result{}, err
	}
	cross, err := crossLanguage(o.run, schedMixLangs)
	if err != nil {
		return Result{}, err
	}
	if err := sc.settledBy(o); err != nil {
		return Result{}, err
	}
	prev := oldReleases[LangPrev25]
	w := p.worker
	load := fmt.Sprintf("%s jobs at ~%.0f/s from a Go %s producer and a Go %s producer, and the runs of %d interval schedulers (every 100 ms to 1 s, half run_once, half backfill up to %d, grace 150 or 300 ms) fired by %d Go %s scheduler processes (one firing %v ahead); %d worker processes (the two sides in turn) × %d; lease %v; handlers %v–%v, %.0f%% of first attempts fail, %.0f%% of jobs fail on every attempt (buried after %d)",
		thousands(int64(p.jobs)), p.rate, wire.Version, prev, size.schedulers, emq.MaxBackfill, len(size.horizons), wire.Version, 250*time.Millisecond,
		p.workers, w.Concurrency, w.Lease, w.HandlerMin, w.HandlerMax, 100*w.FailRate, 100*w.AlwaysFail, w.MaxAttempts)
	c := o.run
	faults := fmt.Sprintf("SIGKILLs of worker processes: %d of the new side, %d of the %s side (each replaced by one of its side); %d SIGSTOPs of a worker process for %v; scheduler processes: %d SIGKILLs (each replaced after up to 300 ms), %d SIGSTOPs for 0.1–0.8 s, %d blackout(s) (every scheduler process SIGKILLed for 0.6–1.2 s, longer than any grace, then restarted)",
		c.get("kills_"+string(LangGo)), c.get("kills_"+string(LangPrev25)), prev, c.get("freezes"), freeze,
		c.get("sched_kills"), c.get("sched_freezes"), c.get("sched_blackouts"))
	res := o.result("mixed fleet ("+prev+" beside "+wire.Version+", job schedulers)", load, faults)
	for k, v := range cross {
		res.Counts[k] = v
	}
	if res.Counts["stale_probes"] != int64(len(pairs)) {
		res.Violations = append(res.Violations, fmt.Sprintf("%d of %d cross-side stale checks ran", res.Counts["stale_probes"], len(pairs)))
	}
	if n := o.verdict.Unacknowledged; n > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("workers ran %d jobs that no producer saw acknowledged and no scheduler process recorded firing", n))
	}
	old := res.Counts["runs_by_"+string(LangPrev25)]
	if old == 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("no scheduler run was finished by a %s worker: the scenario did not show the old side running the new side's runs", prev))
	}
	if res.Counts["runs_by_"+string(LangGo)] == 0 {
		res.Violations = append(res.Violations, "no scheduler run was finished by a new-side worker")
	}
	n := res.Counts
	res.Notes = fmt.Sprintf("%s runs fired by %d scheduler processes and finished: %s by new-side workers, %s by %s workers, %s otherwise (buried by maintenance out of attempts, or a completion in doubt); %s slots from the schedulers' starts to their final next slots, %s missed, %s in two runs; %s runs stand for several missed slots (run_once); completed across sides: %s pushed by the new side and completed by the old, %s the other way; %s late completions refused with %s across sides; scheduler kills tried again for a point where every run was recorded: %s; *acknowledged* counts the pushed jobs and the recorded runs; ",
		thousands(n["runs"]), n["sched_processes"], thousands(n["runs_by_"+string(LangGo)]), thousands(old), prev, thousands(n["runs_by_other"]),
		thousands(n["slots"]), thousands(n["missed"]), thousands(n["twice"]), thousands(n["multi_slot_runs"]),
		thousands(cross[string(LangGo)+"_to_"+string(LangPrev25)]), thousands(cross[string(LangPrev25)+"_to_"+string(LangGo)]),
		thousands(cross["stale_cross"]), wire.ClassStale, thousands(n["sched_clean_retries"])) + res.Notes
	res.Details = fmt.Sprintf(`**Injected.** %d worker processes work one queue: worker processes of this tree's Go SDK and of the Go SDK of the frozen %s release (built from git history, as in mixed23), in turn, %d handlers each, while a producer of each side pushes %s jobs and %d Go scheduler processes of this tree (Queue.RunSchedulers, each upserting the same %d interval schedulers at every start: every 100 ms to 1 s from a common anchor, half under run_once, half under backfill, grace 150 or 300 ms; one process fires 250 ms ahead, so its runs wait scheduled at their slot until a worker of either side promotes them) fire runs into the same queue. Handlers of both sides fail %.0f%% of first attempts and every attempt of %.0f%% of the jobs, runs included, which are buried on attempt %d. Worker processes of each side are frozen with SIGSTOP for %v (longer than the %v lease) and SIGKILLed, the sides in turn. Meanwhile scheduler processes are SIGKILLed and replaced, frozen for 0.1–0.8 s (a runner that planned before it froze fires stale when it thaws), and all SIGKILLed at once for longer than any grace (the missed slots then get run_once's one run, or backfill's run each). A scheduler process records each run it fired after its tick; it is SIGKILLed only at a point where every run the server's records count is recorded (all scheduler processes frozen, then compared), so that no run is fired without a record.

**Checked.** Every acknowledged job and every recorded run finished exactly once — completed or dead — none lost; late completions are refused with %s across sides; workers ran no job that was neither pushed nor recorded as fired. Every run was finished by a worker of one side or the other (counted by side: the %s workers, which know nothing of schedulers, ran their share). For each scheduler, the recorded runs' [slot, until) intervals tile its timeline from its start to its final next slot — no slot in no run (missed), no slot in two runs (fired twice) — and its record counts them and names the last. After the drain the scheduler hash and the due index hold exactly the upserted schedulers, each record as the fleet left it and each due score its next slot: the old side never touched them.
%s`, p.workers, prev, w.Concurrency, thousands(int64(p.jobs)), len(size.horizons), size.schedulers, 100*w.FailRate, 100*w.AlwaysFail, w.MaxAttempts, freeze, w.Lease,
		wire.ClassStale, prev, o.problems())
	return res, nil
}

// schedMix is the scheduler side of a mixed25 run.
type schedMix struct {
	size  mixed25Size
	r     *run
	rng   *rand.Rand // the scheduler faults' own (killAndFreeze uses the run's)
	fleet *schedFleet
	specs []SchedulerSpec
	ids   []string
	hz    map[*schedProc]time.Duration
	// After finish: the runs the fleet recorded, and the schedulers'
	// records once it stopped.
	runs  []firedRun
	infos []emq.SchedulerInfo
}

// firedRun is a run a scheduler process recorded (an F record).
type firedRun struct {
	id, scheduler string
	slot, until   int64
}

// start upserts nothing itself: it starts the scheduler processes, each
// of which upserts every scheduler, anchored a second past the server's
// time.
func (m *schedMix) start(ctx context.Context, r *run) error {
	m.r = r
	m.rng = rand.New(rand.NewPCG(r.seed, streamSeed("mixed25 schedulers")))
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	dir := filepath.Join(r.dir, "scheduler-processes")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	now, err := r.client.ServerTime(ctx)
	if err != nil {
		return err
	}
	m.specs = mixed25Specs(m.size.schedulers, (now.UnixMilli()/1000+1)*1000)
	for _, s := range m.specs {
		m.ids = append(m.ids, s.ID)
	}
	m.fleet = &schedFleet{exe: exe, dir: dir, base: SchedulerConfig{Addrs: []string{r.srv.Addr()}, Queue: queueName, Specs: m.specs,
		Template: mixed25Template, Poll: m.size.poll}}
	m.hz = map[*schedProc]time.Duration{}
	for _, h := range m.size.horizons {
		if err := m.spawn(h); err != nil {
			return err
		}
	}
	r.logf("%d scheduler processes upserted %d schedulers", len(m.size.horizons), len(m.specs))
	return nil
}

func (m *schedMix) spawn(horizon time.Duration) error {
	p, err := m.fleet.spawn(LangGo, horizon)
	if err != nil {
		return err
	}
	m.hz[p] = horizon
	return nil
}

// live is a snapshot of the live scheduler processes.
func (m *schedMix) live() []*schedProc {
	m.fleet.mu.Lock()
	defer m.fleet.mu.Unlock()
	return slices.Clone(m.fleet.live)
}

// faults injects the scheduler faults until enough is closed and each
// kind reached its minimum: SIGKILLs (each process replaced after up to
// 300 ms), freezes of 0.1–0.8 s and blackouts (every process SIGKILLed
// for 0.6–1.2 s, longer than any grace, then restarted), one at a time.
func (m *schedMix) faults(ctx context.Context, enough <-chan struct{}) error {
	r := m.r
	kill := func() error {
		live := m.live()
		if len(live) == 0 {
			return nil
		}
		p := live[m.rng.IntN(len(live))]
		if err := m.cleanKill(ctx, []*schedProc{p}); err != nil {
			return err
		}
		r.count("sched_kills", 1)
		sleepCtx(ctx, time.Duration(m.rng.IntN(300))*time.Millisecond)
		return m.spawn(m.hz[p])
	}
	freeze := func() error {
		live := m.live()
		if len(live) == 0 {
			return nil
		}
		p := live[m.rng.IntN(len(live))]
		if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
		sleepCtx(ctx, time.Duration(100+m.rng.IntN(700))*time.Millisecond)
		r.count("sched_freezes", 1)
		return p.cmd.Process.Signal(syscall.SIGCONT)
	}
	blackout := func() error {
		live := m.live()
		if err := m.cleanKill(ctx, live); err != nil {
			return err
		}
		sleepCtx(ctx, time.Duration(600+m.rng.IntN(600))*time.Millisecond)
		for _, p := range live {
			if err := m.spawn(m.hz[p]); err != nil {
				return err
			}
		}
		r.count("sched_blackouts", 1)
		r.logf("blackout: every scheduler process SIGKILLed, then restarted")
		return nil
	}
	for {
		sleepCtx(ctx, time.Duration(300+m.rng.IntN(700))*time.Millisecond)
		if err := ctx.Err(); err != nil {
			return err
		}
		more := true
		select {
		case <-enough:
			more = false
		default:
		}
		var err error
		switch x := m.rng.IntN(10); {
		case more && x < 5:
			err = kill()
		case more && x < 8:
			err = freeze()
		case more:
			err = blackout()
		// Once the worker faults are done: what the minimums still lack.
		case r.get("sched_kills") < m.size.minKills:
			err = kill()
		case r.get("sched_freezes") < m.size.minFreezes:
			err = freeze()
		case r.get("sched_blackouts") < m.size.minBlackouts:
			err = blackout()
		default:
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// cleanAttempts bounds the tries of cleanKill to find a clean point.
const cleanAttempts = 500

// cleanKill SIGKILLs victims at a clean point: with every live scheduler
// process frozen (SIGSTOP, every thread stopped) and what they had sent
// served, the runs each scheduler's record counts are the runs the
// processes recorded. A process records the runs of a tick only after its
// firing's reply, so a SIGKILL between the two would leave runs fired
// and unrecorded, which nothing could then tile; at a clean point there
// are none. When the point is not clean the processes are thawed and it
// is tried again once a record file grew (or a little later). The
// processes that are not victims are thawed.
func (m *schedMix) cleanKill(ctx context.Context, victims []*schedProc) error {
	r := m.r
	for attempt := 1; ; attempt++ {
		live := m.live()
		for _, p := range live {
			_ = p.cmd.Process.Signal(syscall.SIGSTOP)
		}
		stopped := true
		for _, p := range live {
			if !waitStopped(p.cmd.Process.Pid, 2*time.Second) {
				stopped = false
			}
		}
		why, size, err := m.unrecorded(ctx)
		if err != nil {
			m.thaw(live)
			return err
		}
		clean := stopped && why == ""
		if clean || attempt == cleanAttempts {
			if !clean {
				r.violate("the scheduler processes were SIGKILLed after %d tries to find a point where every run was recorded: %s", attempt, why)
			}
			for _, v := range victims {
				m.fleet.kill(v) // SIGKILL ends a stopped process too
			}
			m.thaw(slices.DeleteFunc(live, func(p *schedProc) bool { return slices.Contains(victims, p) }))
			r.count("sched_clean_retries", int64(attempt-1))
			return nil
		}
		m.thaw(live)
		// Until a process recorded more (or 200 ms passed): its tick
		// reached its records.
		deadline := time.Now().Add(200 * time.Millisecond)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			if s, err := m.recordBytes(); err == nil && s != size {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

func (m *schedMix) thaw(procs []*schedProc) {
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// unrecorded compares, once what the (frozen) processes sent is served,
// the runs each scheduler's record counts with the runs the processes
// recorded: it says what differs ("" when nothing does) and the record
// files' total size as read.
func (m *schedMix) unrecorded(ctx context.Context) (why string, size int64, err error) {
	// A few round trips: a firing a process wrote before it stopped is in
	// the server's socket, served before these are.
	rc := m.r.chk.Client()
	for range 3 {
		if err := rc.Do(ctx, rc.B().Ping().Build()).Error(); err != nil {
			return "", 0, err
		}
	}
	infos, err := m.r.queue.Schedulers(ctx, m.ids...)
	if err != nil {
		return "", 0, err
	}
	size, err = m.recordBytes()
	if err != nil {
		return "", 0, err
	}
	runs, err := m.recorded()
	if err != nil {
		return "", 0, err
	}
	by := map[string]int64{}
	for _, f := range runs {
		by[f.scheduler]++
	}
	var diff []string
	for i, info := range infos {
		if info.Runs != by[m.ids[i]] {
			diff = append(diff, fmt.Sprintf("%s counts %d runs, %d recorded", m.ids[i], info.Runs, by[m.ids[i]]))
		}
	}
	return strings.Join(diff, "; "), size, nil
}

// recordBytes is the total size of every scheduler process's record file.
func (m *schedMix) recordBytes() (int64, error) {
	m.fleet.mu.Lock()
	all := slices.Clone(m.fleet.all)
	m.fleet.mu.Unlock()
	var n int64
	for _, p := range all {
		st, err := os.Stat(p.records)
		if err != nil {
			return 0, err
		}
		n += st.Size()
	}
	return n, nil
}

// recorded reads every scheduler process's F records (id, slot, until,
// scheduler), in process order.
func (m *schedMix) recorded() ([]firedRun, error) {
	m.fleet.mu.Lock()
	all := slices.Clone(m.fleet.all)
	m.fleet.mu.Unlock()
	var out []firedRun
	for _, p := range all {
		f, err := os.Open(p.records)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if run, ok := parseFired(sc.Text()); ok {
				out = append(out, run)
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parseFired parses an F record: F <id> <slot> <until> <scheduler>.
func parseFired(line string) (firedRun, bool) {
	w := strings.Fields(line)
	if len(w) != 5 || w[0] != string(rune(recSchedFired)) {
		return firedRun{}, false
	}
	slot, err1 := strconv.ParseInt(w[2], 10, 64)
	until, err2 := strconv.ParseInt(w[3], 10, 64)
	if err1 != nil || err2 != nil {
		return firedRun{}, false
	}
	return firedRun{id: w[1], slot: slot, until: until, scheduler: w[4]}, true
}

// finish stops the fleet at a clean point, reads the runs it recorded and
// the schedulers' records, and acknowledges every run as a job the run
// must account for.
func (m *schedMix) finish(ctx context.Context) error {
	r := m.r
	if err := m.cleanKill(ctx, m.live()); err != nil {
		return err
	}
	runs, err := m.recorded()
	if err != nil {
		return err
	}
	if m.infos, err = r.queue.Schedulers(ctx, m.ids...); err != nil {
		return err
	}
	m.runs = runs
	dup := 0
	for _, f := range runs {
		if !r.acks.Ack(f.id) {
			dup++
		}
	}
	if dup > 0 {
		r.violate("%d recorded runs have an id that was already acknowledged (pushed, or recorded twice)", dup)
	}
	m.fleet.mu.Lock()
	r.count("sched_processes", int64(len(m.fleet.all)))
	m.fleet.mu.Unlock()
	r.count("runs", int64(len(runs)))
	r.logf("the scheduler processes stopped: %d runs recorded; draining", len(runs))
	return nil
}

// judge runs after the drain: each scheduler's recorded runs must tile
// its timeline (judgeScheduler), and the scheduler keys must hold exactly
// the upserted schedulers, as the fleet left them.
func (m *schedMix) judge(ctx context.Context) error {
	r := m.r
	byScheduler := map[string][]schedRun{}
	for _, f := range m.runs {
		byScheduler[f.scheduler] = append(byScheduler[f.scheduler], schedRun{id: f.id, slot: f.slot, until: f.until})
	}
	var slots, missed, twice, multi int64
	for i, s := range m.specs {
		v := judgeScheduler(s, m.infos[i], byScheduler[s.ID])
		for _, p := range v.problems {
			r.violate("%s", p)
		}
		slots, missed, twice, multi = slots+v.slots, missed+v.missed, twice+v.twice, multi+int64(v.multi)
		delete(byScheduler, s.ID)
	}
	for id, runs := range byScheduler {
		r.violate("%d recorded runs name scheduler %q, which was never upserted", len(runs), id)
	}
	r.count("slots", slots)
	r.count("missed", missed)
	r.count("twice", twice)
	r.count("multi_slot_runs", multi)
	// The scheduler keys after the drain, while the worker processes of
	// both sides still run.
	rc := r.chk.Client()
	k := r.queue.Keys()
	fields, err := rc.Do(ctx, rc.B().Hkeys().Key(k.Schedulers).Build()).AsStrSlice()
	if err != nil {
		return err
	}
	due, err := rc.Do(ctx, rc.B().Zrange().Key(k.SchedulerNext).Min("0").Max("-1").Withscores().Build()).AsZScores()
	if err != nil {
		return err
	}
	scores := map[string]float64{}
	for _, z := range due {
		scores[z.Member] = z.Score
	}
	after, err := r.queue.Schedulers(ctx, m.ids...)
	if err != nil {
		return err
	}
	for _, p := range judgeSchedulerKeys(m.specs, m.infos, after, fields, scores) {
		r.violate("%s", p)
	}
	return nil
}

// judgeSchedulerKeys holds the scheduler keys, read after the drain, to
// the upserted schedulers: the hash's fields (fields) and the due index's
// members (scores, member to score) are exactly the specs' ids; each
// record read then (after) is the record read when the fleet stopped
// (before) — the same next slot, last run and count, the schedule
// upserted; and each due score is its record's next slot.
func judgeSchedulerKeys(specs []SchedulerSpec, before, after []emq.SchedulerInfo, fields []string, scores map[string]float64) []string {
	var out []string
	want := make([]string, len(specs))
	for i, s := range specs {
		want[i] = s.ID
	}
	sort.Strings(want)
	got := slices.Clone(fields)
	sort.Strings(got)
	if !slices.Equal(got, want) {
		out = append(out, fmt.Sprintf("the scheduler hash holds %v after the drain; want exactly the upserted %v", got, want))
	}
	members := make([]string, 0, len(scores))
	for m := range scores {
		members = append(members, m)
	}
	sort.Strings(members)
	if !slices.Equal(members, want) {
		out = append(out, fmt.Sprintf("the due index holds %v after the drain; want exactly the upserted %v", members, want))
	}
	for i, s := range specs {
		if i >= len(before) || i >= len(after) {
			out = append(out, fmt.Sprintf("%s: no record read", s.ID))
			continue
		}
		b, a := before[i], after[i]
		switch {
		case !a.Found():
			out = append(out, fmt.Sprintf("%s: no record after the drain", s.ID))
			continue
		case a.Every != s.Every || a.Start.UnixMilli() != s.StartMS || a.Cron != "" || a.Missed != s.Missed || a.Grace != s.Grace || a.Paused:
			out = append(out, fmt.Sprintf("%s: the record after the drain holds every %v from %d, cron %q, missed %s, grace %v, paused %v; want the upserted every %v from %d, %s, grace %v, not paused",
				s.ID, a.Every, a.Start.UnixMilli(), a.Cron, a.Missed, a.Grace, a.Paused, s.Every, s.StartMS, s.Missed, s.Grace))
		case !a.Next.Equal(b.Next) || a.Runs != b.Runs || a.LastID != b.LastID || !a.LastSlot.Equal(b.LastSlot):
			out = append(out, fmt.Sprintf("%s: the record changed after the fleet stopped: next %d, %d runs, last %v at %d; then next %d, %d runs, last %v at %d",
				s.ID, msOf(b.Next), b.Runs, b.LastID, msOf(b.LastSlot), msOf(a.Next), a.Runs, a.LastID, msOf(a.LastSlot)))
		}
		if sc, ok := scores[s.ID]; ok && int64(sc) != msOf(a.Next) {
			out = append(out, fmt.Sprintf("%s: its due score is %d; its record's next slot is %d", s.ID, int64(sc), msOf(a.Next)))
		}
	}
	return out
}

// settledBy counts, once the worker processes stopped, which side
// finished each recorded run: the side of the lease whose completion or
// burial was accepted ("runs_by_<lang>"), or neither ("runs_by_other":
// buried by maintenance out of attempts, or a completion in doubt).
func (m *schedMix) settledBy(o *outcome) error {
	settlers, err := readSettlers(o.run)
	if err != nil {
		return err
	}
	for _, l := range schedMixLangs {
		o.run.count("runs_by_"+string(l), 0)
	}
	for _, f := range m.runs {
		var by Lang
		for _, s := range settlers[f.id] {
			if s.outcome == recCompleted || s.outcome == recBuried {
				by = s.lang
			}
		}
		if by == "" {
			o.run.count("runs_by_other", 1)
			continue
		}
		o.run.count("runs_by_"+string(by), 1)
	}
	return nil
}

// waitStopped waits, up to limit, until every thread of process pid is
// stopped (or gone), reading /proc/<pid>/task/*/stat; it reports whether
// they are. Without /proc (not Linux) it cannot know and reports true at
// once: the round trips that follow then stand alone.
func waitStopped(pid int, limit time.Duration) bool {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	if _, err := os.Stat("/proc/self/task"); err != nil {
		return true
	}
	deadline := time.Now().Add(limit)
	for {
		ents, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			return true // the process is gone
		}
		all := err == nil
		for _, e := range ents {
			if !all {
				break
			}
			stat, err := os.ReadFile(filepath.Join(dir, e.Name(), "stat"))
			if err != nil {
				continue // the thread is gone
			}
			all = threadStopped(string(stat))
		}
		if all {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// threadStopped reads the state of a /proc/<pid>/task/<tid>/stat line:
// stopped (T, or t traced), zombie or dead.
func threadStopped(stat string) bool {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false
	}
	return strings.IndexByte("TtZX", stat[i+2]) >= 0
}
