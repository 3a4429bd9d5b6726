// Rate limits (echomq 2.8.0) against a real redis-server: a limit of N
// starts per period P, with several concurrent workers, never starts more
// than N jobs in any window of P (by the reply deadlines: deadline - lease
// is the start's server millisecond), and every job completes once; jobs
// the limit holds back stay pending with their attempts unchanged while
// the worker waits (no busy loop); removing the limit lets the rest run at
// once, the doorbell waking a waiting worker; a 2.7 claim or set_policy on
// a rate-limited queue is refused (EMQPOLICY) and writes nothing, a 2.7
// completion completes and leases nothing; pause, resume and a cap keep
// the limit; bad input and the bundle floor are refused before anything is
// written; a worker whose claims are refused (a tripwire naming a later
// minor) keeps running, backs off and settles the jobs it holds.

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

/** The most of starts (server ms) in any window of periodMs: [t, t + periodMs). */
function busiestWindow(starts: readonly number[], periodMs: number): number {
  const s = [...starts].sort((a, b) => a - b);
  let most = 0;
  let j = 0;
  for (let i = 0; i < s.length; i++) {
    while (s[i]! - s[j]! >= periodMs) {
      j++;
    }
    most = Math.max(most, i - j + 1);
  }
  return most;
}

const noLimit = { rateLimit: 0, ratePeriodMs: 0, admitInMs: 0 };

test("20 starts per 200 ms across 3 workers: no window of 200 ms holds more than 20 starts, every job completes once, and the claims are paced", async () => {
  const q = c.queue("rated");
  const n = 120;
  const limit = 20;
  const period = 200;
  const lease = 30000;
  const p = await q.setRateLimit(limit, period);
  assert.equal(p.rateLimit, limit);
  assert.equal(p.ratePeriodMs, period);
  assert.equal(p.requires, 8, "a rate limit's tripwire names minor 8");
  assert.equal(await srv.cmd("GET", q.keys.active), "8 7");
  const ids = Array.from({ length: n }, () => c.mint());
  await q.pushBatch(ids.map((id) => ({ id, payload: id })));
  const m = await srv.monitor();
  const starts: number[] = [];
  const runs = new Map<string, number>();
  const handler = async (job: emq.Job) => {
    starts.push(job.deadlineMs - lease);
    runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
    await new Promise((r) => setTimeout(r, 1));
  };
  const workers = Array.from(
    { length: 3 },
    () =>
      new emq.Worker(q, handler, {
        concurrency: 4,
        leaseMs: lease,
        waitMs: 1000,
        maintenanceMs: -1,
      }),
  );
  const t0 = Date.now();
  const running = workers.map((w) => w.run());
  try {
    await until("every job completed", () => tally.get("completed") === n);
  } finally {
    for (const w of workers) {
      w.stop();
    }
    await Promise.all(running);
  }
  const elapsed = Date.now() - t0;
  await m.settle(srv);
  await m.stop();
  assert.equal(starts.length, n);
  const most = busiestWindow(starts, period);
  assert.ok(
    most <= limit,
    most + " starts in a window of " + period + " ms under a limit of " + limit,
  );
  assert.equal(runs.size, n);
  assert.ok(
    [...runs.values()].every((k) => k === 1),
    "each job once",
  );
  // The limit spreads the starts: n of them take at least the periods
  // they fill.
  const span = Math.max(...starts) - Math.min(...starts);
  assert.ok(
    span >= (n / limit - 1) * period,
    n + " starts over " + span + " ms",
  );
  // Paced, not a busy loop: each worker claims about once per admit
  // interval (period / limit) while held, plus the claims that lease.
  const calls = m.scriptCalls(wire.SCRIPTS);
  const claims = calls.filter(
    (s) => s === wire.SCRIPT_CLAIM_RATE_IDS.name,
  ).length;
  const bound = (elapsed / (period / limit)) * workers.length * 2 + n;
  assert.ok(
    claims <= bound,
    claims + " claims in " + elapsed + " ms (bound " + bound + ")",
  );
  assert.equal(
    calls.filter((s) => s === wire.SCRIPT_CLAIM_POLICY_IDS.name).length,
    0,
    "no 2.7 claim",
  );
  assert.ok(
    m.calls("EVALSHA_RO").some((w) => w[1] === wire.SCRIPT_READ_POLICY.sha1),
    "a held claim reads the policy",
  );
  const left = await q.policy();
  assert.equal(left.leased, 0);
  assert.equal(left.rateLimit, limit);
});

test("the jobs a limit holds back stay pending with their attempts unchanged, the worker waits on the doorbell without a busy loop, and removing the limit lets the rest run", async () => {
  const q = c.queue("held");
  // 3 per minute: the pace admits 2 at once, the next only 20 s later.
  await q.setRateLimit(3, 60000);
  const ids = Array.from({ length: 8 }, () => c.mint());
  await q.pushBatch(ids.map((id) => ({ id, payload: id })));
  const seen: string[] = [];
  const w = new emq.Worker(
    q,
    async (job) => {
      seen.push(job.id);
    },
    { concurrency: 2, waitMs: 100, maintenanceMs: -1 },
  );
  let m = await srv.monitor();
  const running = w.run();
  try {
    await until("two jobs completed", () => tally.get("completed") === 2);
    const p = await q.policy();
    assert.ok(
      p.admitInMs > 10000 && p.admitInMs <= 20000,
      "admit in " + p.admitInMs,
    );
    assert.equal(p.leased, 0);
    await m.stop();
    m = await srv.monitor();
    await until(
      "four waits on the doorbell",
      () => m.calls("BLPOP").length >= 4,
    );
    await m.settle(srv);
    const waits = m.calls("BLPOP").length;
    const claims = m
      .scriptCalls(wire.SCRIPTS)
      .filter((s) => s === wire.SCRIPT_CLAIM_RATE_IDS.name).length;
    assert.ok(
      claims <= waits + 1,
      claims + " claims for " + waits + " waits on the doorbell",
    );
    assert.equal(seen.length, 2, "nothing more started while held");
    const sizes = await q.sizes();
    assert.equal(sizes.pending, 6);
    assert.equal(sizes.active, 0);
    assert.equal(sizes.dead, 0);
    assert.equal(sizes.schedule, 0);
    for (const id of ids.filter((i) => !seen.includes(i))) {
      const info = await q.get(id);
      assert.equal(info?.state, emq.STATE_PENDING, id);
      assert.equal(info?.attempts, 0, id + " was never leased");
    }
    const removed = await q.setRateLimit(0, 0);
    assert.deepEqual(removed, {
      paused: false,
      concurrency: 0,
      requires: 0,
      leased: removed.leased,
      ...noLimit,
    });
    assert.equal(await srv.cmd("EXISTS", q.keys.starts), 0, "log deleted");
    await until("every job ran", () => seen.length === ids.length);
    assert.deepEqual([...seen].sort(), [...ids].sort(), "each job once");
  } finally {
    w.stop();
    await running;
    await m.stop();
  }
});

test("a worker held by a long limit waits on the doorbell: raising the limit wakes it before its wait ends", async () => {
  const q = c.queue("woken");
  await q.setRateLimit(3, 60000);
  const ids = Array.from({ length: 5 }, () => c.mint());
  await q.pushBatch(ids.map((id) => ({ id, payload: id })));
  const m = await srv.monitor();
  const waitMs = 20000;
  const w = new emq.Worker(q, async () => {}, {
    concurrency: 2,
    waitMs,
    maintenanceMs: -1,
  });
  const running = w.run();
  try {
    await until("two jobs completed", () => tally.get("completed") === 2);
    const done = m.commands.length;
    // After the completions, the claimer's fruitless claim and its wait.
    await until("a wait on the doorbell after the completions", () =>
      m.commands.slice(done).some((c) => c[0]!.toUpperCase() === "BLPOP"),
    );
    const t = Date.now();
    const raised = await q.setRateLimit(1000, 1000);
    assert.equal(raised.rateLimit, 1000);
    await until(
      "every job completed",
      () => tally.get("completed") === ids.length,
    );
    const took = Date.now() - t;
    assert.ok(
      took < waitMs / 2,
      "woken after " + took + " ms of a " + waitMs + " ms wait",
    );
  } finally {
    w.stop();
    await running;
    await m.stop();
  }
});

test("a 2.7 claim and set_policy on a rate-limited queue are refused EMQPOLICY and write nothing; a 2.7 completion completes and leases nothing", async () => {
  const q = c.queue("old");
  const [a, b] = [c.mint(), c.mint()];
  await q.pushBatch([
    { id: a, payload: "a" },
    { id: b, payload: "b" },
  ]);
  const [job] = await q.claimMany(30000, 1);
  assert.equal(job!.id, a);
  await q.setRateLimit(100, 1000);
  await c.ensure();
  const before = await srv.snapshot();
  await assert.rejects(
    wire.runClaimPolicyIds(c.runner, {
      pending: q.keys.pending,
      active: q.keys.active,
      running: q.keys.running,
      policy: q.keys.policy,
      wake: q.keys.wake,
      rows: [q.keys.row(b)],
      leaseMs: 30000,
      ids: [b],
    }),
    (err: unknown) => {
      assert.ok(err instanceof wire.PolicyError, String(err));
      assert.equal(err.code, wire.CLASS_POLICY);
      assert.equal(err.script, wire.SCRIPT_CLAIM_POLICY_IDS.name);
      return true;
    },
  );
  await assert.rejects(
    wire.runSetPolicy(c.runner, {
      pending: q.keys.pending,
      active: q.keys.active,
      running: q.keys.running,
      policy: q.keys.policy,
      wake: q.keys.wake,
      paused: 1,
      concurrency: -1,
    }),
    wire.PolicyError,
  );
  assert.deepEqual(await srv.snapshot(), before, "the keyspace is unchanged");
  // A 2.7 worker still settles what it holds: the completion goes
  // through, and leases nothing past the limit.
  const next = await wire.runCompletePolicyIds(c.runner, {
    row: q.keys.row(a),
    active: q.keys.active,
    running: q.keys.running,
    policy: q.keys.policy,
    pending: q.keys.pending,
    wake: q.keys.wake,
    results: q.keys.results,
    resultTimes: q.keys.resultTimes,
    progress: q.keys.progress,
    failures: q.keys.failures,
    options: q.keys.options,
    events: q.keys.events,
    counters: q.keys.counters,
    rows: [q.keys.row(b)],
    id: a,
    token: job!.token,
    leaseMs: 30000,
    result: "",
    keep: 0,
    keepAgeMs: 0,
    eventsMax: 0,
    ids: [b],
  });
  assert.deepEqual(next, []);
  assert.equal(await q.get(a), null);
  assert.equal((await q.get(b))?.state, emq.STATE_PENDING);
  // The SDK's claims honour the limit.
  assert.deepEqual(
    (await q.claimIds(30000, [b])).map((j) => j.id),
    [b],
  );
});

test("pause, resume and a cap keep the rate limit; removing each policy moves the tripwire, the last one lifts it", async () => {
  const q = c.queue("keep");
  assert.deepEqual(await q.setRateLimit(20, 200), {
    paused: false,
    concurrency: 0,
    requires: 8,
    leased: 0,
    rateLimit: 20,
    ratePeriodMs: 200,
    admitInMs: 0,
  });
  const paused = await q.pause();
  assert.equal(paused.paused, true);
  assert.equal(paused.rateLimit, 20);
  assert.equal(paused.ratePeriodMs, 200);
  assert.equal(paused.requires, 8);
  const capped = await q.setConcurrency(3);
  assert.equal(capped.concurrency, 3);
  assert.equal(capped.rateLimit, 20);
  const resumed = await q.resume();
  assert.equal(resumed.paused, false);
  assert.equal(resumed.rateLimit, 20);
  assert.equal(resumed.ratePeriodMs, 200);
  assert.equal(resumed.concurrency, 3);
  assert.equal(resumed.requires, 8);
  assert.equal(await srv.cmd("GET", q.keys.active), "8 7");
  // A changed limit replaces it.
  const changed = await q.setRateLimit(5, 1000);
  assert.equal(changed.rateLimit, 5);
  assert.equal(changed.ratePeriodMs, 1000);
  assert.deepEqual(await q.policy(), changed);
  // Without the limit, the cap alone: the 2.7 tripwire.
  const unlimited = await q.setRateLimit(0, 0);
  assert.equal(unlimited.rateLimit, 0);
  assert.equal(unlimited.ratePeriodMs, 0);
  assert.equal(unlimited.concurrency, 3);
  assert.equal(unlimited.requires, 7);
  assert.equal(await srv.cmd("GET", q.keys.active), "7 7");
  const none = await q.setConcurrency(0);
  assert.deepEqual(none, {
    paused: false,
    concurrency: 0,
    requires: 0,
    leased: 0,
    ...noLimit,
  });
  assert.equal(await srv.cmd("TYPE", q.keys.active), "none");
  assert.equal(await srv.cmd("EXISTS", q.keys.policy), 0);
});

test("setRateLimit refuses bad input with an ArgumentError before anything is sent, and takes CallOptions", async () => {
  const q = c.queue("bad");
  const m = await srv.monitor();
  const bad: [number, number][] = [
    [-1, 1000],
    [emq.RATE_LIMIT_MAX + 1, 1000],
    [1.5, 1000],
    [Number.NaN, 1000],
    [5, 0],
    [5, -1],
    [5, emq.RATE_PERIOD_MAX_MS + 1],
    [5, 1.5],
    [5, Number.NaN],
  ];
  try {
    for (const [n, per] of bad) {
      await assert.rejects(
        q.setRateLimit(n, per),
        emq.ArgumentError,
        n + " per " + per,
      );
    }
    await m.settle(srv);
    assert.deepEqual(
      m.commands.filter((w) => w[0] !== "ECHO"),
      [],
      "nothing sent",
    );
  } finally {
    await m.stop();
  }
  const ac = new AbortController();
  ac.abort(new Error("not now"));
  await assert.rejects(
    q.setRateLimit(5, 1000, { signal: ac.signal }),
    /not now/,
  );
  await assert.rejects(
    q.setRateLimit(5, 1000, { deadline: Date.now() - 1 }),
    emq.DeadlineError,
  );
  assert.equal(await srv.cmd("EXISTS", q.keys.policy), 0, "nothing written");
  const most = await q.setRateLimit(
    emq.RATE_LIMIT_MAX,
    emq.RATE_PERIOD_MAX_MS,
    { deadline: Date.now() + 5000 },
  );
  assert.equal(most.rateLimit, emq.RATE_LIMIT_MAX);
  assert.equal(most.ratePeriodMs, emq.RATE_PERIOD_MAX_MS);
});

test("the bundle floor: a first rate limit is refused while the bundle record names a release below it, unless forced", async () => {
  const q = c.queue("floor");
  const below = "2.0.0";
  await srv.cmd("HSET", wire.KEY_BUNDLE, below, "0".repeat(40));
  await assert.rejects(q.setRateLimit(10, 1000), (err: unknown) => {
    assert.ok(err instanceof emq.PolicyFloorError, String(err));
    assert.ok(err instanceof emq.ArgumentError);
    assert.deepEqual(err.versions, [below]);
    return true;
  });
  assert.equal(await srv.cmd("EXISTS", q.keys.policy), 0, "nothing written");
  assert.equal(await srv.cmd("TYPE", q.keys.active), "none");
  // Removing a limit never lays the tripwire: not checked.
  assert.equal((await q.setRateLimit(0, 0)).requires, 0);
  const forced = await q.setRateLimit(10, 1000, { force: true });
  assert.equal(forced.rateLimit, 10);
  assert.equal(forced.requires, 8);
});

test("the deprecated token-level calls on a rate-limited queue throw a PolicyError naming the rate limit and the 2.8 call", async () => {
  const q = c.queue("legacy");
  await q.push(c.mint(), "a");
  await q.setRateLimit(10, 1000);
  await assert.rejects(q.claim(30000), (err: unknown) => {
    assert.ok(err instanceof emq.PolicyError, String(err));
    assert.match(err.message, /a rate limit/);
    assert.ok(err.message.includes(wire.SCRIPT_CLAIM_RATE_IDS.name));
    return true;
  });
});

test("a worker whose claims are refused (the tripwire names a later minor to claim) warns, backs off without spinning, keeps running and settles the job it holds", async () => {
  const warnings: string[] = [];
  const logger: emq.Logger = {
    debug() {},
    info() {},
    warn(msg) {
      warnings.push(msg);
    },
    error(msg) {
      warnings.push("error: " + msg);
    },
  };
  await c.close();
  c = await emq.connect({ url: srv.url, metrics: tally, logger });
  const q = c.queue("later");
  const [a, b] = [c.mint(), c.mint()];
  await q.push(a, "a");
  const held = gate();
  const started = gate();
  const seen: string[] = [];
  const w = new emq.Worker(
    q,
    async (job) => {
      seen.push(job.id);
      started.open();
      await held.wait;
    },
    { concurrency: 2, waitMs: 100, maintenanceMs: -1 },
  );
  const running = w.run();
  const m = await srv.monitor();
  try {
    await started.wait;
    // The policy layout, then a tripwire a later release laid: its claims
    // need minor 99, its settles 7.
    await q.setConcurrency(5);
    await srv.cmd("SET", q.keys.active, "99 7");
    await q.push(b, "b");
    await until("three refused claims", () => warnings.length >= 3);
    await m.settle(srv);
    const claims = m
      .scriptCalls(wire.SCRIPTS)
      .filter((s) => s === wire.SCRIPT_CLAIM_RATE_IDS.name).length;
    assert.ok(
      claims <= warnings.length + 1,
      claims + " claims for " + warnings.length + " warnings",
    );
    assert.ok(
      warnings.every((w) => /cannot honour/.test(w)),
      warnings.join("; "),
    );
    held.open();
    await until("the held job completed", () => tally.get("completed") === 1);
    assert.equal(await q.get(a), null, "settled");
    const info = await q.get(b);
    assert.equal(info?.state, emq.STATE_PENDING);
    assert.equal(info?.attempts, 0);
    assert.deepEqual(seen, [a]);
    assert.equal(await srv.cmd("GET", q.keys.active), "99 7");
  } finally {
    held.open();
    w.stop();
    await running;
    await m.stop();
  }
});
