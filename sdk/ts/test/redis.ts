// Starts real redis-server processes for the tests: each on a free
// loopback port, without persistence, in a temporary directory, stopped at
// the end. A machine without redis-server fails with the install hint;
// nothing is skipped.

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient, RESP_TYPES } from "redis";

const hint =
  "redis-server is not on PATH: install it (Debian: apt-get install redis-server redis-tools; ./test.sh does it)";

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const addr = s.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

type Raw = ReturnType<typeof createClient>;

/** A redis-server the test started. */
export class RedisServer {
  readonly port: number;
  readonly dir: string;
  #proc: ChildProcess | undefined;
  #raw: Raw | undefined;
  #aof = false;

  private constructor(port: number, dir: string) {
    this.port = port;
    this.dir = dir;
  }

  /**
   * Starts a server on a free port; with aof, one that writes every command
   * to its append-only file before answering (a SIGKILL loses nothing).
   */
  static async start(opts: { aof?: boolean } = {}): Promise<RedisServer> {
    const probe = spawnSync("redis-server", ["--version"]);
    if (probe.error) {
      throw new Error(hint + " (" + probe.error.message + ")");
    }
    const dir = mkdtempSync(join(tmpdir(), "emq-ts-"));
    const s = new RedisServer(await freePort(), dir);
    s.#aof = opts.aof ?? false;
    await s.#spawn();
    return s;
  }

  /** redis://127.0.0.1:<port>. */
  get url(): string {
    return "redis://127.0.0.1:" + this.port;
  }

  async #spawn(): Promise<void> {
    const proc = spawn(
      "redis-server",
      [
        "--port",
        String(this.port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        this.#aof ? "yes" : "no",
        "--appendfsync",
        "always",
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
    for (let i = 0; i < 100; i++) {
      if (exited) {
        throw new Error("redis-server exited at start on port " + this.port);
      }
      const c = createClient({ url: this.url, RESP: 2 });
      c.on("error", () => {});
      try {
        await c.connect();
        await c.ping();
        await c.close();
        return;
      } catch {
        c.destroy();
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    throw new Error("redis-server did not answer on port " + this.port);
  }

  /** A plain connection for the test's own commands (planting, checking). */
  async raw(): Promise<Raw> {
    if (this.#raw === undefined) {
      const c = createClient({ url: this.url, RESP: 2 });
      c.on("error", () => {});
      await c.connect();
      this.#raw = c as Raw;
    }
    return this.#raw;
  }

  /** Sends one command on the raw connection; bulk strings as strings. */
  async cmd(...args: string[]): Promise<unknown> {
    const r = await this.raw();
    return r.sendCommand(args);
  }

  /** Sends one command; bulk strings as Buffers. */
  async cmdBytes(...args: string[]): Promise<unknown> {
    const r = await this.raw();
    return r.sendCommand(args, {
      typeMapping: { [RESP_TYPES.BLOB_STRING]: Buffer },
    });
  }

  /**
   * Starts recording every command the server runs from now on (MONITOR on
   * a connection of its own); stop() ends it.
   */
  async monitor(): Promise<Monitor> {
    const c = createClient({ url: this.url, RESP: 2 });
    c.on("error", () => {});
    await c.connect();
    const m = new Monitor(c as Raw);
    await c.monitor((line: string) => m.add(line));
    return m;
  }

  /** INFO commandstats as a map from command to its calls. */
  async commandCalls(): Promise<Map<string, number>> {
    const info = String(await this.cmd("INFO", "commandstats"));
    const out = new Map<string, number>();
    for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
      out.set(m[1]!, Number(m[2]));
    }
    return out;
  }

  /** The number of commands the server processed so far (INFO itself included). */
  async commandsProcessed(): Promise<number> {
    const info = String(await this.cmd("INFO", "stats"));
    const m = /total_commands_processed:(\d+)/.exec(info);
    return Number(m?.[1]);
  }

  /** Every key and its type and value, for comparing keyspaces. */
  async snapshot(): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    const keys = (await this.cmd("KEYS", "*")) as string[];
    for (const k of keys.sort()) {
      const dump = (await this.cmdBytes("DUMP", k)) as Buffer | null;
      out[k] = dump ? dump.toString("hex") : "";
    }
    return out;
  }

  /** Kills the server (SIGKILL: no shutdown save), leaving its directory. */
  async kill(): Promise<void> {
    if (this.#raw !== undefined) {
      this.#raw.destroy();
      this.#raw = undefined;
    }
    const p = this.#proc;
    if (p && p.exitCode === null && p.signalCode === null) {
      await new Promise<void>((resolve) => {
        p.once("exit", () => resolve());
        p.kill("SIGKILL");
      });
    }
  }

  /** Kills the server and starts it again on the same port and directory. */
  async restart(): Promise<void> {
    await this.kill();
    await this.#spawn();
  }

  /** Stops the server and removes its directory. */
  async stop(): Promise<void> {
    if (this.#raw !== undefined) {
      this.#raw.destroy();
      this.#raw = undefined;
    }
    const p = this.#proc;
    if (p && p.exitCode === null && p.signalCode === null) {
      await new Promise<void>((resolve) => {
        p.once("exit", () => resolve());
        p.kill("SIGKILL");
      });
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The commands a MONITOR saw: the top-level ones (not those a script ran). */
export class Monitor {
  readonly #client: Raw;
  /** Each top-level command's words, in the order the server ran them. */
  readonly commands: string[][] = [];

  constructor(client: Raw) {
    this.#client = client;
  }

  /** @internal */
  add(line: string): void {
    // 1700000000.123456 [0 127.0.0.1:5555] "EVALSHA" "ab12..." "3" ...
    if (/^\S+ \[\d+ lua\]/.test(line)) {
      return;
    }
    const words: string[] = [];
    for (const m of line.matchAll(/"((?:[^"\\]|\\.)*)"/g)) {
      words.push(m[1]!);
    }
    if (words.length > 0) {
      this.commands.push(words);
    }
  }

  /** The name of every script called with EVALSHA or EVAL, in order, by scripts (the bundle's). */
  scriptCalls(scripts: readonly { name: string; sha1: string }[]): string[] {
    const bySha = new Map(scripts.map((s) => [s.sha1, s.name]));
    const out: string[] = [];
    for (const w of this.commands) {
      const verb = w[0]!.toUpperCase();
      if (verb === "EVALSHA") {
        out.push(bySha.get(w[1]!) ?? "sha:" + w[1]);
      } else if (verb === "EVAL") {
        const m = /script (\w+)\./.exec(w[1]!);
        out.push(m ? m[1]! : "eval:?");
      }
    }
    return out;
  }

  /** The top-level commands whose verb is verb. */
  calls(verb: string): string[][] {
    return this.commands.filter((w) => w[0]!.toUpperCase() === verb);
  }

  /** Waits until the monitor saw every command the server ran before now: it sends an ECHO through srv and waits for it. */
  async settle(srv: RedisServer): Promise<void> {
    const mark = "emq-monitor-" + Math.random().toString(36).slice(2);
    await srv.cmd("ECHO", mark);
    const end = Date.now() + 5000;
    while (!this.commands.some((w) => w[0] === "ECHO" && w[1] === mark)) {
      if (Date.now() > end) {
        throw new Error("the monitor did not see the marker within 5 s");
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  /** Stops recording. */
  async stop(): Promise<void> {
    try {
      await this.#client.close();
    } catch {
      this.#client.destroy();
    }
  }
}
