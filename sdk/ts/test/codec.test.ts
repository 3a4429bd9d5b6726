// Typed payloads against a real server: a queue with the JSON codec
// pushes values and hands claims, get and the worker the decoded value; a
// value JSON cannot carry is refused before anything is sent; a payload
// that is not JSON is buried by the typed worker without calling the
// handler. Raw queues take Buffer, Uint8Array and string payloads.

import assert from "node:assert/strict";
import { test } from "node:test";
import * as emq from "../src/index.js";
import { RedisServer } from "./redis.js";

const silent: emq.Logger = { debug() {}, info() {}, warn() {}, error() {} };

interface Order {
  sku: string;
  qty: number;
  tags?: string[];
}

async function withClient(
  body: (c: emq.Client, srv: RedisServer) => Promise<void>,
): Promise<void> {
  const srv = await RedisServer.start();
  const c = await emq.connect({ url: srv.url, logger: silent });
  try {
    await body(c, srv);
  } finally {
    await c.close();
    await srv.stop();
  }
}

// Compile-time checks: tsc fails the build if these are not errors.
export function typeChecks(q: emq.TypedQueue<Order>, c: emq.Client): void {
  // @ts-expect-error a string is not an Order
  void q.push(c.mint(), "x");
  // @ts-expect-error qty is a number
  void q.push(c.mint(), { sku: "a", qty: "1" });
  const raw: emq.Queue = c.queue("raw");
  void raw.push(c.mint(), Buffer.from("b"));
  void raw.push(c.mint(), new Uint8Array([1]));
  void raw.push(c.mint(), "text");
}

test("a JSON-typed queue: push takes the value, claim and get decode it, the payload is its JSON", async () => {
  await withClient(async (c) => {
    const q = c.queue<Order>("orders", { codec: emq.json<Order>() });
    assert.ok(q instanceof emq.TypedQueue);
    assert.equal(q.name, "orders");
    const order: Order = { sku: "A-1", qty: 2, tags: ["gift"] };
    const id = c.mint();
    assert.equal(await q.push(id, order), true);
    const info = await q.get(id);
    assert.ok(info !== null);
    assert.deepEqual(info.data, order);
    assert.equal(info.payload.toString(), JSON.stringify(order));
    const job = await q.claim(60000);
    assert.ok(job !== null);
    assert.equal(job.id, id);
    assert.deepEqual(job.data, order);
    await q.raw.complete(job.id, job.token);
    // pushMany, pushBatch, enqueue: each value encoded.
    const ids = [c.mint(), c.mint(), c.mint()];
    assert.deepEqual(
      await q.pushMany([
        { id: ids[0]!, data: { sku: "m", qty: 1 } },
        { id: ids[1]!, data: { sku: "m", qty: 2 } },
      ]),
      [true, true],
    );
    assert.deepEqual(
      await q.pushBatch([{ id: ids[2]!, data: { sku: "b", qty: 3 } }]),
      [{ enqueued: true }],
    );
    const jobs = await q.claimMany(60000, 10);
    assert.deepEqual(
      jobs.map((j) => j.data.qty),
      [1, 2, 3],
    );
  });
});

test("a value JSON cannot carry is refused with a CodecError, and nothing is sent", async () => {
  await withClient(async (c) => {
    const q = c.queue<unknown>("bad-values", { codec: emq.jsonCodec });
    for (const v of [undefined, () => 1, 10n]) {
      await assert.rejects(
        q.push(c.mint(), v),
        (err: unknown) =>
          err instanceof emq.CodecError &&
          err.message.startsWith("emq: codec: json: "),
      );
    }
    const cyc: Record<string, unknown> = {};
    cyc.self = cyc;
    await assert.rejects(
      q.pushMany([
        { id: c.mint(), data: 1 },
        { id: c.mint(), data: cyc },
      ]),
      (err: unknown) =>
        err instanceof emq.CodecError &&
        /^emq: codec: job 1: json/.test(err.message),
    );
    assert.deepEqual(await q.raw.sizes(), {
      pending: 0,
      active: 0,
      schedule: 0,
      dead: 0,
    });
  });
});

test("the typed worker hands the handler the decoded value, and buries a payload that is not JSON without calling it", async () => {
  await withClient(async (c) => {
    const tally = new emq.Tally();
    const q = c.queue<Order>("typed-worker", { codec: emq.json<Order>() });
    const good = [c.mint(), c.mint(), c.mint()];
    for (const [i, id] of good.entries()) {
      await q.push(id, { sku: "w", qty: i + 1 });
    }
    const bad = c.mint();
    await q.raw.push(bad, "not json {");
    const seen = new Map<string, Order>();
    const ac = new AbortController();
    let buried = false;
    const check = () => {
      if (seen.size === good.length && buried) {
        ac.abort();
      }
    };
    const metrics: emq.Metrics = {
      add(counter, queue, n) {
        tally.add(counter, queue, n);
        if (counter === "buried") {
          buried = true;
          check();
        }
      },
    };
    const w = q.worker(
      async (job) => {
        seen.set(job.id, job.data);
        check();
      },
      { logger: silent, metrics, maxAttempts: 5 },
    );
    await w.run(ac.signal);
    assert.deepEqual(
      good.map((id) => seen.get(id)?.qty),
      [1, 2, 3],
    );
    assert.equal(seen.has(bad), false, "the handler ran on the bad payload");
    assert.deepEqual(await q.raw.head(emq.SET_DEAD, 10), [bad]);
    assert.equal(tally.get("buried"), 1);
  });
});

test("a raw queue takes Buffer, Uint8Array and string payloads and claims them as Buffers", async () => {
  await withClient(async (c) => {
    const q = c.queue("raw-payloads");
    const payloads: emq.Payload[] = [
      Buffer.from([0, 1, 2]),
      new Uint8Array([250, 251]),
      "héllo",
    ];
    for (const p of payloads) {
      await q.push(c.mint(), p);
    }
    const jobs = await q.claimMany(60000, 10);
    assert.deepEqual(
      jobs.map((j) => [...j.payload]),
      [[0, 1, 2], [250, 251], [...Buffer.from("héllo")]],
    );
    assert.ok(jobs.every((j) => Buffer.isBuffer(j.payload)));
  });
});
