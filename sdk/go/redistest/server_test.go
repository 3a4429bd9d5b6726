package redistest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestStartServer covers the non-test variant: a server of StartServer
// keeps its AOF data across Relaunch, freezes and thaws with Signal, and
// Close kills it and removes the directory it made.
func TestStartServer(t *testing.T) {
	s, err := StartServer(WithArgs("--appendonly", "yes", "--appendfsync", "always"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Do("SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	pid := s.Pid()
	if err := s.Relaunch(); err != nil {
		t.Fatal(err)
	}
	if s.Pid() == pid || s.Pid() == 0 {
		t.Fatalf("Relaunch kept pid %d (now %d)", pid, s.Pid())
	}
	if v, err := s.Do("GET", "k"); err != nil || v != "v" {
		t.Fatalf("GET k after Relaunch = %q, %v; want v (appendfsync always)", v, err)
	}

	if err := s.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := ping(s.Addr()); err == nil {
		t.Fatal("a SIGSTOPped server answered PING")
	}
	if err := s.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for ping(s.Addr()) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the server does not answer after SIGCONT")
		}
		time.Sleep(10 * time.Millisecond)
	}

	dir := s.Dir()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("Close left %s: %v", dir, err)
	}
	if err := s.Signal(syscall.SIGCONT); err == nil {
		t.Fatal("Signal on a closed server succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}

// TestStartServerWithDir keeps the caller's directory.
func TestStartServerWithDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s, err := StartServer(WithDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	if s.Dir() != dir {
		t.Fatalf("Dir() = %s, want %s", s.Dir(), dir)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "redis.log")); err != nil {
		t.Fatalf("Close removed the caller's directory: %v", err)
	}
}
