package emq

import (
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/redistest"
)

// inFlight returns how many batches p has in flight and how many pushes
// wait.
func (p *pusher) inFlight() (flying, waiting int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.flying, len(p.wait)
}

// waitFor polls p until cond holds, and returns how long that took; it
// fails the test after limit.
func waitFor(t *testing.T, p *pusher, limit time.Duration, cond func(flying, waiting int) bool) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < limit {
		if cond(p.inFlight()) {
			return time.Since(start)
		}
		time.Sleep(time.Millisecond)
	}
	f, w := p.inFlight()
	t.Fatalf("after %v: %d batches in flight, %d pushes waiting", limit, f, w)
	return 0
}

// The linger bounds how long a push waits behind a batch in flight: with
// PushLinger set, a push meeting a batch in flight is sent in a batch of
// its own once the linger expired, not before; with a negative PushLinger
// it waits for the batch in flight.
func TestPushLinger(t *testing.T) {
	const linger = 80 * time.Millisecond
	for _, tc := range []struct {
		name   string
		linger time.Duration
	}{{"linger", linger}, {"none", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t, redistest.WithArgs("--enable-debug-command", "local"))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := Connect(ctx, Options{Addr: srv.Addr(), Redis: rueidis.ClientOption{DisableCache: true}, PushLinger: tc.linger})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			q, err := c.Queue("linger")
			if err != nil {
				t.Fatal(err)
			}
			asleep := make(chan error, 1)
			go func() { _, err := srv.Do("DEBUG", "SLEEP", "0.8"); asleep <- err }()
			for !func() bool { // until the server sleeps
				conn, err := net.DialTimeout("tcp", srv.Addr(), 20*time.Millisecond)
				if err != nil {
					return true
				}
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(20 * time.Millisecond))
				_, _ = conn.Write([]byte("PING\r\n"))
				_, err = io.ReadFull(conn, make([]byte, 7))
				return err != nil
			}() {
				time.Sleep(time.Millisecond)
			}
			results := make(chan error, 2)
			push := func() {
				id, err := c.Mint(WorkKind)
				if err == nil {
					var ok bool
					if ok, err = q.Push(ctx, id, nil); err == nil && !ok {
						err = fmt.Errorf("push %s: a duplicate", id)
					}
				}
				results <- err
			}
			go push()
			waitFor(t, q.p, time.Second, func(f, w int) bool { return f == 1 && w == 0 })
			go push()
			if tc.linger > 0 {
				d := waitFor(t, q.p, 400*time.Millisecond, func(f, w int) bool { return f == 2 })
				if d < linger-5*time.Millisecond || d > linger+150*time.Millisecond {
					t.Fatalf("the second push was sent %v after it met the batch in flight, want about the linger %v", d, linger)
				}
			} else {
				waitFor(t, q.p, time.Second, func(f, w int) bool { return f == 1 && w == 1 })
				time.Sleep(300 * time.Millisecond)
				if f, w := q.p.inFlight(); f != 1 || w != 1 {
					t.Fatalf("without a linger: %d in flight, %d waiting; want the push waiting behind the batch in flight", f, w)
				}
			}
			if err := <-asleep; err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2; i++ {
				if err := <-results; err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, q.p, time.Second, func(f, w int) bool { return f == 0 && w == 0 })
		})
	}
}
