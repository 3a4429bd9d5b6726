// The fault harness's TypeScript worker process (internal/chaos): the
// harness starts it with node, configured by the environment variable
// EMQCHAOS_WORKER (the Go harness's WorkerConfig as JSON: durations in
// nanoseconds), and it works the queue with the SDK's Worker until SIGTERM
// or SIGINT, then drains.
//
// It writes the Go worker process's record format to its record file, one
// synchronous write(2) per line, so that a SIGKILL loses nothing recorded:
// H at start, S and E around every handler, and the settle outcome of every
// transition as the server answered it (C, Z, Y, T, B, F; L for a refused
// lease extension; P for reaped leases; Q with the totals at a clean exit).
// The outcomes are recorded by a RedisAdapter that wraps the SDK's own: it
// sees each script call's id and token and the server's reply, so that each
// outcome is attributed to its lease exactly, however the handlers
// interleave.

import { openSync, writeSync } from "node:fs";
import {
  ClusterAdapter,
  NodeRedisAdapter,
  ReplyError,
  Event,
  Tally,
  Worker,
  connect,
  type Counter,
  type Logger,
  type Metrics,
  type RedisAdapter,
  type RedisArg,
  type Settled,
} from "../src/index.js";
import {
  CLASS_STALE,
  SCRIPTS,
  SCRIPT_BURY,
  SCRIPT_COMPLETE,
  SCRIPT_COMPLETE_CLAIM,
  SCRIPT_COMPLETE_CLAIM_IDS,
  SCRIPT_COMPLETE_RESULT_CLAIM_IDS,
  SCRIPT_EXTEND,
  SCRIPT_FAIL,
  SCRIPT_RETRY,
  SCRIPT_RETRY_FAILED,
  SCRIPT_BURY_FAILED,
  SCRIPT_COMPLETE_POLICY_IDS,
  SCRIPT_COMPLETE_RATE_IDS,
  SCRIPT_EXTEND_POLICY,
  SCRIPT_FAIL_POLICY,
  SCRIPT_RETRY_POLICY,
  SCRIPT_BURY_POLICY,
  decodeFail,
  type Script,
} from "../src/gen/index.js";

/** The variable the harness passes the configuration in. */
export const WORKER_ENV = "EMQCHAOS_WORKER";

/** The Go harness's WorkerConfig, as encoding/json writes it. */
export interface WorkerConfig {
  Addrs: string[];
  Queue: string;
  Concurrency: number;
  Lease: number; // nanoseconds
  Maintenance: number;
  Wait: number;
  HandlerMin: number;
  HandlerMax: number;
  FailRate: number;
  Backoff: number;
  ConnWriteTimeout: number;
  ShutdownTimeout: number;
  Records: string;
  Seed: number;
}

/** Nanoseconds to whole milliseconds (0 stays 0: the SDK's default). */
export function ms(ns: number): number {
  return ns > 0 ? Math.max(1, Math.round(ns / 1e6)) : 0;
}

/** Appends records to a file, one write(2) per record. */
export class Recorder {
  readonly #fd: number;

  constructor(path: string) {
    this.#fd = openSync(path, "a");
  }

  /** Writes one line of words. */
  line(...words: (string | number)[]): void {
    writeSync(this.#fd, words.join(" ") + "\n");
  }
}

/** The settle outcome a script's reply records, by script. */
const settles = new Map<Script, { ok: string; stale: string }>([
  [SCRIPT_COMPLETE, { ok: "C", stale: "Z" }],
  [SCRIPT_COMPLETE_CLAIM, { ok: "C", stale: "Z" }],
  [SCRIPT_COMPLETE_CLAIM_IDS, { ok: "C", stale: "Z" }],
  [SCRIPT_COMPLETE_RESULT_CLAIM_IDS, { ok: "C", stale: "Z" }],
  [SCRIPT_RETRY, { ok: "T", stale: "Y" }],
  [SCRIPT_RETRY_FAILED, { ok: "T", stale: "Y" }],
  [SCRIPT_BURY, { ok: "B", stale: "Y" }],
  [SCRIPT_BURY_FAILED, { ok: "B", stale: "Y" }],
  // fail (2.4.0) retries or buries, as its reply's outcome says (#settled).
  [SCRIPT_FAIL, { ok: "T", stale: "Y" }],
  // The 2.7 twins the SDK runs (echomq 2.7.0), as the scripts they twin.
  [SCRIPT_COMPLETE_POLICY_IDS, { ok: "C", stale: "Z" }],
  [SCRIPT_RETRY_POLICY, { ok: "T", stale: "Y" }],
  [SCRIPT_BURY_POLICY, { ok: "B", stale: "Y" }],
  [SCRIPT_FAIL_POLICY, { ok: "T", stale: "Y" }],
  // The 2.8 completion the SDK runs (echomq 2.8.0), which honours a rate limit.
  [SCRIPT_COMPLETE_RATE_IDS, { ok: "C", stale: "Z" }],
]);

/** Whether a script extends a lease (extend, or its 2.7 twin). */
function extends_(s: Script): boolean {
  return s === SCRIPT_EXTEND || s === SCRIPT_EXTEND_POLICY;
}

/** Whether a script settles a failed attempt by its reply's outcome (fail, or its 2.7 twin). */
function fails(s: Script): boolean {
  return s === SCRIPT_FAIL || s === SCRIPT_FAIL_POLICY;
}

const bySha = new Map(SCRIPTS.map((s) => [s.sha1, s]));
const bySource = new Map(SCRIPTS.map((s) => [s.source, s]));

function text(a: RedisArg | undefined): string {
  return a === undefined ? "" : Buffer.isBuffer(a) ? a.toString() : a;
}

/** The script a command runs and its id and token, when it is a transition the records follow. */
function transition(
  args: readonly RedisArg[],
): { script: Script; id: string; token: string } | undefined {
  const verb = text(args[0]).toUpperCase();
  const body = text(args[1]);
  const script =
    verb === "EVALSHA"
      ? bySha.get(body)
      : verb === "EVAL"
        ? bySource.get(body)
        : undefined;
  if (script === undefined || (!settles.has(script) && !extends_(script))) {
    return undefined;
  }
  const argv = args.slice(3 + Number(text(args[2])));
  const id = text(argv[script.argTypes.indexOf("id")]);
  const token = text(argv[script.argTypes.indexOf("token")]);
  return { script, id, token };
}

/**
 * A RedisAdapter that passes every command to the SDK's own and records the
 * outcome of every transition on a lease.
 */
export class RecordingAdapter implements RedisAdapter {
  readonly #next: RedisAdapter;
  readonly #rec: Recorder;

  constructor(next: RedisAdapter, rec: Recorder) {
    this.#next = next;
    this.#rec = rec;
  }

  get generation(): number {
    return this.#next.generation;
  }

  #settled(args: readonly RedisArg[], s: Settled): void {
    const t = transition(args);
    if (t === undefined) {
      return;
    }
    if (!s.ok && s.error instanceof ReplyError) {
      if (s.error.message.startsWith("NOSCRIPT")) {
        return; // the call is sent again with EVAL
      }
      if (s.error.message.split(" ")[0] === CLASS_STALE) {
        if (extends_(t.script)) {
          this.#rec.line("L");
        } else {
          this.#rec.line(settles.get(t.script)!.stale, t.id, t.token);
        }
        return;
      }
    }
    if (extends_(t.script)) {
      return;
    }
    const o = settles.get(t.script)!;
    let ok = o.ok;
    if (s.ok && fails(t.script)) {
      try {
        if (decodeFail(s.value).outcome === Event.dead) {
          ok = "B";
        }
      } catch {
        // an undecodable reply is the SDK's to report; the record keeps T
      }
    }
    this.#rec.line(s.ok ? ok : "F", t.id, t.token);
  }

  async send(args: readonly RedisArg[]): Promise<unknown> {
    try {
      const value = await this.#next.send(args);
      this.#settled(args, { ok: true, value });
      return value;
    } catch (error) {
      this.#settled(args, { ok: false, error });
      throw error;
    }
  }

  async sendMany(cmds: readonly (readonly RedisArg[])[]): Promise<Settled[]> {
    let res: Settled[];
    try {
      res = await this.#next.sendMany(cmds);
    } catch (error) {
      cmds.forEach((c) => this.#settled(c, { ok: false, error }));
      throw error;
    }
    res.forEach((s, i) => this.#settled(cmds[i]!, s));
    return res;
  }

  block(
    args: readonly RedisArg[],
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<unknown> {
    return this.#next.block(args, timeoutMs, signal);
  }

  close(): Promise<void> {
    return this.#next.close();
  }
}

/** Counts for the totals, and records the leases maintenance reaped. */
class RecordingMetrics implements Metrics {
  readonly tally = new Tally();
  readonly #rec: Recorder;

  constructor(rec: Recorder) {
    this.#rec = rec;
  }

  add(counter: Counter, queue: string, n: number): void {
    this.tally.add(counter, queue, n);
    if (counter === "reaped") {
      this.#rec.line("P", n);
    }
  }
}

/** A small seeded generator (mulberry32) for the handlers' durations. */
function random(seed: number): () => number {
  let a = seed >>> 0 || 1;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (d: number) => new Promise((r) => setTimeout(r, d));

const logger: Logger = {
  debug() {},
  info() {},
  warn(msg, fields) {
    console.error("warn", msg, fields ?? "");
  },
  error(msg, fields) {
    console.error("error", msg, fields ?? "");
  },
};

async function main(): Promise<number> {
  let cfg: WorkerConfig;
  try {
    cfg = JSON.parse(process.env[WORKER_ENV] ?? "") as WorkerConfig;
  } catch (err) {
    console.error("emqchaos ts worker: bad " + WORKER_ENV + ":", err);
    return 2;
  }
  const rec = new Recorder(cfg.Records);
  rec.line("H", process.pid);
  const stop = new AbortController();
  process.once("SIGTERM", () => stop.abort());
  process.once("SIGINT", () => stop.abort());
  const metrics = new RecordingMetrics(rec);
  // More than one address: the nodes of a Redis Cluster.
  const urls = (cfg.Addrs.length > 0 ? cfg.Addrs : ["127.0.0.1:6379"]).map(
    (a) => "redis://" + a,
  );
  let client;
  for (;;) {
    try {
      const a: RedisAdapter =
        urls.length > 1
          ? await ClusterAdapter.connect({ rootNodes: urls })
          : await NodeRedisAdapter.connect({ url: urls[0] });
      client = await connect({
        adapter: new RecordingAdapter(a, rec),
        logger,
        metrics,
      });
      break;
    } catch (err) {
      if (stop.signal.aborted) {
        throw err;
      }
      logger.warn("emqchaos ts worker: connect failed; retrying", { err });
      await sleep(100);
    }
  }
  const q = client.queue(cfg.Queue);
  const rnd = random(cfg.Seed ^ process.pid);
  const min = ms(cfg.HandlerMin);
  const span = Math.max(0, ms(cfg.HandlerMax) - min);
  const backoff = ms(cfg.Backoff);
  const w = new Worker(
    q,
    async (job) => {
      // The handler ignores its signal on purpose: it finishes its work
      // even after the lease is lost, so that the protocol, not the
      // handler, must refuse the stale completion.
      rec.line("S", job.id, job.token);
      const d = min + Math.floor(rnd() * (span + 1));
      const fail = job.token === 1 && rnd() < cfg.FailRate;
      await sleep(d);
      rec.line("E", job.id, job.token, fail ? "err" : "ok");
      if (fail) {
        throw new Error("emqchaos: a planned failure");
      }
    },
    {
      concurrency: cfg.Concurrency,
      leaseMs: ms(cfg.Lease) || 30000,
      maintenanceMs: ms(cfg.Maintenance) || undefined,
      waitMs: ms(cfg.Wait) || undefined,
      backoff: () => backoff,
      shutdownTimeoutMs: ms(cfg.ShutdownTimeout) || 5000,
    },
  );
  await w.run(stop.signal);
  const totals = Object.entries(metrics.tally.snapshot()).map(
    ([k, v]) => k + "=" + v,
  );
  rec.line("Q", ...totals);
  await client.close();
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error("emqchaos ts worker:", err);
    process.exit(1);
  },
);
