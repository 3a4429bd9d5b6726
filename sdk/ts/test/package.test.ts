// The package as npm ships it: npm pack of the SDK (its ESM build, the
// CommonJS half tools/build-cjs.mjs makes, as prepack would), installed from
// the tarball into a clean project (node-redis from the npm cache, or the
// registry), then consumers compiled with tsc against the installed package
// and run against a real redis-server: an ESM consumer with the tsconfig the
// README documents, a CommonJS consumer (module node16 in a "type":
// "commonjs" folder, and a plain require() script), and the README's
// TypeScript blocks, verbatim. The wire layer is imported from its subpath,
// "@echomq/sdk/wire" (and its older name "@echomq/sdk/gen", the same
// module); the root exports none of its plumbing, and what is @internal
// (new Client, its repair hooks) does not compile. The tarball ships no
// conformance testee, and every map it ships resolves to sources it ships.

import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { QueueKeys } from "../src/gen/index.js";
import { RedisServer } from "./redis.js";

/** sdk/ts, from dist/test. */
const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const tsc = join(pkgDir, "node_modules", "typescript", "bin", "tsc");
const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")) as {
  name: string;
  devDependencies: Record<string, string>;
};

/** The fenced blocks of the README, by their info string, in order. */
function readmeBlocks(lang: string): string[] {
  const md = readFileSync(join(pkgDir, "README.md"), "utf8");
  const out: string[] = [];
  const re = /^```(\S*)\n([\s\S]*?)^```$/gm;
  for (const m of md.matchAll(re)) {
    if (m[1] === lang) {
      out.push(m[2]!);
    }
  }
  return out;
}

/** The tsconfig the README documents for a consumer (ESM, NodeNext). */
const readmeTsconfigs = readmeBlocks("json");
assert.equal(readmeTsconfigs.length, 1, "the README's tsconfig block");
const consumerTsconfig = JSON.parse(readmeTsconfigs[0]!) as {
  compilerOptions: Record<string, unknown>;
};

let work = "";
let tarball = "";
let project = "";
let srv: RedisServer;

function run(
  cmd: string,
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): string {
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: "utf8",
    env: { ...process.env, ...env },
    timeout: 240000,
  });
  if (r.error !== undefined || r.status !== 0) {
    assert.fail(
      [cmd, ...args].join(" ") +
        " in " +
        cwd +
        " failed (" +
        String(r.error ?? r.status) +
        "):\n" +
        r.stdout +
        r.stderr,
    );
  }
  return r.stdout;
}

before(async () => {
  srv = await RedisServer.start();
  work = mkdtempSync(join(tmpdir(), "emq-pack-"));
  // A copy of the package with the ESM build this run compiled; the
  // CommonJS half is built in it as prepack does.
  const stage = join(work, "stage");
  mkdirSync(stage);
  for (const f of ["package.json", "README.md", "LICENSE", "src", "tools"]) {
    if (existsSync(join(pkgDir, f))) {
      cpSync(join(pkgDir, f), join(stage, f), { recursive: true });
    }
  }
  cpSync(join(pkgDir, "dist", "src"), join(stage, "dist", "src"), {
    recursive: true,
  });
  symlinkSync(join(pkgDir, "node_modules"), join(stage, "node_modules"));
  run(process.execPath, ["tools/build-cjs.mjs"], stage);
  const out = run(
    "npm",
    ["pack", "--ignore-scripts", "--json", "--pack-destination", work],
    stage,
  );
  const packed = JSON.parse(out) as { filename: string }[];
  tarball = join(work, packed[0]!.filename);
  assert.ok(
    readmeBlocks("sh").some((b) => b.includes(packed[0]!.filename)),
    "the README's install names another tarball than " + packed[0]!.filename,
  );
  project = join(work, "consumer");
  mkdirSync(project);
  writeFileSync(
    join(project, "package.json"),
    JSON.stringify({ name: "consumer", private: true, type: "module" }),
  );
  run(
    "npm",
    [
      "install",
      "--prefer-offline",
      "--no-audit",
      "--no-fund",
      "--loglevel=error",
      tarball,
      "@types/node@" + pkg.devDependencies["@types/node"],
    ],
    project,
  );
});

after(async () => {
  await srv?.stop();
  if (work !== "") {
    rmSync(work, { recursive: true, force: true });
  }
});

test("the tarball ships the builds and the sources its maps name, and no testee", () => {
  const files = execFileSync("tar", ["-tzf", tarball], { encoding: "utf8" })
    .split("\n")
    .filter((f) => f !== "")
    .map((f) => f.replace(/^package\//, ""));
  const have = new Set(files);
  for (const f of [
    "package.json",
    "dist/src/index.js",
    "dist/src/index.d.ts",
    "dist/cjs/index.js",
    "dist/cjs/index.d.ts",
    "dist/cjs/package.json",
  ]) {
    assert.ok(have.has(f), f + " is not in the tarball");
  }
  assert.ok(have.has("README.md"), "README.md is not in the tarball");
  assert.ok(have.has("LICENSE"), "LICENSE is not in the tarball");
  for (const f of files) {
    assert.ok(!/conformance|testee|(^|\/)test\//.test(f), f + " is shipped");
  }
  // Every map points at files the tarball has: the .js maps and the .d.ts
  // maps (go-to-definition) of the ESM build, each at its source under src/.
  const installed = join(project, "node_modules", ...pkg.name.split("/"));
  const maps = files.filter((f) => f.endsWith(".map"));
  for (const f of [
    "dist/src/index.js.map",
    "dist/src/index.d.ts.map",
    "dist/src/gen/index.d.ts.map",
  ]) {
    assert.ok(have.has(f), f + " is not in the tarball");
  }
  for (const f of maps) {
    const map = JSON.parse(readFileSync(join(installed, f), "utf8")) as {
      sources: string[];
    };
    assert.ok(map.sources.length > 0, f + " names no source");
    for (const s of map.sources) {
      const target = join(dirname(f), s);
      assert.ok(have.has(target), f + " points at " + target + ": not shipped");
      assert.ok(
        existsSync(join(installed, target)),
        f + " points at " + target + ": not installed",
      );
    }
  }
});

/**
 * The ESM consumer project, compiled once with the README's tsconfig: a
 * consumer of its own (src/main.ts) and the README's ts blocks, verbatim
 * (src/block<i>.ts).
 */
let esmDir = "";
function esmProject(): string {
  if (esmDir !== "") {
    return esmDir;
  }
  const dir = join(project, "esm");
  mkdirSync(join(dir, "src"), { recursive: true });
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({ ...consumerTsconfig, include: ["src"] }),
  );
  writeFileSync(
    join(dir, "src", "main.ts"),
    `import { connect, Worker, type Job } from "${pkg.name}";
import { QueueKeys, SCRIPTS, VERSION } from "${pkg.name}/wire";
import * as gen from "${pkg.name}/gen";

const client = await connect({ url: process.env.REDIS_URL });
const q = client.queue("esm-consumer");
const id = client.mint();
await q.push(id, "hello from esm");
const ac = new AbortController();
let seen: Job | undefined;
const w = new Worker(q, async (job) => {
  seen = job;
  ac.abort();
});
await w.run(ac.signal);
await client.close();
if (seen?.id !== id) {
  throw new Error("the job was not processed");
}
if (gen.QueueKeys !== QueueKeys || gen.SCRIPTS !== SCRIPTS) {
  throw new Error("@echomq/sdk/gen is not the module @echomq/sdk/wire is");
}
console.log("processed " + seen.payload.toString() + " at " + VERSION);
console.log("pending key " + new QueueKeys("esm-consumer").pending);
`,
  );
  // What the package keeps to itself does not compile: each line below is
  // an error, or tsc reports its unused @ts-expect-error.
  writeFileSync(
    join(dir, "src", "internal.ts"),
    `import * as root from "${pkg.name}";
import { Client, type RedisAdapter, type Logger } from "${pkg.name}";

export function refused(c: Client, a: RedisAdapter, l: Logger): unknown[] {
  return [
    // @ts-expect-error: the wire layer is at ${pkg.name}/wire, not the root
    root.QueueKeys,
    // @ts-expect-error: the wire layer is at ${pkg.name}/wire, not the root
    root.SCRIPTS,
    // @ts-expect-error: a client comes from connect(), fenced and holding a node
    new Client(a, {}, l),
    // @ts-expect-error: @internal (connect({ node }) fixes the node)
    c.fixNode(1),
    // @ts-expect-error: @internal
    Client.open(a, {}, l),
    // @ts-expect-error: @internal
    c.resend(async () => 1),
    // @ts-expect-error: @internal
    c.runner,
  ];
}
`,
  );
  readmeBlocks("ts").forEach((b, i) =>
    writeFileSync(join(dir, "src", "block" + i + ".ts"), b),
  );
  run(process.execPath, [tsc, "-p", "tsconfig.json"], dir);
  esmDir = dir;
  return dir;
}

test("an ESM consumer compiles with the README's tsconfig and pushes and processes a job", () => {
  const dir = esmProject();
  const out = run(process.execPath, [join("dist", "main.js")], dir, {
    REDIS_URL: srv.url,
  });
  assert.match(out, /processed hello from esm at \d+\.\d+\.\d+/);
  assert.match(out, /pending key \S*esm-consumer/);
});

test("a CommonJS consumer: tsc with module node16 and a require() script both work", () => {
  const dir = join(project, "cjs");
  mkdirSync(join(dir, "src"), { recursive: true });
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({ type: "commonjs" }),
  );
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        ...consumerTsconfig.compilerOptions,
        module: "Node16",
        moduleResolution: "Node16",
      },
      include: ["src"],
    }),
  );
  writeFileSync(
    join(dir, "src", "main.ts"),
    `import { connect, Worker, ConnectionError } from "${pkg.name}";

async function main(): Promise<void> {
  const client = await connect({ url: process.env.REDIS_URL });
  const q = client.queue("cjs-consumer");
  const id = client.mint();
  await q.push(id, "hello from cjs");
  const ac = new AbortController();
  let got = "";
  const w = new Worker(q, async (job) => {
    got = job.id + " " + job.payload.toString();
    ac.abort();
  });
  await w.run(ac.signal);
  await client.close();
  if (got !== id + " hello from cjs") {
    throw new Error("the job was not processed: " + got);
  }
  console.log("processed " + got, typeof ConnectionError);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
`,
  );
  run(process.execPath, [tsc, "-p", "tsconfig.json"], dir);
  const js = readFileSync(join(dir, "dist", "main.js"), "utf8");
  assert.match(js, /require\("@echomq\/sdk"\)/, "tsc did not emit a require");
  const out = run(process.execPath, [join("dist", "main.js")], dir, {
    REDIS_URL: srv.url,
  });
  assert.match(out, /processed .* hello from cjs function/);
  // A plain script, no TypeScript: require() gets the CommonJS build.
  writeFileSync(
    join(dir, "plain.js"),
    `const emq = require("${pkg.name}");
const wire = require("${pkg.name}/wire");
const gen = require("${pkg.name}/gen");
if (
  typeof emq.connect !== "function" ||
  typeof wire.VERSION !== "string" ||
  gen !== wire ||
  "VERSION" in emq
) {
  throw new Error("the CommonJS build is incomplete");
}
emq.connect({ url: process.env.REDIS_URL }).then(async (c) => {
  const q = c.queue("cjs-plain");
  await q.push(c.mint(), "x");
  console.log("pending " + (await q.size(emq.SET_PENDING)));
  await c.close();
});
`,
  );
  const plain = run(process.execPath, ["plain.js"], dir, {
    REDIS_URL: srv.url,
  });
  assert.match(plain, /pending 1/);
});

test("the README's blocks run verbatim against a real server: the quickstart, the worker stopped by SIGTERM, why a job failed, results and events, deduplication and cancellation, schedulers, pausing and capping a queue, the wire layer from its subpath, the CommonJS snippet", async () => {
  const ts = readmeBlocks("ts");
  const js = readmeBlocks("js");
  assert.equal(ts.length, 8, "the README's ts blocks");
  assert.equal(js.length, 1, "the README's js blocks");
  const dir = esmProject();
  writeFileSync(join(dir, "block.cjs"), js[0]!);
  const env = { REDIS_URL: srv.url };

  await srv.cmd("FLUSHALL");
  const quick = run(process.execPath, [join("dist", "block0.js")], dir, env);
  assert.match(quick, /shipping 2 x A-1/);
  assert.doesNotMatch(quick, /shipping 0 x B-7/);
  assert.match(quick, /dead: 1/);
  assert.match(quick, /TypedJobInfo \{[\s\S]*state: 'dead'/);

  // The long-running worker: it handles its job, then SIGTERM stops it.
  await srv.cmd("FLUSHALL");
  const child = spawn(process.execPath, [join("dist", "block1.js")], {
    cwd: dir,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => resolve(code)),
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
      if (/sending hello aborted: false/.test(stdout)) {
        resolve();
      }
    });
    void exited.then((code) =>
      reject(new Error("the worker exited early (" + code + "): " + stderr)),
    );
  });
  child.kill("SIGTERM");
  assert.equal(await exited, 0, "the worker did not exit cleanly: " + stderr);
  const emails = new QueueKeys("emails");
  assert.equal(Number(await srv.cmd("ZCARD", emails.pending)), 0);

  // Why did my job fail: the worker's records, read back with the job.
  await srv.cmd("FLUSHALL");
  const why = run(process.execPath, [join("dist", "block2.js")], dir, env);
  assert.match(
    why,
    /^attempt 1 at \d{4}-\d\d-\d\dT[\d:.]+Z: error by report-worker-1: the printer is on fire \(attempt 1\)$/m,
  );
  assert.match(
    why,
    /^attempt 2 at \S+: error by report-worker-1: the printer is on fire \(attempt 2\)$/m,
  );
  const last = /^attempt 2 at (\S+):/m.exec(why)?.[1];
  assert.ok(last !== undefined, why);
  assert.ok(why.includes("died at " + last), why);

  // Results, progress and events (echomq 2.4): the listener sees the
  // progress and the completion, and the kept result is read back.
  await srv.cmd("FLUSHALL");
  const outputs = run(process.execPath, [join("dist", "block3.js")], dir, env);
  assert.match(outputs, /^event progress JOB\S+ \{"pct":50\}$/m);
  assert.match(outputs, /^event completed JOB\S+ $/m);
  assert.match(
    outputs,
    /^result \{"frames":1,"source":"frame-1"\} by attempt 1$/m,
  );
  assert.match(outputs, /^completed: 1$/m);

  // Deduplication and cancellation (echomq 2.5): the second push meets the
  // first, and cancelling the key aborts the running handler.
  await srv.cmd("FLUSHALL");
  const dedup = run(process.execPath, [join("dist", "block4.js")], dir, env);
  assert.match(dedup, /^admitted duplicate true$/m);
  assert.match(dedup, /^cancelled JOB\S+ active$/m);
  assert.match(dedup, /^handler aborted: true$/m);

  // Schedulers (echomq 2.6): an interval's first run fires at once and a
  // worker runs it.
  await srv.cmd("FLUSHALL");
  const sched = run(process.execPath, [join("dist", "block5.js")], dir, env);
  assert.match(sched, /^created true$/m);
  assert.match(sched, /^nightly at \d{4}-\d\d-\d\dT0[12]:00:00\.000Z$/m);
  assert.match(sched, /^ran beat \d{13}$/m);
  assert.match(sched, /^heartbeat runs 1$/m);

  // Pausing and capping a queue (echomq 2.7), and its rate limit (2.8):
  // nothing runs while it is paused, at most 2 handlers at once under the
  // cap, the limit spreads the starts, and clearing the last policy leaves
  // none.
  await srv.cmd("FLUSHALL");
  const policy = run(process.execPath, [join("dist", "block6.js")], dir, env);
  assert.match(policy, /^paused true$/m);
  assert.match(policy, /^cap 2 paused false$/m);
  assert.match(policy, /^within the cap true$/m);
  assert.match(policy, /^limit 3 per 300 ms$/m);
  assert.match(policy, /^paced true$/m);
  assert.match(policy, /^requires 0$/m);

  // The wire layer, imported from its subpath.
  await srv.cmd("FLUSHALL");
  const wire = run(process.execPath, [join("dist", "block7.js")], dir, env);
  assert.match(wire, /^protocol \d+\.\d+\.\d+ pending 1$/m);

  await srv.cmd("FLUSHALL");
  const cjs = run(process.execPath, ["block.cjs"], dir, env);
  assert.match(cjs, /pending: 1/);
});
