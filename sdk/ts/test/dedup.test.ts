// echomq 2.5.0 against a real redis-server: deduplication by a caller's key
// (until_done released by every settle, hold bits, a sub-second throttle,
// debounce, keep_last parked behind an active job and released by the
// worker's sweep, a race of pushes of one key, batches) and cancellation
// (pending, scheduled, by key, and a running job cancelled from another
// client, its handler's signal aborted).

import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import * as emq from "../src/index.js";
import { RedisServer } from "./redis.js";

let srv: RedisServer;
let c: emq.Client;
let tally: emq.Tally;

/** What the worker logged at warn and error: a cancellation must log neither. */
let alarms: string[] = [];
const logger: emq.Logger = {
  debug() {},
  info() {},
  warn(msg, fields) {
    alarms.push("warn " + msg + " " + String(fields?.["err"] ?? ""));
  },
  error(msg, fields) {
    alarms.push("error " + msg + " " + String(fields?.["err"] ?? ""));
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
  tally = new emq.Tally();
  alarms = [];
  c = await emq.connect({ url: srv.url, metrics: tally, logger });
});

async function until(
  what: string,
  cond: () => Promise<boolean> | boolean,
  ms = 10000,
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

/** A promise and its resolver. */
function gate<T = void>(): { p: Promise<T>; open: (v: T) => void } {
  let open!: (v: T) => void;
  const p = new Promise<T>((r) => (open = r));
  return { p, open };
}

const untilDone = (key: string, more: Partial<emq.DedupOptions> = {}) => ({
  dedup: { key, mode: emq.Dedup.untilDone, ...more },
});

async function claimOne(q: emq.Queue, id: string): Promise<emq.Job> {
  const [j] = await q.claimIds(30000, [id]);
  assert.ok(j, "claimed " + id);
  return j;
}

test("until_done: held while the holder waits or runs, released by its completion", async () => {
  const q = c.queue("dd");
  const [a, b, x] = [c.mint(), c.mint(), c.mint()];
  assert.deepEqual(await q.push(a, "one", untilDone("k")), {
    outcome: emq.Admission.admitted,
    id: a,
    runAtMs: 0,
  });
  const dup = await q.push(b, "two", untilDone("k"));
  assert.equal(dup.outcome, emq.Admission.duplicate);
  assert.equal(dup.id, a);
  assert.equal(await q.get(b), null);
  const j = await claimOne(q, a);
  assert.equal((await q.push(b, "two", untilDone("k"))).id, a);
  const [e] = await q.dedupEntries(["k"]);
  assert.deepEqual(e, {
    holder: a,
    mode: emq.Dedup.untilDone,
    expiresMs: 0,
    held: true,
    state: emq.STATE_ACTIVE,
    parked: "",
  });
  await q.complete(a, j.token);
  const r = await q.push(x, "three", untilDone("k"));
  assert.equal(r.outcome, emq.Admission.admitted);
  assert.equal(r.id, x);
  assert.equal(tally.get("enqueued"), 2);
});

test("until_done: released by a bury (held with holdDead until the purge), a cancel and a reap to dead", async () => {
  const q = c.queue("dd");
  // bury
  const a = c.mint();
  await q.push(a, "p", untilDone("bury"));
  await q.bury(a, (await claimOne(q, a)).token);
  const b = c.mint();
  assert.equal(
    (await q.push(b, "p", untilDone("bury"))).outcome,
    emq.Admission.admitted,
  );
  // bury with holdDead, then purge
  const h = c.mint();
  await q.push(h, "p", untilDone("held", { holdDead: true }));
  await q.bury(h, (await claimOne(q, h)).token);
  const h2 = c.mint();
  const held = await q.push(h2, "p", untilDone("held", { holdDead: true }));
  assert.deepEqual([held.outcome, held.id], [emq.Admission.duplicate, h]);
  assert.equal(await q.purge(h), true);
  assert.equal(
    (await q.push(h2, "p", untilDone("held", { holdDead: true }))).outcome,
    emq.Admission.admitted,
  );
  // cancel
  const k = c.mint();
  await q.push(k, "p", untilDone("cancel"));
  assert.deepEqual(await q.cancelIds([k]), [
    { cancelled: true, state: emq.STATE_PENDING },
  ]);
  assert.equal(
    (await q.push(c.mint(), "p", untilDone("cancel"))).outcome,
    emq.Admission.admitted,
  );
  // reap: back to pending keeps it held, to dead releases it
  const g = c.mint();
  await q.push(g, "p", untilDone("reap"));
  for (let attempt = 1; attempt <= 2; attempt++) {
    const [j] = await q.claimIds(1, [g]);
    assert.equal(j?.token, attempt);
    await until("the lease expired", async () => {
      return (await q.reapRecordedIds([g], 2)) === 1;
    });
    if (attempt === 1) {
      const r = await q.push(c.mint(), "p", untilDone("reap"));
      assert.deepEqual([r.outcome, r.id], [emq.Admission.duplicate, g]);
    }
  }
  assert.equal((await q.get(g))?.state, emq.STATE_DEAD);
  assert.equal(
    (await q.push(c.mint(), "p", untilDone("reap"))).outcome,
    emq.Admission.admitted,
  );
});

test("a kept completion record holds the key only with holdResult", async () => {
  const q = c.queue("dd");
  for (const holdResult of [false, true]) {
    const key = "kept-" + holdResult;
    const a = c.mint();
    await q.push(a, "p", untilDone(key, { holdResult }));
    const j = await claimOne(q, a);
    await q.completeResultClaimIds(a, j.token, 30000, [], {
      result: "done",
      keep: { count: 10 },
    });
    const r = await q.push(c.mint(), "p", untilDone(key, { holdResult }));
    if (holdResult) {
      assert.deepEqual([r.outcome, r.id], [emq.Admission.duplicate, a]);
    } else {
      assert.equal(r.outcome, emq.Admission.admitted);
    }
  }
});

test("throttle: a 200 ms key is held whatever the holder's fate, then taken again", async () => {
  const q = c.queue("dd");
  const opts = {
    dedup: { key: "burst", mode: emq.Dedup.throttle, ttlMs: 200 },
  };
  const t0 = Date.now();
  const a = c.mint();
  assert.equal((await q.push(a, "p", opts)).outcome, emq.Admission.admitted);
  const j = await claimOne(q, a);
  await q.complete(a, j.token);
  assert.equal((await q.push(c.mint(), "p", opts)).id, a);
  const [e] = await q.dedupEntries(["burst"]);
  assert.equal(e?.held, true);
  assert.ok(e!.expiresMs > 0);
  let admitted: emq.DedupResult | undefined;
  await until("the throttle expired", async () => {
    const r = await q.push(c.mint(), "p", opts);
    if (r.outcome === emq.Admission.admitted) {
      admitted = r;
      return true;
    }
    assert.equal(r.id, a);
    return false;
  });
  const waited = Date.now() - t0;
  assert.ok(waited >= 150, "held for " + waited + " ms");
  assert.notEqual(admitted?.id, a);
});

test("debounce: a push while the holder waits replaces its payload and moves its run-at; an active holder is never touched", async () => {
  const q = c.queue("dd");
  const deb = (delay: number) => ({
    dedup: { key: "search", mode: emq.Dedup.debounce },
    delay,
  });
  const a = c.mint();
  const first = await q.push(a, "one", deb(60000));
  assert.equal(first.outcome, emq.Admission.admitted);
  const second = await q.push(c.mint(), "two", deb(120000));
  assert.deepEqual([second.outcome, second.id], [emq.Admission.replaced, a]);
  assert.ok(second.runAtMs > first.runAtMs + 30000);
  let info = await q.get(a);
  assert.equal(info?.state, emq.STATE_SCHEDULED);
  assert.equal(info?.payload.toString(), "two");
  assert.equal(info?.atMs, second.runAtMs);
  const third = await q.push(c.mint(), "three", deb(0));
  assert.deepEqual(
    [third.outcome, third.id, third.runAtMs],
    [emq.Admission.replaced, a, 0],
  );
  assert.equal((await q.get(a))?.state, emq.STATE_PENDING);
  const j = await claimOne(q, a);
  assert.equal(j.payload.toString(), "three");
  const d = c.mint();
  const fourth = await q.push(d, "four", deb(0));
  assert.deepEqual([fourth.outcome, fourth.id], [emq.Admission.admitted, d]);
  info = await q.get(a);
  assert.equal(info?.state, emq.STATE_ACTIVE);
  assert.equal(info?.payload.toString(), "three");
  // A batch meets the waiting holder d: deferred by add_dedup, replaced
  // through replace_dedup by pushBatch itself.
  const e = c.mint();
  const res = await q.pushBatch(
    [{ id: e, payload: "five", dedupKey: "search" }],
    {
      dedup: { mode: emq.Dedup.debounce },
    },
  );
  assert.deepEqual(res, [
    { outcome: emq.Admission.replaced, id: d, runAtMs: 0, enqueued: false },
  ]);
  assert.equal((await q.get(d))?.payload.toString(), "five");
  assert.equal(await q.get(e), null);
  // The one-call form answers deferred instead.
  const [raw] = await q.addDedup(
    [{ id: e, payload: "six", dedupKey: "search" }],
    {
      dedup: { mode: emq.Dedup.debounce },
    },
  );
  assert.deepEqual([raw?.outcome, raw?.id], [emq.Admission.deferred, d]);
});

test("keep_last: a push while the holder runs is parked, and runs after the holder completes (the worker's sweep)", async () => {
  const q = c.queue("dd");
  const kl = { dedup: { key: "sync", mode: emq.Dedup.keepLast } };
  const a = c.mint();
  await q.push(a, "one", kl);
  const started = gate<string>();
  const release = gate();
  const ran: string[] = [];
  const w = new emq.Worker(
    q,
    async (job) => {
      ran.push(job.payload.toString());
      if (job.id === a) {
        started.open(job.id);
        await release.p;
      }
    },
    { concurrency: 2, maintenanceMs: 50, waitMs: 200 },
  );
  const running = w.run();
  assert.equal(await started.p, a);
  const b = c.mint();
  const parked = await q.push(b, "two", kl);
  assert.deepEqual([parked.outcome, parked.id], [emq.Admission.parked, b]);
  const again = await q.push(c.mint(), "three", kl);
  assert.deepEqual([again.outcome, again.id], [emq.Admission.replaced, b]);
  const [e] = await q.dedupEntries(["sync"]);
  assert.deepEqual([e?.holder, e?.parked, e?.state], [a, b, emq.STATE_ACTIVE]);
  // Parked: nothing claims it while the holder runs.
  assert.equal((await q.get(b))?.state, emq.STATE_SCHEDULED);
  release.open();
  await until("the parked job ran", () => ran.length === 2);
  assert.deepEqual(ran, ["one", "three"]);
  w.stop();
  await running;
  assert.deepEqual(await q.sizes(), {
    pending: 0,
    active: 0,
    schedule: 0,
    dead: 0,
  });
  assert.deepEqual(alarms, []);
});

test("concurrent pushes of one key from several clients admit exactly one job", async () => {
  const others = await Promise.all(
    [1, 2, 3].map(() => emq.connect({ url: srv.url, logger })),
  );
  try {
    const clients = [c, ...others];
    const ids: string[] = [];
    const pushes: Promise<emq.DedupResult>[] = [];
    for (let i = 0; i < 40; i++) {
      const cl = clients[i % clients.length]!;
      const id = cl.mint();
      ids.push(id);
      pushes.push(cl.queue("race").push(id, "p" + i, untilDone("one")));
    }
    const res = await Promise.all(pushes);
    const admitted = res.filter((r) => r.outcome === emq.Admission.admitted);
    assert.equal(admitted.length, 1);
    const holder = admitted[0]!.id;
    assert.ok(res.every((r) => r.id === holder));
    assert.equal((await c.queue("race").sizes()).pending, 1);
  } finally {
    await Promise.all(others.map((o) => o.close()));
  }
});

test("a batch with keys: one call admits, a later job of a taken key is a duplicate, jobs without keys are admitted", async () => {
  const q = c.queue("dd");
  const [a, b, x] = [c.mint(), c.mint(), c.mint()];
  const res = await q.pushBatch(
    [
      { id: a, payload: "one", dedupKey: "k" },
      { id: b, payload: "two", dedupKey: "k" },
      { id: x, payload: "three" },
    ],
    { dedup: { mode: emq.Dedup.untilDone } },
  );
  assert.deepEqual(res, [
    { outcome: emq.Admission.admitted, id: a, runAtMs: 0, enqueued: true },
    { outcome: emq.Admission.duplicate, id: a, runAtMs: 0, enqueued: false },
    { outcome: emq.Admission.admitted, id: x, runAtMs: 0, enqueued: true },
  ]);
  assert.equal(tally.get("enqueued"), 2);
  await assert.rejects(
    q.pushBatch([{ id: c.mint(), payload: "p", dedupKey: "k" }]),
    emq.ArgumentError,
  );
});

test("bad deduplication options throw before anything is sent", async () => {
  const q = c.queue("dd");
  const before = await srv.commandsProcessed();
  const id = c.mint();
  const bad: emq.DedupOptions[] = [
    { key: "k", mode: "forever" as emq.Dedup },
    { key: "k", mode: emq.Dedup.throttle },
    { key: "k", mode: emq.Dedup.untilDone, ttlMs: -1 },
    { key: "", mode: emq.Dedup.untilDone },
  ];
  for (const dedup of bad) {
    await assert.rejects(q.push(id, "p", { dedup }), emq.ArgumentError);
  }
  await assert.rejects(
    q.replaceDedup(id, "p", "", id, { dedup: { mode: emq.Dedup.debounce } }),
    emq.ArgumentError,
  );
  await assert.rejects(q.sweepDedup("0", 0), emq.ArgumentError);
  await assert.rejects(q.sweepDedup("0", 1001), emq.ArgumentError);
  assert.equal(await srv.commandsProcessed(), before + 1); // the INFO itself
});

test("cancel: pending and scheduled jobs, ids given twice, dead jobs left, and cancel by key", async () => {
  const q = c.queue("dd");
  const [p, s, d] = [c.mint(), c.mint(), c.mint()];
  await q.push(p, "p");
  await q.push(s, "s", { delay: 60000 });
  await q.push(d, "d");
  await q.bury(d, (await claimOne(q, d)).token);
  assert.deepEqual(
    (await q.cancelIds([p, s, d, p])).map((r) => r.state),
    [emq.STATE_PENDING, emq.STATE_SCHEDULED, "", ""],
  );
  assert.equal(await q.get(p), null);
  assert.equal(await q.get(s), null);
  assert.equal((await q.get(d))?.state, emq.STATE_DEAD);
  const evs = await q.readEvents("", 10);
  assert.deepEqual(
    evs.filter((e) => e.event === emq.Event.cancelled).map((e) => e.id),
    [p, s],
  );
  // By key: the active holder and the job parked behind it, holder first.
  const kl = { dedup: { key: "sync", mode: emq.Dedup.keepLast } };
  const a = c.mint();
  await q.push(a, "one", kl);
  await claimOne(q, a);
  const b = c.mint();
  assert.equal((await q.push(b, "two", kl)).outcome, emq.Admission.parked);
  assert.deepEqual(await q.cancelKey("sync"), [
    { id: a, state: emq.STATE_ACTIVE },
    { id: b, state: emq.STATE_SCHEDULED },
  ]);
  assert.deepEqual(await q.cancelKey("sync"), []);
  assert.deepEqual(await q.cancelKey("no-such-key"), []);
  assert.deepEqual(await q.sizes(), {
    pending: 0,
    active: 0,
    schedule: 0,
    dead: 1,
  });
  assert.deepEqual(await q.sweepDedupAll(), { dropped: 1, released: 0 });
});

/** Runs one job under a worker, cancels it from another client, and checks the handler was cancelled (and nothing else). */
async function cancelRunning(
  q: emq.Queue,
  other: emq.Client,
  before?: () => Promise<void>,
): Promise<number> {
  const id = c.mint();
  const started = gate();
  const aborted = gate<unknown>();
  let runs = 0;
  const w = new emq.Worker(
    q,
    async (_job, signal) => {
      runs++;
      signal.addEventListener("abort", () => aborted.open(signal.reason), {
        once: true,
      });
      started.open();
      // Ignores the signal for a while, then gives up as a handler does.
      await aborted.p;
      throw signal.reason;
    },
    { concurrency: 1, leaseMs: 60000, maintenanceMs: 50 },
  );
  const running = w.run();
  try {
    if (before !== undefined) {
      await before();
    }
    await q.push(id, "p");
    await started.p;
    const t0 = performance.now();
    const res = await other.queue(q.name).cancelIds([id]);
    assert.deepEqual(res, [{ cancelled: true, state: emq.STATE_ACTIVE }]);
    const reason = await aborted.p;
    const ms = performance.now() - t0;
    assert.ok(reason instanceof emq.CancelledError, String(reason));
    assert.equal(reason.id, id);
    assert.equal(reason.token, 1);
    await until("the handler returned", () => tally.get("cancelled") === 1);
    // Not retried, no row, nothing left behind.
    await new Promise((r) => setTimeout(r, 150)); // a few maintenance ticks
    assert.equal(runs, 1);
    assert.equal(await q.get(id), null);
    assert.deepEqual(await q.sizes(), {
      pending: 0,
      active: 0,
      schedule: 0,
      dead: 0,
    });
    return ms;
  } finally {
    w.stop();
    await running;
    assert.equal(tally.get("retried"), 0);
    assert.equal(tally.get("buried"), 0);
    assert.equal(tally.get("stale"), 0);
    assert.deepEqual(alarms, []);
  }
}

test("a running job cancelled from another client has its handler's signal aborted at once, is not retried and logs no error", async () => {
  const other = await emq.connect({ url: srv.url, logger });
  try {
    const ms = await cancelRunning(c.queue("cx"), other);
    console.log("cancel to abort latency: " + ms.toFixed(2) + " ms");
    assert.ok(ms < 1000, "aborted after " + ms + " ms");
  } finally {
    await other.close();
  }
});

test("the worker subscribes again after its subscriber connection is killed", async () => {
  const other = await emq.connect({ url: srv.url, logger });
  try {
    const ms = await cancelRunning(c.queue("cx"), other, async () => {
      await until("the worker subscribed", async () => {
        const n = (await srv.cmd(
          "PUBSUB",
          "SHARDNUMSUB",
          c.queue("cx").keys.cancel,
        )) as unknown[];
        return Number(n[1]) === 1;
      });
      const killed = await srv.cmd("CLIENT", "KILL", "TYPE", "pubsub");
      assert.equal(killed, 1);
      await until("the worker subscribed again", async () => {
        const n = (await srv.cmd(
          "PUBSUB",
          "SHARDNUMSUB",
          c.queue("cx").keys.cancel,
        )) as unknown[];
        return Number(n[1]) === 1;
      });
    });
    console.log(
      "cancel to abort latency after a resubscribe: " + ms.toFixed(2) + " ms",
    );
  } finally {
    await other.close();
  }
});

test("a stopped worker unsubscribes", async () => {
  const q = c.queue("cx");
  const w = new emq.Worker(q, async () => {}, { maintenanceMs: 50 });
  const running = w.run();
  const subs = async () =>
    Number(
      ((await srv.cmd("PUBSUB", "SHARDNUMSUB", q.keys.cancel)) as unknown[])[1],
    );
  await until("subscribed", async () => (await subs()) === 1);
  w.stop();
  await running;
  await until("unsubscribed", async () => (await subs()) === 0);
});

test("a typed queue pushes with deduplication too", async () => {
  const q = c.queue("typed", { codec: emq.json<{ n: number }>() });
  const a = c.mint();
  const r = await q.push(a, { n: 1 }, untilDone("t"));
  assert.deepEqual([r.outcome, r.id], [emq.Admission.admitted, a]);
  const res = await q.pushBatch(
    [{ id: c.mint(), data: { n: 2 }, dedupKey: "t" }],
    {
      dedup: { mode: emq.Dedup.untilDone },
    },
  );
  assert.deepEqual(
    res.map((x) => [x.error, x.enqueued, x.error ? "" : x.id]),
    [[undefined, false, a]],
  );
});
