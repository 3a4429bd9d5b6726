// Counts of what the SDK does, and where they go.

import { inspect, type InspectOptions } from "node:util";

/** The counters, by their stable names (a metrics exporter's labels). */
export const COUNTERS = [
  "enqueued",
  "claimed",
  "completed",
  "retried",
  "buried",
  "stale",
  "reaped",
  "promoted",
  "handed_back",
  "cancelled",
] as const;

/**
 * One thing the SDK counts: jobs admitted (enqueued, not duplicates),
 * leased by a worker (claimed), finished and accepted (completed), handed
 * back after a failure or at shutdown (retried), moved to dead (buried),
 * transitions refused because the lease was lost (stale), expired leases
 * taken back (reaped), scheduled jobs made pending (promoted), jobs of
 * handlers that overran a shutdown's deadline (handed_back), and jobs a
 * worker held that were cancelled under it (cancelled, echomq 2.5.0).
 */
export type Counter = (typeof COUNTERS)[number];

/**
 * Receives counts. An adapter to Prometheus or OpenTelemetry implements add
 * with a counter labelled by the counter's name and the queue. add must not
 * throw or block.
 */
export interface Metrics {
  add(counter: Counter, queue: string, n: number): void;
}

/** A Metrics that keeps totals in memory, for tests, logs and a quick look. */
export class Tally implements Metrics {
  #n = new Map<Counter, number>();

  add(counter: Counter, _queue: string, n: number): void {
    this.#n.set(counter, (this.#n.get(counter) ?? 0) + n);
  }

  /** The total of counter. */
  get(counter: Counter): number {
    return this.#n.get(counter) ?? 0;
  }

  /** Every total, by name. */
  snapshot(): Record<Counter, number> {
    const out = {} as Record<Counter, number>;
    for (const c of COUNTERS) {
      out[c] = this.get(c);
    }
    return out;
  }

  /** The totals, by name, for JSON.stringify: the snapshot. */
  toJSON(): Record<Counter, number> {
    return this.snapshot();
  }

  /** "Tally { enqueued: 3, claimed: 3, ... }" for console.log and util.inspect. */
  [inspect.custom](
    _depth: number,
    opts: InspectOptions,
    insp: typeof inspect = inspect,
  ): string {
    return "Tally " + insp(this.snapshot(), opts);
  }
}

/** A Metrics that keeps nothing. */
export const noMetrics: Metrics = { add() {} };

/** Where the SDK's notices go; fields are structured context. */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** The default logger: warnings and errors to stderr, nothing else. */
export const stderrLogger: Logger = {
  debug() {},
  info() {},
  warn(msg, fields) {
    console.warn(msg, fields ?? "");
  },
  error(msg, fields) {
    console.error(msg, fields ?? "");
  },
};
