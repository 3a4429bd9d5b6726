// The TypeScript SDK's scheduler runner for the bench's scheduler scenario
// (bench/schedulers.go): Queue.runSchedulers with its defaults (poll 250 ms,
// horizon 0, pages of 100), counting the runs it fired through its onFired
// callback. The Go benchmark starts it against the redis-server it runs:
//
//   node scheduler-side.mjs --addr HOST:PORT --queue NAME
//
// It prints one JSON line when its runner is started ({"ready": true, the
// client's snowflake node, the SDK's version}), runs until its stdin ends,
// then stops the runner (AbortSignal), waits for it, and prints one JSON
// line of what it fired ({"fired": n, "ticks": ticks that fired runs}).
import { parseArgs } from "node:util";
import { connect, SDK_VERSION } from "@echomq/sdk";
import { VERSION } from "@echomq/sdk/wire";

const { values: opt } = parseArgs({
  options: {
    addr: { type: "string" },
    queue: { type: "string" },
  },
});
if (!opt.addr || !opt.queue) {
  console.error("scheduler-side.mjs: --addr HOST:PORT and --queue NAME are required (the Go benchmark passes them)");
  process.exit(2);
}

const client = await connect({ url: `redis://${opt.addr}` });
const queue = client.queue(opt.queue);
if (typeof queue.runSchedulers !== "function") {
  console.error("scheduler-side.mjs: this build of the TypeScript SDK has no Queue.runSchedulers (echomq 2.6.0): rebuild sdk/ts (npm ci && npm run build)");
  process.exit(2);
}
let fired = 0;
let ticks = 0;
const ac = new AbortController();
const running = queue.runSchedulers({
  signal: ac.signal,
  onFired(runs) {
    fired += runs.length;
    ticks++;
  },
});
const ended = new Promise((resolve) => {
  process.stdin.on("end", resolve);
  process.stdin.on("close", resolve);
});
process.stdin.resume();
process.stdout.write(
  JSON.stringify({ ready: true, node: client.node, version: `@echomq/sdk ${SDK_VERSION} (protocol ${VERSION}), Node ${process.version}` }) + "\n",
);
await ended;
ac.abort();
await running;
await client.close();
process.stdout.write(JSON.stringify({ fired, ticks }) + "\n");
