// Coalesced pushes: the queue.push() calls of one client to one queue that
// overlap in time go to the server as one push_many call per batch, each
// caller getting its own job's result.

import {
  ConnectionError,
  RESEND_ATTEMPTS,
  BundleError,
  FenceError,
  isWaited,
} from "./errors.js";
import {
  SCRIPT_PUSH_MANY,
  addManyExec,
  decodeAddMany,
  decodePushMany,
  runScript,
  type QueueKeys,
  type RedisArg,
  type ScriptExec,
} from "./gen/index.js";
import {
  checkCall,
  resendPause,
  type CallOptions,
  type Client,
  type CoalesceOptions,
} from "./client.js";
import type { WirePolicy } from "./outputs.js";

/** One push waiting for its batch. */
interface Entry {
  readonly id: string;
  readonly row: string;
  readonly payload: RedisArg;
  readonly opts: CallOptions | undefined;
  readonly resolve: (enqueued: boolean) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * Sends the jobs of one job alone, as one push script: the fallback when a
 * batch as a whole was refused.
 */
export type PushOne = (
  id: string,
  payload: RedisArg,
  opts: CallOptions | undefined,
) => Promise<boolean>;

/** Builds the push_many call of entries (their ids and rows were checked when they were pushed). */
export function pushManyExecOf(
  keys: QueueKeys,
  ids: readonly string[],
  rows: readonly string[],
  payloads: readonly RedisArg[],
): ScriptExec {
  const k: string[] = [keys.pending, keys.wake];
  const argv: RedisArg[] = [];
  for (let i = 0; i < ids.length; i++) {
    k.push(rows[i]!);
    argv.push(ids[i]!, payloads[i]!);
  }
  return { script: SCRIPT_PUSH_MANY, keys: k, argv };
}

/**
 * Builds the add_many call of jobs sharing one policy (their ids and rows
 * were checked when they were pushed).
 */
export function addManyExecOf(
  keys: QueueKeys,
  p: WirePolicy,
  ids: readonly string[],
  rows: readonly string[],
  payloads: readonly RedisArg[],
): ScriptExec {
  const x = addManyExec({
    pending: keys.pending,
    schedule: keys.schedule,
    wake: keys.wake,
    options: keys.options,
    rows,
    delayMs: p.delayMs,
    attempts: p.attempts,
    backoff: p.backoff,
    backoffMs: p.backoffMs,
    backoffMaxMs: p.backoffMaxMs,
    entries: [],
  });
  const argv: RedisArg[] = [...x.argv];
  for (let i = 0; i < ids.length; i++) {
    argv.push(ids[i]!, payloads[i]!);
  }
  return { script: x.script, keys: x.keys, argv };
}

/** Whether err is a failure no resend or fallback can help: a lost connection out of attempts, or the fence's refusal. */
function terminal(err: unknown): boolean {
  return (
    err instanceof ConnectionError ||
    err instanceof FenceError ||
    err instanceof BundleError
  );
}

/**
 * The push coalescer of one queue of one client (of one set of job
 * options: pushes with options go in add_many calls, each of pushes with
 * the same options). A push joins the batch
 * being gathered; the batch is sent after the current tick when no batch
 * of the queue is in flight, when a batch in flight returns, after
 * lingerMs while one is in flight, or at once when it holds maxBatch jobs.
 */
export class Pusher {
  readonly #client: Client;
  readonly #keys: QueueKeys;
  readonly #opt: Required<CoalesceOptions>;
  readonly #one: PushOne;
  readonly #policy: WirePolicy | undefined;
  #pending: Entry[] = [];
  #inflight = 0;
  #soon = false;
  #linger: NodeJS.Timeout | undefined;
  readonly #flush = () => this.flush();

  constructor(
    client: Client,
    keys: QueueKeys,
    opt: Required<CoalesceOptions>,
    one: PushOne,
    policy?: WirePolicy,
  ) {
    this.#client = client;
    this.#keys = keys;
    this.#opt = opt;
    this.#one = one;
    this.#policy = policy;
  }

  /** Whether nothing is gathered or in flight: the pusher may be dropped. */
  get idle(): boolean {
    return this.#pending.length === 0 && this.#inflight === 0;
  }

  /** Queues one push (id and row already checked) and resolves with its job's result. */
  push(
    id: string,
    row: string,
    payload: RedisArg,
    opts: CallOptions | undefined,
  ): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.#pending.push({ id, row, payload, opts, resolve, reject });
      if (this.#pending.length >= this.#opt.maxBatch) {
        this.flush();
      } else if (this.#inflight === 0 || this.#opt.lingerMs === 0) {
        // After the pushes made by what runs now and its promise chains
        // (a tick runs once the microtask queue drained), before I/O.
        if (!this.#soon) {
          this.#soon = true;
          process.nextTick(this.#flush);
        }
      } else {
        this.#linger ??= setTimeout(this.#flush, this.#opt.lingerMs);
      }
    });
  }

  /** Sends what is gathered, in batches of at most maxBatch. */
  flush(): void {
    this.#soon = false;
    if (this.#linger !== undefined) {
      clearTimeout(this.#linger);
      this.#linger = undefined;
    }
    while (this.#pending.length > 0) {
      const max = this.#opt.maxBatch;
      let batch: Entry[];
      if (this.#pending.length <= max) {
        batch = this.#pending;
        this.#pending = [];
      } else {
        batch = this.#pending.splice(0, max);
      }
      this.#inflight++;
      void this.#send(batch).finally(() => {
        this.#inflight--;
        if (this.#inflight === 0 && this.#pending.length > 0) {
          this.flush();
        }
      });
    }
  }

  /**
   * Sends one batch: resent on a fresh, fenced connection while it fails in
   * transport (the entries aborted or past their deadline dropped before
   * each attempt), and, when the call as a whole was refused (a job of
   * another kind, a row of another type), each job on its own.
   */
  async #send(batch: Entry[]): Promise<void> {
    const c = this.#client;
    let last: unknown;
    for (let n = 0; ; n++) {
      batch = live(batch, last);
      if (batch.length === 0) {
        return;
      }
      if (n === 0 && batch.length === 1 && this.#policy === undefined) {
        // A job alone goes out as one push call, as the Go and Python SDKs
        // send it: the SDKs' wire traces are one (emqconform -trace).
        const e = batch[0]!;
        await this.#one(e.id, e.payload, e.opts).then(e.resolve, e.reject);
        return;
      }
      const ids: string[] = [];
      const rows: string[] = [];
      const payloads: RedisArg[] = [];
      for (const e of batch) {
        ids.push(e.id);
        rows.push(e.row);
        payloads.push(e.payload);
      }
      let recs;
      const bound = batchBound(batch);
      try {
        if (!c.isFenced) {
          await c.ensure(bound.opts);
        }
        const p = this.#policy;
        recs =
          p === undefined
            ? decodePushMany(
                await runScript(
                  c.runnerFor(bound.opts),
                  pushManyExecOf(this.#keys, ids, rows, payloads),
                ),
              )
            : decodeAddMany(
                await runScript(
                  c.runnerFor(bound.opts),
                  addManyExecOf(this.#keys, p, ids, rows, payloads),
                ),
              );
        if (recs.length !== batch.length) {
          throw new Error(
            "emq: push_many answered " +
              recs.length +
              " records for " +
              batch.length +
              " jobs",
          );
        }
      } catch (err) {
        if (
          err instanceof ConnectionError &&
          !isWaited(err) &&
          n + 1 < RESEND_ATTEMPTS
        ) {
          last = err;
          c.logger.debug(
            "emq: a push batch failed in transport; resending it",
            {
              attempt: n + 1,
              jobs: batch.length,
              err: String(err),
            },
          );
          await resendPause(n + 1);
          continue;
        }
        if (terminal(err)) {
          for (const e of batch) {
            e.reject(err);
          }
          return;
        }
        // Refused as a whole: each job on its own gets its own answer.
        await Promise.all(
          batch.map((e) =>
            this.#one(e.id, e.payload, e.opts).then(e.resolve, e.reject),
          ),
        );
        return;
      } finally {
        bound.dispose();
      }
      let added = 0;
      for (let i = 0; i < batch.length; i++) {
        const ok = recs[i]!.enqueued === 1;
        if (ok) {
          added++;
        }
        batch[i]!.resolve(ok);
      }
      if (added > 0) {
        c.metrics.add("enqueued", this.#keys.queue, added);
      }
      return;
    }
  }
}

const noDispose = () => {};

/**
 * The bound of a batch's wait for the connection (see
 * ConnectOptions.offlineWaitMs): when every push of it has a deadline, the
 * latest; when every push has a signal, the moment the last one aborts;
 * otherwise the client's default. A push whose own bound passed sooner is
 * dropped before the batch is sent again.
 */
function batchBound(batch: readonly Entry[]): {
  opts: CallOptions | undefined;
  dispose: () => void;
} {
  let deadline: number | undefined = -Infinity;
  let signals: AbortSignal[] | undefined = [];
  for (const e of batch) {
    const d = e.opts?.deadline;
    deadline =
      d === undefined || deadline === undefined
        ? undefined
        : Math.max(deadline, d);
    const sig = e.opts?.signal;
    if (sig === undefined) {
      signals = undefined;
    } else {
      signals?.push(sig);
    }
    if (deadline === undefined && signals === undefined) {
      return { opts: undefined, dispose: noDispose };
    }
  }
  if (signals === undefined) {
    return { opts: { deadline: deadline! }, dispose: noDispose };
  }
  const ac = new AbortController();
  let left = signals.length;
  const one = () => {
    if (--left === 0) {
      ac.abort();
    }
  };
  for (const sig of signals) {
    if (sig.aborted) {
      one();
    } else {
      sig.addEventListener("abort", one, { once: true });
    }
  }
  const sigs = signals;
  return {
    opts:
      deadline === undefined
        ? { signal: ac.signal }
        : { signal: ac.signal, deadline },
    dispose: () => {
      for (const sig of sigs) {
        sig.removeEventListener("abort", one);
      }
    },
  };
}

/**
 * The entries that may still be sent; the others are rejected: with last,
 * the error of the attempt that failed, when there was one (as
 * Client.resend does), else with their signal's reason or a DeadlineError.
 */
function live(batch: Entry[], last: unknown): Entry[] {
  let out: Entry[] | undefined;
  for (let i = 0; i < batch.length; i++) {
    const e = batch[i]!;
    let ok = true;
    if (e.opts !== undefined) {
      try {
        checkCall(e.opts);
      } catch (err) {
        e.reject(last ?? err);
        ok = false;
      }
    }
    if (!ok && out === undefined) {
      out = batch.slice(0, i);
    } else if (ok && out !== undefined) {
      out.push(e);
    }
  }
  return out ?? batch;
}
