// echomq 2.6.0's schedules, offline: every case of
// conformance/vectors/schedules.json (the oracle's cron slots across DST,
// intervals, refused expressions and zones, plans), and the cron search's
// speed (field-wise, not a scan).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import * as emq from "../src/index.js";
import { root } from "./manifest.js";

interface Vectors {
  generated: string;
  cron: {
    name: string;
    expr: string;
    tz: string;
    after_ms: number;
    next_ms: number[];
  }[];
  interval: {
    name: string;
    start_ms: number;
    every_ms: number;
    after_ms: number;
    next_ms: number[];
  }[];
  invalid_cron: { expr: string; why: string }[];
  invalid_tz: string[];
  plans: {
    name: string;
    record: {
      cron: string;
      tz: string;
      every_ms: number;
      start_ms: number;
      missed: string;
      backfill: number;
      grace_ms: number;
      next_ms: number;
      paused: boolean;
    };
    now_ms: number;
    horizon_ms: number;
    entries: {
      expect_ms: number;
      next_ms: number;
      slot_ms: number;
      until_ms: number;
    }[];
  }[];
}

// A missing file fails the suite: the vectors are the oracle.
const vectors = JSON.parse(
  readFileSync(join(root, "conformance", "vectors", "schedules.json"), "utf8"),
) as Vectors;

/** A chain of next slots as the vectors write it: a trailing 0 means ended. */
function chain(s: emq.Schedule, after: number, n: number): number[] {
  const out: number[] = [];
  let at = after;
  for (let i = 0; i < n; i++) {
    const t = s.next(at);
    if (t === null) {
      out.push(0);
      break;
    }
    out.push(t);
    at = t;
  }
  return out;
}

test("the vectors are there and cover every section", () => {
  assert.match(vectors.generated, /schedules\.py/);
  assert.ok(vectors.cron.length > 0, "cron cases");
  assert.ok(vectors.interval.length > 0, "interval cases");
  assert.ok(vectors.invalid_cron.length > 0, "invalid_cron cases");
  assert.ok(vectors.invalid_tz.length > 0, "invalid_tz cases");
  assert.ok(vectors.plans.length > 0, "plans");
});

test("cron: every vector's chain of next slots", () => {
  for (const v of vectors.cron) {
    const c = emq.parseCron(v.expr, v.tz);
    assert.deepEqual(
      chain(c, v.after_ms, v.next_ms.length),
      v.next_ms,
      v.name + ": " + JSON.stringify(v.expr) + " in " + JSON.stringify(v.tz),
    );
    // nextRuns gives the same slots, without the trailing 0.
    assert.deepEqual(
      emq.nextRuns({ cron: v.expr, tz: v.tz }, v.after_ms, v.next_ms.length),
      v.next_ms.filter((t) => t !== 0),
      v.name + " (nextRuns)",
    );
  }
});

test("interval: every vector's chain of next slots", () => {
  for (const v of vectors.interval) {
    const s = new emq.Interval(v.every_ms, v.start_ms);
    assert.deepEqual(chain(s, v.after_ms, v.next_ms.length), v.next_ms, v.name);
  }
});

test("invalid cron expressions are refused with an ArgumentError", () => {
  for (const v of vectors.invalid_cron) {
    assert.throws(
      () => emq.parseCron(v.expr, ""),
      emq.ArgumentError,
      JSON.stringify(v.expr) + " (" + v.why + ")",
    );
    assert.throws(
      () => emq.nextRuns({ cron: v.expr }, 0, 1),
      emq.ArgumentError,
      JSON.stringify(v.expr) + " (nextRuns)",
    );
  }
});

test("invalid time zones are refused with an ArgumentError", () => {
  for (const tz of vectors.invalid_tz) {
    assert.throws(
      () => emq.parseCron("0 * * * *", tz),
      emq.ArgumentError,
      JSON.stringify(tz),
    );
  }
});

test("plans: every vector's entries", () => {
  for (const v of vectors.plans) {
    const r = v.record;
    const got = emq.plan(
      {
        cron: r.cron,
        tz: r.tz,
        everyMs: r.every_ms,
        startMs: r.start_ms,
        missed: r.missed,
        backfill: r.backfill,
        graceMs: r.grace_ms,
        nextMs: r.next_ms,
        paused: r.paused,
      },
      v.now_ms,
      v.horizon_ms,
    );
    assert.deepEqual(
      got.map((e) => ({
        expect_ms: e.expectMs,
        next_ms: e.nextMs,
        slot_ms: e.slotMs,
        until_ms: e.untilMs,
      })),
      v.entries,
      v.name,
    );
  }
});

test("cron: macros, names, 7 as Sunday, the day rule", () => {
  const at = Date.UTC(2027, 0, 1); // a Friday
  const same = (a: string, b: string, tz = "") =>
    assert.deepEqual(
      emq.nextRuns(emq.parseCron(a, tz), at, 20),
      emq.nextRuns(emq.parseCron(b, tz), at, 20),
      a + " = " + b,
    );
  same("@yearly", "0 0 1 1 *");
  same("@ANNUALLY", "0 0 1 1 *");
  same("@Monthly", "0 0 1 * *");
  same("@weekly", "0 0 * * 0");
  same("@daily", "0 0 * * *");
  same("@midnight", "0 0 * * *");
  same("@hourly", "0 * * * *", "Asia/Kolkata");
  same(" \t0  0\t* *  7 ", "0 0 * * 0");
  same("0 0 * jan-Mar mon-FRI", "0 0 * 1-3 1-5");
  same("0 0 * * 5-7", "0 0 * * 0,5,6");
  same("0 0 0 * * *", "0 0 * * *");
  same("*/61 * * * *", "0 * * * *");
  same("007 1 * * *", "7 1 * * *");
  same("10/20 * * * *", "10,30,50 * * * *");
  // Both day fields restricted: either matches (the 13th, or a Friday).
  const either = emq.nextRuns(emq.parseCron("0 0 13 * 5"), at, 8);
  for (const t of either) {
    const d = new Date(t);
    assert.ok(d.getUTCDate() === 13 || d.getUTCDay() === 5, d.toISOString());
  }
  assert.ok(either.some((t) => new Date(t).getUTCDay() !== 5));
  // A star (even stepped) in one: both must match (Fridays only, here).
  for (const t of emq.nextRuns(emq.parseCron("0 0 */1 * 5"), at, 8)) {
    assert.equal(new Date(t).getUTCDay(), 5);
  }
  // Ended and leap days.
  assert.equal(emq.parseCron("0 0 30 2 *").next(at), null);
  assert.equal(emq.parseCron("0 0 29 2 *").next(at), Date.UTC(2028, 1, 29));
});

test("cron across DST: a repeated hour runs once, a skipped one not at all", () => {
  const ny = "America/New_York";
  // 2027-11-07: 01:30 occurs at 05:30Z (EDT) and 06:30Z (EST): once.
  assert.deepEqual(
    emq.nextRuns(emq.parseCron("30 1 * * *", ny), Date.UTC(2027, 10, 6, 12), 2),
    [Date.UTC(2027, 10, 7, 5, 30), Date.UTC(2027, 10, 8, 6, 30)],
  );
  // From inside the repeated hour (01:10 EST, the second time): the rest
  // of the repeated minutes are not slots.
  assert.equal(
    emq.parseCron("* * * * *", ny).next(Date.UTC(2027, 10, 7, 6, 10)),
    Date.UTC(2027, 10, 7, 7, 0),
  );
  // 2027-03-14: 02:30 does not occur.
  assert.deepEqual(
    emq.nextRuns(emq.parseCron("30 2 * * *", ny), Date.UTC(2027, 2, 13, 12), 2),
    [Date.UTC(2027, 2, 15, 6, 30), Date.UTC(2027, 2, 16, 6, 30)],
  );
  // Zone names: case-sensitive; "" and UTC are UTC.
  assert.equal(emq.parseCron("0 0 * * *").tz, "UTC");
  assert.equal(emq.parseCron("0 0 * * *", "UTC").tz, "UTC");
  assert.throws(() => emq.parseCron("0 0 * * *", "utc"), emq.ArgumentError);
  assert.throws(() => emq.parseCron("0 0 * * *", "Local"), emq.ArgumentError);
});

test("cron: the search is field-wise (thousands of next slots in well under a second)", () => {
  const c = emq.parseCron("*/5 9-17 * * 1-5", "Europe/Berlin");
  let at = Date.UTC(2026, 0, 1);
  const t0 = performance.now();
  for (let i = 0; i < 2000; i++) {
    at = c.next(at)!;
  }
  const ended = emq.parseCron("0 0 31 2 *", "America/New_York");
  for (let i = 0; i < 50; i++) {
    assert.equal(ended.next(at + i), null);
  }
  const ms = performance.now() - t0;
  assert.ok(ms < 5000, "2000 slots and 50 8-year searches took " + ms + " ms");
});

test("plan: the cap, backfill's last slots, unknown missed words as run_once", () => {
  const base = {
    cron: "",
    tz: "",
    everyMs: 1000,
    startMs: 0,
    backfill: 0,
    graceMs: 0,
    paused: false,
  };
  // A long way behind, run_once: one run for all missed slots, then the due ones.
  const once = emq.plan(
    { ...base, missed: emq.Missed.runOnce, nextMs: 1000 },
    1_000_000,
    0,
  );
  assert.deepEqual(once[0], {
    expectMs: 1000,
    nextMs: 1_000_000,
    slotMs: 1000,
    untilMs: 1_000_000,
  });
  assert.equal(once.length, 2);
  assert.deepEqual(
    emq.plan({ ...base, missed: "a_later_word", nextMs: 1000 }, 1_000_000, 0),
    once,
  );
  // Backfill 3 of a cron schedule: the last three missed minutes.
  const bf = emq.plan(
    {
      ...base,
      cron: "* * * * *",
      everyMs: 0,
      tz: "Europe/Paris",
      missed: emq.Missed.backfill,
      backfill: 3,
      nextMs: Date.UTC(2027, 0, 1),
    },
    Date.UTC(2027, 0, 2, 0, 0, 30),
    0,
  );
  assert.deepEqual(
    bf.map((e) => e.slotMs),
    [
      Date.UTC(2027, 0, 1, 23, 58),
      Date.UTC(2027, 0, 1, 23, 59),
      Date.UTC(2027, 0, 2, 0, 0),
    ],
  );
  assert.equal(bf[0]!.expectMs, Date.UTC(2027, 0, 1));
  assert.equal(bf[2]!.nextMs, Date.UTC(2027, 0, 2, 0, 1));
  // A huge horizon: at most 100 runs.
  const capped = emq.plan(
    { ...base, missed: emq.Missed.skip, nextMs: 1000, graceMs: 10_000 },
    1000,
    10_000_000,
  );
  assert.equal(capped.length, emq.PLAN_CAP);
  // Paused or ended: nothing.
  assert.deepEqual(
    emq.plan({ ...base, missed: emq.Missed.skip, nextMs: 0 }, 5000, 0),
    [],
  );
  assert.deepEqual(
    emq.plan(
      { ...base, missed: emq.Missed.skip, nextMs: 1000, paused: true },
      5000,
      0,
    ),
    [],
  );
});
