// echomq 2.4.0 against a real redis-server: job options on push (add_many,
// coalesced by identical options only), the worker keeping the handler's
// result by its retention and reporting progress, per-job attempts and
// backoffs applied by the server, UnrecoverableError, the counters, the
// events listener resuming after its last stream id, and how soon an idle
// worker starts a delayed job.

import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import * as emq from "../src/index.js";
import * as wire from "../src/gen/index.js";
import { RedisServer } from "./redis.js";

let srv: RedisServer;
let c: emq.Client;
let tally: emq.Tally;

const silent: emq.Logger = { debug() {}, info() {}, warn() {}, error() {} };

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
  c = await emq.connect({ url: srv.url, metrics: tally, logger: silent });
});

async function until(
  what: string,
  cond: () => Promise<boolean> | boolean,
  ms = 15000,
) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) {
      return;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail("timed out waiting for " + what);
}

/** The server's clock in ms. */
async function serverNow(): Promise<number> {
  const [s, us] = (await srv.cmd("TIME")) as unknown as [string, string];
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** Runs a worker until stop() is called; stop resolves once it returned. */
function start(
  q: emq.Queue,
  h: emq.ResultHandler,
  opts: emq.WorkerOptions = {},
): { stop: () => Promise<void> } {
  const w = new emq.Worker(q, h, { logger: silent, ...opts });
  const running = w.run();
  return {
    stop: async () => {
      w.stop();
      await running;
    },
  };
}

/** The script sha1s of every EVALSHA the client sends from now on, in order, one list per round trip. */
function recordScripts(client: emq.Client): {
  trips: string[][];
  stop: () => void;
} {
  const a = client.adapter;
  const send = a.send.bind(a);
  const sendMany = a.sendMany.bind(a);
  const trips: string[][] = [];
  const shas = (cmds: readonly (readonly emq.RedisArg[])[]) =>
    cmds.filter((w) => String(w[0]) === "EVALSHA").map((w) => String(w[1]));
  let inMany = false;
  a.send = (args) => {
    if (!inMany) {
      trips.push(shas([args]));
    }
    return send(args);
  };
  a.sendMany = (cmds) => {
    trips.push(shas(cmds));
    inMany = true;
    try {
      return sendMany(cmds);
    } finally {
      inMany = false;
    }
  };
  return {
    trips,
    stop: () => {
      a.send = send;
      a.sendMany = sendMany;
    },
  };
}

test("push without job options sends push_many as in 2.3 (a job alone: push, as Go and Python send it); with options add_many, coalescing identical options only", async () => {
  const q = c.queue("producer");
  const [a, a2, b, d, e] = [c.mint(), c.mint(), c.mint(), c.mint(), c.mint()];
  const rec = recordScripts(c);
  const got = await Promise.all([
    q.push(a, "plain"),
    q.push(a2, "plain too"),
    q.push(b, "three", { attempts: 3 }),
    q.push(d, "three again", { attempts: 3 }),
    q.push(e, "four", { attempts: 4, backoff: 250 }),
  ]);
  rec.stop();
  assert.deepEqual(got, [true, true, true, true, true]);
  const calls = rec.trips.flat();
  const push = wire.SCRIPT_PUSH.sha1;
  const pushMany = wire.SCRIPT_PUSH_MANY.sha1;
  const addMany = wire.SCRIPT_ADD_MANY.sha1;
  assert.equal(calls.filter((s) => s === pushMany).length, 1);
  assert.equal(calls.filter((s) => s === push).length, 0);
  assert.equal(calls.filter((s) => s === addMany).length, 2);
  // A plain job pushed alone goes out as one push call, not push_many.
  const alone = c.mint();
  const rec1 = recordScripts(c);
  assert.equal(await q.push(alone, "alone"), true);
  rec1.stop();
  assert.deepEqual(rec1.trips.flat(), [push]);
  // One policy each for the optioned jobs, none for the plain one.
  const opts = (await srv.cmd("HKEYS", q.keys.options)) as unknown as string[];
  assert.deepEqual([...opts].sort(), [b, d, e].sort());
  assert.equal(Number(await srv.cmd("ZCARD", q.keys.pending)), 6);

  // A delay schedules the job at the server's now plus the delay.
  const later = c.mint();
  const t0 = await serverNow();
  assert.equal(await q.push(later, "later", { delay: 60000 }), true);
  const info = await q.get(later);
  assert.equal(info?.state, emq.STATE_SCHEDULED);
  assert.ok(info!.atMs! >= t0 + 60000 && info!.atMs! < t0 + 65000);

  // addMany answers each job's run-at; bad options throw before sending.
  const [x, y] = [c.mint(), c.mint()];
  const res = await q.addMany(
    [
      { id: x, payload: "x" },
      { id: y, payload: "y" },
    ],
    { delay: 5000, backoff: { type: emq.Backoff.exponential, delay: 100 } },
  );
  assert.equal(res.length, 2);
  assert.ok(res.every((r) => r.enqueued && r.runAtMs >= t0 + 5000));
  await assert.rejects(q.push(c.mint(), "bad", { attempts: -1 }), {
    name: "ArgumentError",
  });
  await assert.rejects(
    q.addMany([{ id: c.mint(), payload: "bad" }], {
      backoff: { type: "linear" as emq.BackoffOptions["type"], delay: 1 },
    }),
    { name: "ArgumentError" },
  );
});

test("a worker keeps the handler's result by keepResults; lookup and output read it once the row is gone, the oldest dropped past the count", async () => {
  const q = c.queue("results");
  const [a, b, d] = [c.mint(), c.mint(), c.mint()];
  for (const id of [a, b, d]) {
    await q.push(id, id);
  }
  const results: Record<string, unknown> = {
    [a]: "text a",
    [b]: { n: 2 },
    [d]: Buffer.from([0, 1, 2]),
  };
  const w = start(q, async (job) => results[job.id], {
    concurrency: 1,
    keepResults: { count: 2 },
  });
  await until("three completed", () => tally.get("completed") === 3);
  await w.stop();
  // a was the oldest of three kept at most two.
  assert.equal((await q.output(a)).completed, null);
  const ob = await q.output(b);
  assert.equal(ob.completed?.result.toString(), JSON.stringify({ n: 2 }));
  assert.equal(ob.completed?.attempt, 1);
  const l = await q.lookup(d);
  assert.equal(l.found, false);
  assert.ok(!l.found && l.completed !== null);
  if (!l.found && l.completed !== null) {
    assert.deepEqual(l.completed.result, Buffer.from([0, 1, 2]));
    assert.ok(l.completed.atMs > 0);
  }
  assert.equal(await q.get(d), null);
  const counts = await q.counters(2);
  assert.equal(counts.totals.completed, 3);
  assert.equal(counts.minutes.length, 2);

  // The default keeps nothing.
  const e = c.mint();
  await q.push(e, "e");
  const w2 = start(q, async () => "dropped", { concurrency: 1 });
  await until("e completed", () => tally.get("completed") === 4);
  await w2.stop();
  assert.equal((await q.output(e)).completed, null);
});

test("job.updateProgress reports while the handler runs; after the lease it rejects with StaleError", async () => {
  const q = c.queue("progress");
  const id = c.mint();
  await q.push(id, "long");
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let reported!: () => void;
  const wasReported = new Promise<void>((r) => (reported = r));
  let held: emq.ActiveJob | undefined;
  const w = start(
    q,
    async (job) => {
      held = job;
      await job.updateProgress({ pct: 50 });
      reported();
      await released;
    },
    { concurrency: 1 },
  );
  await wasReported;
  const info = await q.get(id);
  assert.equal(info?.state, emq.STATE_ACTIVE);
  assert.equal(info?.progress.toString(), JSON.stringify({ pct: 50 }));
  release();
  await until("completed", () => tally.get("completed") === 1);
  await w.stop();
  await assert.rejects(held!.updateProgress(100), emq.StaleError);
  const evs = await q.readEvents("", 10);
  assert.deepEqual(
    evs.map((e) => e.event),
    [emq.Event.progress, emq.Event.completed],
  );
});

test("a job's own attempts are honoured over the worker's; UnrecoverableError buries at once; exponential backoffs double to their bound", async () => {
  const q = c.queue("policy");
  const [own, final] = [c.mint(), c.mint()];
  await q.push(own, "two tries", { attempts: 2 });
  await q.push(final, "hopeless");
  const w = start(
    q,
    async (job) => {
      if (job.id === final) {
        throw new emq.UnrecoverableError("no way");
      }
      throw new Error("fails");
    },
    { concurrency: 2, maxAttempts: 25, backoff: () => 0 },
  );
  await until(
    "both dead",
    async () => Number(await srv.cmd("ZCARD", q.keys.dead)) === 2,
  );
  await w.stop();
  assert.equal((await q.get(own))?.attempts, 2);
  assert.equal((await q.get(final))?.attempts, 1);
  const fin = await q.failures(final);
  assert.equal(fin.length, 1);
  assert.match(fin[0]!.message, /no way/);

  // The producer's exponential backoff: 1 s, 2 s, 4 s, then its 4 s bound
  // (the worker's fixed backoff does not apply; no jitter is drawn here).
  const exp = c.mint();
  await q.push(exp, "exp", {
    backoff: { type: emq.Backoff.exponential, delay: 1000, max: 4000 },
  });
  const want = [1000, 2000, 4000, 4000];
  for (let i = 0; i < want.length; i++) {
    // Make it due now, then claim it.
    await srv.cmd("ZREM", q.keys.schedule, exp);
    if (i > 0) {
      await srv.cmd("ZADD", q.keys.schedule, "0", exp);
      assert.equal(await q.promoteIds([exp]), 1);
    }
    const [j] = await q.claimIds(30000, [exp]);
    assert.equal(j?.token, i + 1);
    const t0 = await serverNow();
    const r = await q.fail(
      exp,
      j!.token,
      { class: emq.FailureClass.error, message: "again" },
      { backoff: { type: emq.Backoff.fixed, delay: 10 } },
    );
    const t1 = await serverNow();
    assert.equal(r.outcome, emq.Event.retried);
    assert.ok(
      r.runAtMs >= t0 + want[i]! && r.runAtMs <= t1 + want[i]!,
      "attempt " + (i + 1) + ": run-at " + (r.runAtMs - t0) + " ms after",
    );
  }

  // The worker's exponential backoff, with its jitter: within [d/2, d].
  const wexp = c.mint();
  await q.push(wexp, "worker exp");
  let failedAt = 0;
  const w2 = start(
    q,
    async () => {
      failedAt = await serverNow();
      throw new Error("once");
    },
    {
      concurrency: 1,
      backoffPolicy: { type: emq.Backoff.exponential, delay: 60000 },
    },
  );
  await until(
    "scheduled",
    async () => (await q.get(wexp))?.state === emq.STATE_SCHEDULED,
  );
  await w2.stop();
  const at = (await q.get(wexp))!.atMs!;
  assert.ok(
    at >= failedAt + 30000 - 1000 && at <= failedAt + 60000 + 5000,
    "run-at " + (at - failedAt) + " ms after the failure",
  );
});

test("the events listener yields events as they happen, resumes after the last stream id it handled, and ends when its signal aborts", async () => {
  const q = c.queue("events");
  const seen: emq.QueueEvent[] = [];
  const ac = new AbortController();
  const listening = (async () => {
    for await (const ev of q.events({ signal: ac.signal, blockMs: 200 })) {
      seen.push(ev);
    }
  })();
  const a = c.mint();
  await q.push(a, "a");
  const [ja] = await q.claimIds(30000, [a]);
  await q.updateProgress(a, ja!.token, "half");
  await q.completeResultClaimIds(a, ja!.token, 30000, [], {
    result: "done",
  });
  await until("two events", () => seen.length === 2);
  ac.abort();
  await listening;
  assert.deepEqual(
    seen.map((e) => [e.event, e.id]),
    [
      [emq.Event.progress, a],
      [emq.Event.completed, a],
    ],
  );
  assert.equal(seen[0]!.progress.toString(), "half");

  // More happens while nobody listens; a listener resumes after the last.
  const b = c.mint();
  await q.push(b, "b");
  const [jb] = await q.claimIds(30000, [b]);
  await q.fail(
    b,
    jb!.token,
    { class: emq.FailureClass.error, message: "boom" },
    { maxAttempts: 1 },
  );
  const ac2 = new AbortController();
  const resumed: emq.QueueEvent[] = [];
  for await (const ev of q.events({
    after: seen[1]!.streamId,
    signal: ac2.signal,
  })) {
    resumed.push(ev);
    if (resumed.length === 2) {
      ac2.abort();
    }
  }
  assert.deepEqual(
    resumed.map((e) => [e.event, e.id]),
    [
      [emq.Event.failed, b],
      [emq.Event.dead, b],
    ],
  );
  assert.equal(resumed[0]!.error.toString(), "boom");
  await assert.rejects(q.readEvents("nope", 10), { name: "ArgumentError" });
});

test("an idle worker starts a delayed job within milliseconds of its run-at (no maintenance)", async () => {
  const q = c.queue("delayed");
  const started = new Map<string, number>();
  const w = start(
    q,
    async (job) => {
      started.set(job.id, Date.now());
    },
    { concurrency: 1, maintenanceMs: -1 },
  );
  const lat: number[] = [];
  try {
    for (let i = 0; i < 5; i++) {
      const id = c.mint();
      const res = await q.addMany([{ id, payload: "d" }], { delay: 200 });
      const runAt = res[0]!.runAtMs;
      await until("job " + i + " started", () => started.has(id));
      lat.push(started.get(id)! - runAt);
    }
  } finally {
    await w.stop();
  }
  const sorted = [...lat].sort((x, y) => x - y);
  console.error(
    "delayed start latency (ms after run-at): " +
      lat.join(", ") +
      "; median " +
      sorted[Math.floor(sorted.length / 2)],
  );
  // Generous: a loaded machine may be slow; the maintenance (off) would be 1 s.
  assert.ok(
    sorted[Math.floor(sorted.length / 2)]! < 500,
    "latencies " + lat.join(", "),
  );
});

test("maintenance sweeps the policies and progress a 2.3 completion left behind; eventsMaxLen 0 writes no event", async () => {
  const q = c.queue("sweep");
  const [old, live] = [c.mint(), c.mint()];
  await q.addMany(
    [
      { id: old, payload: "old" },
      { id: live, payload: "live" },
    ],
    { attempts: 4 },
  );
  const [j] = await q.claimIds(30000, [old]);
  await q.updateProgress(old, j!.token, "half", { eventsMaxLen: 0 });
  // A 2.3 worker's completion: the row goes, the policy and progress stay.
  await q.completeClaimIds(old, j!.token, 30000, []);
  assert.equal(Number(await srv.cmd("HEXISTS", q.keys.options, old)), 1);
  assert.equal(Number(await srv.cmd("HEXISTS", q.keys.progress, old)), 1);
  const w = start(q, async () => "x", {
    concurrency: 1,
    maintenanceMs: 50,
    eventsMaxLen: 0,
  });
  await until(
    "swept",
    async () =>
      Number(await srv.cmd("EXISTS", q.keys.options, q.keys.progress)) === 0 &&
      tally.get("completed") === 1,
  );
  await w.stop();
  assert.equal(Number(await srv.cmd("EXISTS", q.keys.events)), 0);
  assert.equal((await q.counters(0)).totals.completed, 1);
});

test("Queue.listen emits each event under its word and under event, and close() stops it", async () => {
  const q = c.queue("emitter");
  const l = q.listen({ blockMs: 200 });
  const words: string[] = [];
  const completed: emq.QueueEvent[] = [];
  l.on("event", (ev: emq.QueueEvent) => words.push(ev.event));
  l.on(emq.Event.completed, (ev: emq.QueueEvent) => completed.push(ev));
  const id = c.mint();
  await q.push(id, "x");
  const [j] = await q.claimIds(30000, [id]);
  await q.updateProgress(id, j!.token, 7);
  await q.completeResultClaimIds(id, j!.token, 30000, []);
  await until("two events", () => words.length === 2);
  await l.close();
  assert.deepEqual(words, [emq.Event.progress, emq.Event.completed]);
  assert.equal(completed.length, 1);
  assert.equal(completed[0]!.id, id);
  assert.equal(l.lastStreamId, completed[0]!.streamId);
});

test("pushes of many distinct delays are admitted, and the client keeps few coalescers", async () => {
  const q = c.queue("delays");
  for (let round = 0; round < 3; round++) {
    const ids = Array.from({ length: 50 }, () => c.mint());
    const got = await Promise.all(
      ids.map((id, i) => q.push(id, "d", { delay: 60000 + round * 1000 + i })),
    );
    assert.ok(got.every((b) => b));
  }
  assert.equal(Number(await srv.cmd("ZCARD", q.keys.schedule)), 150);
  assert.ok(c.pushers.size <= 101, "pushers: " + c.pushers.size);
});

test("a worker and an events listener of one client wait on connections of their own", async () => {
  const q = c.queue("waits");
  const ac = new AbortController();
  const seen: emq.QueueEvent[] = [];
  const listening = (async () => {
    for await (const ev of q.events({ signal: ac.signal, blockMs: 5000 })) {
      seen.push(ev);
    }
  })();
  const w = start(q, async () => "r", { concurrency: 1, waitMs: 5000 });
  const blocked = async () =>
    /blocked_clients:2\r?\n/.test(String(await srv.cmd("INFO", "clients")));
  try {
    // Both block at once: neither queues behind the other's wait.
    await until("two blocked clients", blocked);
    const id = c.mint();
    await q.push(id, "x");
    await until("the completed event", () =>
      seen.some((e) => e.event === emq.Event.completed && e.id === id),
    );
  } finally {
    ac.abort();
    await listening;
    await w.stop();
  }
});

test("an idle worker does not spin on a due schedule member it cannot promote", async () => {
  const q = c.queue("stuck");
  await srv.cmd("ZADD", q.keys.schedule, "0", "not-an-id");
  const times = async () => {
    const m = /cmdstat_time:calls=(\d+)/.exec(
      String(await srv.cmd("INFO", "commandstats")),
    );
    return Number(m?.[1] ?? 0);
  };
  const w = start(q, async () => {}, {
    concurrency: 1,
    waitMs: 200,
    maintenanceMs: -1,
  });
  try {
    const t0 = await times();
    await new Promise((r) => setTimeout(r, 1000)); // let a spin show
    const n = (await times()) - t0;
    // About one head read per 200 ms wait (and the promote's own); a spin
    // would read it thousands of times.
    assert.ok(n < 40, n + " TIME calls in a second");
  } finally {
    await w.stop();
  }
});
