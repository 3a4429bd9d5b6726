// Failure records (echomq 2.3.0): why a job's attempts failed, as
// retryFailed, buryFailed and the maintenance's reap record them, and as
// the failures script reads them back. The record is packed by the
// scripts; the SDK never parses it, it only decodes the failures script's
// reply.

import { hostname } from "node:os";
import {
  FAILURE_CLASSES,
  STATE_DEAD,
  decodeFailures,
  isFailureClass,
  type FailureClass,
  type FailuresReply,
  type State,
} from "./gen/index.js";
import { ArgumentError } from "./errors.js";

/** Why an attempt failed, as retryFailed and buryFailed record it. */
export interface Failure {
  /**
   * Why: a word of the failure_class vocabulary (FailureClass). Any other
   * is refused with an ArgumentError before anything is sent.
   */
  readonly class: FailureClass;
  /**
   * The worker that ran the attempt; the record keeps its first 128
   * bytes. Default the process's name, `<hostname>:<pid>` (a Worker
   * passes its own name).
   */
  readonly worker?: string;
  /** The error's text; the record keeps its first 2048 bytes. */
  readonly message: string;
}

/** One failed attempt of a job, as its failure record holds it. */
export interface FailedAttempt {
  /** The attempt that failed: the token its lease held. */
  readonly attempt: number;
  /** When it was recorded (server clock). */
  readonly at: Date;
  /** When it was recorded, in Unix milliseconds (server clock). */
  readonly atMs: number;
  /**
   * Why: a word of the failure_class vocabulary, or, recorded by a later
   * minor, a word this SDK does not know yet, kept as it is.
   */
  readonly class: FailureClass | string;
  /** The worker that ran it; empty for a lost lease. */
  readonly worker: string;
  /** The error's text. */
  readonly message: string;
}

/** The default worker name: `<hostname>:<pid>`. */
export function defaultWorkerName(): string {
  return hostname() + ":" + process.pid;
}

/** @internal Refuses f before anything is sent when its class is not a word of the vocabulary. */
export function checkFailure(f: Failure): void {
  if (f === null || typeof f !== "object") {
    throw new ArgumentError("a failure is needed");
  }
  if (typeof f.class !== "string" || !isFailureClass(f.class)) {
    throw new ArgumentError(
      "failure class " +
        JSON.stringify(f.class) +
        " is not one of " +
        FAILURE_CLASSES.join(", "),
    );
  }
}

/** One record of the failures script's reply as a FailedAttempt. */
function attemptOf(r: FailuresReply): FailedAttempt {
  return {
    attempt: r.attempt,
    at: new Date(r.atMs),
    atMs: r.atMs,
    class: r.class as string,
    worker: r.worker,
    message: r.error.toString("utf8"),
  };
}

/**
 * Decodes a reply of the failures script into failed attempts, oldest
 * first. A class word the vocabulary does not know (a later minor's) is
 * kept as it is.
 */
export function decodeFailedAttempts(reply: unknown): FailedAttempt[] {
  return decodeFailures(reply).map(attemptOf);
}

/**
 * When a job died, by its failure record: the time of its last recorded
 * attempt when that attempt is the row's attempts and the row is dead;
 * null when the job is not dead or the record does not say (its last
 * attempt was settled by a client that records nothing): not recorded,
 * never guessed.
 */
export function diedAt(
  state: State,
  attempts: number,
  history: readonly FailedAttempt[],
): Date | null {
  if (state !== STATE_DEAD || history.length === 0) {
    return null;
  }
  const last = history[history.length - 1]!;
  return last.attempt === attempts ? last.at : null;
}

/** @internal The text a failure record keeps of a handler's error. */
export function failureMessage(err: unknown): string {
  if (err instanceof Error) {
    return err.message;
  }
  return String(err);
}
