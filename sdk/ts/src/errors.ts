// The SDK's own errors, beside the generated ones (malformed ids and queue
// names, wire classes): the version fence, the bundle check, bad arguments,
// oversized payloads, lost connections and a missing snowflake node.

import { VERSION_RECORD } from "./gen/index.js";

/** The prefix of every message of the SDK's errors. */
const PREFIX = "emq: ";

/**
 * @internal message under the SDK's prefix and topic, once: a message that
 * already carries the prefix (one of the SDK's own, passed on) keeps only
 * the outer one, so that no message reads "emq: ...: emq: ...".
 */
export function prefixed(topic: string, message: string): string {
  let m = message;
  while (m.startsWith(PREFIX)) {
    m = m.slice(PREFIX.length);
  }
  if (topic !== "" && m.startsWith(topic + ": ")) {
    m = m.slice(topic.length + 2);
  }
  return PREFIX + (topic === "" ? "" : topic + ": ") + m;
}

/**
 * @internal Puts where (a job's position in a batch, say) in front of err's
 * message, after the prefix: "emq: job 3: malformed id ...".
 */
export function locate(err: unknown, where: string): void {
  if (err instanceof Error) {
    err.message = err.message.startsWith(PREFIX)
      ? PREFIX + where + ": " + err.message.slice(PREFIX.length)
      : where + ": " + err.message;
  }
}

/**
 * The version fence's refusal: the keyspace's version record is not one
 * this client may serve (another major, a lower version the fence could not
 * raise, or a value that is not a version record). Nothing was written.
 */
export class FenceError extends Error {
  /** The version record found; empty when none could be read. */
  readonly found: string;
  /** This client's version record. */
  readonly want: string;

  constructor(found: string, want: string = VERSION_RECORD) {
    super(
      "emq: version fence: the keyspace is " +
        JSON.stringify(found) +
        ", this client speaks " +
        JSON.stringify(want),
    );
    this.name = "FenceError";
    this.found = found;
    this.want = want;
  }
}

/**
 * The bundle check's refusal: the reserve records another script bundle for
 * this client's version, so some client runs other scripts under the same
 * version number.
 */
export class BundleError extends Error {
  /** The version whose bundle is recorded. */
  readonly version: string;
  /** The digest recorded in the reserve. */
  readonly found: string;
  /** This client's bundle digest. */
  readonly want: string;

  constructor(version: string, found: string, want: string) {
    super(
      "emq: bundle identity: the reserve records bundle " +
        found +
        " for version " +
        version +
        ", this client runs " +
        want,
    );
    this.name = "BundleError";
    this.version = version;
    this.found = found;
    this.want = want;
  }
}

/** An argument out of range (a lease or a limit that is not positive); nothing was sent. */
export class ArgumentError extends Error {
  constructor(message: string) {
    super(prefixed("invalid argument", message));
    this.name = "ArgumentError";
  }
}

/** A payload larger than the client's cap; nothing was sent. */
export class PayloadTooLargeError extends ArgumentError {
  /** The payload's size in bytes. */
  readonly size: number;
  /** The cap in bytes. */
  readonly max: number;

  constructor(size: number, max: number) {
    super(
      "payload too large: " +
        size +
        " bytes, the cap is " +
        max +
        " (maxPayload, or the server's proto-max-bulk-len)",
    );
    this.name = "PayloadTooLargeError";
    this.size = size;
    this.max = max;
  }
}

/** How many attempts an idempotent call gets in all, across reconnects. */
export const RESEND_ATTEMPTS = 8;

/** The code of every ConnectionError. */
export const CONNECTION_ERROR_CODE = "ECONNECTION";

/**
 * A call failed in transport, not by any answer of the server's: the
 * connection was lost (the server restarted, or closed it), could not be
 * opened, timed out, or met a server still loading its dataset; the cause
 * says why. It is never a FenceError, even when the step that failed was
 * the version fence. It is retryable: the client fences again before its
 * next command. Idempotent calls (push, coalesced or not, pushMany,
 * pushBatch, enqueue, enqueueAt and the read-only size, sizes, browse,
 * get, page) are already resent by the client a few times over about a
 * second, within their CallOptions; the others (claim, claimIds, complete,
 * retry, bury, extend, revive, purge, promote, reap, completeClaim, ...)
 * are never resent, as they may or may not have run, and the client fences
 * again before its next command.
 */
export class ConnectionError extends Error {
  /** Always CONNECTION_ERROR_CODE. */
  readonly code = CONNECTION_ERROR_CODE;
  /** Always true: the call may be made again. */
  readonly retryable = true;

  constructor(message: string, cause?: unknown) {
    super(prefixed("connection", message), { cause });
    this.name = "ConnectionError";
  }
}

/** The ConnectionErrors of commands that were never written: the client was offline (reconnecting) or its connection not yet up. */
const unwritten = new WeakSet<object>();
/** The ConnectionErrors of calls that already waited their whole bound for the connection. */
const waited = new WeakSet<object>();

/**
 * @internal Marks err, a ConnectionError, as the failure of a command that
 * was never written (the client was offline), so that the client may wait
 * for the connection and send it then, whatever the command is.
 */
export function markUnwritten<E extends ConnectionError>(err: E): E {
  unwritten.add(err);
  return err;
}

/** @internal Whether err is a ConnectionError of a command that was never written. */
export function isUnwritten(err: unknown): boolean {
  return typeof err === "object" && err !== null && unwritten.has(err);
}

/**
 * @internal Marks err as the failure of a call that waited for the
 * connection for as long as its bound allowed: no resend follows.
 */
export function markWaited<E extends ConnectionError>(err: E): E {
  waited.add(err);
  return err;
}

/** @internal Whether err is the failure of a call that already waited its whole bound for the connection. */
export function isWaited(err: unknown): boolean {
  return typeof err === "object" && err !== null && waited.has(err);
}

/**
 * A call's deadline (CallOptions.deadline) passed before it could be sent
 * (again); the attempt that would have followed was not sent.
 */
export class DeadlineError extends Error {
  /** The deadline, in Unix milliseconds. */
  readonly deadline: number;

  constructor(deadline: number) {
    super("emq: the call's deadline passed");
    this.name = "DeadlineError";
    this.deadline = deadline;
  }
}

/** The client holds no snowflake node to mint ids with. */
export class NoNodeError extends Error {
  constructor(message: string = "no snowflake node held") {
    super(prefixed("", message));
    this.name = "NoNodeError";
  }
}

/** The reason a handler's signal aborts when its job's lease was lost. */
export class LeaseLostError extends Error {
  constructor() {
    super("emq: the job's lease was lost");
    this.name = "LeaseLostError";
  }
}

/**
 * The reason a handler's signal aborts when a shutdown's deadline passed
 * before the handler returned; its job was handed back.
 */
export class ShutdownError extends Error {
  constructor() {
    super("emq: the worker shut down");
    this.name = "ShutdownError";
  }
}

/**
 * The reason a handler's signal aborts when the job ran past the worker's
 * jobTimeoutMs; the attempt was recorded as a timeout (echomq 2.3.0).
 */
export class JobTimeoutError extends Error {
  /** The worker's job timeout, in milliseconds. */
  readonly timeoutMs: number;
  constructor(timeoutMs: number) {
    super(
      "emq: the job ran past the worker's job timeout of " + timeoutMs + " ms",
    );
    this.name = "JobTimeoutError";
    this.timeoutMs = timeoutMs;
  }
}

/**
 * The reason a handler's signal aborts when its job was cancelled
 * (echomq 2.5.0; Queue.cancelIds or Queue.cancelKey, by any client): the
 * job's row is gone, so nothing the handler does can be settled, and the
 * worker neither retries nor buries it.
 */
export class CancelledError extends Error {
  /** The cancelled job's id. */
  readonly id: string;
  /** The token of the lease the handler held. */
  readonly token: number;
  constructor(id: string, token: number) {
    super("emq: job " + id + " was cancelled");
    this.name = "CancelledError";
    this.id = id;
    this.token = token;
  }
}

/**
 * A push with a deduplication key (echomq 2.5.0) that would replace a
 * waiting job met a different job to replace at each of its tries: the
 * key's holder kept changing under concurrent pushes. Nothing of this
 * push was written; it may be pushed again.
 */
export class DedupContentionError extends Error {
  /** The pushed job's id. */
  readonly id: string;
  /** The job the last try would have replaced. */
  readonly target: string;
  /** How many tries were made. */
  readonly tries: number;
  constructor(id: string, target: string, tries: number) {
    super(
      "emq: job " +
        id +
        ": the job its key would replace changed at each of " +
        tries +
        " tries (last " +
        target +
        ")",
    );
    this.name = "DedupContentionError";
    this.id = id;
    this.target = target;
    this.tries = tries;
  }
}

/**
 * A pause or a concurrency cap (echomq 2.7.0) refused before anything was
 * sent to set it: it would lay the queue's tripwire, and the reserve's
 * bundle record names a release below the tripwire's floor
 * (ACTIVE_TRIPWIRE_FLOOR) among the versions whose clients have fenced on
 * this deployment. Such a release's scripts write before they read the
 * active key, so the tripwire cannot refuse them safely. It is an
 * ArgumentError; PolicyOptions.force lays the tripwire anyway: only when
 * no such client is left.
 */
export class PolicyFloorError extends ArgumentError {
  /** The queue whose policy was refused. */
  readonly queue: string;
  /** The recorded versions below the floor. */
  readonly versions: readonly string[];
  /** The tripwire's floor. */
  readonly floor: string;

  constructor(queue: string, versions: readonly string[], floor: string) {
    super(
      "queue " +
        queue +
        ": the bundle record names " +
        versions.join(", ") +
        ", below the tripwire floor " +
        floor +
        ": a client of such a release would write past the tripwire (force only when no such client is left)",
    );
    this.name = "PolicyFloorError";
    this.queue = queue;
    this.versions = versions;
    this.floor = floor;
  }
}
