package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Reply is a testee's response to one request.
type Reply struct {
	Seq    int64          `json:"seq"`
	OK     bool           `json:"ok"`
	Result map[string]any `json:"result"`
	Error  *ErrorReply    `json:"error"`
}

// ErrorReply is a failed op's error, in the contract's kinds.
type ErrorReply struct {
	Kind    string `json:"kind"`
	Class   string `json:"class"`
	Message string `json:"message"`
}

// process is a running testee speaking JSON lines.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *tail
	seq    int64
	dead   error
	wait   chan error
}

// tail keeps the last bytes a testee wrote to stderr, for failure reports.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 8192 {
		t.buf = t.buf[len(t.buf)-8192:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// start launches argv in dir as a testee.
func start(dir string, argv []string, echo io.Writer) (*process, error) {
	if len(argv) == 0 {
		return nil, errors.New("empty run command")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	p := &process{cmd: cmd, lines: make(chan []byte, 1), stderr: &tail{}, wait: make(chan error, 1)}
	if echo != nil {
		cmd.Stderr = io.MultiWriter(p.stderr, echo)
	} else {
		cmd.Stderr = p.stderr
	}
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", strings.Join(argv, " "), err)
	}
	go func() {
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				p.lines <- line
			}
			if err != nil {
				close(p.lines)
				return
			}
		}
	}()
	go func() { p.wait <- cmd.Wait() }()
	return p, nil
}

// request is one op to send.
type request struct {
	op   string
	args map[string]any
}

// call sends one request and waits for its response.
func (p *process) call(ctx context.Context, op string, args map[string]any, timeout time.Duration) (*Reply, error) {
	reps, err := p.callMany(ctx, []request{{op, args}}, timeout)
	if err != nil {
		return nil, err
	}
	return reps[0], nil
}

// callMany pipelines requests: it writes them all while it reads the
// responses, which come in order, so that a testee's per-request latency
// is paid once per batch instead of once per case.
func (p *process) callMany(ctx context.Context, reqs []request, timeout time.Duration) ([]*Reply, error) {
	if p.dead != nil {
		return nil, p.dead
	}
	var buf bytes.Buffer
	first := p.seq + 1
	for _, r := range reqs {
		p.seq++
		args := r.args
		if args == nil {
			args = map[string]any{}
		}
		line, err := json.Marshal(map[string]any{"seq": p.seq, "op": r.op, "args": args})
		if err != nil {
			return nil, err
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	wrote := make(chan error, 1)
	go func() {
		_, err := p.stdin.Write(buf.Bytes())
		wrote <- err
	}()
	reps := make([]*Reply, 0, len(reqs))
	for i, r := range reqs {
		rep, err := p.read(ctx, r.op, first+int64(i), timeout)
		if err != nil {
			// The writer may be blocked on a testee that stopped reading;
			// stop closes stdin, which ends it.
			return nil, err
		}
		reps = append(reps, rep)
	}
	if err := <-wrote; err != nil {
		p.dead = fmt.Errorf("the testee stopped reading: %w; stderr: %s", err, p.stderr)
		return nil, p.dead
	}
	return reps, nil
}

// read waits for the response to request seq.
func (p *process) read(ctx context.Context, op string, seq int64, timeout time.Duration) (*Reply, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case out, ok := <-p.lines:
		if !ok {
			p.dead = fmt.Errorf("the testee exited; stderr: %s", p.stderr)
			return nil, p.dead
		}
		var r Reply
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("the testee answered a line that is not a response (%v): %.200s", err, out)
		}
		if r.Seq != seq {
			p.dead = fmt.Errorf("the testee answered seq %d to request %d", r.Seq, seq)
			return nil, p.dead
		}
		r.Result = normalize(r.Result).(map[string]any)
		return &r, nil
	case <-t.C:
		p.dead = fmt.Errorf("the testee did not answer %s within %v; stderr: %s", op, timeout, p.stderr)
		return nil, p.dead
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// stop closes the testee's stdin and waits for it to exit, killing it
// after a grace period.
func (p *process) stop() error {
	_ = p.stdin.Close()
	select {
	case err := <-p.wait:
		return err
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Signal(os.Kill)
		return <-p.wait
	}
}

// normalize turns json.Numbers into int64 (or float64 when not integral)
// and a nil map into an empty one.
func normalize(v any) any {
	switch x := v.(type) {
	case nil:
		return map[string]any{}
	case map[string]any:
		for k, e := range x {
			if e == nil {
				continue
			}
			x[k] = normalize(e)
		}
		return x
	case []any:
		for i, e := range x {
			if e != nil {
				x[i] = normalize(e)
			}
		}
		return x
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	}
	return v
}
