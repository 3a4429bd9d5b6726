// The generated layer against the manifest and the bundle, with no server.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import * as emq from "../src/index.js";
import * as wire from "../src/gen/index.js";
import { bundleIndex, manifest, root } from "./manifest.js";

test("constants are the manifest's", () => {
  assert.equal(wire.PROTOCOL, manifest.protocol);
  assert.equal(wire.VERSION, manifest.version);
  assert.equal(
    [wire.VERSION_MAJOR, wire.VERSION_MINOR, wire.VERSION_PATCH].join("."),
    manifest.version,
  );
  assert.deepEqual(
    wire.CLASSES,
    manifest.classes.map((c) => c.word),
  );
});

test("ids: every manifest example decodes to its facts and re-encodes", () => {
  assert.ok(manifest.ids.examples.length > 0);
  for (const ex of manifest.ids.examples) {
    const d = wire.parseId(ex.id);
    assert.equal(d.text, ex.id);
    assert.equal(d.timeMs, Date.parse(ex.time), ex.id);
    assert.equal(d.node, ex.node, ex.id);
    assert.equal(d.sequence, ex.sequence, ex.id);
    assert.equal(wire.formatId(d.kind, d.value), ex.id);
    assert.equal(
      wire.newId(d.kind, {
        timeMs: d.timeMs,
        node: d.node,
        sequence: d.sequence,
      }),
      ex.id,
    );
    assert.ok(wire.isId(ex.id));
  }
});

test("ids: every invalid manifest example is refused with an IdError", () => {
  assert.ok(manifest.ids.invalid_examples.length > 0);
  for (const bad of manifest.ids.invalid_examples) {
    assert.throws(() => wire.parseId(bad), emq.IdError, JSON.stringify(bad));
    assert.equal(wire.isId(bad), false);
  }
});

test("ids: newId refuses out-of-range parts", () => {
  const ok = { timeMs: wire.ID_EPOCH_MS, node: 0, sequence: 0 };
  assert.throws(
    () => wire.newId("JOB", { ...ok, node: wire.MAX_NODE + 1 }),
    RangeError,
  );
  assert.throws(() => wire.newId("JOB", { ...ok, sequence: -1 }), RangeError);
  assert.throws(() => wire.newId("JOB", { ...ok, timeMs: 0 }), RangeError);
  assert.throws(() => wire.newId("job", ok), emq.IdError);
});

test("ids: a generator mints strictly increasing ids of its node, also when the clock steps back", () => {
  const g = new wire.IdGenerator(7);
  const now = Date.now();
  let last = "";
  for (let i = 0; i < 5000; i++) {
    const id = g.mint(wire.WORK_KIND, i % 2 === 0 ? now : now - 1000);
    assert.ok(id > last, id + " after " + last);
    assert.equal(wire.parseId(id).node, 7);
    last = id;
  }
  assert.throws(() => new wire.IdGenerator(wire.MAX_NODE + 1), RangeError);
  assert.throws(() => g.mint("XYZ" as emq.Kind), emq.IdError);
});

test("queue names: examples admitted, invalid examples refused", () => {
  for (const q of manifest.queues.examples) {
    wire.validateQueueName(q);
    assert.equal(new wire.QueueKeys(q).queue, q);
  }
  for (const bad of manifest.queues.invalid_examples) {
    assert.throws(
      () => wire.validateQueueName(bad),
      emq.QueueNameError,
      JSON.stringify(bad),
    );
    assert.throws(() => new wire.QueueKeys(bad), emq.QueueNameError);
    assert.throws(() => wire.keyMigration(bad), emq.QueueNameError);
  }
});

test("keys: every key of a queue carries the queue's hashtag; rows refuse malformed ids", () => {
  const k = new wire.QueueKeys("orders");
  for (const t of wire.QUEUE_KEY_TYPES) {
    assert.ok(k.key(t)?.includes("{orders}"), t);
  }
  for (const s of wire.SETS) {
    assert.equal(k.set(s), k.key(s));
  }
  const id = manifest.ids.examples[0]!.id;
  assert.equal(k.row(id), k.rowPrefix + id);
  for (const bad of manifest.ids.invalid_examples) {
    assert.throws(() => k.row(bad), emq.IdError);
  }
  assert.equal(wire.reserveKey("version"), wire.KEY_VERSION);
  assert.throws(() => wire.reserveKey("nope"));
});

test("errors: every wire class parses into its own class", () => {
  for (const c of manifest.classes) {
    const e = wire.parseErrorReply(c.word + " some detail", "s");
    assert.ok(e instanceof emq.WireError);
    assert.equal(e.code, c.word);
    assert.equal(e.detail, "some detail");
    assert.equal(e.script, "s");
  }
  assert.ok(wire.parseErrorReply("EMQKIND x") instanceof emq.KindError);
  assert.ok(wire.parseErrorReply("EMQSTALE x") instanceof emq.StaleError);
  assert.equal(wire.parseErrorReply("ERR other"), undefined);
  assert.equal(wire.parseErrorReply("EMQSTALEX x"), undefined);
});

test("scripts: sources, SHA-1s and the digest are the bundle's", () => {
  assert.equal(wire.SCRIPTS.length, manifest.scripts.length);
  assert.equal(wire.BUNDLE_DIGEST, bundleIndex.bundle_digest);
  let all = "";
  for (const [i, s] of wire.SCRIPTS.entries()) {
    const rec = bundleIndex.scripts[i]!;
    assert.equal(s.name, rec.name);
    assert.equal(s.sha1, rec.sha1);
    const file = readFileSync(join(root, "sdk", "lua", rec.file), "utf8");
    assert.equal(s.source, file, s.name);
    assert.equal(createHash("sha1").update(s.source).digest("hex"), s.sha1);
    all += s.sha1 + "\n";
    assert.equal(wire.scriptNamed(s.name), s);
  }
  assert.equal(
    createHash("sha1").update(all).digest("hex"),
    wire.BUNDLE_DIGEST,
  );
});

test("scripts: a call refuses a malformed id and a non-integer before building", () => {
  assert.throws(
    () => wire.completeExec({ active: "a", row: "r", id: "nope", token: 1 }),
    emq.IdError,
  );
  assert.throws(
    () =>
      wire.completeExec({
        active: "a",
        row: "r",
        id: manifest.ids.examples[0]!.id,
        token: 1.5,
      }),
    RangeError,
  );
});

test("checkVersionRecord judges records like the fence", () => {
  const p = wire.VERSION_RECORD_PREFIX;
  assert.equal(emq.checkVersionRecord(wire.VERSION_RECORD), "same");
  assert.equal(
    emq.checkVersionRecord(
      p + wire.VERSION_MAJOR + "." + (wire.VERSION_MINOR + 1) + ".0",
    ),
    "ahead",
  );
  for (const bad of [
    p + (wire.VERSION_MAJOR + 1) + ".0.0",
    p + "x.y.z",
    "other:" + wire.VERSION,
    "",
    p + wire.VERSION_MAJOR + ".01.0",
  ]) {
    assert.throws(() => emq.checkVersionRecord(bad), emq.FenceError, bad);
  }
});

test("SDK_VERSION is the package's version", () => {
  const pkg = JSON.parse(
    readFileSync(join(root, "sdk", "ts", "package.json"), "utf8"),
  ) as { version: string };
  assert.equal(emq.SDK_VERSION, pkg.version);
});
