// The fault harness's TypeScript scheduler process (internal/chaos, scenario
// jobschedulers): the harness starts it with node, configured by the
// environment variable EMQCHAOS_SCHEDULER (the Go harness's SchedulerConfig
// as JSON: durations in nanoseconds). It upserts every scheduler of the
// configuration (the same schedule at every start, so the next slot is
// kept), then runs the SDK's scheduler loop (Queue.runSchedulers) until
// SIGTERM or SIGINT.
//
// It writes the Go scheduler process's record format to its record file,
// one synchronous write(2) per line, so that a SIGKILL loses nothing
// recorded: H with its pid once the schedulers are upserted, then F with
// the run id, slot, until and scheduler of every run it fired.

import { openSync, writeSync } from "node:fs";
import {
  ArgumentError,
  NodeRedisAdapter,
  connect,
  type Logger,
  type Missed,
} from "../src/index.js";
import { MISSEDS } from "../src/gen/index.js";

/** The variable the harness passes the configuration in. */
export const SCHEDULER_ENV = "EMQCHAOS_SCHEDULER";

/** One scheduler: an interval from a fixed anchor. */
export interface SchedulerSpec {
  ID: string;
  Every: number; // nanoseconds
  StartMS: number;
  Missed: string;
  Backfill: number;
  Grace: number; // nanoseconds
}

/** The Go harness's SchedulerConfig, as encoding/json writes it. */
export interface SchedulerConfig {
  Addrs: string[];
  Queue: string;
  Specs: SchedulerSpec[] | null;
  Template: string;
  Poll: number; // nanoseconds
  Horizon: number; // nanoseconds
  Records: string;
}

/** Nanoseconds to whole milliseconds. */
function ms(ns: number): number {
  return Math.round(ns / 1e6);
}

/** A word of the missed vocabulary (an error for another). */
function missedOf(word: string): Missed {
  const m = MISSEDS.find((w) => w === word);
  if (m === undefined) {
    throw new Error(
      `missed ${JSON.stringify(word)} is not one of ${MISSEDS.join(", ")}`,
    );
  }
  return m;
}

/** Appends records to a file, one write(2) per record. */
class Recorder {
  readonly #fd: number;

  constructor(path: string) {
    this.#fd = openSync(path, "a");
  }

  line(...words: (string | number)[]): void {
    writeSync(this.#fd, words.join(" ") + "\n");
  }
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
  let cfg: SchedulerConfig;
  try {
    cfg = JSON.parse(process.env[SCHEDULER_ENV] ?? "") as SchedulerConfig;
  } catch (err) {
    console.error("emqchaos ts scheduler: bad " + SCHEDULER_ENV + ":", err);
    return 2;
  }
  const rec = new Recorder(cfg.Records);
  const stop = new AbortController();
  process.once("SIGTERM", () => stop.abort());
  process.once("SIGINT", () => stop.abort());
  const url = "redis://" + (cfg.Addrs[0] ?? "127.0.0.1:6379");
  let client;
  for (;;) {
    try {
      client = await connect({
        adapter: await NodeRedisAdapter.connect({ url }),
        logger,
      });
      break;
    } catch (err) {
      if (stop.signal.aborted) {
        throw err;
      }
      logger.warn("emqchaos ts scheduler: connect failed; retrying", { err });
      await sleep(100);
    }
  }
  const q = client.queue(cfg.Queue);
  for (const s of cfg.Specs ?? []) {
    for (;;) {
      try {
        await q.upsertScheduler(s.ID, {
          everyMs: ms(s.Every),
          startMs: s.StartMS,
          missed: missedOf(s.Missed),
          backfill: s.Backfill,
          graceMs: ms(s.Grace),
          template: cfg.Template,
        });
        break;
      } catch (err) {
        if (err instanceof ArgumentError || stop.signal.aborted) {
          throw err;
        }
        logger.warn("emqchaos ts scheduler: upsert failed; retrying", {
          scheduler: s.ID,
          err,
        });
        await sleep(50);
      }
    }
  }
  rec.line("H", process.pid);
  await q.runSchedulers({
    signal: stop.signal,
    pollMs: ms(cfg.Poll) || undefined,
    horizonMs: ms(cfg.Horizon),
    onFired: (runs) => {
      for (const r of runs) {
        rec.line("F", r.id, r.slotMs, r.untilMs, r.scheduler);
      }
    },
  });
  await client.close();
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error("emqchaos ts scheduler:", err);
    process.exit(1);
  },
);
