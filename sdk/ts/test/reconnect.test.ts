// Calls across a reconnect, against real servers: a SIGKILL and restart
// with AOF, connections killed under a stream of pushes, an outage, and a
// foreign major planted while the server restarted.

import assert from "node:assert/strict";
import { test } from "node:test";
import * as emq from "../src/index.js";
import * as wire from "../src/gen/index.js";
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
    // Each waits for the connection within its deadline, then gives up.
    const d = () => ({ deadline: Date.now() + 150 });
    const calls: Record<string, () => Promise<unknown>> = {
      complete: () => q.complete(job.id, job.token, d()),
      claim: () => q.claim(60000, d()),
      extend: () => q.extend(job.id, job.token, 60000, d()),
      retry: () => q.retry(job.id, job.token, 0, d()),
      bury: () => q.bury(job.id, job.token, d()),
      revive: () => q.revive(job.id, d()),
      purge: () => q.purge(job.id, d()),
      promote: () => q.promote(1000, d()),
      reap: () => q.reap(1000, 0, d()),
    };
    for (const [name, call] of Object.entries(calls)) {
      const t0 = Date.now();
      await assert.rejects(call(), isConnectionError, name);
      const took = Date.now() - t0;
      assert.ok(took < 2000, name + " took " + took + " ms");
    }
    // Idempotent calls give up within their bound, typed too.
    await assert.rejects(q.push(c.mint(), "y", d()), isConnectionError, "push");
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
    await assert.rejects(
      c.ensure({ deadline: Date.now() + 150 }),
      isConnectionError,
    );
    await assert.rejects(
      q.claim(1000, { signal: AbortSignal.timeout(150) }),
      isConnectionError,
    );
    await srv.restart();
  });
});

test("a foreign major planted during a restart: the first push gets the FenceError and nothing is written", async () => {
  await withServer(true, async (srv, c) => {
    const q = c.queue("planted");
    await q.push(c.mint(), "before");
    await srv.restart();
    const foreign =
      wire.VERSION_RECORD_PREFIX + (wire.VERSION_MAJOR + 1) + ".0.0";
    await srv.cmd("SET", wire.KEY_VERSION, foreign);
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

test("a coalesced batch cut by a killed connection is resent: every push resolves, each job once", async () => {
  await withServer(false, async (srv, c) => {
    const q = c.queue("batch-killed");
    for (let round = 0; round < 5; round++) {
      const ids = Array.from({ length: 200 }, () => c.mint());
      const all = Promise.all(ids.map((id) => q.push(id, "x")));
      // The batch is on its way (sent after this tick): kill it under way.
      const killed = new Promise((resolve) => {
        setImmediate(() => {
          resolve(srv.cmd("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"));
        });
      });
      const res = await all;
      await killed;
      assert.equal(res.length, 200);
      // A resend of a batch the lost attempt admitted reports duplicates.
      const present = await Promise.all(
        ids.map((id) => srv.cmd("ZSCORE", q.keys.pending, id)),
      );
      assert.ok(
        present.every((s) => s === "0"),
        "every job is pending",
      );
    }
    assert.equal(await srv.cmd("ZCARD", q.keys.pending), 1000);
    // Reconnected before the client closes.
    assert.equal(await q.size(emq.SET_PENDING), 1000);
  });
});

test("a signal or a deadline bounds the resends during an outage", async () => {
  await withServer(false, async (srv, c) => {
    const q = c.queue("bounded");
    await q.push(c.mint(), "warm");
    await srv.kill();
    // Unbounded, the resends take about a second; bounded, a tenth of it.
    const cases: [string, () => Promise<unknown>][] = [
      [
        "push, deadline",
        () => q.push(c.mint(), "x", { deadline: Date.now() + 80 }),
      ],
      [
        "push, signal",
        () => q.push(c.mint(), "x", { signal: AbortSignal.timeout(80) }),
      ],
      [
        "pushMany",
        () =>
          q.pushMany([{ id: c.mint(), payload: "x" }], {
            deadline: Date.now() + 80,
          }),
      ],
      [
        "enqueue",
        () => q.enqueue(c.mint(), "x", { signal: AbortSignal.timeout(80) }),
      ],
      ["sizes", () => q.sizes({ deadline: Date.now() + 80 })],
      ["get", () => q.get(c.mint(), { deadline: Date.now() + 80 })],
      [
        "pushBatch",
        () =>
          q.pushBatch([{ id: c.mint(), payload: "x" }], {
            deadline: Date.now() + 80,
          }),
      ],
    ];
    for (const [name, call] of cases) {
      const t0 = Date.now();
      await assert.rejects(call(), isConnectionError, name);
      const took = Date.now() - t0;
      assert.ok(took < 600, name + " took " + took + " ms");
    }
  });
});

/**
 * The node-redis adapter, but the next script call it is told to lose
 * reaches the server and then fails as if its reply were lost in transport
 * (a timeout on a connection that stays up: no reconnect). It records the
 * commands it passes on.
 */
class LosingAdapter implements emq.RedisAdapter {
  readonly next: emq.RedisAdapter;
  lose = false;
  readonly sent: string[][] = [];

  constructor(next: emq.RedisAdapter) {
    this.next = next;
  }

  get generation(): number {
    return this.next.generation;
  }

  #words(args: readonly emq.RedisArg[]): string[] {
    return args.map((a) => (Buffer.isBuffer(a) ? a.toString() : a));
  }

  async send(args: readonly emq.RedisArg[]): Promise<unknown> {
    this.sent.push(this.#words(args));
    const v = await this.next.send(args);
    if (this.lose && String(args[0]).toUpperCase().startsWith("EVAL")) {
      this.lose = false;
      throw new emq.ConnectionError("the reply was lost (test)");
    }
    return v;
  }

  sendMany(cmds: readonly (readonly emq.RedisArg[])[]): Promise<emq.Settled[]> {
    for (const c of cmds) {
      this.sent.push(this.#words(c));
    }
    return this.next.sendMany(cmds);
  }

  block(
    args: readonly emq.RedisArg[],
    ms: number,
    signal?: AbortSignal,
  ): Promise<unknown> {
    return this.next.block(args, ms, signal);
  }

  close(): Promise<void> {
    return this.next.close();
  }
}

test("after a non-idempotent call failed in transport the client fences before any other command, even on the same connection", async () => {
  const srv = await RedisServer.start();
  const a = new LosingAdapter(
    await emq.NodeRedisAdapter.connect({ url: srv.url }),
  );
  const c = await emq.connect({ adapter: a, logger: silent, node: 7 });
  try {
    const q = c.queue("refence");
    await q.push(c.mint(), "x");
    const job = await q.claimMany(60000, 1);
    assert.equal(job.length, 1);
    const g = a.generation;
    a.lose = true;
    await assert.rejects(
      q.complete(job[0]!.id, job[0]!.token),
      isConnectionError,
    );
    assert.equal(a.generation, g, "no reconnect happened");
    const from = a.sent.length;
    assert.equal(await q.size(emq.SET_ACTIVE), 0, "the complete ran");
    const next = a.sent.slice(from).map((w) => w.slice(0, 2));
    const fence = wire.SCRIPT_FENCE;
    assert.ok(
      next.length >= 2 &&
        ((next[0]![0] === "EVALSHA" && next[0]![1] === fence.sha1) ||
          (next[0]![0] === "EVAL" && next[0]![1] === fence.source)),
      "the first command after the failure is the fence: " +
        JSON.stringify(next.map((w) => [w[0], w[1]!.slice(0, 12)])),
    );
    assert.equal(next[next.length - 1]![0], "ZCARD");
    // Once fenced, no fence again.
    const from2 = a.sent.length;
    await q.size(emq.SET_ACTIVE);
    assert.deepEqual(
      a.sent.slice(from2).map((w) => w[0]),
      ["ZCARD"],
    );
  } finally {
    await c.close();
    await srv.stop();
  }
});
