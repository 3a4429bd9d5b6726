// Worker: runs a handler over the jobs of one queue, with the Go worker's
// semantics.

import { randomInt } from "node:crypto";
import {
  KEY_LOCKS,
  LOCK_HELD,
  PolicyError,
  ReplyError,
  SCRIPT_BURY_POLICY,
  StaleError,
  Backoff,
  Event,
  decodeBuryPolicy,
  claimRateIdsExec,
  decodeClaimRateIdsRecord,
  decodeCompleteRateIdsRecord,
  completeRateIdsExec,
  extendPolicyExec,
  decodeExtendPolicy,
  decodeForgetFailures,
  FailureClass,
  lockMaintenance,
  parseId,
  runLock,
  runScript,
  runScripts,
  runUnlock,
  scriptError,
  type RedisArg,
  type ScriptExec,
  type ScriptRunner,
  type Settled,
} from "./gen/index.js";
import {
  ArgumentError,
  CancelledError,
  JobTimeoutError,
  LeaseLostError,
  ShutdownError,
} from "./errors.js";
import { defaultWorkerName, failureMessage } from "./failures.js";
import type { Logger, Metrics } from "./metrics.js";
import { PEEK_ATTEMPTS, type Job, type Queue } from "./queue.js";
import {
  RESULT_MAX_BYTES,
  checkCount,
  outputBytes,
  wireBackoff,
  type BackoffOptions,
  type KeepOptions,
} from "./outputs.js";
import type { CallOptions } from "./client.js";
import { printable } from "./print.js";
import type { Subscription } from "./adapter.js";

/**
 * A job a worker's handler runs: the claimed Job, and what the handler may
 * say of it while it runs.
 */
export interface ActiveJob extends Job {
  /**
   * Reports the job's progress (echomq 2.4.0), as BullMQ's
   * job.updateProgress: a Buffer, Uint8Array or string as its bytes, any
   * other value (a number, an object) as its JSON text, at most 4096 bytes.
   * It replaces the job's last report (Queue.get, Queue.output read it)
   * and writes a progress event. Rejects with a StaleError when the lease
   * was lost (another worker may run the job now).
   */
  updateProgress(progress: unknown): Promise<void>;
}

/**
 * Processes one job. Resolving completes it; what it resolves to is the
 * job's result (echomq 2.4.0): a Buffer, Uint8Array or string as its
 * bytes, undefined or null as none, any other value as its JSON text,
 * kept with the completion record as WorkerOptions.keepResults says.
 * Throwing hands it back to run again after a backoff, until the job has
 * been claimed maxAttempts times (or its own attempts, given by its
 * producer); then it is buried. An UnrecoverableError, or an error wrapped
 * with permanent(), buries it at once.
 * Each failed attempt is recorded in the job's failure record (class
 * error, or timeout past WorkerOptions.jobTimeoutMs; the worker's name; the
 * error's message), which Queue.get and Queue.failures read.
 *
 * signal aborts when the job's lease is lost (its reason a LeaseLostError:
 * another worker may be running it, nothing the handler does can be
 * completed), when the job is cancelled (echomq 2.5.0, Queue.cancelIds or
 * Queue.cancelKey by any client: a CancelledError; the job is gone, and is
 * neither retried nor buried) and when a shutdown's deadline passes (a
 * ShutdownError).
 */
export type Handler = (job: Job, signal: AbortSignal) => Promise<void>;

/**
 * A Handler that may report progress (job.updateProgress) and whose
 * resolved value is the job's result (echomq 2.4.0); see Handler. Every
 * Handler is one.
 */
export type ResultHandler = (
  job: ActiveJob,
  signal: AbortSignal,
) => Promise<unknown>;

/** A handler error that no retry can fix: the job is buried at once. */
export class PermanentError extends Error {
  constructor(cause: unknown) {
    super(
      "permanent: " + (cause instanceof Error ? cause.message : String(cause)),
      { cause },
    );
    this.name = "PermanentError";
  }
}

/**
 * A handler error that says the job cannot succeed, as BullMQ's
 * UnrecoverableError: throw it and the job is buried at once, whatever its
 * attempts, instead of retried.
 */
export class UnrecoverableError extends Error {
  constructor(message?: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "UnrecoverableError";
  }
}

/** Whether a handler's error says its failure is final: an UnrecoverableError or a PermanentError, or one caused by either. */
function isFinal(err: unknown): boolean {
  for (let e = err, n = 0; e instanceof Error && n < 16; n++) {
    if (e instanceof UnrecoverableError || e instanceof PermanentError) {
      return true;
    }
    e = e.cause;
  }
  return false;
}

/** Marks err as permanent: the job is buried at once instead of retried. */
export function permanent(err: unknown): PermanentError {
  return new PermanentError(err);
}

/**
 * A backoff policy: baseMs for the first attempt, doubling with each
 * further attempt up to maxMs, with jitter drawn from the upper half of the
 * interval so that retries of a burst spread out.
 */
export function exponentialBackoff(
  baseMs: number,
  maxMs: number,
): (attempt: number) => number {
  return (attempt) => {
    let d = baseMs;
    for (let i = 1; i < attempt && d < maxMs; i++) {
      d *= 2;
    }
    d = Math.min(d, maxMs);
    if (d < 2) {
      return d;
    }
    const half = Math.floor(d / 2);
    return half + randomInt(d - half + 1);
  };
}

/** Options of a Worker; unset values take the defaults. */
export interface WorkerOptions {
  /** How many handlers run at once. Default 10. */
  concurrency?: number;
  /** How long a job is leased, in ms; extended every third of it while the handler runs. Default 30000. */
  leaseMs?: number;
  /** The most jobs claimed in one call when several handlers are idle. Default concurrency. */
  batch?: number;
  /**
   * How many claims a job gets: a failure on the last one buries it.
   * Default 25. A job its producer gave attempts (JobOptions.attempts) gets
   * those instead.
   */
  maxAttempts?: number;
  /**
   * The delay in ms before a failed job runs again, by the attempt that
   * failed (the server schedules it so: a fixed backoff of that delay).
   * Default exponentialBackoff(1000, 600000). A job its producer gave a
   * backoff (JobOptions.backoff) gets that instead.
   */
  backoff?: (attempt: number) => number;
  /**
   * The backoff the server applies instead of backoff (echomq 2.4.0):
   * fixed, or exponential with a jitter the worker draws uniformly in
   * 0..1000 for each failure (shortening the delay by up to half). A job
   * its producer gave a backoff (JobOptions.backoff) gets that instead.
   */
  backoffPolicy?: BackoffOptions;
  /**
   * What the queue keeps of the jobs this worker completes (echomq 2.4.0),
   * like BullMQ's removeOnComplete {count, age} turned round: a completion
   * record (its time, attempt and the handler's result) of at most count
   * jobs, the newest, none older than ageMs, read with Queue.lookup and
   * Queue.output once the row is gone. Default { count: 0 }: none is kept,
   * as a 2.3 worker kept none.
   */
  keepResults?: KeepOptions;
  /**
   * The approximate bound of the queue's events stream for the events this
   * worker writes (XADD MAXLEN ~; completed, failed, retried, dead,
   * progress). Default the client's ConnectOptions.eventsMaxLen (10000);
   * 0 writes no event.
   */
  eventsMaxLen?: number;
  /** The longest an idle worker blocks on the doorbell before it looks for work anyway, in ms. Default 1000. */
  waitMs?: number;
  /**
   * How often the queue is maintained (due jobs promoted, expired leases
   * reaped, the doorbell rung), under the queue's maintenance lock, in ms.
   * Default 1000; negative turns it off for this worker.
   */
  maintenanceMs?: number;
  /**
   * How long run waits, once stopped, for running handlers to return; then
   * their jobs are handed back at once and their signals aborted. Default
   * 30000 ms; negative hands back at once.
   */
  shutdownTimeoutMs?: number;
  /**
   * The worker's name, as the failure records of the attempts it ran
   * name it (echomq 2.3.0; the record keeps its first 128 bytes). Default
   * `<hostname>:<pid>`.
   */
  name?: string;
  /**
   * The longest one job's handler may run, in ms: then its signal aborts
   * (its reason a JobTimeoutError), and the attempt is recorded as a
   * timeout and retried (or buried, on the last attempt) at once, whatever
   * the handler does after. The handler keeps its concurrency slot until
   * it returns. Default 0: no timeout.
   */
  jobTimeoutMs?: number;
  /** Default the client's. */
  logger?: Logger;
  /** Default the client's. */
  metrics?: Metrics;
}

/** A job a handler is running. */
interface Inflight {
  job: Job;
  deadlineMs: number;
  ac: AbortController;
  lost: boolean;
  /** The job was cancelled under its handler (echomq 2.5.0): its row is gone. */
  cancelled: boolean;
  handedBack: boolean;
  done: Promise<void>;
}

const maintenanceBatch = 1000;

/** How many fields of each record hash (failures, options, progress) one maintenance tick's sweep scans (HSCAN COUNT). */
const sweepCount = 100;

/**
 * The shortest wait the worker hands to a BLPOP on the doorbell: the
 * server's blocking timeouts are only as fine as its hz (10 by default:
 * 100 ms), so a rate limit's shorter wait is a local timer instead.
 */
const blockResolutionMs = 100;

/** The most pages of the deduplication entries one maintenance tick walks (sweep_dedup_policy, sweepCount entries a page). */
const dedupPages = 10;

/**
 * The ids at the head of the queue's pending set as the worker last read
 * them, less those its calls took since: each claim takes its ids from the
 * pool, so that concurrent calls of one worker never ask for the same id.
 * Another claimer may have taken a pooled id in the meantime; the claim
 * scripts skip it.
 */
class HeadPool {
  #ids: string[] = [];
  #at = 0;
  /** The ids of calls sent and not yet answered. */
  readonly #flight = new Set<string>();

  get size(): number {
    return this.#ids.length - this.#at;
  }

  /** Takes up to n ids off the pool; give them back to done() once their call is answered. */
  take(n: number): string[] {
    const end = Math.min(this.#ids.length, this.#at + n);
    const out = this.#ids.slice(this.#at, end);
    this.#at = end;
    for (const id of out) {
      this.#flight.add(id);
    }
    return out;
  }

  done(ids: readonly string[]): void {
    for (const id of ids) {
      this.#flight.delete(id);
    }
  }

  /** Replaces the pool with a fresh read of the head, less the ids of calls in flight (they ran after the read). */
  fill(ids: readonly string[]): void {
    this.#ids =
      this.#flight.size === 0
        ? [...ids]
        : ids.filter((id) => !this.#flight.has(id));
    this.#at = 0;
  }

  clear(): void {
    this.#ids = [];
    this.#at = 0;
  }
}

/** The EVALSHA command of a call, as runScript sends it first. */
function evalsha(x: ScriptExec): RedisArg[] {
  return [
    "EVALSHA",
    x.script.sha1,
    String(x.keys.length),
    ...x.keys,
    ...x.argv,
  ];
}

/** Runs a call with EVAL (its source), as runScript does after a NOSCRIPT. */
async function evalSource(r: ScriptRunner, x: ScriptExec): Promise<unknown> {
  try {
    return await r.send([
      "EVAL",
      x.script.source,
      String(x.keys.length),
      ...x.keys,
      ...x.argv,
    ]);
  } catch (err) {
    throw scriptError(x.script.name, err);
  }
}

function isNoScriptReply(err: unknown): boolean {
  return err instanceof ReplyError && err.message.startsWith("NOSCRIPT");
}

function text(v: unknown): string {
  return Buffer.isBuffer(v) ? v.toString() : String(v);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
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

/** Runs a handler over the jobs of one queue. */
export class Worker {
  readonly queue: Queue;
  readonly #h: ResultHandler;
  readonly #opt: Required<
    Omit<WorkerOptions, "logger" | "metrics" | "keepResults" | "backoffPolicy">
  > & { keep: number; keepAgeMs: number; policy: BackoffOptions | undefined };
  readonly #log: Logger;
  readonly #m: Metrics;
  readonly #owner: string;
  readonly #running = new Set<Inflight>();
  readonly #pool = new HeadPool();
  #refilling = false;
  /**
   * How many head ids a refill reads: four batches, so that after the ids
   * of calls in flight are left out at least two batches' worth remain, and
   * the pool is refilled (when under a batch) about once per two batches.
   */
  readonly #poolSize: number;
  readonly #peekCmd: readonly string[];
  #idle: number;
  #wake: (() => void) | undefined;
  /** How long the queue's rate limit holds the next start back, as the last fruitless claim's policy read found it (echomq 2.8.0). */
  #admitIn: number | undefined;
  #draining = false;
  #started = false;
  #stop = new AbortController();
  /** Claims waiting for the connection stop waiting at stop(): nothing of them was sent. */
  readonly #claimOpts = { signal: this.#stop.signal };
  /** The promotions due retries are waiting for; cleared when run ends. */
  readonly #timers = new Set<NodeJS.Timeout>();
  /** Where the next sweep resumes its HSCAN of each record hash (failures, options, progress). */
  #sweepCursors = ["0", "0", "0"];
  /** Where the next maintenance resumes its walk of the deduplication entries. */
  #dedupCursor = "0";
  /** How often a running job's lease is extended, in ms. */
  readonly #every: number;
  /** The jobs (as claimed) cancelled under their handlers: their settles are refused, and expected so. */
  readonly #cancelled = new WeakSet<Job>();

  constructor(queue: Queue, handler: ResultHandler, options?: WorkerOptions);
  /** A worker running a Handler (see the overload above). */
  constructor(queue: Queue, handler: Handler, options?: WorkerOptions);
  constructor(
    queue: Queue,
    handler: ResultHandler,
    options: WorkerOptions = {},
  ) {
    if (typeof handler !== "function") {
      throw new ArgumentError("a worker needs a handler");
    }
    const concurrency = Math.max(1, Math.floor(options.concurrency ?? 10));
    const leaseMs = options.leaseMs ?? 30000;
    if (!Number.isSafeInteger(leaseMs) || leaseMs < 1) {
      throw new ArgumentError("lease " + leaseMs + " is under a millisecond");
    }
    const shutdown = options.shutdownTimeoutMs ?? 30000;
    const jobTimeoutMs = options.jobTimeoutMs ?? 0;
    if (!Number.isSafeInteger(jobTimeoutMs) || jobTimeoutMs < 0) {
      throw new ArgumentError(
        "job timeout " + jobTimeoutMs + " is not a whole number of ms",
      );
    }
    if (options.backoffPolicy !== undefined) {
      wireBackoff(options.backoffPolicy); // a bad type or delay throws here
    }
    const keep = options.keepResults?.count ?? 0;
    const keepAgeMs = options.keepResults?.ageMs ?? 0;
    checkCount("keepResults.count", keep);
    checkCount("keepResults.ageMs", keepAgeMs);
    const eventsMaxLen = options.eventsMaxLen ?? queue.client.eventsMaxLen;
    checkCount("eventsMaxLen", eventsMaxLen);
    this.#opt = {
      policy: options.backoffPolicy,
      keep,
      keepAgeMs,
      eventsMaxLen,
      concurrency,
      leaseMs,
      batch: Math.min(
        Math.max(1, Math.floor(options.batch ?? concurrency)),
        concurrency,
      ),
      maxAttempts:
        options.maxAttempts && options.maxAttempts > 0
          ? options.maxAttempts
          : 25,
      backoff: options.backoff ?? exponentialBackoff(1000, 600000),
      waitMs:
        options.waitMs && options.waitMs > 0 ? Math.ceil(options.waitMs) : 1000,
      maintenanceMs: options.maintenanceMs || 1000,
      shutdownTimeoutMs: shutdown < 0 ? 0 : shutdown,
      name: options.name ?? defaultWorkerName(),
      jobTimeoutMs,
    };
    this.queue = queue;
    this.#h = handler;
    this.#log = options.logger ?? queue.client.logger;
    this.#m = options.metrics ?? queue.client.metrics;
    this.#owner =
      queue.client.owner +
      "/" +
      queue.name +
      "/" +
      randomInt(2 ** 32).toString(16);
    this.#idle = concurrency;
    this.#poolSize = Math.max(16, 4 * this.#opt.batch);
    this.#every = Math.max(1, Math.floor(leaseMs / 3));
    this.#peekCmd = [
      "ZRANGE",
      queue.keys.pending,
      "0",
      String(this.#poolSize - 1),
    ];
  }

  /** Stops the worker: run() shuts down gracefully and resolves. */
  stop(): void {
    this.#stop.abort();
  }

  /**
   * Claims and runs jobs until signal aborts or stop() is called, then
   * shuts down gracefully: it stops claiming, lets running handlers finish
   * (completing their jobs without claiming more) for up to
   * shutdownTimeoutMs, then hands the jobs of handlers still running back to
   * the queue at once and aborts their signals. A Worker runs once.
   */
  async run(signal?: AbortSignal): Promise<void> {
    if (this.#started) {
      throw new ArgumentError("a worker runs once");
    }
    this.#started = true;
    const stop = this.#stop.signal;
    signal?.addEventListener("abort", () => this.stop(), { once: true });
    if (signal?.aborted) {
      this.stop();
    }
    await this.queue.client.ensure();
    const every = this.#every;
    const sub = await this.#subscribe();
    const extender = setInterval(() => void this.#extend(every), every);
    let maintainer: NodeJS.Timeout | undefined;
    let maintaining: Promise<unknown> | undefined;
    let held = false;
    if (this.#opt.maintenanceMs > 0) {
      maintainer = setInterval(() => {
        if (maintaining !== undefined) {
          return; // the last round is still running
        }
        maintaining = this.#maintain().then((h) => {
          held = h;
          maintaining = undefined;
        });
      }, this.#opt.maintenanceMs);
    }
    try {
      await this.#claimer(stop);
      this.#draining = true;
      await this.#drain();
    } finally {
      clearInterval(extender);
      if (maintainer !== undefined) {
        clearInterval(maintainer);
      }
      for (const t of this.#timers) {
        clearTimeout(t);
      }
      await maintaining?.catch(() => {});
      await sub?.close().catch(() => {});
      if (held) {
        await runUnlock(this.queue.client.runner, {
          locks: KEY_LOCKS,
          name: lockMaintenance(this.queue.name),
          owner: this.#owner,
        }).catch(() => {});
      }
    }
  }

  /**
   * Listens on the queue's cancel channel (echomq 2.5.0) for the
   * cancellation of the jobs this worker holds; undefined when the adapter
   * cannot subscribe or the subscription failed (logged: the worker then
   * learns of a cancellation at the job's next extension).
   */
  async #subscribe(): Promise<Subscription | undefined> {
    const a = this.queue.client.adapter;
    if (a.subscribe === undefined) {
      this.#log.debug(
        "emq: the adapter cannot subscribe; cancellations are learnt at the next lease extension",
        { queue: this.queue.name },
      );
      return undefined;
    }
    try {
      return await a.subscribe(
        this.queue.keys.cancel,
        (m) => this.#onCancel(m),
        // Messages sent while the subscription was down are lost: extend
        // every running lease now, which a cancelled job's refuses.
        () => void this.#extend(this.#every, true),
      );
    } catch (err) {
      this.#log.warn(
        "emq: subscribing to the queue's cancellations failed; they are learnt at the next lease extension",
        { queue: this.queue.name, err },
      );
      return undefined;
    }
  }

  /** A message of the cancel channel, "<id> <token>": aborts the handler of that job, when this worker holds it with that token. */
  #onCancel(m: Buffer): void {
    const text = m.toString();
    const sp = text.indexOf(" ");
    const id = text.slice(0, sp);
    const token = Number(text.slice(sp + 1));
    if (sp < 0 || !Number.isSafeInteger(token)) {
      return; // not a cancellation this SDK reads
    }
    for (const fl of this.#running) {
      if (fl.job.id === id && fl.job.token === token) {
        this.#cancel(fl);
      }
    }
  }

  /** Marks a running job cancelled and aborts its handler's signal. */
  #cancel(fl: Inflight): void {
    if (fl.cancelled || fl.handedBack) {
      return;
    }
    fl.cancelled = true;
    this.#cancelled.add(fl.job);
    this.#m.add("cancelled", this.queue.name, 1);
    fl.ac.abort(new CancelledError(fl.job.id, fl.job.token));
    this.#log.info("emq: job cancelled; its handler's signal was aborted", {
      queue: this.queue.name,
      id: fl.job.id,
      token: fl.job.token,
    });
  }

  async #drain(): Promise<void> {
    if (await this.#within(this.#opt.shutdownTimeoutMs)) {
      return;
    }
    await this.#handBack();
    for (const fl of this.#running) {
      fl.ac.abort(new ShutdownError());
    }
    if (!(await this.#within(1000))) {
      this.#log.warn(
        "emq: handlers still running after the shutdown deadline; their jobs were handed back",
        { queue: this.queue.name },
      );
    }
  }

  /** Resolves true when every runner is idle within ms. */
  async #within(ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (this.#running.size > 0) {
      const left = deadline - Date.now();
      if (left <= 0) {
        return false;
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.#wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
    return true;
  }

  #notify(): void {
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
  }

  async #claimer(stop: AbortSignal): Promise<void> {
    let pause = 50;
    while (!stop.aborted) {
      if (this.#idle === 0) {
        await new Promise<void>((resolve) => {
          const done = () => {
            stop.removeEventListener("abort", done);
            resolve();
          };
          this.#wake = done;
          stop.addEventListener("abort", done, { once: true });
        });
        continue;
      }
      const n = Math.min(this.#idle, this.#opt.batch);
      let jobs: Job[] = [];
      let failed = false;
      try {
        // Not cut short by stop: a lease the server granted must reach a
        // runner, or it would sit out its lease.
        jobs = await this.#claim(n);
      } catch (err) {
        failed = true;
        if (stop.aborted) {
          // stopping: nothing to say
        } else if (err instanceof PolicyError) {
          // The queue's tripwire names a later minor than this release's
          // claims: it has a policy they cannot honour. Nothing was
          // leased; the jobs held run on and settle.
          this.#log.warn(
            "emq: the queue has a policy this release cannot honour (it needs a later echomq); claiming again later",
            { queue: this.queue.name, err, inMs: pause },
          );
        } else {
          this.#log.warn("emq: claiming failed; retrying", {
            err,
            inMs: pause,
          });
        }
      }
      for (const j of jobs) {
        this.#start(j);
      }
      if (stop.aborted) {
        return;
      }
      if (failed) {
        await sleep(pause, stop);
        pause = Math.min(pause * 2, 5000);
      } else if (jobs.length === 0) {
        pause = 50;
        const admitIn = this.#admitIn;
        this.#admitIn = undefined;
        if (admitIn !== undefined && admitIn < blockResolutionMs) {
          // Held by the rate limit for less than a BLPOP can wait: the
          // limit admits the next start then; a local timer paces the
          // next claim.
          await sleep(Math.min(admitIn, this.#opt.waitMs), stop);
        } else {
          await this.#waitBell(stop, admitIn);
        }
      } else {
        pause = 50;
      }
    }
  }

  /**
   * Waits, idle, for the doorbell (BLPOP) up to waitMs (or boundMs, the
   * rate limit's wait, when shorter), or until the
   * schedule's head is due: it reads the head's run-at and the server's
   * clock in one round trip first, promotes at once what is due, and when
   * the head falls due sooner than waitMs, promotes it on a local timer at
   * its due time (promote_ids rings the doorbell the BLPOP waits on; the
   * server's own blocking timeout is only as fine as its hz, 100 ms by
   * default), so that a delayed job starts within milliseconds of its
   * run-at. add_many and fail ring the doorbell when they schedule a new
   * earliest job, so the wait is armed again.
   */
  async #waitBell(stop: AbortSignal, boundMs?: number): Promise<void> {
    let w = Math.min(this.#opt.waitMs, boundMs ?? Infinity);
    let timer: NodeJS.Timeout | undefined;
    try {
      const { headMs, nowMs } = await this.queue.scheduleHead(this.#claimOpts);
      if (headMs !== undefined) {
        const due = headMs - nowMs;
        if (due <= 0) {
          if ((await this.#promote()) > 0) {
            return;
          }
          // Due, yet nothing moved (a member promote_ids cannot move, say):
          // wait as when nothing is scheduled, never spin on it.
        } else if (due < w) {
          timer = setTimeout(() => {
            timer = undefined;
            void this.#promote();
          }, due);
          // Read the head again soon after it is due, should another
          // worker have taken the bell.
          w = due + 50;
        }
      }
    } catch (err) {
      if (stop.aborted) {
        return;
      }
      this.#log.debug("emq: reading the schedule's head failed", { err });
    }
    try {
      await this.queue.client.adapter.block(
        ["BLPOP", this.queue.keys.wake, String(w / 1000)],
        w + 1000,
        stop,
      );
    } catch (err) {
      if (!stop.aborted) {
        this.#log.debug("emq: waiting on the doorbell failed", { err });
        await sleep(Math.min(w, 100), stop);
      }
    } finally {
      if (timer !== undefined) {
        clearTimeout(timer);
      }
    }
  }

  /**
   * Claims up to n jobs with claim_rate_ids (claim_ids in either layout,
   * honouring the queue's policies, echomq 2.8.0): the ids from the head
   * pool, read again (a ZRANGE of its own) when the pool is empty; read
   * again, up to PEEK_ATTEMPTS times, when another claimer took every id.
   * While the queue is paused or at its concurrency cap it leases nothing,
   * and the claimer waits on the doorbell as when the queue is empty:
   * resume, a raised cap and a settle that frees room under the cap ring
   * it. While its rate limit holds the next start back, the claimer waits
   * until the limit admits it (#admitIn), on the doorbell when that is long
   * enough for a BLPOP, so that a resume or a changed limit wakes it.
   */
  async #claim(n: number): Promise<Job[]> {
    const c = this.queue.client;
    const k = this.queue.keys;
    if (!c.isFenced) {
      await c.ensure(this.#claimOpts);
    }
    for (let attempt = 1; ; attempt++) {
      if (this.#pool.size === 0) {
        this.#pool.fill(
          await this.queue.peek(k.pending, this.#poolSize, this.#claimOpts),
        );
        if (this.#pool.size === 0) {
          return [];
        }
      }
      const ids = this.#pool.take(n);
      let got: { reply: unknown; refilled: boolean };
      try {
        got = await this.#call(this.#claimExec(ids), true, this.#claimOpts);
      } finally {
        this.#pool.done(ids);
      }
      const jobs = await this.#records(got.reply, decodeClaimRateIdsRecord);
      if (jobs.length < ids.length && !got.refilled) {
        this.#pool.clear(); // another claimer took some: read the head again
      }
      if (jobs.length > 0 || attempt >= PEEK_ATTEMPTS) {
        return jobs;
      }
      if (await this.#held()) {
        return []; // paused, at its cap or held by its rate: wait
      }
    }
  }

  /**
   * Whether the queue's policy (echomq 2.7.0) holds claims back now: it is
   * paused, or its concurrency cap is reached (the claimer waits on the
   * doorbell), or its rate limit (echomq 2.8.0) admits the next start only
   * later (#admitIn is set to that wait). Read (read_policy) after a claim
   * leased none of the pending ids it named, so that the claimer waits at
   * once instead of reading the head again; false when the read fails.
   */
  async #held(): Promise<boolean> {
    try {
      const p = await this.queue.policy(this.#claimOpts);
      if (p.paused || (p.concurrency > 0 && p.leased >= p.concurrency)) {
        return true;
      }
      if (p.admitInMs > 0) {
        this.#admitIn = p.admitInMs;
        return true;
      }
      return false;
    } catch {
      return false;
    }
  }

  /**
   * The claim_rate_ids call of ids as read from the server: built
   * without parsing them, so that an id a foreign writer planted is leased
   * and then buried by #records instead of stalling the head.
   */
  #claimExec(ids: readonly string[]): ScriptExec {
    const k = this.queue.keys;
    const x = claimRateIdsExec({
      pending: k.pending,
      active: k.active,
      running: k.running,
      policy: k.policy,
      starts: k.starts,
      wake: k.wake,
      rows: [],
      leaseMs: this.#opt.leaseMs,
      ids: [],
    });
    const keys = [...x.keys];
    const argv = [...x.argv];
    for (const id of ids) {
      keys.push(k.rowPrefix + id);
      argv.push(id);
    }
    return { script: x.script, keys, argv };
  }

  /**
   * The complete_rate_ids call (complete_result_claim_ids in either
   * layout, honouring the queue's policies, echomq 2.8.0) of job (whose
   * id was parsed when it was leased) with its result, leasing ids next,
   * as #claimExec.
   */
  #completeExec(
    job: Job,
    result: RedisArg,
    ids: readonly string[],
  ): ScriptExec {
    const k = this.queue.keys;
    const x = completeRateIdsExec({
      row: k.rowPrefix + job.id,
      active: k.active,
      running: k.running,
      policy: k.policy,
      starts: k.starts,
      pending: k.pending,
      wake: k.wake,
      results: k.results,
      resultTimes: k.resultTimes,
      progress: k.progress,
      failures: k.failures,
      options: k.options,
      events: k.events,
      counters: k.counters,
      rows: [],
      id: job.id,
      token: job.token,
      leaseMs: this.#opt.leaseMs,
      result,
      keep: this.#opt.keep,
      keepAgeMs: this.#opt.keepAgeMs,
      eventsMax: this.#opt.eventsMaxLen,
      ids: [],
    });
    const keys = [...x.keys];
    const argv = [...x.argv];
    for (const id of ids) {
      keys.push(k.rowPrefix + id);
      argv.push(id);
    }
    return { script: x.script, keys, argv };
  }

  /**
   * Sends one claiming call; when refill is set and the pool runs low, a
   * ZRANGE of the head goes in the same round trip, after the call, and
   * refills the pool. A call given as after (a forget_failures) goes in the
   * same round trip right after x; its failure is logged, never thrown.
   */
  async #call(
    x: ScriptExec,
    refill: boolean,
    opts?: CallOptions,
    after?: ScriptExec,
  ): Promise<{ reply: unknown; refilled: boolean }> {
    const r = this.queue.client.runnerFor(opts);
    const peek =
      refill && !this.#refilling && this.#pool.size < this.#opt.batch;
    if (!peek && after === undefined) {
      return { reply: await runScript(r, x), refilled: false };
    }
    const cmds: (readonly string[] | RedisArg[])[] = [evalsha(x)];
    if (after !== undefined) {
      cmds.push(evalsha(after));
    }
    if (peek) {
      cmds.push(this.#peekCmd);
    }
    // One refill in flight at a time: the calls sent meanwhile take ids
    // from the pool as it is.
    this.#refilling ||= peek;
    let res;
    try {
      res = await r.sendMany(cmds);
    } finally {
      if (peek) {
        this.#refilling = false;
      }
    }
    const s = res[0]!;
    let reply: unknown;
    if (s.ok) {
      reply = s.value;
    } else if (isNoScriptReply(s.error)) {
      reply = await evalSource(r, x);
    } else {
      throw scriptError(x.script.name, s.error);
    }
    if (after !== undefined) {
      await this.#after(r, after, res[1]!);
    }
    if (!peek) {
      return { reply, refilled: false };
    }
    const z = res[res.length - 1]!;
    if (!z.ok) {
      return { reply, refilled: false };
    }
    const ids: string[] = [];
    for (const m of Array.isArray(z.value) ? z.value : []) {
      ids.push(text(m));
    }
    this.#pool.fill(ids);
    return { reply, refilled: true };
  }

  /** Settles the forget_failures sent after a completion: sent again alone on NOSCRIPT, logged when it failed. */
  async #after(r: ScriptRunner, x: ScriptExec, got: Settled): Promise<void> {
    try {
      if (got.ok) {
        decodeForgetFailures(got.value);
        return;
      }
      if (!isNoScriptReply(got.error)) {
        throw scriptError(x.script.name, got.error);
      }
      decodeForgetFailures(await evalSource(r, x));
    } catch (err) {
      this.#log.debug(
        "emq: forgetting a completed job's failure record failed; maintenance sweeps it",
        { queue: this.queue.name, err },
      );
    }
  }

  /**
   * Decodes a reply of leased jobs one record at a time: a record that
   * cannot be decoded (an id a foreign writer planted) is buried, not left
   * to stall the queue.
   */
  async #records(reply: unknown, dec: (r: unknown) => Job): Promise<Job[]> {
    const jobs: Job[] = [];
    for (const rec of Array.isArray(reply) ? reply : []) {
      try {
        jobs.push(printable("Job", dec(rec)));
      } catch (err) {
        await this.#buryRaw(rec, err);
      }
    }
    if (jobs.length > 0) {
      this.#m.add("claimed", this.queue.name, jobs.length);
    }
    return jobs;
  }

  /** Buries a leased record whose id does not parse, by the raw member. */
  async #buryRaw(rec: unknown, why: unknown): Promise<void> {
    const arr = Array.isArray(rec) ? rec : [];
    const raw = arr[0];
    const token = Number(arr[1]);
    if (arr.length < 2 || !Number.isSafeInteger(token)) {
      this.#log.error(
        "emq: a leased record cannot be read; it will be reaped",
        {
          err: why,
        },
      );
      return;
    }
    const rawId = Buffer.isBuffer(raw) ? raw.toString() : String(raw);
    const k = this.queue.keys;
    const keys = SCRIPT_BURY_POLICY.keyTypes.map(
      (t) => k.key(t) ?? k.rowPrefix + rawId,
    );
    const argv = SCRIPT_BURY_POLICY.argTypes.map((t) =>
      t === "id" ? rawId : String(token),
    );
    const x: ScriptExec = { script: SCRIPT_BURY_POLICY, keys, argv };
    try {
      decodeBuryPolicy(await runScript(this.queue.client.runner, x));
      this.#m.add("buried", this.queue.name, 1);
      this.#log.error("emq: buried a job that cannot be decoded", {
        id: rawId,
        err: why,
      });
    } catch (err) {
      this.#log.error("emq: burying an undecodable job failed", {
        id: rawId,
        err,
      });
    }
  }

  #start(job: Job): void {
    this.#idle--;
    void this.#runner(job).finally(() => {
      this.#idle++;
      this.#notify();
    });
  }

  /** Runs a job, and the jobs each completion claims next. */
  async #runner(first: Job): Promise<void> {
    let job: Job | undefined = first;
    while (job !== undefined) {
      job = await this.#process(job);
    }
  }

  async #process(job: Job): Promise<Job | undefined> {
    let settle!: () => void;
    const fl: Inflight = {
      job,
      deadlineMs: job.deadlineMs,
      ac: new AbortController(),
      lost: false,
      cancelled: false,
      handedBack: false,
      done: new Promise<void>((r) => (settle = r)),
    };
    this.#running.add(fl);
    try {
      const active = this.#active(job);
      const ran = (async () => this.#h(active, fl.ac.signal))().then(
        (value: unknown) => ({
          failed: false,
          err: undefined as unknown,
          value,
        }),
        (err: unknown) => ({ failed: true, err, value: undefined as unknown }),
      );
      const limit = this.#opt.jobTimeoutMs;
      let outcome:
        | { failed: boolean; err: unknown; value: unknown }
        | undefined;
      if (limit > 0) {
        let timer: NodeJS.Timeout | undefined;
        outcome = await Promise.race([
          ran,
          new Promise<undefined>((resolve) => {
            timer = setTimeout(() => resolve(undefined), limit);
          }),
        ]);
        clearTimeout(timer);
      } else {
        outcome = await ran;
      }
      if (outcome === undefined) {
        // Timed out: the job moves on now, the handler is abandoned (its
        // slot stays taken until it returns).
        const why = new JobTimeoutError(limit);
        if (!fl.handedBack && !fl.cancelled) {
          fl.handedBack = true;
          fl.ac.abort(why);
          await this.#fail(job, why, FailureClass.timeout);
        }
        await ran;
        return undefined;
      }
      if (fl.handedBack) {
        return undefined;
      }
      if (fl.cancelled) {
        // Cancelled: the row is gone, a settle would be refused.
        return undefined;
      }
      if (outcome.failed) {
        await this.#fail(job, outcome.err, FailureClass.error);
        return undefined;
      }
      return await this.#complete(job, outcome.value);
    } finally {
      this.#running.delete(fl);
      settle();
    }
  }

  /** The job as its handler gets it: with updateProgress (not enumerable, so that it prints and spreads as the Job). */
  #active(job: Job): ActiveJob {
    const q = this.queue;
    const eventsMaxLen = this.#opt.eventsMaxLen;
    Object.defineProperty(job, "updateProgress", {
      enumerable: false,
      configurable: true,
      value: (progress: unknown) =>
        q.updateProgress(job.id, job.token, progress, { eventsMaxLen }),
    });
    return job as ActiveJob;
  }

  /**
   * Completes a job with complete_rate_ids (complete_result_claim_ids in
   * either layout, honouring the queue's policies, echomq 2.8.0), keeping
   * its result as keepResults says, leasing the next id of the head pool
   * in the same call (none while draining): one call per job in the steady
   * state. The script deletes the job's failure record, progress and
   * policy with its row. A result over RESULT_MAX_BYTES fails the job for
   * good instead.
   */
  async #complete(job: Job, value: unknown): Promise<Job | undefined> {
    const q = this.queue.name;
    const c = this.queue.client;
    let result: RedisArg;
    try {
      result = outputBytes(value);
    } catch (err) {
      await this.#fail(job, permanent(err), FailureClass.error);
      return undefined;
    }
    const size =
      typeof result === "string" ? Buffer.byteLength(result) : result.length;
    if (size > RESULT_MAX_BYTES) {
      await this.#fail(
        job,
        new UnrecoverableError(
          "the handler's result of " +
            size +
            " bytes is over " +
            RESULT_MAX_BYTES,
        ),
        FailureClass.error,
      );
      return undefined;
    }
    const ids = this.#draining ? [] : this.#pool.take(1);
    try {
      if (!c.isFenced) {
        await c.ensure();
      }
      const got = await this.#call(
        this.#completeExec(job, result, ids),
        !this.#draining,
      );
      this.#m.add("completed", q, 1);
      const next = await this.#records(got.reply, decodeCompleteRateIdsRecord);
      if (next.length < ids.length && !got.refilled) {
        this.#pool.clear();
      }
      return next[0];
    } catch (err) {
      if (err instanceof StaleError) {
        this.#stale(job, "complete", err);
      } else {
        this.#log.error(
          "emq: completing a job failed; its lease will be reaped and it runs again",
          { queue: q, id: job.id, err },
        );
      }
      return undefined;
    } finally {
      this.#pool.done(ids);
    }
  }

  /**
   * Settles a failed attempt with Queue.fail (fail_policy, echomq 2.7.0): the server applies
   * the job's own policy when its producer gave one, else the worker's
   * (maxAttempts, backoff, a jitter drawn here); a final error buries it.
   */
  async #fail(job: Job, why: unknown, cls: FailureClass): Promise<void> {
    const q = this.queue.name;
    const failure = {
      class: cls,
      worker: this.#opt.name,
      message: failureMessage(why),
    };
    const backoff: BackoffOptions = this.#opt.policy ?? {
      type: Backoff.fixed,
      delay: Math.max(0, Math.floor(this.#opt.backoff(job.token))),
    };
    let res;
    try {
      res = await this.queue.fail(job.id, job.token, failure, {
        maxAttempts: this.#opt.maxAttempts,
        backoff,
        jitter: backoff.type === Backoff.exponential ? randomInt(1001) : 0,
        bury: isFinal(why),
        eventsMaxLen: this.#opt.eventsMaxLen,
      });
    } catch (err) {
      this.#settleError(job, "fail", err);
      return;
    }
    if (res.outcome === Event.dead) {
      this.#m.add("buried", q, 1);
      this.#log.warn("emq: job buried", {
        queue: q,
        id: job.id,
        attempt: job.token,
        class: cls,
        err: why,
      });
      return;
    }
    this.#m.add("retried", q, 1);
    const delay = Math.max(0, res.runAtMs - Date.now());
    if (this.#opt.maintenanceMs <= 0 || delay < this.#opt.maintenanceMs) {
      // Sooner than the next maintenance: promote it when it is due.
      const t = setTimeout(() => {
        this.#timers.delete(t);
        void this.#promote();
      }, delay);
      this.#timers.add(t);
    }
    this.#log.info("emq: job failed; it runs again", {
      queue: q,
      id: job.id,
      attempt: job.token,
      class: cls,
      inMs: delay,
      err: why,
    });
  }

  #settleError(job: Job, op: string, err: unknown): void {
    if (err instanceof StaleError) {
      this.#stale(job, op, err);
      return;
    }
    this.#log.error(
      "emq: settling a job failed; its lease will be reaped and it runs again",
      { queue: this.queue.name, op, id: job.id, err },
    );
  }

  /**
   * Counts a transition refused because the lease was lost: another claim
   * took the job. It is the normal outcome of a handler slower than its
   * lease, not an alarm.
   */
  #stale(job: Job, op: string, err: unknown): void {
    if (this.#cancelled.has(job)) {
      // Cancelled while the settle was on its way: refused, as expected.
      this.#log.debug("emq: a cancelled job's " + op + " was refused", {
        queue: this.queue.name,
        id: job.id,
        token: job.token,
      });
      return;
    }
    this.#m.add("stale", this.queue.name, 1);
    this.#log.info(
      "emq: the job's lease was lost before its " +
        op +
        "; the holder of the new lease settles it",
      { queue: this.queue.name, id: job.id, token: job.token, err },
    );
  }

  /**
   * Extends the leases of running jobs due for it (every one with all), in
   * one round trip. A refused extension means the lease is gone (lost, or
   * the job cancelled): the handler's signal aborts.
   */
  async #extend(every: number, all = false): Promise<void> {
    const now = Date.now();
    const due: Inflight[] = [];
    const xs: ScriptExec[] = [];
    const k = this.queue.keys;
    for (const fl of this.#running) {
      if (
        fl.lost ||
        fl.cancelled ||
        fl.handedBack ||
        (!all && fl.deadlineMs - now > this.#opt.leaseMs - every)
      ) {
        continue;
      }
      due.push(fl);
      xs.push(
        extendPolicyExec({
          active: k.active,
          running: k.running,
          row: k.row(fl.job.id),
          id: fl.job.id,
          token: fl.job.token,
          leaseMs: this.#opt.leaseMs,
        }),
      );
    }
    if (xs.length === 0) {
      return;
    }
    let res;
    try {
      await this.queue.client.ensure();
      res = await runScripts(this.queue.client.runner, xs);
    } catch (err) {
      this.#log.warn("emq: extending leases failed; retrying", { err });
      return;
    }
    res.forEach((r, i) => {
      const fl = due[i]!;
      if (r.ok) {
        try {
          fl.deadlineMs = decodeExtendPolicy(r.value);
        } catch (err) {
          this.#log.warn("emq: extending a lease failed", { err });
        }
      } else if (r.error instanceof StaleError) {
        if (fl.cancelled) {
          return; // the cancellation arrived meanwhile
        }
        fl.lost = true;
        fl.ac.abort(new LeaseLostError());
        this.#stale(fl.job, "extend", r.error);
      } else {
        this.#log.warn("emq: extending a lease failed; retrying", {
          id: fl.job.id,
          err: r.error,
        });
      }
    });
  }

  /** Gives the jobs of handlers still running back to the queue at once. */
  async #handBack(): Promise<void> {
    let n = 0;
    for (const fl of this.#running) {
      if (fl.lost || fl.cancelled || fl.handedBack) {
        continue;
      }
      fl.handedBack = true;
      try {
        await this.queue.retry(fl.job.id, fl.job.token, 0);
        this.#m.add("handed_back", this.queue.name, 1);
        n++;
      } catch (err) {
        this.#settleError(fl.job, "hand-back", err);
      }
    }
    if (n > 0) {
      this.#log.warn(
        "emq: handlers overran the shutdown deadline; their jobs were handed back",
        { queue: this.queue.name, jobs: n },
      );
      await this.#promote();
    }
  }

  /**
   * Promotes and reaps while holding the queue's maintenance lock, and
   * sweeps one slice of the failure records whoever holds it (a 2.2
   * worker holding the lock never sweeps, and a sweep is safe to repeat);
   * resolves whether the lock is held.
   */
  async #maintain(): Promise<boolean> {
    try {
      await this.#sweepDedup();
      return await this.#maintainLocked();
    } finally {
      await this.#sweep();
    }
  }

  /**
   * Walks the queue's deduplication entries (echomq 2.5.0, sweep_dedup) a
   * few pages a tick, from where the last tick left: a job parked behind a
   * holder that is done (settled by a client that did not look at its key)
   * becomes due, and promoted at once; entries that no longer hold their
   * keys are deleted. One call per tick when the hash is empty.
   */
  async #sweepDedup(): Promise<void> {
    let released = 0;
    try {
      for (let n = 0; n < dedupPages; n++) {
        const p = await this.queue.sweepDedup(this.#dedupCursor, sweepCount);
        this.#dedupCursor = p.cursor;
        released += p.released;
        if (p.cursor === "0") {
          break;
        }
      }
    } catch (err) {
      this.#log.warn("emq: sweeping deduplication entries failed", { err });
    }
    if (released > 0) {
      this.#log.debug("emq: released parked jobs", {
        queue: this.queue.name,
        jobs: released,
      });
      await this.#promote();
    }
  }

  /** Promotes and reaps while holding the queue's maintenance lock (and reaps without it on a queue with a policy); resolves whether it is held. */
  async #maintainLocked(): Promise<boolean> {
    try {
      const d = await runLock(this.queue.client.runner, {
        locks: KEY_LOCKS,
        name: lockMaintenance(this.queue.name),
        owner: this.#owner,
        ttlMs: 3 * this.#opt.maintenanceMs,
      });
      if (d === LOCK_HELD) {
        await this.#reapUnderPolicy();
        return false;
      }
    } catch (err) {
      this.#log.warn("emq: taking the maintenance lock failed", { err });
      return false;
    }
    await this.#promote();
    await this.#reap();
    return true;
  }

  /**
   * Reaps without the maintenance lock when the queue has a policy
   * (echomq 2.7.0): the lock's holder may be a worker older than 2.7,
   * whose reaps fail on the tripwire while it renews the lock, which would
   * leave expired leases filling a capped queue until the policy is
   * cleared. reap_policy_ids takes back only leases still expired, so
   * reapers side by side are safe.
   */
  async #reapUnderPolicy(): Promise<void> {
    try {
      if ((await this.queue.policy()).requires === 0) {
        return;
      }
    } catch (err) {
      this.#log.warn("emq: reading the queue's policy failed", { err });
      return;
    }
    await this.#reap();
  }

  /**
   * Sweeps one slice of the queue's per-job records: an HSCAN page of
   * about sweepCount fields of each of the failures, options and progress
   * hashes, from the cursors the last tick left (in one round trip), then
   * forgetIds on the ids it saw, which deletes the records whose rows are
   * gone (left by a 2.2 or 2.3 client's complete or purge). So every
   * orphan is gone within ceil(records / sweepCount) ticks of its hash.
   */
  async #sweep(): Promise<void> {
    const k = this.queue.keys;
    const hashes = [k.failures, k.options, k.progress];
    try {
      const got = await this.queue.client.runner.sendMany(
        hashes.map((h, i) => [
          "HSCAN",
          h,
          this.#sweepCursors[i]!,
          "COUNT",
          String(sweepCount),
        ]),
      );
      const ids = new Set<string>();
      got.forEach((r, i) => {
        if (!r.ok) {
          throw r.error;
        }
        const [cursor, flat] = Array.isArray(r.value) ? r.value : [];
        const fields = Array.isArray(flat) ? flat : [];
        for (let j = 0; j < fields.length; j += 2) {
          const id = text(fields[j]);
          try {
            parseId(id);
          } catch {
            continue; // a foreign writer's field: no row of ours to check
          }
          ids.add(id);
        }
        this.#sweepCursors[i] = cursor === undefined ? "0" : text(cursor);
      });
      const n = await this.queue.forgetIds([...ids]);
      if (n > 0) {
        this.#log.debug("emq: forgot orphaned job records", {
          queue: this.queue.name,
          records: n,
        });
      }
    } catch (err) {
      this.#log.warn("emq: sweeping job records failed", { err });
    }
  }

  /** Promotes every due job (promoteDue); resolves how many moved. */
  async #promote(): Promise<number> {
    let total = 0;
    try {
      for (;;) {
        const n = await this.queue.promoteDue(maintenanceBatch);
        total += n;
        if (n < maintenanceBatch) {
          break;
        }
      }
    } catch (err) {
      this.#log.warn("emq: promoting due jobs failed", { err });
    }
    if (total > 0) {
      // promote_ids rang the doorbell.
      this.#m.add("promoted", this.queue.name, total);
    }
    return total;
  }

  async #reap(): Promise<void> {
    let total = 0;
    try {
      for (;;) {
        const n = await this.queue.reapExpiredRecorded(
          maintenanceBatch,
          this.#opt.maxAttempts,
          { eventsMaxLen: this.#opt.eventsMaxLen },
        );
        total += n;
        if (n < maintenanceBatch) {
          break;
        }
      }
    } catch (err) {
      this.#log.warn("emq: reaping expired leases failed", { err });
    }
    if (total > 0) {
      // reap_policy_ids rang the doorbell when any went back to pending.
      this.#m.add("reaped", this.queue.name, total);
    }
  }
}
