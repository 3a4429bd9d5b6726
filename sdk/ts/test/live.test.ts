// The SDK against real redis-server processes the tests start: every
// script's replies and refusals as typed errors, refusals before any
// command, the version fence, the bundle check, re-fencing after a
// reconnect.

import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import * as emq from "../src/index.js";
import * as wire from "../src/gen/index.js";
import { manifest } from "./manifest.js";
import { RedisServer } from "./redis.js";

let srv: RedisServer;
let c: emq.Client;

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
  c = await emq.connect({ url: srv.url });
});

test("connect fences a fresh keyspace and records the bundle", async () => {
  assert.equal(c.versionFound, wire.VERSION_RECORD);
  assert.equal(await srv.cmd("GET", wire.KEY_VERSION), wire.VERSION_RECORD);
  assert.equal(
    await srv.cmd("HGET", wire.KEY_BUNDLE, wire.VERSION),
    wire.BUNDLE_DIGEST,
  );
  assert.ok(c.node >= 0 && c.node <= wire.MAX_NODE);
  const lock = String(
    await srv.cmd("HGET", wire.KEY_LOCKS, wire.lockNode(c.node)),
  );
  assert.ok(lock.startsWith(c.owner + " "), lock);
});

test("a planted foreign major is refused with a FenceError and nothing is written", async () => {
  await c.close();
  await srv.cmd("FLUSHALL");
  const foreign =
    wire.VERSION_RECORD_PREFIX + (wire.VERSION_MAJOR + 1) + ".0.0";
  await srv.cmd("SET", wire.KEY_VERSION, foreign);
  const before = await srv.snapshot();
  await assert.rejects(emq.connect({ url: srv.url }), (err: unknown) => {
    assert.ok(err instanceof emq.FenceError);
    assert.equal(err.found, foreign);
    assert.equal(err.want, wire.VERSION_RECORD);
    return true;
  });
  assert.deepEqual(await srv.snapshot(), before);
  for (const junk of ["garbage", wire.VERSION_RECORD_PREFIX + "2.x.0"]) {
    await srv.cmd("SET", wire.KEY_VERSION, junk);
    await assert.rejects(emq.connect({ url: srv.url }), emq.FenceError);
  }
  c = await connectFresh();
});

async function connectFresh(): Promise<emq.Client> {
  await srv.cmd("FLUSHALL");
  return emq.connect({ url: srv.url });
}

test("a higher minor is admitted and reported; a lower one is raised", async () => {
  await c.close();
  await srv.cmd("FLUSHALL");
  const ahead =
    wire.VERSION_RECORD_PREFIX +
    wire.VERSION_MAJOR +
    "." +
    (wire.VERSION_MINOR + 1) +
    ".0";
  await srv.cmd("SET", wire.KEY_VERSION, ahead);
  c = await emq.connect({ url: srv.url });
  assert.equal(c.versionFound, ahead);
  assert.equal(await srv.cmd("GET", wire.KEY_VERSION), ahead);
  if (wire.VERSION_MINOR > 0) {
    await c.close();
    await srv.cmd("FLUSHALL");
    const lower = wire.VERSION_RECORD_PREFIX + wire.VERSION_MAJOR + ".0.0";
    await srv.cmd("SET", wire.KEY_VERSION, lower);
    c = await emq.connect({ url: srv.url });
    assert.equal(await srv.cmd("GET", wire.KEY_VERSION), wire.VERSION_RECORD);
  }
});

test("another bundle recorded for this version is refused with a BundleError", async () => {
  await c.close();
  await srv.cmd("FLUSHALL");
  await srv.cmd("HSET", wire.KEY_BUNDLE, wire.VERSION, "f".repeat(40));
  await assert.rejects(emq.connect({ url: srv.url }), (err: unknown) => {
    assert.ok(err instanceof emq.BundleError);
    assert.equal(err.found, "f".repeat(40));
    assert.equal(err.want, wire.BUNDLE_DIGEST);
    return true;
  });
  c = await connectFresh();
});

test("after a reconnect the client fences again before its next command", async () => {
  const q = c.queue("orders");
  const id1 = c.mint();
  assert.equal(await q.push(id1, "one"), true);
  // A foreign writer takes the keyspace, and the connection drops.
  const foreign =
    wire.VERSION_RECORD_PREFIX + (wire.VERSION_MAJOR + 1) + ".0.0";
  await srv.cmd("SET", wire.KEY_VERSION, foreign);
  await srv.cmd("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
  const id2 = c.mint();
  const row2 = q.keys.row(id2);
  let refused = false;
  for (let i = 0; i < 100 && !refused; i++) {
    try {
      await q.push(id2, "two");
      assert.fail("a push reached a keyspace the client may not serve");
    } catch (err) {
      if (err instanceof emq.FenceError) {
        refused = true;
        assert.equal(err.found, foreign);
      } else {
        assert.ok(err instanceof emq.ConnectionError, String(err));
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  }
  assert.ok(refused, "the push after the reconnect was not fenced");
  assert.equal(await srv.cmd("EXISTS", row2), 0);
  // The keyspace comes back: the next fence admits it.
  await srv.cmd("SET", wire.KEY_VERSION, wire.VERSION_RECORD);
  assert.equal(await q.push(id2, "two"), true);
});

test("hostile queue names and malformed ids are refused before any command", async () => {
  const good = c.queue("orders");
  const before = await srv.commandsProcessed();
  for (const bad of manifest.queues.invalid_examples) {
    assert.throws(() => c.queue(bad), emq.QueueNameError);
  }
  for (const bad of [...manifest.ids.invalid_examples, "{emq}:version"]) {
    await assert.rejects(good.push(bad, "x"), emq.IdError);
    await assert.rejects(good.enqueue(bad, "x"), emq.IdError);
    await assert.rejects(good.complete(bad, 1), emq.IdError);
    await assert.rejects(good.get(bad), emq.IdError);
    await assert.rejects(
      good.pushBatch([{ id: bad, payload: "x" }]),
      emq.IdError,
    );
  }
  await assert.rejects(good.claim(0), emq.ArgumentError);
  await assert.rejects(good.retry(c.mint(), 1, -1), emq.ArgumentError);
  await assert.rejects(
    good.page(emq.SET_PENDING, "nope", 10),
    emq.ArgumentError,
  );
  // Only the INFO of commandsProcessed itself.
  assert.equal(await srv.commandsProcessed(), before + 1);
});

test("payloads over the cap are refused before any command", async () => {
  await c.close();
  c = await emq.connect({ url: srv.url, maxPayload: 8 });
  const q = c.queue("orders");
  const before = await srv.commandsProcessed();
  await assert.rejects(q.push(c.mint(), "123456789"), emq.PayloadTooLargeError);
  await assert.rejects(q.push(c.mint(), "123456789"), emq.ArgumentError);
  assert.equal(await srv.commandsProcessed(), before + 1);
  assert.equal(await q.push(c.mint(), "12345678"), true);
});

test("the job lifecycle: every script's replies", async () => {
  const q = c.queue("orders");
  const id = c.mint();
  assert.equal(await q.claim(1000), null);
  assert.equal(await q.push(id, Buffer.from([0, 1, 2, 255])), true);
  assert.equal(await q.push(id, "again"), false);
  assert.equal(await q.enqueue(id, "again"), false);
  assert.deepEqual(await q.sizes(), {
    pending: 1,
    active: 0,
    schedule: 0,
    dead: 0,
  });
  const job = await q.claim(30000);
  assert.ok(job);
  assert.equal(job.id, id);
  assert.equal(job.token, 1);
  assert.deepEqual(job.payload, Buffer.from([0, 1, 2, 255]));
  const info = await q.get(id);
  assert.equal(info?.state, emq.STATE_ACTIVE);
  assert.equal(info?.attempts, 1);
  assert.equal(info?.atMs, job.deadlineMs);
  const d = await q.extend(id, job.token, 60000);
  assert.ok(d > job.deadlineMs);
  const runAt = await q.retry(id, job.token, 0);
  assert.ok(runAt > 0);
  assert.equal((await q.get(id))?.state, emq.STATE_SCHEDULED);
  assert.equal(await q.promote(), 1);
  const again = await q.claim(30000);
  assert.equal(again?.token, 2);
  await q.bury(id, 2);
  assert.equal((await q.get(id))?.state, emq.STATE_DEAD);
  assert.equal(await q.revive(id), true);
  assert.equal(await q.revive(id), false);
  const third = await q.claim(30000);
  assert.equal(third?.token, 3);
  await q.complete(id, 3);
  assert.equal(await q.get(id), null);
  assert.deepEqual(await q.sizes(), {
    pending: 0,
    active: 0,
    schedule: 0,
    dead: 0,
  });

  const later = c.mint();
  assert.equal(await q.enqueueAt(later, "later", Date.now() + 3600000), true);
  assert.equal(await q.promote(), 0);
  assert.equal((await q.get(later))?.state, emq.STATE_SCHEDULED);

  const dead = c.mint();
  await q.push(dead, "x");
  const dj = await q.claim(30000);
  await q.bury(dead, dj!.token);
  assert.equal(await q.purge(dead), true);
  assert.equal(await q.purge(dead), false);
  assert.equal(await srv.cmd("EXISTS", q.keys.row(dead)), 0);
});

test("refusals are typed errors: KindError and StaleError with their class words", async () => {
  const q = c.queue("orders");
  const ord = wire.newId(emq.KIND_ORD, {
    timeMs: Date.now(),
    node: 1,
    sequence: 0,
  });
  for (const op of [
    () => q.push(ord, "x"),
    () => q.enqueue(ord, "x"),
    () => q.enqueueAt(ord, "x", Date.now()),
  ]) {
    await assert.rejects(op(), (err: unknown) => {
      assert.ok(err instanceof emq.KindError);
      assert.ok(err instanceof emq.WireError);
      assert.equal(err.code, wire.CLASS_KIND);
      return true;
    });
  }
  assert.equal(await srv.cmd("EXISTS", q.keys.row(ord)), 0);

  const id = c.mint();
  await q.push(id, "x");
  const job = await q.claim(30000);
  for (const op of [
    () => q.complete(id, job!.token + 1),
    () => q.extend(id, 0, 1000),
    () => q.retry(id, 7, 0),
    () => q.bury(id, 7),
  ]) {
    await assert.rejects(op(), (err: unknown) => {
      assert.ok(err instanceof emq.StaleError);
      assert.equal(err.code, wire.CLASS_STALE);
      return true;
    });
  }
  assert.equal((await q.get(id))?.state, emq.STATE_ACTIVE);
  await q.complete(id, job!.token);
  await assert.rejects(q.complete(id, job!.token), emq.StaleError);
  await assert.rejects(
    wire.runCompleteClaim(c.adapter, {
      row: q.keys.row(id),
      active: q.keys.active,
      pending: q.keys.pending,
      wake: q.keys.wake,
      id,
      token: job!.token,
      prefix: q.keys.rowPrefix,
      leaseMs: 1000,
      count: 1,
    }),
    emq.StaleError,
  );
});

test("batches pipeline; a refusal stays with its own job", async () => {
  const q = c.queue("orders");
  const a = c.mint();
  const ord = wire.newId(emq.KIND_ORD, {
    timeMs: Date.now(),
    node: 1,
    sequence: 1,
  });
  const b = c.mint();
  await q.push(a, "dup");
  const res = await q.pushBatch([
    { id: a, payload: "a" },
    { id: ord, payload: "o" },
    { id: b, payload: "b" },
  ]);
  assert.equal(res[0]!.enqueued, false);
  assert.equal(res[0]!.error, undefined);
  assert.ok(res[1]!.error instanceof emq.KindError);
  assert.equal(res[2]!.enqueued, true);
  assert.equal(await q.size(emq.SET_PENDING), 2);
});

test("NOSCRIPT: a flushed script cache falls back to EVAL, one call and pipelines", async () => {
  const q = c.queue("orders");
  await srv.cmd("SCRIPT", "FLUSH");
  assert.equal(await q.push(c.mint(), "x"), true);
  await srv.cmd("SCRIPT", "FLUSH");
  const res = await q.pushBatch([
    { id: c.mint(), payload: "1" },
    { id: c.mint(), payload: "2" },
  ]);
  assert.deepEqual(
    res.map((r) => r.enqueued),
    [true, true],
  );
});

test("locks: the lock and unlock scripts", async () => {
  const name = wire.lockMaintenance("orders");
  const taken = await wire.runLock(c.adapter, {
    locks: wire.KEY_LOCKS,
    name,
    owner: "a",
    ttlMs: 5000,
  });
  assert.ok(taken > 0);
  assert.equal(
    await wire.runLock(c.adapter, {
      locks: wire.KEY_LOCKS,
      name,
      owner: "b",
      ttlMs: 5000,
    }),
    wire.LOCK_HELD,
  );
  assert.equal(
    await wire.runUnlock(c.adapter, {
      locks: wire.KEY_LOCKS,
      name,
      owner: "b",
    }),
    wire.UNLOCK_NOT_OWNER,
  );
  assert.equal(
    await wire.runUnlock(c.adapter, {
      locks: wire.KEY_LOCKS,
      name,
      owner: "a",
    }),
    wire.UNLOCK_RELEASED,
  );
});

test("reap takes back expired leases and buries those out of attempts", async () => {
  const q = c.queue("orders");
  const a = c.mint();
  const b = c.mint();
  await q.push(a, "a");
  await q.push(b, "b");
  await q.claim(1);
  await q.claim(1);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(await q.reap(1000, 1), 2);
  assert.equal(await q.size(emq.SET_DEAD), 2);
  assert.equal(await q.revive(a), true);
  await q.claim(1);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(await q.reap(1000, 0), 1);
  assert.equal((await q.get(a))?.state, emq.STATE_PENDING);
});

test("page walks a set newest first without repeats", async () => {
  const q = c.queue("orders");
  const ids: string[] = [];
  for (let i = 0; i < 7; i++) {
    const id = c.mint();
    ids.push(id);
    await q.push(id, String(i));
  }
  const seen: string[] = [];
  let after = "";
  for (let i = 0; i < 10; i++) {
    const p = await q.page(emq.SET_PENDING, after, 3);
    seen.push(...p.ids);
    if (p.next === "") {
      break;
    }
    after = p.next;
  }
  assert.deepEqual(seen, [...ids].reverse());
  for (let i = 0; i < 4; i++) {
    await q.claim(60000 + i);
  }
  const act = await q.page(emq.SET_ACTIVE, "", 3);
  assert.equal(act.ids.length, 3);
  const rest = await q.page(emq.SET_ACTIVE, act.next, 3);
  assert.equal(rest.ids.length, 1);
  assert.equal(rest.next, "");
  assert.equal(new Set([...act.ids, ...rest.ids]).size, 4);
});

test("the adapter's blocking pop runs on its own connection, bounded by its timeout and its signal", async () => {
  const q = c.queue("orders");
  const a = c.adapter;
  // A BLPOP the server would hold for 30 s ends at the 200 ms bound.
  let t0 = Date.now();
  assert.equal(await a.block(["BLPOP", q.keys.wake, "30"], 200), null);
  assert.ok(Date.now() - t0 < 2000);
  // The shared connection is never held up meanwhile.
  const ac = new AbortController();
  t0 = Date.now();
  const blocked = a.block(["BLPOP", q.keys.wake, "30"], 30000, ac.signal);
  assert.equal(await q.push(c.mint(), "x"), true);
  const rung = await blocked;
  assert.ok(Array.isArray(rung), String(rung));
  const again = a.block(["BLPOP", q.keys.wake, "30"], 30000, ac.signal);
  setTimeout(() => ac.abort(), 100);
  assert.equal(await again, null);
  assert.ok(Date.now() - t0 < 5000);
});

test("another client plugs in through RedisAdapter, without touching the SDK", async () => {
  const inner = await emq.NodeRedisAdapter.connect({ url: srv.url });
  const sent: string[] = [];
  let closed = false;
  const counting: emq.RedisAdapter = {
    get generation() {
      return inner.generation;
    },
    send(args) {
      sent.push(String(args[0]));
      return inner.send(args);
    },
    sendMany(cmds) {
      sent.push(...cmds.map((x) => String(x[0])));
      return inner.sendMany(cmds);
    },
    block(args, ms, signal) {
      return inner.block(args, ms, signal);
    },
    async close() {
      closed = true;
      await inner.close();
    },
  };
  const own = await emq.connect({ adapter: counting, node: 3 });
  assert.equal(own.node, 3);
  assert.equal(own.versionFound, wire.VERSION_RECORD);
  assert.equal(await own.queue("orders").push(own.mint(), "x"), true);
  assert.ok(sent.includes("EVALSHA"), sent.join(" "));
  await own.close();
  assert.ok(closed);
});
