package emq_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

type email struct {
	To      string   `json:"to"`
	Subject string   `json:"subject"`
	Tags    []string `json:"tags,omitempty"`
}

// Typed producers and a typed worker share a queue with raw ones: values
// are pushed as JSON, a worker's handler gets them decoded with the raw job
// beside them, and a payload that is no email is buried unseen.
func TestJSONQueue(t *testing.T) {
	srv := redistest.Start(t)
	var tally emq.Tally
	opt := options(srv)
	opt.Metrics = &tally
	c, err := emq.Connect(ctxT(t), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	q := queue(t, c, "typed")
	emails := emq.NewJSONQueue[email](q)
	if emails.Queue() != q || emails.Name() != "typed" {
		t.Fatalf("the typed queue is %v %q, want the queue it wraps", emails.Queue(), emails.Name())
	}
	ctx := ctxT(t)

	ada := mint(t, c, emq.WorkKind)
	if ok, err := emails.Push(ctx, ada, email{To: "ada", Subject: "hi", Tags: []string{"a"}}); err != nil || !ok {
		t.Fatalf("typed push = %v, %v", ok, err)
	}
	batch := []emq.TypedNewJob[email]{{ID: mint(t, c, emq.WorkKind), Value: email{To: "grace"}}, {ID: mint(t, c, emq.WorkKind), Value: email{To: "edsger"}}}
	if oks, err := emails.PushBatch(ctx, batch); err != nil || !slices.Equal(oks, []bool{true, true}) {
		t.Fatalf("typed batch = %v, %v", oks, err)
	}
	later := mint(t, c, emq.WorkKind)
	if ok, err := emails.PushAt(ctx, later, email{To: "barbara"}, time.Now().Add(-time.Millisecond)); err != nil || !ok {
		t.Fatalf("typed push at = %v, %v", ok, err)
	}
	raw := mint(t, c, emq.WorkKind)
	if _, err := q.Push(ctx, raw, []byte(`{"to": 42}`)); err != nil { // JSON, but no email
		t.Fatal(err)
	}
	// What the queue holds is plain JSON, readable by any SDK.
	info, _, err := q.Get(ctx, ada)
	var back email
	if err != nil || json.Unmarshal(info.Payload, &back) != nil || back.To != "ada" || back.Tags[0] != "a" {
		t.Fatalf("the typed payload as stored: %q, %v", info.Payload, err)
	}

	var mu sync.Mutex
	var got []string
	done := make(chan struct{})
	w, err := emails.NewWorker(func(ctx context.Context, job emq.TypedJob[email]) error {
		mu.Lock()
		defer mu.Unlock()
		var raw email
		if err := json.Unmarshal(job.Payload, &raw); err != nil || raw.To != job.Value.To {
			t.Errorf("job %s: the raw payload %q beside the value %+v", job.ID, job.Payload, job.Value)
		}
		got = append(got, job.Value.To)
		if len(got) == 4 {
			close(done)
		}
		return nil
	}, emq.WorkerOptions{Concurrency: 2, Maintenance: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- w.Run(wctx) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the typed worker did not run every email")
	}
	eventually(t, 10*time.Second, "the undecodable job buried", func() bool { return tally.Get(emq.Buried) == 1 })
	stop()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"ada", "barbara", "edsger", "grace"}; !slices.Equal(got, want) {
		t.Fatalf("handled %v, want %v", got, want)
	}
	if info, _, err := q.Get(ctx, raw); err != nil || info.State != emq.StateDead {
		t.Fatalf("the payload that is no email: %v, %v; want dead", info, err)
	}
}

// A value encoding/json refuses is refused before anything is sent, with
// ErrArgument; a batch with one is refused whole.
func TestJSONQueueRefusesWhatDoesNotEncode(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "typed-bad")
	ctx := ctxT(t)
	funcs := emq.NewJSONQueue[func()](q)
	if ok, err := funcs.Push(ctx, mint(t, c, emq.WorkKind), func() {}); ok || !errors.Is(err, emq.ErrArgument) {
		t.Fatalf("push of a func = %v, %v; want ErrArgument", ok, err)
	}
	maps := emq.NewJSONQueue[any](q)
	jobs := []emq.TypedNewJob[any]{{ID: mint(t, c, emq.WorkKind), Value: 1}, {ID: mint(t, c, emq.WorkKind), Value: make(chan int)}}
	if oks, err := maps.PushBatch(ctx, jobs); oks != nil || !errors.Is(err, emq.ErrArgument) {
		t.Fatalf("batch with a channel = %v, %v; want ErrArgument", oks, err)
	}
	if n, err := q.Size(ctx, emq.SetPending); err != nil || n != 0 {
		t.Fatalf("pending = %d, %v; want nothing sent", n, err)
	}
}

// emq.JSON adapts a typed handler for emq.NewWorker; NewJSONQueue gives
// typed pushes. The payload is plain JSON, so producers and workers in the
// other SDKs read and write the same jobs.
func ExampleJSON() {
	type Invoice struct {
		Number int    `json:"number"`
		Email  string `json:"email"`
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	c, err := emq.Connect(ctx, emq.Options{Addr: addr})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	q, _ := c.Queue("typed-invoices")
	invoices := emq.NewJSONQueue[Invoice](q)
	id, _ := c.Mint(emq.WorkKind)
	if _, err := invoices.Push(ctx, id, Invoice{Number: 42, Email: "ada@example.com"}); err != nil {
		log.Fatal(err)
	}

	w, err := emq.NewWorker(q, emq.JSON(func(ctx context.Context, job emq.TypedJob[Invoice]) error {
		fmt.Printf("invoice %d to %s (%s)\n", job.Value.Number, job.Value.Email, job.Payload)
		stop()
		return nil
	}), emq.WorkerOptions{})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// invoice 42 to ada@example.com ({"number":42,"email":"ada@example.com"})
}
