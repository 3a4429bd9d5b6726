// Package redistest starts real redis-server processes for tests: each on a
// free loopback port, in its own temporary directory, stopped when the test
// ends. There is no mock and no skip: a missing redis-server fails the test
// with the command that installs it.
package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// InstallHint says how to get redis-server on this project's machines.
const InstallHint = "redis-server is not installed; install it with: sudo apt-get install -y redis-server (or run ./test.sh, which does)"

// Server is one running redis-server.
type Server struct {
	t       testing.TB // nil for a server of StartServer
	bin     string
	dir     string
	ownsDir bool // StartServer made dir, and Close removes it
	port    int
	args    []string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has exited and been waited for
}

// Option adjusts a server's configuration.
type Option func(*Server)

// WithArgs adds redis-server command-line arguments, such as
// "--appendonly", "yes".
func WithArgs(args ...string) Option { return func(s *Server) { s.args = append(s.args, args...) } }

// WithDir makes the server keep its data (and its log) in dir, created when
// missing, instead of a fresh temporary directory.
func WithDir(dir string) Option { return func(s *Server) { s.dir = dir } }

// Start starts a redis-server for t and stops it when t ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(InstallHint)
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir()}
	for _, o := range opts {
		o(s)
	}
	t.Cleanup(s.Stop)
	// A port can be taken between picking it and binding it (tests run
	// many servers at once): try afresh on another.
	for attempt := 1; ; attempt++ {
		s.port = freePort(t)
		err := s.launch()
		if err == nil {
			return s
		}
		if attempt == 5 || !errors.Is(err, errPortTaken) {
			t.Fatal(err)
		}
	}
}

// errPortTaken is a launch that failed because the port was taken.
var errPortTaken = errors.New("redistest: the port was taken")

// StartServer starts a redis-server outside a test, for tools such as a
// fault harness: it returns an error (with InstallHint when redis-server is
// missing) instead of failing a test, and the caller must Close the server.
// Without WithDir the server gets a fresh temporary directory that Close
// removes. Restart a server of StartServer with Relaunch.
func StartServer(opts ...Option) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redistest: %s", InstallHint)
	}
	s := &Server{bin: bin}
	for _, o := range opts {
		o(s)
	}
	if s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "redistest-"); err != nil {
			return nil, fmt.Errorf("redistest: %w", err)
		}
		s.ownsDir = true
	} else if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	// A port can be taken between picking it and binding it: try afresh.
	for attempt := 1; ; attempt++ {
		if s.port, err = pickPort(); err == nil {
			if err = s.launch(); err == nil {
				return s, nil
			}
		}
		if attempt == 3 {
			_ = s.Close()
			return nil, err
		}
	}
}

// Close kills a server of StartServer and waits for it, and removes its
// directory when StartServer made it. It is safe to call more than once.
func (s *Server) Close() error {
	s.Stop()
	if s.ownsDir {
		s.ownsDir = false
		return os.RemoveAll(s.dir)
	}
	return nil
}

// Relaunch is Restart for a server of StartServer: it kills the server
// (SIGKILL) and starts it again on the same port and directory, and returns
// an error when it does not answer PING within 10s.
func (s *Server) Relaunch() error {
	s.Stop()
	return s.launch()
}

// Signal sends sig to the running server process: SIGSTOP and SIGCONT
// freeze and thaw it.
func (s *Server) Signal(sig os.Signal) error {
	if s.cmd == nil || s.cmd.Process == nil {
		return fmt.Errorf("redistest: the server on %s is not running", s.Addr())
	}
	return s.cmd.Process.Signal(sig)
}

// Pid returns the process id of the running server, or 0 when it is not
// running.
func (s *Server) Pid() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Addr returns host:port of the server.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Dir returns the server's working directory, where it keeps its data.
func (s *Server) Dir() string { return s.dir }

func (s *Server) start() {
	s.t.Helper()
	if err := s.launch(); err != nil {
		s.t.Fatal(err)
	}
}

// launch starts the process and waits until it answers PING.
func (s *Server) launch() error {
	args := append([]string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "yes",
		"--logfile", filepath.Join(s.dir, "redis.log"), "--daemonize", "no",
	}, s.args...)
	s.cmd = exec.Command(s.bin, args...)
	if s.t == nil {
		dieWithParent(s.cmd) // no test cleanup stands behind a server of StartServer
	}
	if err := s.cmd.Start(); err != nil {
		s.cmd = nil
		return fmt.Errorf("redistest: starting redis-server: %w", err)
	}
	exited := make(chan struct{})
	cmd := s.cmd
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.exited = exited
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := ping(s.Addr()); err == nil {
			return nil
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			s.cmd = nil
			if strings.Contains(string(log), "Address already in use") {
				return fmt.Errorf("%w: %s", errPortTaken, s.Addr())
			}
			return fmt.Errorf("redistest: redis-server on %s exited at start; its log:\n%s", s.Addr(), log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			s.Stop()
			return fmt.Errorf("redistest: redis-server on %s did not answer PING in 10s; its log:\n%s", s.Addr(), log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server and waits for it; a stopped server may be
// restarted.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Restart kills the server (SIGKILL: no shutdown save) and starts it again
// on the same port and directory. A server of StartServer has no test to
// fail: use Relaunch.
func (s *Server) Restart() {
	if s.t == nil {
		panic("redistest: Restart needs a server of Start; use Relaunch")
	}
	s.t.Helper()
	s.Stop()
	s.start()
}

// Do sends one command on a fresh connection and returns the reply line(s)
// as text; for test setup and inspection only.
func (s *Server) Do(args ...string) (string, error) { return do(s.Addr(), args...) }

// do sends one command to addr on a fresh connection and returns the
// reply as text.
func do(addr string, args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	return readReply(bufio.NewReader(conn))
}

func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", fmt.Errorf("%s", line[1:])
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return "(nil)", nil
		}
		buf := make([]byte, n+2)
		if _, err := ioReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, _ := strconv.Atoi(line[1:])
		var parts []string
		for i := 0; i < n; i++ {
			p, err := readReply(r)
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, "\n"), nil
	}
	return "", fmt.Errorf("redistest: unexpected reply %q", line)
}

func ioReadFull(r *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

func freePort(t testing.TB) int {
	t.Helper()
	port, err := pickPort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func pickPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redistest: no free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
