// echomq 2.4.0 on the SDK's surface: the options a producer gives a job
// (a relative delay, attempts, a backoff), what a worker keeps of a
// completion, and the readers of results, progress, counters and events.

import {
  Backoff,
  isBackoff,
  type CountersReply,
  type Event,
  type EventsReply,
  type RedisArg,
} from "./gen/index.js";
import { EventEmitter } from "node:events";
import { ArgumentError } from "./errors.js";
import type { CallOptions } from "./client.js";

/**
 * A retry backoff, as a producer gives a job (JobOptions.backoff) or a
 * worker its jobs (WorkerOptions.backoff), applied by the server when an
 * attempt fails.
 */
export interface BackoffOptions {
  /**
   * Fixed: every retry waits delay. Exponential: the first retry waits
   * delay, each later one twice the one before, up to max; a worker's
   * jitter shortens it by up to half.
   */
  readonly type: Exclude<Backoff, typeof Backoff.inherit>;
  /** The base delay in milliseconds. */
  readonly delay: number;
  /** The bound of an exponential backoff in milliseconds; 0 or unset is unbounded. */
  readonly max?: number;
}

/**
 * What a producer may say of a job beside its payload (echomq 2.4.0), as
 * BullMQ's add(name, data, opts) does: pushed with any of them, a job is
 * admitted with add_many, and its own attempts and backoff are applied
 * instead of the worker's when its attempts fail.
 */
export interface JobOptions {
  /**
   * How long after now, on the server's clock, the job may run, in
   * milliseconds (relative, as BullMQ's delay). 0 or unset: at once.
   * Queue.enqueueAt takes an absolute time instead.
   */
  readonly delay?: number;
  /** How many claims the job gets before a failure buries it, instead of the worker's maxAttempts. 0 or unset: the worker's. */
  readonly attempts?: number;
  /**
   * The job's backoff between attempts, instead of the worker's; a number
   * is a fixed backoff of that many milliseconds. Unset: the worker's.
   */
  readonly backoff?: number | BackoffOptions;
}

/** The options of Queue.push: the call's bound and the job's options. */
export interface PushOptions extends CallOptions, JobOptions {}

/** The options of Queue.addMany: one set of job options for every job, and the call's bound. */
export interface AddOptions extends CallOptions, JobOptions {}

/** The outcome of one job of Queue.addMany. */
export interface AddResult {
  /** false: a job with this id exists, and is left untouched. */
  readonly enqueued: boolean;
  /** The run-at of a job admitted with a delay (server clock, Unix ms); 0 when it was admitted pending or not admitted. */
  readonly runAtMs: number;
}

/**
 * How many completion records a queue keeps (with their results), like
 * BullMQ's removeOnComplete {count, age}: the queue keeps at most count of
 * them, the newest, and none older than ageMs. count 0 keeps none.
 */
export interface KeepOptions {
  /** The most completion records the queue keeps; 0 keeps none (this one included). */
  readonly count: number;
  /** How long a kept record lives after its completion, in milliseconds; 0 or unset is no age bound. */
  readonly ageMs?: number;
}

/** Options of Queue.completeResultClaimIds. */
export interface CompleteResultOptions extends CallOptions {
  /**
   * The handler's result: a Buffer, Uint8Array or string is kept as its
   * bytes, null or undefined as none, any other value as its JSON text (at
   * most 1 MiB).
   */
  readonly result?: unknown;
  /** What the queue keeps of completions. Default { count: 0 }: nothing. */
  readonly keep?: KeepOptions;
  /** The events stream's bound (XADD MAXLEN ~); 0 writes no event. Default the client's ConnectOptions.eventsMaxLen. */
  readonly eventsMaxLen?: number;
}

/** Options of Queue.fail: the worker's retry policy, for a job that has none of its own. */
export interface FailOptions extends CallOptions {
  /** How many claims a job gets before a failure buries it; 0 or unset never buries by count. */
  readonly maxAttempts?: number;
  /** The backoff before the next attempt. Default a fixed backoff of 0 ms. */
  readonly backoff?: BackoffOptions;
  /**
   * A draw in 0..1000 that shortens an exponential delay d to
   * d - floor(d/2 × jitter/1000); 0 or unset keeps d. A worker draws it
   * uniformly for each failure.
   */
  readonly jitter?: number;
  /** Buries the job whatever its attempts and policy: the failure is final. */
  readonly bury?: boolean;
  /** The events stream's bound; 0 writes no event. Default the client's ConnectOptions.eventsMaxLen. */
  readonly eventsMaxLen?: number;
}

/** How a failed attempt was settled by Queue.fail. */
export interface FailResult {
  /** Event.retried (it runs again at runAtMs) or Event.dead (it was buried). */
  readonly outcome: Event;
  /** The run-at of the next attempt (server clock, Unix ms); 0 when dead. */
  readonly runAtMs: number;
}

/** Options of the calls that write an event and nothing else to bound it: Queue.revive, Queue.updateProgress, Queue.reapRecordedIds. */
export interface EventsWriteOptions extends CallOptions {
  /** The events stream's bound; 0 writes no event. Default the client's ConnectOptions.eventsMaxLen. */
  readonly eventsMaxLen?: number;
}

/** A kept completion record: when and by which attempt the job was completed, and its handler's result. */
export interface Completion {
  /** When the job was completed (server clock, Unix ms). */
  readonly atMs: number;
  /** The attempt (token) that completed it. */
  readonly attempt: number;
  /** The handler's result as its bytes (empty when it returned none). */
  readonly result: Buffer;
}

/** What Queue.output reads of a job. */
export interface JobOutput {
  /** The lease holder's last progress report while the row exists; empty when none. */
  readonly progress: Buffer;
  /** The kept completion record once the row is gone; null when none was kept. */
  readonly completed: Completion | null;
}

/** One minute's settle counts (minuteMs the minute's start, server clock), or the totals (minuteMs 0). */
export type SettleCounts = CountersReply;

/** What Queue.counters reads: the totals, and one record per minute, the current minute first. */
export interface QueueCounters {
  readonly totals: SettleCounts;
  readonly minutes: SettleCounts[];
}

/**
 * One entry of a queue's events stream. event is a word of Event, or a
 * later minor's word this SDK does not know yet, kept as it is (check it
 * with isEvent).
 */
export type QueueEvent = EventsReply;

/** Options of Queue.events. */
export interface EventsOptions {
  /** The stream id of the last event handled: the listener yields the events after it. Default "" (from the oldest kept). */
  readonly after?: string;
  /** Stops the listener: the iteration ends (without an error) once it aborts. */
  readonly signal?: AbortSignal;
  /** The most events one page reads (1..1000). Default 1000. */
  readonly pageSize?: number;
  /** The longest one wait for a new event blocks on the server (XREAD BLOCK), in ms. Default 5000. */
  readonly blockMs?: number;
}

/** The most bytes a handler's result may have (the completion record keeps it whole). */
export const RESULT_MAX_BYTES = 1048576;

/** The most bytes a progress report may have. */
export const PROGRESS_MAX_BYTES = 4096;

/** The most events one read of the events script returns. */
export const EVENTS_PAGE_MAX = 1000;

/** The most minutes Queue.counters reads back. */
export const COUNTERS_MINUTES_MAX = 1440;

/** @internal A value as the bytes a handler's result or progress is kept as. */
export function outputBytes(v: unknown): RedisArg {
  if (v === undefined || v === null) {
    return "";
  }
  if (typeof v === "string") {
    return v;
  }
  if (v instanceof Uint8Array) {
    return Buffer.from(v);
  }
  const s = JSON.stringify(v);
  return s === undefined ? "" : s;
}

/** @internal Checks that b (a result or a progress report) has at most max bytes. */
export function checkOutputSize(what: string, b: RedisArg, max: number): void {
  const n = typeof b === "string" ? Buffer.byteLength(b) : b.length;
  if (n > max) {
    throw new ArgumentError(what + " of " + n + " bytes is over " + max);
  }
}

/** @internal Checks n is a non-negative safe integer. */
export function checkCount(what: string, n: number): void {
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new ArgumentError(what + " " + n + " is not a non-negative integer");
  }
}

/** @internal The wire form of a backoff: its word, base and bound. */
export interface WireBackoff {
  readonly backoff: Backoff;
  readonly backoffMs: number;
  readonly backoffMaxMs: number;
}

/** @internal Checks and converts a backoff; undefined is the job's inherit. */
export function wireBackoff(
  b: number | BackoffOptions | undefined,
): WireBackoff {
  if (b === undefined) {
    return { backoff: Backoff.inherit, backoffMs: 0, backoffMaxMs: 0 };
  }
  if (typeof b === "number") {
    checkCount("backoff", b);
    return { backoff: Backoff.fixed, backoffMs: b, backoffMaxMs: 0 };
  }
  const t = String(b.type);
  if (!isBackoff(t) || t === Backoff.inherit) {
    throw new ArgumentError(
      "backoff type " + JSON.stringify(t) + " is not a backoff of a policy",
    );
  }
  checkCount("backoff delay", b.delay);
  const max = b.max ?? 0;
  checkCount("backoff max", max);
  return { backoff: t, backoffMs: b.delay, backoffMaxMs: max };
}

/** @internal Whether o gives a job any option of its own (a delay, attempts or a backoff). */
export function hasJobOptions(o: JobOptions | undefined): boolean {
  return (
    o !== undefined &&
    ((o.delay !== undefined && o.delay !== 0) ||
      (o.attempts !== undefined && o.attempts !== 0) ||
      o.backoff !== undefined)
  );
}

/** @internal A job's options, checked, in the wire form of add_many. */
export interface WirePolicy extends WireBackoff {
  readonly delayMs: number;
  readonly attempts: number;
}

/** @internal Checks o and converts it. */
export function wirePolicy(o: JobOptions | undefined): WirePolicy {
  const delayMs = o?.delay ?? 0;
  checkCount("delay", delayMs);
  const attempts = o?.attempts ?? 0;
  checkCount("job attempts", attempts);
  return { delayMs, attempts, ...wireBackoff(o?.backoff) };
}

/** @internal The key that groups pushes of identical options in one batch. */
export function policyKey(p: WirePolicy): string {
  return [p.delayMs, p.attempts, p.backoff, p.backoffMs, p.backoffMaxMs].join(
    " ",
  );
}

/** @internal Whether s may be the after of an events read: "" or a stream id. */
export function isStreamId(s: string): boolean {
  return s === "" || /^\d+-\d+$/.test(s);
}

/**
 * A queue's events as an EventEmitter (echomq 2.4.0; Queue.listen), like
 * BullMQ's QueueEvents: each event is emitted under its word (Event.completed,
 * Event.failed, ... and a later minor's word as it is) and under "event",
 * with the QueueEvent as the argument. A read that fails for another reason
 * than the connection is emitted as "error" (logged when nobody listens),
 * and ends the listener. close() stops it; lastStreamId is where a new
 * listener resumes.
 */
export class QueueEvents extends EventEmitter {
  readonly #ac = new AbortController();
  readonly #done: Promise<void>;
  #last: string;

  /** Use Queue.listen. */
  constructor(
    source: (opts: EventsOptions) => AsyncIterable<QueueEvent>,
    opts: EventsOptions,
    onUnheard: (err: unknown) => void,
  ) {
    super();
    this.#last = opts.after ?? "";
    const outer = opts.signal;
    if (outer !== undefined) {
      if (outer.aborted) {
        this.#ac.abort();
      } else {
        outer.addEventListener("abort", () => this.#ac.abort(), {
          once: true,
        });
      }
    }
    const signal = this.#ac.signal;
    this.#done = (async () => {
      // Listeners attach in the tick that created this.
      await new Promise<void>((r) => setImmediate(r));
      try {
        for await (const ev of source({ ...opts, signal })) {
          this.#last = ev.streamId;
          if ((ev.event as string) !== "error") {
            this.emit(ev.event, ev);
          }
          this.emit("event", ev);
        }
      } catch (err) {
        if (this.listenerCount("error") > 0) {
          this.emit("error", err);
        } else {
          onUnheard(err);
        }
      }
    })();
  }

  /** The stream id of the last event emitted (the after it started from, before the first). */
  get lastStreamId(): string {
    return this.#last;
  }

  /** Stops listening; resolves once the last read returned. */
  async close(): Promise<void> {
    this.#ac.abort();
    await this.#done;
  }
}
