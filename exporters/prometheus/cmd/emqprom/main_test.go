package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// The standalone exporter serves /metrics of a real server until its
// context ends, then exits 0; a server it cannot reach exits 2.
func TestRun(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := emq.Connect(ctx, emq.Options{Addr: srv.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := c.Queue("orders")
	id, _ := c.Mint(emq.WorkKind)
	if _, err := q.Push(ctx, id, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	c.Close()

	rctx, stop := context.WithCancel(ctx)
	ready := make(chan string, 1)
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(rctx, []string{"-addr", srv.Addr(), "-listen", "127.0.0.1:0", "-queues", "orders"}, &stderr, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case code := <-done:
		t.Fatalf("run exited %d before serving\n%s", code, stderr.String())
	case <-ctx.Done():
		t.Fatal("run did not start")
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`emq_queue_jobs{queue="orders",set="` + string(emq.SetPending) + `"} 1`, `emq_jobs_` + string(emq.EventCompleted) + `_total{queue="orders"} 0`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}
	stop()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("run exited %d after its context ended\n%s", code, stderr.String())
		}
	case <-ctx.Done():
		t.Fatal("run did not stop")
	}

	if code := run(ctx, []string{"-addr", "127.0.0.1:1", "-timeout", "2s"}, io.Discard, nil); code != 2 {
		t.Errorf("run against no server = %d, want 2", code)
	}
}

// The user the package comment describes is enough: the exporter serves
// every metric of the queues it is given with no other right.
func TestRunAsLeastPrivilegeUser(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := emq.Connect(ctx, emq.Options{Addr: srv.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := c.Queue("orders")
	k := q.Keys()
	c.Close()
	rules := []string{"ACL", "SETUSER", "emq-exporter", "reset", "on", ">s3cret", "resetchannels",
		"+ping", "+cluster|slots", "+get", "+zcard", "+zrange", "+zcount", "+exists", "+hmget", "+hlen", "+time", "+evalsha_ro", "+eval_ro",
		"%R~" + wire.KeyVersion, "%R~" + strings.TrimSuffix(k.Pending, "pending") + "*"}
	if _, err := srv.Do(rules...); err != nil {
		t.Fatal(err)
	}
	t.Setenv(passwordEnv, "s3cret")
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	ready := make(chan string, 1)
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(rctx, []string{"-addr", srv.Addr(), "-user", "emq-exporter", "-listen", "127.0.0.1:0", "-queues", "orders"}, &stderr, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case code := <-done:
		t.Fatalf("run exited %d before serving\n%s", code, stderr.String())
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `emq_jobs_`+string(emq.EventDead)+`_total{queue="orders"} 0`) {
		t.Errorf("/metrics as the least-privilege user = %s\n%s\n%s", resp.Status, body, stderr.String())
	}
	if log, _ := srv.Do("ACL", "LOG"); log != "" {
		t.Logf("ACL LOG: %s", log)
	}
}
