// A queue's policies (echomq 2.7.0): pause and a concurrency cap, kept by
// set_policy behind the active key's tripwire, and read by queue_policy.

import { ACTIVE_TRIPWIRE_FLOOR, type QueuePolicyReply } from "./gen/index.js";
import type { CallOptions } from "./client.js";

/**
 * A queue's policies as Queue.policy reads them and Queue.pause, resume and
 * setConcurrency leave them (echomq 2.7.0).
 */
export interface QueuePolicy {
  /** Whether the queue is paused: claims lease nothing; producers keep enqueueing. */
  readonly paused: boolean;
  /** The cap on the queue's jobs leased at once, across every worker; 0: none. */
  readonly concurrency: number;
  /**
   * The minor of this major the queue's tripwire names (7 while it has a
   * policy): a client of an older minor is refused on the queue; 0 when
   * the queue has no policy and no tripwire.
   */
  readonly requires: number;
  /** How many of the queue's jobs are leased now. */
  readonly leased: number;
}

/** Options of Queue.pause and Queue.setConcurrency, the calls that may lay the tripwire. */
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

/** @internal The policy of a queue_policy reply. */
export function queuePolicyOf(r: QueuePolicyReply): QueuePolicy {
  return {
    paused: r.paused === 1,
    concurrency: r.concurrency,
    requires: r.requires,
    leased: r.leased,
  };
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
