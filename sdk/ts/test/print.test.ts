// Printing: console.log (util.inspect) and JSON.stringify of a Tally, the
// sizes, a JobInfo, a claimed Job (from claim and in a worker's handler) and
// a typed job show what they hold: counts by name, payloads as text (or
// their size), times as dates; and the records still compare as plain
// objects.

import assert from "node:assert/strict";
import { test } from "node:test";
import { inspect } from "node:util";
import * as emq from "../src/index.js";
import { RedisServer } from "./redis.js";

const silent: emq.Logger = { debug() {}, info() {}, warn() {}, error() {} };

test("a Tally prints its totals by name, and writes them as JSON", () => {
  const t = new emq.Tally();
  t.add("enqueued", "q", 2);
  t.add("completed", "q", 1);
  const shown = inspect(t);
  assert.match(shown, /^Tally \{/);
  assert.match(shown, /enqueued: 2/);
  assert.match(shown, /completed: 1/);
  assert.deepEqual(JSON.parse(JSON.stringify(t)), t.snapshot());
  assert.equal(JSON.parse(JSON.stringify({ t })).t.enqueued, 2);
});

test("sizes, a JobInfo, a Job and a typed job print their fields, payloads as text, times as dates", async () => {
  const srv = await RedisServer.start();
  const c = await emq.connect({ url: srv.url, logger: silent });
  try {
    const q = c.queue("print");
    const id = c.mint();
    await q.push(id, "hello");
    const bin = c.mint();
    await q.push(bin, Buffer.from([0, 159, 146, 150]));
    const long = c.mint();
    await q.push(long, "x".repeat(500));

    const sizes = await q.sizes();
    assert.match(inspect(sizes), /pending: 3/);
    assert.equal(JSON.parse(JSON.stringify(sizes)).pending, 3);

    const info = await q.get(id);
    assert.ok(info !== null);
    const shown = inspect(info);
    assert.match(shown, /^JobInfo \{/);
    assert.match(shown, /state: 'pending'/);
    assert.match(shown, /payload: "hello"/);
    assert.doesNotMatch(shown, /<Buffer/);
    assert.deepEqual(JSON.parse(JSON.stringify(info)), {
      id,
      state: "pending",
      attempts: 0,
      payload: "hello",
      failures: [],
      diedAt: null,
      progress: "",
    });
    // Still the plain record it was.
    assert.deepEqual(
      { ...info },
      {
        id,
        state: "pending",
        attempts: 0,
        payload: Buffer.from("hello"),
        failures: [],
        diedAt: null,
        progress: Buffer.alloc(0),
      },
    );
    const b = await q.get(bin);
    assert.match(inspect(b), /payload: <4 bytes>/);
    assert.deepEqual(JSON.parse(JSON.stringify(b)).payload, {
      base64: Buffer.from([0, 159, 146, 150]).toString("base64"),
    });
    assert.match(inspect(await q.get(long)), /… \(500 bytes\)/);

    const job = await q.claim(60000);
    assert.ok(job !== null);
    const js = inspect(job);
    assert.match(js, /^Job \{/);
    assert.match(js, /token: 1/);
    assert.match(js, /deadline: \d{4}-\d\d-\d\dT/);
    const active = await q.get(job.id);
    assert.match(inspect(active), /at: \d{4}-\d\d-\d\dT/);
    assert.equal(JSON.parse(JSON.stringify(job)).deadlineMs, job.deadlineMs);

    // In a worker's handler too.
    let inHandler = "";
    const ac = new AbortController();
    const w = new emq.Worker(
      q,
      async (j) => {
        inHandler = inspect(j);
        ac.abort();
      },
      { logger: silent },
    );
    await w.run(ac.signal);
    assert.match(inHandler, /^Job \{/);

    const tq = c.queue<{ sku: string }>("print-typed", {
      codec: emq.json<{ sku: string }>(),
    });
    await tq.push(c.mint(), { sku: "A-1" });
    const tj = await tq.claim(60000);
    assert.ok(tj !== null);
    const ts = inspect(tj);
    assert.match(ts, /^TypedJob \{/);
    assert.match(ts, /data: \{ sku: 'A-1' \}/);
    assert.deepEqual(JSON.parse(JSON.stringify(tj)).data, { sku: "A-1" });
  } finally {
    await c.close();
    await srv.stop();
  }
});
