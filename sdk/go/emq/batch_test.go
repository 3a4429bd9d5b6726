package emq_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// ClaimMany leases the oldest pending jobs first, rings the doorbell again
// when jobs remain behind them, and answers an empty queue with no jobs;
// CompleteClaim retires a job and leases the next in one call, and a stale
// token is refused with ErrStale without leasing anything.
func TestQueueClaimManyCompleteClaim(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "batch")
	ctx := ctxT(t)
	ids := make([]emq.ID, 3)
	for i := range ids {
		ids[i] = mint(t, c, emq.WorkKind)
	}
	for _, i := range []int{2, 0, 1} { // pushed out of mint order
		if ok, err := q.Push(ctx, ids[i], []byte(fmt.Sprint(i))); err != nil || !ok {
			t.Fatalf("Push: %v %v", ok, err)
		}
	}
	if err := do(t, c, "DEL", q.Keys().Wake).Error(); err != nil { // a worker took the marker
		t.Fatal(err)
	}
	jobs, err := q.ClaimMany(ctx, time.Minute, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 || jobs[0].ID != ids[0] || jobs[1].ID != ids[1] || jobs[0].Token != 1 || string(jobs[1].Payload) != "1" {
		t.Fatalf("ClaimMany = %+v, want the two oldest with token 1", jobs)
	}
	if n, _ := do(t, c, "LLEN", q.Keys().Wake).AsInt64(); n != 1 {
		t.Fatalf("doorbell after a partial claim: %d markers, want 1", n)
	}
	if _, err := q.CompleteClaim(ctx, jobs[0].ID, jobs[0].Token+1, time.Minute, 1); !errors.Is(err, emq.ErrStale) {
		t.Fatalf("CompleteClaim with a stale token: %v, want ErrStale", err)
	}
	if n, _ := q.Size(ctx, emq.SetPending); n != 1 {
		t.Fatalf("a refused CompleteClaim leased something: %d pending, want 1", n)
	}
	next, err := q.CompleteClaim(ctx, jobs[0].ID, jobs[0].Token, time.Minute, 5)
	if err != nil || len(next) != 1 || next[0].ID != ids[2] {
		t.Fatalf("CompleteClaim = %+v, %v; want the last job", next, err)
	}
	if _, ok, _ := q.Get(ctx, jobs[0].ID); ok {
		t.Fatal("the completed job's row remains")
	}
	if jobs, err := q.ClaimMany(ctx, time.Minute, 3); err != nil || len(jobs) != 0 {
		t.Fatalf("ClaimMany on an empty queue = %+v, %v; want none", jobs, err)
	}
	if next, err := q.CompleteClaim(ctx, ids[1], 1, time.Minute, 0); err != nil || len(next) != 0 {
		t.Fatalf("CompleteClaim with count 0 = %+v, %v", next, err)
	}
}

// Bad arguments are refused with ErrArgument, and a malformed id with
// ErrID, before any command is sent.
func TestQueueClaimManyArguments(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "batch")
	ctx := ctxT(t)
	before := commandCalls(t, srv)
	for _, err := range []error{
		func() error { _, err := q.ClaimMany(ctx, 0, 1); return err }(),
		func() error { _, err := q.ClaimMany(ctx, time.Second, 0); return err }(),
		func() error { _, err := q.CompleteClaim(ctx, mint(t, c, emq.WorkKind), 1, 0, 1); return err }(),
		func() error { _, err := q.CompleteClaim(ctx, mint(t, c, emq.WorkKind), 1, time.Second, -1); return err }(),
	} {
		if !errors.Is(err, emq.ErrArgument) {
			t.Errorf("got %v, want ErrArgument", err)
		}
	}
	if _, err := q.CompleteClaim(ctx, emq.ID{}, 1, time.Second, 1); !errors.Is(err, emq.ErrID) {
		t.Errorf("the zero ID: %v, want ErrID", err)
	}
	if after := commandCalls(t, srv); after != before {
		t.Errorf("refused calls sent %d commands", after-before)
	}
}

// commandCalls counts the commands the server has run, apart from INFO.
func commandCalls(t *testing.T, srv *redistest.Server) int64 {
	t.Helper()
	info, err := srv.Do("INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		c, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			t.Fatalf("INFO commandstats line %q: %v", line, err)
		}
		n += c
	}
	return n
}

func ExampleParseRefusal() {
	for _, reply := range []string{
		wire.ClassStale + " complete token mismatch",
		"ERR " + wire.ClassKind + " wrapped in the generic prefix",
		"WRONGTYPE Operation against a key holding the wrong kind of value",
	} {
		if ce, ok := emq.ParseRefusal(reply); ok {
			fmt.Printf("class %s: %s\n", ce.Class, ce.Message)
		} else {
			fmt.Println("no class:", reply)
		}
	}
	// Output:
	// class EMQSTALE: complete token mismatch
	// no class: ERR EMQKIND wrapped in the generic prefix
	// no class: WRONGTYPE Operation against a key holding the wrong kind of value
}
