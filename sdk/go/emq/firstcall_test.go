package emq_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// firstCall is one kind of call, run as the first call after a restart.
// prepare runs before the restart and returns the check that makes the
// call and judges its result.
type firstCall struct {
	name    string
	prepare func(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue) func(ctx context.Context) error
}

// pushed pushes one job and returns its id.
func pushed(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue) emq.ID {
	t.Helper()
	id := mint(t, c, emq.WorkKind)
	if ok, err := q.Push(ctx, id, []byte("p")); err != nil || !ok {
		t.Fatalf("push = %v, %v", ok, err)
	}
	return id
}

// claimed pushes one job and claims it.
func claimed(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue, lease time.Duration) emq.Job {
	t.Helper()
	pushed(t, ctx, c, q)
	jobs, err := q.ClaimMany(ctx, lease, 1)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim = %v, %v", jobs, err)
	}
	return jobs[0]
}

// buried pushes one job, claims it and buries it.
func buried(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue) emq.ID {
	t.Helper()
	j := claimed(t, ctx, c, q, time.Minute)
	if err := q.Bury(ctx, j.ID, j.Token); err != nil {
		t.Fatal(err)
	}
	return j.ID
}

func want(ok bool, what string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf(what, args...)
}

var firstCalls = []firstCall{
	{"push", func(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue) func(context.Context) error {
		id := mint(t, c, emq.WorkKind)
		return func(ctx context.Context) error {
			ok, err := q.Push(ctx, id, []byte("x"))
			return errors.Join(err, want(ok || err != nil, "not enqueued"))
		}
	}},
	{"enqueue", func(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue) func(context.Context) error {
		id := mint(t, c, emq.WorkKind)
		return func(ctx context.Context) error {
			ok, err := q.Enqueue(ctx, id, []byte("x"))
			return errors.Join(err, want(ok || err != nil, "not enqueued"))
		}
	}},
	{"pushbatch", func(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue) func(context.Context) error {
		id := mint(t, c, emq.WorkKind)
		return func(ctx context.Context) error {
			oks, err := q.PushBatch(ctx, []emq.NewJob{{ID: id, Payload: []byte("x")}})
			return errors.Join(err, want(err != nil || len(oks) == 1 && oks[0], "batch = %v", oks))
		}
	}},
	{"claim", func(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue) func(context.Context) error {
		id := pushed(t, ctx, c, q)
		return func(ctx context.Context) error {
			j, ok, err := q.Claim(ctx, time.Minute)
			return errors.Join(err, want(err != nil || ok && j.ID == id, "claimed %v, %v", j.ID, ok))
		}
	}},
	{"claimmany", func(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue) func(context.Context) error {
		id := pushed(t, ctx, c, q)
		return func(ctx context.Context) error {
			jobs, err := q.ClaimMany(ctx, time.Minute, 4)
			return errors.Join(err, want(err != nil || len(jobs) == 1 && jobs[0].ID == id, "claimed %v", jobs))
		}
	}},
	{"complete", func(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue) func(context.Context) error {
		j := claimed(t, ctx, c, q, time.Minute)
		return func(ctx context.Context) error { return q.Complete(ctx, j.ID, j.Token) }
	}},
	{"completeclaim", func(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue) func(context.Context) error {
		j := claimed(t, ctx, c, q, time.Minute)
		next := pushed(t, ctx, c, q)
		return func(ctx context.Context) error {
			jobs, err := q.CompleteClaim(ctx, j.ID, j.Token, time.Minute, 1)
			return errors.Join(err, want(err != nil || len(jobs) == 1 && jobs[0].ID == next, "claimed %v", jobs))
		}
	}},
	{"extend", func(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue) func(context.Context) error {
		j := claimed(t, ctx, c, q, time.Minute)
		return func(ctx context.Context) error {
			d, err := q.Extend(ctx, j.ID, j.Token, time.Hour)
			return errors.Join(err, want(err != nil || d.After(j.Deadline), "deadline %v", d))
		}
	}},
	{"retry", func(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue) func(context.Context) error {
		j := claimed(t, ctx, c, q, time.Minute)
		return func(ctx context.Context) error { _, err := q.Retry(ctx, j.ID, j.Token, time.Second); return err }
	}},
	{"bury", func(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue) func(context.Context) error {
		j := claimed(t, ctx, c, q, time.Minute)
		return func(ctx context.Context) error { return q.Bury(ctx, j.ID, j.Token) }
	}},
	{"revive", func(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue) func(context.Context) error {
		id := buried(t, ctx, c, q)
		return func(ctx context.Context) error {
			ok, err := q.Revive(ctx, id)
			return errors.Join(err, want(err != nil || ok, "not revived"))
		}
	}},
	{"reviveall", func(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue) func(context.Context) error {
		id := buried(t, ctx, c, q)
		return func(ctx context.Context) error {
			oks, _, err := q.ReviveAll(ctx, []emq.ID{id})
			return errors.Join(err, want(err != nil || len(oks) == 1 && oks[0], "revived %v", oks))
		}
	}},
	{"purge", func(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue) func(context.Context) error {
		id := buried(t, ctx, c, q)
		return func(ctx context.Context) error {
			ok, err := q.Purge(ctx, id)
			return errors.Join(err, want(err != nil || ok, "not purged"))
		}
	}},
	{"promote", func(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue) func(context.Context) error {
		if ok, err := q.EnqueueAt(ctx, mint(t, c, emq.WorkKind), []byte("s"), time.Now().Add(-time.Second)); err != nil || !ok {
			t.Fatalf("enqueue at = %v, %v", ok, err)
		}
		return func(ctx context.Context) error {
			n, err := q.Promote(ctx, 10)
			return errors.Join(err, want(err != nil || n == 1, "promoted %d", n))
		}
	}},
	{"reap", func(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue) func(context.Context) error {
		claimed(t, ctx, c, q, time.Millisecond) // expired by the time the server is back
		return func(ctx context.Context) error {
			n, err := q.Reap(ctx, 10, 0)
			return errors.Join(err, want(err != nil || n == 1, "reaped %d", n))
		}
	}},
	{"sizes", func(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue) func(context.Context) error {
		pushed(t, ctx, c, q)
		return func(ctx context.Context) error {
			m, err := q.Sizes(ctx)
			return errors.Join(err, want(err != nil || m[emq.SetPending] == 1, "sizes %v", m))
		}
	}},
	{"get", func(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue) func(context.Context) error {
		id := pushed(t, ctx, c, q)
		return func(ctx context.Context) error {
			_, ok, err := q.Get(ctx, id)
			return errors.Join(err, want(err != nil || ok, "not found"))
		}
	}},
	{"page", func(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue) func(context.Context) error {
		pushed(t, ctx, c, q)
		return func(ctx context.Context) error {
			ids, _, err := q.Page(ctx, emq.SetPending, "", 10)
			return errors.Join(err, want(err != nil || len(ids) == 1, "page %v", ids))
		}
	}},
	{"claimids", func(t *testing.T, ctx context.Context, c *emq.Client, q *emq.Queue) func(context.Context) error {
		id := pushed(t, ctx, c, q)
		return func(ctx context.Context) error {
			jobs, err := q.ClaimIDs(ctx, time.Minute, []emq.ID{id})
			return errors.Join(err, want(err != nil || len(jobs) == 1, "claimed %v", jobs))
		}
	}},
}

// touch uses the client's connections before a restart, so that each is
// stale after it: calls one at a time (a deadline on each: rueidis writes
// and reads them itself, with no reader in the background) and, when
// concurrent is set, calls at once (pipelined: a reader in the background
// notices the server's close as it happens).
func touch(ctx context.Context, q *emq.Queue, concurrent bool) {
	for range 4 {
		_, _ = q.Sizes(ctx)
	}
	if !concurrent {
		return
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = q.Sizes(ctx) }()
	}
	wg.Wait()
}

// Many rounds of SIGKILL and restart (AOF, same port; the restart returns
// once the server answers PING): the first call of every kind after each
// restart succeeds, idempotent or not, though every connection the client
// held is stale. The fence after the restart is retried on a fresh
// connection, and a command bound for a connection the server closed is
// never written to it (nothing of it ran: it waits for a fresh one).
func TestFirstCallOfEachKindAfterRestart(t *testing.T) {
	srv := aof(t)
	c := connect(t, srv)
	rounds := 3
	if testing.Short() {
		rounds = 1
	}
	for round := range rounds {
		for _, fc := range firstCalls {
			q := queue(t, c, fmt.Sprintf("first-%s-%d", fc.name, round))
			ctx := ctxT(t)
			call := fc.prepare(t, ctx, c, q)
			touch(ctx, q, true)
			srv.Restart()
			callCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
			err := call(callCtx)
			cancel()
			if err != nil {
				t.Fatalf("round %d: the first %s after a SIGKILL and restart: %v", round, fc.name, err)
			}
		}
	}
}

// A call made while the server is down, whose command could not be sent,
// waits for a connection within its deadline: the server comes back while
// it waits (after one of its dials was refused) and the call succeeds, the
// first of its kind after the restart. Non-idempotent calls included. The
// call is made once the client can see the server's end (readerConns.settled,
// an event); one made the instant the server dies races the close on its way
// to the client, may be written to a connection the server no longer reads,
// and fails as sent (ErrConnection: it may have run).
func TestCallWaitsForConnectionWithinDeadline(t *testing.T) {
	for _, name := range []string{"claim", "complete", "push", "sizes"} {
		t.Run(name, func(t *testing.T) {
			srv := aof(t)
			refused := make(chan struct{})
			rc := readerConns{refused: refused}
			opt := options(srv)
			opt.Redis.DialCtxFn = rc.dial
			c, err := emq.Connect(ctxT(t), opt)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			q := queue(t, c, "waits")
			ctx := ctxT(t)
			var fc firstCall
			for _, f := range firstCalls {
				if f.name == name {
					fc = f
				}
			}
			call := fc.prepare(t, ctx, c, q)
			touch(ctx, q, true)
			srv.Stop()
			rc.settled(t, ctx)
			done := make(chan error, 1)
			go func() {
				callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				done <- call(callCtx)
			}()
			select {
			case <-refused:
			case err := <-done:
				t.Fatalf("%s returned while the server was down: %v", name, err)
			}
			srv.Restart()
			if err := <-done; err != nil {
				t.Fatalf("%s made during the outage, within its deadline: %v", name, err)
			}
		})
	}
}

// readerConns is a dialer whose connections tell when a read pending as the
// server closed them has returned: the moment a pipelined connection's
// background reader notices the close.
// It reports a refused dial too, once, on refused when that is set.
type readerConns struct {
	refused chan<- struct{}
	once    sync.Once
	mu      sync.Mutex
	conns   []*readerConn
}

type readerConn struct {
	net.Conn
	mu         sync.Mutex
	background bool          // the last deadline set is none: rueidis reads it in the background
	closed     chan struct{} // closed when rueidis closes the connection
	once       sync.Once
}

// SetDeadline is rueidis setting a deadline before each command it writes
// and reads itself, and clearing it as its background reader starts.
func (c *readerConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.background = t.IsZero()
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

// NetConn is the socket underneath, which the client looks into before a
// write (as for *tls.Conn).
func (c *readerConn) NetConn() net.Conn { return c.Conn }

// Close is rueidis giving the connection up, after its reader returned
// the failure.
func (c *readerConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

func (r *readerConns) dial(ctx context.Context, dst string, d *net.Dialer, cfg *tls.Config) (net.Conn, error) {
	conn, err := d.DialContext(ctx, "tcp", dst)
	if errors.Is(err, syscall.ECONNREFUSED) && r.refused != nil {
		r.once.Do(func() { close(r.refused) })
	}
	if err != nil {
		return nil, err
	}
	rc := &readerConn{Conn: conn, closed: make(chan struct{})}
	r.mu.Lock()
	r.conns = append(r.conns, rc)
	r.mu.Unlock()
	return rc, nil
}

// settled waits until the client can see that the server closed every
// connection: rueidis gave up each it reads in the background (its reader
// noticed), and the close has reached each of the others (a peek, as the
// client's own before a write, sees the end). A server's close is on its
// way to the client when the server answers the next command, but on a
// loaded machine it can be delivered after that answer.
func (r *readerConns) settled(t *testing.T, ctx context.Context) {
	t.Helper()
	r.mu.Lock()
	conns := slices.Clone(r.conns)
	r.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		background := c.background
		c.mu.Unlock()
		for {
			select {
			case <-c.closed:
			case <-ctx.Done():
				t.Fatal("the client never saw the server's close of a connection")
			default:
				if background || !emq.PeerClosed(c.Conn) {
					select {
					case <-c.closed:
					case <-ctx.Done():
					case <-time.After(time.Millisecond):
					}
					continue
				}
			}
			break
		}
	}
}

// The client does not write a command to a connection the server has
// closed: after CLIENT KILL of every connection (no restart: the server is
// up throughout), the first call of each kind succeeds. It is made once
// the client can see every close (readerConns.settled, an event): the
// background readers of pipelined connections noticed theirs, and the
// others are looked at before each write; a call racing the close may be
// written first and fail as sent.
func TestFirstCallAfterClientKill(t *testing.T) {
	srv := redistest.Start(t)
	var rc readerConns
	opt := options(srv)
	opt.Redis.DialCtxFn = rc.dial
	c, err := emq.Connect(ctxT(t), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	for _, fc := range firstCalls {
		q := queue(t, c, "killed-"+fc.name)
		ctx := ctxT(t)
		call := fc.prepare(t, ctx, c, q)
		touch(ctx, q, true)
		if _, err := srv.Do("CLIENT", "KILL", "TYPE", "normal"); err != nil {
			t.Fatal(err)
		}
		rc.settled(t, ctx)
		if err := call(ctx); err != nil {
			t.Fatalf("the first %s after CLIENT KILL: %v", fc.name, err)
		}
	}
}
