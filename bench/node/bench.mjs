// The Node half of the benchmark: the EchoMQ TypeScript SDK and BullMQ,
// side by side, against the redis-server the Go benchmark (bench/) started,
// with the scenarios the Go half runs against asynq:
//
//   1. enqueue, one job per call (N producers)
//   2. enqueue, batched (pushBatch / addBulk)
//   3. drain a pre-filled queue
//   4. enqueue and process at once
//   5. enqueue -> handler start on an idle worker (p50, p99)
//   6. Redis CPU per job (INFO cpu) over scenario 4
//
// It prints one JSON document on stdout; bench/ turns it into rows of its
// table. Run it through the Go benchmark (cd bench && go run .), or alone:
//
//   node bench.mjs --addr 127.0.0.1:6379 [--jobs 20000] [--quick]
import IORedis from "ioredis";
import { parseArgs } from "node:util";
import { BullMQSide } from "./bullmq-side.mjs";
import { EmqSide } from "./emq-side.mjs";

const { values: opt } = parseArgs({
  options: {
    addr: { type: "string" },
    jobs: { type: "string", default: "20000" },
    producers: { type: "string", default: "8" },
    concurrency: { type: "string", default: "50" },
    batch: { type: "string", default: "100" },
    runs: { type: "string", default: "3" },
    "latency-samples": { type: "string", default: "300" },
    "latency-budget-ms": { type: "string", default: "8000" },
    sides: { type: "string", default: "emq,bullmq" },
    quick: { type: "boolean", default: false },
  },
});
if (!opt.addr) {
  console.error("bench.mjs: --addr HOST:PORT is required (the Go benchmark passes the server it started)");
  process.exit(2);
}
const cfg = {
  jobs: Number(opt.jobs),
  producers: Number(opt.producers),
  concurrency: Number(opt.concurrency),
  batch: Number(opt.batch),
  runs: Number(opt.runs),
  latencySamples: Number(opt["latency-samples"]),
  latencyBudgetMs: Number(opt["latency-budget-ms"]),
};
if (opt.quick) {
  cfg.jobs = Math.min(cfg.jobs, 2000);
  cfg.runs = 1;
  cfg.latencySamples = Math.min(cfg.latencySamples, 50);
  cfg.latencyBudgetMs = Math.min(cfg.latencyBudgetMs, 2000);
}

const payload = "x".repeat(64);
const [host, port] = [opt.addr.slice(0, opt.addr.lastIndexOf(":")), Number(opt.addr.slice(opt.addr.lastIndexOf(":") + 1))];
const admin = new IORedis({ host, port, lazyConnect: true });
await admin.connect();

async function reset() {
  await admin.flushall();
}

async function serverCPU() {
  const info = await admin.info("cpu");
  const get = (k) => Number((info.match(new RegExp(`^${k}:([0-9.]+)`, "m")) ?? [])[1] ?? 0);
  return get("used_cpu_sys") + get("used_cpu_user");
}

// produce enqueues n jobs from `producers` concurrent loops, in chunks of
// `chunk` (one call per job unless batched).
async function produce(side, n, producers, batched, chunk) {
  let next = 0;
  const loop = async () => {
    for (;;) {
      const start = next;
      if (start >= n) return;
      const count = Math.min(chunk, n - start);
      next += count;
      if (batched) {
        await side.enqueueBatch(Array.from({ length: count }, () => payload));
      } else {
        for (let i = 0; i < count; i++) await side.enqueue(payload);
      }
    }
  };
  await Promise.all(Array.from({ length: producers }, loop));
}

function counter(target) {
  let seen = 0;
  let resolve;
  const done = new Promise((r) => (resolve = r));
  return {
    handle() {
      if (++seen === target) resolve();
    },
    wait(ms) {
      return Promise.race([
        done,
        new Promise((_, reject) => setTimeout(() => reject(new Error(`only ${seen} of ${target} jobs processed within ${ms} ms`)), ms).unref()),
      ]);
    },
  };
}

async function session(side, fn) {
  await reset();
  await side.open(opt.addr, cfg.concurrency);
  try {
    return await fn();
  } finally {
    await side.close();
  }
}

async function window(fn, jobs) {
  const cpu0 = await serverCPU();
  const t0 = process.hrtime.bigint();
  await fn();
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = (await serverCPU()) - cpu0;
  return { jobs, seconds: secs, jobs_per_s: jobs / secs, server_cpu_us_per_job: (cpu * 1e6) / jobs };
}

const timeout = (jobs) => 60000 + jobs * 2;

const scenarios = {
  async enqueue_one(side) {
    return session(side, () => window(() => produce(side, cfg.jobs, cfg.producers, false, 64), cfg.jobs));
  },
  async enqueue_batched(side) {
    return session(side, () => window(() => produce(side, cfg.jobs, cfg.producers, true, cfg.batch), cfg.jobs));
  },
  async drain(side) {
    return session(side, async () => {
      await produce(side, cfg.jobs, cfg.producers, true, cfg.batch);
      const c = counter(cfg.jobs);
      let stop;
      const m = await window(async () => {
        stop = await side.startWorker(c.handle);
        await c.wait(timeout(cfg.jobs));
      }, cfg.jobs);
      await stop();
      return m;
    });
  },
  async enqueue_process(side) {
    return session(side, async () => {
      const c = counter(cfg.jobs);
      let stop;
      const m = await window(async () => {
        stop = await side.startWorker(c.handle);
        await Promise.all([produce(side, cfg.jobs, cfg.producers, false, 64), c.wait(timeout(cfg.jobs))]);
      }, cfg.jobs);
      await stop();
      return m;
    });
  },
  async latency(side) {
    return session(side, async () => {
      let got;
      const stop = await side.startWorker((p) => {
        const sent = Number(p);
        if (Number.isFinite(sent) && got) got(performance.timeOrigin + performance.now() - sent);
      });
      await sleep(300);
      const ds = [];
      const start = Date.now();
      while (ds.length < cfg.latencySamples && Date.now() - start < cfg.latencyBudgetMs) {
        await sleep(2 + Math.random() * 6);
        const arrived = new Promise((resolve, reject) => {
          got = resolve;
          setTimeout(() => reject(new Error("a latency sample was not handled within 30 s")), 30000).unref();
        });
        await side.enqueue(String(performance.timeOrigin + performance.now()));
        ds.push(await arrived);
        got = undefined;
      }
      await stop();
      ds.sort((a, b) => a - b);
      const q = (f) => ds[Math.min(ds.length - 1, Math.floor(f * ds.length))];
      return { samples: ds.length, p50_ms: q(0.5), p99_ms: q(0.99), max_ms: ds[ds.length - 1], budget: `${cfg.latencySamples} samples or ${cfg.latencyBudgetMs} ms` };
    });
  },
};

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function median(runs) {
  const sorted = [...runs].sort((a, b) => a.jobs_per_s - b.jobs_per_s);
  return { ...sorted[Math.floor(sorted.length / 2)], runs: runs.map((r) => Math.round(r.jobs_per_s)) };
}

const sides = { emq: () => new EmqSide(), bullmq: () => new BullMQSide() };
const out = { node: process.version, config: cfg, versions: {}, results: {} };
for (const name of opt.sides.split(",")) {
  const side = sides[name]();
  out.versions[name] = await side.version?.();
  out.results[name] = {};
  for (const [scenario, run] of Object.entries(scenarios)) {
    if (scenario === "latency") {
      out.results[name][scenario] = await run(side);
      continue;
    }
    const runs = [];
    for (let i = 0; i < cfg.runs; i++) runs.push(await run(side));
    out.results[name][scenario] = median(runs);
    process.stderr.write(`bench.mjs: ${name} ${scenario}: ${Math.round(out.results[name][scenario].jobs_per_s)} jobs/s\n`);
  }
}
await admin.quit();
process.stdout.write(JSON.stringify(out, null, 2) + "\n");
