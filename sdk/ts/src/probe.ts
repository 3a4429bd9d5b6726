// runProbes: the manifest's probes (generated data, PROBES) run against a
// live keyspace, each on a scratch queue of its own, as the Go SDK's
// RunProbes does.

import { randomInt } from "node:crypto";
import {
  IdGenerator,
  KEY_LOCKS,
  MAX_NODE,
  PROBES,
  PROBE_KIND_FIELD,
  PROBE_KIND_KEY,
  PROBE_KIND_RESERVE,
  PROBE_KIND_ROW,
  PROBE_KIND_STATE,
  PROBE_VAR_BUNDLE,
  PROBE_VAR_QUEUE,
  PROBE_VAR_SEMVER,
  PROBE_VAR_VERSION,
  QueueKeys,
  ReplyError,
  fieldByRole,
  SCRIPTS,
  SCRIPT_FENCE,
  SETS,
  BUNDLE_DIGEST,
  VERSION,
  VERSION_RECORD,
  WORK_KIND,
  WireError,
  isKind,
  isState,
  keyMigration,
  lockMaintenance,
  lockProbe,
  reserveKey,
  runScript,
  scriptNamed,
  type Probe,
  type ProbeExpect,
  type ProbeStep,
  type RedisArg,
} from "./gen/index.js";
import { checkVersionRecord, type Client } from "./client.js";

/** Starts the name of every scratch queue a probe runs on. */
export const SCRATCH_PREFIX = "emqprobe-";

/** The outcome of one probe check. */
export interface ProbeResult {
  readonly target: string;
  readonly check: string;
  /** Why the check failed; undefined when it passed. */
  readonly error?: string;
}

/** The outcome of a probe run: one result per check. */
export class ProbeTranscript {
  readonly results: ProbeResult[] = [];

  /** How many checks passed. */
  get passed(): number {
    return this.results.filter((r) => r.error === undefined).length;
  }

  /** Whether every check passed, and there was at least one. */
  get ok(): boolean {
    return this.results.length > 0 && this.passed === this.results.length;
  }

  /** One line per check: "ok <target>: <check>" or "FAIL <target>: <check>: <why>". */
  lines(): string[] {
    return this.results.map((r) =>
      r.error === undefined
        ? "ok " + r.target + ": " + r.check
        : "FAIL " + r.target + ": " + r.check + ": " + r.error,
    );
  }
}

/** A reply as a step sees it: the value, or the error the server answered. */
type Reply = { value: unknown } | { error: unknown };

const placeholder = /\$\{([^}]*)\}/g;

function text(v: unknown): string | undefined {
  if (Buffer.isBuffer(v)) {
    return v.toString();
  }
  return typeof v === "string" ? v : undefined;
}

function scalar(v: unknown): string {
  return typeof v === "number" ? String(v) : (text(v) ?? "");
}

function describe(r: Reply): string {
  if ("error" in r) {
    return (
      "error " + JSON.stringify(String((r.error as Error)?.message ?? r.error))
    );
  }
  const d = (v: unknown): string => {
    if (v === null) {
      return "nil";
    }
    if (Array.isArray(v)) {
      return "[" + v.map(d).join(", ") + "]";
    }
    if (typeof v === "number") {
      return "integer " + v;
    }
    return JSON.stringify(text(v) ?? String(v));
  };
  return d(r.value);
}

/** The keys of a scratch queue a probe may write and cleaning up deletes, rows aside. */
function scratchKeys(k: QueueKeys): string[] {
  const keys = new Set<string>();
  for (const s of SETS) {
    keys.add(k.set(s));
  }
  for (const s of SCRIPTS) {
    for (const t of s.keyTypes) {
      const key = k.key(t);
      if (key !== undefined) {
        keys.add(key);
      }
    }
  }
  keys.add(keyMigration(k.queue));
  return [...keys];
}

/** One probe's scratch queue and ids. */
class Runtime {
  readonly #c: Client;
  readonly #gen: IdGenerator;
  readonly #readOnly: Map<string, boolean>;
  readonly keys: QueueKeys;
  readonly #scratch: string[];
  readonly #ids = new Map<string, string>();
  readonly #held = new Map<string, boolean>();

  constructor(
    c: Client,
    gen: IdGenerator,
    readOnly: Map<string, boolean>,
    keys: QueueKeys,
    scratch: string[],
  ) {
    this.#c = c;
    this.#gen = gen;
    this.#readOnly = readOnly;
    this.keys = keys;
    this.#scratch = scratch;
  }

  /** Opens a runtime on a fresh scratch queue: one none of whose keys exists. */
  static async open(
    c: Client,
    gen: IdGenerator,
    readOnly: Map<string, boolean>,
  ): Promise<Runtime> {
    const a = c.adapter;
    for (let tries = 0; tries < 5; tries++) {
      const keys = new QueueKeys(
        SCRATCH_PREFIX + gen.mint(WORK_KIND).toLowerCase(),
      );
      const scratch = scratchKeys(keys);
      let taken = false;
      for (const k of scratch) {
        taken = taken || Number(await a.send(["EXISTS", k])) > 0;
      }
      if (taken) {
        continue;
      }
      const rt = new Runtime(c, gen, readOnly, keys, scratch);
      for (const f of [lockProbe(keys.queue), lockMaintenance(keys.queue)]) {
        let held = true;
        try {
          held = Number(await a.send(["HEXISTS", KEY_LOCKS, f])) > 0;
        } catch {
          // Unreadable counts as held: never removed.
        }
        rt.#held.set(f, held);
      }
      return rt;
    }
    throw new Error("found no fresh scratch queue in 5 tries");
  }

  /** The id variable name (a registered kind in lower case, maybe a digit), minted on first use. */
  #id(name: string): string | undefined {
    const have = this.#ids.get(name);
    if (have !== undefined) {
      return have;
    }
    const kind = name.replace(/\d+$/, "").toUpperCase();
    if (!isKind(kind)) {
      return undefined;
    }
    const id = this.#gen.mint(kind);
    this.#ids.set(name, id);
    return id;
  }

  lookup(name: string): string | undefined {
    switch (name) {
      case PROBE_VAR_QUEUE:
        return this.keys.queue;
      case PROBE_VAR_VERSION:
        return VERSION_RECORD;
      case PROBE_VAR_SEMVER:
        return VERSION;
      case PROBE_VAR_BUNDLE:
        return BUNDLE_DIGEST;
    }
    const colon = name.indexOf(":");
    if (colon >= 0) {
      const kind = name.slice(0, colon);
      const arg = name.slice(colon + 1);
      switch (kind) {
        case PROBE_KIND_KEY:
          return this.keys.key(arg);
        case PROBE_KIND_ROW: {
          const id = this.#id(arg);
          return id === undefined ? undefined : this.keys.row(id);
        }
        case PROBE_KIND_RESERVE:
          try {
            return reserveKey(arg, this.keys.queue);
          } catch {
            return undefined;
          }
        case PROBE_KIND_FIELD:
          return fieldByRole(arg);
        case PROBE_KIND_STATE:
          return isState(arg) ? arg : undefined;
      }
      return undefined;
    }
    return this.#id(name);
  }

  /** Runs a script of the bundle on the scratch queue; the fence script is refused, unsent. */
  async runScript(name: string, args: Map<string, string>): Promise<Reply> {
    const s = scriptNamed(name);
    if (s === undefined) {
      return { error: new Error("no script " + JSON.stringify(name)) };
    }
    if (s === SCRIPT_FENCE) {
      return {
        error: new Error(
          "not run: script " +
            name +
            " writes the fence's keys, which a probe only reads",
        ),
      };
    }
    // The first row key takes the row of the first id argument (the job a
    // script moves); later row keys, a repeated group run with one entry,
    // take the row of the last (the repeated ids' one value).
    let first: string | undefined;
    let last = "";
    const argv: RedisArg[] = s.argv.map((a, i) => {
      const t = s.argTypes[i];
      if (t === "prefix") {
        return this.keys.rowPrefix;
      }
      const v = args.get(a) ?? "";
      if (t === "id") {
        first ??= v;
        last = v;
      }
      return v;
    });
    let id = first ?? "";
    try {
      const keys = s.keyTypes.map((t) => {
        if (t.startsWith(PROBE_KIND_RESERVE + ":")) {
          return reserveKey(
            t.slice(PROBE_KIND_RESERVE.length + 1),
            this.keys.queue,
          );
        }
        const k = this.keys.key(t);
        if (k !== undefined) {
          return k;
        }
        const row = this.keys.row(id);
        id = last;
        return row;
      });
      return {
        value: await runScript(this.#c.adapter, { script: s, keys, argv }),
      };
    } catch (err) {
      return { error: err };
    }
  }

  /**
   * Sends one command when the server calls it read-only, or when every key
   * it names belongs to the scratch queue; anything else is not sent.
   */
  async do(cmd: string[]): Promise<Reply> {
    const a = this.#c.adapter;
    const name = cmd[0];
    if (name === undefined) {
      return { error: new Error("an empty command") };
    }
    try {
      if (!(await this.#isReadOnly(name))) {
        const keys = (
          (await a.send(["COMMAND", "GETKEYS", ...cmd])) as unknown[]
        ).map(scalar);
        if (keys.length === 0) {
          return {
            error: new Error(
              "not sent: " +
                name +
                " writes and names no key of the probe's scratch queue",
            ),
          };
        }
        for (const k of keys) {
          if (!this.#owns(k)) {
            return {
              error: new Error(
                "not sent: " +
                  name +
                  " would write " +
                  k +
                  ", outside the probe's scratch queue",
              ),
            };
          }
        }
      }
    } catch (err) {
      return {
        error: new Error(
          "not sent: the server did not say what " +
            name +
            " does: " +
            String(err),
        ),
      };
    }
    try {
      return { value: await a.send(cmd) };
    } catch (err) {
      return { error: err };
    }
  }

  #owns(key: string): boolean {
    if (this.#scratch.includes(key)) {
      return true;
    }
    for (const id of this.#ids.values()) {
      if (this.keys.row(id) === key) {
        return true;
      }
    }
    return false;
  }

  async #isReadOnly(name: string): Promise<boolean> {
    const n = name.toLowerCase();
    const have = this.#readOnly.get(n);
    if (have !== undefined) {
      return have;
    }
    const arr = (await this.#c.adapter.send([
      "COMMAND",
      "INFO",
      n,
    ])) as unknown[];
    const info = arr?.[0];
    if (!Array.isArray(info) || info.length < 3 || !Array.isArray(info[2])) {
      throw new Error("the server does not know " + n);
    }
    const flags = (info[2] as unknown[]).map(scalar);
    const ro = flags.includes("readonly") && !flags.includes("write");
    this.#readOnly.set(n, ro);
    return ro;
  }

  /** Deletes what the probe wrote: the scratch keys, the rows of its ids, and lock fields naming the queue that were absent before. */
  async close(): Promise<void> {
    const a = this.#c.adapter;
    const keys = [
      ...this.#scratch,
      ...[...this.#ids.values()].map((id) => this.keys.row(id)),
    ];
    for (const r of await a.sendMany(keys.map((k) => ["DEL", k]))) {
      if (!r.ok) {
        throw r.error;
      }
    }
    for (const [f, held] of this.#held) {
      if (!held && Number(await a.send(["HEXISTS", KEY_LOCKS, f])) > 0) {
        await a.send(["HDEL", KEY_LOCKS, f]);
      }
    }
  }
}

function expand(rt: Runtime, vars: Map<string, string>, s: string): string {
  const missing: string[] = [];
  const out = s.replace(placeholder, (m, name: string) => {
    const v = vars.get(name) ?? rt.lookup(name);
    if (v === undefined) {
      missing.push(name);
      return m;
    }
    return v;
  });
  if (missing.length > 0) {
    throw new Error("unknown placeholder ${" + missing.join("}, ${") + "}");
  }
  return out;
}

function check(
  rt: Runtime,
  vars: Map<string, string>,
  e: ProbeExpect,
  r: Reply,
): void {
  const got = describe(r);
  const v = "value" in r ? r.value : undefined;
  switch (e.kind) {
    case "int":
      if (!("value" in r) || v !== e.int) {
        throw new Error("want integer " + e.int + ", got " + got);
      }
      return;
    case "positive":
      if (typeof v !== "number" || v <= 0) {
        throw new Error("want a positive integer, got " + got);
      }
      return;
    case "string": {
      const want = expand(rt, vars, e.string ?? "");
      if (text(v) !== want) {
        throw new Error("want " + JSON.stringify(want) + ", got " + got);
      }
      return;
    }
    case "nil":
      if (!("value" in r) || v !== null) {
        throw new Error("want nil, got " + got);
      }
      return;
    case "error": {
      const err = "error" in r ? r.error : undefined;
      const word =
        err instanceof WireError
          ? err.code
          : err instanceof ReplyError
            ? err.message.split(" ")[0]
            : undefined;
      if (word !== e.string) {
        throw new Error("want a " + e.string + " refusal, got " + got);
      }
      return;
    }
    case "fence": {
      const s = text(v);
      try {
        if (s === undefined) {
          throw new Error();
        }
        checkVersionRecord(s);
      } catch {
        throw new Error(
          "want a version record this client's fence admits, got " + got,
        );
      }
      return;
    }
  }
  throw new Error("unknown expectation " + JSON.stringify(e.kind));
}

async function runStep(
  rt: Runtime,
  vars: Map<string, string>,
  s: ProbeStep,
): Promise<void> {
  let r: Reply;
  if (s.script !== undefined) {
    const args = new Map<string, string>();
    for (const [k, v] of s.args ?? []) {
      args.set(k, expand(rt, vars, v));
    }
    r = await rt.runScript(s.script, args);
  } else if (s.command !== undefined && s.command.length > 0) {
    r = await rt.do(s.command.map((c) => expand(rt, vars, c)));
  } else {
    throw new Error("the step runs nothing");
  }
  if (
    "error" in r &&
    !(r.error instanceof ReplyError) &&
    !(r.error instanceof WireError)
  ) {
    throw r.error;
  }
  const names =
    s.script !== undefined ? (scriptNamed(s.script)?.replyElements ?? []) : [];
  // A repeated reply (an array of records, each an array) is narrowed to
  // its first record for the step's save and element.
  const record = (v: unknown): unknown =>
    Array.isArray(v) && v.length > 0 && Array.isArray(v[0]) ? v[0] : v;
  if (s.save !== undefined && "value" in r) {
    const v = record(r.value);
    if (Array.isArray(v)) {
      names.forEach((n, i) => {
        vars.set(s.save + "." + n, scalar((v as unknown[])[i]));
      });
    } else {
      vars.set(s.save, scalar(r.value));
    }
  }
  if (s.expect.element !== undefined) {
    const i = names.indexOf(s.expect.element);
    const v = "value" in r ? record(r.value) : undefined;
    if (!Array.isArray(v)) {
      throw new Error("want an array reply, got " + describe(r));
    }
    if (i < 0 || i >= v.length) {
      throw new Error(
        "the reply has no element " + JSON.stringify(s.expect.element),
      );
    }
    r = { value: v[i] };
  }
  check(rt, vars, s.expect, r);
}

/**
 * Runs every probe of the manifest against the client's keyspace and
 * returns the transcript. Every probe runs on a scratch queue of its own
 * with fresh ids from an unleased node, and everything it wrote there is
 * deleted when it ends; the fence script is never run, and a command is
 * sent only when the server calls it read-only or every key it names is the
 * scratch queue's. A failed check is a line of the transcript; what stops
 * the run (a connection, cleaning up) rejects.
 */
export async function runProbes(
  c: Client,
  probes: readonly Probe[] = PROBES,
): Promise<ProbeTranscript> {
  const gen = new IdGenerator(randomInt(MAX_NODE + 1));
  const readOnly = new Map<string, boolean>();
  const t = new ProbeTranscript();
  for (const p of probes) {
    const rt = await Runtime.open(c, gen, readOnly);
    const vars = new Map<string, string>();
    for (const s of p.steps) {
      try {
        await runStep(rt, vars, s);
        t.results.push({ target: p.target, check: s.check });
      } catch (err) {
        const why = err instanceof Error ? err.message : String(err);
        t.results.push({ target: p.target, check: s.check, error: why });
      }
    }
    await rt.close();
  }
  return t;
}
