package emq_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// The exact shape of a few messages: one "emq: " each, the words of every
// wrapped error kept, and errors.Is and errors.As still finding what is
// wrapped.
func TestErrorMessagesHaveOnePrefix(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "shapes")
	ctx := ctxT(t)
	var fe *emq.FenceError
	var ce *emq.ClassError

	_, _, err := q.Claim(ctx, 0)
	if got, want := fmt.Sprint(err), "emq: invalid argument: lease 0s is under a millisecond"; got != want || !errors.Is(err, emq.ErrArgument) {
		t.Errorf("Claim(0) = %q; want %q, matching ErrArgument", got, want)
	}

	j := claimed(t, ctx, c, q, time.Minute)
	err = q.Complete(ctx, j.ID, j.Token+1)
	if got, want := fmt.Sprint(err), "emq: complete: "+wire.ClassStale+" complete token mismatch"; got != want || !errors.Is(err, emq.ErrStale) || !errors.As(err, &ce) {
		t.Errorf("a stale Complete = %q; want %q, matching ErrStale and a *ClassError", got, want)
	}

	srv.Stop()
	free, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The first call meets the lost connection; the second fences first,
	// and the fence finds no server.
	_, _, first := q.Claim(free, time.Minute)
	_, _, err = q.Claim(free, time.Minute)
	refused := fmt.Sprintf("dial tcp %s: connect: connection refused", srv.Addr())
	if got, want := fmt.Sprint(err), "emq: connection failed: the version fence could not run: fence: "+refused; got != want ||
		!errors.Is(err, emq.ErrConnection) || !errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, emq.ErrVersionFence) || errors.As(err, &fe) {
		t.Errorf("a Claim whose fence finds no server = %q; want %q, matching ErrConnection and ECONNREFUSED, not the fence", got, want)
	}

	_, err = emq.Connect(ctx, options(srv))
	if got, want := fmt.Sprint(err), "emq: connection failed: connect: "+refused; got != want || !errors.Is(err, emq.ErrConnection) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Connect to no server = %q; want %q, matching ErrConnection and ECONNREFUSED", got, want)
	}

	// Every error met on the way has one prefix.
	_, perr := q.Push(free, mint(t, c, emq.WorkKind), []byte("x"))
	_, serr := q.Sizes(free)
	for _, e := range []error{first, perr, serr} {
		if e == nil || strings.Count(e.Error(), "emq: ") != 1 || !strings.HasPrefix(e.Error(), "emq: ") {
			t.Errorf("error %q: want one leading \"emq: \"", e)
		}
	}
}

// A refusal joined to the connection error of the call that met it (a
// keyspace that came back with another major) reads as one error.
func TestJoinedErrorHasOnePrefix(t *testing.T) {
	srv := aof(t)
	c := connect(t, srv)
	q := queue(t, c, "joined")
	ctx := ctxT(t)
	pushed(t, ctx, c, q)
	srv.Restart()
	if _, err := srv.Do("SET", wire.KeyVersion, "echomq:9.0.0"); err != nil {
		t.Fatal(err)
	}
	_, _, err := q.Claim(ctx, time.Minute)
	var fe *emq.FenceError
	if !errors.As(err, &fe) {
		t.Fatalf("claim into a foreign keyspace = %v; want a *FenceError", err)
	}
	want := `emq: version fence: the keyspace is "echomq:9.0.0", this client speaks "` + wire.VersionRecord + `"`
	if got := err.Error(); got != want && !strings.HasPrefix(got, want+"; connection failed: ") {
		t.Fatalf("claim into a foreign keyspace = %q; want %q, alone or joined to the connection error", got, want)
	}
	if strings.Count(err.Error(), "emq: ") != 1 {
		t.Fatalf("%q: want one prefix", err)
	}
}
