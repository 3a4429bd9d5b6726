// Queue: the bus surface of one queue. The caller never builds a key or
// names a script.

import {
  FIELD_PAYLOAD,
  FIELD_STATE,
  FIELD_TOKEN,
  QueueKeys,
  PUSH_ENQUEUED,
  REVIVE_REVIVED,
  PURGE_PURGED,
  ENQUEUE_ENQUEUED,
  ENQUEUE_AT_ENQUEUED,
  SETS,
  isSetName,
  isState,
  parseId,
  pushExec,
  runBury,
  runClaim,
  runClaimMany,
  runCompleteClaim,
  runComplete,
  runEnqueue,
  runEnqueueAt,
  runExtend,
  runPromote,
  runPurge,
  runReap,
  runRetry,
  runRevive,
  runRing,
  runScript,
  runScripts,
  decodePush,
  setIsLex,
  stateSet,
  type ScriptExec,
  type Settled,
  type SetName,
  type State,
} from "./gen/index.js";
import { ArgumentError, ConnectionError, RESEND_ATTEMPTS } from "./errors.js";
import type { Client } from "./client.js";

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
}

/** A page of a set: its ids, newest first, and the cursor of the next page ("" after the last). */
export interface Page {
  readonly ids: string[];
  readonly next: string;
}

function bytes(p: Payload): Buffer {
  return typeof p === "string" ? Buffer.from(p) : Buffer.from(p);
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

function str(v: unknown): string {
  return Buffer.isBuffer(v) ? v.toString() : String(v);
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
      payload: bytes(payload),
    });
  }

  /**
   * Admits a job like enqueue and rings the queue's doorbell, so that an
   * idle worker starts it within milliseconds. It resolves false for a
   * duplicate id (the row is left untouched); an id of another kind than the
   * work kind is refused with a KindError. A push is idempotent while the
   * job exists: pushing an id again after an error never makes a second job
   * while the first is queued, running or dead. A push that failed in
   * transport is resent so (see Client.resend); should the lost attempt
   * have admitted the job, the resend resolves false.
   */
  async push(id: string, payload: Payload): Promise<boolean> {
    return this.client.resend(async () => {
      const x = this.#pushExec(id, payload);
      await this.client.ensure();
      const ok =
        decodePush(await runScript(this.client.adapter, x)) === PUSH_ENQUEUED;
      this.#counted(ok ? 1 : 0);
      return ok;
    });
  }

  /**
   * Admits many jobs in one pipelined round trip. Malformed ids and
   * oversized payloads throw before anything is sent. The result tells, per
   * job, whether it was enqueued (false: a duplicate) or why it failed; the
   * others still took effect.
   */
  async pushBatch(jobs: readonly NewJob[]): Promise<BatchResult[]> {
    if (jobs.length === 0) {
      return [];
    }
    const xs = jobs.map((j, i) => {
      try {
        return this.#pushExec(j.id, j.payload);
      } catch (err) {
        if (err instanceof Error) {
          err.message = "job " + i + ": " + err.message;
        }
        throw err;
      }
    });
    // Resent across a reconnect: the jobs whose calls failed in transport,
    // and only those (a resent job the lost attempt admitted reports false).
    const out: BatchResult[] = jobs.map(() => ({ enqueued: false }));
    let todo = xs.map((_, i) => i);
    let n = 0;
    for (let attempt = 0; todo.length > 0; attempt++) {
      const idx = todo;
      let res: Settled[];
      try {
        await this.client.resend(() => this.client.ensure());
        res = await runScripts(
          this.client.adapter,
          idx.map((i) => xs[i]!),
        );
      } catch (err) {
        if (
          !(err instanceof ConnectionError) ||
          attempt + 1 >= RESEND_ATTEMPTS
        ) {
          throw err;
        }
        continue;
      }
      todo = [];
      res.forEach((r, j) => {
        const i = idx[j]!;
        if (!r.ok) {
          const error =
            r.error instanceof Error ? r.error : new Error(String(r.error));
          out[i] = { enqueued: false, error };
          if (
            error instanceof ConnectionError &&
            attempt + 1 < RESEND_ATTEMPTS
          ) {
            todo.push(i);
          }
          return;
        }
        try {
          const ok = decodePush(r.value) === PUSH_ENQUEUED;
          n += ok ? 1 : 0;
          out[i] = { enqueued: ok };
        } catch (err) {
          out[i] = { enqueued: false, error: err as Error };
        }
      });
      if (todo.length > 0) {
        await new Promise((r) =>
          setTimeout(r, Math.min(10 * 2 ** attempt, 500)),
        );
      }
    }
    this.#counted(n);
    return out;
  }

  /**
   * Admits a job with id and payload, without ringing the doorbell. It
   * resolves false when a job with this id already exists; an id of another
   * kind than the work kind is refused with a KindError.
   */
  async enqueue(id: string, payload: Payload): Promise<boolean> {
    return this.client.resend(async () => {
      const row = this.keys.row(id);
      this.client.checkPayload(payload);
      await this.client.ensure();
      const n = await runEnqueue(this.client.adapter, {
        row,
        pending: this.keys.pending,
        id,
        payload: bytes(payload),
      });
      this.#counted(n === ENQUEUE_ENQUEUED ? 1 : 0);
      return n === ENQUEUE_ENQUEUED;
    });
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
  ): Promise<boolean> {
    return this.client.resend(async () => {
      const row = this.keys.row(id);
      this.client.checkPayload(payload);
      nonNegativeInt("run-at", runAtMs);
      await this.client.ensure();
      const n = await runEnqueueAt(this.client.adapter, {
        row,
        schedule: this.keys.schedule,
        id,
        payload: bytes(payload),
        runAtMs,
      });
      this.#counted(n === ENQUEUE_AT_ENQUEUED ? 1 : 0);
      return n === ENQUEUE_AT_ENQUEUED;
    });
  }

  /**
   * Leases the oldest pending job for leaseMs; null when nothing is
   * pending. The job's token must be presented to every later transition.
   */
  async claim(leaseMs: number): Promise<Job | null> {
    positiveInt("lease", leaseMs);
    await this.client.ensure();
    const r = await runClaim(this.client.adapter, {
      pending: this.keys.pending,
      active: this.keys.active,
      prefix: this.keys.rowPrefix,
      leaseMs,
    });
    return r;
  }

  /**
   * Leases up to count of the oldest pending jobs for leaseMs at once,
   * oldest first; empty when nothing is pending. It rings the doorbell again
   * when jobs remain.
   */
  async claimMany(leaseMs: number, count: number): Promise<Job[]> {
    positiveInt("lease", leaseMs);
    positiveInt("count", count);
    await this.client.ensure();
    return runClaimMany(this.client.adapter, {
      pending: this.keys.pending,
      active: this.keys.active,
      wake: this.keys.wake,
      prefix: this.keys.rowPrefix,
      leaseMs,
      count,
    });
  }

  /**
   * Retires an active job like complete, then leases up to count (0 or
   * more) of the oldest pending jobs for leaseMs, in one call. A stale token
   * is refused with a StaleError, and nothing is leased.
   */
  async completeClaim(
    id: string,
    token: number,
    leaseMs: number,
    count: number,
  ): Promise<Job[]> {
    const row = this.keys.row(id);
    positiveInt("lease", leaseMs);
    nonNegativeInt("count", count);
    await this.client.ensure();
    return runCompleteClaim(this.client.adapter, {
      row,
      active: this.keys.active,
      pending: this.keys.pending,
      wake: this.keys.wake,
      id,
      token,
      prefix: this.keys.rowPrefix,
      leaseMs,
      count,
    });
  }

  /**
   * Pushes the lease of an active job to now + leaseMs and resolves the new
   * deadline; a token that is not the row's, or a job no longer active, is
   * refused with a StaleError.
   */
  async extend(id: string, token: number, leaseMs: number): Promise<number> {
    const row = this.keys.row(id);
    positiveInt("lease", leaseMs);
    await this.client.ensure();
    return runExtend(this.client.adapter, {
      active: this.keys.active,
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
  async complete(id: string, token: number): Promise<void> {
    const row = this.keys.row(id);
    await this.client.ensure();
    await runComplete(this.client.adapter, {
      active: this.keys.active,
      row,
      id,
      token,
    });
  }

  /**
   * Hands an active job back to run again after delayMs (it is scheduled,
   * and promote makes it pending) and resolves its run-at. A stale token is
   * refused with a StaleError.
   */
  async retry(id: string, token: number, delayMs: number): Promise<number> {
    const row = this.keys.row(id);
    nonNegativeInt("delay", delayMs);
    await this.client.ensure();
    return runRetry(this.client.adapter, {
      active: this.keys.active,
      row,
      schedule: this.keys.schedule,
      id,
      token,
      delayMs,
    });
  }

  /** Moves an active job to the dead set; a stale token is refused with a StaleError. */
  async bury(id: string, token: number): Promise<void> {
    const row = this.keys.row(id);
    await this.client.ensure();
    await runBury(this.client.adapter, {
      active: this.keys.active,
      row,
      dead: this.keys.dead,
      id,
      token,
    });
  }

  /** Moves up to limit scheduled jobs whose run-at has come to pending; resolves how many moved. */
  async promote(limit: number = 1000): Promise<number> {
    positiveInt("limit", limit);
    await this.client.ensure();
    return runPromote(this.client.adapter, {
      schedule: this.keys.schedule,
      pending: this.keys.pending,
      prefix: this.keys.rowPrefix,
      limit,
    });
  }

  /**
   * Takes back up to limit expired leases: each job goes back to pending,
   * or to dead when maxAttempts > 0 and its attempts reached it. Resolves
   * how many moved.
   */
  async reap(limit: number = 1000, maxAttempts: number = 0): Promise<number> {
    positiveInt("limit", limit);
    nonNegativeInt("max attempts", maxAttempts);
    await this.client.ensure();
    return runReap(this.client.adapter, {
      active: this.keys.active,
      pending: this.keys.pending,
      dead: this.keys.dead,
      prefix: this.keys.rowPrefix,
      limit,
      maxAttempts,
    });
  }

  /** Rings the queue's doorbell; resolves whether it was silent before. */
  async ring(): Promise<boolean> {
    await this.client.ensure();
    return (await runRing(this.client.adapter, { wake: this.keys.wake })) > 0;
  }

  /**
   * Moves a dead job back to pending, keeping its attempts, and rings the
   * doorbell. Resolves false when the job is not dead.
   */
  async revive(id: string): Promise<boolean> {
    const row = this.keys.row(id);
    await this.client.ensure();
    const n = await runRevive(this.client.adapter, {
      dead: this.keys.dead,
      pending: this.keys.pending,
      row,
      id,
    });
    if (n !== REVIVE_REVIVED) {
      return false;
    }
    try {
      await this.ring();
    } catch {
      // The revive stands without the bell.
    }
    return true;
  }

  /** Deletes a dead job for good: its row and its id. Resolves false when the job is not dead. */
  async purge(id: string): Promise<boolean> {
    const row = this.keys.row(id);
    await this.client.ensure();
    const n = await runPurge(this.client.adapter, {
      dead: this.keys.dead,
      row,
      id,
    });
    return n === PURGE_PURGED;
  }

  #setKey(s: string): string {
    if (!isSetName(s)) {
      throw new ArgumentError("unknown set " + JSON.stringify(s));
    }
    return this.keys.set(s);
  }

  /** How many ids set s holds. */
  async size(s: SetName): Promise<number> {
    return this.client.resend(async () => {
      const key = this.#setKey(s);
      await this.client.ensure();
      return Number(await this.client.adapter.send(["ZCARD", key]));
    });
  }

  /**
   * Returns up to n ids of set s, newest first: for a score-zero set that
   * is reverse mint order; for a scored set the latest deadline or run-at
   * first.
   */
  async browse(s: SetName, n: number): Promise<string[]> {
    return (await this.page(s, "", n)).ids;
  }

  /** The size of every set, read in one round trip. */
  async sizes(): Promise<Record<SetName, number>> {
    return this.client.resend(async () => {
      await this.client.ensure();
      const res = await this.client.adapter.sendMany(
        SETS.map((s) => ["ZCARD", this.keys.set(s)]),
      );
      const out = {} as Record<SetName, number>;
      SETS.forEach((s, i) => {
        const r = res[i]!;
        if (!r.ok) {
          throw r.error;
        }
        out[s] = Number(r.value);
      });
      return out;
    });
  }

  /**
   * Reads one job: its row and its score in the set its state names, in one
   * round trip. Resolves null when the job does not exist (never enqueued,
   * or completed and retired).
   */
  async get(id: string): Promise<JobInfo | null> {
    return this.client.resend(async () => {
      const row = this.keys.row(id);
      await this.client.ensure();
      const cmds = [
        ["HGETALL", row],
        ...SETS.map((s) => ["ZSCORE", this.keys.set(s), id]),
      ];
      const res = await this.client.adapter.sendMany(cmds);
      const h = res[0]!;
      if (!h.ok) {
        throw h.error;
      }
      const flat = h.value as unknown[];
      if (!Array.isArray(flat) || flat.length === 0) {
        return null;
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
      const info: JobInfo = {
        id,
        state,
        attempts,
        payload: m.get(FIELD_PAYLOAD) ?? Buffer.alloc(0),
        ...(atMs === undefined ? {} : { atMs }),
      };
      return info;
    });
  }

  /**
   * Returns up to n ids of set s, newest first, starting after the cursor
   * ("" for the first page), and the cursor of the next page ("" when this
   * was the last). Pages are stable under concurrent change: an id never
   * shows twice across pages, and an id present throughout is never skipped.
   * A cursor page() cannot have returned throws an ArgumentError before
   * anything is sent.
   */
  async page(s: SetName, after: string, n: number): Promise<Page> {
    return this.client.resend(async () => {
      const key = this.#setKey(s);
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
      await this.client.ensure();
      const a = this.client.adapter;
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
    });
  }
}
