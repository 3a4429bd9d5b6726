package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Pool runs worker processes: real OS processes, each with its own record
// file. A Go worker process is the harness's own executable run again as a
// worker (see IsWorker); a TypeScript one is the TypeScript SDK's chaos
// worker (sdk/ts/chaos/worker.ts, built to dist) under node; a Python one
// is the Python SDK's chaos worker (sdk/python/chaos/worker.py) under the
// SDK's virtual environment. All read the same WorkerConfig from the same
// environment variable and write the same records.
type Pool struct {
	exe   string
	base  WorkerConfig
	dir   string
	log   func(format string, args ...any)
	langs []Lang

	mu   sync.Mutex
	live []*Proc
	all  []*Proc
	seq  int
}

// Proc is one worker process.
type Proc struct {
	N       int    // its number in the pool, from 1
	Lang    Lang   // the SDK it runs
	Records string // its record file
	cmd     *exec.Cmd
	done    chan struct{}
}

// Pid returns the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// NewPool makes a pool whose processes run base (Records is set per
// process) and keep their records and logs in dir. Its processes are Go
// worker processes; SetLangs mixes in others.
func NewPool(base WorkerConfig, dir string, log func(string, ...any)) (*Pool, error) {
	if IsWorker() {
		return nil, errors.New("chaos: a worker process cannot start worker processes")
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("chaos: finding the executable to run as a worker: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if log == nil {
		log = func(string, ...any) {}
	}
	return &Pool{exe: exe, base: base, dir: dir, log: log, langs: []Lang{LangGo}}, nil
}

// SetLangs sets the languages of the processes Start starts, in turn: the
// i-th process (from 0) runs langs[i % len(langs)]. It fails, with the
// install hint, when a language's program cannot run here (node missing,
// the TypeScript SDK not built, the Python SDK's virtual environment
// missing).
func (p *Pool) SetLangs(langs ...Lang) error {
	if len(langs) == 0 {
		return errors.New("chaos: a pool needs a language")
	}
	for _, l := range langs {
		switch l {
		case LangGo:
		case LangTS:
			if _, _, err := tsProgram("worker"); err != nil {
				return err
			}
		case LangPy:
			if _, _, err := pyProgram("worker"); err != nil {
				return err
			}
		case LangOld, LangPrev, LangPrev24, LangPrev25, LangPrev26, LangPrev27:
			if _, err := oldFleetBinary(l); err != nil {
				return err
			}
		default:
			return fmt.Errorf("chaos: no worker program for language %q", l)
		}
	}
	p.langs = append([]Lang(nil), langs...)
	return nil
}

// Start starts n worker processes, their languages in turn, and waits
// until each has begun recording.
func (p *Pool) Start(n int) error {
	for i := 0; i < n; i++ {
		if _, err := p.spawn(p.langs[i%len(p.langs)]); err != nil {
			return err
		}
	}
	return nil
}

// command returns the command that runs a worker process of lang.
func (p *Pool) command(lang Lang) (*exec.Cmd, error) {
	switch lang {
	case LangTS:
		node, script, err := tsProgram("worker")
		if err != nil {
			return nil, err
		}
		return exec.Command(node, script), nil
	case LangPy:
		python, script, err := pyProgram("worker")
		if err != nil {
			return nil, err
		}
		return exec.Command(python, script), nil
	case LangOld, LangPrev, LangPrev24, LangPrev25, LangPrev26, LangPrev27:
		bin, err := oldFleetBinary(lang)
		if err != nil {
			return nil, err
		}
		return exec.Command(bin, "worker"), nil
	}
	return exec.Command(p.exe, "worker"), nil
}

// spawn starts one worker process of lang and waits (up to 10s) for its
// first record, which proves the program runs workers.
func (p *Pool) spawn(lang Lang) (*Proc, error) {
	p.mu.Lock()
	p.seq++
	n := p.seq
	p.mu.Unlock()
	cfg := p.base
	cfg.Records = filepath.Join(p.dir, fmt.Sprintf("worker-%03d.rec", n))
	cfg.Seed = p.base.Seed + uint64(n)
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(p.dir, fmt.Sprintf("worker-%03d.log", n)))
	if err != nil {
		return nil, err
	}
	cmd, err := p.command(lang)
	if err != nil {
		logf.Close()
		return nil, err
	}
	cmd.Env = append(os.Environ(), workerEnv+"="+string(raw))
	cmd.Stdout, cmd.Stderr = logf, logf
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("chaos: starting a %s worker process: %w", lang, err)
	}
	proc := &Proc{N: n, Lang: lang, Records: cfg.Records, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(proc.done)
	}()
	p.mu.Lock()
	p.live = append(p.live, proc)
	p.all = append(p.all, proc)
	p.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if st, err := os.Stat(cfg.Records); err == nil && st.Size() > 0 {
			return proc, nil
		}
		if proc.Exited() || time.Now().After(deadline) {
			p.remove(proc)
			_ = cmd.Process.Kill()
			<-proc.done
			log, _ := os.ReadFile(filepath.Join(p.dir, fmt.Sprintf("worker-%03d.log", n)))
			switch lang {
			case LangTS:
				return nil, fmt.Errorf("chaos: TypeScript worker process %d did not start recording (%s); its output:\n%s", n, tsBuildHint, log)
			case LangPy:
				return nil, fmt.Errorf("chaos: Python worker process %d did not start recording (%s); its output:\n%s", n, pyBuildHint, log)
			}
			return nil, fmt.Errorf("chaos: worker process %d did not start recording; the executable must begin with `if chaos.IsWorker() { os.Exit(chaos.RunWorker()) }`; its output:\n%s", n, log)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (p *Pool) remove(proc *Proc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, q := range p.live {
		if q == proc {
			p.live = append(p.live[:i], p.live[i+1:]...)
			return
		}
	}
}

// pick returns a random live process, or nil.
func (p *Pool) pick(rng *rand.Rand) *Proc { return p.pickOf(rng, "") }

// pickOf returns a random live process of lang (any when lang is ""), or
// nil.
func (p *Pool) pickOf(rng *rand.Rand, lang Lang) *Proc {
	p.mu.Lock()
	defer p.mu.Unlock()
	var of []*Proc
	for _, q := range p.live {
		if lang == "" || q.Lang == lang {
			of = append(of, q)
		}
	}
	if len(of) == 0 {
		return nil
	}
	return of[rng.IntN(len(of))]
}

// Live returns how many worker processes run.
func (p *Pool) Live() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.live)
}

// KillRandom SIGKILLs a random worker process, waits for it to die and
// starts a replacement of the same language. It returns the killed
// process.
func (p *Pool) KillRandom(rng *rand.Rand) (*Proc, error) { return p.KillRandomOf(rng, "") }

// KillRandomOf is KillRandom among the processes of lang ("" for any).
func (p *Pool) KillRandomOf(rng *rand.Rand, lang Lang) (*Proc, error) {
	proc := p.pickOf(rng, lang)
	if proc == nil {
		return nil, fmt.Errorf("chaos: no %sworker process to kill", langWord(lang))
	}
	_ = proc.cmd.Process.Signal(syscall.SIGKILL)
	<-proc.done
	p.remove(proc)
	_, err := p.spawn(proc.Lang)
	return proc, err
}

func langWord(l Lang) string {
	if l == "" {
		return ""
	}
	return string(l) + " "
}

// FreezeRandom SIGSTOPs a random worker process for d (or until ctx ends)
// and then SIGCONTs it: its leases expire meanwhile, and when it thaws its
// handlers' completions must be refused. It returns the frozen process.
func (p *Pool) FreezeRandom(ctx context.Context, rng *rand.Rand, d time.Duration) (*Proc, error) {
	return p.FreezeRandomOf(ctx, rng, "", d)
}

// FreezeRandomOf is FreezeRandom among the processes of lang ("" for any).
func (p *Pool) FreezeRandomOf(ctx context.Context, rng *rand.Rand, lang Lang, d time.Duration) (*Proc, error) {
	proc := p.pickOf(rng, lang)
	if proc == nil {
		return nil, errors.New("chaos: no worker process to freeze")
	}
	if err := proc.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return nil, err
	}
	t := time.NewTimer(d)
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	t.Stop()
	return proc, proc.cmd.Process.Signal(syscall.SIGCONT)
}

// FreezeAll SIGSTOPs every live worker process and returns them, to be
// thawed with Thaw.
func (p *Pool) FreezeAll() ([]*Proc, error) { return p.FreezeAllOf("") }

// FreezeAllOf is FreezeAll among the processes of lang ("" for any).
func (p *Pool) FreezeAllOf(lang Lang) ([]*Proc, error) {
	p.mu.Lock()
	var live []*Proc
	for _, q := range p.live {
		if lang == "" || q.Lang == lang {
			live = append(live, q)
		}
	}
	p.mu.Unlock()
	for i, proc := range live {
		if err := proc.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			p.Thaw(live[:i])
			return nil, err
		}
	}
	return live, nil
}

// Thaw SIGCONTs procs.
func (p *Pool) Thaw(procs []*Proc) {
	for _, proc := range procs {
		_ = proc.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// Stop asks every live process to drain (SIGTERM) and waits up to timeout
// for them to exit; it SIGKILLs what remains and reports how many had to
// be killed.
func (p *Pool) Stop(timeout time.Duration) int {
	p.mu.Lock()
	live := append([]*Proc(nil), p.live...)
	p.live = nil
	p.mu.Unlock()
	for _, proc := range live {
		_ = proc.cmd.Process.Signal(syscall.SIGCONT)
		_ = proc.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.Now().Add(timeout)
	killed := 0
	for _, proc := range live {
		select {
		case <-proc.done:
		case <-time.After(time.Until(deadline)):
			_ = proc.cmd.Process.Kill()
			<-proc.done
			killed++
		}
	}
	return killed
}

// Close SIGKILLs every process still running; it is safe to call at any
// time and more than once.
func (p *Pool) Close() {
	p.mu.Lock()
	all := append([]*Proc(nil), p.all...)
	p.live = nil
	p.mu.Unlock()
	for _, proc := range all {
		if !proc.Exited() {
			_ = proc.cmd.Process.Kill()
			<-proc.done
		}
	}
}

// Procs returns every process the pool started, in start order.
func (p *Pool) Procs() []*Proc {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*Proc(nil), p.all...)
}

// Records returns the record file of every process the pool started.
func (p *Pool) Records() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, len(p.all))
	for i, proc := range p.all {
		out[i] = proc.Records
	}
	return out
}
