// Command testee is the Go SDK's conformance testee: it reads the
// requests of the conformance runner from stdin, one JSON object a line,
// performs each with the public API of package emq, and writes one JSON
// response a line to stdout, in order (conformance/README.md is the
// contract). It logs to stderr and exits when stdin closes.
package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"time"
	"unicode/utf8"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// request is one line from the runner.
type request struct {
	Seq  int64           `json:"seq"`
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args"`
}

// response is one line to the runner.
type response struct {
	Seq    int64     `json:"seq"`
	OK     bool      `json:"ok"`
	Result any       `json:"result,omitempty"`
	Error  *errorObj `json:"error,omitempty"`
}

// errorObj is an error in the contract's language-neutral kinds.
type errorObj struct {
	Kind    string `json:"kind"`
	Class   string `json:"class,omitempty"`
	Message string `json:"message"`
}

// opError is an error the testee raises itself with a given kind.
type opError struct {
	kind string
	err  error
}

func (e *opError) Error() string { return e.err.Error() }
func (e *opError) Unwrap() error { return e.err }

func unsupported(op string) error {
	return &opError{kind: "unsupported", err: fmt.Errorf("op %q is not implemented by the Go testee", op)}
}

func badRequest(err error) error {
	return &opError{kind: "other", err: fmt.Errorf("bad request: %w", err)}
}

// kindOf maps an SDK error to the contract's kinds, in the contract's
// order.
func kindOf(err error) *errorObj {
	var ce *emq.ClassError
	var oe *opError
	var ne net.Error
	switch {
	case errors.As(err, &oe):
		return &errorObj{Kind: oe.kind, Message: err.Error()}
	case errors.As(err, &ce):
		return &errorObj{Kind: "wire", Class: ce.Class, Message: ce.Message}
	case errors.Is(err, emq.ErrPolicy):
		// An older script refused on a queue with a policy (emq.PolicyError).
		return &errorObj{Kind: "wire", Class: wire.ClassPolicy, Message: err.Error()}
	case errors.Is(err, emq.ErrID):
		return &errorObj{Kind: "id", Message: err.Error()}
	case errors.Is(err, emq.ErrQueueName):
		return &errorObj{Kind: "queue_name", Message: err.Error()}
	case errors.Is(err, emq.ErrPayloadTooLarge):
		return &errorObj{Kind: "payload_too_large", Message: err.Error()}
	case errors.Is(err, emq.ErrArgument):
		return &errorObj{Kind: "argument", Message: err.Error()}
	case errors.Is(err, emq.ErrVersionFence):
		return &errorObj{Kind: "fence", Message: err.Error()}
	case errors.Is(err, emq.ErrBundle):
		return &errorObj{Kind: "bundle", Message: err.Error()}
	case errors.Is(err, emq.ErrConnection), errors.As(err, &ne), errors.Is(err, rueidis.ErrClosing), errors.Is(err, io.EOF):
		return &errorObj{Kind: "connection", Message: err.Error()}
	}
	return &errorObj{Kind: "other", Message: err.Error()}
}

// testee holds the client of the current scenario.
type testee struct {
	log        *slog.Logger
	client     *emq.Client
	maxPayload int64 // connect's max_payload
	wire       bool  // -wire: ops that are scripts run their generated calls (wire.go)
}

func main() {
	wireMode := flag.Bool("wire", false, "run every op that is a per-queue script through its generated call (package wire) instead of the idiomatic call (wire.go)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	t := &testee{log: log, wire: *wireMode}
	defer t.close()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 256<<20)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for in.Scan() {
		var req request
		resp := response{}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			resp.Error = kindOf(badRequest(err))
		} else {
			resp.Seq = req.Seq
			result, err := t.do(req)
			if err != nil {
				resp.Error = kindOf(err)
			} else {
				resp.OK, resp.Result = true, result
			}
		}
		if err := enc.Encode(resp); err != nil {
			log.Error("writing a response", "err", err)
			os.Exit(1)
		}
		if err := out.Flush(); err != nil {
			log.Error("writing a response", "err", err)
			os.Exit(1)
		}
	}
	if err := in.Err(); err != nil {
		log.Error("reading requests", "err", err)
		os.Exit(1)
	}
}

func (t *testee) close() {
	if t.client != nil {
		t.client.Close()
		t.client = nil
	}
}

// args decodes a request's arguments into a struct.
func args[T any](req request) (T, error) {
	var a T
	if len(req.Args) == 0 {
		return a, nil
	}
	if err := json.Unmarshal(req.Args, &a); err != nil {
		return a, badRequest(err)
	}
	return a, nil
}

// payload is a request's payload: UTF-8 text or base64 bytes.
type payload struct {
	Text *string `json:"payload"`
	B64  *string `json:"payload_b64"`
}

func (p payload) bytes() ([]byte, error) {
	switch {
	case p.B64 != nil:
		b, err := base64.StdEncoding.DecodeString(*p.B64)
		if err != nil {
			return nil, badRequest(err)
		}
		return b, nil
	case p.Text != nil:
		return []byte(*p.Text), nil
	}
	return []byte{}, nil
}

// payloadOut renders bytes as the contract's payload fields.
func payloadOut(m map[string]any, b []byte) map[string]any {
	if utf8.Valid(b) {
		m["payload"] = string(b)
	}
	m["payload_b64"] = base64.StdEncoding.EncodeToString(b)
	return m
}

type queueArgs struct {
	Queue string `json:"queue"`
	ID    string `json:"id"`
}

// The argument shapes the ops of both modes share (main.go's SDK calls
// and wire.go's generated calls), decoded once per request with args.

// admitArgs are push's, enqueue's and enqueue_at's.
type admitArgs struct {
	queueArgs
	payload
	RunAtMS int64 `json:"run_at_ms"`
}

// jobArg is one job of a batch.
type jobArg struct {
	ID string `json:"id"`
	payload
}

// jobsArgs are push_batch's and push_many's.
type jobsArgs struct {
	Queue string   `json:"queue"`
	Jobs  []jobArg `json:"jobs"`
}

// idsArgs are those of the calls on given ids (claim_ids,
// complete_claim_ids, promote_ids, reap_ids).
type idsArgs struct {
	Queue       string   `json:"queue"`
	ID          string   `json:"id"`
	Token       int64    `json:"token"`
	LeaseMS     int64    `json:"lease_ms"`
	MaxAttempts int64    `json:"max_attempts"`
	IDs         []string `json:"ids"`
}

// claimArgs are claim's and claim_many's (claim has no count).
type claimArgs struct {
	Queue   string `json:"queue"`
	LeaseMS int64  `json:"lease_ms"`
	Count   int64  `json:"count"`
}

// settleArgs are those of the transitions of an active job (complete,
// bury, complete_claim, extend, retry).
type settleArgs struct {
	queueArgs
	Token   int64 `json:"token"`
	LeaseMS int64 `json:"lease_ms"`
	DelayMS int64 `json:"delay_ms"`
	Count   int64 `json:"count"`
}

// failArgs are those of the transitions that record a failed attempt
// (retry_failed, bury_failed).
type failArgs struct {
	queueArgs
	Token   int64  `json:"token"`
	DelayMS int64  `json:"delay_ms"`
	Class   string `json:"class"`
	Worker  string `json:"worker"`
	Error   string `json:"error"`
}

// attemptsOut renders a job's failed attempts as the failures op answers.
func attemptsOut(as []emq.FailedAttempt) map[string]any {
	out := make([]any, len(as))
	for i, a := range as {
		out[i] = map[string]any{"attempt": a.Attempt, "at_ms": a.At.UnixMilli(), "class": string(a.Class), "worker": a.Worker, "error": a.Message}
	}
	return map[string]any{"attempts": out}
}

// maintainArgs are promote's and reap's.
type maintainArgs struct {
	Queue       string `json:"queue"`
	Limit       int64  `json:"limit"`
	MaxAttempts int64  `json:"max_attempts"`
}

func (t *testee) queue(name string) (*emq.Queue, error) {
	if t.client == nil {
		return nil, &opError{kind: "connection", err: errors.New("not connected")}
	}
	return t.client.Queue(name)
}

// queueID returns the queue and the parsed id of a request: the queue
// first, as the SDK's handle is taken before a call.
func (t *testee) queueID(a queueArgs) (*emq.Queue, emq.ID, error) {
	q, err := t.queue(a.Queue)
	if err != nil {
		return nil, emq.ID{}, err
	}
	id, err := emq.ParseID(a.ID)
	if err != nil {
		return nil, emq.ID{}, err
	}
	return q, id, nil
}

func jobOut(j emq.Job) map[string]any {
	return payloadOut(map[string]any{"id": j.ID.String(), "token": j.Token, "deadline_ms": j.Deadline.UnixMilli()}, j.Payload)
}

func jobsOut(js []emq.Job) map[string]any {
	out := make([]any, len(js))
	for i, j := range js {
		out[i] = jobOut(j)
	}
	return map[string]any{"jobs": out}
}

func idsOut(ids []emq.ID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// parseIDs parses id texts with the SDK's parser.
func parseIDs(texts []string) ([]emq.ID, error) {
	ids := make([]emq.ID, len(texts))
	for i, s := range texts {
		var err error
		if ids[i], err = emq.ParseID(s); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// do performs one request.
func (t *testee) do(req request) (any, error) {
	if t.wire {
		if res, ok, err := t.wireOp(req); ok {
			return res, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, ok, err := t.policyOp(ctx, req); ok {
		return res, err
	}
	if op, ok := twinOf[req.Op]; ok {
		// The SDK call of the op a 2.7 twin twins runs the twin.
		req.Op = op
	}
	switch req.Op {
	case "hello":
		v := "devel"
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, d := range bi.Deps {
				if d.Path == "github.com/echomq/echomq/sdk/go" && d.Replace == nil {
					v = d.Version
				}
			}
		}
		return map[string]any{"language": "go", "sdk_version": v, "protocol": wire.Protocol, "version": emq.Version, "bundle_digest": wire.BundleDigest}, nil

	case "parse_id":
		a, err := args[struct {
			Text string `json:"text"`
		}](req)
		if err != nil {
			return nil, err
		}
		id, err := emq.ParseID(a.Text)
		if err != nil {
			return nil, err
		}
		return map[string]any{"kind": string(id.Kind()), "time_ms": id.Time().UnixMilli(), "node": id.Node(), "sequence": id.Sequence()}, nil

	case "new_id":
		a, err := args[struct {
			Kind     string `json:"kind"`
			TimeMS   int64  `json:"time_ms"`
			Node     int    `json:"node"`
			Sequence int    `json:"sequence"`
		}](req)
		if err != nil {
			return nil, err
		}
		id, err := emq.NewID(emq.Kind(a.Kind), time.UnixMilli(a.TimeMS), a.Node, a.Sequence)
		if err != nil {
			return nil, err
		}
		return map[string]any{"text": id.String()}, nil

	case "queue_keys":
		a, err := args[struct {
			Queue string   `json:"queue"`
			Types []string `json:"types"`
			ID    *string  `json:"id"`
		}](req)
		if err != nil {
			return nil, err
		}
		k, err := wire.NewQueueKeys(a.Queue)
		if err != nil {
			return nil, err
		}
		keys := map[string]any{}
		for _, typ := range a.Types {
			if key, ok := k.Key(typ); ok {
				keys[typ] = key
			} else {
				keys[typ] = nil
			}
		}
		out := map[string]any{"keys": keys}
		if a.ID != nil {
			id, err := emq.ParseID(*a.ID)
			if err != nil {
				return nil, err
			}
			row, err := k.Row(id)
			if err != nil {
				return nil, err
			}
			out["row"] = row
		}
		return out, nil

	case "reserve_key":
		a, err := args[struct {
			Member string `json:"member"`
			Queue  string `json:"queue"`
		}](req)
		if err != nil {
			return nil, err
		}
		key, err := wire.ReserveKey(a.Member, a.Queue)
		if err != nil {
			return nil, err
		}
		return map[string]any{"key": key}, nil

	case "judge_version":
		a, err := args[struct {
			Record string `json:"record"`
		}](req)
		if err != nil {
			return nil, err
		}
		return map[string]any{"verdict": emq.JudgeVersionRecord(a.Record).String()}, nil

	case "classify_error":
		a, err := args[struct {
			Reply string `json:"reply"`
		}](req)
		if err != nil {
			return nil, err
		}
		if ce, ok := emq.ParseRefusal(a.Reply); ok {
			return map[string]any{"class": ce.Class, "message": ce.Message}, nil
		}
		return map[string]any{"class": "", "message": a.Reply}, nil

	case "connect":
		a, err := args[struct {
			Addr       string `json:"addr"`
			MaxPayload int64  `json:"max_payload"`
		}](req)
		if err != nil {
			return nil, err
		}
		t.close()
		c, err := emq.Connect(ctx, emq.Options{
			Redis:      rueidis.ClientOption{InitAddress: []string{a.Addr}, DisableCache: true},
			NodeLease:  10 * time.Minute, // no renewal within a scenario: the runner counts commands
			MaxPayload: a.MaxPayload,
			Logger:     t.log,
			EventsMax:  -1, // revive is the 2.1 op: revive and ring, no event (revive_recorded takes its events_max)
		})
		if err != nil {
			return nil, err
		}
		t.client, t.maxPayload = c, a.MaxPayload
		return map[string]any{"version_found": c.VersionFound()}, nil

	case "close":
		t.close()
		return map[string]any{}, nil

	case "mint":
		a, err := args[struct {
			Kind string `json:"kind"`
		}](req)
		if err != nil {
			return nil, err
		}
		if t.client == nil {
			return nil, &opError{kind: "connection", err: errors.New("not connected")}
		}
		k := emq.Kind(a.Kind)
		if !k.Registered() {
			return nil, fmt.Errorf("%w: kind %q is not registered", emq.ErrID, a.Kind)
		}
		id, err := t.client.Mint(k)
		if err != nil {
			return nil, err
		}
		return map[string]any{"id": id.String()}, nil

	case "push", "enqueue", "enqueue_at":
		a, err := args[admitArgs](req)
		if err != nil {
			return nil, err
		}
		q, id, err := t.queueID(a.queueArgs)
		if err != nil {
			return nil, err
		}
		p, err := a.bytes()
		if err != nil {
			return nil, err
		}
		var ok bool
		switch req.Op {
		case "push":
			ok, err = q.Push(ctx, id, p)
		case "enqueue":
			ok, err = q.Enqueue(ctx, id, p)
		default:
			ok, err = q.EnqueueAt(ctx, id, p, time.UnixMilli(a.RunAtMS))
		}
		if err != nil {
			return nil, err
		}
		return map[string]any{"enqueued": ok}, nil

	case "push_batch":
		a, err := args[jobsArgs](req)
		if err != nil {
			return nil, err
		}
		q, err := t.queue(a.Queue)
		if err != nil {
			return nil, err
		}
		jobs := make([]emq.NewJob, len(a.Jobs))
		for i, j := range a.Jobs {
			id, err := emq.ParseID(j.ID)
			if err != nil {
				return nil, err
			}
			p, err := j.bytes()
			if err != nil {
				return nil, err
			}
			jobs[i] = emq.NewJob{ID: id, Payload: p}
		}
		oks, err := q.PushBatch(ctx, jobs)
		var be *emq.BatchError
		if err != nil && !errors.As(err, &be) {
			return nil, err
		}
		results := make([]any, len(jobs))
		for i := range jobs {
			if be != nil && be.Errs[i] != nil {
				results[i] = map[string]any{"error": kindOf(be.Errs[i])}
			} else {
				results[i] = map[string]any{"enqueued": i < len(oks) && oks[i]}
			}
		}
		return map[string]any{"results": results}, nil

	case "push_many":
		a, err := args[jobsArgs](req)
		if err != nil {
			return nil, err
		}
		q, err := t.queue(a.Queue)
		if err != nil {
			return nil, err
		}
		jobs := make([]emq.NewJob, len(a.Jobs))
		for i, j := range a.Jobs {
			id, err := emq.ParseID(j.ID)
			if err != nil {
				return nil, err
			}
			p, err := j.bytes()
			if err != nil {
				return nil, err
			}
			jobs[i] = emq.NewJob{ID: id, Payload: p}
		}
		oks, err := q.PushMany(ctx, jobs)
		if err != nil {
			return nil, err
		}
		results := make([]any, len(oks))
		for i, ok := range oks {
			results[i] = map[string]any{"enqueued": ok}
		}
		return map[string]any{"results": results}, nil

	case "retry_failed", "bury_failed":
		a, err := args[failArgs](req)
		if err != nil {
			return nil, err
		}
		q, id, err := t.queueID(a.queueArgs)
		if err != nil {
			return nil, err
		}
		f := emq.Failure{Class: emq.FailureClass(a.Class), Worker: a.Worker, Message: a.Error}
		if req.Op == "bury_failed" {
			return map[string]any{}, q.BuryFailed(ctx, id, a.Token, f)
		}
		at, err := q.RetryFailed(ctx, id, a.Token, ms(a.DelayMS), f)
		if err != nil {
			return nil, err
		}
		return map[string]any{"run_at_ms": at.UnixMilli()}, nil

	case wire.ScriptFailures.Name: // the op is named for its script, whose name is the failures key type's
		a, err := args[queueArgs](req)
		if err != nil {
			return nil, err
		}
		q, id, err := t.queueID(a)
		if err != nil {
			return nil, err
		}
		as, err := q.Failures(ctx, id)
		if err != nil {
			return nil, err
		}
		return attemptsOut(as), nil

	case "claim_ids", "complete_claim_ids", "promote_ids", "reap_ids", "reap_failed_ids", "forget_failures":
		a, err := args[idsArgs](req)
		if err != nil {
			return nil, err
		}
		q, err := t.queue(a.Queue)
		if err != nil {
			return nil, err
		}
		ids := make([]emq.ID, len(a.IDs))
		for i, s := range a.IDs {
			if ids[i], err = emq.ParseID(s); err != nil {
				return nil, err
			}
		}
		switch req.Op {
		case "claim_ids":
			js, err := q.ClaimIDs(ctx, ms(a.LeaseMS), ids)
			if err != nil {
				return nil, err
			}
			return jobsOut(js), nil
		case "complete_claim_ids":
			id, err := emq.ParseID(a.ID)
			if err != nil {
				return nil, err
			}
			js, err := q.CompleteClaimIDs(ctx, id, a.Token, ms(a.LeaseMS), ids)
			if err != nil {
				return nil, err
			}
			return jobsOut(js), nil
		case "promote_ids":
			n, err := q.PromoteIDs(ctx, ids)
			if err != nil {
				return nil, err
			}
			return map[string]any{"moved": n}, nil
		case "reap_failed_ids":
			n, err := q.ReapFailedIDs(ctx, ids, int(a.MaxAttempts))
			if err != nil {
				return nil, err
			}
			return map[string]any{"moved": n}, nil
		case "forget_failures":
			n, err := q.ForgetFailures(ctx, ids)
			if err != nil {
				return nil, err
			}
			return map[string]any{"forgotten": n}, nil
		default:
			n, err := q.ReapIDs(ctx, ids, int(a.MaxAttempts))
			if err != nil {
				return nil, err
			}
			return map[string]any{"moved": n}, nil
		}

	case "claim":
		a, err := args[claimArgs](req)
		if err != nil {
			return nil, err
		}
		q, err := t.queue(a.Queue)
		if err != nil {
			return nil, err
		}
		j, ok, err := q.Claim(ctx, ms(a.LeaseMS))
		if err != nil {
			return nil, err
		}
		if !ok {
			return map[string]any{"job": nil}, nil
		}
		return map[string]any{"job": jobOut(j)}, nil

	case "claim_many":
		a, err := args[claimArgs](req)
		if err != nil {
			return nil, err
		}
		q, err := t.queue(a.Queue)
		if err != nil {
			return nil, err
		}
		js, err := q.ClaimMany(ctx, ms(a.LeaseMS), int(a.Count))
		if err != nil {
			return nil, err
		}
		return jobsOut(js), nil

	case "complete", "bury", "complete_claim", "extend", "retry":
		a, err := args[settleArgs](req)
		if err != nil {
			return nil, err
		}
		q, id, err := t.queueID(a.queueArgs)
		if err != nil {
			return nil, err
		}
		switch req.Op {
		case "complete":
			return map[string]any{}, q.Complete(ctx, id, a.Token)
		case "bury":
			return map[string]any{}, q.Bury(ctx, id, a.Token)
		case "complete_claim":
			js, err := q.CompleteClaim(ctx, id, a.Token, ms(a.LeaseMS), int(a.Count))
			if err != nil {
				return nil, err
			}
			return jobsOut(js), nil
		case "extend":
			d, err := q.Extend(ctx, id, a.Token, ms(a.LeaseMS))
			if err != nil {
				return nil, err
			}
			return map[string]any{"deadline_ms": d.UnixMilli()}, nil
		default:
			at, err := q.Retry(ctx, id, a.Token, ms(a.DelayMS))
			if err != nil {
				return nil, err
			}
			return map[string]any{"run_at_ms": at.UnixMilli()}, nil
		}

	case "revive", "purge", "get":
		a, err := args[queueArgs](req)
		if err != nil {
			return nil, err
		}
		q, id, err := t.queueID(a)
		if err != nil {
			return nil, err
		}
		switch req.Op {
		case "revive":
			ok, err := q.Revive(ctx, id)
			if err != nil {
				return nil, err
			}
			return map[string]any{"revived": ok}, nil
		case "purge":
			// The op is the purge script alone, as a 2.2 client runs
			// it: Queue.Purge (2.3.0) also forgets the job's failure
			// record in the same round trip, and the failures scenarios
			// need the record a bare purge leaves behind.
			return wireByID(t, ctx, req)
		}
		return getOut(q.Get(ctx, id))

	case "promote", "reap":
		a, err := args[maintainArgs](req)
		if err != nil {
			return nil, err
		}
		q, err := t.queue(a.Queue)
		if err != nil {
			return nil, err
		}
		var n int
		if req.Op == "promote" {
			n, err = q.Promote(ctx, int(a.Limit))
		} else {
			n, err = q.Reap(ctx, int(a.Limit), int(a.MaxAttempts))
		}
		if err != nil {
			return nil, err
		}
		return map[string]any{"moved": n}, nil

	case "ring":
		a, err := args[queueArgs](req)
		if err != nil {
			return nil, err
		}
		q, err := t.queue(a.Queue)
		if err != nil {
			return nil, err
		}
		rung, err := q.Ring(ctx)
		if err != nil {
			return nil, err
		}
		return map[string]any{"rung": rung}, nil

	case "sizes":
		a, err := args[queueArgs](req)
		if err != nil {
			return nil, err
		}
		q, err := t.queue(a.Queue)
		if err != nil {
			return nil, err
		}
		sizes, err := q.Sizes(ctx)
		if err != nil {
			return nil, err
		}
		out := map[string]any{}
		for s, n := range sizes {
			out[string(s)] = n
		}
		return map[string]any{"sizes": out}, nil

	case "browse", "page":
		a, err := args[struct {
			Queue string `json:"queue"`
			Set   string `json:"set"`
			After string `json:"after"`
			N     int    `json:"n"`
		}](req)
		if err != nil {
			return nil, err
		}
		q, err := t.queue(a.Queue)
		if err != nil {
			return nil, err
		}
		if req.Op == "browse" {
			ids, err := q.Browse(ctx, emq.Set(a.Set), a.N)
			if err != nil {
				return nil, err
			}
			return map[string]any{"ids": idsOut(ids)}, nil
		}
		ids, next, err := q.Page(ctx, emq.Set(a.Set), emq.Cursor(a.After), a.N)
		if err != nil {
			return nil, err
		}
		return map[string]any{"ids": idsOut(ids), "next": string(next)}, nil

	// echomq 2.4.0, the write side: add_many, complete_result_claim_ids,
	// fail, reap_recorded_ids, progress, revive_recorded, forget_ids.
	case "add_many":
		a, err := args[struct {
			jobsArgs
			DelayMS      int64  `json:"delay_ms"`
			Attempts     int    `json:"attempts"`
			Backoff      string `json:"backoff"`
			BackoffMS    int64  `json:"backoff_ms"`
			BackoffMaxMS int64  `json:"backoff_max_ms"`
		}](req)
		if err != nil {
			return nil, err
		}
		q, err := t.queue(a.Queue)
		if err != nil {
			return nil, err
		}
		jobs := make([]emq.NewJob, len(a.Jobs))
		for i, j := range a.Jobs {
			id, err := emq.ParseID(j.ID)
			if err != nil {
				return nil, err
			}
			p, err := j.bytes()
			if err != nil {
				return nil, err
			}
			jobs[i] = emq.NewJob{ID: id, Payload: p}
		}
		b := emq.BackoffPolicy{Type: emq.Backoff(a.Backoff), Delay: ms(a.BackoffMS), Max: ms(a.BackoffMaxMS)}
		rs, err := q.AddMany(ctx, jobs, emq.Delay(ms(a.DelayMS)), emq.Attempts(a.Attempts), emq.WithBackoff(b))
		if err != nil {
			return nil, err
		}
		results := make([]any, len(rs))
		for i, r := range rs {
			at := int64(0)
			if !r.RunAt.IsZero() {
				at = r.RunAt.UnixMilli()
			}
			results[i] = map[string]any{"enqueued": r.Enqueued, "run_at_ms": at}
		}
		return map[string]any{"results": results}, nil

	case "complete_result_claim_ids":
		a, err := args[struct {
			idsArgs
			Result    *string `json:"result"`
			ResultB64 *string `json:"result_b64"`
			Keep      int     `json:"keep"`
			KeepAgeMS int64   `json:"keep_age_ms"`
			EventsMax int     `json:"events_max"`
		}](req)
		if err != nil {
			return nil, err
		}
		q, err := t.queue(a.Queue)
		if err != nil {
			return nil, err
		}
		id, err := emq.ParseID(a.ID)
		if err != nil {
			return nil, err
		}
		ids, err := parseIDs(a.IDs)
		if err != nil {
			return nil, err
		}
		result, err := payload{Text: a.Result, B64: a.ResultB64}.bytes()
		if err != nil {
			return nil, err
		}
		js, err := q.CompleteResult(ctx, id, a.Token, ms(a.LeaseMS), ids, emq.Completion{Result: result, Keep: emq.Retention{Count: a.Keep, Age: ms(a.KeepAgeMS)}, EventsMax: a.EventsMax})
		if err != nil {
			return nil, err
		}
		return jobsOut(js), nil

	case "fail":
		a, err := args[struct {
			failArgs
			MaxAttempts  int    `json:"max_attempts"`
			Backoff      string `json:"backoff"`
			BackoffMS    int64  `json:"backoff_ms"`
			BackoffMaxMS int64  `json:"backoff_max_ms"`
			Jitter       int    `json:"jitter"`
			Bury         bool   `json:"bury"`
			EventsMax    int    `json:"events_max"`
		}](req)
		if err != nil {
			return nil, err
		}
		q, id, err := t.queueID(a.queueArgs)
		if err != nil {
			return nil, err
		}
		f := emq.Failure{Class: emq.FailureClass(a.Class), Worker: a.Worker, Message: a.Error}
		o := emq.FailOptions{MaxAttempts: a.MaxAttempts, Backoff: emq.BackoffPolicy{Type: emq.Backoff(a.Backoff), Delay: ms(a.BackoffMS), Max: ms(a.BackoffMaxMS)},
			Jitter: a.Jitter, Bury: a.Bury, EventsMax: a.EventsMax}
		outcome, at, err := q.Fail(ctx, id, a.Token, f, o)
		if err != nil {
			return nil, err
		}
		runAt := int64(0)
		if !at.IsZero() {
			runAt = at.UnixMilli()
		}
		return map[string]any{"outcome": string(outcome), "run_at_ms": runAt}, nil

	case "reap_recorded_ids", "forget_ids":
		a, err := args[struct {
			idsArgs
			EventsMax int `json:"events_max"`
		}](req)
		if err != nil {
			return nil, err
		}
		q, err := t.queue(a.Queue)
		if err != nil {
			return nil, err
		}
		ids, err := parseIDs(a.IDs)
		if err != nil {
			return nil, err
		}
		if req.Op == "forget_ids" {
			n, err := q.ForgetIDs(ctx, ids)
			if err != nil {
				return nil, err
			}
			return map[string]any{"forgotten": n}, nil
		}
		n, err := q.ReapRecordedIDs(ctx, ids, int(a.MaxAttempts), a.EventsMax)
		if err != nil {
			return nil, err
		}
		return map[string]any{"moved": n}, nil

	case wire.ScriptProgress.Name, "revive_recorded": // the progress op is named for its script, whose name is the progress key type's
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(req.Args, &raw); err != nil {
			return nil, badRequest(err)
		}
		a, err := args[struct {
			queueArgs
			Token     int64 `json:"token"`
			EventsMax int   `json:"events_max"`
		}](req)
		if err != nil {
			return nil, err
		}
		q, id, err := t.queueID(a.queueArgs)
		if err != nil {
			return nil, err
		}
		if req.Op == "revive_recorded" {
			ok, err := q.ReviveRecorded(ctx, id, a.EventsMax)
			if err != nil {
				return nil, err
			}
			return map[string]any{"revived": ok}, nil
		}
		var p payload
		if v, ok := raw[req.Op]; ok {
			p.Text = new(string)
			if err := json.Unmarshal(v, p.Text); err != nil {
				return nil, badRequest(err)
			}
		}
		if v, ok := raw[req.Op+"_b64"]; ok {
			p.B64 = new(string)
			if err := json.Unmarshal(v, p.B64); err != nil {
				return nil, badRequest(err)
			}
		}
		b, err := p.bytes()
		if err != nil {
			return nil, err
		}
		return map[string]any{}, q.ReportProgress(ctx, id, a.Token, b, a.EventsMax)
	// end of the echomq 2.4.0 write side

	// The reads of echomq 2.4.0 (output, counters, events; get's
	// additions are getOut's). The ops are named for their scripts, whose
	// names are key types'.
	case wire.ScriptOutput.Name:
		a, err := args[queueArgs](req)
		if err != nil {
			return nil, err
		}
		q, id, err := t.queueID(a)
		if err != nil {
			return nil, err
		}
		out, err := q.Output(ctx, id)
		if err != nil {
			return nil, err
		}
		el := wire.ScriptOutput.ReplyElements() // progress, completed_at_ms, attempt, result
		m := bytesOut(map[string]any{el[1]: int64(0), el[2]: int64(0)}, el[0], out.Progress)
		result := []byte{}
		if c := out.Completed; c != nil {
			m[el[1]], m[el[2]], result = c.At.UnixMilli(), c.Attempt, c.Result
		}
		return bytesOut(m, el[3], result), nil

	case wire.ScriptCounters.Name:
		a, err := args[struct {
			Queue   string `json:"queue"`
			Minutes int    `json:"minutes"`
		}](req)
		if err != nil {
			return nil, err
		}
		q, err := t.queue(a.Queue)
		if err != nil {
			return nil, err
		}
		c, err := q.Counters(ctx, a.Minutes)
		if err != nil {
			return nil, err
		}
		minutes := make([]any, len(c.Minutes))
		for i, m := range c.Minutes {
			out := countsOut(m.SettleCounts)
			out[wire.ScriptCounters.ReplyElements()[0]] = m.Minute.UnixMilli() // minute_ms
			minutes[i] = out
		}
		return map[string]any{"totals": countsOut(c.Totals), "minutes": minutes}, nil

	case wire.ScriptEvents.Name:
		a, err := args[struct {
			Queue string `json:"queue"`
			After string `json:"after"`
			Count int    `json:"count"`
		}](req)
		if err != nil {
			return nil, err
		}
		q, err := t.queue(a.Queue)
		if err != nil {
			return nil, err
		}
		evs, err := q.EventsPage(ctx, emq.StreamID(a.After), a.Count)
		if err != nil {
			return nil, err
		}
		el := wire.ScriptEvents.ReplyElements() // stream_id, event, id, attempt, class, error, run_at_ms, progress
		out := make([]any, len(evs))
		for i, e := range evs {
			runAt := int64(0)
			if !e.RunAt.IsZero() {
				runAt = e.RunAt.UnixMilli()
			}
			m := map[string]any{el[0]: string(e.StreamID), el[1]: string(e.Event), el[2]: e.ID.String(), el[3]: e.Attempt, el[4]: string(e.Class), el[6]: runAt}
			m = bytesOut(m, el[5], []byte(e.Error))
			out[i] = bytesOut(m, el[7], e.Progress)
		}
		return map[string]any{wire.ScriptEvents.Name: out}, nil

	// echomq 2.5.0: deduplication by a caller's key and cancellation.
	case wire.ScriptAddDedup.Name, "push_dedup", wire.ScriptReplaceDedup.Name:
		a, err := args[dedupArgs](req)
		if err != nil {
			return nil, err
		}
		q, err := t.queue(a.Queue)
		if err != nil {
			return nil, err
		}
		opts, err := a.options()
		if err != nil {
			return nil, err
		}
		if req.Op == wire.ScriptAddDedup.Name {
			jobs := make([]emq.NewJob, len(a.Jobs))
			for i, j := range a.Jobs {
				if jobs[i], err = j.job(); err != nil {
					return nil, err
				}
			}
			rs, err := q.AddDedup(ctx, jobs, opts...)
			if err != nil {
				return nil, err
			}
			results := make([]any, len(rs))
			for i, r := range rs {
				results[i] = dedupOut(r)
			}
			return map[string]any{"results": results}, nil
		}
		j, err := a.dedupJobArg.job()
		if err != nil {
			return nil, err
		}
		if req.Op == "push_dedup" {
			r, err := q.PushDedup(ctx, j.ID, j.Payload, j.DedupKey, opts...)
			if err != nil {
				return nil, err
			}
			return dedupOut(r), nil
		}
		target, err := emq.ParseID(a.Target)
		if err != nil {
			return nil, err
		}
		r, err := q.ReplaceDedup(ctx, j.ID, j.Payload, j.DedupKey, target, a.EventsMax, opts...)
		if err != nil {
			return nil, err
		}
		return dedupOut(r), nil

	case wire.ScriptDedupEntries.Name:
		a, err := args[struct {
			Queue string   `json:"queue"`
			Keys  []string `json:"keys"`
		}](req)
		if err != nil {
			return nil, err
		}
		q, err := t.queue(a.Queue)
		if err != nil {
			return nil, err
		}
		es, err := q.DedupEntries(ctx, a.Keys...)
		if err != nil {
			return nil, err
		}
		out := make([]any, len(es))
		for i, e := range es {
			out[i] = dedupEntryOut(e)
		}
		return map[string]any{"entries": out}, nil

	case wire.ScriptSweepDedup.Name:
		a, err := args[struct {
			Queue  string `json:"queue"`
			Cursor string `json:"cursor"`
			Count  int    `json:"count"`
		}](req)
		if err != nil {
			return nil, err
		}
		q, err := t.queue(a.Queue)
		if err != nil {
			return nil, err
		}
		r, err := q.SweepDedup(ctx, a.Cursor, a.Count)
		if err != nil {
			return nil, err
		}
		return map[string]any{"cursor": r.Cursor, "dropped": r.Dropped, "released": r.Released}, nil

	case wire.ScriptCancelIDs.Name, "cancel_key":
		a, err := args[struct {
			Queue     string   `json:"queue"`
			IDs       []string `json:"ids"`
			Key       string   `json:"key"`
			EventsMax int      `json:"events_max"`
		}](req)
		if err != nil {
			return nil, err
		}
		q, err := t.queue(a.Queue)
		if err != nil {
			return nil, err
		}
		if req.Op == "cancel_key" {
			cs, err := q.CancelKey(ctx, a.Key, a.EventsMax)
			if err != nil {
				return nil, err
			}
			out := make([]any, len(cs))
			for i, c := range cs {
				out[i] = map[string]any{"id": c.ID.String(), "state": string(c.State)}
			}
			return map[string]any{"cancelled": out}, nil
		}
		ids, err := parseIDs(a.IDs)
		if err != nil {
			return nil, err
		}
		states, err := q.CancelIDs(ctx, ids, a.EventsMax)
		if err != nil {
			return nil, err
		}
		out := make([]any, len(states))
		for i, s := range states {
			out[i] = map[string]any{"state": string(s)}
		}
		return map[string]any{"results": out}, nil

	case "run_probes":
		if t.client == nil {
			return nil, &opError{kind: "connection", err: errors.New("not connected")}
		}
		tr, err := t.client.RunProbes(ctx)
		if err != nil {
			return nil, err
		}
		var lines []string
		for _, r := range tr.Results {
			line := "ok " + r.Target + ": " + r.Check
			if r.Err != nil {
				line = "FAIL " + r.Target + ": " + r.Check + ": " + r.Err.Error()
			}
			lines = append(lines, line)
		}
		return map[string]any{"passed": tr.Passed(), "total": len(tr.Results), "lines": lines}, nil

	default:
		// echomq 2.6.0: job schedulers (sched.go).
		if op, ok := schedOps[req.Op]; ok {
			return op(t, ctx, req)
		}
	}
	return nil, unsupported(req.Op)
}

// The renderings of the reads of echomq 2.4.0.

// getOut renders a Get as the get op answers: the row, its last progress
// report while it exists, and the completion record beside found false.
func getOut(info emq.JobInfo, ok bool, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	el := wire.ScriptOutput.ReplyElements() // progress, completed_at_ms, attempt, result
	if !ok {
		out := map[string]any{"found": false}
		if c := info.Completed; c != nil {
			out["completed"] = bytesOut(map[string]any{"at_ms": c.At.UnixMilli(), el[2]: c.Attempt}, el[3], c.Result)
		}
		return out, nil
	}
	at := int64(0)
	if !info.At.IsZero() {
		at = info.At.UnixMilli()
	}
	out := payloadOut(map[string]any{"found": true, "state": string(info.State), "attempts": info.Attempts, "at_ms": at}, info.Payload)
	return bytesOut(out, el[0], info.Progress), nil
}

// bytesOut renders bytes as the contract renders a payload, under name:
// the text when it is valid UTF-8, and always name_b64.
func bytesOut(m map[string]any, name string, b []byte) map[string]any {
	if utf8.Valid(b) {
		m[name] = string(b)
	}
	m[name+"_b64"] = base64.StdEncoding.EncodeToString(b)
	return m
}

// countsOut renders settle counts as the counters op answers them.
func countsOut(c emq.SettleCounts) map[string]any {
	return map[string]any{string(emq.EventCompleted): c.Completed, string(emq.EventFailed): c.Failed, string(emq.EventRetried): c.Retried, string(emq.EventDead): c.Dead}
}

// dedupJobArg is a job admitted under a deduplication key (echomq 2.5.0).
type dedupJobArg struct {
	ID  string `json:"id"`
	Key string `json:"key"`
	payload
}

func (j dedupJobArg) job() (emq.NewJob, error) {
	id, err := emq.ParseID(j.ID)
	if err != nil {
		return emq.NewJob{}, err
	}
	p, err := j.bytes()
	if err != nil {
		return emq.NewJob{}, err
	}
	return emq.NewJob{ID: id, Payload: p, DedupKey: j.Key}, nil
}

// dedupArgs are add_dedup's, replace_dedup's and push_dedup's.
type dedupArgs struct {
	Queue string `json:"queue"`
	dedupJobArg
	Jobs         []dedupJobArg `json:"jobs"`
	Target       string        `json:"target"`
	Mode         string        `json:"mode"`
	TTLMS        int64         `json:"ttl_ms"`
	HoldDead     bool          `json:"hold_dead"`
	HoldResult   bool          `json:"hold_result"`
	DelayMS      int64         `json:"delay_ms"`
	Attempts     int           `json:"attempts"`
	Backoff      string        `json:"backoff"`
	BackoffMS    int64         `json:"backoff_ms"`
	BackoffMaxMS int64         `json:"backoff_max_ms"`
	EventsMax    int           `json:"events_max"`
}

// options are the SDK's push options of a: the op's events_max (0: no
// event) is the policy's (negative: none).
func (a dedupArgs) options() ([]emq.PushOption, error) {
	if a.Mode == "" {
		return nil, &opError{kind: "argument", err: fmt.Errorf("%w: no mode", emq.ErrArgument)}
	}
	events := a.EventsMax
	if events == 0 {
		events = -1
	}
	p := emq.DedupPolicy{Mode: emq.Dedup(a.Mode), TTL: ms(a.TTLMS), HoldWhileDead: a.HoldDead, HoldWhileResultKept: a.HoldResult, EventsMax: events}
	b := emq.BackoffPolicy{Type: emq.Backoff(a.Backoff), Delay: ms(a.BackoffMS), Max: ms(a.BackoffMaxMS)}
	return []emq.PushOption{emq.WithDedup(p), emq.Delay(ms(a.DelayMS)), emq.Attempts(a.Attempts), emq.WithBackoff(b)}, nil
}

func dedupOut(r emq.DedupResult) map[string]any {
	at := int64(0)
	if !r.RunAt.IsZero() {
		at = r.RunAt.UnixMilli()
	}
	return map[string]any{"outcome": string(r.Outcome), "id": r.ID.String(), "run_at_ms": at}
}

func dedupEntryOut(e emq.DedupEntry) map[string]any {
	s := func(id emq.ID) string {
		if id.IsZero() {
			return ""
		}
		return id.String()
	}
	exp := int64(0)
	if !e.Expires.IsZero() {
		exp = e.Expires.UnixMilli()
	}
	return map[string]any{"holder": s(e.Holder), "mode": string(e.Mode), "expires_ms": exp, "held": e.Held, "state": string(e.State), "parked": s(e.Parked)}
}
