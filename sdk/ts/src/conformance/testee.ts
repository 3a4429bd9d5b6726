// The TypeScript SDK's conformance testee: it reads the requests of the
// conformance runner from stdin, one JSON object a line, performs each with
// the SDK's public API, and writes one JSON response a line to stdout, in
// order (conformance/README.md is the contract). It logs to stderr and
// exits when stdin closes.

import { createInterface } from "node:readline";
import * as emq from "../index.js";
import * as wire from "../gen/index.js";

type Obj = Record<string, unknown>;

interface ErrorObj {
  kind: string;
  class?: string;
  message: string;
}

/** An error the testee raises itself, with its kind. */
class OpError extends Error {
  constructor(
    readonly kind: string,
    message: string,
  ) {
    super(message);
  }
}

/** Maps an SDK error to the contract's kinds, in the contract's order. */
function kindOf(err: unknown): ErrorObj {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof OpError) {
    return { kind: err.kind, message };
  }
  if (err instanceof emq.WireError) {
    return { kind: "wire", class: err.code, message: err.detail };
  }
  if (err instanceof emq.IdError) {
    return { kind: "id", message };
  }
  if (err instanceof emq.QueueNameError) {
    return { kind: "queue_name", message };
  }
  if (err instanceof emq.PayloadTooLargeError) {
    return { kind: "payload_too_large", message };
  }
  if (err instanceof emq.ArgumentError || err instanceof RangeError) {
    return { kind: "argument", message };
  }
  if (err instanceof emq.FenceError) {
    return { kind: "fence", message };
  }
  if (err instanceof emq.BundleError) {
    return { kind: "bundle", message };
  }
  if (err instanceof emq.ConnectionError) {
    return { kind: "connection", message };
  }
  return { kind: "other", message };
}

/**
 * The op of each twin's op: the 2.6 script's, whose SDK call runs the twin
 * (echomq 2.7.0; the claims' twins are the 2.8 ones since 2.8.0, and the
 * ops claim_policy_ids and complete_policy_ids run their 2.7 scripts).
 */
const TWIN_OF = new Map<string, string>([
  [wire.SCRIPT_CLAIM_RATE_IDS.name, wire.SCRIPT_CLAIM_IDS.name],
  [
    wire.SCRIPT_COMPLETE_RATE_IDS.name,
    wire.SCRIPT_COMPLETE_RESULT_CLAIM_IDS.name,
  ],
  [wire.SCRIPT_FAIL_POLICY.name, wire.SCRIPT_FAIL.name],
  [wire.SCRIPT_REAP_POLICY_IDS.name, wire.SCRIPT_REAP_RECORDED_IDS.name],
  [wire.SCRIPT_EXTEND_POLICY.name, wire.SCRIPT_EXTEND.name],
  [wire.SCRIPT_CANCEL_POLICY_IDS.name, wire.SCRIPT_CANCEL_IDS.name],
  [wire.SCRIPT_ADD_DEDUP_POLICY.name, wire.SCRIPT_ADD_DEDUP.name],
  [wire.SCRIPT_REPLACE_DEDUP_POLICY.name, wire.SCRIPT_REPLACE_DEDUP.name],
  [wire.SCRIPT_DEDUP_POLICY_ENTRIES.name, wire.SCRIPT_DEDUP_ENTRIES.name],
  [wire.SCRIPT_SWEEP_DEDUP_POLICY.name, wire.SCRIPT_SWEEP_DEDUP.name],
  [wire.SCRIPT_RETRY_POLICY.name, wire.SCRIPT_RETRY.name],
  [wire.SCRIPT_BURY_POLICY.name, wire.SCRIPT_BURY.name],
]);

/** A queue's policy as the ops pause, resume, set_concurrency, set_rate_limit and policy answer it: paused 1 or 0, as read_policy does. */
function policyOut(p: emq.QueuePolicy): Obj {
  return {
    paused: p.paused ? 1 : 0,
    concurrency: p.concurrency,
    requires: p.requires,
    leased: p.leased,
    rate_limit: p.rateLimit,
    rate_period_ms: p.ratePeriodMs,
    admit_in_ms: p.admitInMs,
  };
}

/** A lease time as the SDK's claims take it: a positive whole number of ms. */
function leaseIn(a: Obj): number {
  const lease = num(a, "lease_ms");
  if (!Number.isSafeInteger(lease) || lease < 1) {
    throw new OpError("argument", "lease " + lease + " is under a millisecond");
  }
  return lease;
}

const quiet: emq.Logger = {
  debug() {},
  info() {},
  warn(msg, fields) {
    console.error(msg, fields ?? "");
  },
  error(msg, fields) {
    console.error(msg, fields ?? "");
  },
};

function str(a: Obj, name: string): string {
  const v = a[name];
  return typeof v === "string" ? v : v === undefined ? "" : String(v);
}

function num(a: Obj, name: string): number {
  const v = a[name];
  if (v === undefined || v === null) {
    return 0;
  }
  if (typeof v !== "number") {
    throw new OpError("other", "bad request: " + name + " is not a number");
  }
  return v;
}

/** A request's list of ids, as given (the SDK checks them). */
function ids(a: Obj): string[] {
  const v = a["ids"];
  return Array.isArray(v) ? v.map((x) => String(x)) : [];
}

/** A request's payload: UTF-8 text or base64 bytes. */
function payloadIn(a: Obj): Buffer {
  if (typeof a["payload_b64"] === "string") {
    return Buffer.from(a["payload_b64"], "base64");
  }
  if (typeof a["payload"] === "string") {
    return Buffer.from(a["payload"], "utf8");
  }
  return Buffer.alloc(0);
}

/** Renders bytes as the contract's payload fields. */
function payloadOut(m: Obj, b: Buffer): Obj {
  const text = b.toString("utf8");
  if (Buffer.from(text, "utf8").equals(b)) {
    m["payload"] = text;
  }
  m["payload_b64"] = b.toString("base64");
  return m;
}

function jobOut(j: emq.Job): Obj {
  return payloadOut(
    { id: j.id, token: j.token, deadline_ms: j.deadlineMs },
    j.payload,
  );
}

/** A request's failure: class, worker and error as given (the SDK checks the class). */
function failureIn(a: Obj): emq.Failure {
  return {
    class: str(a, "class") as emq.FailureClass,
    worker: str(a, "worker"),
    message: str(a, "error"),
  };
}

function attemptOut(f: emq.FailedAttempt): Obj {
  return {
    attempt: f.attempt,
    at_ms: f.atMs,
    class: f.class,
    worker: f.worker,
    error: f.message,
  };
}

/** A request's bytes as text or base64 under name (name_b64). */
function bytesIn(a: Obj, name: string): Buffer {
  const b64 = a[name + "_b64"];
  if (typeof b64 === "string") {
    return Buffer.from(b64, "base64");
  }
  const t = a[name];
  return typeof t === "string" ? Buffer.from(t, "utf8") : Buffer.alloc(0);
}

/** Renders bytes as the contract's name / name_b64 fields. */
function bytesOut(m: Obj, name: string, b: Buffer): Obj {
  const text = b.toString("utf8");
  if (Buffer.from(text, "utf8").equals(b)) {
    m[name] = text;
  }
  m[name + "_b64"] = b.toString("base64");
  return m;
}

/** A request's backoff: the word, base and bound as the SDK takes them; undefined for inherit (or none). */
function backoffIn(a: Obj): emq.BackoffOptions | undefined {
  const word = a["backoff"];
  if (word === undefined || word === emq.Backoff.inherit) {
    return undefined;
  }
  return {
    type: String(word) as emq.BackoffOptions["type"],
    delay: num(a, "backoff_ms"),
    max: num(a, "backoff_max_ms"),
  };
}

/** A request's backoff for fail: inherit is passed on, for the SDK to refuse. */
function failBackoffIn(a: Obj): emq.BackoffOptions {
  return {
    type: str(a, "backoff") as emq.BackoffOptions["type"],
    delay: num(a, "backoff_ms"),
    max: num(a, "backoff_max_ms"),
  };
}

/** A request's deduplication policy: the mode as given (the SDK checks it), ttl_ms and the hold bits as booleans. */
function dedupIn(a: Obj): emq.DedupPolicy {
  return {
    mode: str(a, "mode") as emq.Dedup,
    ttlMs: num(a, "ttl_ms"),
    holdDead: a["hold_dead"] === true,
    holdResult: a["hold_result"] === true,
  };
}

/** A request's job options, as add_many takes them. */
function jobOptionsIn(a: Obj): emq.JobOptions {
  const b = backoffIn(a);
  return {
    delay: num(a, "delay_ms"),
    attempts: num(a, "attempts"),
    ...(b === undefined ? {} : { backoff: b }),
  };
}

function admissionOut(r: emq.DedupResult): Obj {
  return { outcome: r.outcome, id: r.id, run_at_ms: r.runAtMs };
}

function eventOut(e: emq.QueueEvent): Obj {
  const m: Obj = {
    stream_id: e.streamId,
    event: e.event,
    id: e.id,
    attempt: e.attempt,
    class: e.class,
    run_at_ms: e.runAtMs,
  };
  bytesOut(m, "error", e.error);
  return bytesOut(m, "progress", e.progress);
}

function countsOut(c: emq.SettleCounts, minute: boolean): Obj {
  const m: Obj = {
    completed: c.completed,
    failed: c.failed,
    retried: c.retried,
    dead: c.dead,
  };
  if (minute) {
    m["minute_ms"] = c.minuteMs;
  }
  return m;
}

function completionOut(c: emq.Completion | null): Obj {
  return bytesOut(
    { at_ms: c?.atMs ?? 0, attempt: c?.attempt ?? 0 },
    "result",
    c?.result ?? Buffer.alloc(0),
  );
}

/** A request's list of scheduler ids, as given (the SDK checks them). */
function schedulerIds(a: Obj): string[] {
  const v = a["schedulers"];
  return Array.isArray(v) ? v.map((x) => String(x)) : [];
}

/** A request's number, or undefined when omitted (the SDK applies its default). */
function optNum(a: Obj, name: string): number | undefined {
  return a[name] === undefined || a[name] === null ? undefined : num(a, name);
}

/** A scheduler's record as the contract writes it (the empty record for a missing one). */
function schedulerOut(r: emq.SchedulerRecord): Obj {
  const m: Obj = {
    scheduler: r.id,
    cron: r.cron,
    every_ms: r.everyMs,
    start_ms: r.startMs,
    tz: r.tz,
    missed: r.missed,
    backfill: r.backfill,
    grace_ms: r.graceMs,
  };
  bytesOut(m, "template", r.template);
  m["paused"] = r.paused;
  m["next_ms"] = r.nextMs;
  m["last_slot_ms"] = r.lastSlotMs;
  m["last_id"] = r.lastId;
  m["runs"] = r.runs;
  m["now_ms"] = r.nowMs;
  return m;
}

class Testee {
  client: emq.Client | undefined;

  async close(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    await c?.close();
  }

  #connected(): emq.Client {
    if (this.client === undefined) {
      throw new OpError("connection", "not connected");
    }
    return this.client;
  }

  #queue(a: Obj): emq.Queue {
    return this.#connected().queue(str(a, "queue"));
  }

  /** The queue and the checked id of a request: the queue first. */
  #queueId(a: Obj): [emq.Queue, string] {
    const q = this.#queue(a);
    const id = str(a, "id");
    wire.parseId(id);
    return [q, id];
  }

  async do(op: string, a: Obj): Promise<Obj> {
    // A 2.7 twin's op runs the SDK call of the op it twins, which runs the
    // twin (echomq 2.7.0): the same args, the same result.
    const twinned = TWIN_OF.get(op);
    if (twinned !== undefined) {
      return this.do(twinned, a);
    }
    switch (op) {
      case "hello":
        return {
          language: "ts",
          sdk_version: emq.SDK_VERSION,
          protocol: wire.PROTOCOL,
          version: wire.VERSION,
          bundle_digest: wire.BUNDLE_DIGEST,
        };
      case "parse_id": {
        const d = wire.parseId(str(a, "text"));
        return {
          kind: d.kind,
          time_ms: d.timeMs,
          node: d.node,
          sequence: d.sequence,
        };
      }
      case "new_id": {
        const text = wire.newId(str(a, "kind"), {
          timeMs: num(a, "time_ms"),
          node: num(a, "node"),
          sequence: num(a, "sequence"),
        });
        return { text };
      }
      case "queue_keys": {
        const k = new wire.QueueKeys(str(a, "queue"));
        const keys: Obj = {};
        const types = Array.isArray(a["types"]) ? a["types"] : [];
        for (const t of types) {
          keys[String(t)] = k.key(String(t)) ?? null;
        }
        const out: Obj = { keys };
        if (typeof a["id"] === "string") {
          out["row"] = k.row(a["id"]);
        }
        return out;
      }
      case "reserve_key": {
        const q = typeof a["queue"] === "string" ? a["queue"] : undefined;
        return { key: wire.reserveKey(str(a, "member"), q) };
      }
      case "judge_version":
        return { verdict: emq.judgeVersionRecord(str(a, "record")) };
      case "classify_error": {
        const reply = str(a, "reply");
        const e = wire.parseErrorReply(reply);
        return e
          ? { class: e.code, message: e.detail }
          : { class: "", message: reply };
      }
      case "connect": {
        await this.close();
        const max = num(a, "max_payload");
        this.client = await emq.connect({
          url: "redis://" + str(a, "addr"),
          // No renewal within a scenario: the runner counts commands.
          nodeLeaseMs: 10 * 60 * 1000,
          logger: quiet,
          ...(max > 0 ? { maxPayload: max } : {}),
        });
        return { version_found: this.client.versionFound };
      }
      case "close":
        await this.close();
        return {};
      case "mint": {
        const kind = str(a, "kind");
        const c = this.#connected();
        if (!wire.isKind(kind)) {
          throw new emq.IdError(kind, "the kind is not registered");
        }
        return { id: c.mint(kind) };
      }
      case "push":
      case "enqueue":
      case "enqueue_at": {
        const [q, id] = this.#queueId(a);
        const p = payloadIn(a);
        let ok: boolean;
        if (op === "push") {
          ok = await q.push(id, p);
        } else if (op === "enqueue") {
          ok = await q.enqueue(id, p);
        } else {
          ok = await q.enqueueAt(id, p, num(a, "run_at_ms"));
        }
        return { enqueued: ok };
      }
      case "push_batch": {
        const q = this.#queue(a);
        const jobs = (Array.isArray(a["jobs"]) ? a["jobs"] : []).map(
          (j: Obj) => {
            const id = str(j, "id");
            wire.parseId(id);
            return { id, payload: payloadIn(j) };
          },
        );
        const res = await q.pushBatch(jobs);
        return {
          results: res.map((r) =>
            r.error ? { error: kindOf(r.error) } : { enqueued: r.enqueued },
          ),
        };
      }
      case "push_many": {
        const q = this.#queue(a);
        const jobs = (Array.isArray(a["jobs"]) ? a["jobs"] : []).map(
          (j: Obj) => ({ id: str(j, "id"), payload: payloadIn(j) }),
        );
        const res = await q.pushMany(jobs);
        return { results: res.map((enqueued) => ({ enqueued })) };
      }
      case "claim_ids": {
        const q = this.#queue(a);
        const lease = num(a, "lease_ms");
        const js = await q.claimIds(lease, ids(a));
        return { jobs: js.map(jobOut) };
      }
      case "complete_claim_ids": {
        const [q, id] = this.#queueId(a);
        const js = await q.completeClaimIds(
          id,
          num(a, "token"),
          num(a, "lease_ms"),
          ids(a),
        );
        return { jobs: js.map(jobOut) };
      }
      case "promote_ids":
        return { moved: await this.#queue(a).promoteIds(ids(a)) };
      case "reap_ids": {
        const q = this.#queue(a);
        return { moved: await q.reapIds(ids(a), num(a, "max_attempts")) };
      }
      case "retry_failed": {
        const [q, id] = this.#queueId(a);
        const at = await q.retryFailed(
          id,
          num(a, "token"),
          num(a, "delay_ms"),
          failureIn(a),
        );
        return { run_at_ms: at };
      }
      case "bury_failed": {
        const [q, id] = this.#queueId(a);
        await q.buryFailed(id, num(a, "token"), failureIn(a));
        return {};
      }
      case "reap_failed_ids": {
        const q = this.#queue(a);
        return {
          moved: await q.reapFailedIds(ids(a), num(a, "max_attempts")),
        };
      }
      case wire.SCRIPT_FAILURES.name: {
        // The op "failures" (named as the script it reads through).
        const [q, id] = this.#queueId(a);
        return { attempts: (await q.failures(id)).map(attemptOut) };
      }
      case "forget_failures":
        return { forgotten: await this.#queue(a).forgetFailures(ids(a)) };
      case "claim": {
        const j = await this.#queue(a).claim(num(a, "lease_ms"));
        return { job: j ? jobOut(j) : null };
      }
      case "claim_many": {
        const q = this.#queue(a);
        const js = await q.claimMany(num(a, "lease_ms"), num(a, "count"));
        return { jobs: js.map(jobOut) };
      }
      case "complete": {
        const [q, id] = this.#queueId(a);
        await q.complete(id, num(a, "token"));
        return {};
      }
      case "bury": {
        const [q, id] = this.#queueId(a);
        await q.bury(id, num(a, "token"));
        return {};
      }
      case "complete_claim": {
        const [q, id] = this.#queueId(a);
        const js = await q.completeClaim(
          id,
          num(a, "token"),
          num(a, "lease_ms"),
          num(a, "count"),
        );
        return { jobs: js.map(jobOut) };
      }
      case "extend": {
        const [q, id] = this.#queueId(a);
        const d = await q.extend(id, num(a, "token"), num(a, "lease_ms"));
        return { deadline_ms: d };
      }
      case "retry": {
        const [q, id] = this.#queueId(a);
        const at = await q.retry(id, num(a, "token"), num(a, "delay_ms"));
        return { run_at_ms: at };
      }
      case "revive": {
        // The 2.0 contract's revive writes no event: revive_recorded with
        // no events is the same change (it rings the doorbell itself).
        const [q, id] = this.#queueId(a);
        return { revived: await q.revive(id, { eventsMaxLen: 0 }) };
      }
      case "revive_recorded": {
        const [q, id] = this.#queueId(a);
        return {
          revived: await q.revive(id, { eventsMaxLen: num(a, "events_max") }),
        };
      }
      case "add_many": {
        const q = this.#queue(a);
        const jobs = (Array.isArray(a["jobs"]) ? a["jobs"] : []).map(
          (j: Obj) => ({ id: str(j, "id"), payload: payloadIn(j) }),
        );
        const b = backoffIn(a);
        const res = await q.addMany(jobs, {
          delay: num(a, "delay_ms"),
          attempts: num(a, "attempts"),
          ...(b === undefined ? {} : { backoff: b }),
        });
        return {
          results: res.map((r) => ({
            enqueued: r.enqueued,
            run_at_ms: r.runAtMs,
          })),
        };
      }
      case "add_dedup": {
        const q = this.#queue(a);
        const jobs = (Array.isArray(a["jobs"]) ? a["jobs"] : []).map(
          (j: Obj) => ({
            id: str(j, "id"),
            payload: payloadIn(j),
            dedupKey: bytesIn(j, "key"),
          }),
        );
        const res = await q.addDedup(jobs, {
          dedup: dedupIn(a),
          ...jobOptionsIn(a),
        });
        return { results: res.map(admissionOut) };
      }
      case "replace_dedup": {
        const q = this.#queue(a);
        const r = await q.replaceDedup(
          str(a, "id"),
          payloadIn(a),
          bytesIn(a, "key"),
          str(a, "target"),
          {
            dedup: dedupIn(a),
            ...jobOptionsIn(a),
            eventsMaxLen: num(a, "events_max"),
          },
        );
        return admissionOut(r);
      }
      case "push_dedup": {
        const q = this.#queue(a);
        const r = await q.push(str(a, "id"), payloadIn(a), {
          dedup: { ...dedupIn(a), key: bytesIn(a, "key") },
          delay: num(a, "delay_ms"),
          eventsMaxLen: num(a, "events_max"),
        });
        return admissionOut(r);
      }
      case "dedup_entries": {
        const q = this.#queue(a);
        const keys = (Array.isArray(a["keys"]) ? a["keys"] : []).map((k) =>
          String(k),
        );
        const es = await q.dedupEntries(keys);
        return {
          entries: es.map((e) => ({
            holder: e.holder,
            mode: e.mode,
            expires_ms: e.expiresMs,
            held: e.held,
            state: e.state,
            parked: e.parked,
          })),
        };
      }
      case "sweep_dedup": {
        const q = this.#queue(a);
        const cursor = a["cursor"] === undefined ? "0" : str(a, "cursor");
        const p = await q.sweepDedup(cursor, num(a, "count"));
        return { cursor: p.cursor, dropped: p.dropped, released: p.released };
      }
      case "cancel_ids": {
        const q = this.#queue(a);
        const res = await q.cancelIds(ids(a), {
          eventsMaxLen: num(a, "events_max"),
        });
        return { results: res.map((r) => ({ state: r.state })) };
      }
      case "cancel_key": {
        const q = this.#queue(a);
        const res = await q.cancelKey(bytesIn(a, "key"), {
          eventsMaxLen: num(a, "events_max"),
        });
        return { cancelled: res.map((r) => ({ id: r.id, state: r.state })) };
      }
      case "complete_result_claim_ids": {
        const [q, id] = this.#queueId(a);
        const js = await q.completeResultClaimIds(
          id,
          num(a, "token"),
          num(a, "lease_ms"),
          ids(a),
          {
            result: bytesIn(a, "result"),
            keep: { count: num(a, "keep"), ageMs: num(a, "keep_age_ms") },
            eventsMaxLen: num(a, "events_max"),
          },
        );
        return { jobs: js.map(jobOut) };
      }
      case "fail": {
        const [q, id] = this.#queueId(a);
        const r = await q.fail(id, num(a, "token"), failureIn(a), {
          maxAttempts: num(a, "max_attempts"),
          backoff: failBackoffIn(a),
          jitter: num(a, "jitter"),
          bury: a["bury"] === true,
          eventsMaxLen: num(a, "events_max"),
        });
        return { outcome: r.outcome, run_at_ms: r.runAtMs };
      }
      case "reap_recorded_ids": {
        const q = this.#queue(a);
        return {
          moved: await q.reapRecordedIds(ids(a), num(a, "max_attempts"), {
            eventsMaxLen: num(a, "events_max"),
          }),
        };
      }
      case "progress": {
        const [q, id] = this.#queueId(a);
        await q.updateProgress(id, num(a, "token"), bytesIn(a, "progress"), {
          eventsMaxLen: num(a, "events_max"),
        });
        return {};
      }
      case "output": {
        const [q, id] = this.#queueId(a);
        const o = await q.output(id);
        const m = bytesOut({}, "progress", o.progress);
        m["completed_at_ms"] = o.completed?.atMs ?? 0;
        m["attempt"] = o.completed?.attempt ?? 0;
        return bytesOut(m, "result", o.completed?.result ?? Buffer.alloc(0));
      }
      case "counters": {
        const c = await this.#queue(a).counters(num(a, "minutes"));
        return {
          totals: countsOut(c.totals, false),
          minutes: c.minutes.map((m) => countsOut(m, true)),
        };
      }
      case "events": {
        const q = this.#queue(a);
        const evs = await q.readEvents(str(a, "after"), num(a, "count"));
        return { events: evs.map(eventOut) };
      }
      case "forget_ids":
        return { forgotten: await this.#queue(a).forgetIds(ids(a)) };
      case "purge": {
        // The contract's purge is the bundle's purge script, which leaves
        // the job's failure record behind as a 2.2 client's purge does (the
        // failures scenarios read it and forget it after). Queue.purge also
        // forgets the record in the same round trip; its own tests cover
        // that.
        const [q, id] = this.#queueId(a);
        const c = this.#connected();
        await c.ensure();
        const n = await wire.runPurge(c.runner, {
          dead: q.keys.dead,
          row: q.keys.row(id),
          id,
        });
        return { purged: n === wire.PURGE_PURGED };
      }
      case "get": {
        const [q, id] = this.#queueId(a);
        const l = await q.lookup(id);
        if (!l.found) {
          return l.completed === null
            ? { found: false }
            : { found: false, completed: completionOut(l.completed) };
        }
        const info = l.job;
        const m = payloadOut(
          {
            found: true,
            state: info.state,
            attempts: info.attempts,
            at_ms: info.atMs ?? 0,
          },
          info.payload,
        );
        return bytesOut(m, "progress", info.progress);
      }
      case "promote":
        return { moved: await this.#queue(a).promote(num(a, "limit")) };
      case "reap": {
        const q = this.#queue(a);
        return { moved: await q.reap(num(a, "limit"), num(a, "max_attempts")) };
      }
      case "ring":
        return { rung: await this.#queue(a).ring() };
      case wire.SCRIPT_SET_POLICY.name: {
        // The op "set_policy": one call of the script (echomq 2.7.0), its
        // integers as given; the SDK's own calls are pause, resume and
        // setConcurrency.
        const q = this.#queue(a);
        const paused = num(a, "paused");
        const concurrency = num(a, "concurrency");
        if (![-1, 0, 1].includes(paused) || concurrency < -1) {
          throw new OpError(
            "argument",
            "paused " + paused + ", concurrency " + concurrency,
          );
        }
        const c = this.#connected();
        await c.ensure();
        const r = await wire.runSetPolicy(c.runner, {
          pending: q.keys.pending,
          active: q.keys.active,
          running: q.keys.running,
          policy: q.keys.policy,
          wake: q.keys.wake,
          paused,
          concurrency,
        });
        return {
          paused: r.paused,
          concurrency: r.concurrency,
          requires: r.requires,
        };
      }
      case wire.SCRIPT_QUEUE_POLICY.name: {
        // The op "queue_policy": one call of the script (echomq 2.7.0).
        const q = this.#queue(a);
        const c = this.#connected();
        await c.ensure();
        const r = await wire.runQueuePolicy(c.runner, {
          active: q.keys.active,
          running: q.keys.running,
          policy: q.keys.policy,
        });
        return {
          paused: r.paused,
          concurrency: r.concurrency,
          requires: r.requires,
          leased: r.leased,
        };
      }
      case wire.SCRIPT_CLAIM_POLICY_IDS.name: {
        // The op "claim_policy_ids": one call of the 2.7 script (the SDK's
        // claims run claim_rate_ids since 2.8.0), as claim_ids takes it.
        const q = this.#queue(a);
        const lease = leaseIn(a);
        const want = ids(a);
        const rows = want.map((id) => q.keys.row(id));
        if (want.length === 0) {
          return { jobs: [] };
        }
        const c = this.#connected();
        await c.ensure();
        const js = await wire.runClaimPolicyIds(c.runner, {
          pending: q.keys.pending,
          active: q.keys.active,
          running: q.keys.running,
          policy: q.keys.policy,
          wake: q.keys.wake,
          rows,
          leaseMs: lease,
          ids: want,
        });
        return { jobs: js.map(jobOut) };
      }
      case wire.SCRIPT_COMPLETE_POLICY_IDS.name: {
        // The op "complete_policy_ids": one call of the 2.7 script (the
        // SDK's completions run complete_rate_ids since 2.8.0), as
        // complete_result_claim_ids takes it.
        const [q, id] = this.#queueId(a);
        const lease = leaseIn(a);
        const want = ids(a);
        const rows = want.map((i) => q.keys.row(i));
        const counts = ["keep", "keep_age_ms", "events_max"].map((n) => {
          const v = num(a, n);
          if (!Number.isSafeInteger(v) || v < 0) {
            throw new OpError("argument", n + " " + v + " is negative");
          }
          return v;
        });
        const c = this.#connected();
        await c.ensure();
        const js = await wire.runCompletePolicyIds(c.runner, {
          row: q.keys.row(id),
          active: q.keys.active,
          running: q.keys.running,
          policy: q.keys.policy,
          pending: q.keys.pending,
          wake: q.keys.wake,
          results: q.keys.results,
          resultTimes: q.keys.resultTimes,
          progress: q.keys.progress,
          failures: q.keys.failures,
          options: q.keys.options,
          events: q.keys.events,
          counters: q.keys.counters,
          rows,
          id,
          token: num(a, "token"),
          leaseMs: lease,
          result: bytesIn(a, "result"),
          keep: counts[0]!,
          keepAgeMs: counts[1]!,
          eventsMax: counts[2]!,
          ids: want,
        });
        return { jobs: js.map(jobOut) };
      }
      case wire.SCRIPT_CONFIGURE_POLICY.name: {
        // The op "configure_policy": one call of the script (echomq
        // 2.8.0), its integers as given; the SDK's own calls are pause,
        // resume, setConcurrency and setRateLimit.
        const q = this.#queue(a);
        const paused = num(a, "paused");
        const concurrency = num(a, "concurrency");
        const rateLimit = num(a, "rate_limit");
        const ratePeriodMs = num(a, "rate_period_ms");
        if (
          ![-1, 0, 1].includes(paused) ||
          !Number.isSafeInteger(concurrency) ||
          concurrency < -1 ||
          !Number.isSafeInteger(rateLimit) ||
          rateLimit < -1 ||
          rateLimit > emq.RATE_LIMIT_MAX ||
          (rateLimit > 0 &&
            (!Number.isSafeInteger(ratePeriodMs) ||
              ratePeriodMs < 1 ||
              ratePeriodMs > emq.RATE_PERIOD_MAX_MS))
        ) {
          throw new OpError(
            "argument",
            "paused " +
              paused +
              ", concurrency " +
              concurrency +
              ", rate limit " +
              rateLimit +
              " per " +
              ratePeriodMs +
              " ms",
          );
        }
        const c = this.#connected();
        await c.ensure();
        const r = await wire.runConfigurePolicy(c.runner, {
          pending: q.keys.pending,
          active: q.keys.active,
          running: q.keys.running,
          policy: q.keys.policy,
          starts: q.keys.starts,
          wake: q.keys.wake,
          paused,
          concurrency,
          rateLimit,
          ratePeriodMs,
        });
        return {
          paused: r.paused,
          concurrency: r.concurrency,
          rate_limit: r.rateLimit,
          rate_period_ms: r.ratePeriodMs,
          requires: r.requires,
        };
      }
      case wire.SCRIPT_READ_POLICY.name: {
        // The op "read_policy": one call of the script (echomq 2.8.0).
        const q = this.#queue(a);
        const c = this.#connected();
        await c.ensure();
        const r = await wire.runReadPolicy(c.runner, {
          active: q.keys.active,
          running: q.keys.running,
          policy: q.keys.policy,
          starts: q.keys.starts,
        });
        return {
          paused: r.paused,
          concurrency: r.concurrency,
          requires: r.requires,
          leased: r.leased,
          rate_limit: r.rateLimit,
          rate_period_ms: r.ratePeriodMs,
          admit_in_ms: r.admitInMs,
        };
      }
      case "set_rate_limit":
        return policyOut(
          await this.#queue(a).setRateLimit(
            num(a, "rate_limit"),
            num(a, "rate_period_ms"),
            { force: a["force"] === true },
          ),
        );
      case "pause":
        return policyOut(
          await this.#queue(a).pause({ force: a["force"] === true }),
        );
      case "resume":
        return policyOut(await this.#queue(a).resume());
      case "set_concurrency":
        return policyOut(
          await this.#queue(a).setConcurrency(num(a, "concurrency"), {
            force: a["force"] === true,
          }),
        );
      case "policy":
        return policyOut(await this.#queue(a).policy());
      case "sizes":
        return { sizes: await this.#queue(a).sizes() };
      case "browse": {
        const q = this.#queue(a);
        return {
          ids: await q.browse(str(a, "set") as emq.SetName, num(a, "n")),
        };
      }
      case "page": {
        const q = this.#queue(a);
        const p = await q.page(
          str(a, "set") as emq.SetName,
          str(a, "after"),
          num(a, "n"),
        );
        return { ids: p.ids, next: p.next };
      }
      case "upsert_scheduler": {
        const q = this.#queue(a);
        const missed = a["missed"];
        const backfill = optNum(a, "backfill");
        const graceMs = optNum(a, "grace_ms");
        const r = await q.upsertScheduler(str(a, "scheduler"), {
          cron: str(a, "cron"),
          tz: str(a, "tz"),
          everyMs: num(a, "every_ms"),
          startMs: num(a, "start_ms"),
          ...(missed === undefined
            ? {}
            : { missed: String(missed) as emq.Missed }),
          ...(backfill === undefined ? {} : { backfill }),
          ...(graceMs === undefined ? {} : { graceMs }),
          template: bytesIn(a, "template"),
        });
        return { created: r.created, changed: r.changed, next_ms: r.nextMs };
      }
      case "scheduler_entries": {
        const q = this.#queue(a);
        const rs = await q.schedulers(schedulerIds(a));
        return { entries: rs.map(schedulerOut) };
      }
      case "list_schedulers": {
        const q = this.#queue(a);
        const rs = await q.listSchedulers(num(a, "offset"), num(a, "count"));
        return { schedulers: rs.map(schedulerOut) };
      }
      case "due_schedulers": {
        const q = this.#queue(a);
        const rs = await q.dueSchedulers(
          num(a, "horizon_ms"),
          num(a, "count"),
          num(a, "spread"),
        );
        return { schedulers: rs.map(schedulerOut) };
      }
      case "pause_schedulers": {
        const q = this.#queue(a);
        const changed =
          a["paused"] === true
            ? await q.pauseSchedulers(schedulerIds(a))
            : await q.resumeSchedulers(schedulerIds(a));
        return { changed };
      }
      case "remove_schedulers":
        return {
          removed: await this.#queue(a).removeSchedulers(schedulerIds(a)),
        };
      case "fire_schedulers": {
        const q = this.#queue(a);
        const entries = (Array.isArray(a["entries"]) ? a["entries"] : []).map(
          (e: Obj) => ({
            id: str(e, "id"),
            scheduler: str(e, "scheduler"),
            expectMs: num(e, "expect_ms"),
            nextMs: num(e, "next_ms"),
            slotMs: num(e, "slot_ms"),
            untilMs: num(e, "until_ms"),
          }),
        );
        return { outcomes: await q.fireSchedulers(entries) };
      }
      case "fire_due": {
        const q = this.#queue(a);
        const runs = await q.fireDue({ horizonMs: num(a, "horizon_ms") });
        const fired = runs
          .map((r) => ({
            scheduler: r.scheduler,
            slot_ms: r.slotMs,
            until_ms: r.untilMs,
            id: r.id,
          }))
          .sort((x, y) =>
            x.scheduler < y.scheduler
              ? -1
              : x.scheduler > y.scheduler
                ? 1
                : x.slot_ms - y.slot_ms,
          );
        return { fired };
      }
      case "run_probes": {
        const t = await emq.runProbes(this.#connected());
        return { passed: t.passed, total: t.results.length, lines: t.lines() };
      }
    }
    throw new OpError(
      "unsupported",
      "op " +
        JSON.stringify(op) +
        " is not implemented by the TypeScript testee",
    );
  }
}

async function main(): Promise<void> {
  const t = new Testee();
  const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    let resp: Obj;
    let seq: unknown = 0;
    try {
      const req = JSON.parse(line) as Obj;
      seq = req["seq"];
      const args = (req["args"] ?? {}) as Obj;
      const result = await t.do(String(req["op"]), args);
      resp = { seq, ok: true, result };
    } catch (err) {
      const e =
        err instanceof SyntaxError
          ? { kind: "other", message: "bad request: " + err.message }
          : kindOf(err);
      resp = { seq, ok: false, error: e };
    }
    process.stdout.write(JSON.stringify(resp) + "\n");
  }
  await t.close();
}

main().catch((err: unknown) => {
  console.error("testee:", err);
  process.exit(1);
});
