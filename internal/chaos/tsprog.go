package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
)

// Lang is the language of a worker process or a producer.
type Lang string

// The languages the harness runs.
const (
	LangGo Lang = "go" // the Go SDK (sdk/go/emq), in this executable
	LangTS Lang = "ts" // the TypeScript SDK (sdk/ts), under node
)

// tsDirEnv overrides where the TypeScript SDK (sdk/ts) is.
const tsDirEnv = "EMQCHAOS_TS_DIR"

// tsBuildHint says how to get what the TypeScript programs need.
const tsBuildHint = "the interop scenarios run the TypeScript SDK's chaos programs under node: install Node 20 or later (Debian: apt-get install nodejs npm) and build sdk/ts first: (cd sdk/ts && npm ci && npx tsc -p tsconfig.json); ./test.sh does both"

// tsProgram returns the node binary and the path of the built TypeScript
// chaos program name (sdk/ts/dist/chaos/<name>.js). It fails, with the
// install hint, when node is not on PATH or the program is not built.
func tsProgram(name string) (node, script string, err error) {
	node, err = exec.LookPath("node")
	if err != nil {
		return "", "", fmt.Errorf("chaos: node is not on PATH: %s", tsBuildHint)
	}
	dir, err := tsDir()
	if err != nil {
		return "", "", err
	}
	script = filepath.Join(dir, "dist", "chaos", name+".js")
	if _, err := os.Stat(script); err != nil {
		return "", "", fmt.Errorf("chaos: the TypeScript chaos program %s is not built: %s", script, tsBuildHint)
	}
	return node, script, nil
}

// tsDir finds sdk/ts: $EMQCHAOS_TS_DIR, else sdk/ts above the working
// directory, else beside this source file's module.
func tsDir() (string, error) {
	if d := os.Getenv(tsDirEnv); d != "" {
		return filepath.Abs(d)
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	for _, d := range starts {
		for {
			cand := filepath.Join(d, "sdk", "ts")
			if _, err := os.Stat(filepath.Join(cand, "package.json")); err == nil {
				return cand, nil
			}
			up := filepath.Dir(d)
			if up == d {
				break
			}
			d = up
		}
	}
	return "", fmt.Errorf("chaos: cannot find sdk/ts above the working directory (set %s): %s", tsDirEnv, tsBuildHint)
}

// tsError is an error a TypeScript request failed with, as the driver
// reports it.
type tsError struct {
	Name    string `json:"name"`
	Message string `json:"message"`
	Code    string `json:"code"`  // the wire class of a refusal
	Stale   bool   `json:"stale"` // the error is the SDK's StaleError
}

func (e *tsError) Error() string { return "ts " + e.Name + ": " + e.Message }

// tsReply is one reply line of the driver.
type tsReply struct {
	Seq     int64          `json:"seq"`
	Error   *tsError       `json:"error"`
	Node    int            `json:"node"`
	IDs     []string       `json:"ids"`
	N       int            `json:"n"`
	Results []tsPushResult `json:"results"`
	Job     *tsJob         `json:"job"`
}

type tsPushResult struct {
	Enqueued bool     `json:"enqueued"`
	Error    *tsError `json:"error"`
}

type tsJob struct {
	ID    string `json:"id"`
	Token int64  `json:"token"`
}

// tsDriver is a TypeScript SDK client in a node process of its own
// (sdk/ts/chaos/driver.ts), driven by JSON lines: requests on its stdin,
// replies on its stdout, matched by sequence number and run concurrently.
type tsDriver struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	done chan struct{}

	mu      sync.Mutex
	seq     int64
	waiting map[int64]chan tsReply
	err     error
}

// startTSDriver starts the driver, connects it to the server at addr and
// returns it; its stderr goes to logPath.
func startTSDriver(ctx context.Context, addr, logPath string) (*tsDriver, error) {
	node, script, err := tsProgram("driver")
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(node, script)
	cmd.Stderr = logf
	dieWithParent(cmd)
	in, err := cmd.StdinPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("chaos: starting the TypeScript driver: %w", err)
	}
	d := &tsDriver{cmd: cmd, in: in, done: make(chan struct{}), waiting: map[int64]chan tsReply{}}
	go d.read(out, logf)
	if _, err := d.call(ctx, map[string]any{"op": "connect", "url": "redis://" + addr}); err != nil {
		d.Close()
		log, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("chaos: the TypeScript driver did not connect: %w; its stderr:\n%s", err, log)
	}
	return d, nil
}

func (d *tsDriver) read(out io.Reader, logf *os.File) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var r tsReply
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue
		}
		d.mu.Lock()
		ch := d.waiting[r.Seq]
		delete(d.waiting, r.Seq)
		d.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
	_ = d.cmd.Wait()
	logf.Close()
	d.mu.Lock()
	d.err = errors.New("chaos: the TypeScript driver exited")
	for seq, ch := range d.waiting {
		close(ch)
		delete(d.waiting, seq)
	}
	d.mu.Unlock()
	close(d.done)
}

// call sends one request and waits for its reply. A request the driver
// answered with an error returns it as a *tsError.
func (d *tsDriver) call(ctx context.Context, req map[string]any) (tsReply, error) {
	ch := make(chan tsReply, 1)
	d.mu.Lock()
	if d.err != nil {
		d.mu.Unlock()
		return tsReply{}, d.err
	}
	d.seq++
	req["seq"] = d.seq
	d.waiting[d.seq] = ch
	line, err := json.Marshal(req)
	if err == nil {
		_, err = d.in.Write(append(line, '\n'))
	}
	seq := d.seq
	d.mu.Unlock()
	if err != nil {
		return tsReply{}, fmt.Errorf("chaos: writing to the TypeScript driver: %w", err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return tsReply{}, errors.New("chaos: the TypeScript driver exited before it answered")
		}
		if r.Error != nil {
			return r, r.Error
		}
		return r, nil
	case <-ctx.Done():
		d.mu.Lock()
		delete(d.waiting, seq)
		d.mu.Unlock()
		return tsReply{}, ctx.Err()
	}
}

// Mint mints n work ids with the TypeScript SDK's id generator.
func (d *tsDriver) Mint(ctx context.Context, n int) ([]emq.ID, error) {
	r, err := d.call(ctx, map[string]any{"op": "mint", "n": n})
	if err != nil {
		return nil, err
	}
	out := make([]emq.ID, len(r.IDs))
	for i, s := range r.IDs {
		if out[i], err = emq.ParseID(s); err != nil {
			return nil, fmt.Errorf("chaos: the TypeScript SDK minted %q: %w", s, err)
		}
	}
	return out, nil
}

// PushBatch pushes jobs to queue with the TypeScript SDK's
// Queue.pushBatch. It returns nil when every job was admitted (or a
// duplicate), a *emq.BatchError naming the jobs that failed, or another
// error when nothing was answered.
func (d *tsDriver) PushBatch(ctx context.Context, queue string, jobs []emq.NewJob) error {
	js := make([]map[string]string, len(jobs))
	for i, j := range jobs {
		js[i] = map[string]string{"id": j.ID.String(), "data": string(j.Payload)}
	}
	r, err := d.call(ctx, map[string]any{"op": "push", "queue": queue, "jobs": js})
	if err != nil {
		return err
	}
	if len(r.Results) != len(jobs) {
		return fmt.Errorf("chaos: the TypeScript driver answered %d results for %d jobs", len(r.Results), len(jobs))
	}
	be := &emq.BatchError{Errs: make([]error, len(jobs))}
	failed := false
	for i, res := range r.Results {
		if res.Error != nil {
			be.Errs[i], failed = res.Error, true
		}
	}
	if failed {
		return be
	}
	return nil
}

// Claim claims a job of queue with the TypeScript SDK; ok is false when
// nothing is pending.
func (d *tsDriver) Claim(ctx context.Context, queue string, lease time.Duration) (id string, token int64, ok bool, err error) {
	r, err := d.call(ctx, map[string]any{"op": "claim", "queue": queue, "leaseMs": lease.Milliseconds()})
	if err != nil || r.Job == nil {
		return "", 0, false, err
	}
	return r.Job.ID, r.Job.Token, true, nil
}

// Complete completes a job of queue with the TypeScript SDK; a refusal
// comes back as a *tsError.
func (d *tsDriver) Complete(ctx context.Context, queue, id string, token int64) error {
	_, err := d.call(ctx, map[string]any{"op": "complete", "queue": queue, "id": id, "token": token})
	return err
}

// Reap takes back the expired leases of queue with the TypeScript SDK.
func (d *tsDriver) Reap(ctx context.Context, queue string) (int, error) {
	r, err := d.call(ctx, map[string]any{"op": "reap", "queue": queue})
	return r.N, err
}

// Close closes the driver's client and waits (up to 5s) for the process
// to exit, then kills it.
func (d *tsDriver) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	_, _ = d.call(ctx, map[string]any{"op": "close"})
	cancel()
	_ = d.in.Close()
	select {
	case <-d.done:
	case <-time.After(5 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
}
