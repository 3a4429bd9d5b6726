// The EchoMQ TypeScript SDK: connect() to a fenced keyspace, a Queue per
// queue name, a Worker per handler. This entry point is the idiomatic API
// only; the generated wire layer underneath (keys, script descriptors,
// generated calls, id codec, probes) is the subpath "@echomq/sdk/wire"
// (also at "@echomq/sdk/gen", its older name).
//
// From the wire layer, the root re-exports by name only what the idiomatic
// API's own declarations use: the errors its calls throw, the vocabulary
// words its options and results carry, and the types an adapter
// implements.
export {
  IdError,
  KindError,
  PolicyError,
  QueueNameError,
  ReplyError,
  StaleError,
  WireError,
} from "./gen/index.js";
export {
  Admission,
  Backoff,
  Dedup,
  Event,
  FailureClass,
  Firing,
  KIND_ARC,
  KIND_JOB,
  KIND_ORD,
  Missed,
  SET_ACTIVE,
  SET_DEAD,
  SET_PENDING,
  SET_SCHEDULE,
  STATE_ACTIVE,
  STATE_DEAD,
  STATE_PENDING,
  STATE_SCHEDULED,
  isEvent,
  type Kind,
  type SetName,
  type State,
} from "./gen/index.js";
export type { Probe, RedisArg, ScriptRunner, Settled } from "./gen/index.js";
export {
  NodeRedisAdapter,
  type NodeRedisOptions,
  type RedisAdapter,
  type Subscription,
} from "./adapter.js";
export {
  ClusterAdapter,
  routingKey,
  type ClusterAdapterOptions,
  type ClusterConnectOptions,
  type ClusterNodeOptions,
} from "./cluster.js";
export {
  ArgumentError,
  BundleError,
  CancelledError,
  ConnectionError,
  CONNECTION_ERROR_CODE,
  DeadlineError,
  DedupContentionError,
  FenceError,
  JobTimeoutError,
  LeaseLostError,
  NoNodeError,
  PayloadTooLargeError,
  PolicyFloorError,
  ShutdownError,
} from "./errors.js";
export {
  RATE_LIMIT_MAX,
  RATE_PERIOD_MAX_MS,
  type PolicyOptions,
  type QueuePolicy,
} from "./policy.js";
export {
  COUNTERS,
  Tally,
  noMetrics,
  stderrLogger,
  type Counter,
  type Logger,
  type Metrics,
} from "./metrics.js";
export { judgeVersionRecord, type Verdict } from "./verdict.js";
export {
  Client,
  checkVersionRecord,
  connect,
  DEFAULT_EVENTS_MAX_LEN,
  type CallOptions,
  type CoalesceOptions,
  type ConnectOptions,
} from "./client.js";
export {
  PEEK_ATTEMPTS,
  Queue,
  type BatchResult,
  type Job,
  type JobInfo,
  type JobLookup,
  type NewJob,
  type Page,
  type Payload,
} from "./queue.js";
export {
  COUNTERS_MINUTES_MAX,
  EVENTS_PAGE_MAX,
  PROGRESS_MAX_BYTES,
  QueueEvents,
  RESULT_MAX_BYTES,
  type AddOptions,
  type AddResult,
  type BackoffOptions,
  type Completion,
  type CompleteResultOptions,
  type EventsOptions,
  type EventsWriteOptions,
  type FailOptions,
  type FailResult,
  type JobOptions,
  type JobOutput,
  type KeepOptions,
  type PushOptions,
  type QueueCounters,
  type QueueEvent,
  type SettleCounts,
} from "./outputs.js";
export {
  DEDUP_REPLACE_TRIES,
  DEDUP_SWEEP_MAX,
  type AddDedupOptions,
  type CancelResult,
  type CancelledJob,
  type DedupBatchOptions,
  type DedupBatchResult,
  type DedupEntry,
  type DedupOptions,
  type DedupPolicy,
  type DedupPushOptions,
  type DedupResult,
  type DedupSweep,
  type ReplaceDedupOptions,
} from "./dedup.js";
export {
  CRON_MAX_BYTES,
  CRON_SEARCH_MS,
  Cron,
  Interval,
  TZ_MAX_BYTES,
  parseCron,
  type Schedule,
} from "./cron.js";
export {
  BACKFILL_MAX,
  DEFAULT_DUE_COUNT,
  DEFAULT_GRACE_MS,
  DEFAULT_MISSED,
  DEFAULT_SCHEDULER_POLL_MS,
  PLAN_CAP,
  SCHEDULERS_PAGE_MAX,
  SCHEDULER_ID_MAX_BYTES,
  TEMPLATE_MAX_BYTES,
  nextRuns,
  plan,
  scheduleOf,
  type FireDueOptions,
  type FireEntry,
  type FiredRun,
  type PlanRecord,
  type PlannedEntry,
  type RunSchedulersOptions,
  type SchedulerRecord,
  type SchedulerSpec,
  type SchedulerUpsert,
} from "./schedulers.js";
export {
  CodecError,
  TypedQueue,
  json,
  jsonCodec,
  type Codec,
  type NewTypedJob,
  type QueueOptions,
  type TypedActiveJob,
  type TypedHandler,
  type TypedResultHandler,
  type TypedJob,
  type TypedJobInfo,
} from "./codec.js";
export {
  ProbeTranscript,
  SCRATCH_PREFIX,
  runProbes,
  type ProbeResult,
} from "./probe.js";
export {
  decodeFailedAttempts,
  defaultWorkerName,
  type FailedAttempt,
  type Failure,
} from "./failures.js";
export {
  PermanentError,
  UnrecoverableError,
  Worker,
  exponentialBackoff,
  permanent,
  type ActiveJob,
  type Handler,
  type ResultHandler,
  type WorkerOptions,
} from "./worker.js";

/** The SDK's own version (the package's). */
export const SDK_VERSION = "0.1.0";
