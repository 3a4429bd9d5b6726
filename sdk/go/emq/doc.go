// Package emq is the Go SDK of EchoMQ, a job queue on Redis or Valkey whose
// wire contract — keys, Lua scripts, ids, refusals, the version fence — is
// written down in protocol.yaml.
//
// # Quickstart
//
// Connect, name a queue, push jobs, and run a worker over them (the
// package example runs this against a real server):
//
//	c, err := emq.Connect(ctx, emq.Options{Addr: "127.0.0.1:6379"})
//	if err != nil {
//		return err // ErrConnection: no server; *FenceError: another major owns the keyspace
//	}
//	defer c.Close()
//	q, err := c.Queue("emails")
//	id, err := c.Mint(emq.WorkKind)
//	ok, err := q.Push(ctx, id, []byte("ada@example.com"))
//
//	w, err := emq.NewWorker(q, func(ctx context.Context, job emq.Job) error {
//		return send(ctx, job.Payload) // nil completes the job; an error retries it
//	}, emq.WorkerOptions{Concurrency: 8})
//	err = w.Run(ctx) // until ctx is done, then a clean shutdown
//
// Typed payloads are JSON values: [NewJSONQueue] gives a queue a typed
// Push, and [JSON] adapts a handler of [TypedJob] values.
//
// # The API a queue user needs
//
// Most programs use only these; they are listed here apart from the
// token-level calls below, which share the [Queue] type's method list:
//
//   - The client: [Connect] (or [Observe] for read-only tools), [Options],
//     [Client.Queue], [Client.Mint], [Client.Close].
//   - Producing: [Queue.Push], [Queue.PushBatch], [Queue.EnqueueAt] (run
//     later), [Queue.PushDurable] and [Queue.PushBatchDurable] (wait for
//     replicas), and the typed [JSONQueue]; since 2.4.0 [Queue.PushWith],
//     [Queue.PushBatchWith] and [Queue.AddMany] take a relative [Delay] and
//     a retry policy of the job's own ([Attempts], [WithBackoff]).
//   - Consuming: [NewWorker], [Worker.Run], [Handler], [WorkerOptions],
//     [Permanent] (bury instead of retry), [JSON] (typed handlers); since
//     2.4.0 [NewResultWorker] with a [ResultHandler] (results kept as
//     WorkerOptions.KeepResults says), [ReportProgress] from a handler,
//     [ErrPermanent] and WorkerOptions.BackoffPolicy.
//   - Inspecting: [Queue.Get] ([JobInfo]), [Queue.Sizes], [Queue.Size],
//     [Queue.PendingSize], [Queue.Page] and [Queue.PageEntries] (walk a set
//     with a [Cursor]), [Queue.Revive], [Queue.ReviveAll] and [Queue.Purge]
//     (dead jobs), [Client.ListQueues], [Client.FindJob].
//   - Metrics and printing: [Tally] (or any [Metrics]), and the String
//     methods of [JobInfo], [Job] and [Tally].
//
// # Connecting
//
// Connect opens a client from an address, a URL or any rueidis option, and
// fences the keyspace before returning: a fresh keyspace is claimed for
// this version, an older minor of this major is raised, and a keyspace of
// another major, or one running another script bundle under this version,
// is refused with a *FenceError or a *BundleError. The client fences again
// after every reconnect, and a call whose command could not be sent (the
// server restarting, say) waits for a connection within its context.
//
//	c, err := emq.Connect(ctx, emq.Options{Addr: "127.0.0.1:6379"})
//	c, err := emq.Connect(ctx, emq.Options{URL: "rediss://app:secret@redis.internal:6380/0"})
//	c, err := emq.Connect(ctx, emq.Options{Addrs: clusterSeeds, Redis: rueidis.ClientOption{...}})
//	defer c.Close()
//
// # Producing
//
// A queue is a name checked against the protocol's grammar before any
// command is sent (ErrQueueName). A job is an id the client mints (a
// branded snowflake of WorkKind: its mint time lives in the id) and a
// payload of bytes. Push admits one job and wakes an idle worker;
// concurrent pushes to one queue of a client are coalesced into push_many
// calls, each caller still answered on its own (Options.PushLinger,
// PushMaxBatch, DisableCoalescing). PushBatch admits many in one round
// trip; a duplicate id reports false and changes nothing, so a push is safe
// to retry. PushDurable and PushBatchDurable
// also wait for replicas to acknowledge (Durability).
//
// # Scheduling
//
// A queue's job schedulers (echomq 2.6.0) fire jobs on a schedule: a cron
// expression in an IANA time zone (ParseCron) or an interval (Schedule).
// UpsertScheduler stores one by an id of the caller's, keeping its next
// slot when its schedule is unchanged, so a fleet upserts its schedulers
// at every start; WithMissed, WithBackfill and WithGrace say what happens
// to the slots missed while no runner ran, WithTemplate gives the runs'
// payload. RunSchedulers fires them, in any number of processes: each
// slot's run is created once (FireDue is one tick; PlanScheduler and
// FireSchedulers are its parts), as an ordinary job a Worker runs.
// Schedulers, ListSchedulers, PauseSchedulers, ResumeSchedulers,
// RemoveSchedulers and NextRuns serve operators and dashboards.
//
// # Consuming
//
// A Worker runs a Handler over a queue's jobs with the concurrency, lease
// and retry policy of WorkerOptions: it claims in batches, extends leases
// while handlers run, retries a failed job with backoff (Permanent buries
// it at once), buries it after MaxAttempts, keeps the queue maintained
// (scheduled jobs promoted, expired leases reaped) and, when Run's context
// is done, shuts down without losing a job.
//
// # Inspecting
//
// Get reads one job's row (JobInfo), Size and Sizes count a queue's sets,
// Page and PageEntries walk a set newest first with a stable Cursor,
// Revive, ReviveAll and Purge act on dead jobs. Observe opens a client
// that reads a keyspace without fencing it, for dashboards and operators
// (the emq command line and its dashboard are built on it).
//
// # Token-level calls
//
// A Worker is built on calls that take one step of a job's life each, with
// the job's fencing token; they are public for tools, tests and workers of
// your own, and most programs never call them:
//
//   - Claiming: [Queue.Claim], [Queue.ClaimMany], [Queue.Head] with
//     [Queue.ClaimIDs].
//   - Settling a claimed job: [Queue.Extend], [Queue.Complete],
//     [Queue.CompleteClaim] and [Queue.CompleteClaimIDs] (complete and claim
//     the next in one call), [Queue.Retry], [Queue.Bury].
//   - Maintenance: [Queue.Promote], [Queue.Reap], [Queue.PromoteIDs],
//     [Queue.ReapIDs], [Queue.RunNow].
//   - The 2.4.0 settlements a Worker makes: [Queue.CompleteResult],
//     [Queue.Fail], [Queue.ReapRecordedIDs], [Queue.ReportProgress],
//     [Queue.ReviveRecorded], [Queue.ForgetIDs].
//   - Raw pushes: [Queue.Enqueue] (no doorbell), [Queue.PushMany].
//   - Reading the raw sets: [Queue.Browse], [Queue.Oldest], [Queue.Due],
//     [Queue.CountUpTo], [Client.Stats], [Client.ServerTime].
//
// A token-level call that is not idempotent (a claim, a settlement) is
// never sent twice once written: after a lost connection it fails with
// ErrConnection and the caller decides (see ErrConnection).
//
// # Pausing, capping and rate limiting a queue
//
// [Queue.Pause], [Queue.Resume] and [Queue.SetConcurrency] set a queue's
// policy (echomq 2.7.0), and [Queue.SetRateLimit] its rate limit (2.8.0:
// at most n of its jobs started in any window of a period, paced), which
// every worker of every client honours from its next claim; [Queue.Policy]
// reads it ([QueuePolicy]). A queue's first policy lays a tripwire at its
// active key: its leased jobs move to the running set and every client
// older than 2.7 is refused on the queue (WRONGTYPE, nothing written);
// while it has a rate limit, a 2.7 client's claims are refused too
// (ErrPolicy) while its settles go through. The calls this package makes
// of the 2.6 claim, settle, cancel and dedup scripts run their twins,
// which serve both layouts (ClaimIDs runs claim_rate_ids, CompleteResult
// complete_rate_ids, which honour a rate limit too, Fail fail_policy, ReapRecordedIDs
// reap_policy_ids, Extend extend_policy, CancelIDs cancel_policy_ids, the
// dedup calls add_dedup_policy, replace_dedup_policy,
// dedup_policy_entries and sweep_dedup_policy); the older token-level
// calls (Claim, Complete, Retry, Bury, Reap, CompleteClaim,
// CompleteClaimIDs, ReapIDs, RetryFailed, BuryFailed, ReapFailedIDs) keep
// their scripts and fail on a queue with a policy with a *PolicyError
// (ErrPolicy) naming the call to use. Inspection reads the running set
// for the active set of such a queue.
//
// # Errors
//
// Every refusal of a script is a *ClassError whose wire class has a
// sentinel: errors.Is(err, ErrStale) after a lost lease, errors.Is(err,
// ErrKind) for an id of the wrong kind. Bad input is refused before any
// command is sent with an error wrapping ErrArgument, ErrID or
// ErrQueueName. A batch's partial failure is a *BatchError (errors.Is
// finds a class anywhere in it); the version fence's refusal is a
// *FenceError (ErrVersionFence), a bundle mismatch a *BundleError
// (ErrBundle), missing replica acknowledgements a *DurabilityError. All
// errors wrap their causes for errors.Is and errors.As.
//
// # Two layers
//
// This package is the idiomatic layer, written by hand. Under it is the
// wire layer, package github.com/echomq/echomq/sdk/go/emq/wire, generated
// by emqgen from protocol.yaml: the version and wire constants, the id
// canon, key builders, one sentinel per wire class, one typed call per
// Lua script (wire.PushCall, wire.ClaimCall, ... with Exec and a Decode
// function) and the manifest's probes. The idiomatic layer spells no
// protocol literal; it uses the wire layer's names, and re-exports (in
// wire_gen.go, generated too) the few an application needs: ID, Kind,
// Set, State, ClassError, the kinds, sets and states, Version, the
// sentinel errors, ParseID, MustParseID, NewID and ValidateQueueName.
// These are the wire names themselves — emq.ID is wire.ID and emq.ErrStale
// is wire.ErrStale — so values pass between the layers unchanged. Import
// package wire to call a script by hand, build a key or test the protocol;
// an application needs only this package.
//
// Both packages are the public API that a release records: removing an
// exported name of either, or changing its signature, is a major change
// of the protocol (emqgen check).
package emq
