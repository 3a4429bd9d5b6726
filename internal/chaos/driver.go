package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
)

// driverError is an error a driver request failed with, as the driver
// reports it.
type driverError struct {
	Lang    Lang   `json:"-"`
	Name    string `json:"name"`
	Message string `json:"message"`
	Code    string `json:"code"`  // the wire class of a refusal
	Stale   bool   `json:"stale"` // the error is the SDK's StaleError
}

func (e *driverError) Error() string { return string(e.Lang) + " " + e.Name + ": " + e.Message }

// driverReply is one reply line of a driver.
type driverReply struct {
	Seq     int64              `json:"seq"`
	Error   *driverError       `json:"error"`
	Node    int                `json:"node"`
	IDs     []string           `json:"ids"`
	N       int                `json:"n"`
	Results []driverPushResult `json:"pushed"`
	Job     *driverJob         `json:"job"`
}

type driverPushResult struct {
	Enqueued bool         `json:"enqueued"`
	Error    *driverError `json:"error"`
}

type driverJob struct {
	ID    string `json:"id"`
	Token int64  `json:"token"`
}

// sdkDriver is a client of another language's SDK in a process of its own
// (sdk/ts/chaos/driver.ts under node, sdk/python/chaos/driver.py under the
// Python SDK's virtual environment), driven by JSON lines: requests on its
// stdin, replies on its stdout, matched by sequence number and run
// concurrently. Both drivers speak the same requests (see driver.ts).
type sdkDriver struct {
	lang Lang
	cmd  *exec.Cmd
	in   io.WriteCloser
	done chan struct{}

	mu      sync.Mutex
	seq     int64
	waiting map[int64]chan driverReply
	err     error
}

// driverCommand returns the command that runs lang's driver program.
func driverCommand(lang Lang) (*exec.Cmd, error) {
	switch lang {
	case LangTS:
		node, script, err := tsProgram("driver")
		if err != nil {
			return nil, err
		}
		return exec.Command(node, script), nil
	case LangPy:
		python, script, err := pyProgram("driver")
		if err != nil {
			return nil, err
		}
		return exec.Command(python, script), nil
	case LangOld, LangPrev, LangPrev24, LangPrev25, LangPrev26, LangPrev27:
		bin, err := oldFleetBinary(lang)
		if err != nil {
			return nil, err
		}
		return exec.Command(bin, "driver"), nil
	}
	return nil, fmt.Errorf("chaos: no driver program for language %q", lang)
}

// startDriver starts lang's driver, connects it to the server at addrs[0]
// (the TypeScript driver: to the Redis Cluster whose nodes addrs are, when
// there are several) and returns it; its stderr goes to logPath.
func startDriver(ctx context.Context, lang Lang, addrs []string, logPath string) (*sdkDriver, error) {
	if len(addrs) > 1 && lang != LangTS {
		return nil, fmt.Errorf("chaos: the %s driver does not connect to a cluster", langName(lang))
	}
	cmd, err := driverCommand(lang)
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
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
		return nil, fmt.Errorf("chaos: starting the %s driver: %w", langName(lang), err)
	}
	d := &sdkDriver{lang: lang, cmd: cmd, in: in, done: make(chan struct{}), waiting: map[int64]chan driverReply{}}
	go d.read(out, logf)
	req := map[string]any{"op": "connect", "url": "redis://" + addrs[0]}
	if len(addrs) > 1 { // the nodes of a Redis Cluster
		var urls []string
		for _, a := range addrs {
			urls = append(urls, "redis://"+a)
		}
		req["rootNodes"] = urls
	}
	if _, err := d.call(ctx, req); err != nil {
		d.Close()
		log, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("chaos: the %s driver did not connect: %w; its stderr:\n%s", langName(lang), err, log)
	}
	return d, nil
}

func (d *sdkDriver) read(out io.Reader, logf *os.File) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var r driverReply
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue
		}
		if r.Error != nil {
			r.Error.Lang = d.lang
		}
		for _, res := range r.Results {
			if res.Error != nil {
				res.Error.Lang = d.lang
			}
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
	d.err = fmt.Errorf("chaos: the %s driver exited", langName(d.lang))
	for seq, ch := range d.waiting {
		close(ch)
		delete(d.waiting, seq)
	}
	d.mu.Unlock()
	close(d.done)
}

// call sends one request and waits for its reply. A request the driver
// answered with an error returns it as a *driverError.
func (d *sdkDriver) call(ctx context.Context, req map[string]any) (driverReply, error) {
	ch := make(chan driverReply, 1)
	d.mu.Lock()
	if d.err != nil {
		d.mu.Unlock()
		return driverReply{}, d.err
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
		return driverReply{}, fmt.Errorf("chaos: writing to the %s driver: %w", langName(d.lang), err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return driverReply{}, fmt.Errorf("chaos: the %s driver exited before it answered", langName(d.lang))
		}
		if r.Error != nil {
			return r, r.Error
		}
		return r, nil
	case <-ctx.Done():
		d.mu.Lock()
		delete(d.waiting, seq)
		d.mu.Unlock()
		return driverReply{}, ctx.Err()
	}
}

// Mint mints n work ids with the driven SDK's id generator.
func (d *sdkDriver) Mint(ctx context.Context, n int) ([]emq.ID, error) {
	r, err := d.call(ctx, map[string]any{"op": "mint", "n": n})
	if err != nil {
		return nil, err
	}
	out := make([]emq.ID, len(r.IDs))
	for i, s := range r.IDs {
		if out[i], err = emq.ParseID(s); err != nil {
			return nil, fmt.Errorf("chaos: the %s SDK minted %q: %w", langName(d.lang), s, err)
		}
	}
	return out, nil
}

// PushBatch pushes jobs to queue with the driven SDK's batch push
// (pushBatch, push_batch). It returns nil when every job was admitted (or
// a duplicate), a *emq.BatchError naming the jobs that failed, or another
// error when nothing was answered.
func (d *sdkDriver) PushBatch(ctx context.Context, queue string, jobs []emq.NewJob) error {
	js := make([]map[string]string, len(jobs))
	for i, j := range jobs {
		js[i] = map[string]string{"id": j.ID.String(), "data": string(j.Payload)}
	}
	r, err := d.call(ctx, map[string]any{"op": "push", "queue": queue, "jobs": js})
	if err != nil {
		return err
	}
	if len(r.Results) != len(jobs) {
		return fmt.Errorf("chaos: the %s driver answered %d results for %d jobs", langName(d.lang), len(r.Results), len(jobs))
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

// Claim claims a job of queue with the driven SDK; ok is false when
// nothing is pending.
func (d *sdkDriver) Claim(ctx context.Context, queue string, lease time.Duration) (id string, token int64, ok bool, err error) {
	r, err := d.call(ctx, map[string]any{"op": "claim", "queue": queue, "leaseMs": lease.Milliseconds()})
	if err != nil || r.Job == nil {
		return "", 0, false, err
	}
	return r.Job.ID, r.Job.Token, true, nil
}

// Complete completes a job of queue with the driven SDK; a refusal comes
// back as a *driverError.
func (d *sdkDriver) Complete(ctx context.Context, queue, id string, token int64) error {
	_, err := d.call(ctx, map[string]any{"op": "complete", "queue": queue, "id": id, "token": token})
	return err
}

// Retry hands a job of queue back to run again after delay with the
// driven SDK (the old side's driver only).
func (d *sdkDriver) Retry(ctx context.Context, queue, id string, token int64, delay time.Duration) error {
	_, err := d.call(ctx, map[string]any{"op": "retry", "queue": queue, "id": id, "token": token, "delayMs": delay.Milliseconds()})
	return err
}

// Bury moves a job of queue to the dead set with the driven SDK (the old
// side's driver only).
func (d *sdkDriver) Bury(ctx context.Context, queue, id string, token int64) error {
	_, err := d.call(ctx, map[string]any{"op": "bury", "queue": queue, "id": id, "token": token})
	return err
}

// Reap takes back the expired leases of queue with the driven SDK.
func (d *sdkDriver) Reap(ctx context.Context, queue string) (int, error) {
	r, err := d.call(ctx, map[string]any{"op": "reap", "queue": queue})
	return r.N, err
}

// Close closes the driver's client and waits (up to 5s) for the process
// to exit, then kills it.
func (d *sdkDriver) Close() {
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
