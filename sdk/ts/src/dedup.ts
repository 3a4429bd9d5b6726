// echomq 2.5.0 on the SDK's surface: deduplication by a caller's key (the
// options of a push, what it did, the entries of a key) and cancellation.

import {
  Admission,
  Dedup,
  isDedup,
  type RedisArg,
  type State,
} from "./gen/index.js";
import { ArgumentError } from "./errors.js";
import type { CallOptions } from "./client.js";
import { checkCount, type JobOptions } from "./outputs.js";

/**
 * How an admission with a deduplication key treats the key's holder (the
 * job an earlier admission of the key left holding it), for every job of
 * a call.
 */
export interface DedupPolicy {
  /**
   * Dedup.untilDone: while the holder is pending, scheduled or active, a
   * push returns the holder's id and admits nothing. Dedup.throttle: the
   * key is held for ttlMs from the admission that took it, whatever the
   * holder's fate. Dedup.debounce: a push while the holder waits replaces
   * its payload and moves its run-at to now plus the push's delay (while
   * it is active, a new job is admitted and takes the key). Dedup.keepLast:
   * at most one job of the key active and one waiting; a push while the
   * holder is active is parked behind it and runs once it is done.
   */
  readonly mode: Dedup;
  /** How long the key is held after the admission that took it, in ms, at most; 0 or unset: no bound. Throttle needs one (sub-second allowed). */
  readonly ttlMs?: number;
  /** Holds the key while its holder is dead (buried), until it is purged or revived and done. */
  readonly holdDead?: boolean;
  /** Holds the key while the holder's completion record is kept (WorkerOptions.keepResults). */
  readonly holdResult?: boolean;
}

/** A push's deduplication: the caller's key (any string or bytes, not empty) and its policy. */
export interface DedupOptions extends DedupPolicy {
  readonly key: string | Uint8Array;
}

/** The options of Queue.push with a deduplication key (echomq 2.5.0). */
export interface DedupPushOptions extends CallOptions, JobOptions {
  readonly dedup: DedupOptions;
  /**
   * The events stream's bound for the replaced event a replacement writes;
   * 0 writes none. Default the client's ConnectOptions.eventsMaxLen.
   */
  readonly eventsMaxLen?: number;
}

/**
 * The options of Queue.pushBatch with deduplication (echomq 2.5.0): the
 * policy of every job of the call (each job's own key is its
 * NewJob.dedupKey; a job without one is admitted as addMany admits it), the
 * job options of every job, and the call's bound.
 */
export interface DedupBatchOptions extends CallOptions, JobOptions {
  readonly dedup: DedupPolicy;
  /** As DedupPushOptions.eventsMaxLen. */
  readonly eventsMaxLen?: number;
}

/** The options of Queue.addDedup and Queue.replaceDedup, the one-call forms. */
export interface AddDedupOptions extends CallOptions, JobOptions {
  readonly dedup: DedupPolicy;
}

/** The options of Queue.replaceDedup. */
export interface ReplaceDedupOptions extends AddDedupOptions {
  /** The events stream's bound for the replaced event; 0 writes none. Default the client's. */
  readonly eventsMaxLen?: number;
}

/**
 * What a push with a deduplication key did (echomq 2.5.0): outcome is
 * Admission.admitted (id is the pushed job's, now the key's holder),
 * Admission.duplicate (nothing admitted; id is the holder's, or the
 * pushed job's own when its row exists), Admission.replaced (the waiting
 * holder, or the parked job, took the payload; id is that job's) or
 * Admission.parked (admitted behind the active holder, keep_last). A push
 * never resolves Admission.deferred; Queue.addDedup may.
 */
export interface DedupResult {
  readonly outcome: Admission;
  readonly id: string;
  /** The run-at of an admitted job, or of the replaced one after a debounce (server clock, Unix ms); 0 when pending, parked or untouched. */
  readonly runAtMs: number;
}

/** The outcome of one job of Queue.pushBatch with deduplication: its DedupResult, or why it failed. */
export type DedupBatchResult =
  | (DedupResult & { readonly enqueued: boolean; readonly error?: undefined })
  | { readonly enqueued: false; readonly error: Error };

/** What Queue.dedupEntries reads of one key, judged as an admission would judge it now. */
export interface DedupEntry {
  /** The job holding the key (a parked job whose holder is done counts as the holder); "" when the key has no entry. */
  readonly holder: string;
  /** The mode of the admission that took the key; "" when none. */
  readonly mode: Dedup | "";
  /** When the key's hold ends at the latest (server clock, Unix ms); 0: no bound. */
  readonly expiresMs: number;
  /** Whether an admission now would meet the holder (false: it would take the key). */
  readonly held: boolean;
  /** The state of the set holding the holder; "" when in none (completed, cancelled or purged). */
  readonly state: State | "";
  /** The job parked behind an active holder (keep_last); "" when none. */
  readonly parked: string;
}

/** One page of Queue.sweepDedup. */
export interface DedupSweep {
  /** The cursor of the next page; "0" when the walk is done. */
  readonly cursor: string;
  /** How many entries were deleted (they no longer held their keys). */
  readonly dropped: number;
  /** How many parked jobs became due (and their keys' holders). */
  readonly released: number;
}

/** The outcome of one id of Queue.cancelIds. */
export interface CancelResult {
  /** Whether the job was cancelled (false: it was dead, gone, or given twice, and is left as it is). */
  readonly cancelled: boolean;
  /** The state it was cancelled from; "" when it was not. */
  readonly state: State | "";
}

/** A job Queue.cancelKey cancelled. */
export interface CancelledJob {
  readonly id: string;
  /** The state it was cancelled from. */
  readonly state: State;
}

/** The most entries one page of Queue.sweepDedup walks. */
export const DEDUP_SWEEP_MAX = 1000;

/** How many times a push with a deduplication key sends its replacement again when the job to replace changed meanwhile. */
export const DEDUP_REPLACE_TRIES = 5;

/** @internal A deduplication policy, checked, in the wire form of add_dedup and replace_dedup. */
export interface WireDedup {
  readonly mode: Dedup;
  readonly ttlMs: number;
  readonly hold: number;
}

/** @internal Checks p and converts it; nothing is sent when it throws. */
export function wireDedup(p: DedupPolicy | undefined): WireDedup {
  if (p === undefined || p === null || typeof p !== "object") {
    throw new ArgumentError("a deduplication needs a mode");
  }
  const mode = String(p.mode);
  if (!isDedup(mode)) {
    throw new ArgumentError(
      "mode " + JSON.stringify(mode) + " is not a deduplication mode",
    );
  }
  const ttlMs = p.ttlMs ?? 0;
  checkCount("ttlMs", ttlMs);
  if (mode === Dedup.throttle && ttlMs === 0) {
    throw new ArgumentError("mode " + mode + " needs a ttlMs above 0");
  }
  const hold = (p.holdDead ? 1 : 0) + (p.holdResult ? 2 : 0);
  return { mode, ttlMs, hold };
}

/** @internal A deduplication key as sent: text as it is, bytes copied. */
export function dedupKeyArg(key: string | Uint8Array | undefined): RedisArg {
  if (key === undefined) {
    return "";
  }
  if (typeof key === "string") {
    return key;
  }
  if (key instanceof Uint8Array) {
    return Buffer.from(key);
  }
  throw new ArgumentError("a deduplication key is a string or bytes");
}

/** @internal Whether an admission outcome wrote a new job's row. */
export function admittedNew(outcome: Admission): boolean {
  return outcome === Admission.admitted || outcome === Admission.parked;
}
