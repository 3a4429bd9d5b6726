// Queue: the bus surface of one queue. The caller never builds a key or
// names a script.

import {
  ACTIVE_TRIPWIRE_FLOOR,
  ACTIVE_TRIPWIRE_TYPE,
  KEY_BUNDLE,
  PolicyError,
  SCRIPT_BURY_FAILED,
  SCRIPT_CLAIM,
  SCRIPT_CLAIM_RATE_IDS,
  SCRIPT_COMPLETE,
  SCRIPT_COMPLETE_CLAIM_IDS,
  SCRIPT_COMPLETE_RATE_IDS,
  SCRIPT_FAIL_POLICY,
  SCRIPT_REAP,
  SCRIPT_REAP_FAILED_IDS,
  SCRIPT_REAP_IDS,
  SCRIPT_REAP_POLICY_IDS,
  SCRIPT_RETRY_FAILED,
  configurePolicyExec,
  decodeConfigurePolicy,
  readPolicyExec,
  decodeReadPolicy,
  type Script,
  FIELD_PAYLOAD,
  FIELD_STATE,
  FIELD_TOKEN,
  QueueKeys,
  PUSH_ENQUEUED,
  WORK_KIND,
  PURGE_PURGED,
  ENQUEUE_ENQUEUED,
  ENQUEUE_AT_ENQUEUED,
  SETS,
  SET_ACTIVE,
  isSetName,
  isState,
  isDedup,
  parseId,
  pushExec,
  runBuryPolicy,
  runClaim,
  runClaimRateIds,
  runCompleteClaimIds,
  runComplete,
  runEnqueue,
  runEnqueueAt,
  runExtendPolicy,
  runPromote,
  runPromoteIds,
  runReap,
  runReapFailedIds,
  runBuryFailed,
  runForgetFailures,
  runRetryFailed,
  failuresExec,
  forgetFailuresExec,
  purgeExec,
  decodePurge,
  runReapIds,
  runRetryPolicy,
  runReviveRecorded,
  REVIVE_RECORDED_REVIVED,
  addManyExec,
  decodeAddMany,
  completeRateIdsExec,
  decodeCompleteRateIdsRecord,
  failPolicyExec,
  decodeFailPolicy,
  reapPolicyIdsExec,
  decodeReapPolicyIds,
  progressExec,
  decodeProgress,
  outputExec,
  decodeOutput,
  countersExec,
  decodeCounters,
  eventsExec,
  decodeEvents,
  forgetIdsExec,
  decodeForgetIds,
  addDedupPolicyExec,
  decodeAddDedupPolicy,
  replaceDedupPolicyExec,
  decodeReplaceDedupPolicy,
  dedupPolicyEntriesExec,
  decodeDedupPolicyEntries,
  sweepDedupPolicyExec,
  decodeSweepDedupPolicy,
  cancelPolicyIdsExec,
  decodeCancelPolicyIds,
  upsertSchedulerExec,
  decodeUpsertScheduler,
  removeSchedulersExec,
  decodeRemoveSchedulers,
  pauseSchedulersExec,
  decodePauseSchedulers,
  schedulerEntriesExec,
  decodeSchedulerEntries,
  listSchedulersExec,
  decodeListSchedulers,
  dueSchedulersExec,
  decodeDueSchedulers,
  fireSchedulersExec,
  decodeFireSchedulers,
  Firing,
  type SchedulerEntriesReply,
  Admission,
  type OutputReply,
  runRing,
  runScript,
  runScripts,
  ReplyError,
  scriptError,
  decodePush,
  decodePushMany,
  setIsLex,
  stateSet,
  type RedisArg,
  type ScriptExec,
  type Settled,
  type SetName,
  type State,
} from "./gen/index.js";
import {
  ArgumentError,
  BundleError,
  ConnectionError,
  DedupContentionError,
  FenceError,
  PolicyFloorError,
  RESEND_ATTEMPTS,
  isWaited,
  locate,
} from "./errors.js";
import {
  belowFloor,
  checkRateLimit,
  queuePolicyOf,
  type PolicyOptions,
  type QueuePolicy,
} from "./policy.js";
import {
  checkCall,
  resendPause,
  type CallOptions,
  type Client,
} from "./client.js";
import { Pusher, addManyExecOf, pushManyExecOf } from "./coalesce.js";
import {
  COUNTERS_MINUTES_MAX,
  EVENTS_PAGE_MAX,
  PROGRESS_MAX_BYTES,
  RESULT_MAX_BYTES,
  checkCount,
  checkOutputSize,
  hasJobOptions,
  isStreamId,
  outputBytes,
  policyKey,
  wireBackoff,
  wirePolicy,
  type AddOptions,
  type AddResult,
  type Completion,
  type CompleteResultOptions,
  type EventsOptions,
  type EventsWriteOptions,
  type FailOptions,
  type FailResult,
  type JobOutput,
  type PushOptions,
  type QueueCounters,
  type QueueEvent,
  type WirePolicy,
  QueueEvents,
} from "./outputs.js";
import {
  checkFailure,
  decodeFailedAttempts,
  defaultWorkerName,
  diedAt,
  type FailedAttempt,
  type Failure,
} from "./failures.js";
import { printable } from "./print.js";
import {
  DEDUP_REPLACE_TRIES,
  DEDUP_SWEEP_MAX,
  admittedNew,
  dedupKeyArg,
  wireDedup,
  type AddDedupOptions,
  type CancelResult,
  type CancelledJob,
  type DedupBatchOptions,
  type DedupBatchResult,
  type DedupEntry,
  type DedupPushOptions,
  type DedupResult,
  type DedupSweep,
  type ReplaceDedupOptions,
  type WireDedup,
} from "./dedup.js";
import type { Cron } from "./cron.js";
import {
  DEFAULT_DUE_COUNT,
  DEFAULT_SCHEDULER_POLL_MS,
  SCHEDULERS_PAGE_MAX,
  checkSchedulerId,
  moved,
  planWith,
  wireScheduler,
  type FireDueOptions,
  type FireEntry,
  type FiredRun,
  type RunSchedulersOptions,
  type SchedulerRecord,
  type SchedulerSpec,
  type SchedulerUpsert,
} from "./schedulers.js";

/** The claimed jobs of a reply, printing usefully. */
function jobs<J extends Job>(js: J[]): J[] {
  for (const j of js) {
    printable("Job", j);
  }
  return js;
}

/** A job's payload as given: bytes, or text (sent as UTF-8). */
export type Payload = Uint8Array | string;

/** A claimed job. */
export interface Job {
  /** The job's id. */
  readonly id: string;
  /**
   * The fencing token the claim minted; every later transition presents
   * it. It is the row's attempts: which claim of the job this is, 1 for the
   * first.
   */
  readonly token: number;
  /** The payload's bytes. */
  readonly payload: Buffer;
  /** The lease deadline on the server's clock, in Unix milliseconds. */
  readonly deadlineMs: number;
}

/** A job to admit. */
export interface NewJob {
  readonly id: string;
  readonly payload: Payload;
  /**
   * The job's deduplication key (echomq 2.5.0), for Queue.pushBatch with
   * DedupBatchOptions and Queue.addDedup: any string or bytes; unset or
   * empty admits the job without one. Other calls refuse a job with one.
   */
  readonly dedupKey?: string | Uint8Array;
}

/** The outcome of one job of a batch. */
export type BatchResult =
  | { readonly enqueued: boolean; readonly error?: undefined }
  | { readonly enqueued: false; readonly error: Error };

/** What inspection shows of one job. */
export interface JobInfo {
  readonly id: string;
  readonly state: State;
  /** The fencing token: how many times the job was claimed. */
  readonly attempts: number;
  readonly payload: Buffer;
  /**
   * The lease deadline of an active job and the run-at of a scheduled one
   * (server clock, Unix ms); undefined in the other states.
   */
  readonly atMs?: number;
  /**
   * The job's recorded failed attempts, oldest first (at most the last
   * 10; echomq 2.3.0): empty when none was recorded.
   */
  readonly failures: FailedAttempt[];
  /**
   * When a dead job died: the time of its last recorded attempt, when that
   * attempt is the row's attempts. null for a job that is not dead, and
   * for one whose last attempt was settled by a client that records
   * nothing (a 2.2 client): not recorded, never guessed.
   */
  readonly diedAt: Date | null;
  /**
   * The lease holder's last progress report (echomq 2.4.0;
   * Job.updateProgress in a handler, Queue.updateProgress): empty when none
   * was made.
   */
  readonly progress: Buffer;
}

/**
 * What Queue.lookup finds of one job: its row (found), or, once the row is
 * gone, the completion record a worker kept (echomq 2.4.0; null when none
 * was kept: never enqueued, completed without keeping, or dropped by the
 * retention).
 */
export type JobLookup =
  | { readonly found: true; readonly job: JobInfo }
  | { readonly found: false; readonly completed: Completion | null };

/** A page of a set: its ids, newest first, and the cursor of the next page ("" after the last). */
export interface Page {
  readonly ids: string[];
  readonly next: string;
}

/** A payload as sent: text as it is (the client encodes it), bytes copied, so that the caller may reuse its buffer at once. */
function arg(p: Payload): RedisArg {
  return typeof p === "string" ? p : Buffer.from(p);
}

/** Whether a call's options carry a deduplication (echomq 2.5.0). */
function withDedup<T extends { readonly dedup: unknown }>(
  opts: object | undefined,
): opts is T {
  return (
    opts !== undefined && (opts as { dedup?: unknown }).dedup !== undefined
  );
}

/** Refuses jobs with a deduplication key in a call that would admit them without it. */
function noDedupKeys(jobs: readonly NewJob[], call: string): void {
  jobs.forEach((j, i) => {
    const k = j.dedupKey;
    if (k !== undefined && k.length > 0) {
      throw new ArgumentError(
        "job " + i + " has a dedupKey, which " + call + " does not admit",
      );
    }
  });
}

/**
 * How many times a high-level claim, promote or reap reads the head of its
 * set again when another caller took every id it read in between.
 */
export const PEEK_ATTEMPTS = 3;

/** The ids of a ZRANGE reply. */
function idsOf(reply: unknown): string[] {
  const out: string[] = [];
  if (Array.isArray(reply)) {
    for (const m of reply) {
      out.push(str(m));
    }
  }
  return out;
}

/** The server's clock in Unix milliseconds, from a TIME reply. */
function timeMs(reply: unknown): number {
  const a = Array.isArray(reply) ? reply : [];
  const ms = Number(str(a[0])) * 1000 + Math.floor(Number(str(a[1])) / 1000);
  if (!Number.isFinite(ms)) {
    throw new Error("emq: TIME answered no time");
  }
  return ms;
}

function positiveInt(what: string, n: number): void {
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new ArgumentError(what + " " + n + " is not a positive integer");
  }
}

function nonNegativeInt(what: string, n: number): void {
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new ArgumentError(what + " " + n + " is not a non-negative integer");
  }
}

function deadlinePassed(opts: CallOptions | undefined): boolean {
  return opts?.deadline !== undefined && Date.now() >= opts.deadline;
}

function str(v: unknown): string {
  return Buffer.isBuffer(v) ? v.toString() : String(v);
}

function isNoScript(err: unknown): boolean {
  return err instanceof ReplyError && err.message.startsWith("NOSCRIPT");
}

/** The read-only form of a call's command (EVALSHA_RO, or EVAL_RO with the source). */
function roCommand(x: ScriptExec, source: boolean): RedisArg[] {
  return [
    source ? "EVAL_RO" : "EVALSHA_RO",
    source ? x.script.source : x.script.sha1,
    String(x.keys.length),
    ...x.keys,
    ...x.argv,
  ];
}

/**
 * Runs a read-only script with EVALSHA_RO, and EVAL_RO when the server
 * answers NOSCRIPT (so that a replica may serve it).
 */
async function runScriptRO(
  r: { send(args: readonly RedisArg[]): Promise<unknown> },
  x: ScriptExec,
): Promise<unknown> {
  try {
    return await r.send(roCommand(x, false));
  } catch (err) {
    if (!isNoScript(err)) {
      throw scriptError(x.script.name, err);
    }
  }
  try {
    return await r.send(roCommand(x, true));
  } catch (err) {
    throw scriptError(x.script.name, err);
  }
}

function completionOf(o: OutputReply): Completion | null {
  return o.completedAtMs > 0
    ? { atMs: o.completedAtMs, attempt: o.attempt, result: o.result }
    : null;
}

function abortable(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** A scheduler's record from a reading script's reply (id "" for an id with no scheduler). */
function schedulerRecord(r: SchedulerEntriesReply): SchedulerRecord {
  return printable("SchedulerRecord", {
    id: r.scheduler,
    cron: r.cron,
    tz: r.tz,
    everyMs: r.everyMs,
    startMs: r.startMs,
    missed: r.missed,
    backfill: r.backfill,
    graceMs: r.graceMs,
    template: r.template,
    paused: r.paused === 1,
    nextMs: r.nextMs,
    lastSlotMs: r.lastSlotMs,
    lastId: r.lastId,
    runs: r.runs,
    nowMs: r.nowMs,
  });
}

function pageCount(what: string, n: number): void {
  positiveInt(what, n);
  if (n > SCHEDULERS_PAGE_MAX) {
    throw new ArgumentError(what + " " + n + " is over " + SCHEDULERS_PAGE_MAX);
  }
}

/** The pause between failed ticks of a scheduler runner: doubling from 100 ms to 10 s, jittered by up to half. */
function tickBackoff(failures: number): number {
  const base = Math.min(10_000, 100 * 2 ** Math.min(failures - 1, 10));
  return Math.round(base / 2 + (Math.random() * base) / 2);
}

/** How many (scheduler, cron) pairs a queue handle remembers having warned about. */
const maxWarned = 4096;

/** How many push coalescers a client keeps before it drops the idle ones of job options. */
const maxPushers = 64;

/** The calls a legacy call's PolicyError names: they serve a queue with a policy (echomq 2.7.0; the claims honour a rate limit since 2.8.0). */
const INSTEAD_CLAIM =
  "claimMany or claimIds (" + SCRIPT_CLAIM_RATE_IDS.name + ")";
const INSTEAD_COMPLETE =
  "completeResultClaimIds (" + SCRIPT_COMPLETE_RATE_IDS.name + ")";
const INSTEAD_FAIL = "fail (" + SCRIPT_FAIL_POLICY.name + ")";
const INSTEAD_REAP =
  "reapRecordedIds or reapExpiredRecorded (" +
  SCRIPT_REAP_POLICY_IDS.name +
  ")";

/** Whether err is a WRONGTYPE error reply. */
function isWrongType(err: unknown): boolean {
  return err instanceof ReplyError && err.message.startsWith("WRONGTYPE");
}

/** A handle on one queue of a fenced keyspace. */
export class Queue {
  /** The client the queue belongs to. */
  readonly client: Client;
  /** The queue's keys. */
  readonly keys: QueueKeys;

  /** Use client.queue(name); a malformed name throws a QueueNameError. */
  constructor(client: Client, name: string) {
    this.client = client;
    this.keys = new QueueKeys(name);
  }

  /** The queue's name. */
  get name(): string {
    return this.keys.queue;
  }

  /** The redis type of the queue's active key: ACTIVE_TRIPWIRE_TYPE in the policy layout (echomq 2.7.0). */
  async #activeType(opts: CallOptions | undefined): Promise<string> {
    return str(
      await this.client.runnerFor(opts).send(["TYPE", this.keys.active]),
    );
  }

  /**
   * Runs f on the key of set s, and for active, on the running set when
   * f failed WRONGTYPE because the queue has a policy (echomq 2.7.0, the
   * policy layout: the active key holds the tripwire, a TYPE of it tells).
   * The classic layout costs what it did: f's commands alone.
   */
  async #onSet<T>(
    s: string,
    opts: CallOptions | undefined,
    f: (key: string) => Promise<T>,
  ): Promise<T> {
    const key = this.#setKey(s);
    try {
      return await f(key);
    } catch (err) {
      if (
        key !== this.keys.active ||
        !isWrongType(err) ||
        (await this.#activeType(opts)) !== ACTIVE_TRIPWIRE_TYPE
      ) {
        throw err;
      }
    }
    return f(this.keys.running);
  }

  /**
   * Runs a call of a script older than 2.7 that declares the active key
   * (a deprecated token-level call): on a queue with a policy it fails
   * WRONGTYPE before any write, which is turned into a PolicyError naming
   * the queue and the 2.7 call to use instead, once a TYPE of the active
   * key confirmed the tripwire is the cause. Any other error is thrown as
   * it is.
   */
  async #legacy<T>(
    script: Script,
    instead: string,
    opts: CallOptions | undefined,
    call: (r: ReturnType<Client["runnerFor"]>) => Promise<T>,
  ): Promise<T> {
    try {
      return await call(this.client.runnerFor(opts));
    } catch (err) {
      if (!isWrongType(err)) {
        throw err;
      }
      let t: string;
      try {
        t = await this.#activeType(opts);
      } catch {
        throw err;
      }
      if (t !== ACTIVE_TRIPWIRE_TYPE) {
        throw err;
      }
      const e = new PolicyError(
        "queue " +
          this.name +
          " has a policy (paused, a concurrency cap or a rate limit), which " +
          script.name +
          " cannot honour; use " +
          instead,
        script.name,
      );
      Object.defineProperty(e, "cause", { value: err, configurable: true });
      throw e;
    }
  }

  #counted(n: number): void {
    if (n > 0) {
      this.client.metrics.add("enqueued", this.name, n);
    }
  }

  #pushExec(id: string, payload: Payload): ScriptExec {
    const row = this.keys.row(id);
    this.client.checkPayload(payload);
    return pushExec({
      row,
      pending: this.keys.pending,
      wake: this.keys.wake,
      id,
      payload: arg(payload),
    });
  }

  /** One push script for one job, resent across reconnects. */
  #pushOne(
    id: string,
    payload: RedisArg,
    opts: CallOptions | undefined,
  ): Promise<boolean> {
    return this.client.resend(async () => {
      const x = this.#pushExec(id, payload);
      if (!this.client.isFenced) {
        await this.client.ensure(opts);
      }
      const ok =
        decodePush(await runScript(this.client.runnerFor(opts), x)) ===
        PUSH_ENQUEUED;
      this.#counted(ok ? 1 : 0);
      return ok;
    }, opts);
  }

  #pusher(policy?: WirePolicy): Pusher | undefined {
    const co = this.client.coalesce;
    if (co === undefined) {
      return undefined;
    }
    const key =
      policy === undefined ? this.name : this.name + "\n" + policyKey(policy);
    let p = this.client.pushers.get(key);
    if (p === undefined) {
      if (policy !== undefined && this.client.pushers.size >= maxPushers) {
        // Pushes of many distinct options (delays computed per job, say):
        // drop the idle coalescers of options, so that the map stays small.
        for (const [k, v] of this.client.pushers) {
          if (k.includes("\n") && v.idle) {
            this.client.pushers.delete(k);
          }
        }
      }
      p =
        policy === undefined
          ? new Pusher(this.client, this.keys, co, (id, payload, opts) =>
              this.#pushOne(id, payload, opts),
            )
          : new Pusher(
              this.client,
              this.keys,
              co,
              (id, payload, opts) => this.#addOne(id, payload, policy, opts),
              policy,
            );
      this.client.pushers.set(key, p);
    }
    return p;
  }

  /** One add_many call for one job, resent across reconnects. */
  #addOne(
    id: string,
    payload: RedisArg,
    policy: WirePolicy,
    opts: CallOptions | undefined,
  ): Promise<boolean> {
    const row = this.keys.row(id);
    const x = addManyExecOf(this.keys, policy, [id], [row], [payload]);
    return this.client.resend(async () => {
      if (!this.client.isFenced) {
        await this.client.ensure(opts);
      }
      const recs = decodeAddMany(
        await runScript(this.client.runnerFor(opts), x),
      );
      const ok = recs[0]?.enqueued === 1;
      this.#counted(ok ? 1 : 0);
      return ok;
    }, opts);
  }

  /**
   * Admits jobs in one add_many call (echomq 2.4.0), all with the job
   * options of opts: a delay (relative, server clock) schedules them, and
   * attempts or a backoff give each its own retry policy. The result holds,
   * per job in order, whether it was enqueued (false: a duplicate) and its
   * run-at (0 when admitted pending). An id of another kind than the work
   * kind refuses the whole call with a KindError and nothing is written.
   * Malformed ids, oversized payloads and options out of range throw before
   * anything is sent; no jobs sends nothing. It is resent across reconnects
   * like push.
   */
  async addMany(
    jobs: readonly NewJob[],
    opts?: AddOptions,
  ): Promise<AddResult[]> {
    noDedupKeys(jobs, "addMany");
    const policy = wirePolicy(opts);
    const rows: string[] = [];
    const entries: { id: string; payload: RedisArg }[] = [];
    jobs.forEach((j, i) => {
      try {
        rows.push(this.keys.row(j.id));
        this.client.checkPayload(j.payload);
      } catch (err) {
        locate(err, "job " + i);
        throw err;
      }
      entries.push({ id: j.id, payload: arg(j.payload) });
    });
    checkCall(opts);
    if (jobs.length === 0) {
      return [];
    }
    const x = addManyExec({
      pending: this.keys.pending,
      schedule: this.keys.schedule,
      wake: this.keys.wake,
      options: this.keys.options,
      rows,
      ...policy,
      entries,
    });
    return this.client.resend(async () => {
      if (!this.client.isFenced) {
        await this.client.ensure(opts);
      }
      const recs = decodeAddMany(
        await runScript(this.client.runnerFor(opts), x),
      );
      if (recs.length !== jobs.length) {
        throw new Error(
          "emq: add_many answered " +
            recs.length +
            " records for " +
            jobs.length +
            " jobs",
        );
      }
      const out = recs.map((r) => ({
        enqueued: r.enqueued === 1,
        runAtMs: r.runAtMs,
      }));
      this.#counted(out.filter((r) => r.enqueued).length);
      return out;
    }, opts);
  }

  /** The keys add_dedup and replace_dedup share. */
  #dedupKeys() {
    const k = this.keys;
    return {
      pending: k.pending,
      active: k.active,
      running: k.running,
      schedule: k.schedule,
      dead: k.dead,
      results: k.results,
      wake: k.wake,
      options: k.options,
      dedup: k.dedup,
    };
  }

  /**
   * Admits jobs in one add_dedup call (echomq 2.5.0; its twin
   * add_dedup_policy since 2.7.0, for a queue in either layout), each with its own
   * deduplication key (NewJob.dedupKey; none admits it as addMany does)
   * under opts.dedup's policy and opts' job options, and resolves per job
   * in order what the call did, as DedupResult says, or
   * Admission.deferred: the admission would replace the waiting job id,
   * whose row the call cannot declare (replaceDedup naming it does; push
   * and pushBatch do so by themselves). A job whose key an earlier job of
   * the call took meets it as a later push would. An id of another kind
   * than the work kind refuses the whole call with a KindError and nothing
   * is written. Malformed ids, oversized payloads and options out of range
   * throw before anything is sent; no jobs sends nothing. It is resent
   * across reconnects like push (a job the lost attempt admitted is then a
   * duplicate of itself).
   */
  async addDedup(
    jobs: readonly NewJob[],
    opts: AddDedupOptions,
  ): Promise<DedupResult[]> {
    const x = this.#addDedupExec(jobs, opts);
    checkCall(opts);
    if (x === undefined) {
      return [];
    }
    return this.client.resend(async () => {
      if (!this.client.isFenced) {
        await this.client.ensure(opts);
      }
      const out = this.#addDedupReply(
        await runScript(this.client.runnerFor(opts), x),
        jobs.length,
      );
      this.#counted(out.filter((r) => admittedNew(r.outcome)).length);
      return out;
    }, opts);
  }

  /** The add_dedup call of jobs, checked (undefined for no jobs). */
  #addDedupExec(
    jobs: readonly NewJob[],
    opts: AddDedupOptions,
    d: WireDedup = wireDedup(opts?.dedup),
  ): ScriptExec | undefined {
    const policy = wirePolicy(opts);
    const rows: string[] = [];
    const entries: { id: string; payload: RedisArg; dedupKey: RedisArg }[] = [];
    jobs.forEach((j, i) => {
      try {
        rows.push(this.keys.row(j.id));
        this.client.checkPayload(j.payload);
        entries.push({
          id: j.id,
          payload: arg(j.payload),
          dedupKey: dedupKeyArg(j.dedupKey),
        });
      } catch (err) {
        locate(err, "job " + i);
        throw err;
      }
    });
    if (jobs.length === 0) {
      return undefined;
    }
    return addDedupPolicyExec({
      ...this.#dedupKeys(),
      rows,
      ...d,
      ...policy,
      entries,
    });
  }

  #addDedupReply(reply: unknown, n: number): DedupResult[] {
    const recs = decodeAddDedupPolicy(reply);
    if (recs.length !== n) {
      throw new Error(
        "emq: add_dedup answered " +
          recs.length +
          " records for " +
          n +
          " jobs",
      );
    }
    return recs.map((r) => ({
      outcome: r.outcome,
      id: r.id,
      runAtMs: r.runAtMs,
    }));
  }

  /**
   * Admits one job under a deduplication key in one replace_dedup call
   * (replace_dedup_policy since 2.7.0, in either layout)
   * (echomq 2.5.0), declaring the row of target, the job it expects to
   * replace (addDedup's deferred id; the job's own id when it expects
   * none): Admission.replaced when it replaced target, deferred naming
   * another job when the key's holder is that one now, else as addDedup.
   * A replacement writes a replaced event (opts.eventsMaxLen, default the
   * client's). An empty key, a mode outside the vocabulary, throttle
   * without ttlMs or a negative number throws an ArgumentError before
   * anything is sent. It is resent across reconnects like push.
   */
  async replaceDedup(
    id: string,
    payload: Payload,
    key: string | Uint8Array,
    target: string,
    opts: ReplaceDedupOptions,
  ): Promise<DedupResult> {
    const x = this.#replaceExec(id, payload, key, target, opts);
    checkCall(opts);
    return this.client.resend(async () => {
      if (!this.client.isFenced) {
        await this.client.ensure(opts);
      }
      const r = decodeReplaceDedupPolicy(
        await runScript(this.client.runnerFor(opts), x),
      );
      this.#counted(admittedNew(r.outcome) ? 1 : 0);
      return { outcome: r.outcome, id: r.id, runAtMs: r.runAtMs };
    }, opts);
  }

  #replaceExec(
    id: string,
    payload: Payload,
    key: string | Uint8Array,
    target: string,
    opts: ReplaceDedupOptions,
    d: WireDedup = wireDedup(opts?.dedup),
  ): ScriptExec {
    const row = this.keys.row(id);
    const targetRow = this.keys.row(target);
    this.client.checkPayload(payload);
    const dedupKey = dedupKeyArg(key);
    if (dedupKey.length === 0) {
      throw new ArgumentError("a deduplication key is empty");
    }
    const eventsMax = opts.eventsMaxLen ?? this.client.eventsMaxLen;
    checkCount("events max length", eventsMax);
    return replaceDedupPolicyExec({
      ...this.#dedupKeys(),
      events: this.keys.events,
      row,
      targetRow,
      ...d,
      ...wirePolicy(opts),
      eventsMax,
      id,
      payload: arg(payload),
      dedupKey,
      target,
    });
  }

  /** push with opts.dedup: replace_dedup, first naming the job itself, then the job each deferred answer names. */
  async #pushDedup(
    id: string,
    payload: Payload,
    opts: DedupPushOptions,
  ): Promise<DedupResult> {
    const { key, ...policy } = opts.dedup;
    const o: ReplaceDedupOptions = { ...opts, dedup: policy };
    this.#replaceExec(id, payload, key, id, o); // checks before anything is sent
    checkCall(opts);
    return this.#replaceLoop(id, payload, key, id, o, 0);
  }

  /** replaceDedup naming target, again naming the job each deferred answer names, up to DEDUP_REPLACE_TRIES tries in all (tried of them made already). */
  async #replaceLoop(
    id: string,
    payload: Payload,
    key: string | Uint8Array,
    target: string,
    opts: ReplaceDedupOptions,
    tried: number,
  ): Promise<DedupResult> {
    for (let n = tried + 1; ; n++) {
      const r = await this.replaceDedup(id, payload, key, target, opts);
      if (r.outcome !== Admission.deferred) {
        return r;
      }
      if (n >= DEDUP_REPLACE_TRIES) {
        throw new DedupContentionError(id, r.id, n);
      }
      target = r.id;
    }
  }

  /**
   * pushBatch with opts.dedup: chunks of add_dedup (jobs of another kind
   * than the work kind each in a call of its own) in one round trip, then
   * each deferred job, in order, through replace_dedup.
   */
  async #pushBatchDedup(
    jobs: readonly NewJob[],
    opts: DedupBatchOptions,
  ): Promise<DedupBatchResult[]> {
    const d = wireDedup(opts.dedup);
    const max = this.client.coalesce?.maxBatch ?? 256;
    const kinds: boolean[] = [];
    jobs.forEach((j, i) => {
      try {
        kinds.push(parseId(j.id).kind === WORK_KIND);
      } catch (err) {
        locate(err, "job " + i);
        throw err;
      }
    });
    // Checks every job and the options before anything is sent.
    this.#addDedupExec(jobs, opts, d);
    checkCall(opts);
    if (jobs.length === 0) {
      return [];
    }
    let chunks: number[][] = [];
    let chunk: number[] = [];
    for (let i = 0; i < jobs.length; i++) {
      if (!kinds[i]) {
        chunks.push([i]);
        continue;
      }
      chunk.push(i);
      if (chunk.length === max) {
        chunks.push(chunk);
        chunk = [];
      }
    }
    if (chunk.length > 0) {
      chunks.push(chunk);
    }
    const out: (DedupBatchResult | undefined)[] = jobs.map(() => undefined);
    const exec = (idx: number[]) =>
      this.#addDedupExec(
        idx.map((i) => jobs[i]!),
        opts,
        d,
      )!;
    let lost: ConnectionError | undefined;
    for (let attempt = 0; chunks.length > 0; attempt++) {
      const calls = chunks;
      chunks = [];
      if (attempt > 0 && (opts.signal?.aborted || deadlinePassed(opts))) {
        break; // no resend after the caller's bound
      }
      let res: Settled[];
      try {
        if (!this.client.isFenced) {
          await this.client.ensure(opts);
        }
        res = await runScripts(this.client.runnerFor(opts), calls.map(exec));
      } catch (err) {
        if (
          !(err instanceof ConnectionError) ||
          isWaited(err) ||
          err === lost ||
          attempt + 1 >= RESEND_ATTEMPTS
        ) {
          throw err;
        }
        lost = err;
        chunks = calls;
        await resendPause(attempt + 2, opts.signal, opts.deadline);
        continue;
      }
      res.forEach((r, j) => {
        const idx = calls[j]!;
        let error: Error | undefined;
        if (r.ok) {
          try {
            const recs = this.#addDedupReply(r.value, idx.length);
            idx.forEach((i, k) => {
              const rec = recs[k]!;
              out[i] = { ...rec, enqueued: admittedNew(rec.outcome) };
            });
            return;
          } catch (err) {
            error = err as Error;
          }
        } else {
          error =
            r.error instanceof Error ? r.error : new Error(String(r.error));
          if (
            error instanceof ConnectionError &&
            !isWaited(error) &&
            attempt + 1 < RESEND_ATTEMPTS
          ) {
            chunks.push(idx);
            return;
          }
        }
        for (const i of idx) {
          out[i] = { enqueued: false, error };
        }
      });
      if (chunks.length > 0) {
        await resendPause(attempt + 2, opts.signal, opts.deadline);
      }
    }
    this.#counted(out.filter((r) => r?.enqueued).length);
    // The replacements the batch could not declare, in order: a later job
    // of a key meets what an earlier one did.
    const ro: ReplaceDedupOptions = opts;
    for (let i = 0; i < jobs.length; i++) {
      const r = out[i];
      if (r?.error !== undefined || r?.outcome !== Admission.deferred) {
        continue;
      }
      const j = jobs[i]!;
      try {
        const got = await this.#replaceLoop(
          j.id,
          j.payload,
          j.dedupKey ?? "",
          r.id,
          ro,
          1,
        );
        out[i] = { ...got, enqueued: admittedNew(got.outcome) };
      } catch (err) {
        out[i] = {
          enqueued: false,
          error: err instanceof Error ? err : new Error(String(err)),
        };
      }
    }
    return out.map(
      (r) =>
        r ?? {
          enqueued: false,
          error: new ConnectionError(
            "not resent: the call was aborted or its deadline passed",
          ),
        },
    );
  }

  /**
   * Admits a job under a deduplication key (echomq 2.5.0; opts.dedup: the
   * key, a mode of Dedup, ttlMs, holdDead, holdResult) and resolves what it
   * did: Admission.admitted (the job holds the key now), duplicate (id is
   * the holder's: nothing was admitted), replaced (the waiting holder, or
   * the job parked behind an active one, took the payload; id is that
   * job's) or parked (keep_last: admitted behind the active holder, it
   * becomes due once the holder is done). It is one replace_dedup call,
   * sent again naming the job to replace when the key's holder changed
   * meanwhile, up to DEDUP_REPLACE_TRIES tries (then a
   * DedupContentionError, nothing written); it never resolves deferred.
   * Job options (delay, attempts, backoff) apply as for a push; a
   * replacement writes a replaced event (opts.eventsMaxLen). A mode outside
   * the vocabulary, throttle without ttlMs, a negative number or an empty
   * key throws an ArgumentError before anything is sent. Not coalesced; it
   * is resent across reconnects like push.
   */
  async push(
    id: string,
    payload: Payload,
    opts: DedupPushOptions,
  ): Promise<DedupResult>;
  /**
   * Admits a job like enqueue and rings the queue's doorbell, so that an
   * idle worker starts it within milliseconds. It resolves false for a
   * duplicate id (the row is left untouched); an id of another kind than the
   * work kind is refused with a KindError. A push is idempotent while the
   * job exists: pushing an id again after an error never makes a second job
   * while the first is queued, running or dead. A push that failed in
   * transport is resent so (see Client.resend); should the lost attempt
   * have admitted the job, the resend resolves false.
   *
   * Concurrent pushes of one client to one queue are coalesced (unless
   * ConnectOptions.coalesce is false): they go out as one push_many call
   * per batch, sent when no batch of the queue is in flight or after
   * CoalesceOptions.lingerMs, and each push still resolves with its own
   * job's result. A batch refused as a whole is sent again job by job, so
   * each push gets its own refusal. A malformed id or an oversized payload
   * throws before anything is sent; opts.signal and opts.deadline are
   * checked before the job is sent and before every resend.
   *
   * Job options (echomq 2.4.0), as BullMQ's add(name, data, opts):
   * opts.delay (ms, relative, on the server's clock), opts.attempts and
   * opts.backoff. With any of them the job is admitted with add_many
   * (coalesced with the concurrent pushes of the same options only) and
   * its own attempts and backoff are applied instead of the worker's;
   * without, the push is what it was in 2.3. Options out of range throw an
   * ArgumentError before anything is sent.
   */
  async push(
    id: string,
    payload: Payload,
    opts?: PushOptions,
  ): Promise<boolean>;
  /** Admits a job (see the overload above: opts may carry job options). */
  async push(
    id: string,
    payload: Payload,
    opts?: CallOptions,
  ): Promise<boolean>;
  async push(
    id: string,
    payload: Payload,
    opts?: PushOptions | DedupPushOptions,
  ): Promise<boolean | DedupResult> {
    if (withDedup<DedupPushOptions>(opts)) {
      return this.#pushDedup(id, payload, opts);
    }
    const kind = parseId(id).kind;
    this.client.checkPayload(payload);
    if (hasJobOptions(opts)) {
      const policy = wirePolicy(opts);
      checkCall(opts);
      const p = kind === WORK_KIND ? this.#pusher(policy) : undefined;
      if (p === undefined) {
        return this.#addOne(id, arg(payload), policy, opts);
      }
      return p.push(id, this.keys.rowPrefix + id, arg(payload), opts);
    }
    checkCall(opts);
    const p = kind === WORK_KIND ? this.#pusher() : undefined;
    if (p === undefined) {
      return this.#pushOne(id, arg(payload), opts);
    }
    return p.push(id, this.keys.rowPrefix + id, arg(payload), opts);
  }

  /**
   * Admits jobs in one push_many call (the low-level call behind the
   * coalesced push): the result holds, per job in order, whether it was
   * enqueued (false: a duplicate). An id of another kind than the work kind
   * refuses the whole call with a KindError and nothing is written. A
   * malformed id or an oversized payload throws before anything is sent. It
   * is resent across reconnects like push.
   */
  async pushMany(
    jobs: readonly NewJob[],
    opts?: CallOptions,
  ): Promise<boolean[]> {
    noDedupKeys(jobs, "pushMany");
    const ids: string[] = [];
    const rows: string[] = [];
    const payloads: RedisArg[] = [];
    jobs.forEach((j, i) => {
      try {
        rows.push(this.keys.row(j.id));
        this.client.checkPayload(j.payload);
      } catch (err) {
        locate(err, "job " + i);
        throw err;
      }
      ids.push(j.id);
      payloads.push(arg(j.payload));
    });
    if (jobs.length === 0) {
      checkCall(opts);
      return [];
    }
    const x = pushManyExecOf(this.keys, ids, rows, payloads);
    return this.client.resend(async () => {
      if (!this.client.isFenced) {
        await this.client.ensure(opts);
      }
      const recs = decodePushMany(
        await runScript(this.client.runnerFor(opts), x),
      );
      if (recs.length !== jobs.length) {
        throw new Error(
          "emq: push_many answered " +
            recs.length +
            " records for " +
            jobs.length +
            " jobs",
        );
      }
      const out = recs.map((r) => r.enqueued === 1);
      this.#counted(out.filter((b) => b).length);
      return out;
    }, opts);
  }

  /**
   * Admits many jobs with deduplication (echomq 2.5.0): each job under its
   * own NewJob.dedupKey (none: admitted as addMany admits it) with
   * opts.dedup's policy and opts' job options, in chunks of add_dedup
   * (CoalesceOptions.maxBatch jobs; a job of another kind than the work
   * kind in a call of its own, refused with a KindError) pipelined in one
   * round trip, in order: a job whose key an earlier job took meets it as
   * a later push would. A job the batch could not replace by itself (a
   * debounce or keep_last key whose holder waits) is sent through
   * replace_dedup, as push does. The result tells, per job, what it did
   * (DedupResult; enqueued when a new job was admitted or parked) or why it
   * failed; the others still took effect. Checks, resends and bounds are
   * pushBatch's.
   */
  async pushBatch(
    jobs: readonly NewJob[],
    opts: DedupBatchOptions,
  ): Promise<DedupBatchResult[]>;
  /**
   * Admits many jobs in one pipelined round trip: chunks of push_many (of
   * CoalesceOptions.maxBatch jobs; jobs of another kind than the work kind
   * each in a push of its own, refused with a KindError). Malformed ids and
   * oversized payloads throw before anything is sent. The result tells, per
   * job, whether it was enqueued (false: a duplicate) or why it failed; the
   * others still took effect. A chunk refused as a whole is sent again job
   * by job; a chunk that failed in transport is resent (see Client.resend),
   * within opts.
   */
  async pushBatch(
    jobs: readonly NewJob[],
    opts?: CallOptions,
  ): Promise<BatchResult[]>;
  async pushBatch(
    jobs: readonly NewJob[],
    opts?: CallOptions | DedupBatchOptions,
  ): Promise<BatchResult[] | DedupBatchResult[]> {
    if (withDedup<DedupBatchOptions>(opts)) {
      return this.#pushBatchDedup(jobs, opts);
    }
    noDedupKeys(jobs, "pushBatch without opts.dedup");
    const max = this.client.coalesce?.maxBatch ?? 256;
    const rows: string[] = [];
    const kinds: boolean[] = [];
    const payloads: RedisArg[] = [];
    jobs.forEach((j, i) => {
      try {
        kinds.push(parseId(j.id).kind === WORK_KIND);
        rows.push(this.keys.rowPrefix + j.id);
        this.client.checkPayload(j.payload);
      } catch (err) {
        locate(err, "job " + i);
        throw err;
      }
      payloads.push(arg(j.payload));
    });
    checkCall(opts);
    if (jobs.length === 0) {
      return [];
    }
    // The calls: chunks of work-kind jobs, each other job alone.
    interface Call {
      readonly idx: number[];
      readonly many: boolean;
    }
    let todo: Call[] = [];
    let chunk: number[] = [];
    for (let i = 0; i < jobs.length; i++) {
      if (!kinds[i]) {
        todo.push({ idx: [i], many: false });
        continue;
      }
      chunk.push(i);
      if (chunk.length === max) {
        todo.push({ idx: chunk, many: true });
        chunk = [];
      }
    }
    if (chunk.length > 0) {
      todo.push({ idx: chunk, many: true });
    }
    const exec = (call: Call): ScriptExec => {
      if (!call.many) {
        const i = call.idx[0]!;
        return pushExec({
          row: rows[i]!,
          pending: this.keys.pending,
          wake: this.keys.wake,
          id: jobs[i]!.id,
          payload: payloads[i]!,
        });
      }
      return pushManyExecOf(
        this.keys,
        call.idx.map((i) => jobs[i]!.id),
        call.idx.map((i) => rows[i]!),
        call.idx.map((i) => payloads[i]!),
      );
    };
    const out: BatchResult[] = jobs.map(() => ({ enqueued: false }));
    const fail = (call: Call, error: Error) => {
      for (const i of call.idx) {
        out[i] = { enqueued: false, error };
      }
    };
    let n = 0;
    let lost: ConnectionError | undefined;
    for (let attempt = 0; todo.length > 0; attempt++) {
      const calls = todo;
      todo = [];
      let res: Settled[];
      try {
        if (
          attempt > 0 &&
          lost !== undefined &&
          (opts?.signal?.aborted || deadlinePassed(opts))
        ) {
          throw lost; // no resend after the caller's bound
        }
        if (!this.client.isFenced) {
          await this.client.ensure(opts);
        }
        res = await runScripts(this.client.runnerFor(opts), calls.map(exec));
      } catch (err) {
        if (
          !(err instanceof ConnectionError) ||
          isWaited(err) ||
          err === lost ||
          attempt + 1 >= RESEND_ATTEMPTS
        ) {
          throw err;
        }
        lost = err;
        todo = calls;
        await resendPause(attempt + 2, opts?.signal, opts?.deadline);
        continue;
      }
      res.forEach((r, j) => {
        const call = calls[j]!;
        if (!r.ok) {
          const error =
            r.error instanceof Error ? r.error : new Error(String(r.error));
          if (error instanceof ConnectionError) {
            if (attempt + 1 < RESEND_ATTEMPTS && !isWaited(error)) {
              todo.push(call);
            } else {
              fail(call, error);
            }
          } else if (
            call.many &&
            !(error instanceof FenceError || error instanceof BundleError)
          ) {
            // Refused as a whole: each job on its own gets its own answer.
            for (const i of call.idx) {
              todo.push({ idx: [i], many: false });
            }
          } else {
            fail(call, error);
          }
          return;
        }
        try {
          if (call.many) {
            const recs = decodePushMany(r.value);
            if (recs.length !== call.idx.length) {
              throw new Error(
                "emq: push_many answered " +
                  recs.length +
                  " records for " +
                  call.idx.length +
                  " jobs",
              );
            }
            call.idx.forEach((i, k) => {
              const ok = recs[k]!.enqueued === 1;
              n += ok ? 1 : 0;
              out[i] = { enqueued: ok };
            });
          } else {
            const ok = decodePush(r.value) === PUSH_ENQUEUED;
            n += ok ? 1 : 0;
            out[call.idx[0]!] = { enqueued: ok };
          }
        } catch (err) {
          fail(call, err as Error);
        }
      });
      if (todo.length > 0 && todo.some((c) => c.many || attempt > 0)) {
        await resendPause(attempt + 2, opts?.signal, opts?.deadline);
      }
      if (opts?.signal?.aborted || deadlinePassed(opts)) {
        for (const call of todo) {
          fail(
            call,
            new ConnectionError(
              "not resent: the call was aborted or its deadline passed",
            ),
          );
        }
        todo = [];
      }
    }
    this.#counted(n);
    // Nothing admitted and every job lost to the connection: the call as a
    // whole failed, as push and pushMany do.
    const first = out[0]?.error;
    if (
      first instanceof ConnectionError &&
      out.every((r) => r.error instanceof ConnectionError)
    ) {
      throw first;
    }
    return out;
  }

  /**
   * Admits a job with id and payload, without ringing the doorbell. It
   * resolves false when a job with this id already exists; an id of another
   * kind than the work kind is refused with a KindError.
   */
  async enqueue(
    id: string,
    payload: Payload,
    opts?: CallOptions,
  ): Promise<boolean> {
    return this.client.resend(async () => {
      const row = this.keys.row(id);
      this.client.checkPayload(payload);
      await this.client.ensure(opts);
      const n = await runEnqueue(this.client.runnerFor(opts), {
        row,
        pending: this.keys.pending,
        id,
        payload: arg(payload),
      });
      this.#counted(n === ENQUEUE_ENQUEUED ? 1 : 0);
      return n === ENQUEUE_ENQUEUED;
    }, opts);
  }

  /**
   * Admits a job that becomes claimable at runAtMs (server clock, Unix
   * milliseconds), once maintenance promotes it. Replies and refusals are
   * enqueue's.
   */
  async enqueueAt(
    id: string,
    payload: Payload,
    runAtMs: number,
    opts?: CallOptions,
  ): Promise<boolean> {
    return this.client.resend(async () => {
      const row = this.keys.row(id);
      this.client.checkPayload(payload);
      nonNegativeInt("run-at", runAtMs);
      await this.client.ensure(opts);
      const n = await runEnqueueAt(this.client.runnerFor(opts), {
        row,
        schedule: this.keys.schedule,
        id,
        payload: arg(payload),
        runAtMs,
      });
      this.#counted(n === ENQUEUE_AT_ENQUEUED ? 1 : 0);
      return n === ENQUEUE_AT_ENQUEUED;
    }, opts);
  }

  /**
   * Returns up to n ids at the head of set s, in rank order: for pending
   * the oldest first (FIFO), for schedule the earliest run-at first, for
   * active the earliest lease deadline first, for dead the oldest first.
   * These are the ids claimIds, promoteIds and reapIds take. An unknown set
   * or an n under 1 throws an ArgumentError before anything is sent; a
   * member that is not a well-formed id (a foreign writer's) throws an
   * IdError. Read-only, it is resent across reconnects within opts.
   */
  async head(s: SetName, n: number, opts?: CallOptions): Promise<string[]> {
    return this.client.resend(async () => {
      this.#setKey(s);
      positiveInt("head size", n);
      if (!this.client.isFenced) {
        await this.client.ensure(opts);
      }
      const ids = await this.#onSet(s, opts, (key) => this.peek(key, n, opts));
      for (const id of ids) {
        parseId(id);
      }
      return ids;
    }, opts);
  }

  /** @internal Reads up to n ids at the head of the set at key (ZRANGE key 0 n-1), unchecked. */
  async peek(key: string, n: number, opts?: CallOptions): Promise<string[]> {
    return idsOf(
      await this.client
        .runnerFor(opts)
        .send(["ZRANGE", key, "0", String(n - 1)]),
    );
  }

  /**
   * Reads up to n ids at the head of the scored set at key whose score has
   * come on the server's clock (in one round trip with the server's TIME).
   * more tells whether the head held n ids.
   */
  async #due(
    key: string,
    n: number,
    opts: CallOptions | undefined,
  ): Promise<{ ids: string[]; more: boolean }> {
    const [z, t] = await this.client
      .runnerFor(opts)
      .sendMany([["ZRANGE", key, "0", String(n - 1), "WITHSCORES"], ["TIME"]]);
    if (!z!.ok) {
      throw z!.error;
    }
    if (!t!.ok) {
      throw t!.error;
    }
    const now = timeMs(t!.value);
    const flat = Array.isArray(z!.value) ? z!.value : [];
    const ids: string[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      if (Number(str(flat[i + 1])) <= now) {
        ids.push(str(flat[i]));
      }
    }
    return { ids, more: flat.length / 2 >= n };
  }

  /**
   * Leases the oldest pending job for leaseMs; null when nothing is
   * pending. The job's token must be presented to every later transition.
   * It runs the 2.0 claim script, which reaches the row through the row
   * prefix rather than KEYS (its 2.1 behaviour is frozen: it never rings
   * the doorbell); claimMany(leaseMs, 1) declares every key it touches.
   *
   * @deprecated Use claimMany(leaseMs, 1), or head(SET_PENDING, n) and
   * claimIds, which declare every key they touch (the 2.0 claim script
   * stays in the wire layer, runClaim).
   */
  async claim(leaseMs: number, opts?: CallOptions): Promise<Job | null> {
    positiveInt("lease", leaseMs);
    checkCall(opts);
    await this.client.ensure(opts);
    const j = await this.#legacy(SCRIPT_CLAIM, INSTEAD_CLAIM, opts, (r) =>
      runClaim(r, {
        pending: this.keys.pending,
        active: this.keys.active,
        prefix: this.keys.rowPrefix,
        leaseMs,
      }),
    );
    return j === null ? null : printable("Job", j);
  }

  /**
   * Leases up to count of the oldest pending jobs for leaseMs at once,
   * oldest first; empty when nothing is pending. It rings the doorbell again
   * when jobs remain. It reads the head of the pending set (ZRANGE), then
   * claims exactly those ids with claimIds, which declares every key it
   * touches; when another claimer took every id read in between it reads
   * the head again, up to PEEK_ATTEMPTS times.
   */
  async claimMany(
    leaseMs: number,
    count: number,
    opts?: CallOptions,
  ): Promise<Job[]> {
    positiveInt("lease", leaseMs);
    positiveInt("count", count);
    checkCall(opts);
    await this.client.ensure(opts);
    for (let n = 1; ; n++) {
      const ids = await this.peek(this.keys.pending, count, opts);
      if (ids.length === 0) {
        return [];
      }
      const jobs = await this.claimIds(leaseMs, ids, opts);
      if (jobs.length > 0 || n >= PEEK_ATTEMPTS) {
        return jobs;
      }
    }
  }

  /**
   * Leases exactly the given ids that are still pending, for leaseMs, in
   * the order given (claim_ids; since 2.7.0 a twin that honours the
   * queue's policy, since 2.8.0 claim_rate_ids: nothing while it is paused,
   * at most its concurrency cap less the jobs leased, and under a rate
   * limit only the starts it admits now, the rest left pending); ids no
   * longer pending are skipped. It
   * rings the doorbell again when jobs remain. Malformed ids throw an
   * IdError before anything is sent; no ids sends nothing. Never resent: a
   * lease may have been granted.
   */
  async claimIds(
    leaseMs: number,
    ids: readonly string[],
    opts?: CallOptions,
  ): Promise<Job[]> {
    positiveInt("lease", leaseMs);
    const rows = ids.map((id) => this.keys.row(id));
    if (ids.length === 0) {
      return [];
    }
    checkCall(opts);
    if (!this.client.isFenced) {
      await this.client.ensure(opts);
    }
    return jobs(
      await runClaimRateIds(this.client.runnerFor(opts), {
        pending: this.keys.pending,
        active: this.keys.active,
        running: this.keys.running,
        policy: this.keys.policy,
        starts: this.keys.starts,
        wake: this.keys.wake,
        rows,
        leaseMs,
        ids,
      }),
    );
  }

  /**
   * Retires an active job like complete, then leases up to count (0 or
   * more) of the oldest pending jobs for leaseMs, in one call. A stale token
   * is refused with a StaleError, and nothing is leased. It reads the head
   * of the pending set first and calls completeClaimIds with those ids;
   * when another claimer took all of them in between, it claims with
   * claimMany.
   *
   * @deprecated Use completeClaimIds with the ids to lease next (those of
   * head(SET_PENDING, n), or a worker's pool), then claimMany when it leased
   * none; complete(id, token) when nothing more is to be leased.
   */
  async completeClaim(
    id: string,
    token: number,
    leaseMs: number,
    count: number,
    opts?: CallOptions,
  ): Promise<Job[]> {
    this.keys.row(id);
    positiveInt("lease", leaseMs);
    nonNegativeInt("count", count);
    checkCall(opts);
    await this.client.ensure(opts);
    const ids =
      count > 0 ? await this.peek(this.keys.pending, count, opts) : [];
    const jobs = await this.completeClaimIds(id, token, leaseMs, ids, opts);
    if (jobs.length === 0 && ids.length > 0) {
      return this.claimMany(leaseMs, count, opts);
    }
    return jobs;
  }

  /**
   * Retires an active job like complete, then leases exactly the given ids
   * that are still pending, for leaseMs, in the order given
   * (complete_claim_ids). A stale token is refused with a StaleError, and
   * nothing is leased. Malformed ids throw an IdError before anything is
   * sent. Never resent.
   */
  async completeClaimIds(
    id: string,
    token: number,
    leaseMs: number,
    ids: readonly string[],
    opts?: CallOptions,
  ): Promise<Job[]> {
    const row = this.keys.row(id);
    positiveInt("lease", leaseMs);
    const rows = ids.map((i) => this.keys.row(i));
    if (!this.client.isFenced) {
      await this.client.ensure(opts);
    }
    return jobs(
      await this.#legacy(
        SCRIPT_COMPLETE_CLAIM_IDS,
        INSTEAD_COMPLETE,
        opts,
        (r) =>
          runCompleteClaimIds(r, {
            row,
            active: this.keys.active,
            pending: this.keys.pending,
            wake: this.keys.wake,
            rows,
            id,
            token,
            leaseMs,
            ids,
          }),
      ),
    );
  }

  /**
   * Pushes the lease of an active job to now + leaseMs and resolves the new
   * deadline (extend_policy, echomq 2.7.0: in either layout); a token that is not the row's, or a job no longer active, is
   * refused with a StaleError.
   */
  async extend(
    id: string,
    token: number,
    leaseMs: number,
    opts?: CallOptions,
  ): Promise<number> {
    const row = this.keys.row(id);
    positiveInt("lease", leaseMs);
    checkCall(opts);
    await this.client.ensure(opts);
    return runExtendPolicy(this.client.runnerFor(opts), {
      active: this.keys.active,
      running: this.keys.running,
      row,
      id,
      token,
      leaseMs,
    });
  }

  /**
   * Retires an active job: its row is deleted. A stale token is refused
   * with a StaleError, and the lease holder's work survives.
   */
  async complete(id: string, token: number, opts?: CallOptions): Promise<void> {
    const row = this.keys.row(id);
    checkCall(opts);
    await this.client.ensure(opts);
    await this.#legacy(SCRIPT_COMPLETE, INSTEAD_COMPLETE, opts, (r) =>
      runComplete(r, {
        active: this.keys.active,
        row,
        id,
        token,
      }),
    );
  }

  /**
   * Hands an active job back to run again after delayMs (it is scheduled,
   * and promote makes it pending) and resolves its run-at. A stale token is
   * refused with a StaleError. It runs retry_policy (retry in either
   * layout, echomq 2.7.0): a worker hands jobs back with it at shutdown.
   */
  async retry(
    id: string,
    token: number,
    delayMs: number,
    opts?: CallOptions,
  ): Promise<number> {
    const row = this.keys.row(id);
    nonNegativeInt("delay", delayMs);
    checkCall(opts);
    await this.client.ensure(opts);
    return runRetryPolicy(this.client.runnerFor(opts), {
      active: this.keys.active,
      running: this.keys.running,
      policy: this.keys.policy,
      pending: this.keys.pending,
      wake: this.keys.wake,
      row,
      schedule: this.keys.schedule,
      id,
      token,
      delayMs,
    });
  }

  /**
   * Moves an active job to the dead set; a stale token is refused with a
   * StaleError. It runs bury_policy (bury in either layout, echomq 2.7.0).
   */
  async bury(id: string, token: number, opts?: CallOptions): Promise<void> {
    const row = this.keys.row(id);
    checkCall(opts);
    await this.client.ensure(opts);
    await runBuryPolicy(this.client.runnerFor(opts), {
      active: this.keys.active,
      running: this.keys.running,
      policy: this.keys.policy,
      pending: this.keys.pending,
      wake: this.keys.wake,
      row,
      dead: this.keys.dead,
      id,
      token,
    });
  }

  /**
   * Hands an active job back to run again after delayMs, as retry does,
   * and records the failed attempt in the job's failure record (its token,
   * the server time and failure) in the same atomic call; resolves the
   * run-at (server clock, Unix ms). A stale token is refused with a
   * StaleError and nothing is recorded; a negative delay or a class outside
   * the vocabulary throws an ArgumentError before anything is sent.
   * failure.worker defaults to `<hostname>:<pid>`.
   */
  async retryFailed(
    id: string,
    token: number,
    delayMs: number,
    failure: Failure,
    opts?: CallOptions,
  ): Promise<number> {
    const row = this.keys.row(id);
    nonNegativeInt("delay", delayMs);
    checkFailure(failure);
    checkCall(opts);
    await this.client.ensure(opts);
    return this.#legacy(SCRIPT_RETRY_FAILED, INSTEAD_FAIL, opts, (r) =>
      runRetryFailed(r, {
        active: this.keys.active,
        row,
        schedule: this.keys.schedule,
        failures: this.keys.failures,
        id,
        token,
        delayMs,
        class: failure.class,
        worker: failure.worker ?? defaultWorkerName(),
        error: failure.message,
      }),
    );
  }

  /**
   * Moves an active job to the dead set, as bury does, and records its
   * last failed attempt in the job's failure record in the same atomic
   * call: the job is dead since then (JobInfo.diedAt). A stale token is
   * refused with a StaleError and nothing is recorded; a class outside the
   * vocabulary throws an ArgumentError before anything is sent.
   */
  async buryFailed(
    id: string,
    token: number,
    failure: Failure,
    opts?: CallOptions,
  ): Promise<void> {
    const row = this.keys.row(id);
    checkFailure(failure);
    checkCall(opts);
    await this.client.ensure(opts);
    await this.#legacy(SCRIPT_BURY_FAILED, INSTEAD_FAIL, opts, (r) =>
      runBuryFailed(r, {
        active: this.keys.active,
        row,
        dead: this.keys.dead,
        failures: this.keys.failures,
        id,
        token,
        class: failure.class,
        worker: failure.worker ?? defaultWorkerName(),
        error: failure.message,
      }),
    );
  }

  /**
   * Reads a job's recorded failed attempts, oldest first (at most the last
   * 10). It is empty when none was recorded (a 2.2 client records
   * nothing) and when the job's row is gone: a record its row left behind
   * is never read. get returns the same history with the row. Read-only,
   * it is resent across reconnects within opts.
   */
  async failures(id: string, opts?: CallOptions): Promise<FailedAttempt[]> {
    return this.client.resend(async () => {
      const x = failuresExec({
        row: this.keys.row(id),
        failures: this.keys.failures,
        id,
      });
      await this.client.ensure(opts);
      return decodeFailedAttempts(
        await runScript(this.client.runnerFor(opts), x),
      );
    }, opts);
  }

  /**
   * Deletes the failure records of those of ids whose rows are gone (a job
   * completed or purged by a client that leaves its record behind) and
   * resolves how many it deleted; a job whose row exists keeps its record.
   * Malformed ids throw an IdError before anything is sent; no ids sends
   * nothing.
   */
  async forgetFailures(
    ids: readonly string[],
    opts?: CallOptions,
  ): Promise<number> {
    const rows = ids.map((id) => this.keys.row(id));
    if (ids.length === 0) {
      return 0;
    }
    checkCall(opts);
    await this.client.ensure(opts);
    return runForgetFailures(this.client.runnerFor(opts), {
      failures: this.keys.failures,
      rows,
      ids,
    });
  }

  /**
   * Takes back the given expired leases as reapIds does, and records each
   * as a lost lease (FailureClass.leaseLost, no worker) in its failure
   * record (reap_failed_ids). Resolves how many moved. A negative
   * maxAttempts throws an ArgumentError and malformed ids an IdError before
   * anything is sent; no ids sends nothing.
   */
  async reapFailedIds(
    ids: readonly string[],
    maxAttempts: number,
    opts?: CallOptions,
  ): Promise<number> {
    nonNegativeInt("max attempts", maxAttempts);
    const rows = ids.map((id) => this.keys.row(id));
    if (ids.length === 0) {
      return 0;
    }
    checkCall(opts);
    await this.client.ensure(opts);
    return this.#legacy(SCRIPT_REAP_FAILED_IDS, INSTEAD_REAP, opts, (r) =>
      runReapFailedIds(r, {
        active: this.keys.active,
        pending: this.keys.pending,
        dead: this.keys.dead,
        wake: this.keys.wake,
        failures: this.keys.failures,
        rows,
        maxAttempts,
        ids,
      }),
    );
  }

  /**
   * Takes back up to limit expired leases as reapExpired does, recording
   * each as a lost lease with reapFailedIds. The worker's maintenance reaps
   * with it.
   */
  async reapExpiredFailed(
    limit: number = 1000,
    maxAttempts: number = 0,
    opts?: CallOptions,
  ): Promise<number> {
    positiveInt("limit", limit);
    nonNegativeInt("max attempts", maxAttempts);
    checkCall(opts);
    await this.client.ensure(opts);
    for (let n = 1; ; n++) {
      const { ids } = await this.#onSet(SET_ACTIVE, opts, (key) =>
        this.#due(key, limit, opts),
      );
      if (ids.length === 0) {
        return 0;
      }
      const moved = await this.reapFailedIds(ids, maxAttempts, opts);
      if (moved > 0 || n >= PEEK_ATTEMPTS) {
        return moved;
      }
    }
  }

  /**
   * Moves up to limit scheduled jobs whose run-at has come to pending;
   * resolves how many moved. It runs the 2.0 promote script (its behaviour
   * is frozen: it never rings the doorbell), which reaches rows through the
   * row prefix; promoteDue declares every key it touches.
   *
   * @deprecated Use promoteDue, which declares every key it touches and
   * rings the doorbell (the 2.0 promote script stays in the wire layer,
   * runPromote).
   */
  async promote(limit: number = 1000, opts?: CallOptions): Promise<number> {
    positiveInt("limit", limit);
    checkCall(opts);
    await this.client.ensure(opts);
    return runPromote(this.client.runnerFor(opts), {
      schedule: this.keys.schedule,
      pending: this.keys.pending,
      prefix: this.keys.rowPrefix,
      limit,
    });
  }

  /**
   * Moves up to limit scheduled jobs whose run-at has come to pending, and
   * rings the doorbell when any moved; resolves how many moved. It reads
   * the head of the schedule with the server's clock (ZRANGE and TIME, one
   * round trip) and calls promoteIds with the due ids, so it touches only
   * declared keys; when another caller moved every one of them in between,
   * it reads again, up to PEEK_ATTEMPTS times. The worker's maintenance
   * promotes with it.
   */
  async promoteDue(limit: number = 1000, opts?: CallOptions): Promise<number> {
    positiveInt("limit", limit);
    checkCall(opts);
    await this.client.ensure(opts);
    for (let n = 1; ; n++) {
      const { ids } = await this.#due(this.keys.schedule, limit, opts);
      if (ids.length === 0) {
        return 0;
      }
      const moved = await this.promoteIds(ids, opts);
      if (moved > 0 || n >= PEEK_ATTEMPTS) {
        return moved;
      }
    }
  }

  /**
   * Moves the given scheduled jobs whose run-at has come to pending
   * (promote_ids), ringing the doorbell when any moved; an id not
   * scheduled or not yet due is left as it is. Resolves how many moved.
   * Malformed ids throw an IdError before anything is sent.
   */
  async promoteIds(
    ids: readonly string[],
    opts?: CallOptions,
  ): Promise<number> {
    const rows = ids.map((id) => this.keys.row(id));
    if (ids.length === 0) {
      return 0;
    }
    checkCall(opts);
    await this.client.ensure(opts);
    return runPromoteIds(this.client.runnerFor(opts), {
      schedule: this.keys.schedule,
      pending: this.keys.pending,
      wake: this.keys.wake,
      rows,
      ids,
    });
  }

  /**
   * Takes back up to limit expired leases: each job goes back to pending,
   * or to dead when maxAttempts > 0 and its attempts reached it. Resolves
   * how many moved. It runs the 2.0 reap script (its behaviour is frozen:
   * it never rings the doorbell), which reaches rows through the row
   * prefix; reapExpired declares every key it touches.
   *
   * @deprecated Use reapExpired (or reapExpiredFailed, which records each
   * lease taken back), which declares every key it touches (the 2.0 reap
   * script stays in the wire layer, runReap).
   */
  async reap(
    limit: number = 1000,
    maxAttempts: number = 0,
    opts?: CallOptions,
  ): Promise<number> {
    positiveInt("limit", limit);
    nonNegativeInt("max attempts", maxAttempts);
    checkCall(opts);
    await this.client.ensure(opts);
    return this.#legacy(SCRIPT_REAP, INSTEAD_REAP, opts, (r) =>
      runReap(r, {
        active: this.keys.active,
        pending: this.keys.pending,
        dead: this.keys.dead,
        prefix: this.keys.rowPrefix,
        limit,
        maxAttempts,
      }),
    );
  }

  /**
   * Takes back up to limit expired leases like reap, and rings the
   * doorbell when any went back to pending. It reads the head of the active
   * set with the server's clock (ZRANGE and TIME, one round trip) and calls
   * reapIds with the expired ids, so it touches only declared keys; when
   * another caller took every one of them in between, it reads again, up
   * to PEEK_ATTEMPTS times. It records nothing of the leases it takes back;
   * the worker's maintenance reaps with reapExpiredFailed, which does.
   */
  async reapExpired(
    limit: number = 1000,
    maxAttempts: number = 0,
    opts?: CallOptions,
  ): Promise<number> {
    positiveInt("limit", limit);
    nonNegativeInt("max attempts", maxAttempts);
    checkCall(opts);
    await this.client.ensure(opts);
    for (let n = 1; ; n++) {
      const { ids } = await this.#onSet(SET_ACTIVE, opts, (key) =>
        this.#due(key, limit, opts),
      );
      if (ids.length === 0) {
        return 0;
      }
      const moved = await this.reapIds(ids, maxAttempts, opts);
      if (moved > 0 || n >= PEEK_ATTEMPTS) {
        return moved;
      }
    }
  }

  /**
   * Takes back the given expired leases (reap_ids): each goes back to
   * pending, or to dead when maxAttempts > 0 and its attempts reached it;
   * the doorbell rings when any went back to pending. An id not active, or
   * whose lease has not expired, is left as it is. Resolves how many moved.
   * Malformed ids throw an IdError before anything is sent.
   */
  async reapIds(
    ids: readonly string[],
    maxAttempts: number,
    opts?: CallOptions,
  ): Promise<number> {
    nonNegativeInt("max attempts", maxAttempts);
    const rows = ids.map((id) => this.keys.row(id));
    if (ids.length === 0) {
      return 0;
    }
    checkCall(opts);
    await this.client.ensure(opts);
    return this.#legacy(SCRIPT_REAP_IDS, INSTEAD_REAP, opts, (r) =>
      runReapIds(r, {
        active: this.keys.active,
        pending: this.keys.pending,
        dead: this.keys.dead,
        wake: this.keys.wake,
        rows,
        maxAttempts,
        ids,
      }),
    );
  }

  /**
   * Retires an active job like completeClaimIds, then leases exactly the
   * given ids that are still pending, for leaseMs, in one call
   * (complete_result_claim_ids, echomq 2.4.0; since 2.8.0 its twin
   * complete_rate_ids, which leases the next ids as claimIds does). The
   * job's failure record,
   * progress and retry policy are deleted with its row; a completion record
   * (its time, attempt and opts.result) is kept when opts.keep.count > 0,
   * the queue keeping at most that many, none older than opts.keep.ageMs;
   * a completed event is written (opts.eventsMaxLen, default the client's)
   * and the completion is counted. A stale token is refused with a
   * StaleError, and nothing is kept or leased. Malformed ids and negative
   * numbers throw before anything is sent. Never resent.
   */
  async completeResultClaimIds(
    id: string,
    token: number,
    leaseMs: number,
    ids: readonly string[],
    opts?: CompleteResultOptions,
  ): Promise<Job[]> {
    const row = this.keys.row(id);
    positiveInt("lease", leaseMs);
    const rows = ids.map((i) => this.keys.row(i));
    const keep = opts?.keep?.count ?? 0;
    const keepAgeMs = opts?.keep?.ageMs ?? 0;
    const eventsMax = opts?.eventsMaxLen ?? this.client.eventsMaxLen;
    checkCount("keep count", keep);
    checkCount("keep age", keepAgeMs);
    checkCount("events max length", eventsMax);
    const result = outputBytes(opts?.result);
    checkOutputSize("result", result, RESULT_MAX_BYTES);
    const x = completeRateIdsExec({
      row,
      active: this.keys.active,
      running: this.keys.running,
      policy: this.keys.policy,
      starts: this.keys.starts,
      pending: this.keys.pending,
      wake: this.keys.wake,
      results: this.keys.results,
      resultTimes: this.keys.resultTimes,
      progress: this.keys.progress,
      failures: this.keys.failures,
      options: this.keys.options,
      events: this.keys.events,
      counters: this.keys.counters,
      rows,
      id,
      token,
      leaseMs,
      result,
      keep,
      keepAgeMs,
      eventsMax,
      ids,
    });
    checkCall(opts);
    if (!this.client.isFenced) {
      await this.client.ensure(opts);
    }
    const reply = await runScript(this.client.runnerFor(opts), x);
    return jobs(
      (Array.isArray(reply) ? reply : []).map(decodeCompleteRateIdsRecord),
    );
  }

  /**
   * Settles a failed attempt of an active job (fail, echomq 2.4.0; since
   * 2.7.0 its twin fail_policy, in either layout): by the
   * job's own retry policy when its producer gave one (JobOptions), else by
   * opts (maxAttempts, backoff, jitter), it is scheduled to run again
   * (outcome Event.retried, at runAtMs) or buried (Event.dead); opts.bury
   * buries it whatever its attempts. The attempt is recorded in the job's
   * failure record as retryFailed records it, failed and retried or dead
   * events are written and the outcome is counted. A stale token is
   * refused with a StaleError and nothing is recorded; a class outside the
   * vocabulary, a backoff type other than fixed or exponential, a jitter
   * outside 0..1000 or a negative number throws an ArgumentError before
   * anything is sent. failure.worker defaults to `<hostname>:<pid>`.
   */
  async fail(
    id: string,
    token: number,
    failure: Failure,
    opts?: FailOptions,
  ): Promise<FailResult> {
    const row = this.keys.row(id);
    checkFailure(failure);
    const maxAttempts = opts?.maxAttempts ?? 0;
    checkCount("max attempts", maxAttempts);
    const b = wireBackoff(opts?.backoff ?? 0);
    const jitter = opts?.jitter ?? 0;
    checkCount("jitter", jitter);
    if (jitter > 1000) {
      throw new ArgumentError("jitter " + jitter + " is over 1000");
    }
    const eventsMax = opts?.eventsMaxLen ?? this.client.eventsMaxLen;
    checkCount("events max length", eventsMax);
    const x = failPolicyExec({
      active: this.keys.active,
      running: this.keys.running,
      policy: this.keys.policy,
      pending: this.keys.pending,
      row,
      schedule: this.keys.schedule,
      dead: this.keys.dead,
      wake: this.keys.wake,
      failures: this.keys.failures,
      options: this.keys.options,
      events: this.keys.events,
      counters: this.keys.counters,
      id,
      token,
      class: failure.class,
      worker: failure.worker ?? defaultWorkerName(),
      error: failure.message,
      maxAttempts,
      ...b,
      jitter,
      bury: opts?.bury ? 1 : 0,
      eventsMax,
    });
    checkCall(opts);
    await this.client.ensure(opts);
    return decodeFailPolicy(await runScript(this.client.runnerFor(opts), x));
  }

  /**
   * Takes back the given expired leases as reapFailedIds does
   * (reap_recorded_ids, echomq 2.4.0; since 2.7.0 its twin
   * reap_policy_ids, in either layout), burying a job at its own attempts
   * when its producer gave it some, else at maxAttempts (> 0); each is
   * reported (failed, then retried or dead events, opts.eventsMaxLen) and
   * counted. Resolves how many moved. A negative maxAttempts throws an
   * ArgumentError and malformed ids an IdError before anything is sent; no
   * ids sends nothing.
   */
  async reapRecordedIds(
    ids: readonly string[],
    maxAttempts: number,
    opts?: EventsWriteOptions,
  ): Promise<number> {
    nonNegativeInt("max attempts", maxAttempts);
    const eventsMax = opts?.eventsMaxLen ?? this.client.eventsMaxLen;
    checkCount("events max length", eventsMax);
    const rows = ids.map((id) => this.keys.row(id));
    if (ids.length === 0) {
      return 0;
    }
    const x = reapPolicyIdsExec({
      active: this.keys.active,
      running: this.keys.running,
      policy: this.keys.policy,
      pending: this.keys.pending,
      dead: this.keys.dead,
      wake: this.keys.wake,
      failures: this.keys.failures,
      options: this.keys.options,
      events: this.keys.events,
      counters: this.keys.counters,
      rows,
      maxAttempts,
      eventsMax,
      ids,
    });
    checkCall(opts);
    await this.client.ensure(opts);
    return decodeReapPolicyIds(await runScript(this.client.runnerFor(opts), x));
  }

  /**
   * Takes back up to limit expired leases as reapExpired does, with
   * reapRecordedIds (echomq 2.4.0). The worker's maintenance reaps with it.
   */
  async reapExpiredRecorded(
    limit: number = 1000,
    maxAttempts: number = 0,
    opts?: EventsWriteOptions,
  ): Promise<number> {
    positiveInt("limit", limit);
    nonNegativeInt("max attempts", maxAttempts);
    checkCall(opts);
    await this.client.ensure(opts);
    for (let n = 1; ; n++) {
      const { ids } = await this.#onSet(SET_ACTIVE, opts, (key) =>
        this.#due(key, limit, opts),
      );
      if (ids.length === 0) {
        return 0;
      }
      const moved = await this.reapRecordedIds(ids, maxAttempts, opts);
      if (moved > 0 || n >= PEEK_ATTEMPTS) {
        return moved;
      }
    }
  }

  /**
   * Reports an active job's progress for the holder of its lease (the
   * progress script, echomq 2.4.0): it replaces the job's last report,
   * readable with get, lookup and output while the row exists, and a
   * progress event is written (opts.eventsMaxLen, default the client's). A
   * Buffer, Uint8Array or string is reported as its bytes, any other value
   * as its JSON text (at most 4096 bytes, PROGRESS_MAX_BYTES; a larger one
   * throws an ArgumentError before anything is sent). A token that is not the lease's,
   * or a job no longer active, is refused with a StaleError and nothing is
   * written. In a handler, call job.updateProgress.
   */
  async updateProgress(
    id: string,
    token: number,
    progress: unknown,
    opts?: EventsWriteOptions,
  ): Promise<void> {
    const row = this.keys.row(id);
    const eventsMax = opts?.eventsMaxLen ?? this.client.eventsMaxLen;
    checkCount("events max length", eventsMax);
    const bytes = outputBytes(progress);
    checkOutputSize("progress report", bytes, PROGRESS_MAX_BYTES);
    const x = progressExec({
      row,
      progressKey: this.keys.progress,
      events: this.keys.events,
      id,
      token,
      progress: bytes,
      eventsMax,
    });
    checkCall(opts);
    if (!this.client.isFenced) {
      await this.client.ensure(opts);
    }
    decodeProgress(await runScript(this.client.runnerFor(opts), x));
  }

  /**
   * Deletes the failure records, progress reports and retry policies of
   * those of ids whose rows are gone (forget_ids, echomq 2.4.0: a 2.3
   * client's completion or purge leaves them) and resolves how many it
   * deleted; a job whose row exists keeps them. Malformed ids throw an
   * IdError before anything is sent; no ids sends nothing. The worker's
   * maintenance sweeps with it.
   */
  async forgetIds(ids: readonly string[], opts?: CallOptions): Promise<number> {
    const rows = ids.map((id) => this.keys.row(id));
    if (ids.length === 0) {
      return 0;
    }
    const x = forgetIdsExec({
      failures: this.keys.failures,
      progress: this.keys.progress,
      options: this.keys.options,
      rows,
      ids,
    });
    checkCall(opts);
    await this.client.ensure(opts);
    return decodeForgetIds(await runScript(this.client.runnerFor(opts), x));
  }

  /**
   * @internal The run-at of the schedule's head (undefined when nothing is
   * scheduled) and the server's clock, in one round trip (ZRANGE and TIME).
   */
  async scheduleHead(
    opts?: CallOptions,
  ): Promise<{ headMs: number | undefined; nowMs: number }> {
    const [z, t] = await this.client
      .runnerFor(opts)
      .sendMany([
        ["ZRANGE", this.keys.schedule, "0", "0", "WITHSCORES"],
        ["TIME"],
      ]);
    if (!z!.ok) {
      throw z!.error;
    }
    if (!t!.ok) {
      throw t!.error;
    }
    const flat = Array.isArray(z!.value) ? z!.value : [];
    return {
      headMs: flat.length >= 2 ? Number(str(flat[1])) : undefined,
      nowMs: timeMs(t!.value),
    };
  }

  /** Rings the queue's doorbell; resolves whether it was silent before. */
  async ring(opts?: CallOptions): Promise<boolean> {
    checkCall(opts);
    await this.client.ensure(opts);
    return (
      (await runRing(this.client.runnerFor(opts), { wake: this.keys.wake })) > 0
    );
  }

  /**
   * Moves a dead job back to pending, keeping its attempts, rings the
   * doorbell and reports a revived event (revive_recorded, echomq 2.4.0;
   * opts.eventsMaxLen, default the client's, bounds the events stream, 0
   * writes none). Resolves false when the job is not dead.
   */
  async revive(id: string, opts?: EventsWriteOptions): Promise<boolean>;
  /** Moves a dead job back to pending (see the overload above). */
  async revive(id: string, opts?: CallOptions): Promise<boolean>;
  async revive(id: string, opts?: EventsWriteOptions): Promise<boolean> {
    const row = this.keys.row(id);
    const eventsMax = opts?.eventsMaxLen ?? this.client.eventsMaxLen;
    checkCount("events max length", eventsMax);
    checkCall(opts);
    await this.client.ensure(opts);
    const n = await runReviveRecorded(this.client.runnerFor(opts), {
      dead: this.keys.dead,
      pending: this.keys.pending,
      row,
      wake: this.keys.wake,
      events: this.keys.events,
      id,
      eventsMax,
    });
    return n === REVIVE_RECORDED_REVIVED;
  }

  /**
   * Deletes a dead job for good: its row, its id and its failure record
   * (forget_failures, pipelined right after the purge in the same round
   * trip). Resolves false when the job is not dead; its record is kept
   * then. A record the forget could not delete (it failed in transport) is
   * left to the maintenance's sweep, and never read: its row is gone.
   */
  async purge(id: string, opts?: CallOptions): Promise<boolean> {
    const row = this.keys.row(id);
    checkCall(opts);
    await this.client.ensure(opts);
    const [p, f] = await runScripts(this.client.runnerFor(opts), [
      purgeExec({ dead: this.keys.dead, row, id }),
      forgetFailuresExec({
        failures: this.keys.failures,
        rows: [row],
        ids: [id],
      }),
    ]);
    if (!p!.ok) {
      throw p!.error;
    }
    if (!f!.ok) {
      this.client.logger.debug(
        "emq: forgetting a purged job's failure record failed; maintenance sweeps it",
        { queue: this.name, id, err: f!.error },
      );
    }
    return decodePurge(p!.value) === PURGE_PURGED;
  }

  /**
   * Reads the entries of the given deduplication keys (echomq 2.5.0, one
   * read-only dedup_entries call; dedup_policy_entries since 2.7.0), each
   * judged as an admission would judge
   * it now: its holder, mode, expiry, whether it holds the key, the
   * holder's state and the job parked behind it. A key without an entry
   * reads holder "" and held false. Read-only, it is resent across
   * reconnects within opts; no keys sends nothing.
   */
  async dedupEntries(
    keys: readonly (string | Uint8Array)[],
    opts?: CallOptions,
  ): Promise<DedupEntry[]> {
    const dedupKeys = keys.map((k) => dedupKeyArg(k));
    checkCall(opts);
    if (keys.length === 0) {
      return [];
    }
    return this.client.resend(async () => {
      const k = this.keys;
      const x = dedupPolicyEntriesExec({
        pending: k.pending,
        active: k.active,
        running: k.running,
        schedule: k.schedule,
        dead: k.dead,
        results: k.results,
        wake: k.wake,
        dedup: k.dedup,
        dedupKeys,
      });
      await this.client.ensure(opts);
      return decodeDedupPolicyEntries(
        await runScriptRO(this.client.runnerFor(opts), x),
      ).map((e) => ({
        holder: e.holder,
        mode: isDedup(e.mode) ? e.mode : "",
        expiresMs: e.expiresMs,
        held: e.held === 1,
        state: isState(e.state) ? e.state : "",
        parked: e.parked,
      }));
    }, opts);
  }

  /**
   * Walks one page of the queue's deduplication entries (echomq 2.5.0,
   * sweep_dedup; sweep_dedup_policy since 2.7.0): each parked job whose
   * holder is done becomes due (and
   * its key's holder), each entry that no longer holds its key is deleted.
   * cursor is "0" to start, then the page's cursor until it is "0" again;
   * count (1..DEDUP_SWEEP_MAX) is the page's size hint. The worker's
   * maintenance walks so; sweepDedupAll walks every page.
   */
  async sweepDedup(
    cursor: string,
    count: number,
    opts?: CallOptions,
  ): Promise<DedupSweep> {
    positiveInt("count", count);
    if (count > DEDUP_SWEEP_MAX) {
      throw new ArgumentError("count " + count + " is over " + DEDUP_SWEEP_MAX);
    }
    if (!/^\d+$/.test(cursor)) {
      throw new ArgumentError("cursor " + JSON.stringify(cursor));
    }
    checkCall(opts);
    const k = this.keys;
    const x = sweepDedupPolicyExec({
      pending: k.pending,
      active: k.active,
      running: k.running,
      schedule: k.schedule,
      dead: k.dead,
      results: k.results,
      wake: k.wake,
      dedup: k.dedup,
      cursor,
      count,
    });
    if (!this.client.isFenced) {
      await this.client.ensure(opts);
    }
    return decodeSweepDedupPolicy(
      await runScript(this.client.runnerFor(opts), x),
    );
  }

  /** Walks every page of the deduplication entries with sweepDedup (count per page) and resolves the totals. */
  async sweepDedupAll(
    count: number = 100,
    opts?: CallOptions,
  ): Promise<{ dropped: number; released: number }> {
    let cursor = "0";
    let dropped = 0;
    let released = 0;
    do {
      const p = await this.sweepDedup(cursor, count, opts);
      cursor = p.cursor;
      dropped += p.dropped;
      released += p.released;
    } while (cursor !== "0");
    return { dropped, released };
  }

  /**
   * Cancels the given jobs that are pending, scheduled or active, in one
   * cancel_ids call (echomq 2.5.0; cancel_policy_ids since 2.7.0, in
   * either layout): each one's row, failure record,
   * progress and retry policy are deleted, a cancelled event is written
   * (opts.eventsMaxLen, default the client's) and an active job's lease
   * holder is told on the queue's cancel channel, so that a 2.5 worker
   * aborts its handler's signal (a CancelledError) at once; any later
   * settle of it is refused with a StaleError. It resolves, per id in
   * order, the state it was cancelled from; a dead job, one that is gone
   * and an id given twice are left as they are. Malformed ids throw an
   * IdError before anything is sent; no ids sends nothing. Never resent.
   */
  async cancelIds(
    ids: readonly string[],
    opts?: EventsWriteOptions,
  ): Promise<CancelResult[]> {
    const rows = ids.map((id) => this.keys.row(id));
    const eventsMax = opts?.eventsMaxLen ?? this.client.eventsMaxLen;
    checkCount("events max length", eventsMax);
    checkCall(opts);
    if (ids.length === 0) {
      return [];
    }
    const k = this.keys;
    const x = cancelPolicyIdsExec({
      pending: k.pending,
      schedule: k.schedule,
      active: k.active,
      running: k.running,
      policy: k.policy,
      wake: k.wake,
      failures: k.failures,
      progress: k.progress,
      options: k.options,
      events: k.events,
      cancel: k.cancel,
      rows,
      eventsMax,
      ids,
    });
    if (!this.client.isFenced) {
      await this.client.ensure(opts);
    }
    return decodeCancelPolicyIds(
      await runScript(this.client.runnerFor(opts), x),
    ).map((r) => {
      const state = isState(r.state) ? r.state : "";
      return { cancelled: state !== "", state };
    });
  }

  /**
   * Cancels the jobs of a deduplication key (echomq 2.5.0): its holder and
   * the job parked behind it, read with dedupEntries and cancelled in one
   * cancelIds call. It resolves the jobs actually cancelled, the holder
   * first; empty when the key has no live holder.
   */
  async cancelKey(
    key: string | Uint8Array,
    opts?: EventsWriteOptions,
  ): Promise<CancelledJob[]> {
    const [e] = await this.dedupEntries([key], opts);
    const ids: string[] = [];
    if (e !== undefined && e.holder !== "") {
      ids.push(e.holder);
    }
    if (e !== undefined && e.parked !== "") {
      ids.push(e.parked);
    }
    if (ids.length === 0) {
      return [];
    }
    const res = await this.cancelIds(ids, opts);
    const out: CancelledJob[] = [];
    res.forEach((r, i) => {
      if (r.state !== "") {
        out.push({ id: ids[i]!, state: r.state });
      }
    });
    return out;
  }

  /**
   * Pauses the queue (echomq 2.7.0; configure_policy since 2.8.0): claims
   * lease nothing until resume, while producers keep enqueueing and the
   * jobs already leased run on and settle; a rate limit or cap is kept. The
   * queue's first policy lays its tripwire, so that a client older than
   * 2.7 is refused on it (WRONGTYPE, before any write) instead of claiming
   * past the pause. Before laying it, the reserve's bundle record is read:
   * a release below ACTIVE_TRIPWIRE_FLOOR recorded there refuses the call
   * with a PolicyFloorError (an ArgumentError) and nothing is written,
   * unless opts.force (only when no such client is left).
   * Resolves the policy after the call. Idempotent: resent across
   * reconnects within opts.
   */
  async pause(opts?: PolicyOptions): Promise<QueuePolicy> {
    return this.#configure(1, -1, -1, 0, opts);
  }

  /**
   * Resumes a paused queue (echomq 2.7.0; configure_policy since 2.8.0),
   * ringing the doorbell when jobs are pending so that idle workers claim
   * at once; a rate limit or cap is kept. The queue's last policy cleared
   * returns it to the classic layout (its tripwire lifted). Resolves the
   * policy after the call; resumed as it was when it was not paused.
   * Resent across reconnects within opts.
   */
  async resume(opts?: CallOptions): Promise<QueuePolicy> {
    return this.#configure(0, -1, -1, 0, opts);
  }

  /**
   * Caps how many of the queue's jobs are leased at once, across every
   * worker and client (echomq 2.7.0; configure_policy since 2.8.0): a
   * claim leases at most the cap less the jobs leased. n > 0 sets the cap
   * (laying the tripwire on a queue with no policy, after the bundle check
   * pause makes), 0 removes it; raising or removing it rings the doorbell.
   * A pause or rate limit is kept. A negative or fractional n throws an
   * ArgumentError before anything is sent. Resolves the policy after the
   * call. Resent across reconnects within opts.
   */
  async setConcurrency(n: number, opts?: PolicyOptions): Promise<QueuePolicy> {
    nonNegativeInt("concurrency", n);
    return this.#configure(-1, n, -1, 0, opts);
  }

  /**
   * Limits how many of the queue's jobs start (are leased) per period,
   * across every worker and client (echomq 2.8.0, configure_policy): at
   * most limit starts in any window of periodMs milliseconds, paced by the
   * server (one start every periodMs / limit ms, with a tolerance of one
   * interval or a hundredth of the period, whichever is longer), so that
   * starts spread over the period instead of bursting at its edge. A job the limit holds back stays pending, never failed;
   * a worker whose claim it held waits until the limit admits the next
   * start, or for the doorbell. limit 0 removes the limit (periodMs is not
   * read then). A changed limit or period restarts the pace; setting,
   * changing or removing it rings the doorbell. A pause or cap is kept.
   * While the queue has a rate limit, a 2.7 client's claims there are
   * refused (EMQPOLICY) and its settles still go through.
   * limit outside 0..RATE_LIMIT_MAX, or (for limit > 0) periodMs outside
   * 1..RATE_PERIOD_MAX_MS or not a whole number of milliseconds, throws an
   * ArgumentError before anything is sent. The first policy of a queue
   * lays the tripwire after the bundle check pause makes (opts.force as
   * there). Resolves the policy after the call. Resent across reconnects
   * within opts.
   */
  async setRateLimit(
    limit: number,
    periodMs: number,
    opts?: PolicyOptions,
  ): Promise<QueuePolicy> {
    checkRateLimit(limit, periodMs);
    return this.#configure(-1, -1, limit, limit > 0 ? periodMs : 0, opts);
  }

  /**
   * Reads the queue's policy (echomq 2.7.0; one read-only read_policy call
   * since 2.8.0): whether it is paused, its concurrency cap, its rate limit
   * and how long until the limit admits the next start, the minor its
   * tripwire names and how many jobs are leased, in either layout.
   * Read-only, it is resent across reconnects within opts.
   */
  async policy(opts?: CallOptions): Promise<QueuePolicy> {
    checkCall(opts);
    return this.client.resend(async () => {
      await this.client.ensure(opts);
      return queuePolicyOf(
        decodeReadPolicy(
          await runScriptRO(
            this.client.runnerFor(opts),
            this.#readPolicyExec(),
          ),
        ),
      );
    }, opts);
  }

  #readPolicyExec(): ScriptExec {
    return readPolicyExec({
      active: this.keys.active,
      running: this.keys.running,
      policy: this.keys.policy,
      starts: this.keys.starts,
    });
  }

  /**
   * One configure_policy call (paused, concurrency and rateLimit as it
   * takes them, -1 for keep; ratePeriodMs read when rateLimit > 0) and, in
   * the same round trip, the read_policy read of the policy it left. A
   * call that may lay the tripwire (a pause, a cap or a rate limit) checks
   * the bundle record first, unless forced, when the queue has none.
   */
  async #configure(
    paused: number,
    concurrency: number,
    rateLimit: number,
    ratePeriodMs: number,
    opts: PolicyOptions | undefined,
  ): Promise<QueuePolicy> {
    const x = configurePolicyExec({
      pending: this.keys.pending,
      active: this.keys.active,
      running: this.keys.running,
      policy: this.keys.policy,
      starts: this.keys.starts,
      wake: this.keys.wake,
      paused,
      concurrency,
      rateLimit,
      ratePeriodMs,
    });
    const q = this.#readPolicyExec();
    checkCall(opts);
    const lays = paused === 1 || concurrency > 0 || rateLimit > 0;
    return this.client.resend(async () => {
      await this.client.ensure(opts);
      const r = this.client.runnerFor(opts);
      if (lays && opts?.force !== true) {
        await this.#checkFloor(r);
      }
      const [set, read] = await runScripts(r, [x, q]);
      if (!set!.ok) {
        throw set!.error;
      }
      decodeConfigurePolicy(set!.value);
      if (!read!.ok) {
        throw read!.error;
      }
      return queuePolicyOf(decodeReadPolicy(read!.value));
    }, opts);
  }

  /**
   * Refuses with a PolicyFloorError a call that would lay the tripwire
   * while the reserve's bundle record names a release below
   * ACTIVE_TRIPWIRE_FLOOR: the active key's type and the record's fields
   * (the versions whose clients fenced here) in one round trip; a queue
   * whose tripwire is already laid is not checked.
   */
  async #checkFloor(r: ReturnType<Client["runnerFor"]>): Promise<void> {
    const [t, b] = await r.sendMany([
      ["TYPE", this.keys.active],
      ["HKEYS", KEY_BUNDLE],
    ]);
    if (!t!.ok) {
      throw t!.error;
    }
    if (str(t!.value) === ACTIVE_TRIPWIRE_TYPE) {
      return;
    }
    if (!b!.ok) {
      throw b!.error;
    }
    const fields = (Array.isArray(b!.value) ? b!.value : []).map(str);
    const low = belowFloor(fields, ACTIVE_TRIPWIRE_FLOOR);
    if (low.length > 0) {
      throw new PolicyFloorError(this.name, low, ACTIVE_TRIPWIRE_FLOOR);
    }
  }

  /** The planner's state of this handle: parsed cron expressions, and the records it warned about. */
  #cronCache = new Map<string, Cron>();
  #warned = new Set<string>();

  #schedulerIds(ids: readonly string[]): string[] {
    return ids.map((id, i) => {
      try {
        return checkSchedulerId(id);
      } catch (err) {
        locate(err, "scheduler " + i);
        throw err;
      }
    });
  }

  /**
   * Creates or updates the scheduler id (echomq 2.6.0, one upsert_scheduler
   * call): its schedule (spec.cron in spec.tz, or spec.everyMs from
   * spec.startMs), what it does with missed slots, and its runs' payload
   * template. An upsert of the schedule the scheduler already has keeps its
   * next slot, so a fleet that upserts its schedulers at every start
   * neither repeats nor loses a run; another schedule resets it (an
   * interval to its start, a cron schedule to now). Everything is checked
   * first (the cron expression parses, the zone is known, exactly one of
   * cron and everyMs, the bounds): an ArgumentError and nothing sent. Never
   * resent (a resend could not tell created).
   */
  async upsertScheduler(
    id: string,
    spec: SchedulerSpec,
    opts?: CallOptions,
  ): Promise<SchedulerUpsert> {
    checkSchedulerId(id);
    const w = wireScheduler(spec);
    checkCall(opts);
    const x = upsertSchedulerExec({
      schedulers: this.keys.schedulers,
      schedulerNext: this.keys.schedulerNext,
      scheduler: id,
      ...w,
    });
    if (!this.client.isFenced) {
      await this.client.ensure(opts);
    }
    const r = decodeUpsertScheduler(
      await runScript(this.client.runnerFor(opts), x),
    );
    return {
      created: r.created === 1,
      changed: r.changed === 1,
      nextMs: r.nextMs,
    };
  }

  /**
   * Reads the records of the given schedulers (echomq 2.6.0, one read-only
   * scheduler_entries call), in order; an id with no scheduler reads as
   * the empty record: id "", numbers 0, paused false, and the read's
   * nowMs.
   * Each carries the server's time of the read. Read-only, it is resent
   * across reconnects within opts; no ids sends nothing.
   */
  async schedulers(
    ids: readonly string[],
    opts?: CallOptions,
  ): Promise<SchedulerRecord[]> {
    const schedulers = this.#schedulerIds(ids);
    checkCall(opts);
    if (schedulers.length === 0) {
      return [];
    }
    return this.client.resend(async () => {
      const x = schedulerEntriesExec({
        schedulersKey: this.keys.schedulers,
        schedulerNext: this.keys.schedulerNext,
        schedulers,
      });
      await this.client.ensure(opts);
      return decodeSchedulerEntries(
        await runScriptRO(this.client.runnerFor(opts), x),
      ).map(schedulerRecord);
    }, opts);
  }

  /**
   * Reads a page of the queue's schedulers (echomq 2.6.0, one read-only
   * list_schedulers call) in next-slot order, paused and ended ones last:
   * count (1 to 1000) records after passing over offset. A page is by
   * rank, so a scheduler that fires meanwhile may move across pages.
   */
  async listSchedulers(
    offset: number,
    count: number,
    opts?: CallOptions,
  ): Promise<SchedulerRecord[]> {
    nonNegativeInt("offset", offset);
    pageCount("count", count);
    checkCall(opts);
    return this.client.resend(async () => {
      const x = listSchedulersExec({
        schedulers: this.keys.schedulers,
        schedulerNext: this.keys.schedulerNext,
        offset,
        count,
      });
      await this.client.ensure(opts);
      const out: SchedulerRecord[] = [];
      for (const r of decodeListSchedulers(
        await runScriptRO(this.client.runnerFor(opts), x),
      )) {
        if (r.scheduler !== "") {
          out.push(schedulerRecord(r));
        }
      }
      return out;
    }, opts);
  }

  async #pause(
    paused: number,
    ids: readonly string[],
    opts: CallOptions | undefined,
  ): Promise<number> {
    const schedulers = this.#schedulerIds(ids);
    checkCall(opts);
    if (schedulers.length === 0) {
      return 0;
    }
    const x = pauseSchedulersExec({
      schedulersKey: this.keys.schedulers,
      schedulerNext: this.keys.schedulerNext,
      paused,
      schedulers,
    });
    if (!this.client.isFenced) {
      await this.client.ensure(opts);
    }
    return decodePauseSchedulers(
      await runScript(this.client.runnerFor(opts), x),
    );
  }

  /**
   * Pauses the given schedulers (echomq 2.6.0, one pause_schedulers call):
   * a paused scheduler fires nothing. It resolves how many were running
   * (one already paused, or gone, is not counted); no ids sends nothing.
   */
  async pauseSchedulers(
    ids: readonly string[],
    opts?: CallOptions,
  ): Promise<number> {
    return this.#pause(1, ids, opts);
  }

  /**
   * Resumes the given schedulers (echomq 2.6.0, one pause_schedulers call).
   * A resumed scheduler's next slot is at the earliest now: the slots that
   * fell due while it was paused never run. It resolves how many were
   * paused; no ids sends nothing.
   */
  async resumeSchedulers(
    ids: readonly string[],
    opts?: CallOptions,
  ): Promise<number> {
    return this.#pause(0, ids, opts);
  }

  /**
   * Removes the given schedulers (echomq 2.6.0, one remove_schedulers
   * call); the runs they created are jobs and stay. It resolves how many
   * existed; no ids sends nothing.
   */
  async removeSchedulers(
    ids: readonly string[],
    opts?: CallOptions,
  ): Promise<number> {
    const schedulers = this.#schedulerIds(ids);
    checkCall(opts);
    if (schedulers.length === 0) {
      return 0;
    }
    const x = removeSchedulersExec({
      schedulersKey: this.keys.schedulers,
      schedulerNext: this.keys.schedulerNext,
      schedulers,
    });
    if (!this.client.isFenced) {
      await this.client.ensure(opts);
    }
    return decodeRemoveSchedulers(
      await runScript(this.client.runnerFor(opts), x),
    );
  }

  /**
   * Reads a page of the schedulers whose next slot is at most horizonMs
   * past the server's now (echomq 2.6.0, one read-only due_schedulers
   * call), in next-slot order: with d due, the page spread modulo
   * ⌈d / count⌉ (count 1 to 1000), so that competing runners, each with a
   * random spread, work different pages. Each record carries the server's
   * time of the read, to plan with (see plan). fireDue reads with it.
   */
  async dueSchedulers(
    horizonMs: number,
    count: number,
    spread: number,
    opts?: CallOptions,
  ): Promise<SchedulerRecord[]> {
    nonNegativeInt("horizonMs", horizonMs);
    pageCount("count", count);
    nonNegativeInt("spread", spread);
    checkCall(opts);
    return this.#dueRecords(horizonMs, count, spread, opts);
  }

  #dueRecords(
    horizonMs: number,
    count: number,
    spread: number,
    opts: CallOptions | undefined,
  ): Promise<SchedulerRecord[]> {
    return this.client.resend(async () => {
      const x = dueSchedulersExec({
        schedulers: this.keys.schedulers,
        schedulerNext: this.keys.schedulerNext,
        horizonMs,
        count,
        spread,
      });
      await this.client.ensure(opts);
      const out: SchedulerRecord[] = [];
      for (const r of decodeDueSchedulers(
        await runScriptRO(this.client.runnerFor(opts), x),
      )) {
        if (r.scheduler !== "") {
          out.push(schedulerRecord(r));
        }
      }
      return out;
    }, opts);
  }

  /**
   * Fires planned entries (echomq 2.6.0, one fire_schedulers call; the raw
   * step under fireDue): each is compared and set against its scheduler's
   * stored next slot, so an entry planned from another next (someone fired
   * it first) is Firing.stale and writes nothing, and the rest of its
   * scheduler's chain with it. An entry with a slot creates its run, a job
   * of this queue with the entry's id, pending when its slot is due and
   * scheduled at it otherwise, its payload the template filled. It
   * resolves each entry's outcome, in order. Malformed ids throw an IdError
   * and bad numbers an ArgumentError before anything is sent; an id of
   * another kind than the work kind refuses the call with a KindError and
   * nothing is written. No entries sends nothing; never resent.
   */
  async fireSchedulers(
    entries: readonly FireEntry[],
    opts?: CallOptions,
  ): Promise<Firing[]> {
    const rows: string[] = [];
    entries.forEach((e, i) => {
      try {
        rows.push(this.keys.row(e.id));
        checkSchedulerId(e.scheduler);
        nonNegativeInt("expectMs", e.expectMs);
        nonNegativeInt("nextMs", e.nextMs);
        nonNegativeInt("slotMs", e.slotMs);
        nonNegativeInt("untilMs", e.untilMs);
      } catch (err) {
        locate(err, "entry " + i);
        throw err;
      }
    });
    checkCall(opts);
    if (entries.length === 0) {
      return [];
    }
    const k = this.keys;
    const x = fireSchedulersExec({
      schedulersKey: k.schedulers,
      schedulerNext: k.schedulerNext,
      pending: k.pending,
      schedule: k.schedule,
      wake: k.wake,
      rows,
      entries: entries.map((e) => ({
        id: e.id,
        scheduler: e.scheduler,
        expect: e.expectMs,
        next: e.nextMs,
        slot: e.slotMs,
        until: e.untilMs,
      })),
    });
    if (!this.client.isFenced) {
      await this.client.ensure(opts);
    }
    const outs = decodeFireSchedulers(
      await runScript(this.client.runnerFor(opts), x),
    ).map((r) => r.outcome);
    this.#counted(outs.filter((o) => o === Firing.fired).length);
    return outs;
  }

  /**
   * One tick of a scheduler runner (echomq 2.6.0): reads a page of the
   * schedulers due within opts.horizonMs (due_schedulers, a random page
   * when more are due, so that competing runners work different pages),
   * plans each with the server's time of the read (see plan), mints a job
   * id per entry and fires the page in one fire_schedulers call; again at
   * once while a page is full and fired something. It resolves the runs it
   * created (runs another process fired first are not among them). A
   * record whose cron expression does not parse is skipped, with one
   * warning per scheduler and expression. Needs the client's node (a
   * NoNodeError otherwise).
   */
  async fireDue(opts?: FireDueOptions): Promise<FiredRun[]> {
    const horizonMs = opts?.horizonMs ?? 0;
    nonNegativeInt("horizonMs", horizonMs);
    const count = opts?.count ?? DEFAULT_DUE_COUNT;
    pageCount("count", count);
    const call: CallOptions = {
      ...(opts?.signal === undefined ? {} : { signal: opts.signal }),
      ...(opts?.deadline === undefined ? {} : { deadline: opts.deadline }),
    };
    checkCall(call);
    const fired: FiredRun[] = [];
    for (;;) {
      checkCall(call);
      const spread = Math.floor(Math.random() * 2 ** 32);
      const recs = await this.#dueRecords(horizonMs, count, spread, call);
      const entries: FireEntry[] = [];
      for (const r of recs) {
        let planned;
        try {
          planned = planWith(
            {
              cron: r.cron,
              tz: r.tz,
              everyMs: r.everyMs,
              startMs: r.startMs,
              missed: r.missed,
              backfill: r.backfill,
              graceMs: r.graceMs,
              nextMs: r.nextMs,
              paused: r.paused,
            },
            r.nowMs,
            horizonMs,
            this.#cronCache,
          );
        } catch (err) {
          const key = r.id + "\n" + r.tz + "\n" + r.cron;
          if (!this.#warned.has(key)) {
            if (this.#warned.size >= maxWarned) {
              this.#warned.clear();
            }
            this.#warned.add(key);
            this.client.logger.warn(
              "emq: a scheduler's schedule does not parse; it is skipped",
              {
                queue: this.name,
                scheduler: r.id,
                cron: r.cron,
                tz: r.tz,
                everyMs: r.everyMs,
                err,
              },
            );
          }
          continue;
        }
        for (const p of planned) {
          entries.push({
            ...p,
            id: this.client.mint(),
            scheduler: r.id,
          });
        }
      }
      let progress = false;
      if (entries.length > 0) {
        const outs = await this.fireSchedulers(entries, call);
        outs.forEach((o, i) => {
          const e = entries[i]!;
          if (o === Firing.fired) {
            fired.push({
              scheduler: e.scheduler,
              slotMs: e.slotMs,
              untilMs: e.untilMs,
              id: e.id,
            });
          }
          progress ||= moved(o);
        });
      }
      if (recs.length < count || !progress) {
        return fired;
      }
    }
  }

  /**
   * Runs the queue's schedulers until opts.signal aborts (echomq 2.6.0):
   * a tick (fireDue), then a wait of opts.pollMs (default 250 ms), again.
   * Any number of runners, in any process or language, may run the same
   * queue's schedulers: each slot fires once. A tick that fails (the
   * connection, the server) is logged and tried again after a backoff;
   * nothing but the signal ends the loop. It resolves once stopped (a tick
   * under way ends first); options out of range throw an ArgumentError
   * first.
   */
  async runSchedulers(opts: RunSchedulersOptions = {}): Promise<void> {
    const pollMs = opts.pollMs ?? DEFAULT_SCHEDULER_POLL_MS;
    nonNegativeInt("pollMs", pollMs);
    const horizonMs = opts.horizonMs ?? 0;
    nonNegativeInt("horizonMs", horizonMs);
    const count = opts.count ?? DEFAULT_DUE_COUNT;
    pageCount("count", count);
    const signal = opts.signal;
    const log = this.client.logger;
    const stopped = (): boolean => signal?.aborted === true;
    let failures = 0;
    while (!stopped()) {
      let wait = pollMs;
      try {
        const runs = await this.fireDue({
          horizonMs,
          count,
          ...(signal === undefined ? {} : { signal }),
        });
        failures = 0;
        if (runs.length > 0) {
          log.debug("emq: schedulers fired", {
            queue: this.name,
            runs: runs.length,
          });
          try {
            opts.onFired?.(runs);
          } catch (err) {
            log.warn("emq: onFired threw", { queue: this.name, err });
          }
        }
      } catch (err) {
        if (stopped()) {
          break;
        }
        failures++;
        wait = tickBackoff(failures);
        log.warn("emq: a scheduler tick failed; it is tried again", {
          queue: this.name,
          err,
          failures,
          retryInMs: wait,
        });
      }
      await abortable(wait, signal);
    }
  }

  #setKey(s: string): string {
    if (!isSetName(s)) {
      throw new ArgumentError("unknown set " + JSON.stringify(s));
    }
    return this.keys.set(s);
  }

  /** How many ids set s holds. */
  async size(s: SetName, opts?: CallOptions): Promise<number> {
    return this.client.resend(async () => {
      this.#setKey(s);
      await this.client.ensure(opts);
      return this.#onSet(s, opts, async (key) =>
        Number(await this.client.runnerFor(opts).send(["ZCARD", key])),
      );
    }, opts);
  }

  /**
   * Returns up to n ids of set s, newest first: for a score-zero set that
   * is reverse mint order; for a scored set the latest deadline or run-at
   * first.
   */
  async browse(s: SetName, n: number, opts?: CallOptions): Promise<string[]> {
    return (await this.page(s, "", n, opts)).ids;
  }

  /** The size of every set, read in one round trip. */
  async sizes(opts?: CallOptions): Promise<Record<SetName, number>> {
    return this.client.resend(async () => {
      await this.client.ensure(opts);
      // The running set and the active key's type too (echomq 2.7.0):
      // while the queue has a policy, its leased jobs are in the running
      // set and the active key holds the tripwire.
      const res = await this.client
        .runnerFor(opts)
        .sendMany([
          ...SETS.map((s) => ["ZCARD", this.keys.set(s)]),
          ["ZCARD", this.keys.running],
          ["TYPE", this.keys.active],
        ]);
      const running = res[SETS.length]!;
      const type = res[SETS.length + 1]!;
      const tripped = type.ok && str(type.value) === ACTIVE_TRIPWIRE_TYPE;
      const out = {} as Record<SetName, number>;
      SETS.forEach((s, i) => {
        const r =
          tripped && this.keys.set(s) === this.keys.active ? running : res[i]!;
        if (!r.ok) {
          throw r.error;
        }
        out[s] = Number(r.value);
      });
      return out;
    }, opts);
  }

  /**
   * Reads one job: its row, its score in the set its state names, its
   * failure record (failures, diedAt) and its last progress report, in one
   * round trip. Resolves null when the job does not exist (never enqueued,
   * or completed and retired); lookup also reads the completion record a
   * worker kept.
   */
  async get(id: string, opts?: CallOptions): Promise<JobInfo | null> {
    const l = await this.lookup(id, opts);
    return l.found ? l.job : null;
  }

  /**
   * Reads one job as get does, in the same one round trip (echomq 2.4.0):
   * found with its JobInfo (progress included) while its row exists, and
   * once the row is gone the completion record a worker kept (its time,
   * attempt and result; null when none was kept). Read-only, it is resent
   * across reconnects within opts.
   */
  async lookup(id: string, opts?: CallOptions): Promise<JobLookup> {
    return this.client.resend(async () => {
      const row = this.keys.row(id);
      const fx = failuresExec({ row, failures: this.keys.failures, id });
      const ox = outputExec({
        row,
        results: this.keys.results,
        progress: this.keys.progress,
        id,
      });
      await this.client.ensure(opts);
      const r = this.client.runnerFor(opts);
      const cmds = [
        ["HGETALL", row],
        ...SETS.map((s) => ["ZSCORE", this.keys.set(s), id]),
        [
          "EVALSHA",
          fx.script.sha1,
          String(fx.keys.length),
          ...fx.keys,
          ...fx.argv,
        ],
        roCommand(ox, false),
        // the running set's score (echomq 2.7.0): an active job's lease
        // deadline while the queue has a policy
        ["ZSCORE", this.keys.running, id],
      ];
      const res = await r.sendMany(cmds);
      const or = res[SETS.length + 2]!;
      let oreply: unknown;
      if (or.ok) {
        oreply = or.value;
      } else if (isNoScript(or.error)) {
        try {
          oreply = await r.send(roCommand(ox, true)); // EVAL_RO at once
        } catch (err) {
          throw scriptError(ox.script.name, err);
        }
      } else {
        throw scriptError(ox.script.name, or.error);
      }
      const output = decodeOutput(oreply);
      const h = res[0]!;
      if (!h.ok) {
        throw h.error;
      }
      const flat = h.value as unknown[];
      if (!Array.isArray(flat) || flat.length === 0) {
        return { found: false, completed: completionOf(output) };
      }
      const m = new Map<string, Buffer>();
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const v = flat[i + 1];
        m.set(str(flat[i]), Buffer.isBuffer(v) ? v : Buffer.from(String(v)));
      }
      const state = m.get(FIELD_STATE)?.toString() ?? "";
      if (!isState(state)) {
        throw new Error(
          "emq: get " +
            id +
            ": the row holds an unknown state " +
            JSON.stringify(state),
        );
      }
      const attempts = Number(m.get(FIELD_TOKEN)?.toString());
      if (!Number.isSafeInteger(attempts)) {
        throw new Error(
          "emq: get " + id + ": the row's token is not an integer",
        );
      }
      let atMs: number | undefined;
      const set = stateSet(state);
      SETS.forEach((s, i) => {
        const r = res[i + 1]!;
        if (s === set && !setIsLex(s) && r.ok && r.value !== null) {
          atMs = Number(str(r.value));
        }
      });
      const rs = res[SETS.length + 3]!;
      if (
        atMs === undefined &&
        set === SET_ACTIVE &&
        rs.ok &&
        rs.value !== null
      ) {
        atMs = Number(str(rs.value));
      }
      const fr = res[SETS.length + 1]!;
      let reply: unknown;
      if (fr.ok) {
        reply = fr.value;
      } else if (isNoScript(fr.error)) {
        reply = await runScript(r, fx); // EVALSHA again, then EVAL
      } else {
        throw scriptError(fx.script.name, fr.error);
      }
      const failures = decodeFailedAttempts(reply);
      const info: JobInfo = {
        id,
        state,
        attempts,
        payload: m.get(FIELD_PAYLOAD) ?? Buffer.alloc(0),
        ...(atMs === undefined ? {} : { atMs }),
        failures,
        diedAt: diedAt(state, attempts, failures),
        progress: output.progress,
      };
      return { found: true, job: printable("JobInfo", info) };
    }, opts);
  }

  /**
   * Reads what a job said of itself (echomq 2.4.0, the output script, one
   * read-only call): its last progress report while its row exists, and
   * once the row is gone the completion record a worker kept. Read-only,
   * it is resent across reconnects within opts.
   */
  async output(id: string, opts?: CallOptions): Promise<JobOutput> {
    return this.client.resend(async () => {
      const x = outputExec({
        row: this.keys.row(id),
        results: this.keys.results,
        progress: this.keys.progress,
        id,
      });
      await this.client.ensure(opts);
      const o = decodeOutput(await runScriptRO(this.client.runnerFor(opts), x));
      return { progress: o.progress, completed: completionOf(o) };
    }, opts);
  }

  /**
   * Reads the queue's settle counters (echomq 2.4.0): the totals since its
   * first count, and one record per minute for the last minutes minutes
   * (0..1440), the current minute first, a minute without counts as zeros.
   * Only what 2.4 clients settled is counted. minutes out of range throws
   * an ArgumentError before anything is sent. Read-only, it is resent
   * across reconnects within opts.
   */
  async counters(minutes: number, opts?: CallOptions): Promise<QueueCounters> {
    checkCount("minutes", minutes);
    if (minutes > COUNTERS_MINUTES_MAX) {
      throw new ArgumentError(
        "minutes " + minutes + " is over " + COUNTERS_MINUTES_MAX,
      );
    }
    return this.client.resend(async () => {
      const x = countersExec({ counters: this.keys.counters, minutes });
      await this.client.ensure(opts);
      const recs = decodeCounters(
        await runScriptRO(this.client.runnerFor(opts), x),
      );
      const totals = recs[0];
      if (totals === undefined) {
        throw new Error("emq: counters answered no totals");
      }
      return { totals, minutes: recs.slice(1) };
    }, opts);
  }

  /**
   * Reads one page of the queue's events stream (echomq 2.4.0): up to count
   * (1..1000) events after the stream id after ("" from the oldest kept),
   * oldest first. A count out of range or an after that is not a stream id
   * throws an ArgumentError before anything is sent. Read-only, it is
   * resent across reconnects within opts. events() listens.
   */
  async readEvents(
    after: string,
    count: number,
    opts?: CallOptions,
  ): Promise<QueueEvent[]> {
    positiveInt("count", count);
    if (count > EVENTS_PAGE_MAX) {
      throw new ArgumentError("count " + count + " is over " + EVENTS_PAGE_MAX);
    }
    if (!isStreamId(after)) {
      throw new ArgumentError(
        "after " + JSON.stringify(after) + " is not a stream id",
      );
    }
    return this.client.resend(async () => {
      const x = eventsExec({ events: this.keys.events, after, count });
      await this.client.ensure(opts);
      return decodeEvents(await runScriptRO(this.client.runnerFor(opts), x));
    }, opts);
  }

  /**
   * Listens to the queue's events as events() does, through an
   * EventEmitter (echomq 2.4.0), like BullMQ's QueueEvents:
   *
   *     const l = queue.listen();
   *     l.on(Event.completed, (ev) => ...);
   *     ...
   *     await l.close();
   */
  listen(opts: EventsOptions = {}): QueueEvents {
    return new QueueEvents(
      (o) => this.events(o),
      opts,
      (err) =>
        this.client.logger.error("emq: listening to events failed", {
          queue: this.name,
          err,
        }),
    );
  }

  /**
   * Listens to the queue's events (echomq 2.4.0): an async iterator of
   * every event after opts.after ("" from the oldest kept), oldest first,
   * that waits for new ones:
   *
   *     for await (const ev of queue.events({ after, signal })) { ... }
   *
   * It reads pages with the events script and, when a page is empty,
   * waits on the stream (XREAD BLOCK, on a connection of its own; what it
   * reads is only a wake-up) for up to opts.blockMs, then reads again;
   * it resumes after the last stream id it yielded, so keep ev.streamId to
   * resume after a restart. It ends, without an error, when opts.signal
   * aborts or the loop breaks. A read that fails in transport is tried
   * again after a pause. Events are hints: a 2.3 client's settle writes
   * none, and the stream is bounded (ConnectOptions.eventsMaxLen).
   */
  async *events(opts: EventsOptions = {}): AsyncGenerator<QueueEvent> {
    let after = opts.after ?? "";
    const size = opts.pageSize ?? EVENTS_PAGE_MAX;
    const blockMs = opts.blockMs ?? 5000;
    positiveInt("block", blockMs);
    const signal = opts.signal;
    if (!isStreamId(after)) {
      throw new ArgumentError(
        "after " + JSON.stringify(after) + " is not a stream id",
      );
    }
    positiveInt("page size", size);
    let pause = 50;
    while (!signal?.aborted) {
      let page: QueueEvent[];
      try {
        page = await this.readEvents(
          after,
          Math.min(size, EVENTS_PAGE_MAX),
          signal === undefined ? undefined : { signal },
        );
      } catch (err) {
        if (signal?.aborted) {
          return;
        }
        if (!(err instanceof ConnectionError)) {
          throw err;
        }
        await abortable(pause, signal);
        pause = Math.min(pause * 2, 5000);
        continue;
      }
      pause = 50;
      for (const ev of page) {
        if (signal?.aborted) {
          return;
        }
        after = ev.streamId;
        yield ev;
      }
      if (page.length > 0) {
        continue;
      }
      try {
        await this.client.adapter.block(
          [
            "XREAD",
            "BLOCK",
            String(blockMs),
            "COUNT",
            "1",
            "STREAMS",
            this.keys.events,
            after === "" ? "0-0" : after,
          ],
          blockMs + 1000,
          signal,
        );
      } catch (err) {
        if (signal?.aborted) {
          return;
        }
        this.client.logger.debug("emq: waiting for events failed", { err });
        await abortable(pause, signal);
        pause = Math.min(pause * 2, 5000);
      }
    }
  }

  /**
   * Returns up to n ids of set s, newest first, starting after the cursor
   * ("" for the first page), and the cursor of the next page ("" when this
   * was the last). Pages are stable under concurrent change: an id never
   * shows twice across pages, and an id present throughout is never skipped.
   * A cursor page() cannot have returned throws an ArgumentError before
   * anything is sent.
   */
  async page(
    s: SetName,
    after: string,
    n: number,
    opts?: CallOptions,
  ): Promise<Page> {
    return this.client.resend(async () => {
      this.#setKey(s);
      positiveInt("page size", n);
      const lex = setIsLex(s);
      let curScore = "";
      let curId = "";
      if (after !== "") {
        if (lex) {
          curId = after;
        } else {
          const slash = after.indexOf("/");
          curScore = slash < 0 ? "" : after.slice(0, slash);
          curId = slash < 0 ? "" : after.slice(slash + 1);
          if (!/^-?\d+$/.test(curScore)) {
            throw new ArgumentError("cursor " + JSON.stringify(after));
          }
        }
        try {
          parseId(curId);
        } catch {
          throw new ArgumentError("cursor " + JSON.stringify(after));
        }
      }
      await this.client.ensure(opts);
      return this.#onSet(s, opts, (key) =>
        this.#pageOf(key, s, after, curScore, curId, n, opts),
      );
    }, opts);
  }

  /** One page of the set at key (set s), as page reads it. */
  async #pageOf(
    key: string,
    s: SetName,
    after: string,
    curScore: string,
    curId: string,
    n: number,
    opts: CallOptions | undefined,
  ): Promise<Page> {
    const lex = setIsLex(s);
    const a = this.client.runnerFor(opts);
    const ids: string[] = [];
    const scores: string[] = [];
    if (lex) {
      const max = after === "" ? "+" : "(" + curId;
      const got = (await a.send([
        "ZRANGE",
        key,
        max,
        "-",
        "BYLEX",
        "REV",
        "LIMIT",
        "0",
        String(n),
      ])) as unknown[];
      for (const m of got) {
        ids.push(str(m));
      }
    } else {
      let rest = "+inf";
      if (after !== "") {
        const same = (await a.send([
          "ZRANGE",
          key,
          curScore,
          curScore,
          "BYSCORE",
          "REV",
          "WITHSCORES",
        ])) as unknown[];
        for (let i = 0; i + 1 < same.length && ids.length < n; i += 2) {
          const m = str(same[i]);
          if (m < curId) {
            ids.push(m);
            scores.push(str(same[i + 1]));
          }
        }
        rest = "(" + curScore;
      }
      if (ids.length < n) {
        const zs = (await a.send([
          "ZRANGE",
          key,
          rest,
          "-inf",
          "BYSCORE",
          "REV",
          "LIMIT",
          "0",
          String(n - ids.length),
          "WITHSCORES",
        ])) as unknown[];
        for (let i = 0; i + 1 < zs.length; i += 2) {
          ids.push(str(zs[i]));
          scores.push(str(zs[i + 1]));
        }
      }
    }
    for (const id of ids) {
      parseId(id);
    }
    if (ids.length < n) {
      return { ids, next: "" };
    }
    const last = ids.length - 1;
    const next = lex
      ? ids[last]!
      : String(Math.trunc(Number(scores[last]))) + "/" + ids[last]!;
    return { ids, next };
  }
}
