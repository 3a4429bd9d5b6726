// The RedisAdapter on a Redis Cluster, through node-redis's createCluster.
//
// node-redis routes a command by the key it is given and follows MOVED (it
// rediscovers the slots, then resends) and ASK (ASKING, then the command,
// on the importing node) by itself, up to maxCommandRedirections. It does
// not retry TRYAGAIN, the answer of a node whose slot is split by a
// migration to a command whose keys are not all on one side: this adapter
// resends such a command with a short backoff until the slot settles or
// the deadline passes. Everything a script call or a queue's read touches
// shares the queue's hashtag, so each command goes whole to one node; the
// reserve's keys share the {emq} hashtag, so the fence and the node locks
// go to that slot's node. NOSCRIPT is per node: the generated runScript
// resends the call as EVAL, which routes where the EVALSHA went.

import {
  createCluster,
  ErrorReply,
  RESP_TYPES,
  type RedisClientType,
  type RedisClusterOptions,
  type RedisClusterType,
} from "redis";
import type { RedisArg, Settled } from "./gen/index.js";
import {
  mapError,
  onceOf,
  type RedisAdapter,
  type Subscription,
} from "./adapter.js";
import { ConnectionError } from "./errors.js";

/** A node-redis client option object for one node (url, socket, credentials). */
export type ClusterNodeOptions = RedisClusterOptions["rootNodes"][number];

/** Where the cluster is and how to reach its nodes. */
export interface ClusterConnectOptions {
  /**
   * Nodes to discover the cluster from: redis://host:port URLs or node-redis
   * node options. At least one; list several, so that discovery survives a
   * node that is down.
   */
  rootNodes: readonly (string | ClusterNodeOptions)[];
  /**
   * node-redis options for every node connection (credentials, TLS). The
   * adapter pins RESP 2 and turns the offline queue off on each, as the
   * single-server adapter does.
   */
  defaults?: Partial<ClusterNodeOptions>;
  /** Further node-redis cluster options (maxCommandRedirections, nodeAddressMap, ...). */
  redis?: Partial<Omit<RedisClusterOptions, "rootNodes" | "defaults">>;
  /**
   * How long a command answered TRYAGAIN is resent for, in milliseconds,
   * before its TRYAGAIN is thrown as a ConnectionError (nothing ran, so the
   * call may be sent again). Default 10000.
   */
  tryAgainMs?: number;
}

/** Options of ClusterAdapter.connect. */
export interface ClusterAdapterOptions extends ClusterConnectOptions {
  /**
   * How long a command may wait to be written, in milliseconds, as for the
   * single-server adapter (NodeRedisOptions.commandTimeoutMs). Default
   * none.
   */
  commandTimeoutMs?: number;
  /** Receives connection errors (node-redis reconnects by itself). */
  onError?: (err: unknown) => void;
}

type Cluster = RedisClusterType;
type NodeClient = RedisClientType;

const typeMapping = { [RESP_TYPES.BLOB_STRING]: Buffer };

/** The verbs whose KEYS come after a numkeys argument at index 2. */
const numkeysVerbs = new Set([
  "EVAL",
  "EVALSHA",
  "EVAL_RO",
  "EVALSHA_RO",
  "FCALL",
  "FCALL_RO",
]);

/** Verbs that take no key: they go to any node. */
const keylessVerbs = new Set([
  "ACL",
  "CLIENT",
  "CLUSTER",
  "COMMAND",
  "CONFIG",
  "DBSIZE",
  "ECHO",
  "FUNCTION",
  "HELLO",
  "INFO",
  "LATENCY",
  "MEMORY",
  "PING",
  "ROLE",
  "SCRIPT",
  "SLOWLOG",
  "TIME",
]);

function text(a: RedisArg | undefined): string {
  return a === undefined ? "" : Buffer.isBuffer(a) ? a.toString() : a;
}

/**
 * The key a command is routed by: the first of a script's KEYS, none for a
 * keyless command (or a script called with no KEYS), else the argument
 * after the verb.
 */
export function routingKey(args: readonly RedisArg[]): RedisArg | undefined {
  const verb = text(args[0]).toUpperCase();
  if (numkeysVerbs.has(verb)) {
    return Number(text(args[2])) > 0 ? args[3] : undefined;
  }
  if (verb === "XREAD") {
    // XREAD [COUNT n] [BLOCK ms] STREAMS key... id...: the first key.
    const at = args.findIndex((a) => text(a).toUpperCase() === "STREAMS");
    return at < 0 ? undefined : args[at + 1];
  }
  if (keylessVerbs.has(verb) || args.length < 2) {
    return undefined;
  }
  return args[1];
}

function replyStarts(err: unknown, word: string): boolean {
  return (
    err instanceof ErrorReply &&
    (err.message === word || err.message.startsWith(word + " "))
  );
}

/** The pause before TRYAGAIN resend n (0 for the first): 2 ms doubling up to 50 ms, jittered to its upper half. */
function tryAgainPause(n: number): number {
  const d = Math.min(2 * 2 ** n, 50);
  return d / 2 + Math.random() * (d / 2);
}

const sleep = (ms: number) =>
  new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A dedicated connection for blocking pops, to one node. */
interface Blocker {
  /** The cluster's shared client of the node it was duplicated from. */
  readonly origin: NodeClient;
  readonly client: NodeClient;
}

/**
 * The RedisAdapter on a Redis Cluster (node-redis createCluster). Commands
 * go to the primary serving their key's slot; a pipeline (sendMany) is
 * split by node, each node's commands written in one batch. Blocking pops
 * run on dedicated connections to the node serving the key, opened beside
 * the cluster's own and re-resolved when the slot moves.
 */
export class ClusterAdapter implements RedisAdapter {
  #cluster: Cluster;
  #generation = 0;
  #timeout: number;
  #tryAgainMs: number;
  #onError: (err: unknown) => void;
  #idle: Blocker[] = [];
  #blockers = new Set<Blocker>();
  #closed = false;

  private constructor(cluster: Cluster, opts: ClusterAdapterOptions) {
    this.#cluster = cluster;
    // A timeout of 0 turns off node-redis's default one.
    this.#timeout =
      opts.commandTimeoutMs && opts.commandTimeoutMs > 0
        ? opts.commandTimeoutMs
        : 0;
    this.#tryAgainMs =
      opts.tryAgainMs !== undefined && opts.tryAgainMs >= 0
        ? opts.tryAgainMs
        : 10000;
    this.#onError = opts.onError ?? (() => {});
    // A node connection that became ready (at connect, after a reconnect,
    // or to a node found by rediscovery) counts: the client fences again
    // before its next command.
    cluster.on("node-ready", () => {
      this.#generation++;
    });
    cluster.on("error", (err: unknown) => this.#onError(err));
    cluster.on("node-error", (err: unknown) => this.#onError(err));
  }

  /** Discovers the cluster from its root nodes, connects to every primary and returns the adapter. */
  static async connect(opts: ClusterAdapterOptions): Promise<ClusterAdapter> {
    if (opts.rootNodes.length === 0) {
      throw new ConnectionError("a cluster needs at least one root node");
    }
    const rootNodes = opts.rootNodes.map((n) =>
      typeof n === "string" ? { url: n } : n,
    );
    const socket = opts.defaults?.socket ?? {};
    const cluster = createCluster({
      ...opts.redis,
      rootNodes,
      RESP: 2,
      useReplicas: false,
      defaults: {
        ...opts.defaults,
        disableOfflineQueue: true,
        socket: {
          connectTimeout: 5000,
          reconnectStrategy: (retries: number) =>
            Math.min(50 * 2 ** Math.min(retries, 6), 2000),
          ...socket,
        },
      },
    } as Parameters<typeof createCluster>[0]) as unknown as Cluster;
    const a = new ClusterAdapter(cluster, opts);
    try {
      await cluster.connect();
    } catch (err) {
      cluster.destroy();
      throw mapError(err);
    }
    return a;
  }

  get generation(): number {
    return this.#generation;
  }

  /** The node-redis cluster client underneath. */
  get cluster(): Cluster {
    return this.#cluster;
  }

  async send(args: readonly RedisArg[]): Promise<unknown> {
    const key = routingKey(args);
    const deadline = Date.now() + this.#tryAgainMs;
    for (let n = 0; ; n++) {
      try {
        return await this.#cluster.sendCommand(key, false, args as RedisArg[], {
          typeMapping,
          timeout: this.#timeout,
        });
      } catch (err) {
        // TRYAGAIN: the slot is split by a migration and the command's keys
        // are on both sides. Nothing ran; the next MIGRATE batch, or the
        // slot's settling, lets it through.
        if (replyStarts(err, "TRYAGAIN") && !this.#closed) {
          const p = tryAgainPause(n);
          if (Date.now() + p < deadline) {
            await sleep(p);
            continue;
          }
        }
        throw mapError(err);
      }
    }
  }

  async waitReady(
    args: readonly RedisArg[] | undefined,
    signal: AbortSignal,
  ): Promise<void> {
    const key = args === undefined ? undefined : routingKey(args);
    while (!signal.aborted) {
      if (this.#closed) {
        throw new ConnectionError("the cluster client is closed");
      }
      if (this.#cluster.isReady) {
        if (key === undefined) {
          return;
        }
        try {
          const c = await this.#cluster.getNodeClientForKey(key, false);
          if (c.isReady) {
            return;
          }
        } catch {
          // the slot's node is not known or not up yet
        }
      }
      // A node connection coming up is the event; the poll covers a
      // rediscovery that moved the slot to a node already up.
      await onceOf(this.#cluster, ["node-ready", "connect"], signal, 100);
    }
  }

  async sendMany(cmds: readonly (readonly RedisArg[])[]): Promise<Settled[]> {
    // Each command goes to its own slot's node; node-redis writes the
    // commands one node gets in one tick in one batch: a pipeline per node.
    return Promise.all(
      cmds.map((c) =>
        this.send(c).then(
          (value): Settled => ({ ok: true, value }),
          (error: unknown): Settled => ({ ok: false, error }),
        ),
      ),
    );
  }

  async #blocker(key: RedisArg): Promise<Blocker> {
    let origin: NodeClient;
    try {
      origin = (await this.#cluster.getNodeClientForKey(
        key,
        false,
      )) as unknown as NodeClient;
    } catch (err) {
      throw mapError(err);
    }
    // Connections duplicated from a node client the cluster has since
    // dropped (its slots moved away) go.
    for (const b of this.#idle) {
      if (!b.origin.isOpen) {
        this.#drop(b);
      }
    }
    const i = this.#idle.findIndex((b) => b.origin === origin);
    if (i >= 0) {
      return this.#idle.splice(i, 1)[0]!;
    }
    const client = origin.duplicate({
      RESP: 2,
      disableOfflineQueue: true,
    }) as unknown as NodeClient;
    client.on("error", (err: unknown) => this.#onError(err));
    const b: Blocker = { origin, client };
    this.#blockers.add(b);
    try {
      await client.connect();
    } catch (err) {
      this.#drop(b);
      throw mapError(err);
    }
    return b;
  }

  #drop(b: Blocker): void {
    this.#blockers.delete(b);
    const i = this.#idle.indexOf(b);
    if (i >= 0) {
      this.#idle.splice(i, 1);
    }
    try {
      b.client.destroy();
    } catch {
      // already closed
    }
  }

  async block(
    args: readonly RedisArg[],
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<unknown> {
    if (signal?.aborted || this.#closed) {
      return null;
    }
    const key = routingKey(args);
    if (key === undefined) {
      throw new ConnectionError("a blocking command without a key");
    }
    const started = Date.now();
    const b = await this.#blocker(key);
    let cut = false;
    const stop = () => {
      // The command's state on the connection is unknown now: drop it.
      cut = true;
      this.#drop(b);
    };
    const timer = setTimeout(stop, timeoutMs);
    signal?.addEventListener("abort", stop, { once: true });
    try {
      const v = await b.client.sendCommand(args as RedisArg[], { typeMapping });
      this.#idle.push(b);
      return v;
    } catch (err) {
      if (cut) {
        return null;
      }
      if (replyStarts(err, "MOVED")) {
        // The slot moved: let the cluster learn where (a read through it
        // meets the MOVED and rediscovers), and wait on the new node next
        // time. The wait ends now, as if the bell rang.
        this.#drop(b);
        await this.send(["LLEN", key]).catch(() => {});
        return null;
      }
      if (replyStarts(err, "ASK")) {
        // The slot is being migrated and the key is not here: the doorbell
        // is in flux. Poll instead of blocking until the slot settles.
        this.#idle.push(b);
        const left = timeoutMs - (Date.now() - started);
        await sleep(Math.max(0, Math.min(left, 25)));
        return null;
      }
      this.#drop(b);
      throw mapError(err);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", stop);
    }
  }

  /**
   * Subscribes through the cluster's sharded pub/sub (SSUBSCRIBE on the
   * node serving the channel's slot, on a connection node-redis keeps for
   * it, moved with the slot). onReady is called when a node connection
   * becomes ready again, which may be the subscription's.
   */
  async subscribe(
    channel: string,
    onMessage: (message: Buffer) => void,
    onReady: () => void,
  ): Promise<Subscription> {
    const listener = (m: Buffer) => onMessage(m);
    const ready = () => onReady();
    try {
      await this.#cluster.sSubscribe(channel, listener, true);
    } catch (err) {
      throw mapError(err);
    }
    this.#cluster.on("node-ready", ready);
    let open = true;
    return {
      close: async () => {
        if (!open) {
          return;
        }
        open = false;
        this.#cluster.off("node-ready", ready);
        if (this.#closed) {
          return;
        }
        try {
          await this.#cluster.sUnsubscribe(channel, listener, true);
        } catch {
          // the cluster closes it with the client
        }
      },
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const b of [...this.#blockers]) {
      this.#drop(b);
    }
    try {
      await this.#cluster.close();
    } catch {
      this.#cluster.destroy();
    }
  }
}
