package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/rueidis"
)

// Install hints: the benchmark never skips a missing binary, it says how to
// get it (Debian packages).
const (
	hintServer    = "redis-server is not installed; install it with: sudo apt-get install -y redis-server"
	hintBenchmark = "redis-benchmark is not installed; install it with: sudo apt-get install -y redis-tools"
)

// lookBinaries finds redis-server and redis-benchmark, or fails with the
// command that installs them.
func lookBinaries() (server, benchmark string, err error) {
	server, err = exec.LookPath("redis-server")
	if err != nil {
		return "", "", errors.New(hintServer)
	}
	benchmark, err = exec.LookPath("redis-benchmark")
	if err != nil {
		return "", "", errors.New(hintBenchmark)
	}
	return server, benchmark, nil
}

// server is the benchmark's own redis-server: a free loopback port, a
// temporary directory, no persistence.
type server struct {
	dir   string
	port  int
	cmd   *exec.Cmd
	admin rueidis.Client
}

func (s *server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startServer starts redis-server from bin and waits until it answers.
func startServer(ctx context.Context, bin string) (*server, error) {
	dir, err := os.MkdirTemp("", "emq-bench-redis-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &server{dir: dir, port: port}
	s.cmd = exec.Command(bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "yes",
		"--logfile", filepath.Join(dir, "redis.log"), "--daemonize", "no")
	// The server dies with the benchmark even when it is killed outright.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting redis-server: %w", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			s.Stop()
			return nil, fmt.Errorf("redis-server on %s did not answer in 10s; its log:\n%s", s.Addr(), log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.admin, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr()}, DisableCache: true})
	if err != nil {
		s.Stop()
		return nil, err
	}
	if err := s.admin.Do(ctx, s.admin.B().Ping().Build()).Error(); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Stop kills the server, waits for it and removes its directory.
func (s *server) Stop() {
	if s.admin != nil {
		s.admin.Close()
		s.admin = nil
	}
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		s.cmd = nil
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
		s.dir = ""
	}
}

// Reset empties the keyspace; ResetStats zeroes the command statistics.
// Between scenarios the benchmark does both.
func (s *server) Reset(ctx context.Context) error {
	return s.admin.Do(ctx, s.admin.B().Flushall().Build()).Error()
}

func (s *server) ResetStats(ctx context.Context) error {
	return s.admin.Do(ctx, s.admin.B().ConfigResetstat().Build()).Error()
}

// Info returns INFO section as field -> value.
func (s *server) Info(ctx context.Context, section string) (map[string]string, error) {
	txt, err := s.admin.Do(ctx, s.admin.B().Info().Section(section).Build()).ToString()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(txt))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if ok {
			out[k] = v
		}
	}
	return out, sc.Err()
}

// CPU returns the server's used_cpu_sys + used_cpu_user in seconds.
func (s *server) CPU(ctx context.Context) (float64, error) {
	info, err := s.Info(ctx, "cpu")
	if err != nil {
		return 0, err
	}
	sys, err1 := strconv.ParseFloat(info["used_cpu_sys"], 64)
	usr, err2 := strconv.ParseFloat(info["used_cpu_user"], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("INFO cpu: %w", err)
	}
	return sys + usr, nil
}

// CmdStat is one command's line of INFO commandstats.
type CmdStat struct {
	Command string `json:"command"`
	Calls   int64  `json:"calls"`
	Usec    int64  `json:"usec"`
}

// CommandStats returns INFO commandstats, the costliest command first.
func (s *server) CommandStats(ctx context.Context) ([]CmdStat, error) {
	info, err := s.Info(ctx, "commandstats")
	if err != nil {
		return nil, err
	}
	var out []CmdStat
	for k, v := range info {
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok {
			continue
		}
		st := CmdStat{Command: name}
		for _, kv := range strings.Split(v, ",") {
			field, val, _ := strings.Cut(kv, "=")
			var dst *int64
			switch field {
			case "usec":
				dst = &st.Usec
			case "calls":
				dst = &st.Calls
			default:
				continue
			}
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("INFO commandstats %s: %w", k, err)
			}
			*dst = n
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Usec != out[j].Usec {
			return out[i].Usec > out[j].Usec
		}
		return out[i].Command < out[j].Command
	})
	return out, nil
}

// Version returns the server's redis_version.
func (s *server) Version(ctx context.Context) (string, error) {
	info, err := s.Info(ctx, "server")
	if err != nil {
		return "", err
	}
	return info["redis_version"], nil
}

// serverMeter reads the server's CPU and command statistics at the start
// of a measured window and reports the deltas at its end. Start it right
// after ResetStats.
type serverMeter struct {
	s   *server
	cpu float64
}

func (s *server) meter(ctx context.Context) (*serverMeter, error) {
	if err := s.ResetStats(ctx); err != nil {
		return nil, err
	}
	cpu, err := s.CPU(ctx)
	if err != nil {
		return nil, err
	}
	return &serverMeter{s: s, cpu: cpu}, nil
}

// ServerCost is what the server spent in a measured window.
type ServerCost struct {
	CPUSeconds   float64 `json:"cpu_seconds"`    // used_cpu_sys+used_cpu_user delta
	CommandUsec  int64   `json:"command_usec"`   // sum of usec over INFO commandstats
	CommandCalls int64   `json:"command_calls"`  // sum of calls over INFO commandstats
	CPUPerJobUs  float64 `json:"cpu_per_job_us"` // CPUSeconds per job, in microseconds
	UsecPerJob   float64 `json:"usec_per_job"`   // CommandUsec per job
	CallsPerJob  float64 `json:"calls_per_job"`  // CommandCalls per job
	// Commands is INFO commandstats of the window, the costliest first.
	Commands []CmdStat `json:"commands"`
}

func (m *serverMeter) done(ctx context.Context, jobs int) (ServerCost, error) {
	cpu, err := m.s.CPU(ctx)
	if err != nil {
		return ServerCost{}, err
	}
	stats, err := m.s.CommandStats(ctx)
	if err != nil {
		return ServerCost{}, err
	}
	// The INFO calls of the meter itself are a handful of microseconds; they
	// stay in, the same for both sides.
	var usec, calls int64
	for _, st := range stats {
		usec += st.Usec
		calls += st.Calls
	}
	c := ServerCost{CPUSeconds: cpu - m.cpu, CommandUsec: usec, CommandCalls: calls, Commands: stats}
	if jobs > 0 {
		c.CPUPerJobUs = c.CPUSeconds * 1e6 / float64(jobs)
		c.UsecPerJob = float64(usec) / float64(jobs)
		c.CallsPerJob = float64(calls) / float64(jobs)
	}
	return c, nil
}

// evalshaCeiling loads script (the generated push.lua) and runs
// redis-benchmark against EVALSHA with pipeline depth p, returning
// requests per second.
func (s *server) evalshaCeiling(ctx context.Context, bin, script string, n, clients, p int) (float64, ServerCost, error) {
	if err := s.Reset(ctx); err != nil {
		return 0, ServerCost{}, err
	}
	sha, err := s.admin.Do(ctx, s.admin.B().ScriptLoad().Script(script).Build()).ToString()
	if err != nil {
		return 0, ServerCost{}, fmt.Errorf("SCRIPT LOAD push.lua: %w", err)
	}
	m, err := s.meter(ctx)
	if err != nil {
		return 0, ServerCost{}, err
	}
	// push's KEYS: row, pending, wake; ARGV: id, payload. __rand_int__ is
	// replaced by a 12-digit random number in each request, so every
	// request admits a fresh job like a producer does.
	args := []string{
		"-h", "127.0.0.1", "-p", strconv.Itoa(s.port),
		"-n", strconv.Itoa(n), "-c", strconv.Itoa(clients), "-P", strconv.Itoa(p),
		"-r", "1000000000", "--csv",
		"EVALSHA", sha, "3",
		"emq:{bench}:job:JOB__rand_int__", "emq:{bench}:pending", "emq:{bench}:wake",
		"JOB__rand_int__", string(payloadBytes),
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return 0, ServerCost{}, fmt.Errorf("redis-benchmark -P %d: %w: %s", p, err, stderr.String())
	}
	rps, err := parseBenchmarkCSV(stdout.String())
	if err != nil {
		return 0, ServerCost{}, fmt.Errorf("redis-benchmark -P %d: %w", p, err)
	}
	cost, err := m.done(ctx, n)
	if err != nil {
		return 0, ServerCost{}, err
	}
	return rps, cost, nil
}

// parseBenchmarkCSV reads the rps column of redis-benchmark --csv output.
func parseBenchmarkCSV(out string) (float64, error) {
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		return 0, fmt.Errorf("parsing --csv output: %w\n%s", err, out)
	}
	col := -1
	for _, rec := range recs {
		if col < 0 {
			for i, f := range rec {
				if f == "rps" {
					col = i
				}
			}
			continue
		}
		if col < len(rec) {
			v, err := strconv.ParseFloat(rec[col], 64)
			if err == nil && v > 0 {
				return v, nil
			}
		}
	}
	return 0, fmt.Errorf("no rps figure in output:\n%s", out)
}

// benchmarkVersion returns redis-benchmark's version line.
func benchmarkVersion(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
