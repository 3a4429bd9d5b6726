// A TypeScript client the Go fault harness drives (internal/chaos): one JSON
// request per line on stdin, one JSON reply per line on stdout, matched by
// seq; requests run concurrently. It is how the harness pushes jobs through
// the TypeScript SDK (the TypeScript producer of the interop scenario) and
// how the cross-language stale tests claim and complete from TypeScript.
//
// Requests: {seq, op, ...}:
//   connect  {url} | {rootNodes}   -> {node} (rootNodes: a Redis Cluster)
//   mint     {n}                   -> {ids}
//   push     {queue, jobs: [{id, data}]} -> {pushed: [{enqueued} | {error}]}
//   claim    {queue, leaseMs}       -> {job: {id, token} | null}
//   complete {queue, id, token}     -> {}
//   reap     {queue}                -> {n}
//   close                          -> {} (then the process exits)
// A failed request answers {seq, error: {name, message, code, stale}}:
// code is the wire class of a refusal, stale whether the error is the SDK's
// StaleError.

import { createInterface } from "node:readline";
import {
  StaleError,
  WireError,
  connect,
  type Client,
  type Logger,
} from "../src/index.js";

interface Request {
  seq: number;
  op: string;
  url?: string;
  rootNodes?: string[];
  n?: number;
  queue?: string;
  jobs?: { id: string; data: string }[];
  leaseMs?: number;
  id?: string;
  token?: number;
}

/** What the harness learns of an error. */
export interface ErrorReport {
  name: string;
  message: string;
  code: string;
  stale: boolean;
}

/** Describes err for the harness. */
export function report(err: unknown): ErrorReport {
  const e = err instanceof Error ? err : new Error(String(err));
  return {
    name: e.name,
    message: e.message,
    code: err instanceof WireError ? err.code : "",
    stale: err instanceof StaleError,
  };
}

const quiet: Logger = {
  debug() {},
  info() {},
  warn(msg, fields) {
    console.error("warn", msg, fields ?? "");
  },
  error(msg, fields) {
    console.error("error", msg, fields ?? "");
  },
};

let client: Client | undefined;

function need(): Client {
  if (client === undefined) {
    throw new Error("emqchaos driver: connect first");
  }
  return client;
}

async function handle(r: Request): Promise<Record<string, unknown>> {
  switch (r.op) {
    case "connect":
      client = await connect(
        r.rootNodes !== undefined && r.rootNodes.length > 0
          ? { cluster: { rootNodes: r.rootNodes }, logger: quiet }
          : { url: r.url, logger: quiet },
      );
      return { node: client.node };
    case "mint":
      return {
        ids: Array.from({ length: r.n ?? 1 }, () => need().mint()),
      };
    case "push": {
      const res = await need()
        .queue(r.queue ?? "")
        .pushBatch((r.jobs ?? []).map((j) => ({ id: j.id, payload: j.data })));
      return {
        pushed: res.map((x) =>
          x.error ? { error: report(x.error) } : { enqueued: x.enqueued },
        ),
      };
    }
    case "claim": {
      const j = await need()
        .queue(r.queue ?? "")
        .claim(r.leaseMs ?? 0);
      return { job: j ? { id: j.id, token: j.token } : null };
    }
    case "complete":
      await need()
        .queue(r.queue ?? "")
        .complete(r.id ?? "", r.token ?? 0);
      return {};
    case "reap":
      return {
        n: await need()
          .queue(r.queue ?? "")
          .reap(),
      };
    case "close":
      await client?.close();
      client = undefined;
      return {};
  }
  throw new Error("emqchaos driver: unknown op " + JSON.stringify(r.op));
}

function reply(v: Record<string, unknown>): void {
  process.stdout.write(JSON.stringify(v) + "\n");
}

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  let r: Request;
  try {
    r = JSON.parse(line) as Request;
  } catch (err) {
    reply({ seq: -1, error: report(err) });
    return;
  }
  handle(r).then(
    (v) => {
      reply({ seq: r.seq, ...v });
      if (r.op === "close") {
        process.exit(0);
      }
    },
    (err: unknown) => reply({ seq: r.seq, error: report(err) }),
  );
});
lines.on("close", () => {
  void client?.close().finally(() => process.exit(0));
  if (client === undefined) {
    process.exit(0);
  }
});
