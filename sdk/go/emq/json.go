package emq

import (
	"context"
	"encoding/json"
	"time"
)

// TypedJob is a claimed job with its payload decoded: Value is the JSON
// payload as a T, and the embedded Job keeps the raw bytes, the id, the
// token and the lease deadline.
type TypedJob[T any] struct {
	Job
	Value T
}

// JSON adapts a handler of decoded jobs to a Handler: each job's payload is
// decoded from JSON into a T before h runs. A payload that does not decode
// (not JSON, or not a T) is a permanent failure: the job is buried at once,
// with the decoding error, and h never sees it. Unknown fields are ignored,
// as encoding/json does.
//
//	w, err := emq.NewWorker(q, emq.JSON(func(ctx context.Context, job emq.TypedJob[Email]) error {
//		return send(ctx, job.Value.To, job.Value.Subject)
//	}), emq.WorkerOptions{})
func JSON[T any](h func(ctx context.Context, job TypedJob[T]) error) Handler {
	return func(ctx context.Context, job Job) error {
		var v T
		if err := json.Unmarshal(job.Payload, &v); err != nil {
			return Permanent(errorf("emq: decoding the JSON payload of %s: %w", job.ID, err))
		}
		return h(ctx, TypedJob[T]{Job: job, Value: v})
	}
}

// JSONQueue is a queue whose payloads are JSON values of T: its Push and
// PushBatch encode them, and its NewWorker decodes them for the handler
// (JSON). The queue underneath takes raw bytes as ever, so typed and raw
// producers and workers can share it. Create one with NewJSONQueue.
type JSONQueue[T any] struct {
	q *Queue
}

// NewJSONQueue returns q with its payloads typed as JSON values of T.
//
//	emails := emq.NewJSONQueue[Email](q)
//	ok, err := emails.Push(ctx, id, Email{To: "ada@example.com"})
func NewJSONQueue[T any](q *Queue) *JSONQueue[T] { return &JSONQueue[T]{q: q} }

// Queue returns the queue underneath, for its raw and inspection calls.
func (j *JSONQueue[T]) Queue() *Queue { return j.q }

// Name returns the queue's name.
func (j *JSONQueue[T]) Name() string { return j.q.Name() }

// encode is v as a payload. A value encoding/json cannot encode (a
// channel, a function, a cycle) is refused with ErrArgument before
// anything is sent.
func (j *JSONQueue[T]) encode(v T) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, errorf("%w: encoding a JSON payload for queue %s: %w", ErrArgument, j.q.Name(), err)
	}
	return b, nil
}

// Push encodes v as JSON and pushes it as the payload of job id: Queue.Push
// with its coalescing, idempotence and resends.
func (j *JSONQueue[T]) Push(ctx context.Context, id ID, v T) (enqueued bool, err error) {
	b, err := j.encode(v)
	if err != nil {
		return false, err
	}
	return j.q.Push(ctx, id, b)
}

// PushAt encodes v as JSON and schedules it to run at at (Queue.EnqueueAt).
func (j *JSONQueue[T]) PushAt(ctx context.Context, id ID, v T, at time.Time) (enqueued bool, err error) {
	b, err := j.encode(v)
	if err != nil {
		return false, err
	}
	return j.q.EnqueueAt(ctx, id, b, at)
}

// TypedNewJob is one job of a JSONQueue's PushBatch.
type TypedNewJob[T any] struct {
	ID    ID
	Value T
}

// PushBatch encodes every value and pushes the jobs in one round trip
// (Queue.PushBatch). A value that does not encode refuses the whole batch
// before anything is sent.
func (j *JSONQueue[T]) PushBatch(ctx context.Context, jobs []TypedNewJob[T]) ([]bool, error) {
	raw := make([]NewJob, len(jobs))
	for i, job := range jobs {
		b, err := j.encode(job.Value)
		if err != nil {
			return nil, errorf("job %d: %w", i, err)
		}
		raw[i] = NewJob{ID: job.ID, Payload: b}
	}
	return j.q.PushBatch(ctx, raw)
}

// NewWorker returns a worker over the queue whose handler gets each job's
// payload decoded (JSON: a payload that does not decode is buried).
func (j *JSONQueue[T]) NewWorker(h func(ctx context.Context, job TypedJob[T]) error, opt WorkerOptions) (*Worker, error) {
	return NewWorker(j.q, JSON(h), opt)
}
