// The SDK on a real Redis Cluster of three primaries (test/cluster.ts):
// the fence and the node lease on the reserve's slot, queues on every
// primary, the manifest's probes, pipelines across slots, NOSCRIPT per node, the worker's doorbell,
// MOVED after a slot moved (commands and the blocked doorbell pop), ASK
// and TRYAGAIN while a slot is split by a batched migration, TRYAGAIN past
// its budget as a ConnectionError, and the fence again after reconnects.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import * as emq from "../src/index.js";
import * as wire from "../src/gen/index.js";
import { RedisCluster, type ClusterNode } from "./cluster.js";

const silent: emq.Logger = { debug() {}, info() {}, warn() {}, error() {} };

let cl: RedisCluster;
const clients: emq.Client[] = [];

before(async () => {
  cl = await RedisCluster.start();
});

after(async () => {
  for (const c of clients) {
    await c.close();
  }
  await cl?.stop();
});

async function open(
  opts: Partial<emq.ConnectOptions> = {},
  cluster: Partial<emq.ClusterConnectOptions> = {},
): Promise<emq.Client> {
  const c = await emq.connect({
    cluster: { rootNodes: cl.urls, ...cluster },
    logger: silent,
    ...opts,
  });
  clients.push(c);
  return c;
}

let named = 0;

/** A fresh queue name whose slot the primary n serves. */
async function queueOn(n: ClusterNode, tag: string): Promise<string> {
  for (let i = 0; i < 1000; i++) {
    const name = tag + "-" + named++;
    const slot = await cl.keySlot(new wire.QueueKeys(name).pending);
    if ((await cl.owner(slot)) === n) {
      return name;
    }
  }
  throw new Error("no queue name found on " + n.addr);
}

async function slotOf(q: emq.Queue): Promise<number> {
  return cl.keySlot(q.keys.pending);
}

async function until(
  what: string,
  cond: () => Promise<boolean> | boolean,
  ms = 15000,
): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) {
      return;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail("timed out waiting for " + what);
}

/** Push, claim and complete n jobs on q; resolves the ids. */
async function roundTrip(c: emq.Client, q: emq.Queue, n: number) {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = c.mint();
    assert.equal(await q.push(id, "p" + i), true);
    ids.push(id);
  }
  for (const id of ids) {
    const j = await q.claim(60000);
    assert.ok(j !== null);
    assert.equal(j.id, id);
    await q.complete(j.id, j.token);
  }
  assert.deepEqual(await q.sizes(), {
    pending: 0,
    active: 0,
    schedule: 0,
    dead: 0,
  });
  return ids;
}

test("routingKey: a script's first KEYS, none for keyless commands, else the first argument", () => {
  assert.equal(emq.routingKey(["EVALSHA", "abc", "2", "k1", "k2", "a"]), "k1");
  assert.equal(emq.routingKey(["EVAL", "return 1", "0"]), undefined);
  assert.equal(emq.routingKey(["ZCARD", "z"]), "z");
  assert.equal(
    emq.routingKey(["CONFIG", "GET", "maxmemory-policy"]),
    undefined,
  );
  assert.equal(emq.routingKey(["BLPOP", "w", "1"]), "w");
});

test("connect fences and leases on the reserve slot's node; push, claim and complete run on a queue of every primary", async () => {
  const c = await open();
  assert.equal(c.versionFound, wire.VERSION_RECORD);
  assert.ok(c.node >= 0);
  const reserve = await cl.owner(await cl.keySlot(wire.KEY_VERSION));
  for (const k of [wire.KEY_VERSION, wire.KEY_BUNDLE, wire.KEY_LOCKS]) {
    assert.equal(await cl.keySlot(k), await cl.keySlot(wire.KEY_VERSION));
    assert.equal(await reserve.cmd("EXISTS", k), 1, k + " on " + reserve.addr);
    for (const n of cl.nodes.filter((x) => x !== reserve)) {
      assert.equal(await n.cmd("DBSIZE"), 0, n.addr + " holds no reserve key");
    }
  }
  for (const n of cl.nodes) {
    const q = c.queue(await queueOn(n, "every"));
    const ids = await roundTrip(c, q, 3);
    assert.equal(ids.length, 3);
    // The rows were retired on the queue's node, where the sets are.
    assert.equal(await n.cmd("EXISTS", q.keys.row(ids[0]!)), 0);
  }
});

test("every probe check passes on the cluster and leaves nothing behind", async () => {
  const c = await open();
  const keys = async () => {
    const out: string[] = [];
    for (const n of cl.nodes) {
      const ks = (await n.cmd("KEYS", "*")) as string[];
      out.push(...ks.map((k) => n.addr + " " + k));
    }
    return out.sort();
  };
  const before = await keys();
  const t = await emq.runProbes(c);
  const total = wire.PROBES.reduce((n, p) => n + p.steps.length, 0);
  assert.equal(t.results.length, total);
  assert.equal(t.passed, total, t.lines().join("\n"));
  assert.deepEqual(await keys(), before);
});

test("a pipeline across slots goes to each slot's node; get reads a row and its sets in one round trip", async () => {
  const c = await open();
  const qs: emq.Queue[] = [];
  for (const n of cl.nodes) {
    const q = c.queue(await queueOn(n, "pipe"));
    for (let i = 0; i <= qs.length; i++) {
      assert.equal(await q.push(c.mint(), "x"), true);
    }
    qs.push(q);
  }
  const res = await c.adapter.sendMany(
    qs.map((q) => ["ZCARD", q.keys.pending]),
  );
  assert.deepEqual(
    res.map((r) => (r.ok ? Number(r.value) : -1)),
    [1, 2, 3],
  );
  const id = c.mint();
  await qs[2]!.push(id, "read me");
  const info = await qs[2]!.get(id);
  assert.ok(info !== null);
  assert.equal(info.state, emq.STATE_PENDING);
  assert.equal(info.payload.toString(), "read me");
});

test("NOSCRIPT is per node: after SCRIPT FLUSH on every node the calls run with EVAL and load again", async () => {
  const c = await open();
  const q = c.queue(await queueOn(cl.nodes[1]!, "noscript"));
  await roundTrip(c, q, 1);
  for (const n of cl.nodes) {
    await n.cmd("SCRIPT", "FLUSH");
  }
  const before = await cl.nodes[1]!.errorCount("NOSCRIPT");
  await roundTrip(c, q, 2);
  assert.ok((await cl.nodes[1]!.errorCount("NOSCRIPT")) > before);
});

test("a worker on the cluster runs every job once, woken by the doorbell on the queue's node", async () => {
  const tally = new emq.Tally();
  const c = await open({ metrics: tally });
  const q = c.queue(await queueOn(cl.nodes[2]!, "worker"));
  const seen = new Map<string, number>();
  const w = new emq.Worker(
    q,
    async (job) => {
      seen.set(job.id, (seen.get(job.id) ?? 0) + 1);
    },
    { concurrency: 4, waitMs: 10000, logger: silent },
  );
  const running = w.run();
  try {
    await new Promise((r) => setTimeout(r, 200));
    const t0 = Date.now();
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      ids.push(c.mint());
    }
    for (const id of ids) {
      await q.push(id, "w");
    }
    await until("all done", () => tally.get("completed") === 30);
    assert.ok(Date.now() - t0 < 5000, "woken by the bell, not the 10 s wait");
  } finally {
    w.stop();
    await running;
  }
  assert.equal(seen.size, 30);
  assert.ok([...seen.values()].every((n) => n === 1));
});

test("a job cancelled from another client aborts its handler on the cluster: the worker listens on the queue's node (sharded pub/sub)", async () => {
  const tally = new emq.Tally();
  const c = await open({ metrics: tally });
  const other = await open();
  const q = c.queue(await queueOn(cl.nodes[1]!, "cancel"));
  let started!: () => void;
  const running = new Promise<void>((r) => (started = r));
  let aborted!: (why: unknown) => void;
  const reason = new Promise<unknown>((r) => (aborted = r));
  const w = new emq.Worker(
    q,
    async (_job, signal) => {
      signal.addEventListener("abort", () => aborted(signal.reason));
      started();
      await reason;
    },
    { concurrency: 1, leaseMs: 60000, logger: silent },
  );
  const run = w.run();
  try {
    const id = c.mint();
    await q.push(id, "p");
    await running;
    const t0 = performance.now();
    assert.deepEqual(await other.queue(q.name).cancelIds([id]), [
      { cancelled: true, state: emq.STATE_ACTIVE },
    ]);
    const why = await reason;
    console.log(
      "cluster: cancel to abort latency " +
        (performance.now() - t0).toFixed(2) +
        " ms",
    );
    assert.ok(why instanceof emq.CancelledError, String(why));
    await until("counted cancelled", () => tally.get("cancelled") === 1);
  } finally {
    w.stop();
    await run;
  }
  assert.equal(tally.get("retried"), 0);
  assert.equal(tally.get("stale"), 0);
});

test("after the queue's slot moved, calls meet MOVED and follow it; a worker blocked on the old node is woken on the new one", async () => {
  const tally = new emq.Tally();
  const c = await open({ metrics: tally });
  const from = cl.nodes[0]!;
  const to = cl.nodes[1]!;
  const q = c.queue(await queueOn(from, "moved"));
  const slot = await slotOf(q);
  const early: string[] = [];
  for (let i = 0; i < 5; i++) {
    early.push(c.mint());
    assert.equal(await q.push(early[i]!, "e"), true);
  }
  // Jobs due in an hour keep keys in the slot to migrate (the schedule
  // and their rows) after the others completed.
  for (let i = 0; i < 3; i++) {
    assert.equal(
      await q.enqueueAt(c.mint(), "later", Date.now() + 3600000),
      true,
    );
  }
  const seen = new Map<string, number>();
  const w = new emq.Worker(
    q,
    async (job) => {
      seen.set(job.id, (seen.get(job.id) ?? 0) + 1);
    },
    { concurrency: 2, waitMs: 20000, logger: silent },
  );
  const running = w.run();
  try {
    await until("the early jobs", () => tally.get("completed") === 5);
    // The worker is idle now, blocked on the doorbell on from.
    await new Promise((r) => setTimeout(r, 200));
    const movedBefore = await from.errorCount("MOVED");
    const keys = await cl.migrateSlot(slot, to, { batch: 2 });
    // The schedule and three rows (and the doorbell's marker, if rung).
    assert.ok(keys >= 4, String(keys));
    assert.equal(
      await to.cmd("CLUSTER", "COUNTKEYSINSLOT", String(slot)),
      keys,
    );
    const t0 = Date.now();
    const late: string[] = [];
    for (let i = 0; i < 5; i++) {
      late.push(c.mint());
      assert.equal(await q.push(late[i]!, "l"), true);
    }
    await until("the late jobs", () => tally.get("completed") === 10);
    assert.ok(
      Date.now() - t0 < 10000,
      "the blocked pop was redirected, not left to its 20 s wait",
    );
    assert.ok((await from.errorCount("MOVED")) > movedBefore, "MOVED was met");
  } finally {
    w.stop();
    await running;
  }
  assert.equal(seen.size, 10);
  assert.ok([...seen.values()].every((n) => n === 1));
  assert.equal(await to.cmd("ZCARD", q.keys.pending), 0);
  assert.equal(await from.cmd("CLUSTER", "COUNTKEYSINSLOT", String(slot)), 0);
});

test("while the slot is split by a batched migration, ASK is followed and TRYAGAIN resent until the slot settles", async () => {
  const c = await open();
  const from = cl.nodes[2]!;
  const to = cl.nodes[0]!;
  const q = c.queue(await queueOn(from, "split"));
  const slot = await slotOf(q);
  const ids: string[] = [];
  for (let i = 0; i < 20; i++) {
    ids.push(c.mint());
    assert.equal(await q.push(ids[i]!, "s" + i), true);
  }
  const held = await q.claim(60000);
  assert.ok(held !== null);
  const askBefore = await from.errorCount("ASK");
  const tryBefore = await from.errorCount("TRYAGAIN");
  const settled: Promise<unknown>[] = [];
  let asked = false;
  await cl.migrateSlot(slot, to, {
    batch: 4,
    afterBatch: async (moved) => {
      if (moved === 4) {
        // Some rows moved, the sets not: a script's keys are on both
        // sides (TRYAGAIN); a moved row is read on to (ASK). get reads the
        // row and runs the failures script (its keys on both sides) in
        // one round trip: it completes once the slot settles.
        const row = (await to.cmd(
          "CLUSTER",
          "GETKEYSINSLOT",
          String(slot),
          "1",
        )) as string[];
        const id = row[0]!.slice(q.keys.rowPrefix.length);
        settled.push(q.push(c.mint(), "during"));
        settled.push(q.complete(held.id, held.token));
        settled.push(
          q.get(id).then((info) => {
            asked = info !== null && info.id === id;
          }),
        );
        // Let the resends meet the split before the rest moves.
        await new Promise((r) => setTimeout(r, 300));
      }
    },
  });
  const res = await Promise.allSettled(settled);
  assert.deepEqual(
    res.map((r) => r.status),
    ["fulfilled", "fulfilled", "fulfilled"],
    JSON.stringify(res),
  );
  assert.equal((res[0] as PromiseFulfilledResult<boolean>).value, true);
  assert.ok(asked, "a moved row was read through ASK");
  assert.ok((await from.errorCount("ASK")) > askBefore, "ASK was met");
  assert.ok(
    (await from.errorCount("TRYAGAIN")) > tryBefore,
    "TRYAGAIN was met and resent",
  );
  // Nothing was lost: the 19 left pending and the one pushed during the
  // migration are all there, on to.
  const sizes = await q.sizes();
  assert.deepEqual(sizes, { pending: 20, active: 0, schedule: 0, dead: 0 });
  let n = 0;
  for (;;) {
    const j = await q.claim(60000);
    if (j === null) {
      break;
    }
    await q.complete(j.id, j.token);
    n++;
  }
  assert.equal(n, 20);
});

test("TRYAGAIN past its budget is a retryable ConnectionError, and nothing is written", async () => {
  const c = await open({}, { tryAgainMs: 150 });
  const from = cl.nodes[1]!;
  const to = cl.nodes[2]!;
  const q = c.queue(await queueOn(from, "budget"));
  const slot = await slotOf(q);
  assert.equal(await q.push(c.mint(), "x"), true);
  const s = String(slot);
  await to.cmd("CLUSTER", "SETSLOT", s, "IMPORTING", from.id);
  await from.cmd("CLUSTER", "SETSLOT", s, "MIGRATING", to.id);
  let rowId = "";
  try {
    const id = c.mint();
    const t0 = Date.now();
    await assert.rejects(
      q.enqueue(id, "split"),
      (err: unknown) =>
        err instanceof emq.ConnectionError &&
        err.retryable &&
        err.code === emq.CONNECTION_ERROR_CODE &&
        /TRYAGAIN/.test(err.message),
    );
    assert.ok(Date.now() - t0 >= 150);
    rowId = id;
  } finally {
    await to.cmd("CLUSTER", "SETSLOT", s, "STABLE");
    await from.cmd("CLUSTER", "SETSLOT", s, "STABLE");
    await cl.waitAgreed();
  }
  // Asked only now: a node answers ASK for a missing key of a migrating slot.
  assert.equal(await from.cmd("EXISTS", q.keys.row(rowId)), 0);
  assert.equal(await from.cmd("ZCARD", q.keys.pending), 1);
  assert.equal(await q.push(c.mint(), "after"), true);
});

test("after the nodes' connections are killed the client fences again: a foreign major planted meanwhile refuses the next push, and nothing is written", async () => {
  const c = await open();
  const q = c.queue(await queueOn(cl.nodes[0]!, "refence"));
  assert.equal(await q.push(c.mint(), "before"), true);
  const g = c.adapter.generation;
  for (const n of cl.nodes) {
    await n.cmd("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
  }
  await until("reconnected", () => c.adapter.generation > g);
  // Fenced again on the fresh connections: pushes go on.
  await until("a push after the kill", async () => {
    try {
      return await q.push(c.mint(), "after");
    } catch {
      return false;
    }
  });
  const reserve = await cl.owner(await cl.keySlot(wire.KEY_VERSION));
  const mine = String(await reserve.cmd("GET", wire.KEY_VERSION));
  const foreign =
    wire.VERSION_RECORD_PREFIX + (wire.VERSION_MAJOR + 1) + ".0.0";
  const g2 = c.adapter.generation;
  await reserve.cmd("SET", wire.KEY_VERSION, foreign);
  for (const n of cl.nodes) {
    await n.cmd("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
  }
  await until("reconnected again", () => c.adapter.generation > g2);
  const pending = Number(await cl.nodes[0]!.cmd("ZCARD", q.keys.pending));
  let refused: unknown;
  await until("the fence's refusal", async () => {
    try {
      await q.push(c.mint(), "foreign");
      return false;
    } catch (err) {
      refused = err;
      return err instanceof emq.FenceError;
    }
  });
  assert.ok(refused instanceof emq.FenceError && refused.found === foreign);
  assert.equal(
    Number(await cl.nodes[0]!.cmd("ZCARD", q.keys.pending)),
    pending,
  );
  await reserve.cmd("SET", wire.KEY_VERSION, mine);
});

test("a call that found its node's connection down waits for it and succeeds: claim and complete right after the connections are killed", async () => {
  const c = await open();
  const node = cl.nodes[0]!;
  const q = c.queue(await queueOn(node, "offline"));
  const cluster = (c.adapter as emq.ClusterAdapter).cluster;
  const nodeClient = () => {
    const m = cluster.masters.find((m) => m.port === node.port);
    assert.ok(m?.client !== undefined, "no connection to " + node.addr);
    return m.client;
  };
  // Calls that met their node's connection down: most do, but on a loaded
  // machine a "reconnecting" of the step before can be the one awaited,
  // and the client be back by the call; at least one must meet it down.
  let offline = 0;
  for (let round = 0; round < 6; round++) {
    const id = c.mint();
    assert.equal(await q.push(id, "x"), true);
    let job: emq.Job | null = null;
    for (const step of ["claim", "complete"]) {
      const nc = nodeClient();
      const down = new Promise<void>((resolve) => {
        nc.once("reconnecting", () => resolve());
      });
      await node.cmd("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
      await down; // offline now: the call is refused before it is written
      if (!nc.isReady) {
        offline++;
      }
      if (step === "claim") {
        job = await q.claim(60000);
        assert.ok(job !== null, "round " + round);
        assert.equal(job.id, id);
      } else {
        await q.complete(job!.id, job!.token);
      }
    }
    assert.equal(Number(await node.cmd("ZCARD", q.keys.active)), 0);
  }
  assert.ok(offline > 0, "no call met its node's connection down (12 calls)");
});
