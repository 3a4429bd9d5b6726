// The 2.2.0 calls against a real redis-server: the low-level pushMany,
// claimIds, completeClaimIds, promoteIds and reapIds (checked before
// sending, typed refusals), the declared-key high-level paths, the
// coalesced push (one push_many per batch, each caller its own result,
// refusals, AbortSignal, deadline, opt-out, maxBatch) and the chunked
// pushBatch.

import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import * as emq from "../src/index.js";
import * as wire from "../src/gen/index.js";
import { RedisServer, type Monitor } from "./redis.js";

let srv: RedisServer;
let c: emq.Client;

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
  c = await emq.connect({ url: srv.url, logger: silent });
});

/** An id of a registered kind other than the work kind, minted by c. */
function foreignKindId(): string {
  const k = wire.KINDS.find((x) => x !== wire.WORK_KIND);
  assert.ok(k !== undefined, "the manifest registers a second kind");
  return c.mint(k);
}

async function recording<T>(
  body: () => Promise<T>,
): Promise<{ value: T; m: Monitor; scripts: string[] }> {
  // Loaded first, so that no EVALSHA is answered NOSCRIPT and resent.
  for (const s of wire.SCRIPTS) {
    await srv.cmd("SCRIPT", "LOAD", s.source);
  }
  const m = await srv.monitor();
  try {
    const value = await body();
    await m.settle(srv);
    return { value, m, scripts: m.scriptCalls(wire.SCRIPTS) };
  } finally {
    await m.stop();
  }
}

test("pushMany admits each job once, in order, and refuses a job of another kind as a whole", async () => {
  const q = c.queue("many");
  const [a, b, d] = [c.mint(), c.mint(), c.mint()];
  assert.equal(await q.push(b, "first"), true);
  assert.deepEqual(
    await q.pushMany([
      { id: a, payload: "a" },
      { id: b, payload: "again" },
      { id: d, payload: Buffer.from([0, 1, 2]) },
    ]),
    [true, false, true],
  );
  assert.equal((await q.get(b))?.payload.toString(), "first");
  assert.deepEqual([...(await q.get(d))!.payload], [0, 1, 2]);
  assert.equal(await srv.cmd("ZCARD", q.keys.pending), 3);
  assert.equal(await srv.cmd("LLEN", q.keys.wake), 1);

  const before = await srv.snapshot();
  await assert.rejects(
    q.pushMany([
      { id: c.mint(), payload: "x" },
      { id: foreignKindId(), payload: "y" },
    ]),
    emq.KindError,
  );
  assert.deepEqual(await srv.snapshot(), before, "nothing written");
  assert.deepEqual(await q.pushMany([]), []);
});

test("the 2.2.0 calls refuse bad input before anything is sent", async () => {
  const q = c.queue("bad");
  const small = await emq.connect({
    url: srv.url,
    logger: silent,
    maxPayload: 4,
  });
  const n0 = await srv.commandsProcessed();
  try {
    await assert.rejects(
      small.queue("bad").pushMany([{ id: c.mint(), payload: "too long" }]),
      emq.PayloadTooLargeError,
    );
    await assert.rejects(
      small.queue("bad").push(c.mint(), "too long"),
      emq.PayloadTooLargeError,
    );
    await assert.rejects(
      small.queue("bad").pushBatch([{ id: c.mint(), payload: "too long" }]),
      emq.PayloadTooLargeError,
    );
  } finally {
    await small.close();
  }
  assert.throws(() => c.queue("bad name{"), emq.QueueNameError);
  await assert.rejects(
    q.pushMany([
      { id: c.mint(), payload: "ok" },
      { id: "nope", payload: "x" },
    ]),
    (err: unknown) =>
      err instanceof emq.IdError && /^emq: job 1: /.test(err.message),
  );
  await assert.rejects(q.claimIds(1000, ["JOBnotanid!!!!"]), emq.IdError);
  await assert.rejects(q.claimIds(0, [c.mint()]), emq.ArgumentError);
  await assert.rejects(
    q.completeClaimIds(c.mint(), 1, 1000, ["bad"]),
    emq.IdError,
  );
  await assert.rejects(q.promoteIds(["bad"]), emq.IdError);
  await assert.rejects(q.reapIds([c.mint()], -1), emq.ArgumentError);
  await assert.rejects(q.reapIds(["bad"], 0), emq.IdError);
  await assert.rejects(q.push("bad", "x"), emq.IdError);
  await assert.rejects(
    q.pushBatch([{ id: "bad", payload: "x" }]),
    (err: unknown) =>
      err instanceof emq.IdError && /^emq: job 0: /.test(err.message),
  );
  // INFO, and the small client's node release (the unlock script, NOSCRIPT then EVAL) and QUIT at close.
  const n1 = await srv.commandsProcessed();
  assert.ok(n1 - n0 <= 5, "sent " + (n1 - n0) + " commands");
  const n2 = await srv.commandsProcessed();
  await assert.rejects(q.claimIds(1000, ["JOBnotanid!!!!"]), emq.IdError);
  assert.deepEqual(await q.claimIds(1000, []), []);
  assert.equal(await q.promoteIds([]), 0);
  assert.equal(await q.reapIds([], 0), 0);
  assert.equal((await srv.commandsProcessed()) - n2, 1, "only INFO ran");
});

test("claimIds leases exactly the given pending ids in the order given; completeClaimIds completes then leases", async () => {
  const q = c.queue("ids");
  const [a, b, d] = [c.mint(), c.mint(), c.mint()];
  await q.pushMany([
    { id: a, payload: "a" },
    { id: b, payload: "b" },
    { id: d, payload: "d" },
  ]);
  const got = await q.claimIds(30000, [b, a]);
  assert.deepEqual(
    got.map((j) => [j.id, j.token, j.payload.toString()]),
    [
      [b, 1, "b"],
      [a, 1, "a"],
    ],
  );
  assert.deepEqual(await q.claimIds(30000, [a, b]), [], "taken: skipped");
  await assert.rejects(q.completeClaimIds(a, 7, 30000, [d]), emq.StaleError);
  assert.equal(await srv.cmd("ZSCORE", q.keys.pending, d), "0");
  const next = await q.completeClaimIds(a, 1, 30000, [d]);
  assert.deepEqual(
    next.map((j) => j.id),
    [d],
  );
  assert.equal(await q.get(a), null);
  assert.deepEqual(await q.completeClaimIds(b, 1, 30000, []), []);
  assert.equal(await q.get(b), null);
});

test("claimMany and completeClaim read the head and claim it oldest first", async () => {
  const q = c.queue("head");
  const ids = [c.mint(), c.mint(), c.mint(), c.mint()];
  await q.pushBatch(ids.map((id) => ({ id, payload: id })));
  assert.deepEqual(await q.head(emq.SET_PENDING, 3), ids.slice(0, 3));
  assert.deepEqual(await q.head(emq.SET_ACTIVE, 3), []);
  await assert.rejects(q.head(emq.SET_PENDING, 0), emq.ArgumentError);
  await assert.rejects(q.head("nope" as emq.SetName, 1), emq.ArgumentError);
  const { value: two, scripts } = await recording(() => q.claimMany(30000, 2));
  assert.deepEqual(
    two.map((j) => j.id),
    ids.slice(0, 2),
  );
  assert.deepEqual(scripts, [wire.SCRIPT_CLAIM_RATE_IDS.name]);
  const next = await q.completeClaim(two[0]!.id, two[0]!.token, 30000, 5);
  assert.deepEqual(
    next.map((j) => j.id),
    ids.slice(2),
  );
  assert.deepEqual(await q.claimMany(30000, 3), []);
});

test("promoteDue and reapExpired move only what is due, ring the doorbell, and run only declared-key scripts", async () => {
  const q = c.queue("maint");
  const [a, b, d] = [c.mint(), c.mint(), c.mint()];
  await q.enqueueAt(a, "due", Date.now() - 1000);
  await q.enqueueAt(b, "later", Date.now() + 600000);
  const { value: moved, scripts } = await recording(() => q.promoteDue(10));
  assert.equal(moved, 1);
  assert.deepEqual(scripts, ["promote_ids"]);
  assert.equal((await q.get(a))?.state, emq.STATE_PENDING);
  assert.equal((await q.get(b))?.state, emq.STATE_SCHEDULED);
  assert.equal(await srv.cmd("LLEN", q.keys.wake), 1);
  assert.equal(await q.promoteDue(10), 0);
  assert.equal(await q.promoteIds([b]), 0, "not yet due");

  await srv.cmd("DEL", q.keys.wake);
  await q.enqueue(d, "d");
  const leased = await q.claimMany(1, 2);
  assert.equal(leased.length, 2);
  await new Promise((r) => setTimeout(r, 20));
  const r = await recording(() => q.reapExpired(10, 0));
  assert.equal(r.value, 2);
  assert.deepEqual(r.scripts, ["reap_ids"]);
  assert.equal(await srv.cmd("ZCARD", q.keys.pending), 2);
  assert.equal(await srv.cmd("LLEN", q.keys.wake), 1);
  // Out of attempts: buried, and nothing claimable is left to ring for.
  await srv.cmd("DEL", q.keys.wake);
  assert.equal((await q.claimMany(1, 2)).length, 2);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(await q.reapExpired(10, 1), 2);
  assert.equal(await srv.cmd("ZCARD", q.keys.dead), 2);
  assert.equal(await srv.cmd("EXISTS", q.keys.wake), 0);
  assert.equal(await q.reapIds([a], 1), 0);
});

test("concurrent pushes on one client go out as one push_many per batch, each caller its own result", async () => {
  const q = c.queue("co");
  const dup = c.mint();
  assert.equal(await q.push(dup, "old"), true);
  const ids = Array.from({ length: 50 }, () => c.mint());
  const { value: res, scripts } = await recording(() =>
    Promise.all([
      ...ids.map((id) => q.push(id, "p" + id)),
      q.push(dup, "new"),
      c.queue("co").push(ids[0]!, "same id, same batch"),
    ]),
  );
  assert.deepEqual(res, [...ids.map(() => true), false, false]);
  assert.deepEqual(scripts, ["push_many"], "one call for the 52 pushes");
  assert.equal(await srv.cmd("ZCARD", q.keys.pending), 51);
  assert.equal((await q.get(ids[0]!))?.payload.toString(), "p" + ids[0]);
  assert.equal((await q.get(dup))?.payload.toString(), "old");
});

test("a coalesced push of another kind, or in a batch refused as a whole, gets its own refusal; the others are admitted", async () => {
  const q = c.queue("refuse");
  const good = [c.mint(), c.mint(), c.mint()];
  const wrong = c.mint();
  await srv.cmd("SET", q.keys.rowPrefix + wrong, "planted");
  const foreign = foreignKindId();
  const { value: res, scripts } = await recording(() =>
    Promise.allSettled([
      q.push(good[0]!, "a"),
      q.push(foreign, "kind"),
      q.push(wrong, "type"),
      q.push(good[1]!, "b"),
      q.push(good[2]!, "c"),
    ]),
  );
  assert.deepEqual(
    res.map((r) => r.status),
    ["fulfilled", "rejected", "rejected", "fulfilled", "fulfilled"],
  );
  assert.ok((res[1] as PromiseRejectedResult).reason instanceof emq.KindError);
  const typeErr = (res[2] as PromiseRejectedResult).reason;
  assert.ok(
    typeErr instanceof emq.ReplyError && /WRONGTYPE/.test(typeErr.message),
    String(typeErr),
  );
  assert.equal(await srv.cmd("ZCARD", q.keys.pending), 3);
  // The other kind alone; the batch refused as a whole (WRONGTYPE), then
  // each of its jobs on its own.
  assert.deepEqual(
    [...scripts].sort(),
    ["push", "push", "push", "push", "push", "push_many"].sort(),
  );
});

test("an aborted signal or a passed deadline stops a push before it is sent", async () => {
  const q = c.queue("abort");
  const ac = new AbortController();
  ac.abort(new Error("caller gave up"));
  await assert.rejects(q.push(c.mint(), "x", { signal: ac.signal }), {
    message: "caller gave up",
  });
  await assert.rejects(
    q.push(c.mint(), "x", { deadline: Date.now() - 1 }),
    emq.DeadlineError,
  );
  // Aborted after the call, before its batch left: not written; the rest
  // of the batch is.
  const late = new AbortController();
  const gone = c.mint();
  const kept = c.mint();
  const p1 = q.push(gone, "x", { signal: late.signal });
  const p2 = q.push(kept, "y");
  late.abort();
  await assert.rejects(p1, { name: "AbortError" });
  assert.equal(await p2, true);
  assert.equal(await q.get(gone), null);
  assert.equal(await srv.cmd("ZCARD", q.keys.pending), 1);
  await assert.rejects(
    q.pushBatch([{ id: c.mint(), payload: "z" }], { signal: ac.signal }),
    { message: "caller gave up" },
  );
  await assert.rejects(
    q.enqueue(c.mint(), "z", { deadline: Date.now() - 1 }),
    emq.DeadlineError,
  );
  await assert.rejects(q.size(emq.SET_PENDING, { signal: ac.signal }), {
    message: "caller gave up",
  });
  assert.equal(await srv.cmd("ZCARD", q.keys.pending), 1);
});

test("coalescing off sends one push per call; maxBatch splits a burst", async () => {
  const off = await emq.connect({
    url: srv.url,
    logger: silent,
    coalesce: false,
  });
  try {
    const q = off.queue("off");
    const r = await recording(() =>
      Promise.all(Array.from({ length: 5 }, () => q.push(off.mint(), "x"))),
    );
    assert.deepEqual(r.value, [true, true, true, true, true]);
    assert.deepEqual(r.scripts, ["push", "push", "push", "push", "push"]);
  } finally {
    await off.close();
  }
  const small = await emq.connect({
    url: srv.url,
    logger: silent,
    coalesce: { maxBatch: 4, lingerMs: 0 },
  });
  try {
    const q = small.queue("small");
    const r = await recording(() =>
      Promise.all(Array.from({ length: 10 }, () => q.push(small.mint(), "x"))),
    );
    assert.equal(r.value.filter((b) => b).length, 10);
    assert.deepEqual(r.scripts, ["push_many", "push_many", "push_many"]);
    const sizes = r.m
      .calls("EVALSHA")
      .map((w) => Number(w[2]) - 2)
      .sort((x, y) => x - y);
    assert.deepEqual(sizes, [2, 4, 4], "rows per call");
  } finally {
    await small.close();
  }
});

test("pushBatch sends chunks of push_many in one round trip; a job of another kind is refused alone", async () => {
  const q = c.queue("batch");
  const jobs = Array.from({ length: 600 }, (_, i) => ({
    id: c.mint(),
    payload: "j" + i,
  }));
  const foreign = foreignKindId();
  const dup = jobs[3]!.id;
  await q.push(dup, "first");
  const r = await recording(() =>
    q.pushBatch([...jobs, { id: foreign, payload: "k" }]),
  );
  assert.equal(r.value.length, 601);
  assert.equal(r.value.filter((x) => x.enqueued).length, 599);
  assert.deepEqual(r.value[3], { enqueued: false });
  assert.ok(r.value[600]!.error instanceof emq.KindError);
  assert.deepEqual([...r.scripts].sort(), [
    "push",
    "push_many",
    "push_many",
    "push_many",
  ]);
  assert.equal(await srv.cmd("ZCARD", q.keys.pending), 600);
});
