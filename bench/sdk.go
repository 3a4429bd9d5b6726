package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/redis/rueidis"
)

// sdkQueue is the queue name of the SDK side.
const sdkQueue = "bench"

// sdkSide is the EchoMQ Go SDK: Push and PushBatch to enqueue, a Worker of
// the given concurrency to process.
//
// Like asynq's Client and Server, the producers and the worker hold their
// own connections: the worker gets a client of its own unless shared is
// set, when it runs on the producers' client.
type sdkSide struct {
	shared      bool
	addr        string
	concurrency int
	c           *emq.Client
	q           *emq.Queue
}

func (s *sdkSide) Name() string  { return "sdk" }
func (s *sdkSide) Batched() bool { return true }

func (s *sdkSide) Open(ctx context.Context, addr string, concurrency int) error {
	s.addr, s.concurrency = addr, concurrency
	c, q, err := sdkConnect(ctx, addr)
	if err != nil {
		return err
	}
	s.c, s.q = c, q
	return nil
}

func sdkConnect(ctx context.Context, addr string) (*emq.Client, *emq.Queue, error) {
	c, err := emq.Connect(ctx, emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{addr}}})
	if err != nil {
		return nil, nil, err
	}
	q, err := c.Queue(sdkQueue)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, q, nil
}

func (s *sdkSide) Close() {
	if s.c != nil {
		s.c.Close()
		s.c, s.q = nil, nil
	}
}

func (s *sdkSide) Enqueue(ctx context.Context, payload []byte) error {
	id, err := s.c.Mint(emq.WorkKind)
	if err != nil {
		return err
	}
	ok, err := s.q.Push(ctx, id, payload)
	if err == nil && !ok {
		err = fmt.Errorf("push %s: duplicate id", id)
	}
	return err
}

func (s *sdkSide) EnqueueBatch(ctx context.Context, payloads [][]byte) error {
	jobs := make([]emq.NewJob, len(payloads))
	for i, p := range payloads {
		id, err := s.c.Mint(emq.WorkKind)
		if err != nil {
			return err
		}
		jobs[i] = emq.NewJob{ID: id, Payload: p}
	}
	oks, err := s.q.PushBatch(ctx, jobs)
	if err != nil {
		return err
	}
	for i, ok := range oks {
		if !ok {
			return fmt.Errorf("push batch %s: duplicate id", jobs[i].ID)
		}
	}
	return nil
}

func (s *sdkSide) StartWorker(ctx context.Context, handle func(payload []byte)) (func() error, error) {
	c, q := s.c, s.q
	if !s.shared {
		var err error
		if c, q, err = sdkConnect(ctx, s.addr); err != nil {
			return nil, err
		}
	}
	closeOwn := func() {
		if c != s.c {
			c.Close()
		}
	}
	w, err := emq.NewWorker(q, func(ctx context.Context, j emq.Job) error {
		handle(j.Payload)
		return nil
	}, emq.WorkerOptions{Concurrency: s.concurrency})
	if err != nil {
		closeOwn()
		return nil, err
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	return func() error {
		cancel()
		err := <-done
		closeOwn()
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		return err
	}, nil
}
