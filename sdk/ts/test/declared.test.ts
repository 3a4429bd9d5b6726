// The worker runs only scripts that touch declared keys: a real Worker on
// a real redis-server pushes, claims, completes, retries, buries, extends,
// promotes and reaps while MONITOR records every script it calls; none of
// the 2.0/2.1 pop scripts (claim, claim_many, complete_claim, promote,
// reap) is among them, and a steady drain costs about one script call per
// job.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import * as emq from "../src/index.js";
import * as wire from "../src/gen/index.js";
import { RedisServer } from "./redis.js";

let srv: RedisServer;

const silent: emq.Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** The scripts that reach rows through the row prefix rather than KEYS. */
const undeclared = new Set([
  wire.SCRIPT_CLAIM.name,
  wire.SCRIPT_CLAIM_MANY.name,
  wire.SCRIPT_COMPLETE_CLAIM.name,
  wire.SCRIPT_PROMOTE.name,
  wire.SCRIPT_REAP.name,
]);

before(async () => {
  srv = await RedisServer.start();
});

after(async () => {
  await srv?.stop();
});

async function until(what: string, cond: () => Promise<boolean> | boolean) {
  const end = Date.now() + 15000;
  while (Date.now() < end) {
    if (await cond()) {
      return;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail("timed out waiting for " + what);
}

/** The evalsha and eval calls INFO commandstats counts. */
async function scriptCallsCounted(): Promise<number> {
  const m = await srv.commandCalls();
  return (m.get("evalsha") ?? 0) + (m.get("eval") ?? 0);
}

test("a worker pushing, claiming, completing, retrying, burying, extending, promoting and reaping calls only declared-key scripts", async () => {
  await srv.cmd("FLUSHALL");
  const tally = new emq.Tally();
  const c = await emq.connect({ url: srv.url, logger: silent, metrics: tally });
  const q = c.queue("declared");
  const m = await srv.monitor();
  await srv.cmd("CONFIG", "RESETSTAT");
  const counted0 = await scriptCallsCounted();
  let w: emq.Worker | undefined;
  let running: Promise<void> | undefined;
  try {
    // A lease taken by a claimer that never settles: maintenance reaps it.
    const orphan = c.mint();
    await q.pushMany([{ id: orphan, payload: "orphan" }]);
    assert.equal((await q.claimIds(50, [orphan])).length, 1);

    const plain = Array.from({ length: 40 }, () => c.mint());
    const flaky = c.mint();
    const doomed = c.mint();
    const slow = c.mint();
    const runs = new Map<string, number>();
    w = new emq.Worker(
      q,
      async (job) => {
        const n = (runs.get(job.id) ?? 0) + 1;
        runs.set(job.id, n);
        if (job.id === flaky && n === 1) {
          throw new Error("once");
        }
        if (job.id === doomed) {
          throw emq.permanent(new Error("never"));
        }
        if (job.id === slow) {
          await new Promise((r) => setTimeout(r, 700));
        }
      },
      {
        concurrency: 4,
        leaseMs: 300,
        maintenanceMs: 100,
        backoff: () => 20,
        waitMs: 200,
      },
    );
    running = w.run();
    // Coalesced pushes, and a job scheduled for later.
    const pushed = await Promise.all(
      [...plain, flaky, doomed, slow].map((id) => q.push(id, "p")),
    );
    assert.ok(pushed.every((b) => b));
    const later = c.mint();
    await q.enqueueAt(later, "later", Date.now() + 150);

    const done = () => tally.get("completed");
    await until(
      "every job settled",
      () => done() >= plain.length + 4 && tally.get("buried") === 1,
    );
    assert.equal(runs.get(flaky), 2, "the flaky job ran again");
    assert.equal(runs.get(doomed), 1);
    assert.equal(runs.get(orphan), 1, "the orphaned lease was reaped and run");
    assert.equal(runs.get(later), 1, "the scheduled job was promoted and run");
    assert.equal(runs.get(slow), 1, "the slow job kept its lease");
    assert.ok(tally.get("reaped") >= 1);
    assert.ok(tally.get("promoted") >= 2, "the retry and the later job");
    assert.equal(tally.get("stale"), 0);
    w.stop();
    await running;
    running = undefined;
    await m.settle(srv);
    const used = m.scriptCalls(wire.SCRIPTS);
    const names = new Set(used);
    for (const want of [
      wire.SCRIPT_PUSH_MANY,
      wire.SCRIPT_CLAIM_RATE_IDS,
      // 2.4.0: a completion keeps its result by the worker's retention
      // and deletes the job's records; a failed attempt is settled by fail
      // (retried or buried, with its record), a lost lease reaped with its
      // record, and orphaned records swept by maintenance with forget_ids;
      // 2.7.0: each through its twin that serves both layouts (the claims
      // and completions through the 2.8 ones, which honour a rate limit).
      wire.SCRIPT_COMPLETE_RATE_IDS,
      wire.SCRIPT_FAIL_POLICY,
      wire.SCRIPT_EXTEND_POLICY,
      wire.SCRIPT_PROMOTE_IDS,
      wire.SCRIPT_REAP_POLICY_IDS,
      wire.SCRIPT_FORGET_IDS,
    ]) {
      assert.ok(names.has(want.name), want.name + " was called: " + [...names]);
    }
    for (const name of names) {
      assert.ok(!undeclared.has(name), name + " touches undeclared keys");
      assert.ok(!name.startsWith("sha:"), "a script outside the bundle");
    }
    // Nothing MONITOR missed: commandstats counts as many script calls.
    const counted = (await scriptCallsCounted()) - counted0;
    assert.equal(counted, used.length, "commandstats and MONITOR agree");
  } finally {
    w?.stop();
    await running;
    await m.stop();
    await c.close();
  }
});

test("a steady drain costs one script call per job: claims come from the head pool, refilled in the claims' round trips", async () => {
  await srv.cmd("FLUSHALL");
  const c = await emq.connect({ url: srv.url, logger: silent });
  const q = c.queue("steady");
  const n = 600;
  await q.pushBatch(
    Array.from({ length: n }, () => ({ id: c.mint(), payload: "x" })),
  );
  for (const s of wire.SCRIPTS) {
    await srv.cmd("SCRIPT", "LOAD", s.source);
  }
  const m = await srv.monitor();
  let seen = 0;
  const ids = new Set<string>();
  const w = new emq.Worker(
    q,
    async (job) => {
      seen++;
      ids.add(job.id);
    },
    { concurrency: 8, maintenanceMs: -1, waitMs: 100 },
  );
  const running = w.run();
  try {
    await until("the queue drained", () => seen >= n);
    w.stop();
    await running;
    await m.settle(srv);
  } finally {
    w.stop();
    await m.stop();
    await c.close();
  }
  assert.equal(ids.size, n, "each job once");
  const used = m.scriptCalls(wire.SCRIPTS);
  const claims = used.filter(
    (s) =>
      s === wire.SCRIPT_CLAIM_RATE_IDS.name ||
      s === wire.SCRIPT_COMPLETE_RATE_IDS.name,
  ).length;
  assert.ok(
    claims <= n * 1.05 + 10,
    claims + " claiming calls for " + n + " jobs",
  );
  const peeks = m.calls("ZRANGE").length;
  assert.ok(
    peeks > 0 && peeks <= n / 4,
    peeks + " head reads for " + n + " jobs",
  );
  for (const name of used) {
    assert.ok(!undeclared.has(name), name + " touches undeclared keys");
  }
});
