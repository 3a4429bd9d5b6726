// Calls across a reconnect, against real servers: a SIGKILL and restart
// with AOF, connections killed under a stream of pushes, an outage, and a
// foreign major planted while the server restarted.

import assert from "node:assert/strict";
import { test } from "node:test";
import * as emq from "../src/index.js";
import { RedisServer } from "./redis.js";

const silent: emq.Logger = { debug() {}, info() {}, warn() {}, error() {} };

async function withServer(
  aof: boolean,
  body: (srv: RedisServer, c: emq.Client) => Promise<void>,
): Promise<void> {
  const srv = await RedisServer.start({ aof });
  const c = await emq.connect({ url: srv.url, logger: silent });
  try {
    await body(srv, c);
  } finally {
    await c.close();
    await srv.stop();
  }
}

function isConnectionError(err: unknown): boolean {
  return (
    err instanceof emq.ConnectionError &&
    err.code === emq.CONNECTION_ERROR_CODE &&
    !(err instanceof emq.FenceError)
  );
}

test("after a SIGKILL and restart (AOF) the first idempotent calls succeed, and the job is there once", async () => {
  await withServer(true, async (srv, c) => {
    const q = c.queue("reconnect");
    assert.equal(await q.push(c.mint(), "before"), true);
    await srv.restart();
    const id = c.mint();
    assert.equal(await q.push(id, "after"), true);
    assert.equal(await srv.cmd("ZCARD", q.keys.pending), 2);
    await srv.restart();
    const sizes = await q.sizes();
    assert.equal(sizes.pending, 2);
    await srv.restart();
    const id2 = c.mint();
    const res = await q.pushBatch([{ id: id2, payload: "batch" }]);
    assert.deepEqual(res, [{ enqueued: true }]);
    await srv.restart();
    assert.equal(await q.enqueue(c.mint(), "enq"), true);
    const info = await q.get(id);
    assert.ok(info !== null);
    assert.equal(info.payload.toString(), "after");
    assert.equal(await srv.cmd("ZCARD", q.keys.pending), 4);
  });
});

test("connections killed under a stream of pushes cost no push an error", async () => {
  await withServer(false, async (srv, c) => {
    const q = c.queue("killed");
    let stop = false;
    let pushed = 0;
    const failures: unknown[] = [];
    const pusher = async () => {
      while (!stop) {
        try {
          await q.push(c.mint(), "x");
        } catch (err) {
          failures.push(err);
        }
        pushed++;
      }
    };
    const pushers = [pusher(), pusher(), pusher()];
    for (let k = 0; k < 10; k++) {
      await new Promise((r) => setTimeout(r, 30));
      await srv.cmd("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
    }
    stop = true;
    await Promise.all(pushers);
    assert.deepEqual(failures, []);
    assert.ok(pushed > 30, "only " + pushed + " pushes ran");
    assert.equal(await srv.cmd("ZCARD", q.keys.pending), pushed);
  });
});

test("during an outage non-idempotent calls fail with a ConnectionError, and the job is as it was", async () => {
  await withServer(true, async (srv, c) => {
    const q = c.queue("outage");
    const id = c.mint();
    await q.push(id, "x");
    const job = await q.claim(60000);
    assert.ok(job !== null);
    await srv.kill();
    const calls: Record<string, () => Promise<unknown>> = {
      complete: () => q.complete(job.id, job.token),
      claim: () => q.claim(60000),
      extend: () => q.extend(job.id, job.token, 60000),
      retry: () => q.retry(job.id, job.token, 0),
      bury: () => q.bury(job.id, job.token),
      revive: () => q.revive(job.id),
      purge: () => q.purge(job.id),
      promote: () => q.promote(),
      reap: () => q.reap(),
    };
    for (const [name, call] of Object.entries(calls)) {
      await assert.rejects(call(), isConnectionError, name);
    }
    // Idempotent calls give up after their bounded resends, typed too.
    await assert.rejects(q.push(c.mint(), "y"), isConnectionError, "push");
    await srv.restart();
    let info: emq.JobInfo | null = null;
    for (let i = 0; i < 100; i++) {
      try {
        info = await q.get(id);
        break;
      } catch (err) {
        assert.ok(isConnectionError(err), String(err));
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    assert.ok(info !== null);
    assert.equal(info.state, "active");
    assert.equal(info.attempts, job.token);
    await q.complete(job.id, job.token);
  });
});

test("a fence that fails in transport is a ConnectionError, never a FenceError", async () => {
  // Connect's fence, against a server that is not there.
  const gone = await RedisServer.start();
  const url = gone.url;
  await gone.stop();
  await assert.rejects(emq.connect({ url, logger: silent }), isConnectionError);
  await withServer(false, async (srv, c) => {
    const q = c.queue("nofence");
    // The connection comes back (the client must fence before its next
    // command), then the server goes away before that fence runs.
    const g = c.adapter.generation;
    await srv.restart();
    for (let i = 0; i < 200 && c.adapter.generation === g; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.notEqual(c.adapter.generation, g, "the client did not reconnect");
    await srv.kill();
    await assert.rejects(c.ensure(), isConnectionError);
    await assert.rejects(q.claim(1000), isConnectionError);
    await srv.restart();
  });
});

test("a foreign major planted during a restart: the first push gets the FenceError and nothing is written", async () => {
  await withServer(true, async (srv, c) => {
    const q = c.queue("planted");
    await q.push(c.mint(), "before");
    await srv.restart();
    const foreign =
      emq.VERSION_RECORD_PREFIX + (emq.VERSION_MAJOR + 1) + ".0.0";
    await srv.cmd("SET", emq.KEY_VERSION, foreign);
    const before = await srv.snapshot();
    await assert.rejects(
      q.push(c.mint(), "foreign"),
      (err: unknown) => err instanceof emq.FenceError && err.found === foreign,
    );
    assert.deepEqual(await srv.snapshot(), before);
  });
});

test("the worker keeps working across a restart", async () => {
  await withServer(true, async (srv, c) => {
    const q = c.queue("worker-restart");
    const seen = new Set<string>();
    const w = new emq.Worker(
      q,
      async (job) => {
        seen.add(job.id);
      },
      { concurrency: 2, waitMs: 200, maintenanceMs: 200, logger: silent },
    );
    const ac = new AbortController();
    const running = w.run(ac.signal);
    const pushSome = async (n: number) => {
      const ids: string[] = [];
      for (let i = 0; i < n; i++) {
        const id = c.mint();
        await q.push(id, "x");
        ids.push(id);
      }
      return ids;
    };
    const waitFor = async (ids: string[], what: string) => {
      for (let i = 0; i < 400; i++) {
        if (ids.every((id) => seen.has(id))) {
          return;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.fail(what + ": not every job was processed");
    };
    await waitFor(await pushSome(5), "before the restart");
    await srv.restart();
    await waitFor(await pushSome(5), "after the restart");
    ac.abort();
    await running;
  });
});
