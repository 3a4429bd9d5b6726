// The worker against a real redis-server: completion, retries with
// backoff, burial on exhaustion and on a permanent error, a lost lease
// (stale, the handler's signal aborted), graceful shutdown with hand-back,
// maintenance under the queue's lock.

import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import * as emq from "../src/index.js";
import * as wire from "../src/gen/index.js";
import { RedisServer } from "./redis.js";

let srv: RedisServer;
let c: emq.Client;
let tally: emq.Tally;

// The worker logs retries and burials; the tests assert on counts.
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
  ms = 10000,
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

test("a worker runs every job once and completes it, woken by the doorbell", async () => {
  const q = c.queue("orders");
  const seen = new Map<string, number>();
  const w = new emq.Worker(
    q,
    async (job) => {
      seen.set(job.id, (seen.get(job.id) ?? 0) + 1);
    },
    { concurrency: 4, waitMs: 5000 },
  );
  const running = w.run();
  await new Promise((r) => setTimeout(r, 100));
  const t0 = Date.now();
  const ids = [];
  for (let i = 0; i < 50; i++) {
    ids.push(c.mint());
  }
  await q.pushBatch(ids.map((id) => ({ id, payload: "p" })));
  await until("all done", () => tally.get("completed") === 50);
  // Woken by the bell, not by the 5 s wait.
  assert.ok(Date.now() - t0 < 4000);
  w.stop();
  await running;
  assert.equal(seen.size, 50);
  assert.ok([...seen.values()].every((n) => n === 1));
  assert.deepEqual(await q.sizes(), {
    pending: 0,
    active: 0,
    schedule: 0,
    dead: 0,
  });
  assert.equal(tally.get("claimed"), 50);
});

test("a failing job is retried with backoff, then buried when out of attempts", async () => {
  const q = c.queue("orders");
  const flaky = c.mint();
  const doomed = c.mint();
  const attempts = new Map<string, number[]>();
  const delays: number[] = [];
  const w = new emq.Worker(
    q,
    async (job) => {
      const a = attempts.get(job.id) ?? [];
      a.push(job.token);
      attempts.set(job.id, a);
      if (job.id === doomed || job.token < 2) {
        throw new Error("boom");
      }
    },
    {
      maxAttempts: 3,
      maintenanceMs: 20,
      backoff: (n) => {
        const d = emq.exponentialBackoff(10, 40)(n);
        delays.push(d);
        return d;
      },
    },
  );
  const running = w.run();
  await q.push(flaky, "f");
  await q.push(doomed, "d");
  await until(
    "settled",
    () => tally.get("completed") === 1 && tally.get("buried") === 1,
  );
  w.stop();
  await running;
  assert.deepEqual(attempts.get(flaky), [1, 2]);
  assert.deepEqual(attempts.get(doomed), [1, 2, 3]);
  assert.equal((await q.get(doomed))?.state, emq.STATE_DEAD);
  assert.equal(await q.get(flaky), null);
  assert.equal(tally.get("retried"), 3);
  for (const d of delays) {
    assert.ok(d >= 5 && d <= 40, String(d));
  }
});

test("a permanent error buries the job at once", async () => {
  const q = c.queue("orders");
  const id = c.mint();
  let calls = 0;
  const w = new emq.Worker(q, async () => {
    calls++;
    throw emq.permanent(new Error("bad payload"));
  });
  const running = w.run();
  await q.push(id, "x");
  await until("buried", () => tally.get("buried") === 1);
  w.stop();
  await running;
  assert.equal(calls, 1);
  assert.equal((await q.get(id))?.state, emq.STATE_DEAD);
  assert.equal(tally.get("retried"), 0);
});

test("a lost lease aborts the handler's signal and its completion is counted stale", async () => {
  const q = c.queue("orders");
  const id = c.mint();
  let reason: unknown;
  let started = false;
  const w = new emq.Worker(
    q,
    async (_job, signal) => {
      started = true;
      await new Promise<void>((resolve) => {
        signal.addEventListener("abort", () => resolve(), { once: true });
        setTimeout(resolve, 5000);
      });
      reason = signal.reason;
    },
    { leaseMs: 300, maintenanceMs: -1 },
  );
  const running = w.run();
  await q.push(id, "x");
  await until("started", () => started);
  // Another claim takes the job: bump the row's token as a reap and a
  // second claim would.
  await srv.cmd("HINCRBY", q.keys.row(id), wire.FIELD_TOKEN, "1");
  await until("stale", () => tally.get("stale") >= 2);
  w.stop();
  await running;
  assert.ok(reason instanceof emq.LeaseLostError, String(reason));
  assert.equal(tally.get("completed"), 0);
  // The new holder's job survives.
  assert.equal((await q.get(id))?.state, emq.STATE_ACTIVE);
});

test("shutdown lets handlers finish, then hands back the jobs of those that overrun", async () => {
  const q = c.queue("orders");
  const quick = c.mint();
  const slow = c.mint();
  let reason: unknown;
  let running = 0;
  const w = new emq.Worker(
    q,
    async (job, signal) => {
      running++;
      if (job.id === quick) {
        await new Promise((r) => setTimeout(r, 100));
        return;
      }
      await new Promise<void>((resolve) => {
        signal.addEventListener("abort", () => resolve(), { once: true });
      });
      reason = signal.reason;
    },
    { concurrency: 2, shutdownTimeoutMs: 300, maintenanceMs: -1 },
  );
  const ac = new AbortController();
  const done = w.run(ac.signal);
  await q.push(quick, "q");
  await q.push(slow, "s");
  await until("both running", () => running === 2);
  const t0 = Date.now();
  ac.abort();
  await done;
  const took = Date.now() - t0;
  assert.ok(took >= 250 && took < 3000, String(took));
  assert.ok(reason instanceof emq.ShutdownError, String(reason));
  assert.equal(await q.get(quick), null);
  assert.equal(tally.get("completed"), 1);
  assert.equal(tally.get("handed_back"), 1);
  const info = await q.get(slow);
  // Handed back at once: retried with no delay and promoted.
  assert.equal(info?.state, emq.STATE_PENDING);
  assert.equal(info?.attempts, 1);
  // The maintenance lock is not left behind.
  assert.equal(
    await srv.cmd("HEXISTS", wire.KEY_LOCKS, wire.lockMaintenance(q.name)),
    0,
  );
});

test("maintenance promotes due jobs and reaps expired leases under the queue's lock", async () => {
  const q = c.queue("orders");
  const due = c.mint();
  const lost = c.mint();
  await q.enqueueAt(due, "d", Date.now() - 1);
  await q.push(lost, "l");
  await q.claim(1);
  const done: string[] = [];
  const w = new emq.Worker(
    q,
    async (job) => {
      done.push(job.id);
    },
    { maintenanceMs: 30, waitMs: 100 },
  );
  const running = w.run();
  await until("both ran", () => done.length === 2);
  assert.ok(
    String(
      await srv.cmd("HGET", wire.KEY_LOCKS, wire.lockMaintenance(q.name)),
    ).startsWith(c.owner + "/"),
  );
  w.stop();
  await running;
  assert.deepEqual(done.sort(), [due, lost].sort());
  assert.ok(tally.get("promoted") >= 1);
  assert.ok(tally.get("reaped") >= 1);
});

test("a worker runs once", async () => {
  const w = new emq.Worker(c.queue("orders"), async () => {});
  w.stop();
  await w.run();
  await assert.rejects(w.run(), emq.ArgumentError);
});
