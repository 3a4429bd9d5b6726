// echomq 2.6.0 against a real redis-server: job schedulers. Upserts that
// create, keep and reset a next slot; intervals anchored in the past (by
// the server's clock, so nothing sleeps) fired under each missed policy;
// cron advance and firing; horizon; pause, resume, remove; the raw
// compare-and-set; template filling; runs worked by a Worker as ordinary
// jobs; runners racing over the same schedulers, each slot fired once;
// the runner's stop, its retries, and its warning about a schedule it
// cannot parse.

import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import * as emq from "../src/index.js";
import * as wire from "../src/gen/index.js";
import { RedisServer } from "./redis.js";

let srv: RedisServer;
let c: emq.Client;
let q: emq.Queue;

let warnings: string[] = [];
const logger: emq.Logger = {
  debug() {},
  info() {},
  warn(msg, fields) {
    warnings.push(msg + " " + JSON.stringify(fields?.["scheduler"] ?? ""));
  },
  error(msg) {
    warnings.push("error " + msg);
  },
};

before(async () => {
  srv = await RedisServer.start();
});

after(async () => {
  await c?.close();
  await srv?.stop();
});

beforeEach(async () => {
  await c?.close();
  await srv.cmd("FLUSHALL");
  warnings = [];
  c = await emq.connect({ url: srv.url, logger });
  q = c.queue("sched");
});

/** The server's clock, in Unix ms. */
async function serverNow(): Promise<number> {
  const [s, us] = (await srv.cmd("TIME")) as [string, string];
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

async function until(
  what: string,
  cond: () => Promise<boolean> | boolean,
  ms = 20000,
) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) {
      return;
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  assert.fail("timed out waiting for " + what);
}

async function record(id: string): Promise<emq.SchedulerRecord> {
  const [r] = await q.schedulers([id]);
  assert.equal(r?.id, id, "scheduler " + id);
  return r;
}

const MIN = 60_000;
const HOUR = 3_600_000;

test("upsert: created, then unchanged (its next kept whatever else changes), then changed", async () => {
  const before = await serverNow();
  const u1 = await q.upsertScheduler("nightly", {
    cron: "0 3 * * *",
    tz: "Europe/Paris",
    template: "nightly {slot}",
  });
  assert.equal(u1.created, true);
  assert.equal(u1.changed, true);
  assert.ok(u1.nextMs >= before && u1.nextMs <= before + 10_000);
  const u2 = await q.upsertScheduler("nightly", {
    cron: "0 3 * * *",
    tz: "Europe/Paris",
    template: "other {slot}",
    missed: emq.Missed.skip,
    graceMs: 5,
    backfill: 9,
  });
  assert.deepEqual(u2, { created: false, changed: false, nextMs: u1.nextMs });
  const r = await record("nightly");
  assert.equal(r.missed, emq.Missed.skip);
  assert.equal(r.graceMs, 5);
  assert.equal(r.backfill, 9);
  assert.equal(r.template.toString(), "other {slot}");
  assert.equal(r.paused, false);
  assert.equal(r.runs, 0);
  const u3 = await q.upsertScheduler("nightly", {
    cron: "0 4 * * *",
    tz: "Europe/Paris",
  });
  assert.equal(u3.created, false);
  assert.equal(u3.changed, true);
  // Defaults, and '' stored as UTC.
  await q.upsertScheduler("daily", { cron: "@daily" });
  const d = await record("daily");
  assert.deepEqual(
    [d.tz, d.missed, d.graceMs, d.backfill, d.template.length],
    ["UTC", emq.Missed.runOnce, emq.DEFAULT_GRACE_MS, 0, 0],
  );
  assert.equal(
    (await q.upsertScheduler("daily", { cron: "@daily", tz: "UTC" })).changed,
    false,
  );
  assert.deepEqual(
    (await q.schedulers(["nosuch", "daily"])).map((r) => r.id),
    ["", "daily"],
  );
});

test("upsert refusals: ArgumentErrors and nothing sent", async () => {
  const bad: [string, emq.SchedulerSpec][] = [
    ["x", { cron: "61 * * * *" }],
    ["x", { cron: "0 0 * * 5#2" }],
    ["x", { cron: "0 3 * * *", tz: "Mars/Olympus" }],
    ["x", { cron: "0 3 * * *", tz: "Local" }],
    ["x", { cron: "0 3 * * *", everyMs: 1000 }],
    ["x", {}],
    ["x", { everyMs: 1000, tz: "UTC" }],
    ["x", { cron: "0 3 * * *", startMs: 1000 }],
    ["x", { everyMs: 1000, missed: "sometimes" as emq.Missed }],
    ["x", { everyMs: 1000, backfill: 101 }],
    ["x", { everyMs: -1000 }],
    ["x", { everyMs: 1.5 }],
    ["x", { everyMs: 1000, graceMs: -1 }],
    ["x", { everyMs: 1000, template: "x".repeat(emq.TEMPLATE_MAX_BYTES + 1) }],
    ["", { everyMs: 1000 }],
    ["é".repeat(129), { everyMs: 1000 }],
  ];
  await c.ensure();
  const before = await srv.commandsProcessed();
  for (const [id, spec] of bad) {
    await assert.rejects(
      q.upsertScheduler(id, spec),
      emq.ArgumentError,
      JSON.stringify([id.slice(0, 8), spec.cron, spec.tz, spec.everyMs]),
    );
  }
  await assert.rejects(q.listSchedulers(0, 0), emq.ArgumentError);
  await assert.rejects(q.listSchedulers(0, 1001), emq.ArgumentError);
  await assert.rejects(q.listSchedulers(-1, 1), emq.ArgumentError);
  await assert.rejects(q.dueSchedulers(-1, 1, 0), emq.ArgumentError);
  await assert.rejects(q.fireDue({ count: 0 }), emq.ArgumentError);
  await assert.rejects(q.runSchedulers({ pollMs: -1 }), emq.ArgumentError);
  await assert.rejects(q.schedulers([""]), emq.ArgumentError);
  await assert.rejects(
    q.fireSchedulers([
      {
        id: "not-an-id",
        scheduler: "x",
        expectMs: 1,
        nextMs: 2,
        slotMs: 1,
        untilMs: 2,
      },
    ]),
    emq.IdError,
  );
  assert.deepEqual(await q.schedulers([]), []);
  assert.equal(await q.pauseSchedulers([]), 0);
  assert.equal(await q.removeSchedulers([]), 0);
  assert.deepEqual(await q.fireSchedulers([]), []);
  assert.equal(await srv.commandsProcessed(), before + 1); // the INFO itself
});

test("an interval fired under each missed policy, from slots the server's clock put in the past", async () => {
  const now = await serverNow();
  // First slot ten minutes and half a second ago; the grace is 30 s, so
  // nine slots are missed and the tenth (half a second ago) is not.
  const start = now - 10 * MIN - 500;
  const spec = { everyMs: MIN, startMs: start, graceMs: 30_000 };
  await q.upsertScheduler("a-once", { ...spec, missed: emq.Missed.runOnce });
  await q.upsertScheduler("b-skip", { ...spec, missed: emq.Missed.skip });
  await q.upsertScheduler("c-back", {
    ...spec,
    missed: emq.Missed.backfill,
    backfill: 3,
    template: "{scheduler}@{slot}..{until}",
  });
  const fired = await q.fireDue();
  const by = (s: string) =>
    fired
      .filter((r) => r.scheduler === s)
      .map((r) => [r.slotMs, r.untilMs])
      .sort((x, y) => x[0]! - y[0]!);
  const slot = (k: number) => start + k * MIN;
  assert.deepEqual(by("a-once"), [
    [slot(0), slot(10)],
    [slot(10), slot(11)],
  ]);
  assert.deepEqual(by("b-skip"), [[slot(10), slot(11)]]);
  assert.deepEqual(by("c-back"), [
    [slot(7), slot(8)],
    [slot(8), slot(9)],
    [slot(9), slot(10)],
    [slot(10), slot(11)],
  ]);
  assert.equal(await q.size(emq.SET_PENDING), 7);
  // The runs are rows of this queue, their payloads the template filled.
  for (const r of fired.filter((r) => r.scheduler === "c-back")) {
    const j = await q.get(r.id);
    assert.equal(j?.state, emq.STATE_PENDING);
    assert.equal(
      j?.payload.toString(),
      "c-back@" + r.slotMs + ".." + r.untilMs,
    );
  }
  const recs = await q.schedulers(["a-once", "b-skip", "c-back"]);
  assert.deepEqual(
    recs.map((r) => [r?.runs, r?.nextMs]),
    [
      [2, slot(11)],
      [1, slot(11)],
      [4, slot(11)],
    ],
  );
  const last = fired.find(
    (r) => r.scheduler === "c-back" && r.slotMs === slot(10),
  );
  assert.equal(recs[2]?.lastId, last?.id);
  assert.equal(recs[2]?.lastSlotMs, slot(10));
  // Nothing more is due.
  assert.deepEqual(await q.fireDue(), []);
});

test("horizon: a slot ahead fires only within it, scheduled at its slot", async () => {
  const now = await serverNow();
  const u = await q.upsertScheduler("soon", {
    everyMs: HOUR,
    startMs: now + 30_000,
  });
  assert.deepEqual(await q.dueSchedulers(0, 10, 0), []);
  assert.deepEqual(await q.fireDue(), []);
  const [due] = await q.dueSchedulers(60_000, 10, 7);
  assert.equal(due?.id, "soon");
  assert.ok(due.nowMs >= now);
  const fired = await q.fireDue({ horizonMs: 60_000 });
  assert.deepEqual(
    fired.map((r) => [r.scheduler, r.slotMs, r.untilMs]),
    [["soon", u.nextMs, u.nextMs + HOUR]],
  );
  const j = await q.get(fired[0]!.id);
  assert.equal(j?.state, emq.STATE_SCHEDULED);
  assert.equal(j?.atMs, u.nextMs);
});

test("cron: a next slot not due advances to the schedule's slot, a due one fires, chained", async () => {
  const u = await q.upsertScheduler("yearly", { cron: "0 0 1 1 *" });
  assert.deepEqual(await q.fireDue(), []);
  const r = await record("yearly");
  assert.equal(r.runs, 0);
  assert.equal(r.nextMs, emq.parseCron("0 0 1 1 *").next(u.nextMs - 1));
  // Every second, two seconds ahead: each slot a run, scheduled or pending.
  await q.upsertScheduler("secs", {
    cron: "* * * * * *",
    template: "{slot}",
  });
  const fired = await q.fireDue({ horizonMs: 2000 });
  assert.ok(fired.length >= 2, JSON.stringify(fired));
  fired.sort((a, b) => a.slotMs - b.slotMs);
  fired.forEach((f, i) => {
    assert.equal(f.scheduler, "secs");
    assert.equal(f.slotMs % 1000, 0);
    assert.equal(f.untilMs, f.slotMs + 1000);
    if (i > 0) {
      assert.equal(f.slotMs, fired[i - 1]!.untilMs);
    }
  });
  const s = await record("secs");
  assert.equal(s.runs, fired.length);
  assert.equal(s.nextMs, fired[fired.length - 1]!.untilMs);
  assert.equal(
    (await q.get(fired[0]!.id))?.payload.toString(),
    String(fired[0]!.slotMs),
  );
});

test("pause, resume (the slots due while paused never run), list, remove", async () => {
  const now = await serverNow();
  const h = await q.upsertScheduler("hourly", {
    everyMs: HOUR,
    startMs: now - 1000,
  });
  await q.upsertScheduler("yearly", { cron: "0 0 1 1 *" });
  assert.equal(await q.pauseSchedulers(["hourly", "nosuch"]), 1);
  assert.equal(await q.pauseSchedulers(["hourly"]), 0);
  const list = await q.listSchedulers(0, 10);
  assert.deepEqual(
    list.map((r) => [r.id, r.paused]),
    [
      ["yearly", false],
      ["hourly", true],
    ],
  );
  assert.equal(list[1]?.nextMs, h.nextMs);
  assert.deepEqual(
    (await q.listSchedulers(1, 1)).map((r) => r.id),
    ["hourly"],
  );
  assert.deepEqual(await q.listSchedulers(2, 1000), []);
  assert.deepEqual(await q.fireDue(), []);
  assert.equal(await q.size(emq.SET_PENDING), 0);
  assert.equal(await q.resumeSchedulers(["hourly"]), 1);
  assert.equal(await q.resumeSchedulers(["hourly"]), 0);
  const resumed = await record("hourly");
  assert.ok(resumed.nextMs > h.nextMs, "the next slot moved to now");
  assert.deepEqual(await q.fireDue(), []);
  assert.equal((await record("hourly")).nextMs, h.nextMs + HOUR);
  assert.equal(await q.removeSchedulers(["hourly", "nosuch"]), 1);
  const [gone] = await q.schedulers(["hourly"]);
  assert.deepEqual(
    [
      gone?.id,
      gone?.cron,
      gone?.everyMs,
      gone?.nextMs,
      gone?.runs,
      gone?.paused,
    ],
    ["", "", 0, 0, 0, false],
  );
  assert.ok(
    (gone?.nowMs ?? 0) >= now,
    "the empty record carries the read's time",
  );
  assert.deepEqual(
    (await q.listSchedulers(0, 10)).map((r) => r.id),
    ["yearly"],
  );
});

test("fireSchedulers: compare-and-set, chains, advance, an existing row, paused and gone, EMQKIND", async () => {
  await q.upsertScheduler("raw", {
    everyMs: 1000,
    startMs: 1,
    template: "{scheduler} {slot} {until} {slot}",
  });
  const e = (id: string, expectMs: number, slotMs: number) => ({
    id,
    scheduler: "raw",
    expectMs,
    nextMs: expectMs + 1000,
    slotMs,
    untilMs: slotMs === 0 ? 0 : slotMs + 1000,
  });
  const [a, b, cc, d] = [c.mint(), c.mint(), c.mint(), c.mint()];
  await assert.rejects(
    q.fireSchedulers([
      e(c.mint(wire.KINDS.find((k) => k !== wire.WORK_KIND)!), 1, 1),
    ]),
    emq.KindError,
  );
  assert.deepEqual(await q.fireSchedulers([e(a, 1, 1)]), [emq.Firing.fired]);
  assert.deepEqual(await q.fireSchedulers([e(b, 1, 1)]), [emq.Firing.stale]);
  assert.equal(await q.get(b), null);
  const [job] = await q.claimIds(30_000, [a]);
  assert.equal(job?.payload.toString(), "raw 1 1001 1");
  // A chain whose third entry is planned from a next already moved: stale.
  assert.deepEqual(
    await q.fireSchedulers([
      e(b, 1001, 1001),
      e(cc, 2001, 2001),
      e(d, 1001, 1001),
    ]),
    [emq.Firing.fired, emq.Firing.fired, emq.Firing.stale],
  );
  // An advance writes no row.
  assert.deepEqual(
    await q.fireSchedulers([{ ...e(d, 3001, 0), nextMs: 9001 }]),
    [emq.Firing.advanced],
  );
  assert.equal(await q.get(d), null);
  assert.equal((await record("raw")).nextMs, 9001);
  // A run whose row exists is stale.
  assert.deepEqual(await q.fireSchedulers([e(a, 9001, 9001)]), [
    emq.Firing.stale,
  ]);
  await q.pauseSchedulers(["raw"]);
  assert.deepEqual(await q.fireSchedulers([e(c.mint(), 9001, 9001)]), [
    emq.Firing.paused,
  ]);
  await q.removeSchedulers(["raw"]);
  assert.deepEqual(await q.fireSchedulers([e(c.mint(), 9001, 9001)]), [
    emq.Firing.gone,
  ]);
});

test("runs are ordinary jobs: a Worker works them, payloads filled in", async () => {
  const now = await serverNow();
  const start = now - 4 * MIN - 200;
  await q.upsertScheduler("every-minute", {
    everyMs: MIN,
    startMs: start,
    graceMs: HOUR,
    template: '{"scheduler":"{scheduler}","slot":{slot},"until":{until}}',
  });
  const fired = await q.fireDue();
  assert.equal(fired.length, 5);
  const seen: { scheduler: string; slot: number; until: number }[] = [];
  const w = new emq.Worker(q, async (job) => {
    seen.push(JSON.parse(job.payload.toString()));
  });
  const running = w.run();
  await until("the runs were worked", () => seen.length === 5);
  w.stop();
  await running;
  seen.sort((a, b) => a.slot - b.slot);
  assert.deepEqual(
    seen,
    [0, 1, 2, 3, 4].map((k) => ({
      scheduler: "every-minute",
      slot: start + k * MIN,
      until: start + (k + 1) * MIN,
    })),
  );
  assert.equal(await q.size(emq.SET_PENDING), 0);
});

test("TypedQueue.upsertScheduler: the value encoded is the template", async () => {
  const tq = c.queue("sched", {
    codec: emq.json<{ report: string; at: string }>(),
  });
  const now = await serverNow();
  await tq.upsertScheduler(
    "reports",
    { report: "daily", at: "{slot}" },
    { everyMs: HOUR, startMs: now - 10 },
  );
  const [run] = await q.fireDue();
  assert.ok(run);
  const j = await tq.get(run.id);
  assert.deepEqual(j?.data, { report: "daily", at: String(run.slotMs) });
});

test("runners racing over the same schedulers fire each slot once", async () => {
  const now = await serverNow();
  const ids = ["r0", "r1", "r2", "r3", "r4", "r5"];
  const start = now - 10 * MIN - 100;
  for (const id of ids) {
    await q.upsertScheduler(id, {
      everyMs: MIN,
      startMs: start,
      graceMs: HOUR,
    });
  }
  const want = ids.length * 11; // slots 0..10 of each, within the grace
  const clients = [c];
  for (let i = 0; i < 3; i++) {
    clients.push(await emq.connect({ url: srv.url, logger }));
  }
  const runs: emq.FiredRun[] = [];
  const ac = new AbortController();
  // Small pages, so that the runners' pages interleave.
  const runners = clients.map((k) =>
    k.queue("sched").runSchedulers({
      signal: ac.signal,
      pollMs: 1,
      count: 2,
      onFired: (rs) => runs.push(...rs),
    }),
  );
  await until("every slot fired", () => runs.length >= want);
  ac.abort();
  await Promise.all(runners);
  for (const k of clients.slice(1)) {
    await k.close();
  }
  assert.equal(runs.length, want, "no slot fired twice");
  const slots = new Set(runs.map((r) => r.scheduler + "@" + r.slotMs));
  assert.equal(slots.size, want);
  for (const id of ids) {
    for (let k = 0; k <= 10; k++) {
      assert.ok(slots.has(id + "@" + (start + k * MIN)), id + " slot " + k);
    }
  }
  assert.equal(new Set(runs.map((r) => r.id)).size, want);
  assert.equal(await q.size(emq.SET_PENDING), want);
  for (const r of await q.schedulers(ids)) {
    assert.equal(r.runs, 11);
  }
});

test("the runner: stops on abort, retries failing ticks, warns once about a schedule it cannot parse", async () => {
  // A record no 2.6 client would write: a cron that does not parse,
  // written by the script itself (its checks are the caller's).
  await c.ensure();
  await wire.runUpsertScheduler(c.runner, {
    schedulers: q.keys.schedulers,
    schedulerNext: q.keys.schedulerNext,
    scheduler: "broken",
    cron: "0 0 L * *",
    everyMs: 0,
    startMs: 0,
    tz: "",
    missed: emq.Missed.runOnce,
    backfill: 0,
    graceMs: 0,
    template: "",
  });
  const now = await serverNow();
  await q.upsertScheduler("ok", { everyMs: HOUR, startMs: now - 5 });
  const ac = new AbortController();
  const fired: emq.FiredRun[] = [];
  const running = q.runSchedulers({
    signal: ac.signal,
    pollMs: 1,
    onFired: (rs) => fired.push(...rs),
  });
  await until("the good scheduler fired", () => fired.length === 1);
  // Another few ticks over the broken one: one warning, no crash.
  const ticks = await srv.commandsProcessed();
  await until(
    "more ticks",
    async () => (await srv.commandsProcessed()) > ticks + 10,
  );
  assert.deepEqual(
    warnings.filter((w) => w.includes("does not parse")),
    ['emq: a scheduler\'s schedule does not parse; it is skipped "broken"'],
  );
  // A tick that fails (a key of another type planted under the due
  // index): logged, retried with a backoff, and resumed once it is gone.
  await srv.cmd("DEL", q.keys.schedulerNext);
  await srv.cmd("SET", q.keys.schedulerNext, "planted");
  await until(
    "a failed tick was logged",
    () => warnings.filter((w) => w.includes("tick failed")).length >= 2,
  );
  await srv.cmd("DEL", q.keys.schedulerNext);
  await q.upsertScheduler("after", { everyMs: HOUR, startMs: 1 });
  await until("a tick after the failures fired", () =>
    fired.some((r) => r.scheduler === "after"),
  );
  ac.abort();
  await running;
  assert.equal(fired.filter((r) => r.scheduler === "ok").length, 1);
});
