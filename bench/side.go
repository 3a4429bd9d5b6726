package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/hibiken/asynq"
)

// side is one job-queue library under test: the SDK or the peer. Every
// scenario drives both through this surface, the same way, one after the
// other, against the same server.
type side interface {
	Name() string
	// Open connects to the server at addr.
	Open(ctx context.Context, addr string, concurrency int) error
	// Close releases everything Open and StartWorker took.
	Close()
	// Enqueue admits one job with one call.
	Enqueue(ctx context.Context, payload []byte) error
	// EnqueueBatch admits len(payloads) jobs in the library's batched way;
	// Batched reports whether it has one (asynq does not, and loops over
	// Enqueue).
	EnqueueBatch(ctx context.Context, payloads [][]byte) error
	Batched() bool
	// StartWorker starts a worker of the Open concurrency calling handle for
	// every job; stop shuts it down gracefully.
	StartWorker(ctx context.Context, handle func(payload []byte)) (stop func() error, err error)
}

// asynqQueue is the queue name of the peer: its default queue.
const asynqQueue = "default"

// asynqSide is github.com/hibiken/asynq with its defaults, except a silenced
// logger.
type asynqSide struct {
	addr        string
	concurrency int
	client      *asynq.Client
}

func (a *asynqSide) Name() string  { return "asynq" }
func (a *asynqSide) Batched() bool { return false }

func (a *asynqSide) Open(ctx context.Context, addr string, concurrency int) error {
	a.addr, a.concurrency = addr, concurrency
	a.client = asynq.NewClient(asynq.RedisClientOpt{Addr: addr})
	return a.client.Ping()
}

func (a *asynqSide) Close() {
	if a.client != nil {
		a.client.Close()
		a.client = nil
	}
}

func (a *asynqSide) Enqueue(ctx context.Context, payload []byte) error {
	_, err := a.client.EnqueueContext(ctx, asynq.NewTask("bench", payload), asynq.Queue(asynqQueue))
	return err
}

// EnqueueBatch loops: asynq has no batched enqueue.
func (a *asynqSide) EnqueueBatch(ctx context.Context, payloads [][]byte) error {
	for _, p := range payloads {
		if err := a.Enqueue(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

func (a *asynqSide) StartWorker(ctx context.Context, handle func(payload []byte)) (func() error, error) {
	srv := asynq.NewServer(asynq.RedisClientOpt{Addr: a.addr}, asynq.Config{
		Concurrency: a.concurrency,
		Queues:      map[string]int{asynqQueue: 1},
		Logger:      quietLogger{},
		LogLevel:    asynq.ErrorLevel,
	})
	h := asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		handle(t.Payload())
		return nil
	})
	if err := srv.Start(h); err != nil {
		return nil, fmt.Errorf("asynq server: %w", err)
	}
	return func() error { srv.Shutdown(); return nil }, nil
}

// quietLogger drops asynq's logs below Error and prints the rest to
// stderr.
type quietLogger struct{}

var errLog = log.New(os.Stderr, "asynq: ", log.LstdFlags)

func (quietLogger) Debug(args ...any) {}
func (quietLogger) Info(args ...any)  {}
func (quietLogger) Warn(args ...any)  {}
func (quietLogger) Error(args ...any) { errLog.Print(args...) }
func (quietLogger) Fatal(args ...any) { errLog.Fatal(args...) }

// sleepCtx sleeps d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
