// The generated layer against the manifest and the bundle, with no server.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import * as emq from "../src/index.js";
import { bundleIndex, manifest, root } from "./manifest.js";

test("constants are the manifest's", () => {
  assert.equal(emq.PROTOCOL, manifest.protocol);
  assert.equal(emq.VERSION, manifest.version);
  assert.equal(
    [emq.VERSION_MAJOR, emq.VERSION_MINOR, emq.VERSION_PATCH].join("."),
    manifest.version,
  );
  assert.deepEqual(
    emq.CLASSES,
    manifest.classes.map((c) => c.word),
  );
});

test("ids: every manifest example decodes to its facts and re-encodes", () => {
  assert.ok(manifest.ids.examples.length > 0);
  for (const ex of manifest.ids.examples) {
    const d = emq.parseId(ex.id);
    assert.equal(d.text, ex.id);
    assert.equal(d.timeMs, Date.parse(ex.time), ex.id);
    assert.equal(d.node, ex.node, ex.id);
    assert.equal(d.sequence, ex.sequence, ex.id);
    assert.equal(emq.formatId(d.kind, d.value), ex.id);
    assert.equal(
      emq.newId(d.kind, {
        timeMs: d.timeMs,
        node: d.node,
        sequence: d.sequence,
      }),
      ex.id,
    );
    assert.ok(emq.isId(ex.id));
  }
});

test("ids: every invalid manifest example is refused with an IdError", () => {
  assert.ok(manifest.ids.invalid_examples.length > 0);
  for (const bad of manifest.ids.invalid_examples) {
    assert.throws(() => emq.parseId(bad), emq.IdError, JSON.stringify(bad));
    assert.equal(emq.isId(bad), false);
  }
});

test("ids: newId refuses out-of-range parts", () => {
  const ok = { timeMs: emq.ID_EPOCH_MS, node: 0, sequence: 0 };
  assert.throws(
    () => emq.newId("JOB", { ...ok, node: emq.MAX_NODE + 1 }),
    RangeError,
  );
  assert.throws(() => emq.newId("JOB", { ...ok, sequence: -1 }), RangeError);
  assert.throws(() => emq.newId("JOB", { ...ok, timeMs: 0 }), RangeError);
  assert.throws(() => emq.newId("job", ok), emq.IdError);
});

test("ids: a generator mints strictly increasing ids of its node, also when the clock steps back", () => {
  const g = new emq.IdGenerator(7);
  const now = Date.now();
  let last = "";
  for (let i = 0; i < 5000; i++) {
    const id = g.mint(emq.WORK_KIND, i % 2 === 0 ? now : now - 1000);
    assert.ok(id > last, id + " after " + last);
    assert.equal(emq.parseId(id).node, 7);
    last = id;
  }
  assert.throws(() => new emq.IdGenerator(emq.MAX_NODE + 1), RangeError);
  assert.throws(() => g.mint("XYZ" as emq.Kind), emq.IdError);
});

test("queue names: examples admitted, invalid examples refused", () => {
  for (const q of manifest.queues.examples) {
    emq.validateQueueName(q);
    assert.equal(new emq.QueueKeys(q).queue, q);
  }
  for (const bad of manifest.queues.invalid_examples) {
    assert.throws(
      () => emq.validateQueueName(bad),
      emq.QueueNameError,
      JSON.stringify(bad),
    );
    assert.throws(() => new emq.QueueKeys(bad), emq.QueueNameError);
    assert.throws(() => emq.keyMigration(bad), emq.QueueNameError);
  }
});

test("keys: every key of a queue carries the queue's hashtag; rows refuse malformed ids", () => {
  const k = new emq.QueueKeys("orders");
  for (const t of emq.QUEUE_KEY_TYPES) {
    assert.ok(k.key(t)?.includes("{orders}"), t);
  }
  for (const s of emq.SETS) {
    assert.equal(k.set(s), k.key(s));
  }
  const id = manifest.ids.examples[0]!.id;
  assert.equal(k.row(id), k.rowPrefix + id);
  for (const bad of manifest.ids.invalid_examples) {
    assert.throws(() => k.row(bad), emq.IdError);
  }
  assert.equal(emq.reserveKey("version"), emq.KEY_VERSION);
  assert.throws(() => emq.reserveKey("nope"));
});

test("errors: every wire class parses into its own class", () => {
  for (const c of manifest.classes) {
    const e = emq.parseErrorReply(c.word + " some detail", "s");
    assert.ok(e instanceof emq.WireError);
    assert.equal(e.code, c.word);
    assert.equal(e.detail, "some detail");
    assert.equal(e.script, "s");
  }
  assert.ok(emq.parseErrorReply("EMQKIND x") instanceof emq.KindError);
  assert.ok(emq.parseErrorReply("EMQSTALE x") instanceof emq.StaleError);
  assert.equal(emq.parseErrorReply("ERR other"), undefined);
  assert.equal(emq.parseErrorReply("EMQSTALEX x"), undefined);
});

test("scripts: sources, SHA-1s and the digest are the bundle's", () => {
  assert.equal(emq.SCRIPTS.length, manifest.scripts.length);
  assert.equal(emq.BUNDLE_DIGEST, bundleIndex.bundle_digest);
  let all = "";
  for (const [i, s] of emq.SCRIPTS.entries()) {
    const rec = bundleIndex.scripts[i]!;
    assert.equal(s.name, rec.name);
    assert.equal(s.sha1, rec.sha1);
    const file = readFileSync(join(root, "sdk", "lua", rec.file), "utf8");
    assert.equal(s.source, file, s.name);
    assert.equal(createHash("sha1").update(s.source).digest("hex"), s.sha1);
    all += s.sha1 + "\n";
    assert.equal(emq.scriptNamed(s.name), s);
  }
  assert.equal(createHash("sha1").update(all).digest("hex"), emq.BUNDLE_DIGEST);
});

test("scripts: a call refuses a malformed id and a non-integer before building", () => {
  assert.throws(
    () => emq.completeExec({ active: "a", row: "r", id: "nope", token: 1 }),
    emq.IdError,
  );
  assert.throws(
    () =>
      emq.completeExec({
        active: "a",
        row: "r",
        id: manifest.ids.examples[0]!.id,
        token: 1.5,
      }),
    RangeError,
  );
});

test("checkVersionRecord judges records like the fence", () => {
  const p = emq.VERSION_RECORD_PREFIX;
  assert.equal(emq.checkVersionRecord(emq.VERSION_RECORD), "same");
  assert.equal(
    emq.checkVersionRecord(
      p + emq.VERSION_MAJOR + "." + (emq.VERSION_MINOR + 1) + ".0",
    ),
    "ahead",
  );
  for (const bad of [
    p + (emq.VERSION_MAJOR + 1) + ".0.0",
    p + "x.y.z",
    "other:" + emq.VERSION,
    "",
    p + emq.VERSION_MAJOR + ".01.0",
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
