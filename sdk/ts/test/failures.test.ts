// Failure records (echomq 2.3.0) against a real redis-server: the queue's
// calls and their refusals, get's history and time of death in one round
// trip, purge forgetting the record, and the worker recording what failed
// (error, timeout, a lost lease) with its name, forgetting the record of a
// retried job it completes in the same round trip, and sweeping the
// orphans a 2.2 client's complete leaves.

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

/** Whether the queue's failures hash holds a record for id. */
async function recorded(q: emq.Queue, id: string): Promise<boolean> {
  return Number(await srv.cmd("HEXISTS", q.keys.failures, id)) === 1;
}

/** The commands of every round trip the client's adapter sends from now on (send: one each; sendMany: one per pipeline). */
function recordTrips(client: emq.Client): {
  trips: string[][][];
  stop: () => void;
} {
  const a = client.adapter;
  const send = a.send.bind(a);
  const sendMany = a.sendMany.bind(a);
  const trips: string[][][] = [];
  const words = (cmd: readonly emq.RedisArg[]) => cmd.map((w) => String(w));
  // The adapter's sendMany writes its commands with send, in the same
  // tick: those are the pipeline's, not round trips of their own.
  let inMany = false;
  a.send = (args) => {
    if (!inMany) {
      trips.push([words(args)]);
    }
    return send(args);
  };
  a.sendMany = (cmds) => {
    trips.push(cmds.map(words));
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

test("retryFailed and buryFailed record the attempts; get returns them and the time of death in one round trip", async () => {
  const q = c.queue("orders");
  const id = c.mint();
  await q.push(id, "x");
  assert.deepEqual(await q.failures(id), []);
  const j1 = (await q.claim(30000))!;
  const runAt = await q.retryFailed(id, j1.token, 0, {
    class: emq.FailureClass.error,
    worker: "w1",
    message: "boom",
  });
  await q.promoteIds([id]);
  const j2 = (await q.claim(30000))!;
  assert.equal(j2.token, 2);
  // The worker defaults to <hostname>:<pid>.
  await q.buryFailed(id, j2.token, {
    class: emq.FailureClass.timeout,
    message: "slow",
  });

  const hist = await q.failures(id);
  assert.equal(hist.length, 2);
  assert.deepEqual(
    { ...hist[0]!, at: undefined },
    {
      attempt: 1,
      at: undefined,
      atMs: runAt,
      class: "error",
      worker: "w1",
      message: "boom",
    },
  );
  assert.equal(hist[0]!.at.getTime(), runAt);
  assert.equal(hist[1]!.attempt, 2);
  assert.equal(hist[1]!.class, emq.FailureClass.timeout);
  assert.equal(hist[1]!.worker, emq.defaultWorkerName());
  assert.match(hist[1]!.worker, /^.+:\d+$/);
  assert.equal(hist[1]!.message, "slow");

  // Warm: the failures and output scripts are loaded, so get is one
  // pipeline.
  await q.output(id);
  const rec = recordTrips(c);
  const info = await q.get(id);
  rec.stop();
  assert.equal(rec.trips.length, 1, JSON.stringify(rec.trips));
  assert.ok(
    rec.trips[0]!.some(
      (w) => w[0] === "EVALSHA" && w[1] === wire.SCRIPT_FAILURES.sha1,
    ),
  );
  assert.equal(info?.state, emq.STATE_DEAD);
  assert.deepEqual(info?.failures, hist);
  assert.deepEqual(info?.diedAt, hist[1]!.at);

  // Revived and buried by a client that records nothing: the last attempt
  // is not on the record, so the time of death is unknown, not guessed.
  assert.equal(await q.revive(id), true);
  const j3 = (await q.claim(30000))!;
  await q.bury(id, j3.token);
  const later = await q.get(id);
  assert.equal(later?.attempts, 3);
  assert.equal(later?.failures.length, 2);
  assert.equal(later?.diedAt, null);
});

test("get loads the failures script when the server does not have it (NOSCRIPT)", async () => {
  const q = c.queue("orders");
  const id = c.mint();
  await q.push(id, "x");
  const j = (await q.claim(30000))!;
  await q.buryFailed(id, j.token, { class: "error", message: "bad" });
  await srv.cmd("SCRIPT", "FLUSH");
  const info = await q.get(id);
  assert.equal(info?.failures.length, 1);
  assert.equal(info?.failures[0]!.message, "bad");
  assert.deepEqual(info?.diedAt, info?.failures[0]!.at);
  // A job that never failed reads an empty history.
  const other = c.mint();
  await q.push(other, "y");
  const fresh = await q.get(other);
  assert.deepEqual(fresh?.failures, []);
  assert.equal(fresh?.diedAt, null);
});

test("a class outside the vocabulary, a negative delay and malformed ids are refused before anything is sent", async () => {
  const q = c.queue("orders");
  const id = c.mint();
  await q.push(id, "x");
  const j = (await q.claim(30000))!;
  const before = await srv.commandsProcessed();
  await assert.rejects(
    q.retryFailed(id, j.token, 0, {
      class: "melted" as emq.FailureClass,
      message: "x",
    }),
    emq.ArgumentError,
  );
  await assert.rejects(
    q.buryFailed(id, j.token, { class: "" as emq.FailureClass, message: "x" }),
    emq.ArgumentError,
  );
  await assert.rejects(
    q.retryFailed(id, j.token, -1, { class: "error", message: "x" }),
    emq.ArgumentError,
  );
  await assert.rejects(q.forgetFailures(["not-an-id"]), emq.IdError);
  await assert.rejects(q.reapFailedIds([id], -1), emq.ArgumentError);
  await assert.rejects(q.failures("nope"), emq.IdError);
  assert.equal(await q.forgetFailures([]), 0);
  assert.equal(await q.reapFailedIds([], 0), 0);
  // Only the INFO of the count itself ran.
  assert.equal(await srv.commandsProcessed(), before + 1);
  assert.equal((await q.get(id))?.state, emq.STATE_ACTIVE);
  assert.equal(await recorded(q, id), false);
});

test("purge forgets the job's failure record; forgetFailures deletes only the records of rows that are gone", async () => {
  const q = c.queue("orders");
  const [a, b] = [c.mint(), c.mint()];
  await q.pushBatch([
    { id: a, payload: "a" },
    { id: b, payload: "b" },
  ]);
  for (const j of await q.claimMany(30000, 2)) {
    await q.buryFailed(j.id, j.token, { class: "error", message: "no" });
  }
  assert.equal(await recorded(q, a), true);
  assert.equal(await q.purge(a), true);
  assert.equal(await recorded(q, a), false);
  // b's row exists: its record stays.
  assert.equal(await q.forgetFailures([b]), 0);
  assert.equal(await recorded(q, b), true);
  // A purge of a job that is not dead changes nothing.
  assert.equal(await q.purge(a), false);
});

test("decoding keeps a failure class this SDK does not know", () => {
  const got = emq.decodeFailedAttempts([
    [1, 1700000000000, "error", "w1", Buffer.from("first")],
    [2, 1700000001000, "melted", "w2", Buffer.from("from a later minor")],
  ]);
  assert.deepEqual(
    got.map((f) => [f.attempt, f.atMs, f.class, f.worker, f.message]),
    [
      [1, 1700000000000, "error", "w1", "first"],
      [2, 1700000001000, "melted", "w2", "from a later minor"],
    ],
  );
  assert.equal(got[1]!.at.toISOString(), "2023-11-14T22:13:21.000Z");
});

test("the worker records a thrown error with its name, then buries with the last one; get shows the history and the time of death", async () => {
  const q = c.queue("orders");
  const id = c.mint();
  const w = new emq.Worker(
    q,
    async (job) => {
      throw new Error("attempt " + job.token + " failed");
    },
    { name: "w-test", maxAttempts: 2, backoff: () => 0, maintenanceMs: -1 },
  );
  const running = w.run();
  await q.push(id, "x");
  await until("buried", () => tally.get("buried") === 1);
  w.stop();
  await running;
  const info = (await q.get(id))!;
  assert.equal(info.state, emq.STATE_DEAD);
  assert.deepEqual(
    info.failures.map((f) => [f.attempt, f.class, f.worker, f.message]),
    [
      [1, "error", "w-test", "attempt 1 failed"],
      [2, "error", "w-test", "attempt 2 failed"],
    ],
  );
  assert.deepEqual(info.diedAt, info.failures[1]!.at);
});

test("a handler past jobTimeoutMs has its signal aborted and the attempt is recorded as a timeout", async () => {
  const q = c.queue("orders");
  const id = c.mint();
  const reasons: unknown[] = [];
  const w = new emq.Worker(
    q,
    async (_job, signal) => {
      // Ignores its signal for a while, as a slow handler does.
      await new Promise<void>((resolve) =>
        signal.addEventListener(
          "abort",
          () => {
            reasons.push(signal.reason);
            setTimeout(resolve, 50);
          },
          { once: true },
        ),
      );
    },
    { jobTimeoutMs: 100, maxAttempts: 1, maintenanceMs: -1 },
  );
  const running = w.run();
  await q.push(id, "x");
  await until("buried", () => tally.get("buried") === 1);
  w.stop();
  await running;
  assert.equal(reasons.length, 1);
  assert.ok(reasons[0] instanceof emq.JobTimeoutError, String(reasons[0]));
  const info = (await q.get(id))!;
  assert.equal(info.state, emq.STATE_DEAD);
  assert.equal(info.failures.length, 1);
  assert.equal(info.failures[0]!.class, emq.FailureClass.timeout);
  assert.equal(info.failures[0]!.worker, emq.defaultWorkerName());
  assert.match(info.failures[0]!.message, /job timeout of 100 ms/);
  assert.equal(tally.get("completed"), 0);
  assert.throws(
    () => new emq.Worker(q, async () => {}, { jobTimeoutMs: -1 }),
    emq.ArgumentError,
  );
});

test("the 2.4 worker completes with complete_result_claim_ids, which deletes a retried job's record in the same call: nothing more is sent", async () => {
  const q = c.queue("orders");
  const [once, flaky] = [c.mint(), c.mint()];
  const rec = recordTrips(c);
  const done: string[] = [];
  const w = new emq.Worker(
    q,
    async (job) => {
      if (job.id === flaky && job.token === 1) {
        throw new Error("once");
      }
      done.push(job.id);
    },
    { backoff: () => 0, maintenanceMs: -1, concurrency: 1 },
  );
  const running = w.run();
  await q.push(once, "o");
  await q.push(flaky, "f");
  await until("both completed", () => tally.get("completed") === 2);
  w.stop();
  await running;
  rec.stop();
  assert.deepEqual(done.sort(), [once, flaky].sort());
  assert.equal(await recorded(q, flaky), false);
  const complete = wire.SCRIPT_COMPLETE_RATE_IDS.sha1;
  // A script call's first ARGV: the completed job's id.
  const arg1 = (w: string[]) => w[3 + Number(w[2])];
  const of = (id: string) =>
    rec.trips.filter((t) =>
      t.some((w) => w[0] === "EVALSHA" && w[1] === complete && arg1(w) === id),
    );
  assert.equal(of(once).length, 1);
  assert.equal(of(flaky).length, 1);
  // Neither completion sent a forget: the script deleted the record.
  const forgets = [
    wire.SCRIPT_FORGET_FAILURES.sha1,
    wire.SCRIPT_FORGET_IDS.sha1,
    wire.SCRIPT_COMPLETE_CLAIM_IDS.sha1,
  ];
  assert.equal(
    rec.trips.filter((t) => t.some((w) => forgets.includes(w[1]!))).length,
    0,
  );
});

test("maintenance records a lost lease and sweeps the records a 2.2 complete left behind", async () => {
  const q = c.queue("orders");
  // 150 orphans: a record each, the row deleted by the 2.2 complete script.
  const orphans = Array.from({ length: 150 }, () => c.mint());
  await q.pushBatch(orphans.map((id) => ({ id, payload: "o" })));
  const first = await q.claimMany(30000, orphans.length);
  assert.equal(first.length, orphans.length);
  await Promise.all(
    first.map((j) =>
      q.retryFailed(j.id, j.token, 0, { class: "error", message: "x" }),
    ),
  );
  assert.equal(await q.promoteIds(orphans), orphans.length);
  const second = await q.claimMany(30000, orphans.length);
  await Promise.all(
    second.map((j) =>
      wire.runComplete(c.runner, {
        active: q.keys.active,
        row: q.keys.row(j.id),
        id: j.id,
        token: j.token,
      }),
    ),
  );
  assert.equal(Number(await srv.cmd("HLEN", q.keys.failures)), 150);
  for (const id of orphans) {
    assert.deepEqual(await q.failures(id), []); // never read: the row is gone
  }
  // A lease that expires: maintenance takes it back, recorded as lost.
  const lost = c.mint();
  await q.push(lost, "l");
  assert.equal((await q.claimIds(1, [lost])).length, 1);

  const ran: number[] = [];
  const w = new emq.Worker(
    q,
    async (job) => {
      if (job.id === lost) {
        ran.push(job.token);
      }
    },
    { maintenanceMs: 20, waitMs: 50 },
  );
  const running = w.run();
  await until("the lost lease ran again", () => ran.length === 1);
  // 150 orphans, 100 a tick: gone within a few ticks.
  await until(
    "the orphans swept",
    async () => Number(await srv.cmd("HLEN", q.keys.failures)) === 0,
  );
  w.stop();
  await running;
  assert.deepEqual(ran, [2]);
  assert.ok(tally.get("reaped") >= 1);
  // The lost lease's record went with its completion (token 2).
  assert.equal(await recorded(q, lost), false);
});

test("a worker sweeps orphans while another owner (a 2.2 worker) holds the maintenance lock", async () => {
  const q = c.queue("orders");
  const orphans = Array.from({ length: 30 }, () => c.mint());
  await q.pushBatch(orphans.map((id) => ({ id, payload: "o" })));
  const first = await q.claimMany(30000, orphans.length);
  await Promise.all(
    first.map((j) =>
      q.retryFailed(j.id, j.token, 0, { class: "error", message: "x" }),
    ),
  );
  assert.equal(await q.promoteIds(orphans), orphans.length);
  const second = await q.claimMany(30000, orphans.length);
  await Promise.all(
    second.map((j) =>
      wire.runComplete(c.runner, {
        active: q.keys.active,
        row: q.keys.row(j.id),
        id: j.id,
        token: j.token,
      }),
    ),
  );
  // Another owner holds the maintenance lock for the whole test, and
  // never sweeps (as a 2.2 worker does).
  assert.ok(
    (await wire.runLock(c.runner, {
      locks: wire.KEY_LOCKS,
      name: wire.lockMaintenance(q.name),
      owner: "a-2.2-worker",
      ttlMs: 600000,
    })) > 0,
  );
  const w = new emq.Worker(q, async () => {}, {
    maintenanceMs: 20,
    waitMs: 50,
  });
  const running = w.run();
  await until(
    "the orphans swept by a worker that does not hold the lock",
    async () => Number(await srv.cmd("HLEN", q.keys.failures)) === 0,
  );
  w.stop();
  await running;
});

test("a lost lease taken back by maintenance reads as lease_lost", async () => {
  const q = c.queue("orders");
  const id = c.mint();
  await q.push(id, "l");
  assert.equal((await q.claimIds(1, [id])).length, 1);
  await new Promise((r) => setTimeout(r, 5));
  assert.equal(await q.reapExpiredFailed(10, 1), 1);
  const info = (await q.get(id))!;
  assert.equal(info.state, emq.STATE_DEAD);
  assert.deepEqual(
    info.failures.map((f) => [f.attempt, f.class, f.worker]),
    [[1, emq.FailureClass.leaseLost, ""]],
  );
  assert.deepEqual(info.diedAt, info.failures[0]!.at);
});
