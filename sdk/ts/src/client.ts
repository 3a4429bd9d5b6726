// connect(): a fenced connection to an EchoMQ keyspace.

import { randomBytes, randomInt } from "node:crypto";
import { judgeVersionRecord } from "./verdict.js";
import {
  BUNDLE_DIGEST,
  IdGenerator,
  KEY_BUNDLE,
  KEY_LOCKS,
  KEY_VERSION,
  LOCK_HELD,
  MAX_NODE,
  ReplyError,
  VERSION,
  VERSION_RECORD,
  WORK_KIND,
  lockNode,
  runFence,
  runLock,
  runUnlock,
  type Kind,
  type ScriptRunner,
} from "./gen/index.js";
import type { Pusher } from "./coalesce.js";
import type { RedisArg, Settled } from "./gen/index.js";
import {
  NodeRedisAdapter,
  type NodeRedisOptions,
  type RedisAdapter,
} from "./adapter.js";
import { ClusterAdapter, type ClusterConnectOptions } from "./cluster.js";
import {
  BundleError,
  ConnectionError,
  DeadlineError,
  FenceError,
  RESEND_ATTEMPTS,
  NoNodeError,
  PayloadTooLargeError,
  isUnwritten,
  isWaited,
  markUnwritten,
  markWaited,
} from "./errors.js";
import {
  noMetrics,
  stderrLogger,
  type Logger,
  type Metrics,
} from "./metrics.js";
import { Queue } from "./queue.js";
import { TypedQueue, type QueueOptions } from "./codec.js";

/** Options of connect. */
export interface ConnectOptions extends NodeRedisOptions {
  /**
   * A client adapter of your own; when set, url, redis and commandTimeoutMs
   * are not used and close() closes it.
   */
  adapter?: RedisAdapter;
  /**
   * A Redis Cluster instead of one server: the nodes to discover it from
   * (e.g. { rootNodes: ["redis://127.0.0.1:7000"] }) and its node-redis
   * options. When set, url and redis are not used; commandTimeoutMs and
   * onError are.
   */
  cluster?: ClusterConnectOptions;
  /**
   * Fixes the snowflake node of the client's id generator. Leave it unset
   * to lease a free node from the reserve's locks (the default), which keeps
   * node numbers unique among live minters.
   */
  node?: number;
  /** How long a leased node stays held without renewal; renewed every third of it. Default 30000 ms. */
  nodeLeaseMs?: number;
  /** Receives the client's notices. Default: warnings and errors to stderr. */
  logger?: Logger;
  /** Receives the counts of this client's queues and workers. Default: none kept. */
  metrics?: Metrics;
  /**
   * Caps a job's payload in bytes: a larger one is refused with a
   * PayloadTooLargeError before anything is sent. Default, and never above:
   * the server's proto-max-bulk-len as read at connect, or 512 MiB.
   */
  maxPayload?: number;
  /**
   * How concurrent queue.push() calls of this client are coalesced into one
   * push_many call per batch (see Queue.push). Default on, with the
   * defaults of CoalesceOptions; false sends one push script per call.
   */
  coalesce?: CoalesceOptions | false;
  /**
   * How long a call waits for the connection, in milliseconds, when it
   * found the client offline (reconnecting after the server restarted, say)
   * and so was never written: it waits for the client to reconnect, fences
   * the new connection, and is sent then, whatever the call is (claim and
   * complete too: nothing of it ran). A call's CallOptions bound it
   * instead: its deadline, and its signal. Default 5000; 0 fails such a
   * call at once with its ConnectionError.
   */
  offlineWaitMs?: number;
  /**
   * The approximate bound of each queue's events stream (XADD MAXLEN ~)
   * for the calls of this client that write events: Queue.revive,
   * Queue.updateProgress and the settle calls when their own options do not
   * say (echomq 2.4.0; a Worker's WorkerOptions.eventsMaxLen defaults to
   * it). Default DEFAULT_EVENTS_MAX_LEN (10000); 0 writes no event.
   */
  eventsMaxLen?: number;
}

/** The default bound of a queue's events stream: ConnectOptions.eventsMaxLen. */
export const DEFAULT_EVENTS_MAX_LEN = 10000;

/** How concurrent pushes to one queue are coalesced. */
export interface CoalesceOptions {
  /**
   * The longest a push waits, in milliseconds, while a batch of its queue
   * is in flight, before its own batch is sent anyway. A batch is sent at
   * once (after the current tick) when none of its queue is in flight.
   * Default 1; 0 sends the next batch as soon as the tick ends.
   */
  lingerMs?: number;
  /** The most jobs in one push_many call; a fuller batch is sent at once. Default 256. */
  maxBatch?: number;
}

/** Options of one call that is resent across reconnects. */
export interface CallOptions {
  /**
   * Aborts the call: checked before anything is sent and before every
   * resend. A call aborted before it was sent rejects with the signal's
   * reason and wrote nothing.
   */
  signal?: AbortSignal;
  /**
   * A deadline in Unix milliseconds (Date.now()): no resend starts after
   * it, and a call whose deadline passed before it was sent rejects with a
   * DeadlineError.
   */
  deadline?: number;
}

const defaultMaxPayload = 512 * 1024 * 1024;

/** ConnectOptions.offlineWaitMs's default. */
const defaultOfflineWaitMs = 5000;

/** How long a fence that failed in transport is run again for, at least. */
const minFenceRetryMs = 1000;

/** The bound of one call's wait for the connection. */
interface Bound {
  readonly signal: AbortSignal | undefined;
  /** When the wait ends, in Unix milliseconds. */
  readonly until: number;
  /** How long the wait could last in all, for the message. */
  readonly ms: number;
}

/** The maxmemory policies that never evict a job's keys. */
const safePolicies = new Set([
  "noeviction",
  "volatile-lru",
  "volatile-lfu",
  "volatile-random",
  "volatile-ttl",
]);

/**
 * Judges a version record found in a keyspace: "same" when it is this
 * client's version, "ahead" when it is a higher minor or patch of this
 * major; another major, a lower version or a value that is not a record
 * throws a FenceError.
 */
export function checkVersionRecord(record: string): "same" | "ahead" {
  switch (judgeVersionRecord(record)) {
    case "current":
      return "same";
    case "ahead":
      return "ahead";
    default:
      throw new FenceError(record, VERSION_RECORD);
  }
}

/**
 * Opens a client and fences the keyspace: it claims a fresh keyspace with
 * this version, raises a lower minor of this major, admits a higher minor
 * (logged as ahead), refuses anything else with a FenceError, and refuses a
 * different bundle recorded for this version with a BundleError. The client
 * fences again before its first command after any reconnect. Unless
 * options.node is set, it leases a snowflake node from the reserve's locks.
 */
export async function connect(options: ConnectOptions = {}): Promise<Client> {
  const log = options.logger ?? stderrLogger;
  const onError =
    options.onError ?? ((err) => log.debug("emq: connection error", { err }));
  const adapter =
    options.adapter ??
    (options.cluster !== undefined
      ? await ClusterAdapter.connect({
          ...options.cluster,
          ...(options.commandTimeoutMs === undefined
            ? {}
            : { commandTimeoutMs: options.commandTimeoutMs }),
          onError,
        })
      : await NodeRedisAdapter.connect({ ...options, onError }));
  return Client.open(adapter, options, log);
}

/** @internal The pause before resend n (1 for the first): none, then 10 ms doubling up to 500 ms, jittered to its upper half; cut short by signal, and never past deadline. */
export function resendPause(
  n: number,
  signal?: AbortSignal,
  deadline?: number,
): Promise<void> {
  if (n <= 1) {
    return Promise.resolve();
  }
  const d = Math.min(10 * 2 ** (n - 2), 500);
  let ms = d / 2 + Math.random() * (d / 2);
  if (deadline !== undefined) {
    ms = Math.max(0, Math.min(ms, deadline - Date.now()));
  }
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * Throws when a call may not be sent (again): the signal's reason once it
 * aborted, a DeadlineError once the deadline passed.
 */
export function checkCall(opts: CallOptions | undefined): void {
  if (opts === undefined) {
    return;
  }
  opts.signal?.throwIfAborted();
  if (opts.deadline !== undefined && Date.now() >= opts.deadline) {
    throw new DeadlineError(opts.deadline);
  }
}

/** A fenced connection to an EchoMQ keyspace. */
export class Client {
  /** The client adapter the client sends through. */
  readonly adapter: RedisAdapter;
  /** Where the client's notices go. */
  readonly logger: Logger;
  /** Where the client's counts go. */
  readonly metrics: Metrics;
  /** This client's lock owner token. */
  readonly owner: string;
  /**
   * @internal The adapter as the queues and workers send through it: a
   * call that fails in transport makes the client fence again before its
   * next command, whatever the adapter saw of the connection.
   */
  readonly runner: ScriptRunner;
  /** @internal How pushes are coalesced; undefined when they are not. */
  readonly coalesce: Required<CoalesceOptions> | undefined;
  /** @internal The push coalescer of each queue name. */
  readonly pushers = new Map<string, Pusher>();
  #maxPayload: number;
  readonly #waitMs: number;
  /** Aborts every wait for the connection when the client closes. */
  readonly #closing = new AbortController();
  #fenced = -1;
  #fencedEpoch = 0;
  #epoch = 0;
  #fencing: Promise<void> | undefined;
  #found = "";
  #gen: IdGenerator | undefined;
  #leaseUntil = 0;
  #leaseMs: number;
  readonly #eventsMaxLen: number;
  #renew: NodeJS.Timeout | undefined;
  #fixed = false;
  #closed = false;

  /**
   * @internal Opens a client on adapter, as connect() does: fences, reads
   * the server's configuration and takes its snowflake node (options.node,
   * or a leased one renewed until close). The adapter is closed when this
   * fails. Use connect().
   */
  static async open(
    adapter: RedisAdapter,
    options: ConnectOptions,
    logger: Logger,
  ): Promise<Client> {
    const c = new Client(adapter, options, logger);
    try {
      await c.ensure();
      await c.#readServerConfig();
      if (options.node !== undefined) {
        c.#fixNode(options.node);
      } else {
        await c.#leaseNode();
        c.#startRenewal();
      }
    } catch (err) {
      await adapter.close();
      throw err;
    }
    return c;
  }

  /**
   * Use connect(): a client is fenced and holds a snowflake node before
   * any call, which a constructor cannot await.
   */
  private constructor(
    adapter: RedisAdapter,
    options: ConnectOptions,
    logger: Logger,
  ) {
    this.adapter = adapter;
    this.logger = logger;
    this.metrics = options.metrics ?? noMetrics;
    this.owner = randomBytes(8).toString("hex");
    this.runner = {
      send: (args) => this.#send(args, undefined),
      sendMany: (cmds) => this.#sendMany(cmds, undefined),
    };
    const co = options.coalesce;
    this.coalesce =
      co === false
        ? undefined
        : {
            lingerMs: Math.max(0, co?.lingerMs ?? 1),
            maxBatch: Math.max(1, Math.floor(co?.maxBatch ?? 256)),
          };
    const max = options.maxPayload ?? 0;
    this.#maxPayload =
      max > 0 && max < defaultMaxPayload ? max : defaultMaxPayload;
    this.#leaseMs =
      options.nodeLeaseMs && options.nodeLeaseMs > 0
        ? options.nodeLeaseMs
        : 30000;
    const ev = options.eventsMaxLen;
    this.#eventsMaxLen =
      ev !== undefined && Number.isSafeInteger(ev) && ev >= 0
        ? ev
        : DEFAULT_EVENTS_MAX_LEN;
    const w = options.offlineWaitMs;
    this.#waitMs =
      w !== undefined && Number.isFinite(w) && w >= 0
        ? w
        : defaultOfflineWaitMs;
  }

  /**
   * @internal The runner of one call bounded by opts: as runner, but a
   * command that found the client offline waits for the connection within
   * opts (its deadline instead of ConnectOptions.offlineWaitMs, and its
   * signal).
   */
  runnerFor(opts: CallOptions | undefined): ScriptRunner {
    if (
      opts === undefined ||
      (opts.signal === undefined && opts.deadline === undefined)
    ) {
      return this.runner;
    }
    return {
      send: (args) => this.#send(args, opts),
      sendMany: (cmds) => this.#sendMany(cmds, opts),
    };
  }

  #bound(opts: CallOptions | undefined): Bound {
    const now = Date.now();
    const until = opts?.deadline ?? now + this.#waitMs;
    const signals = [this.#closing.signal];
    if (opts?.signal !== undefined) {
      signals.push(opts.signal);
    }
    return {
      signal: signals.length === 1 ? signals[0] : AbortSignal.any(signals),
      until,
      ms: Math.max(0, until - now),
    };
  }

  /**
   * Sends one command; a transport failure makes the client fence again
   * before its next command, and one of a command that was never written
   * waits for the connection within opts and is sent then.
   */
  #send(args: readonly RedisArg[], opts: CallOptions | undefined) {
    return this.adapter
      .send(args)
      .catch((err: unknown) => this.#sendFailed(err, args, opts));
  }

  async #sendFailed(
    err: unknown,
    args: readonly RedisArg[],
    opts: CallOptions | undefined,
  ): Promise<unknown> {
    let bound: Bound | undefined;
    for (;;) {
      if (!(err instanceof ConnectionError)) {
        throw err;
      }
      if (!isUnwritten(err) || this.adapter.waitReady === undefined) {
        this.refence();
        throw err;
      }
      bound ??= this.#bound(opts);
      await this.#reconnect(err, args, bound);
      try {
        return await this.adapter.send(args);
      } catch (e) {
        err = e;
      }
    }
  }

  #sendMany(
    cmds: readonly (readonly RedisArg[])[],
    opts: CallOptions | undefined,
  ): Promise<Settled[]> {
    return this.adapter.sendMany(cmds).then(
      (res) => {
        let idx: number[] | undefined;
        let lost = false;
        res.forEach((r, i) => {
          if (!r.ok && r.error instanceof ConnectionError) {
            if (isUnwritten(r.error) && this.adapter.waitReady !== undefined) {
              (idx ??= []).push(i);
            } else {
              lost = true;
            }
          }
        });
        if (lost) {
          this.refence();
        }
        return idx === undefined
          ? res
          : this.#sendManyAgain(cmds, res, idx, opts);
      },
      (err: unknown) => {
        if (err instanceof ConnectionError) {
          this.refence();
        }
        throw err;
      },
    );
  }

  /** Sends again, on a fresh fenced connection, the commands of cmds at idx that were never written. */
  async #sendManyAgain(
    cmds: readonly (readonly RedisArg[])[],
    res: Settled[],
    idx: number[],
    opts: CallOptions | undefined,
  ): Promise<Settled[]> {
    const bound = this.#bound(opts);
    while (idx.length > 0) {
      const first = res[idx[0]!]!;
      try {
        await this.#reconnect(
          first.ok ? new ConnectionError("offline") : first.error,
          cmds[idx[0]!],
          bound,
        );
      } catch (error) {
        for (const i of idx) {
          res[i] = { ok: false, error };
        }
        return res;
      }
      const sub = await this.adapter.sendMany(idx.map((i) => cmds[i]!));
      const next: number[] = [];
      let lost = false;
      sub.forEach((r, j) => {
        const i = idx[j]!;
        res[i] = r;
        if (!r.ok && r.error instanceof ConnectionError) {
          if (isUnwritten(r.error)) {
            next.push(i);
          } else {
            lost = true;
          }
        }
      });
      if (lost) {
        this.refence();
      }
      idx = next;
    }
    return res;
  }

  /**
   * Waits within bound for the connection a command like args goes out
   * on, after err (a ConnectionError of a command that was never written),
   * and fences it. A fence that fails in transport meanwhile is waited out
   * too: the call itself was not written. When the bound passes first it
   * throws a ConnectionError saying so (and no resend follows it).
   */
  async #reconnect(
    err: unknown,
    args: readonly RedisArg[] | undefined,
    bound: Bound,
  ): Promise<void> {
    for (let n = 1; ; n++) {
      if (bound.signal?.aborted || Date.now() >= bound.until) {
        throw this.#gaveUp(err, bound);
      }
      if (n === 1) {
        this.logger.debug(
          "emq: the client is offline; the call waits for the connection",
          { waitMs: bound.until - Date.now(), err: String(err) },
        );
      }
      const ac = new AbortController();
      const stop = () => ac.abort();
      const t = setTimeout(stop, bound.until - Date.now());
      bound.signal?.addEventListener("abort", stop, { once: true });
      try {
        await this.adapter.waitReady!(args, ac.signal);
      } finally {
        clearTimeout(t);
        bound.signal?.removeEventListener("abort", stop);
      }
      if (ac.signal.aborted) {
        throw this.#gaveUp(err, bound);
      }
      try {
        await this.#ensureWithin(bound);
        return;
      } catch (e) {
        if (!(e instanceof ConnectionError) || isWaited(e)) {
          throw e;
        }
        err = e;
        await resendPause(n + 1, bound.signal, bound.until);
      }
    }
  }

  #gaveUp(err: unknown, bound: Bound): ConnectionError {
    const why = this.#closed
      ? "the client was closed"
      : "the connection was not back within the call's bound (" +
        bound.ms +
        " ms)";
    return markWaited(
      markUnwritten(new ConnectionError("the call was not sent: " + why, err)),
    );
  }

  /** The version record the last fence found: this version, or a higher minor of this major. */
  get versionFound(): string {
    return this.#found;
  }

  /** The snowflake node the client mints with, or -1 when it holds none. */
  get node(): number {
    return this.#gen?.node ?? -1;
  }

  /** The bound of the events streams this client writes (ConnectOptions.eventsMaxLen); 0: it writes none. */
  get eventsMaxLen(): number {
    return this.#eventsMaxLen;
  }

  /** The payload cap in bytes. */
  get maxPayload(): number {
    return this.#maxPayload;
  }

  /** Returns the handle of the queue named name; a malformed name throws a QueueNameError before anything is sent. */
  queue(name: string): Queue;
  /**
   * Returns a typed handle of the queue named name: its payloads are values
   * of T, encoded and decoded by options.codec (e.g. json<Order>()).
   */
  queue<T>(name: string, options: QueueOptions<T>): TypedQueue<T>;
  queue<T>(name: string, options?: QueueOptions<T>): Queue | TypedQueue<T> {
    const q = new Queue(this, name);
    return options === undefined ? q : new TypedQueue(q, options.codec);
  }

  /** Returns a fresh id of kind (default the work kind) from the client's node; a NoNodeError while the node lease is not surely held. */
  mint(kind: Kind = WORK_KIND): string {
    if (this.#gen === undefined || Date.now() >= this.#leaseUntil) {
      throw new NoNodeError();
    }
    return this.#gen.mint(kind);
  }

  /** Throws a PayloadTooLargeError when payload is over the cap. */
  checkPayload(payload: Uint8Array | string): void {
    const n =
      typeof payload === "string"
        ? Buffer.byteLength(payload)
        : payload.byteLength;
    if (n > this.#maxPayload) {
      throw new PayloadTooLargeError(n, this.#maxPayload);
    }
  }

  /**
   * @internal Runs attempt, one attempt of an idempotent call (which checks
   * its arguments and fences before it sends anything), again while it
   * fails with a ConnectionError: up to RESEND_ATTEMPTS attempts, the first
   * resend at once and then after a doubling, jittered pause (10 ms up to
   * 500 ms; about a second in all, each command bounded by the adapter's
   * timeout), stopping when signal aborts. Each resend fences first on the
   * connection that replaced the failed one, so a keyspace that came back
   * foreign refuses it with a FenceError and nothing is written. The last
   * error is thrown. opts bounds it: aborted or past its deadline before
   * the first attempt it throws the signal's reason or a DeadlineError and
   * sends nothing; later, no resend starts, and the last error is thrown.
   */
  async resend<T>(attempt: () => Promise<T>, opts?: CallOptions): Promise<T> {
    checkCall(opts);
    for (let n = 0; ; n++) {
      try {
        return await attempt();
      } catch (err) {
        if (
          !(err instanceof ConnectionError) ||
          isWaited(err) ||
          n + 1 >= RESEND_ATTEMPTS ||
          opts?.signal?.aborted ||
          (opts?.deadline !== undefined && Date.now() >= opts.deadline)
        ) {
          throw err;
        }
        this.logger.debug(
          "emq: an idempotent call failed in transport; resending it",
          {
            attempt: n + 1,
            err: String(err),
          },
        );
        await resendPause(n + 1, opts?.signal, opts?.deadline);
        if (
          opts?.signal?.aborted ||
          (opts?.deadline !== undefined && Date.now() >= opts.deadline)
        ) {
          throw err;
        }
      }
    }
  }

  /**
   * @internal Makes the next command fence first: a call failed in
   * transport, so the connection it went out on may have been replaced, or
   * may be the same one with the call's outcome unknown.
   */
  refence(): void {
    this.#epoch++;
  }

  /** @internal Whether the client is fenced on the current connection: ensure() would send nothing. */
  get isFenced(): boolean {
    return (
      this.adapter.generation === this.#fenced &&
      this.#epoch === this.#fencedEpoch
    );
  }

  /**
   * Fences the keyspace when a connection became ready since the last
   * fence, or a call failed in transport since. It costs one comparison
   * when neither happened. A fence that fails in transport is run again on
   * a fresh connection, for ConnectOptions.offlineWaitMs (at least a
   * second), and waits for the connection while the client is offline;
   * opts bounds the wait of this caller: when its deadline passes or its
   * signal aborts first, it throws a ConnectionError (the fence goes on
   * for the next caller).
   */
  async ensure(opts?: CallOptions): Promise<void> {
    if (this.isFenced) {
      return;
    }
    if (
      opts === undefined ||
      (opts.signal === undefined && opts.deadline === undefined)
    ) {
      return this.#ensureWithin(undefined);
    }
    return this.#ensureWithin(this.#bound(opts));
  }

  async #ensureWithin(bound: Bound | undefined): Promise<void> {
    while (!this.isFenced) {
      if (this.#fencing === undefined) {
        const e = this.#epoch;
        const p = this.#fence().then(
          (g) => {
            this.#fenced = g;
            this.#fencedEpoch = e;
            this.#fencing = undefined;
          },
          (err: unknown) => {
            this.#fencing = undefined;
            throw err;
          },
        );
        p.catch(() => {}); // a caller whose bound passed no longer awaits it
        this.#fencing = p;
      }
      if (bound === undefined) {
        await this.#fencing;
      } else {
        await this.#within(this.#fencing, bound);
      }
    }
  }

  /** Awaits p, or throws a ConnectionError once bound passes first. */
  #within(p: Promise<void>, bound: Bound): Promise<void> {
    if (bound.signal?.aborted || Date.now() >= bound.until) {
      return Promise.reject(
        this.#gaveUp(new ConnectionError("the fence is under way"), bound),
      );
    }
    return new Promise((resolve, reject) => {
      const stop = () => {
        done();
        reject(
          this.#gaveUp(new ConnectionError("the fence is under way"), bound),
        );
      };
      const t = setTimeout(stop, bound.until - Date.now());
      bound.signal?.addEventListener("abort", stop, { once: true });
      const done = () => {
        clearTimeout(t);
        bound.signal?.removeEventListener("abort", stop);
      };
      p.then(
        () => {
          done();
          resolve();
        },
        (err: unknown) => {
          done();
          reject(err);
        },
      );
    });
  }

  /**
   * Fences the keyspace, and resolves the connection generation it fenced.
   * The fence is idempotent: one that fails in transport is run again, on
   * the connection that replaced the failed one once the adapter has it,
   * up to RESEND_ATTEMPTS times within offlineWaitMs (at least a second).
   */
  async #fence(): Promise<number> {
    const bound = this.#bound({
      deadline: Date.now() + Math.max(this.#waitMs, minFenceRetryMs),
    });
    for (let n = 1; ; n++) {
      const g = this.adapter.generation;
      try {
        await this.#fenceOnce();
        return g;
      } catch (err) {
        if (
          !(err instanceof ConnectionError) ||
          this.#closed ||
          n >= RESEND_ATTEMPTS ||
          Date.now() >= bound.until
        ) {
          throw err;
        }
        this.logger.debug(
          "emq: the version fence failed in transport; running it again on a fresh connection",
          { attempt: n, err: String(err) },
        );
        if (this.adapter.waitReady !== undefined) {
          const ac = new AbortController();
          const stop = () => ac.abort();
          const t = setTimeout(stop, bound.until - Date.now());
          bound.signal?.addEventListener("abort", stop, { once: true });
          try {
            await this.adapter.waitReady(undefined, ac.signal);
          } finally {
            clearTimeout(t);
            bound.signal?.removeEventListener("abort", stop);
          }
          if (ac.signal.aborted) {
            throw isUnwritten(err) ? this.#gaveUp(err, bound) : err;
          }
        }
        await resendPause(n + 1, bound.signal, bound.until);
      }
    }
  }

  async #fenceOnce(): Promise<void> {
    const r = await runFence(this.adapter, {
      versionKey: KEY_VERSION,
      bundleKey: KEY_BUNDLE,
      version: VERSION_RECORD,
      semver: VERSION,
      bundle: BUNDLE_DIGEST,
    });
    const verdict = checkVersionRecord(r.version);
    if (r.bundle !== BUNDLE_DIGEST) {
      throw new BundleError(VERSION, r.bundle, BUNDLE_DIGEST);
    }
    if (verdict === "ahead" && this.#found !== r.version) {
      this.logger.info(
        "emq: the keyspace is ahead of this client; minors are additive, so it is served",
        { keyspace: r.version, client: VERSION_RECORD },
      );
    }
    this.#found = r.version;
  }

  /** Reads what the server's configuration means for jobs. */
  async #readServerConfig(): Promise<void> {
    let reply: unknown;
    try {
      reply = await this.adapter.send([
        "CONFIG",
        "GET",
        "maxmemory-policy",
        "proto-max-bulk-len",
      ]);
    } catch (err) {
      if (err instanceof ReplyError) {
        this.logger.debug("emq: cannot read the server's configuration", {
          err,
        });
        return;
      }
      throw err;
    }
    const m = new Map<string, string>();
    if (Array.isArray(reply)) {
      for (let i = 0; i + 1 < reply.length; i += 2) {
        m.set(String(reply[i]), String(reply[i + 1]));
      }
    }
    const policy = m.get("maxmemory-policy");
    if (policy && !safePolicies.has(policy)) {
      this.logger.warn(
        "emq: the server may evict keys without a TTL, and so lose jobs; set maxmemory-policy to noeviction",
        { policy },
      );
    }
    const bulk = Number(m.get("proto-max-bulk-len"));
    if (Number.isSafeInteger(bulk) && bulk > 0 && bulk < this.#maxPayload) {
      this.#maxPayload = bulk;
    }
  }

  /** Mints ids on node, fixed for the client's life (ConnectOptions.node): no lease. */
  #fixNode(node: number): void {
    this.#gen = new IdGenerator(node);
    this.#fixed = true;
    this.#leaseUntil = Number.MAX_SAFE_INTEGER;
  }

  /** Takes a free snowflake node from the reserve's locks. */
  async #leaseNode(): Promise<void> {
    const start = randomInt(MAX_NODE + 1);
    for (let i = 0; i <= MAX_NODE; i++) {
      const n = (start + i) % (MAX_NODE + 1);
      if (await this.#lockNode(n)) {
        this.#gen = new IdGenerator(n);
        return;
      }
    }
    throw new NoNodeError("all " + (MAX_NODE + 1) + " nodes are leased");
  }

  async #lockNode(n: number): Promise<boolean> {
    const start = Date.now();
    await this.ensure();
    const deadline = await runLock(this.adapter, {
      locks: KEY_LOCKS,
      name: lockNode(n),
      owner: this.owner,
      ttlMs: this.#leaseMs,
    });
    if (deadline === LOCK_HELD) {
      return false;
    }
    this.#leaseUntil = start + this.#leaseMs - this.#leaseMs / 10;
    return true;
  }

  /** Renews the node lease every third of its length until close. */
  #startRenewal(): void {
    this.#renew = setInterval(() => {
      void this.#renewOnce();
    }, this.#leaseMs / 3);
    this.#renew.unref();
  }

  async #renewOnce(): Promise<void> {
    const g = this.#gen;
    if (g === undefined || this.#closed) {
      return;
    }
    try {
      if (!(await this.#lockNode(g.node))) {
        this.logger.error(
          "emq: the node lease was lost to another owner; leasing a new node",
          { node: g.node },
        );
        this.#leaseUntil = 0;
        this.#gen = undefined;
        await this.#leaseNode();
      }
    } catch (err) {
      this.logger.warn("emq: renewing the node lease failed; retrying", {
        node: g.node,
        err,
      });
    }
  }

  /** Releases the node lease and closes the connections. */
  async close(): Promise<void> {
    if (this.#closed) {
      return;
    }
    this.#closed = true;
    this.#closing.abort();
    if (this.#renew !== undefined) {
      clearInterval(this.#renew);
    }
    const g = this.#gen;
    if (g !== undefined && !this.#fixed) {
      try {
        await runUnlock(this.adapter, {
          locks: KEY_LOCKS,
          name: lockNode(g.node),
          owner: this.owner,
        });
      } catch {
        // the lease expires by itself
      }
    }
    await this.adapter.close();
  }
}
