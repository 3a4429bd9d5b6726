// The verdict on a version record found in a keyspace, by the rules the
// fence script applies on the server (echomq 2.2.1): the protocol's prefix,
// then major.minor.patch in canonical decimals (ASCII digits, no sign, no
// leading zero but for 0 itself, any length).

import {
  VERSION_MAJOR,
  VERSION_MINOR,
  VERSION_PATCH,
  VERSION_RECORD_PREFIX,
} from "./gen/index.js";

/**
 * What this SDK makes of a version record: "current" (this version),
 * "ahead" (a higher minor or patch of this major: served, minors are
 * additive), "behind" (a lower one: connect's fence raises it) or
 * "foreign" (another major or protocol, or not a record: refused and never
 * written).
 */
export type Verdict = "current" | "ahead" | "behind" | "foreign";

const canonical = /^(0|[1-9][0-9]*)$/;

/** Compares two canonical decimals of any length as numbers. */
function compare(a: string, b: string): number {
  if (a.length !== b.length) {
    return a.length < b.length ? -1 : 1;
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Judges a version record found in a keyspace as the fence script does:
 * "current", "ahead" or "behind" within this major, "foreign" for anything
 * else (another major or protocol, a value that is not a record, the empty
 * string). It sends nothing.
 */
export function judgeVersionRecord(record: string): Verdict {
  if (!record.startsWith(VERSION_RECORD_PREFIX)) {
    return "foreign";
  }
  const parts = record.slice(VERSION_RECORD_PREFIX.length).split(".");
  if (parts.length !== 3 || !parts.every((p) => canonical.test(p))) {
    return "foreign";
  }
  const [major, minor, patch] = parts as [string, string, string];
  if (compare(major, String(VERSION_MAJOR)) !== 0) {
    return "foreign";
  }
  const c =
    compare(minor, String(VERSION_MINOR)) ||
    compare(patch, String(VERSION_PATCH));
  return c > 0 ? "ahead" : c < 0 ? "behind" : "current";
}
