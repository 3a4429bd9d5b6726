// Starts a real Redis Cluster for the tests: three primaries, each a
// redis-server process with --cluster-enabled yes on free loopback ports
// (client and bus), without persistence, in a temporary directory, formed
// with redis-cli --cluster create and stopped at the end. A machine
// without redis-server or redis-cli fails with the install hint; nothing
// is skipped.

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "redis";

const hint =
  "a Redis Cluster needs redis-server and redis-cli on PATH: install them (Debian: apt-get install redis-server redis-tools; ./test.sh does it)";

/** The number of hash slots of a Redis Cluster. */
export const CLUSTER_SLOTS = 16384;

function freePort(taken: Set<number>): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const addr = s.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  }).then((p) => (taken.has(p) || p + 10000 > 65535 ? freePort(taken) : p));
}

type Raw = ReturnType<typeof createClient>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One node of the test's cluster. */
export class ClusterNode {
  readonly port: number;
  readonly busPort: number;
  readonly dir: string;
  id = "";
  #proc: ChildProcess | undefined;
  #raw: Raw | undefined;

  constructor(port: number, busPort: number, dir: string) {
    this.port = port;
    this.busPort = busPort;
    this.dir = dir;
  }

  /** 127.0.0.1:<port>. */
  get addr(): string {
    return "127.0.0.1:" + this.port;
  }

  /** redis://127.0.0.1:<port>. */
  get url(): string {
    return "redis://" + this.addr;
  }

  async launch(): Promise<void> {
    const proc = spawn(
      "redis-server",
      [
        "--port",
        String(this.port),
        "--bind",
        "127.0.0.1",
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
        "--cluster-port",
        String(this.busPort),
        "--cluster-node-timeout",
        "2000",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        this.dir,
      ],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    this.#proc = proc;
    let exited = false;
    proc.once("exit", () => {
      exited = true;
    });
    for (let i = 0; i < 200; i++) {
      if (exited) {
        throw new Error("redis-server exited at start on port " + this.port);
      }
      try {
        await this.cmd("PING");
        return;
      } catch {
        this.#dropRaw();
        await sleep(25);
      }
    }
    throw new Error("redis-server did not answer on port " + this.port);
  }

  /** Sends one command to this node alone (no redirection); bulk strings as strings. */
  async cmd(...args: string[]): Promise<unknown> {
    if (this.#raw === undefined) {
      const c = createClient({
        url: this.url,
        RESP: 2,
        socket: { reconnectStrategy: false },
      });
      c.on("error", () => {});
      await c.connect();
      this.#raw = c as Raw;
    }
    return this.#raw.sendCommand(args);
  }

  /** The count of error replies of kind word (INFO errorstats) this node sent. */
  async errorCount(word: string): Promise<number> {
    const info = String(await this.cmd("INFO", "errorstats"));
    const m = new RegExp("errorstat_" + word + ":count=(\\d+)").exec(info);
    return m ? Number(m[1]) : 0;
  }

  #dropRaw(): void {
    this.#raw?.destroy();
    this.#raw = undefined;
  }

  async kill(): Promise<void> {
    this.#dropRaw();
    const p = this.#proc;
    if (p && p.exitCode === null && p.signalCode === null) {
      await new Promise<void>((resolve) => {
        p.once("exit", () => resolve());
        p.kill("SIGKILL");
      });
    }
  }
}

/** Options of a batched slot migration. */
export interface MigrateOptions {
  /** Keys per MIGRATE; default 10. */
  batch?: number;
  /** Slept after each batch, so that clients meet the slot split; default none. */
  pauseMs?: number;
  /** Called after each batch with the keys moved so far, the slot still split. */
  afterBatch?: (moved: number) => Promise<void> | void;
}

/** A Redis Cluster of three primaries the test started. */
export class RedisCluster {
  readonly nodes: ClusterNode[];
  readonly dir: string;

  private constructor(nodes: ClusterNode[], dir: string) {
    this.nodes = nodes;
    this.dir = dir;
  }

  /** Starts three primaries and forms the cluster; resolves once every node says cluster_state:ok and agrees on the slots. */
  static async start(): Promise<RedisCluster> {
    for (const bin of ["redis-server", "redis-cli"]) {
      const probe = spawnSync(bin, ["--version"]);
      if (probe.error) {
        throw new Error(hint + " (" + probe.error.message + ")");
      }
    }
    const dir = mkdtempSync(join(tmpdir(), "emq-ts-cluster-"));
    const taken = new Set<number>();
    const nodes: ClusterNode[] = [];
    for (let i = 0; i < 3; i++) {
      const port = await freePort(taken);
      taken.add(port);
      const bus = await freePort(taken);
      taken.add(bus);
      const d = join(dir, String(i));
      mkdirSync(d);
      nodes.push(new ClusterNode(port, bus, d));
    }
    const c = new RedisCluster(nodes, dir);
    try {
      await Promise.all(nodes.map((n) => n.launch()));
      const r = spawnSync(
        "redis-cli",
        [
          "--cluster",
          "create",
          ...nodes.map((n) => n.addr),
          "--cluster-replicas",
          "0",
          "--cluster-yes",
        ],
        { encoding: "utf8", timeout: 60000 },
      );
      if (r.status !== 0) {
        throw new Error(
          "redis-cli --cluster create failed: " + r.stdout + r.stderr,
        );
      }
      for (const n of nodes) {
        n.id = String(await n.cmd("CLUSTER", "MYID"));
      }
      await c.waitAgreed();
    } catch (err) {
      await c.stop();
      throw err;
    }
    return c;
  }

  /** Every node's redis:// URL, for rootNodes. */
  get urls(): string[] {
    return this.nodes.map((n) => n.url);
  }

  /** The node at addr (127.0.0.1:<port>). */
  node(addr: string): ClusterNode {
    const n = this.nodes.find((x) => x.addr === addr);
    if (n === undefined) {
      throw new Error("no node at " + addr);
    }
    return n;
  }

  /** The slot of key, as the server computes it. */
  async keySlot(key: string): Promise<number> {
    return Number(await this.nodes[0]!.cmd("CLUSTER", "KEYSLOT", key));
  }

  /** The node that serves slot, as the first node sees it. */
  async owner(slot: number): Promise<ClusterNode> {
    const shards = (await this.nodes[0]!.cmd(
      "CLUSTER",
      "SLOTS",
    )) as unknown[][];
    for (const s of shards) {
      const [from, to, master] = s as [number, number, unknown[]];
      if (slot >= from && slot <= to) {
        return this.node("127.0.0.1:" + String(master[1]));
      }
    }
    throw new Error("slot " + slot + " is not served");
  }

  /** Waits until every node reports cluster_state:ok and all agree on each slot's owner and no slot is migrating. */
  async waitAgreed(limitMs = 30000): Promise<void> {
    const deadline = Date.now() + limitMs;
    for (;;) {
      let ok = true;
      const views: string[] = [];
      for (const n of this.nodes) {
        const info = String(await n.cmd("CLUSTER", "INFO"));
        if (!info.includes("cluster_state:ok")) {
          ok = false;
          break;
        }
        const lines = String(await n.cmd("CLUSTER", "NODES"))
          .trim()
          .split("\n")
          .map((l) => {
            const f = l.split(" ");
            return f[0] + " " + f.slice(8).sort().join(",");
          })
          .sort()
          .join("\n");
        if (lines.includes("[")) {
          ok = false;
        }
        views.push(lines);
      }
      if (ok && views.every((v) => v === views[0])) {
        return;
      }
      if (Date.now() > deadline) {
        throw new Error(
          "the cluster's nodes do not agree after " + limitMs + " ms",
        );
      }
      await sleep(50);
    }
  }

  /** A primary other than n. */
  other(n: ClusterNode): ClusterNode {
    return this.nodes.find((x) => x !== n)!;
  }

  /**
   * Moves slot from its owner to node to as redis-cli's resharding does:
   * SETSLOT IMPORTING on to, SETSLOT MIGRATING on the owner, MIGRATE ...
   * KEYS in batches of what GETKEYSINSLOT lists until nothing is left, then
   * SETSLOT NODE on to, the owner and the third node. Returns the keys
   * moved, once every node agrees.
   */
  async migrateSlot(
    slot: number,
    to: ClusterNode,
    opts: MigrateOptions = {},
  ): Promise<number> {
    const from = await this.owner(slot);
    if (from === to) {
      throw new Error("slot " + slot + " is already on " + to.addr);
    }
    const s = String(slot);
    await to.cmd("CLUSTER", "SETSLOT", s, "IMPORTING", from.id);
    await from.cmd("CLUSTER", "SETSLOT", s, "MIGRATING", to.id);
    const batch = String(opts.batch ?? 10);
    let moved = 0;
    for (;;) {
      const keys = (await from.cmd(
        "CLUSTER",
        "GETKEYSINSLOT",
        s,
        batch,
      )) as string[];
      if (keys.length === 0) {
        break;
      }
      const r = await from.cmd(
        "MIGRATE",
        "127.0.0.1",
        String(to.port),
        "",
        "0",
        "5000",
        "KEYS",
        ...keys,
      );
      if (r !== "OK" && r !== "NOKEY") {
        throw new Error("MIGRATE answered " + String(r));
      }
      moved += keys.length;
      await opts.afterBatch?.(moved);
      if (opts.pauseMs) {
        await sleep(opts.pauseMs);
      }
    }
    await to.cmd("CLUSTER", "SETSLOT", s, "NODE", to.id);
    await from.cmd("CLUSTER", "SETSLOT", s, "NODE", to.id);
    for (const n of this.nodes) {
      if (n !== from && n !== to) {
        await n.cmd("CLUSTER", "SETSLOT", s, "NODE", to.id);
      }
    }
    await this.waitAgreed();
    return moved;
  }

  /** Kills every node and removes the directory. */
  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.kill()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
