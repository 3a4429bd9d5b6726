// A queue's policies: pause and a concurrency cap (echomq 2.7.0), and a
// rate limit (echomq 2.8.0), kept by configure_policy behind the active
// key's tripwire, and read by read_policy.

import {
  ACTIVE_TRIPWIRE_FLOOR,
  CONFIGURE_POLICY_RATE_LIMIT_MAX,
  CONFIGURE_POLICY_RATE_PERIOD_MS_MAX,
  type ReadPolicyReply,
} from "./gen/index.js";
import type { CallOptions } from "./client.js";
import { ArgumentError } from "./errors.js";

/**
 * A queue's policies as Queue.policy reads them and Queue.pause, resume,
 * setConcurrency and setRateLimit leave them (echomq 2.7.0; the rate limit
 * since 2.8.0).
 */
export interface QueuePolicy {
  /** Whether the queue is paused: claims lease nothing; producers keep enqueueing. */
  readonly paused: boolean;
  /** The cap on the queue's jobs leased at once, across every worker; 0: none. */
  readonly concurrency: number;
  /**
   * The minor of this major the queue's tripwire names (7 while it has a
   * pause or a cap, 8 while it has a rate limit): a client of an older
   * minor is refused on the queue; 0 when the queue has no policy and no
   * tripwire.
   */
  readonly requires: number;
  /** How many of the queue's jobs are leased now. */
  readonly leased: number;
  /**
   * The most jobs of the queue started (leased) in any window of
   * ratePeriodMs, across every worker; 0: no rate limit (echomq 2.8.0).
   */
  readonly rateLimit: number;
  /** The rate limit's period in milliseconds; 0: no rate limit (echomq 2.8.0). */
  readonly ratePeriodMs: number;
  /**
   * How many milliseconds until the rate limit admits the next start, as
   * the read found it; 0 when one is admitted now or there is no limit
   * (echomq 2.8.0).
   */
  readonly admitInMs: number;
}

/** Options of Queue.pause, Queue.setConcurrency and Queue.setRateLimit, the calls that may lay the tripwire. */
export interface PolicyOptions extends CallOptions {
  /**
   * Lays the tripwire even when the reserve's bundle record names a release
   * below ACTIVE_TRIPWIRE_FLOOR: only when no such client is left (a
   * client of such a release writes before it reads the active key, so the
   * tripwire cannot refuse it). Default false: such a call is refused with
   * a PolicyFloorError (an ArgumentError) and nothing is written.
   */
  readonly force?: boolean;
}

/** @internal The policy of a read_policy reply. */
export function queuePolicyOf(r: ReadPolicyReply): QueuePolicy {
  return {
    paused: r.paused === 1,
    concurrency: r.concurrency,
    requires: r.requires,
    leased: r.leased,
    rateLimit: r.rateLimit,
    ratePeriodMs: r.ratePeriodMs,
    admitInMs: r.admitInMs,
  };
}

/**
 * The most starts a rate limit allows per period (configure_policy's
 * rate_limit bound, echomq 2.8.0).
 */
export const RATE_LIMIT_MAX = CONFIGURE_POLICY_RATE_LIMIT_MAX;

/** The longest period of a rate limit, in milliseconds: a day (configure_policy's rate_period_ms bound, echomq 2.8.0). */
export const RATE_PERIOD_MAX_MS = CONFIGURE_POLICY_RATE_PERIOD_MS_MAX;

/**
 * @internal Throws an ArgumentError unless limit is a whole number from 0
 * (no limit) to RATE_LIMIT_MAX and, when limit > 0, periodMs a whole number
 * of milliseconds from 1 to RATE_PERIOD_MAX_MS; periodMs is not read when
 * limit is 0.
 */
export function checkRateLimit(limit: number, periodMs: number): void {
  if (!Number.isSafeInteger(limit) || limit < 0 || limit > RATE_LIMIT_MAX) {
    throw new ArgumentError(
      "rate limit " +
        String(limit) +
        " is not a whole number from 0 (none) to " +
        RATE_LIMIT_MAX,
    );
  }
  if (
    limit > 0 &&
    (!Number.isSafeInteger(periodMs) ||
      periodMs < 1 ||
      periodMs > RATE_PERIOD_MAX_MS)
  ) {
    throw new ArgumentError(
      "rate period " +
        String(periodMs) +
        " ms is not a whole number of milliseconds from 1 to " +
        RATE_PERIOD_MAX_MS,
    );
  }
}

/** The numeric parts of a version "major.minor.patch"; undefined for anything else. */
function versionParts(v: string): number[] | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(v);
  return m === null ? undefined : [Number(m[1]), Number(m[2]), Number(m[3])];
}

/**
 * @internal The versions of a bundle record's fields (HKEYS of the
 * reserve's bundle member) below floor, in the order given; a field that is
 * not a version is not one.
 */
export function belowFloor(
  fields: readonly string[],
  floor: string = ACTIVE_TRIPWIRE_FLOOR,
): string[] {
  const f = versionParts(floor);
  if (f === undefined) {
    throw new Error("emq: the tripwire floor " + floor + " is not a version");
  }
  return fields.filter((v) => {
    const p = versionParts(v);
    if (p === undefined) {
      return false;
    }
    for (let i = 0; i < 3; i++) {
      if (p[i] !== f[i]) {
        return p[i]! < f[i]!;
      }
    }
    return false;
  });
}
