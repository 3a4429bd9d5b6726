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

// call sends one request and waits for its response.
func (p *process) call(ctx context.Context, op string, args map[string]any, timeout time.Duration) (*Reply, error) {
	if p.dead != nil {
		return nil, p.dead
	}
	p.seq++
	if args == nil {
		args = map[string]any{}
	}
	line, err := json.Marshal(map[string]any{"seq": p.seq, "op": op, "args": args})
	if err != nil {
		return nil, err
	}
	if _, err := p.stdin.Write(append(line, '\n')); err != nil {
		p.dead = fmt.Errorf("the testee stopped reading: %w; stderr: %s", err, p.stderr)
		return nil, p.dead
	}
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
		if r.Seq != p.seq {
			p.dead = fmt.Errorf("the testee answered seq %d to request %d", r.Seq, p.seq)
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
