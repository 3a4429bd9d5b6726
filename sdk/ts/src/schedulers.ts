// echomq 2.6.0 on the SDK's surface: job schedulers. A scheduler's record
// holds a schedule (a cron expression in a time zone, or an interval), its
// missed-slot policy, a payload template and its next slot; clients plan
// the slots (plan, below) and fire them with fire_schedulers, which
// compares and sets each scheduler's next slot, so that any number of
// processes fire each slot once.

import { Firing, Missed, isMissed, type RedisArg } from "./gen/index.js";
import { ArgumentError } from "./errors.js";
import type { CallOptions } from "./client.js";
import {
  CRON_MAX_BYTES,
  Cron,
  Interval,
  TZ_MAX_BYTES,
  type Schedule,
} from "./cron.js";

/** The most runs one plan of one scheduler makes (its missed runs included). */
export const PLAN_CAP = 100;

/** The longest scheduler id, in bytes (upsert_scheduler's bound). */
export const SCHEDULER_ID_MAX_BYTES = 256;

/** The largest template of a scheduler's runs, in bytes (upsert_scheduler's bound). */
export const TEMPLATE_MAX_BYTES = 1_048_576;

/** The largest backfill bound (upsert_scheduler's bound). */
export const BACKFILL_MAX = 100;

/** The most records one page of listSchedulers (or of a due read) holds. */
export const SCHEDULERS_PAGE_MAX = 1000;

/** SchedulerSpec.missed's default. */
export const DEFAULT_MISSED: Missed = Missed.runOnce;

/** SchedulerSpec.graceMs's default: a minute. */
export const DEFAULT_GRACE_MS = 60_000;

/** RunSchedulersOptions.pollMs's default. */
export const DEFAULT_SCHEDULER_POLL_MS = 250;

/** How many due records one round of a tick reads (FireDueOptions.count's default). */
export const DEFAULT_DUE_COUNT = 100;

/**
 * What Queue.upsertScheduler creates or updates (echomq 2.6.0): exactly
 * one of cron (with tz) and everyMs (with startMs), what is done with
 * missed slots, and the runs' payload.
 */
export interface SchedulerSpec {
  /** A cron expression (see parseCron); unset or "" for an interval. */
  readonly cron?: string;
  /** The cron expression's IANA time zone; unset or "" is UTC. Only with cron. */
  readonly tz?: string;
  /** The interval between slots in ms (above 0); unset or 0 for a cron schedule. */
  readonly everyMs?: number;
  /** The interval's first slot (Unix ms, server clock); unset or 0: the upsert's server time (the first run is due at once). Only with everyMs. */
  readonly startMs?: number;
  /** What is done with missed slots; default Missed.runOnce. */
  readonly missed?: Missed;
  /** Under Missed.backfill, at most this many missed slots get a run each, the latest (0 to 100; default 0). */
  readonly backfill?: number;
  /** A slot fired more than this long (ms) after it fell due is missed; default 60000. */
  readonly graceMs?: number;
  /**
   * The payload of each run (at most 1 MiB; default empty), in which the
   * firing replaces {scheduler} with the scheduler's id, {slot} with the
   * run's slot and {until} with the slot it stands for up to (Unix ms).
   */
  readonly template?: Uint8Array | string;
}

/** What Queue.upsertScheduler did. */
export interface SchedulerUpsert {
  /** The scheduler is new. */
  readonly created: boolean;
  /** Its schedule is new or differs from the stored one, so its next slot was reset (an interval to its start, a cron schedule to now). An upsert of the same schedule keeps the next slot: no run is repeated or lost. */
  readonly changed: boolean;
  /** Its stored next slot (Unix ms, server clock). */
  readonly nextMs: number;
}

/** A scheduler's record as the server holds it (echomq 2.6.0). */
export interface SchedulerRecord {
  /** The scheduler's id. */
  readonly id: string;
  /** Its cron expression; "" for an interval. */
  readonly cron: string;
  /** Its cron expression's time zone (UTC when upserted with ""); "" for an interval. */
  readonly tz: string;
  /** Its interval; 0 for a cron schedule. */
  readonly everyMs: number;
  /** Its interval's anchor, the first slot (server clock); 0 for a cron schedule. */
  readonly startMs: number;
  /** What it does with missed slots: a word of Missed, or a later minor's word (planned as run_once). */
  readonly missed: Missed | (string & {});
  /** The backfill bound. */
  readonly backfill: number;
  /** The grace in ms. */
  readonly graceMs: number;
  /** The template of its runs' payloads. */
  readonly template: Buffer;
  /** Whether it is paused. */
  readonly paused: boolean;
  /** Its stored next slot: the first slot not fired is its schedule's first at or after it; 0 when the schedule has ended. */
  readonly nextMs: number;
  /** The slot of its last run; 0 when it fired none. */
  readonly lastSlotMs: number;
  /** The job id of its last run; "" when it fired none. */
  readonly lastId: string;
  /** How many runs it fired. */
  readonly runs: number;
  /** The server's time of the read (Unix ms): plan with it, never with the local clock. */
  readonly nowMs: number;
}

/** What a plan needs of a scheduler's record. */
export interface PlanRecord {
  readonly cron: string;
  readonly tz: string;
  readonly everyMs: number;
  readonly startMs: number;
  readonly missed: string;
  readonly backfill: number;
  readonly graceMs: number;
  readonly nextMs: number;
  readonly paused: boolean;
}

/**
 * One step of a scheduler's firing, as plan makes them: planned from the
 * stored next slot expectMs, it moves it to nextMs (0: ended), with a run
 * at slotMs standing for the slots up to untilMs, or no run (slotMs 0).
 */
export interface PlannedEntry {
  readonly expectMs: number;
  readonly nextMs: number;
  readonly slotMs: number;
  readonly untilMs: number;
}

/** One entry of Queue.fireSchedulers: a planned step of a scheduler, with its run's job id (any fresh work id for a step without a run). */
export interface FireEntry extends PlannedEntry {
  readonly id: string;
  readonly scheduler: string;
}

/** A run a firing created: a job of the queue, id, pending when its slot was due, scheduled at it otherwise. */
export interface FiredRun {
  readonly scheduler: string;
  readonly slotMs: number;
  readonly untilMs: number;
  /** The run's job id. */
  readonly id: string;
}

/** The options of Queue.fireDue. */
export interface FireDueOptions extends CallOptions {
  /** Fire the slots due within this many ms past the server's now (their runs wait scheduled at their slots); default 0. */
  readonly horizonMs?: number;
  /** How many due schedulers one round reads and fires (1 to 1000; default 100). */
  readonly count?: number;
}

/** The options of Queue.runSchedulers. */
export interface RunSchedulersOptions {
  /** Stops the runner (it resolves once the tick under way is done). */
  readonly signal?: AbortSignal;
  /** How long the runner waits between ticks, in ms; default 250. */
  readonly pollMs?: number;
  /** As FireDueOptions.horizonMs. */
  readonly horizonMs?: number;
  /** As FireDueOptions.count. */
  readonly count?: number;
  /** Called with the runs each tick fired (none: not called). */
  readonly onFired?: (runs: readonly FiredRun[]) => void;
}

/** @internal An upsert, checked, in upsert_scheduler's wire form. */
export interface WireScheduler {
  readonly cron: string;
  readonly tz: string;
  readonly everyMs: number;
  readonly startMs: number;
  readonly missed: Missed;
  readonly backfill: number;
  readonly graceMs: number;
  readonly template: RedisArg;
}

function nonNegative(what: string, n: unknown): number {
  if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0) {
    throw new ArgumentError(
      what + " " + String(n) + " is not a non-negative integer",
    );
  }
  return n;
}

/** @internal Checks a scheduler's id: a string of 1 to 256 bytes. */
export function checkSchedulerId(id: unknown): string {
  if (typeof id !== "string") {
    throw new ArgumentError("a scheduler id is a string");
  }
  const n = Buffer.byteLength(id);
  if (n < 1 || n > SCHEDULER_ID_MAX_BYTES) {
    throw new ArgumentError(
      "scheduler id " +
        JSON.stringify(id.length > 40 ? id.slice(0, 40) + "..." : id) +
        " is " +
        n +
        " bytes, not 1 to " +
        SCHEDULER_ID_MAX_BYTES,
    );
  }
  return id;
}

/** @internal Checks spec and converts it; nothing is sent when it throws. */
export function wireScheduler(spec: SchedulerSpec | undefined): WireScheduler {
  if (spec === undefined || spec === null || typeof spec !== "object") {
    throw new ArgumentError(
      "a scheduler needs a cron expression or an everyMs",
    );
  }
  const cron = spec.cron ?? "";
  const tz = spec.tz ?? "";
  if (typeof cron !== "string" || typeof tz !== "string") {
    throw new ArgumentError("cron and tz are strings");
  }
  const everyMs = nonNegative("everyMs", spec.everyMs ?? 0);
  const startMs = nonNegative("startMs", spec.startMs ?? 0);
  if ((cron === "") === (everyMs === 0)) {
    throw new ArgumentError(
      "a scheduler has exactly one of a cron expression and an everyMs above 0",
    );
  }
  if (cron !== "") {
    if (startMs !== 0) {
      throw new ArgumentError("startMs is for an interval only");
    }
    if (Buffer.byteLength(cron) > CRON_MAX_BYTES) {
      throw new ArgumentError(
        "cron expression is longer than " + CRON_MAX_BYTES + " bytes",
      );
    }
    if (Buffer.byteLength(tz) > TZ_MAX_BYTES) {
      throw new ArgumentError("tz is longer than " + TZ_MAX_BYTES + " bytes");
    }
    Cron.parse(cron, tz);
  } else if (tz !== "") {
    throw new ArgumentError("tz is for a cron expression only");
  }
  const missed = String(spec.missed ?? DEFAULT_MISSED);
  if (!isMissed(missed)) {
    throw new ArgumentError(
      "missed " + JSON.stringify(missed) + " is not a missed policy",
    );
  }
  const backfill = nonNegative("backfill", spec.backfill ?? 0);
  if (backfill > BACKFILL_MAX) {
    throw new ArgumentError(
      "backfill " + backfill + " is over " + BACKFILL_MAX,
    );
  }
  const graceMs = nonNegative("graceMs", spec.graceMs ?? DEFAULT_GRACE_MS);
  const t = spec.template ?? "";
  let template: RedisArg;
  if (typeof t === "string") {
    template = t;
  } else if (t instanceof Uint8Array) {
    template = Buffer.from(t);
  } else {
    throw new ArgumentError("a template is a string or bytes");
  }
  const size =
    typeof template === "string"
      ? Buffer.byteLength(template)
      : template.length;
  if (size > TEMPLATE_MAX_BYTES) {
    throw new ArgumentError(
      "template is " + size + " bytes, over " + TEMPLATE_MAX_BYTES,
    );
  }
  return { cron, tz, everyMs, startMs, missed, backfill, graceMs, template };
}

/** The schedule of a cron or interval pair, as a planner evaluates it. */
interface Slots {
  nextAfter(x: number): number;
  prevBefore(y: number, floor: number): number | null;
}

/**
 * The schedule of a record or spec: parseCron(cron, tz) or an Interval of
 * everyMs from startMs. A cron expression that does not parse throws an
 * ArgumentError.
 */
export function scheduleOf(s: {
  readonly cron?: string;
  readonly tz?: string;
  readonly everyMs?: number;
  readonly startMs?: number;
}): Cron | Interval {
  const cron = s.cron ?? "";
  if (cron !== "") {
    return Cron.parse(cron, s.tz ?? "");
  }
  return new Interval(s.everyMs ?? 0, s.startMs ?? 0);
}

/**
 * The next n slots strictly after afterMs (Unix ms) of a schedule: a
 * Schedule, a scheduler's record, or a spec (an interval's startMs as
 * given). Fewer when the schedule ends. For an inspector or a dashboard;
 * the runner plans from the server's clock.
 */
export function nextRuns(
  schedule:
    | Schedule
    | {
        readonly cron?: string;
        readonly tz?: string;
        readonly everyMs?: number;
        readonly startMs?: number;
      },
  afterMs: number,
  n: number,
): number[] {
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new ArgumentError("n " + n + " is not a non-negative integer");
  }
  const s: Schedule =
    typeof (schedule as Schedule).next === "function"
      ? (schedule as Schedule)
      : scheduleOf(schedule as { readonly cron?: string });
  const out: number[] = [];
  let at = afterMs;
  while (out.length < n) {
    const t = s.next(at);
    if (t === null) {
      break;
    }
    out.push(t);
    at = t;
  }
  return out;
}

/** @internal The planner's view of a schedule. */
function slotsOf(r: PlanRecord, cache?: Map<string, Cron>): Slots {
  if (r.cron !== "") {
    const key = r.tz + "\n" + r.cron;
    let c = cache?.get(key);
    if (c === undefined) {
      c = Cron.parse(r.cron, r.tz);
      if (cache !== undefined) {
        if (cache.size >= 1024) {
          cache.clear();
        }
        cache.set(key, c);
      }
    }
    return c;
  }
  return new Interval(r.everyMs, r.startMs);
}

/**
 * Plans the firing of a scheduler's record at nowMs (the server's time of
 * the read that gave it) for slots up to horizonMs past it: the runs of
 * the slots due (the missed ones as its missed policy says: none, one run
 * standing for all of them, or a run for each of the last backfill), at
 * most 100 runs, chained from its stored next slot, or one entry that only
 * moves the next slot when no run is due and the next slot is not the
 * schedule's first at or after it. Empty when the record is paused or
 * ended. A cron expression that does not parse throws an ArgumentError.
 */
export function plan(
  record: PlanRecord,
  nowMs: number,
  horizonMs: number,
): PlannedEntry[] {
  return planWith(record, nowMs, horizonMs, undefined);
}

/** @internal plan, with a cache of parsed cron expressions. */
export function planWith(
  record: PlanRecord,
  nowMs: number,
  horizonMs: number,
  cache: Map<string, Cron> | undefined,
): PlannedEntry[] {
  const n = record.nextMs;
  if (n === 0 || record.paused) {
    return [];
  }
  const sched = slotsOf(record, cache);
  const first = (x: number) => sched.nextAfter(x - 1);
  const cutoff = nowMs - record.graceMs;
  const end = nowMs + horizonMs;
  const s1 = first(n);
  const runs: [number, number][] = [];
  let s: number;
  if (s1 !== 0 && s1 < cutoff) {
    const o = first(cutoff);
    const missed = isMissed(record.missed) ? record.missed : Missed.runOnce;
    if (missed === Missed.runOnce) {
      runs.push([s1, o]);
    } else if (missed === Missed.backfill) {
      const k = Math.min(record.backfill, PLAN_CAP);
      const last: number[] = [];
      let y = cutoff;
      while (last.length < k) {
        const p = sched.prevBefore(y, s1);
        if (p === null) {
          break;
        }
        last.push(p);
        y = p;
      }
      for (let i = last.length - 1; i >= 0; i--) {
        const t = last[i]!;
        runs.push([t, sched.nextAfter(t)]);
      }
    }
    s = o;
  } else {
    s = s1;
  }
  while (s !== 0 && s <= end && runs.length < PLAN_CAP) {
    const u = sched.nextAfter(s);
    runs.push([s, u]);
    s = u;
  }
  const out: PlannedEntry[] = [];
  let e = n;
  for (const [slot, until] of runs) {
    out.push({ expectMs: e, nextMs: until, slotMs: slot, untilMs: until });
    e = until;
  }
  if (runs.length === 0 && s !== n) {
    out.push({ expectMs: n, nextMs: s, slotMs: 0, untilMs: 0 });
  }
  return out;
}

/** @internal The outcome words that wrote something. */
export function moved(outcome: Firing | string): boolean {
  return outcome === Firing.fired || outcome === Firing.advanced;
}
