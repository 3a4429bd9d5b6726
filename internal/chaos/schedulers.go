package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

func init() { Register(Schedulers{}) }

// schedulerEnv names the environment variable that makes a process a
// scheduler process of the harness; its value is the SchedulerConfig as
// JSON.
const schedulerEnv = "EMQCHAOS_SCHEDULER"

// SchedulerSpec is one job scheduler the scheduler processes upsert: an
// interval from a fixed anchor, so that every process's upsert is the same
// schedule (kept, never reset).
type SchedulerSpec struct {
	ID       string
	Every    time.Duration
	StartMS  int64 // the first slot, server milliseconds
	Missed   emq.Missed
	Backfill int
	Grace    time.Duration
}

// SchedulerConfig configures one scheduler process.
type SchedulerConfig struct {
	Addrs    []string
	Queue    string
	Specs    []SchedulerSpec // upserted at every start
	Template string          // the runs' payload template
	Poll     time.Duration   // the runner's wait between ticks
	Horizon  time.Duration   // how far ahead it fires
	Records  string          // the record file
}

// The records of a scheduler process: H with its pid once it has upserted
// its schedulers, then F with the run id, slot, until and scheduler of
// each run it fired (after the firing: a SIGKILL may lose the last).
const (
	recSchedHello = 'H'
	recSchedFired = 'F'
)

// runSchedulerProc runs a Go scheduler process from its configuration until
// SIGTERM or SIGINT: it upserts the schedulers (retrying until the server
// answers), then runs the SDK's runner (Queue.RunSchedulers), recording
// each run it fired.
func runSchedulerProc(cfg SchedulerConfig) error {
	rec, err := openRecorder(cfg.Records)
	if err != nil {
		return err
	}
	defer rec.close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	opt := emq.Options{Redis: rueidis.ClientOption{InitAddress: cfg.Addrs, DisableCache: true}, Logger: logger}
	var c *emq.Client
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, err = emq.Connect(cctx, opt)
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	defer c.Close()
	q, err := c.Queue(cfg.Queue)
	if err != nil {
		return err
	}
	for _, s := range cfg.Specs {
		for {
			_, err := q.UpsertScheduler(ctx, s.ID, emq.Schedule{Every: s.Every, Start: time.UnixMilli(s.StartMS)},
				emq.WithMissed(s.Missed), emq.WithBackfill(s.Backfill), emq.WithGrace(s.Grace), emq.WithTemplate([]byte(cfg.Template)))
			if err == nil {
				break
			}
			if ctx.Err() != nil || errors.Is(err, emq.ErrArgument) {
				return err
			}
			logger.Warn("emqchaos scheduler: upsert failed; retrying", "scheduler", s.ID, "err", err)
			time.Sleep(50 * time.Millisecond)
		}
	}
	rec.text(recSchedHello, strconv.Itoa(os.Getpid()))
	return q.RunSchedulers(ctx, emq.SchedulerOptions{Poll: cfg.Poll, Horizon: cfg.Horizon, Logger: logger, OnFire: func(runs []emq.FiredRun) {
		for _, r := range runs {
			rec.text(recSchedFired, r.ID.String(), strconv.FormatInt(r.Slot.UnixMilli(), 10), strconv.FormatInt(msOf(r.Until), 10), r.Scheduler)
		}
	}})
}

// msOf is t in Unix milliseconds, 0 for the zero time.
func msOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// Schedulers is the job schedulers' scenario of 2.6.0: scheduler processes
// of Go, Python and TypeScript (the SDKs' runners: Go's
// Queue.RunSchedulers, Python's Queue.fire_due in a loop, TypeScript's
// Queue.runSchedulers) share a queue's interval schedulers, each
// upserting all of them at every start, while they are SIGKILLed and
// restarted, frozen with SIGSTOP (a frozen runner that planned before it
// froze fires stale after it thaws) and all stopped at once for longer than
// the schedulers' grace (the missed slots then get run_once's one run, or
// backfill's run each). The verdict reads the runs from the server (every
// run is a job whose payload names its scheduler, slot and until): for each
// scheduler, the runs' [slot, until) intervals must tile its timeline from
// its start to its final next slot, with no gap (no slot missed) and no
// overlap (no slot fired twice), and its record must count them.
type Schedulers struct{}

// Name is "jobschedulers".
func (Schedulers) Name() string { return "jobschedulers" }

// schedProc is one scheduler process.
type schedProc struct {
	n       int
	lang    Lang
	records string
	cmd     *exec.Cmd
	done    chan struct{}
}

// schedFleet runs the scheduler processes.
type schedFleet struct {
	exe  string
	base SchedulerConfig
	dir  string
	mu   sync.Mutex
	live []*schedProc
	all  []*schedProc
	seq  int
}

// schedulerCommand is the command of a scheduler process of lang.
func (f *schedFleet) command(lang Lang) (*exec.Cmd, error) {
	switch lang {
	case LangGo:
		return exec.Command(f.exe, "worker"), nil
	case LangPy:
		python, script, err := pyProgram("scheduler")
		if err != nil {
			return nil, err
		}
		return exec.Command(python, script), nil
	case LangTS:
		node, script, err := tsProgram("scheduler")
		if err != nil {
			return nil, err
		}
		return exec.Command(node, script), nil
	}
	return nil, fmt.Errorf("chaos: no scheduler program for language %q", lang)
}

// spawn starts a scheduler process of lang, horizon its runner's, and
// waits (up to 20s) until it has upserted the schedulers (its hello).
func (f *schedFleet) spawn(lang Lang, horizon time.Duration) (*schedProc, error) {
	f.mu.Lock()
	f.seq++
	n := f.seq
	f.mu.Unlock()
	cfg := f.base
	cfg.Horizon = horizon
	cfg.Records = filepath.Join(f.dir, fmt.Sprintf("scheduler-%03d.rec", n))
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(f.dir, fmt.Sprintf("scheduler-%03d.log", n))
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd, err := f.command(lang)
	if err != nil {
		logf.Close()
		return nil, err
	}
	cmd.Env = append(os.Environ(), schedulerEnv+"="+string(raw))
	cmd.Stdout, cmd.Stderr = logf, logf
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("chaos: starting a %s scheduler process: %w", lang, err)
	}
	p := &schedProc{n: n, lang: lang, records: cfg.Records, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if st, err := os.Stat(cfg.Records); err == nil && st.Size() > 0 {
			break
		}
		select {
		case <-p.done:
			out, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("chaos: %s scheduler process %d exited before it upserted its schedulers; its output:\n%s", langName(lang), n, out)
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-p.done
			out, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("chaos: %s scheduler process %d did not upsert its schedulers within 20s; its output:\n%s", langName(lang), n, out)
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.mu.Lock()
	f.live = append(f.live, p)
	f.all = append(f.all, p)
	f.mu.Unlock()
	return p, nil
}

// pickOf is a random live process of lang (any when lang is ""), or nil.
func (f *schedFleet) pickOf(rng *rand.Rand, lang Lang) *schedProc {
	f.mu.Lock()
	defer f.mu.Unlock()
	var of []*schedProc
	for _, p := range f.live {
		if lang == "" || p.lang == lang {
			of = append(of, p)
		}
	}
	if len(of) == 0 {
		return nil
	}
	return of[rng.IntN(len(of))]
}

// kill SIGKILLs p and waits for it to die.
func (f *schedFleet) kill(p *schedProc) {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	f.mu.Lock()
	f.live = slices.DeleteFunc(f.live, func(q *schedProc) bool { return q == p })
	f.mu.Unlock()
}

// stop SIGTERMs every live process and waits for each (SIGKILL after
// timeout); it returns how many exited with an error.
func (f *schedFleet) stop(timeout time.Duration) int {
	f.mu.Lock()
	live := slices.Clone(f.live)
	f.live = nil
	f.mu.Unlock()
	bad := 0
	for _, p := range live {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range live {
		select {
		case <-p.done:
		case <-time.After(timeout):
			_ = p.cmd.Process.Kill()
			<-p.done
			bad++
		}
		if p.cmd.ProcessState != nil && !p.cmd.ProcessState.Success() {
			bad++
		}
	}
	return bad
}

// schedRun is one run of a scheduler as the server holds it.
type schedRun struct {
	id          string
	slot, until int64
	state       string
	score       int64
}

// schedVerdict is what the runs of one scheduler say.
type schedVerdict struct {
	slots, covered, missed, twice int64 // slots from start to the final next; covered once; in no run; in more than one
	runs                          int   // runs found
	multi                         int   // runs standing for more than one slot (a missed policy's)
	problems                      []string
}

// judgeScheduler holds the runs of one scheduler (its spec, its record) to
// the tiling: sorted by slot, the first is the start, each run's until is
// the next run's slot, and the last run's until is the record's next slot;
// the record counts the runs and names the last.
func judgeScheduler(s SchedulerSpec, info emq.SchedulerInfo, runs []schedRun) schedVerdict {
	every := s.Every.Milliseconds()
	v := schedVerdict{runs: len(runs)}
	next := msOf(info.Next)
	if next <= s.StartMS {
		v.problems = append(v.problems, fmt.Sprintf("%s: the record's next slot %d is not after its start %d", s.ID, next, s.StartMS))
		return v
	}
	v.slots = (next - s.StartMS) / every
	sort.Slice(runs, func(a, b int) bool { return runs[a].slot < runs[b].slot })
	cover := make([]int, v.slots)
	for _, r := range runs {
		if (r.slot-s.StartMS)%every != 0 || r.until <= r.slot || (r.until-s.StartMS)%every != 0 {
			v.problems = append(v.problems, fmt.Sprintf("%s: run %s [%d, %d) is not an interval of slots", s.ID, r.id, r.slot, r.until))
			continue
		}
		if (r.until-r.slot)/every > 1 {
			v.multi++
		}
		for x := r.slot; x < r.until; x += every {
			k := (x - s.StartMS) / every
			if k < 0 || k >= v.slots {
				v.problems = append(v.problems, fmt.Sprintf("%s: run %s [%d, %d) covers slot %d, outside [start %d, next %d)", s.ID, r.id, r.slot, r.until, x, s.StartMS, next))
				break
			}
			cover[k]++
		}
	}
	for k, c := range cover {
		switch {
		case c == 1:
			v.covered++
		case c == 0:
			v.missed++
			if v.missed <= 3 {
				v.problems = append(v.problems, fmt.Sprintf("%s: slot %d is in no run (a gap)", s.ID, s.StartMS+int64(k)*every))
			}
		default:
			v.twice++
			if v.twice <= 3 {
				v.problems = append(v.problems, fmt.Sprintf("%s: slot %d is in %d runs (fired twice)", s.ID, s.StartMS+int64(k)*every, c))
			}
		}
	}
	if info.Runs != int64(len(runs)) {
		v.problems = append(v.problems, fmt.Sprintf("%s: the record counts %d runs; the server holds %d", s.ID, info.Runs, len(runs)))
	}
	if len(runs) > 0 {
		last := runs[len(runs)-1]
		if info.LastID.String() != last.id || msOf(info.LastSlot) != last.slot {
			v.problems = append(v.problems, fmt.Sprintf("%s: the record's last run is %v at %d; the latest run is %s at %d", s.ID, info.LastID, msOf(info.LastSlot), last.id, last.slot))
		}
	}
	return v
}

// Run runs the scenario.
func (Schedulers) Run(ctx context.Context, cfg Config) (Result, error) {
	began := time.Now()
	seed := cfg.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x5ced))
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			cfg.Log(Schedulers{}.Name()+": "+format, args...)
		}
	}
	if IsWorker() {
		return Result{}, errors.New("chaos: a worker process cannot run scenarios")
	}
	exe, err := os.Executable()
	if err != nil {
		return Result{}, err
	}
	base := cfg.Dir
	if base == "" {
		d, err := os.MkdirTemp("", "emqchaos-")
		if err != nil {
			return Result{}, err
		}
		defer os.RemoveAll(d)
		base = d
	}
	dir := filepath.Join(base, Schedulers{}.Name())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Result{}, err
	}
	logf("seed %d, scratch %s", seed, dir)
	// The load: quick, 12 schedulers for a few seconds; long, 100 for two
	// minutes.
	// Two processes of each language, the second firing ahead; three
	// of each in the long variant.
	nsched, span, langs := 12, 4*time.Second, []Lang{LangGo, LangPy, LangTS, LangGo, LangPy, LangTS}
	if cfg.Long {
		nsched, span, langs = 100, 2*time.Minute, []Lang{LangGo, LangPy, LangTS, LangGo, LangPy, LangTS, LangGo, LangPy, LangTS}
	}
	if cfg.Jobs > 0 {
		nsched = cfg.Jobs
	}
	srv, err := redistest.StartServer(redistest.WithDir(filepath.Join(dir, "redis")))
	if err != nil {
		return Result{}, err
	}
	defer srv.Close()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	client, err := emq.Connect(cctx, emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true},
		Logger: slog.New(slog.DiscardHandler)})
	cancel()
	if err != nil {
		return Result{}, err
	}
	defer client.Close()
	q, err := client.Queue(queueName)
	if err != nil {
		return Result{}, err
	}
	now, err := client.ServerTime(ctx)
	if err != nil {
		return Result{}, err
	}
	// Every slot falls on a whole 50 ms from an anchor a second ahead, so
	// the processes have started when the first comes due.
	start := (now.UnixMilli()/1000 + 1) * 1000
	everys := []time.Duration{100 * time.Millisecond, 150 * time.Millisecond, 250 * time.Millisecond, 400 * time.Millisecond, time.Second}
	graces := []time.Duration{150 * time.Millisecond, 300 * time.Millisecond}
	var specs []SchedulerSpec
	for i := range nsched {
		s := SchedulerSpec{ID: fmt.Sprintf("sched-%03d", i), Every: everys[i%len(everys)], StartMS: start + int64(i%4)*50,
			Missed: emq.MissedRunOnce, Grace: graces[i%len(graces)]}
		if i%2 == 1 {
			s.Missed, s.Backfill = emq.MissedBackfill, emq.MaxBackfill
		}
		specs = append(specs, s)
	}
	fleet := &schedFleet{exe: exe, dir: dir, base: SchedulerConfig{Addrs: []string{srv.Addr()}, Queue: queueName, Specs: specs,
		Template: "{scheduler} {slot} {until}", Poll: 30 * time.Millisecond}}
	defer fleet.stop(5 * time.Second)
	// A process of each language fires ahead.
	horizon := func(i int) time.Duration {
		if i/3 == 1 {
			return 250 * time.Millisecond
		}
		return 0
	}
	hz := map[*schedProc]time.Duration{}
	for i, l := range langs {
		p, err := fleet.spawn(l, horizon(i))
		if err != nil {
			return Result{}, err
		}
		hz[p] = horizon(i)
	}
	chk, err := NewChecker([]string{srv.Addr()}, q.Keys())
	if err != nil {
		return Result{}, err
	}
	defer chk.Close()
	chkCtx, stopChk := context.WithCancel(ctx)
	defer stopChk()
	chkDone := make(chan struct{})
	go func() { chk.Run(chkCtx, 200*time.Millisecond); close(chkDone) }()

	counts := map[string]int64{}
	restart := func(p *schedProc) error {
		np, err := fleet.spawn(p.lang, hz[p])
		if err == nil {
			hz[np] = hz[p]
		}
		return err
	}
	// The faults, until span has passed and each kind ran: SIGKILLs (each
	// process replaced by one of its language after up to 300 ms), freezes
	// of 100 to 800 ms, and blackouts (every process SIGKILLed, none for
	// longer than any grace, then all started again).
	minKills, minFreezes, minBlackouts := int64(2), int64(2), int64(1)
	if cfg.Long {
		minKills, minFreezes, minBlackouts = 20, 15, 5
	}
	end := time.Now().Add(span)
	kill := func(lang Lang) error {
		p := fleet.pickOf(rng, lang)
		if p == nil {
			return nil
		}
		fleet.kill(p)
		counts["kills_"+string(p.lang)]++
		sleepCtx(ctx, time.Duration(rng.IntN(300))*time.Millisecond)
		return restart(p)
	}
	freeze := func() error {
		p := fleet.pickOf(rng, "")
		if p == nil {
			return nil
		}
		if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
		sleepCtx(ctx, time.Duration(100+rng.IntN(700))*time.Millisecond)
		counts["freezes"]++
		return p.cmd.Process.Signal(syscall.SIGCONT)
	}
	blackout := func() error {
		fleet.mu.Lock()
		live := slices.Clone(fleet.live)
		fleet.mu.Unlock()
		for _, p := range live {
			fleet.kill(p)
		}
		sleepCtx(ctx, time.Duration(600+rng.IntN(600))*time.Millisecond)
		for _, p := range live {
			if err := restart(p); err != nil {
				return err
			}
		}
		counts["blackouts"]++
		return nil
	}
	for ctx.Err() == nil {
		sleepCtx(ctx, time.Duration(150+rng.IntN(250))*time.Millisecond)
		var err error
		switch r := rng.IntN(10); {
		case time.Now().Before(end) && r < 5:
			err = kill("")
		case time.Now().Before(end) && r < 8:
			err = freeze()
		case time.Now().Before(end) && (cfg.Long || counts["blackouts"] < minBlackouts):
			err = blackout()
		// Past the span: what the minimums still lack, one at a time.
		case counts["kills_"+string(LangGo)] < minKills:
			err = kill(LangGo)
		case counts["kills_"+string(LangPy)] < minKills:
			err = kill(LangPy)
		case counts["kills_"+string(LangTS)] < minKills:
			err = kill(LangTS)
		case counts["freezes"] < minFreezes:
			err = freeze()
		case counts["blackouts"] < minBlackouts:
			err = blackout()
		case !time.Now().Before(end):
			goto settle
		}
		if err != nil {
			return Result{}, err
		}
	}
settle:
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	// Settle: the fleet runs undisturbed for a second, then stops; the
	// records are read after.
	sleepCtx(ctx, time.Second)
	if bad := fleet.stop(5 * time.Second); bad > 0 {
		logf("%d scheduler processes did not exit cleanly at the end", bad)
	}
	stopChk()
	<-chkDone
	passes, _, _, _ := chk.Stats()
	counts["passes"] = passes

	// The verdict, from the server.
	runs, err := schedulerRuns(ctx, client, q, fleet.base.Template)
	if err != nil {
		return Result{}, err
	}
	ids := make([]string, len(specs))
	for i, s := range specs {
		ids[i] = s.ID
	}
	infos, err := q.Schedulers(ctx, ids...)
	if err != nil {
		return Result{}, err
	}
	res := Result{Scenario: "job schedulers (" + wire.Version + ": Go, Python and TypeScript runners killed, frozen and blacked out)", Promised: true, Seed: seed, Counts: counts}
	res.Violations = append(res.Violations, chk.Violations()...)
	var slots, covered, missed, twice, multi, total int64
	for i, s := range specs {
		rs := runs.by[s.ID]
		v := judgeScheduler(s, infos[i], rs)
		res.Violations = append(res.Violations, v.problems...)
		slots, covered, missed, twice, multi, total = slots+v.slots, covered+v.covered, missed+v.missed, twice+v.twice, multi+int64(v.multi), total+int64(v.runs)
		for _, r := range rs {
			// No worker takes a run: it is pending, or scheduled at its
			// slot (fired ahead).
			if !(r.state == string(emq.StatePending) || r.state == string(emq.StateScheduled) && r.score == r.slot) {
				res.Violations = append(res.Violations, fmt.Sprintf("%s: run %s of slot %d is %s at %d", s.ID, r.id, r.slot, r.state, r.score))
			}
		}
	}
	res.Violations = append(res.Violations, runs.problems...)
	// The processes' records: every run a process recorded is a run the
	// server holds, as recorded; the runs fired by each language.
	recorded, err := fleet.recorded()
	if err != nil {
		return Result{}, err
	}
	for id, r := range recorded {
		got, ok := runs.byID[id]
		switch {
		case !ok:
			res.Violations = append(res.Violations, fmt.Sprintf("a %s process recorded run %s, which the server does not hold", langName(r.lang), id))
		case got.slot != r.slot || got.until != r.until:
			res.Violations = append(res.Violations, fmt.Sprintf("a %s process recorded run %s as [%d, %d); the server holds [%d, %d)", langName(r.lang), id, r.slot, r.until, got.slot, got.until))
		}
		counts["runs_"+string(r.lang)]++
	}
	counts["runs"], counts["runs_unrecorded"] = total, total-int64(len(recorded))
	counts["slots"], counts["missed"], counts["twice"], counts["multi_slot_runs"] = slots, missed, twice, multi
	counts["processes"] = int64(len(fleet.all))
	res.Acknowledged, res.Finished, res.Lost, res.Twice = slots, covered, missed, twice
	res.Took = time.Since(began)
	res.Load = fmt.Sprintf("%d interval schedulers (every 100 ms to 1 s, half run_once, half backfill up to %d, grace 150 or 300 ms) for %v; %d scheduler processes (%s), polling every %v, one of each language firing %v ahead",
		nsched, emq.MaxBackfill, span.Round(time.Second), len(langs), langList(langs), fleet.base.Poll, 250*time.Millisecond)
	res.Faults = fmt.Sprintf("SIGKILLs of scheduler processes: %d Go, %d Python, %d TypeScript (each replaced after up to 300 ms); %d SIGSTOPs of a process for 0.1–0.8 s; %d blackout(s) (every process SIGKILLed for 0.6–1.2 s, longer than any grace, then restarted)",
		counts["kills_"+string(LangGo)], counts["kills_"+string(LangPy)], counts["kills_"+string(LangTS)], counts["freezes"], counts["blackouts"])
	res.Notes = fmt.Sprintf("%s slots from the schedulers' starts to their final next slots; %s runs (Go %s, Python %s, TypeScript %s recorded by their processes, %s fired just before a SIGKILL); %s runs stand for several missed slots (run_once); %d processes in all. *Acknowledged* here counts slots, *finished* slots in exactly one run, *lost* slots in none, *finished twice* slots in two or more",
		thousands(slots), thousands(total), thousands(counts["runs_"+string(LangGo)]), thousands(counts["runs_"+string(LangPy)]), thousands(counts["runs_"+string(LangTS)]), thousands(counts["runs_unrecorded"]), thousands(multi), len(fleet.all))
	res.Details = fmt.Sprintf(`**Injected.** %d interval schedulers on one queue, every 100 ms to 1 s from a common anchor, half under missed run_once and half under backfill (up to %d runs), with a grace of 150 or 300 ms, fired by %d scheduler processes of Go (Queue.RunSchedulers), Python (Queue.fire_due in a loop) and TypeScript (Queue.runSchedulers), one of each language firing 250 ms ahead; each process upserts every scheduler at its start (the same schedule: the next slot is kept). For %v, processes are SIGKILLed and replaced, frozen with SIGSTOP (a runner that read and planned before it froze fires stale when it thaws) and all SIGKILLed at once for longer than any grace (the missed slots are then fired by run_once's one run or backfill's run each).

**Checked.** From the server, after the fleet stopped: every run is a job whose payload names its scheduler, slot and until; for each scheduler, the runs' [slot, until) intervals tile its timeline from its start to its final next slot — no slot in no run (missed), no slot in two runs (fired twice) — its record counts its runs and names the last; a run ahead of its slot waits scheduled at it; every run a process recorded is the server's; the rows and sets invariant held throughout (%s checker passes).`,
		nsched, emq.MaxBackfill, len(langs), span.Round(time.Second), thousands(passes))
	logf("%s slots, %s runs, %d missed, %d twice, %d violations", thousands(slots), thousands(total), missed, twice, len(res.Violations))
	return res, nil
}

// langList names langs in prose, with counts: "3 Go, 2 Python".
func langList(langs []Lang) string {
	n := map[Lang]int{}
	var order []Lang
	for _, l := range langs {
		if n[l] == 0 {
			order = append(order, l)
		}
		n[l]++
	}
	var out []string
	for _, l := range order {
		out = append(out, fmt.Sprintf("%d %s", n[l], langName(l)))
	}
	return strings.Join(out, ", ")
}

// serverRuns are the runs the server holds, read from the queue's sets.
type serverRuns struct {
	by       map[string][]schedRun // by scheduler
	byID     map[string]schedRun
	problems []string
}

// schedulerRuns reads every job of q (no worker took any) and parses its
// payload, template filled in: scheduler, slot and until.
func schedulerRuns(ctx context.Context, c *emq.Client, q *emq.Queue, template string) (serverRuns, error) {
	out := serverRuns{by: map[string][]schedRun{}, byID: map[string]schedRun{}}
	rc := c.Redis()
	k := q.Keys()
	for _, set := range emq.Sets() {
		zs, err := rc.Do(ctx, rc.B().Zrange().Key(k.Set(set)).Min("0").Max("-1").Withscores().Build()).AsZScores()
		if err != nil {
			return out, err
		}
		for _, z := range zs {
			id, err := emq.ParseID(z.Member)
			if err != nil {
				return out, err
			}
			info, found, err := q.Get(ctx, id)
			if err != nil {
				return out, err
			}
			if !found {
				out.problems = append(out.problems, fmt.Sprintf("%s holds %s without a row", set, id))
				continue
			}
			words := strings.Fields(string(info.Payload))
			if len(words) != 3 || len(strings.Fields(template)) != 3 {
				out.problems = append(out.problems, fmt.Sprintf("run %s has payload %q, not the template filled in", id, info.Payload))
				continue
			}
			slot, err1 := strconv.ParseInt(words[1], 10, 64)
			until, err2 := strconv.ParseInt(words[2], 10, 64)
			if err1 != nil || err2 != nil {
				out.problems = append(out.problems, fmt.Sprintf("run %s has payload %q, not the template filled in", id, info.Payload))
				continue
			}
			r := schedRun{id: id.String(), slot: slot, until: until, state: string(info.State), score: int64(z.Score)}
			out.by[words[0]] = append(out.by[words[0]], r)
			out.byID[r.id] = r
		}
	}
	return out, nil
}

// recordedRun is a run a scheduler process recorded.
type recordedRun struct {
	lang        Lang
	slot, until int64
}

// recorded reads every process's F records, by run id.
func (f *schedFleet) recorded() (map[string]recordedRun, error) {
	f.mu.Lock()
	all := slices.Clone(f.all)
	f.mu.Unlock()
	out := map[string]recordedRun{}
	for _, p := range all {
		data, err := os.ReadFile(p.records)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(data), "\n") {
			w := strings.Fields(line)
			if len(w) != 5 || w[0] != string(rune(recSchedFired)) {
				continue // the hello, or a line a SIGKILL cut
			}
			slot, err1 := strconv.ParseInt(w[2], 10, 64)
			until, err2 := strconv.ParseInt(w[3], 10, 64)
			if err1 != nil || err2 != nil {
				continue
			}
			out[w[1]] = recordedRun{lang: p.lang, slot: slot, until: until}
		}
	}
	return out, nil
}
