// The manifest's probes against a real redis-server.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import * as emq from "../src/index.js";
import * as wire from "../src/gen/index.js";
import { RedisServer } from "./redis.js";

let srv: RedisServer;

before(async () => {
  srv = await RedisServer.start();
});

after(async () => {
  await srv?.stop();
});

test("every probe check passes on a fenced keyspace and leaves nothing behind", async () => {
  await srv.cmd("FLUSHALL");
  const c = await emq.connect({ url: srv.url });
  try {
    const before = await srv.snapshot();
    const t = await emq.runProbes(c);
    const total = wire.PROBES.reduce((n, p) => n + p.steps.length, 0);
    assert.equal(t.results.length, total);
    assert.equal(t.passed, total, t.lines().join("\n"));
    assert.ok(t.ok);
    assert.deepEqual(await srv.snapshot(), before);
  } finally {
    await c.close();
  }
});

test("a probe check fails, saying why, on a keyspace another bundle took", async () => {
  await srv.cmd("FLUSHALL");
  const c = await emq.connect({ url: srv.url });
  try {
    await srv.cmd("HSET", wire.KEY_BUNDLE, wire.VERSION, "0".repeat(40));
    const t = await emq.runProbes(c);
    assert.equal(t.ok, false);
    const failed = t.lines().filter((l) => l.startsWith("FAIL"));
    assert.equal(failed.length, 1, failed.join("\n"));
    assert.ok(failed[0]!.includes(wire.BUNDLE_DIGEST));
  } finally {
    await c.close();
  }
});
