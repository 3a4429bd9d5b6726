// Claimer policies (echomq 2.7.0) against a real redis-server: a pause
// stops the worker's claims within one claim and resume continues them; a
// concurrency cap bounds the handlers running at once across workers; a
// 2.6 script on a paused queue fails WRONGTYPE and writes nothing, and the
// SDK's deprecated token-level calls turn that into a PolicyError; the last
// policy cleared returns the classic layout; inspection reads the running
// set; a tripwire naming a later minor surfaces as a PolicyError; the
// bundle floor refuses a pause unless forced; CallOptions bound the calls.

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

/** A promise with its resolver. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { wait, open };
}

test("pause stops the worker's claims within one claim, resume continues them, and every job completes once", async () => {
  const q = c.queue("paused");
  const ids = [c.mint(), c.mint(), c.mint()];
  await q.pushBatch(ids.map((id) => ({ id, payload: id })));
  const started: string[] = [];
  const gates = new Map(ids.map((id) => [id, gate()]));
  const first = gate();
  const w = new emq.Worker(
    q,
    async (job) => {
      started.push(job.id);
      if (started.length === 1) {
        first.open();
      }
      await gates.get(job.id)!.wait;
    },
    { concurrency: 1, batch: 1, waitMs: 200, maintenanceMs: -1 },
  );
  const running = w.run();
  try {
    await first.wait;
    const p = await q.pause();
    assert.deepEqual(p, {
      paused: true,
      concurrency: 0,
      requires: 7,
      leased: 1,
      rateLimit: 0,
      ratePeriodMs: 0,
      admitInMs: 0,
    });
    gates.get(started[0]!)!.open();
    // The completion's own next lease, under the pause, leases nothing.
    await until("the first job completed", () => tally.get("completed") >= 1);
    const held = await q.policy();
    assert.equal(held.leased, 0, "nothing leased while paused");
    assert.equal(await q.size(emq.SET_PENDING), 2);
    assert.equal(started.length, 1, "no claim after the pause");
    const resumed = await q.resume();
    assert.deepEqual(resumed, {
      paused: false,
      concurrency: 0,
      requires: 0,
      leased: 0,
      rateLimit: 0,
      ratePeriodMs: 0,
      admitInMs: 0,
    });
    for (const id of ids.slice(1)) {
      gates.get(id)!.open();
    }
    await until("every job completed", () => tally.get("completed") === 3);
    assert.deepEqual([...started].sort(), [...ids].sort(), "each job once");
  } finally {
    w.stop();
    for (const g of gates.values()) {
      g.open();
    }
    await running;
  }
});

test("a cap of 2 with 4 workers never runs more than 2 handlers at once, and every job completes once", async () => {
  const q = c.queue("capped");
  const n = 24;
  const ids = Array.from({ length: n }, () => c.mint());
  assert.deepEqual(await q.setConcurrency(2), {
    paused: false,
    concurrency: 2,
    requires: 7,
    leased: 0,
    rateLimit: 0,
    ratePeriodMs: 0,
    admitInMs: 0,
  });
  await q.pushBatch(ids.map((id) => ({ id, payload: id })));
  let inflight = 0;
  let most = 0;
  const runs = new Map<string, number>();
  const handler = async (job: emq.Job) => {
    inflight++;
    most = Math.max(most, inflight);
    // Some work in flight, so that the claims overlap.
    await new Promise((r) => setTimeout(r, 2));
    runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
    inflight--;
  };
  const workers = Array.from(
    { length: 4 },
    () =>
      new emq.Worker(q, handler, {
        concurrency: 3,
        waitMs: 100,
        maintenanceMs: -1,
      }),
  );
  const running = workers.map((w) => w.run());
  try {
    await until("every job completed", () => tally.get("completed") === n);
  } finally {
    for (const w of workers) {
      w.stop();
    }
    await Promise.all(running);
  }
  assert.ok(most <= 2, most + " handlers ran at once under a cap of 2");
  assert.ok(most >= 1);
  assert.equal(runs.size, n);
  assert.ok(
    [...runs.values()].every((k) => k === 1),
    "each job once",
  );
  assert.equal((await q.policy()).leased, 0);
});

test("a 2.6 script on a paused queue fails WRONGTYPE and writes nothing; the deprecated calls throw a PolicyError naming the 2.7 call", async () => {
  const q = c.queue("legacy");
  const [a, b] = [c.mint(), c.mint()];
  await q.pushBatch([
    { id: a, payload: "a" },
    { id: b, payload: "b" },
  ]);
  const [job] = await q.claimMany(30000, 1);
  assert.equal(job!.id, a);
  await q.pause();
  const before = await srv.snapshot();
  await c.ensure();
  await assert.rejects(
    wire.runClaimIds(c.runner, {
      pending: q.keys.pending,
      active: q.keys.active,
      wake: q.keys.wake,
      rows: [q.keys.row(b)],
      leaseMs: 30000,
      ids: [b],
    }),
    (err: unknown) =>
      err instanceof wire.ReplyError && /^WRONGTYPE/.test(err.message),
  );
  await assert.rejects(
    wire.runComplete(c.runner, {
      active: q.keys.active,
      row: q.keys.row(a),
      id: a,
      token: job!.token,
    }),
    /WRONGTYPE/,
  );
  assert.deepEqual(await srv.snapshot(), before, "the keyspace is unchanged");

  await assert.rejects(q.claim(30000), (err: unknown) => {
    assert.ok(err instanceof emq.PolicyError, String(err));
    assert.equal(err.code, wire.CLASS_POLICY);
    assert.equal(err.script, wire.SCRIPT_CLAIM.name);
    assert.match(err.message, /queue legacy has a policy/);
    assert.ok(err.message.includes(wire.SCRIPT_CLAIM_RATE_IDS.name));
    return true;
  });
  await assert.rejects(q.complete(a, job!.token), (err: unknown) => {
    assert.ok(err instanceof emq.PolicyError, String(err));
    assert.ok(err.message.includes(wire.SCRIPT_COMPLETE_RATE_IDS.name));
    return true;
  });
  await assert.rejects(
    q.retryFailed(a, job!.token, 0, {
      class: emq.FailureClass.error,
      message: "boom",
    }),
    emq.PolicyError,
  );
  await assert.rejects(q.reapIds([a], 0), emq.PolicyError);
  assert.deepEqual(await srv.snapshot(), before, "the keyspace is unchanged");

  // The 2.7 calls serve the queue: extend and complete the leased job.
  assert.ok((await q.extend(a, job!.token, 60000)) > Date.now());
  assert.deepEqual(
    await q.completeResultClaimIds(a, job!.token, 30000, [b]),
    [],
    "nothing leased while paused",
  );
  assert.equal(await q.get(a), null);
});

test("another WRONGTYPE stays what it is: the active key holding no tripwire is not a policy", async () => {
  const q = c.queue("foreign");
  const a = c.mint();
  await q.push(a, "a");
  await srv.cmd("HSET", q.keys.active, "x", "y");
  await assert.rejects(q.complete(a, 1), (err: unknown) => {
    assert.ok(!(err instanceof emq.PolicyError), String(err));
    assert.match(String(err), /WRONGTYPE/);
    return true;
  });
});

test("clearing the last policy returns the classic layout: the leased jobs back in the active set, the running set gone", async () => {
  const q = c.queue("layout");
  const [a, b] = [c.mint(), c.mint()];
  await q.pushBatch([
    { id: a, payload: "a" },
    { id: b, payload: "b" },
  ]);
  const [job] = await q.claimMany(30000, 1);
  await q.pause();
  assert.equal(await srv.cmd("TYPE", q.keys.active), wire.ACTIVE_TRIPWIRE_TYPE);
  assert.equal(await srv.cmd("TYPE", q.keys.running), "zset");
  assert.equal((await q.setConcurrency(3)).requires, 7);
  const r = await q.resume();
  assert.deepEqual(r, {
    paused: false,
    concurrency: 3,
    requires: 7,
    leased: 1,
    rateLimit: 0,
    ratePeriodMs: 0,
    admitInMs: 0,
  });
  assert.equal(await srv.cmd("TYPE", q.keys.active), wire.ACTIVE_TRIPWIRE_TYPE);
  const cleared = await q.setConcurrency(0);
  assert.deepEqual(cleared, {
    paused: false,
    concurrency: 0,
    requires: 0,
    leased: 1,
    rateLimit: 0,
    ratePeriodMs: 0,
    admitInMs: 0,
  });
  assert.equal(await srv.cmd("TYPE", q.keys.active), "zset");
  assert.equal(await srv.cmd("EXISTS", q.keys.running), 0);
  assert.equal(await srv.cmd("EXISTS", q.keys.policy), 0);
  assert.deepEqual(await q.head(emq.SET_ACTIVE, 5), [job!.id]);
  // The 2.6 calls serve it again.
  await q.complete(job!.id, job!.token);
  assert.equal((await q.claim(30000))?.id, b);
});

test("inspection on a paused queue reads the running set: sizes, size, head, browse, page, get and the expired-lease reap", async () => {
  const q = c.queue("inspect");
  const [a, b] = [c.mint(), c.mint()];
  await q.pushBatch([
    { id: a, payload: "a" },
    { id: b, payload: "b" },
  ]);
  const [job] = await q.claimMany(30000, 1);
  await q.pause();
  const sizes = await q.sizes();
  assert.equal(sizes.active, 1);
  assert.equal(sizes.pending, 1);
  assert.equal(await q.size(emq.SET_ACTIVE), 1);
  assert.deepEqual(await q.head(emq.SET_ACTIVE, 5), [a]);
  assert.deepEqual(await q.browse(emq.SET_ACTIVE, 5), [a]);
  assert.deepEqual(await q.page(emq.SET_ACTIVE, "", 5), {
    ids: [a],
    next: "",
  });
  const info = await q.get(a);
  assert.equal(info?.state, emq.STATE_ACTIVE);
  assert.equal(info?.atMs, job!.deadlineMs);
  assert.equal((await q.get(b))?.state, emq.STATE_PENDING);
  assert.deepEqual(await q.policy(), {
    paused: true,
    concurrency: 0,
    requires: 7,
    leased: 1,
    rateLimit: 0,
    ratePeriodMs: 0,
    admitInMs: 0,
  });
  // An expired lease under the tripwire is reaped from the running set.
  await srv.cmd("ZADD", q.keys.running, "1", a);
  assert.equal(await q.reapExpiredRecorded(10, 5), 1);
  assert.equal(await q.size(emq.SET_ACTIVE), 0);
  assert.equal(await q.size(emq.SET_PENDING), 2);
});

test("a tripwire that names a later minor surfaces as a PolicyError from the 2.7 calls, and the policy reads it", async () => {
  const q = c.queue("later");
  const a = c.mint();
  await q.push(a, "a");
  await srv.cmd("SET", q.keys.active, "99 99");
  await assert.rejects(q.claimMany(30000, 1), (err: unknown) => {
    assert.ok(err instanceof emq.PolicyError, String(err));
    assert.equal(err.code, wire.CLASS_POLICY);
    assert.equal(err.script, wire.SCRIPT_CLAIM_RATE_IDS.name);
    return true;
  });
  await assert.rejects(q.resume(), emq.PolicyError);
  await assert.rejects(q.cancelIds([a]), emq.PolicyError);
  assert.equal((await q.policy()).requires, 99);
  assert.equal(await srv.cmd("GET", q.keys.active), "99 99");
  assert.equal(await q.size(emq.SET_PENDING), 1);
});

test("the bundle floor: a pause or a first cap is refused while the bundle record names a release below it, unless forced", async () => {
  const q = c.queue("floor");
  const below = "2.0.0";
  await srv.cmd("HSET", wire.KEY_BUNDLE, below, "0".repeat(40));
  for (const call of [() => q.pause(), () => q.setConcurrency(2)]) {
    await assert.rejects(call(), (err: unknown) => {
      assert.ok(err instanceof emq.PolicyFloorError, String(err));
      assert.ok(err instanceof emq.ArgumentError);
      assert.deepEqual(err.versions, [below]);
      assert.equal(err.floor, wire.ACTIVE_TRIPWIRE_FLOOR);
      assert.match(err.message, /queue floor/);
      return true;
    });
  }
  assert.equal(await srv.cmd("EXISTS", q.keys.policy), 0, "nothing written");
  assert.equal(await srv.cmd("TYPE", q.keys.active), "none");
  // Resuming and removing a cap never lay the tripwire: not checked.
  assert.equal((await q.resume()).requires, 0);
  assert.equal((await q.setConcurrency(0)).requires, 0);
  const forced = await q.pause({ force: true });
  assert.equal(forced.paused, true);
  // Once the tripwire is laid, a cap adds to a policy: not checked again.
  assert.equal((await q.setConcurrency(4)).concurrency, 4);
  // A floor release itself is not below it.
  await srv.cmd("HDEL", wire.KEY_BUNDLE, below);
  await srv.cmd("HSET", wire.KEY_BUNDLE, wire.ACTIVE_TRIPWIRE_FLOOR, "x");
  assert.equal((await c.queue("floor2").pause()).paused, true);
});

test("the policy calls take CallOptions and refuse bad input before anything is sent", async () => {
  const q = c.queue("opts");
  const ac = new AbortController();
  ac.abort(new Error("not now"));
  await assert.rejects(q.pause({ signal: ac.signal }), /not now/);
  await assert.rejects(q.policy({ signal: ac.signal }), /not now/);
  await assert.rejects(
    q.setConcurrency(2, { deadline: Date.now() - 1 }),
    emq.DeadlineError,
  );
  for (const bad of [-1, 1.5, Number.NaN]) {
    await assert.rejects(q.setConcurrency(bad), emq.ArgumentError);
  }
  assert.equal(await srv.cmd("EXISTS", q.keys.policy), 0, "nothing written");
  const live = await q.setConcurrency(1, { deadline: Date.now() + 5000 });
  assert.equal(live.concurrency, 1);
  assert.equal(
    (await q.policy({ signal: new AbortController().signal })).concurrency,
    1,
  );
});

test("a worker on a paused queue waits on the doorbell: one fruitless claim per wait, no busy loop, and resume wakes it", async () => {
  const q = c.queue("idle");
  const ids = [c.mint(), c.mint(), c.mint()];
  await q.pushBatch(ids.map((id) => ({ id, payload: id })));
  await q.pause();
  const m = await srv.monitor();
  const seen: string[] = [];
  const w = new emq.Worker(
    q,
    async (job) => {
      seen.push(job.id);
    },
    { concurrency: 2, waitMs: 100, maintenanceMs: -1 },
  );
  const running = w.run();
  try {
    await until(
      "three waits on the doorbell",
      () => m.calls("BLPOP").length >= 3,
    );
    const waits = m.calls("BLPOP").length;
    const claims = m
      .scriptCalls(wire.SCRIPTS)
      .filter((s) => s === wire.SCRIPT_CLAIM_RATE_IDS.name).length;
    assert.ok(
      claims <= waits + 1,
      claims + " claims for " + waits + " waits on the doorbell",
    );
    assert.deepEqual(seen, [], "nothing ran while paused");
    await q.resume();
    await until("every job ran", () => seen.length === ids.length);
    assert.deepEqual([...seen].sort(), [...ids].sort());
  } finally {
    w.stop();
    await running;
    await m.stop();
  }
});

test("retry and bury serve a queue with a policy (retry_policy, bury_policy): the worker's hand-back and an undecodable job's burial", async () => {
  const q = c.queue("settle");
  const [a, b] = [c.mint(), c.mint()];
  await q.pushBatch([
    { id: a, payload: "a" },
    { id: b, payload: "b" },
  ]);
  const js = await q.claimMany(30000, 2);
  assert.equal(js.length, 2);
  await q.setConcurrency(2);
  const at = await q.retry(a, js[0]!.token, 0);
  assert.ok(at > 0);
  assert.equal((await q.get(a))?.state, emq.STATE_SCHEDULED);
  await q.bury(b, js[1]!.token);
  assert.equal((await q.get(b))?.state, emq.STATE_DEAD);
  assert.equal((await q.policy()).leased, 0);
  await assert.rejects(q.bury(b, js[1]!.token), emq.StaleError);
});
