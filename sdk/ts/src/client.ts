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
} from "./errors.js";
import {
  noMetrics,
  stderrLogger,
  type Logger,
  type Metrics,
} from "./metrics.js";
import { Queue } from "./queue.js";

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
}

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
  const c = new Client(adapter, options, log);
  try {
    await c.ensure();
    await c.readServerConfig();
    if (options.node !== undefined) {
      c.fixNode(options.node);
    } else {
      await c.leaseNode();
      c.startRenewal();
    }
  } catch (err) {
    await adapter.close();
    throw err;
  }
  return c;
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
  #fenced = -1;
  #fencedEpoch = 0;
  #epoch = 0;
  #fencing: Promise<void> | undefined;
  #found = "";
  #gen: IdGenerator | undefined;
  #leaseUntil = 0;
  #leaseMs: number;
  #renew: NodeJS.Timeout | undefined;
  #fixed = false;
  #closed = false;

  /** Use connect(). */
  constructor(adapter: RedisAdapter, options: ConnectOptions, logger: Logger) {
    this.adapter = adapter;
    this.logger = logger;
    this.metrics = options.metrics ?? noMetrics;
    this.owner = randomBytes(8).toString("hex");
    const failed = (err: unknown): never => {
      if (err instanceof ConnectionError) {
        this.refence();
      }
      throw err;
    };
    this.runner = {
      send: (args) => adapter.send(args).catch(failed),
      sendMany: (cmds) =>
        adapter.sendMany(cmds).then((res) => {
          for (const r of res) {
            if (!r.ok && r.error instanceof ConnectionError) {
              this.refence();
              break;
            }
          }
          return res;
        }, failed),
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
  }

  /** The version record the last fence found: this version, or a higher minor of this major. */
  get versionFound(): string {
    return this.#found;
  }

  /** The snowflake node the client mints with, or -1 when it holds none. */
  get node(): number {
    return this.#gen?.node ?? -1;
  }

  /** The payload cap in bytes. */
  get maxPayload(): number {
    return this.#maxPayload;
  }

  /** Returns the handle of the queue named name; a malformed name throws a QueueNameError before anything is sent. */
  queue(name: string): Queue {
    return new Queue(this, name);
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
   * when neither happened.
   */
  async ensure(): Promise<void> {
    while (!this.isFenced) {
      if (this.#fencing === undefined) {
        const g = this.adapter.generation;
        const e = this.#epoch;
        this.#fencing = this.#fence().then(
          () => {
            this.#fenced = g;
            this.#fencedEpoch = e;
            this.#fencing = undefined;
          },
          (err: unknown) => {
            this.#fencing = undefined;
            throw err;
          },
        );
      }
      await this.#fencing;
    }
  }

  async #fence(): Promise<void> {
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

  /** @internal Reads what the server's configuration means for jobs. */
  async readServerConfig(): Promise<void> {
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

  /** @internal */
  fixNode(node: number): void {
    this.#gen = new IdGenerator(node);
    this.#fixed = true;
    this.#leaseUntil = Number.MAX_SAFE_INTEGER;
  }

  /** @internal Takes a free snowflake node from the reserve's locks. */
  async leaseNode(): Promise<void> {
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

  /** @internal Renews the node lease every third of its length until close. */
  startRenewal(): void {
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
        await this.leaseNode();
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
