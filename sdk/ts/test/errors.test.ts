// One prefix per error message: every error the SDK throws, from real
// calls against a real server (and the constructors fed a message that
// already carries the prefix), reads "emq: ..." once.

import assert from "node:assert/strict";
import { test } from "node:test";
import * as emq from "../src/index.js";
import * as wire from "../src/gen/index.js";
import { RedisServer } from "./redis.js";

const silent: emq.Logger = { debug() {}, info() {}, warn() {}, error() {} };

function once(err: unknown, what: string): Error {
  assert.ok(err instanceof Error, what + ": not an Error: " + String(err));
  const n = err.message.split("emq:").length - 1;
  assert.equal(n, 1, what + ": " + JSON.stringify(err.message));
  assert.ok(err.message.startsWith("emq: "), what + ": " + err.message);
  return err;
}

async function caught(p: Promise<unknown> | (() => unknown)): Promise<unknown> {
  try {
    await (typeof p === "function" ? p() : p);
  } catch (err) {
    return err;
  }
  assert.fail("no error");
}

test("the SDK's error constructors keep one prefix", () => {
  once(new emq.ConnectionError("emq: connection: lost"), "ConnectionError");
  once(new emq.ConnectionError("emq: fence: EOF"), "ConnectionError, fence");
  once(new emq.ArgumentError("emq: invalid argument: x"), "ArgumentError");
  once(new emq.NoNodeError("emq: none"), "NoNodeError");
  once(new emq.NoNodeError(), "NoNodeError default");
  once(new emq.PayloadTooLargeError(10, 5), "PayloadTooLargeError");
  once(new emq.FenceError("x"), "FenceError");
  once(new emq.BundleError("2.2.0", "a", "b"), "BundleError");
  once(new emq.DeadlineError(0), "DeadlineError");
  assert.equal(
    new emq.ConnectionError("emq: connection: lost").message,
    "emq: connection: lost",
  );
});

test("every error of a real call reads with one prefix", async () => {
  const srv = await RedisServer.start();
  const c = await emq.connect({
    url: srv.url,
    logger: silent,
    maxPayload: 16,
  });
  try {
    const q = c.queue("errors");
    const other = new wire.IdGenerator(1).mint(emq.KIND_ORD);
    const errs: [string, unknown][] = [
      ["claim(0)", await caught(q.claim(0))],
      ["queue name", await caught(() => c.queue("bad name {"))],
      ["malformed id", await caught(q.push("nope", "x"))],
      ["payload too large", await caught(q.push(c.mint(), "x".repeat(64)))],
      [
        "pushMany, job 1 malformed",
        await caught(
          q.pushMany([
            { id: c.mint(), payload: "x" },
            { id: "nope", payload: "x" },
          ]),
        ),
      ],
      [
        "pushBatch, job 0 too large",
        await caught(q.pushBatch([{ id: c.mint(), payload: "x".repeat(64) }])),
      ],
      ["kind", await caught(q.enqueue(other, "x"))],
      ["stale", await caught(q.complete(c.mint(), 1))],
      ["deadline", await caught(q.claim(1000, { deadline: 1 }))],
    ];
    const where = errs.find(([w]) => w === "pushMany, job 1 malformed")![1];
    assert.match((where as Error).message, /^emq: job 1: malformed id/);
    assert.ok(errs.find(([w]) => w === "kind")![1] instanceof emq.KindError);
    assert.ok(errs.find(([w]) => w === "stale")![1] instanceof emq.StaleError);
    // Transport: a server that is gone, and a call that waited it out.
    await srv.kill();
    errs.push([
      "offline",
      await caught(q.claim(1000, { deadline: Date.now() + 100 })),
    ]);
    errs.push([
      "connect refused",
      await caught(emq.connect({ url: srv.url, logger: silent })),
    ]);
    errs.push([
      "cluster without nodes",
      await caught(emq.connect({ cluster: { rootNodes: [] }, logger: silent })),
    ]);
    for (const [what, err] of errs) {
      once(err, what);
    }
  } finally {
    await c.close();
    await srv.stop();
  }
});
