// The client adapter: the few things the SDK needs of a Redis client, and
// its implementation on node-redis. Another client (ioredis, say) plugs in
// by implementing RedisAdapter; nothing else in the SDK names node-redis.

import {
  ClientClosedError,
  ClientOfflineError,
  createClient,
  ErrorReply,
  RESP_TYPES,
  type RedisClientOptions,
} from "redis";
import {
  ReplyError,
  type RedisArg,
  type ScriptRunner,
  type Settled,
} from "./gen/index.js";
import { ConnectionError, markUnwritten } from "./errors.js";

/**
 * What the SDK needs of a Redis client. send and sendMany are the
 * generated layer's ScriptRunner: replies come as integers (numbers), bulk
 * strings (Buffers), arrays and null; an error reply rejects with a
 * ReplyError and a failure to talk with a ConnectionError.
 */
export interface RedisAdapter extends ScriptRunner {
  /**
   * Counts the connections that became ready; it changes after every
   * reconnect, so that the client fences again before its next command.
   */
  readonly generation: number;
  /**
   * Sends a blocking command (BLPOP) on a connection of its own, so that it
   * never holds up the shared one. It resolves null when timeoutMs passes
   * first or signal aborts; the server's own timeout in the command should
   * be shorter.
   */
  block(
    args: readonly RedisArg[],
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<unknown>;
  /** Closes every connection. */
  close(): Promise<void>;
  /**
   * Optional (echomq 2.5.0): subscribes to a sharded pub/sub channel
   * (SSUBSCRIBE) on a connection of its own (on a cluster, one to the node
   * serving the channel's slot), calling onMessage with each message's
   * bytes, and onReady each time the subscription is (re)established after
   * a reconnect: messages published while it was down are lost, so the
   * caller catches up then. It resubscribes by itself after a reconnect
   * and follows the slot on a cluster. A worker listens for the
   * cancellation of its jobs so; without it, a worker learns of a
   * cancellation at its job's next lease extension.
   */
  subscribe?(
    channel: string,
    onMessage: (message: Buffer) => void,
    onReady: () => void,
  ): Promise<Subscription>;
  /**
   * Optional: resolves once a command like args (undefined: any command)
   * would be written at once, that is once the connection it goes out on
   * is up again; rejects with a ConnectionError when the adapter was
   * closed, and returns (resolved) when signal aborts first. The client
   * calls it after a send failed with a ConnectionError the adapter marked
   * as never written (the client was offline), fences the new connection,
   * and sends the command then, within the call's bound. Without it, such
   * a failure is thrown at once.
   */
  waitReady?(
    args: readonly RedisArg[] | undefined,
    signal: AbortSignal,
  ): Promise<void>;
}

/** A subscription of RedisAdapter.subscribe. */
export interface Subscription {
  /** Unsubscribes and closes its connection (when it has one of its own). */
  close(): Promise<void>;
}

/**
 * @internal Resolves when emitter emits one of events, or signal aborts;
 * the listeners are removed either way.
 */
export function onceOf(
  emitter: {
    on(e: string, f: () => void): unknown;
    off(e: string, f: () => void): unknown;
  },
  events: readonly string[],
  signal: AbortSignal,
  pollMs?: number,
): Promise<void> {
  if (signal.aborted) {
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    let t: NodeJS.Timeout | undefined;
    const done = () => {
      for (const e of events) {
        emitter.off(e, done);
      }
      signal.removeEventListener("abort", done);
      if (t !== undefined) {
        clearTimeout(t);
      }
      resolve();
    };
    for (const e of events) {
      emitter.on(e, done);
    }
    signal.addEventListener("abort", done, { once: true });
    if (pollMs !== undefined) {
      t = setTimeout(done, pollMs);
    }
  });
}

/** Options of the node-redis adapter. */
export interface NodeRedisOptions {
  /** The server, as redis://host:port; default redis://127.0.0.1:6379. */
  url?: string;
  /**
   * Further node-redis options (credentials, TLS, database, reconnect
   * strategy). The adapter pins RESP 2 and turns the offline queue off:
   * a command sent while the connection is down fails at once instead of
   * running on a replacement connection before the client fenced it.
   */
  redis?: RedisClientOptions;
  /**
   * How long a command may wait to be written, in milliseconds (node-redis
   * bounds with its command timeout the wait in its write queue, not the
   * wait for the reply). Default none: a timer per command costs the event
   * loop about a tenth of its time under load, and with the offline queue
   * off a command waits only while the socket is under back-pressure.
   */
  commandTimeoutMs?: number;
  /** Receives connection errors (node-redis reconnects by itself). */
  onError?: (err: unknown) => void;
}

type NodeRedisClient = ReturnType<typeof createClient>;

const typeMapping = { [RESP_TYPES.BLOB_STRING]: Buffer };

/**
 * The answers of a server that ran nothing and may take the same command
 * later: still loading its dataset; a cluster slot split by a migration
 * (TRYAGAIN, once the resends gave up); a cluster that is down, or whose
 * primary for the slot is.
 */
const notRunWords = ["LOADING", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN"];

/**
 * @internal Maps what node-redis rejects with to the SDK's errors: an error
 * reply to a ReplyError, or a ConnectionError when the server ran nothing
 * and the call may be sent again (see notRunWords); anything else (a lost
 * connection, a timeout) to a ConnectionError.
 */
export function mapError(err: unknown): unknown {
  if (err instanceof ErrorReply) {
    // Like a lost connection, the call may be sent again.
    const word = err.message.split(" ", 1)[0] ?? "";
    if (notRunWords.includes(word)) {
      return new ConnectionError(err.message, err);
    }
    return new ReplyError(err.message);
  }
  if (err instanceof ReplyError || err instanceof ConnectionError) {
    return err;
  }
  if (err instanceof ClientOfflineError || err instanceof ClientClosedError) {
    // Refused before it was written: it may wait for the connection and go
    // out then, whatever the command is.
    return markUnwritten(
      new ConnectionError(
        err instanceof ClientOfflineError
          ? "the client is offline (reconnecting); the command was not sent"
          : "the client is closed; the command was not sent",
        err,
      ),
    );
  }
  const msg = err instanceof Error ? err.message : String(err);
  return new ConnectionError(msg, err);
}

function rethrow(err: unknown): never {
  throw mapError(err);
}

/** The RedisAdapter on node-redis (the redis package). */
export class NodeRedisAdapter implements RedisAdapter {
  #client: NodeRedisClient;
  /**
   * The connections of blocking commands not in use. Each blocking command
   * takes one (or opens one), so that concurrent waits (a worker's BLPOP
   * and an events listener's XREAD, say) never queue behind each other.
   */
  #idle: NodeRedisClient[] = [];
  readonly #blockers = new Set<NodeRedisClient>();
  readonly #subscribers = new Set<NodeRedisClient>();
  #generation = 0;
  #onError: (err: unknown) => void;
  /** Every command's options: the reply types; a timeout of 0 turns off node-redis's default one. */
  readonly #sendOptions: { typeMapping: typeof typeMapping; timeout: number };

  private constructor(client: NodeRedisClient, opts: NodeRedisOptions) {
    this.#client = client;
    this.#sendOptions = {
      typeMapping,
      timeout:
        opts.commandTimeoutMs && opts.commandTimeoutMs > 0
          ? opts.commandTimeoutMs
          : 0,
    };
    this.#onError = opts.onError ?? (() => {});
    client.on("ready", () => {
      this.#generation++;
    });
    client.on("error", (err: unknown) => this.#onError(err));
  }

  /** Connects to the server and returns the adapter. */
  static async connect(opts: NodeRedisOptions = {}): Promise<NodeRedisAdapter> {
    let ready = false;
    const socket = opts.redis?.socket ?? {};
    const client = createClient({
      ...opts.redis,
      url: opts.url ?? opts.redis?.url ?? "redis://127.0.0.1:6379",
      RESP: 2,
      disableOfflineQueue: true,
      socket: {
        connectTimeout: 5000,
        // The first connection fails at once: a server that is not there
        // is the caller's error. Later drops reconnect with a backoff.
        reconnectStrategy: (retries: number, cause: Error) =>
          ready ? Math.min(50 * 2 ** Math.min(retries, 6), 2000) : cause,
        ...socket,
      },
    } as Parameters<typeof createClient>[0]) as NodeRedisClient;
    client.once("ready", () => {
      ready = true;
    });
    const a = new NodeRedisAdapter(client, opts);
    try {
      await client.connect();
    } catch (err) {
      client.destroy();
      throw mapError(err);
    }
    return a;
  }

  get generation(): number {
    return this.#generation;
  }

  async waitReady(
    _args: readonly RedisArg[] | undefined,
    signal: AbortSignal,
  ): Promise<void> {
    while (!this.#client.isReady && !signal.aborted) {
      if (!this.#client.isOpen) {
        throw new ConnectionError("the client is closed");
      }
      await onceOf(this.#client, ["ready", "end"], signal);
    }
  }

  send(args: readonly RedisArg[]): Promise<unknown> {
    return this.#client
      .sendCommand(args as RedisArg[], this.#sendOptions)
      .catch(rethrow);
  }

  async sendMany(cmds: readonly (readonly RedisArg[])[]): Promise<Settled[]> {
    // node-redis writes the commands of one tick in one batch: a pipeline.
    return Promise.all(
      cmds.map((c) =>
        this.send(c).then(
          (value): Settled => ({ ok: true, value }),
          (error: unknown): Settled => ({ ok: false, error }),
        ),
      ),
    );
  }

  async block(
    args: readonly RedisArg[],
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<unknown> {
    if (signal?.aborted) {
      return null;
    }
    let b = this.#idle.pop();
    if (b === undefined) {
      b = this.#client.duplicate({ RESP: 2, disableOfflineQueue: true });
      b.on("error", (err: unknown) => this.#onError(err));
      this.#blockers.add(b);
      try {
        await b.connect();
      } catch (err) {
        this.#dropBlocker(b);
        throw mapError(err);
      }
    }
    const blocker = b;
    let cut = false;
    const stop = () => {
      // The command's state on the connection is unknown now: drop the
      // connection, and open another next time.
      cut = true;
      this.#dropBlocker(blocker);
    };
    const timer = setTimeout(stop, timeoutMs);
    signal?.addEventListener("abort", stop, { once: true });
    try {
      const v = await blocker.sendCommand(args as RedisArg[], { typeMapping });
      if (!cut && this.#blockers.has(blocker)) {
        this.#idle.push(blocker);
      }
      return v;
    } catch (err) {
      if (cut) {
        return null;
      }
      this.#dropBlocker(blocker);
      throw mapError(err);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", stop);
    }
  }

  async subscribe(
    channel: string,
    onMessage: (message: Buffer) => void,
    onReady: () => void,
  ): Promise<Subscription> {
    // A connection of its own: a subscribed RESP 2 connection takes no
    // other command. node-redis subscribes it again after each reconnect.
    const sub = this.#client.duplicate({ RESP: 2 });
    sub.on("error", (err: unknown) => this.#onError(err));
    this.#subscribers.add(sub);
    let first = true;
    sub.on("ready", () => {
      if (first) {
        first = false; // the subscription below is not up yet
        return;
      }
      onReady();
    });
    const listener = (m: Buffer) => onMessage(m);
    try {
      await sub.connect();
      await sub.sSubscribe(channel, listener, true);
    } catch (err) {
      this.#subscribers.delete(sub);
      sub.destroy();
      throw mapError(err);
    }
    return {
      close: async () => {
        if (!this.#subscribers.delete(sub)) {
          return;
        }
        try {
          await sub.sUnsubscribe(channel, listener, true);
          await sub.close();
        } catch {
          sub.destroy();
        }
      },
    };
  }

  #dropBlocker(b: NodeRedisClient): void {
    this.#blockers.delete(b);
    this.#idle = this.#idle.filter((x) => x !== b);
    try {
      b.destroy();
    } catch {
      // already closed
    }
  }

  async close(): Promise<void> {
    for (const b of [...this.#blockers]) {
      this.#dropBlocker(b);
    }
    for (const sub of [...this.#subscribers]) {
      this.#subscribers.delete(sub);
      sub.destroy();
    }
    try {
      await this.#client.close();
    } catch {
      this.#client.destroy();
    }
  }
}
