// echomq 2.6.0: the schedules of job schedulers, evaluated by the client
// (Lua has no time zone database): cron expressions in an IANA time zone
// (through Intl, Node's ICU) and intervals from an anchor, each answering
// its next slot after an instant. Every SDK computes exactly the same
// slots; conformance/vectors/schedules.json is the oracle.

import { ArgumentError } from "./errors.js";

/** How far past its instant a cron search looks for the next slot: 8·366 days (then the schedule has ended). */
export const CRON_SEARCH_MS = 8 * 366 * 86_400_000;

/** The longest cron expression a scheduler takes, in bytes (upsert_scheduler's bound). */
export const CRON_MAX_BYTES = 256;

/** The longest time zone name a scheduler takes, in bytes (upsert_scheduler's bound). */
export const TZ_MAX_BYTES = 64;

/** A schedule: the slots of a cron expression in a zone, or of an interval. */
export interface Schedule {
  /**
   * The smallest slot (Unix ms, server clock) strictly after afterMs;
   * null when there is none (a cron expression with no slot within 8·366
   * days, such as 0 0 30 2 *).
   */
  next(afterMs: number): number | null;
}

const SECOND = 1000;
const DAY = 86_400_000;

// ---------------------------------------------------------------------------
// Parsing

interface FieldSpec {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  readonly names?: readonly string[];
}

const MONTH_NAMES = [
  "jan",
  "feb",
  "mar",
  "apr",
  "may",
  "jun",
  "jul",
  "aug",
  "sep",
  "oct",
  "nov",
  "dec",
];
const DOW_NAMES = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

const SPECS: readonly FieldSpec[] = [
  { name: "second", min: 0, max: 59 },
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "day of month", min: 1, max: 31 },
  { name: "month", min: 1, max: 12, names: MONTH_NAMES },
  { name: "day of week", min: 0, max: 7, names: DOW_NAMES },
];

const MACROS: Readonly<Record<string, string>> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *",
};

/** One parsed field: which values match, and the nearest match at or after (before) each value. */
class Field {
  readonly ok: Uint8Array;
  readonly up: Int8Array;
  readonly down: Int8Array;

  constructor(ok: Uint8Array, min: number, max: number) {
    this.ok = ok;
    this.up = new Int8Array(max + 2).fill(-1);
    this.down = new Int8Array(max + 2).fill(-1);
    let n = -1;
    for (let v = max; v >= min; v--) {
      if (ok[v] === 1) {
        n = v;
      }
      this.up[v] = n;
    }
    n = -1;
    for (let v = min; v <= max; v++) {
      if (ok[v] === 1) {
        n = v;
      }
      this.down[v] = n;
    }
  }
}

function refuse(expr: string, why: string): never {
  throw new ArgumentError("cron " + JSON.stringify(expr) + ": " + why);
}

function fieldValue(expr: string, spec: FieldSpec, text: string): number {
  if (/^[0-9]+$/.test(text)) {
    const v = Number(text);
    if (v < spec.min || v > spec.max) {
      refuse(
        expr,
        spec.name +
          " " +
          text +
          " is out of range " +
          spec.min +
          "-" +
          spec.max,
      );
    }
    return v;
  }
  if (spec.names !== undefined && /^[A-Za-z]{3}$/.test(text)) {
    const i = spec.names.indexOf(text.toLowerCase());
    if (i >= 0) {
      return i + (spec.min === 1 ? 1 : 0);
    }
  }
  return refuse(
    expr,
    spec.name + " " + JSON.stringify(text) + " is not a value",
  );
}

function parseField(
  expr: string,
  spec: FieldSpec,
  text: string,
): { field: Field; star: boolean } {
  const ok = new Uint8Array(spec.max + 1);
  for (const item of text.split(",")) {
    if (item === "") {
      refuse(
        expr,
        spec.name + " " + JSON.stringify(text) + " has an empty item",
      );
    }
    const slash = item.indexOf("/");
    const base = slash < 0 ? item : item.slice(0, slash);
    let step = 1;
    if (slash >= 0) {
      const s = item.slice(slash + 1);
      if (!/^[0-9]+$/.test(s) || Number(s) < 1) {
        refuse(
          expr,
          spec.name +
            " " +
            JSON.stringify(item) +
            ": the step is not 1 or more",
        );
      }
      step = Number(s);
    }
    let lo: number;
    let hi: number;
    if (base === "*") {
      lo = spec.min;
      hi = spec.max;
    } else {
      const dash = base.indexOf("-");
      if (dash >= 0) {
        lo = fieldValue(expr, spec, base.slice(0, dash));
        hi = fieldValue(expr, spec, base.slice(dash + 1));
        if (lo > hi) {
          refuse(
            expr,
            spec.name + " " + JSON.stringify(item) + " is a range backwards",
          );
        }
      } else {
        lo = fieldValue(expr, spec, base);
        hi = slash >= 0 ? spec.max : lo;
      }
    }
    for (let v = lo; v <= hi; v += step) {
      ok[v] = 1;
    }
  }
  if (spec.max === 7) {
    // Day of week: 7 is Sunday, as 0 is.
    if (ok[7] === 1) {
      ok[0] = 1;
    }
    return {
      field: new Field(ok.subarray(0, 7), 0, 6),
      star: text.startsWith("*"),
    };
  }
  return {
    field: new Field(ok, spec.min, spec.max),
    star: text.startsWith("*"),
  };
}

// ---------------------------------------------------------------------------
// Calendar arithmetic on wall times: a wall time is the local date and time
// written as milliseconds as if it were UTC (proleptic Gregorian).

/** Days since 1970-01-01 of a civil date (month 1-12). */
function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const mp = (m + 9) % 12;
  const doy = Math.floor((153 * mp + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** The civil date of a day count since 1970-01-01. */
function civilFromDays(z: number): [number, number, number] {
  const zz = z + 719468;
  const era = Math.floor(zz / 146097);
  const doe = zz - era * 146097;
  const yoe = Math.floor(
    (doe -
      Math.floor(doe / 1460) +
      Math.floor(doe / 36524) -
      Math.floor(doe / 146096)) /
      365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  return [yoe + era * 400 + (m <= 2 ? 1 : 0), m, d];
}

function isLeap(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysIn(y: number, m: number): number {
  return m === 2 && isLeap(y) ? 29 : MONTH_DAYS[m - 1]!;
}

/** A wall time's fields. */
interface Wall {
  y: number;
  mo: number;
  d: number;
  h: number;
  mi: number;
  s: number;
}

function wallOf(w: number): Wall {
  const days = Math.floor(w / DAY);
  const [y, mo, d] = civilFromDays(days);
  const sec = Math.floor((w - days * DAY) / SECOND);
  return {
    y,
    mo,
    d,
    h: Math.floor(sec / 3600),
    mi: Math.floor(sec / 60) % 60,
    s: sec % 60,
  };
}

function wallMs(t: Wall): number {
  return (
    daysFromCivil(t.y, t.mo, t.d) * DAY +
    ((t.h * 60 + t.mi) * 60 + t.s) * SECOND
  );
}

// ---------------------------------------------------------------------------
// Time zones through Intl

/** A wall time's instant: the first occurrence, or the gap it falls in (the wall times that never occur). */
type Resolved =
  | { readonly t: number }
  | { readonly gapStart: number; readonly gapEnd: number };

/** The longest span of instants with one offset at both ends taken to have it throughout. */
const SPAN = 2 * DAY;

const WALL_TEXT = /^(\d+)\/(\d+)\/(\d+) ([AB]), (\d+):(\d+):(\d+)$/;

/** A time zone: offsets at instants, and instants of wall times. */
class Zone {
  readonly name: string;
  readonly #fmt: Intl.DateTimeFormat | undefined;
  /** Instants known to have one offset. */
  #span: { lo: number; hi: number; o: number } | undefined;

  constructor(name: string, fmt: Intl.DateTimeFormat | undefined) {
    this.name = name;
    this.#fmt = fmt;
  }

  /** The zone's offset at instant t (wall minus UTC), in ms. */
  offset(t: number): number {
    const f = this.#fmt;
    if (f === undefined) {
      return 0;
    }
    const sp = this.#span;
    if (sp !== undefined && t >= sp.lo && t <= sp.hi) {
      return sp.o;
    }
    const o = this.#format(f, t);
    // Two instants at most SPAN apart with one offset have it throughout
    // (no zone changes its offset and back within two days): extend the
    // span the offset is known for, or start another.
    if (
      sp !== undefined &&
      o === sp.o &&
      Math.max(sp.hi, t) - Math.min(sp.lo, t) <= SPAN
    ) {
      sp.lo = Math.min(sp.lo, t);
      sp.hi = Math.max(sp.hi, t);
    } else {
      this.#span = { lo: t, hi: t, o };
    }
    return o;
  }

  #format(f: Intl.DateTimeFormat, t: number): number {
    // en-US, h23, narrow era: "1/15/2027 A, 03:00:00" (format is several
    // times faster than formatToParts).
    const m = WALL_TEXT.exec(f.format(t));
    if (m === null) {
      throw new Error(
        "emq: cannot read the wall time of " + t + " in " + this.name,
      );
    }
    let y = Number(m[3]);
    if (m[4] === "B") {
      y = 1 - y;
    }
    const sec = Math.floor(t / SECOND) * SECOND;
    return (
      wallMs({
        y,
        mo: Number(m[1]),
        d: Number(m[2]),
        h: Number(m[5]) % 24,
        mi: Number(m[6]),
        s: Number(m[7]),
      }) - sec
    );
  }

  /** The wall time of instant t. */
  wall(t: number): number {
    return t + this.offset(t);
  }

  /** The first instant in (lo, hi] whose offset is not lo's (lo's offset differs from hi's). */
  transition(lo: number, hi: number): number {
    const o = this.offset(lo);
    let a = Math.floor(lo / SECOND);
    let b = Math.ceil(hi / SECOND);
    while (b - a > 1) {
      const m = Math.floor((a + b) / 2);
      if (this.offset(m * SECOND) === o) {
        a = m;
      } else {
        b = m;
      }
    }
    return b * SECOND;
  }

  /** The first instant whose wall time is w, or the gap w falls in. */
  resolve(w: number): Resolved {
    if (this.#fmt === undefined) {
      return { t: w };
    }
    const before = this.offset(w - DAY);
    const after = this.offset(w + DAY);
    let best: number | undefined;
    for (const o of before === after ? [before] : [before, after]) {
      const t = w - o;
      if (this.offset(t) === o && (best === undefined || t < best)) {
        best = t;
      }
    }
    if (best === undefined) {
      const o = this.offset(w - before);
      if (this.offset(w - o) === o) {
        best = w - o;
      }
    }
    if (best !== undefined) {
      return { t: best };
    }
    if (after > before) {
      // A gap: the offset rose from before to after at T, so the wall
      // times from T + before up to T + after never occur.
      const at = this.transition(w - after, w - before);
      return { gapStart: at + before, gapEnd: at + after };
    }
    return { gapStart: w, gapEnd: w + SECOND };
  }
}

const zones = new Map<string, Zone>();

/** The largest number of zones whose formatter is kept. */
const maxZones = 512;

/** The zone named tz ('' is UTC); an unknown name, or Local, throws an ArgumentError. */
function zoneOf(tz: string): Zone {
  if (typeof tz !== "string") {
    throw new ArgumentError("a time zone is a string");
  }
  const key = tz === "" ? "UTC" : tz;
  const z = zones.get(key);
  if (z !== undefined) {
    return z;
  }
  if (Buffer.byteLength(tz) > TZ_MAX_BYTES) {
    throw new ArgumentError(
      "time zone " +
        JSON.stringify(tz) +
        " is longer than " +
        TZ_MAX_BYTES +
        " bytes",
    );
  }
  let fmt: Intl.DateTimeFormat;
  try {
    if (key === "Local" || !/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(key)) {
      throw new RangeError("not a name");
    }
    fmt = new Intl.DateTimeFormat("en-US", {
      timeZone: key,
      hourCycle: "h23",
      era: "narrow",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
  } catch {
    throw new ArgumentError(
      "time zone " + JSON.stringify(tz) + " is not a known IANA name",
    );
  }
  const resolved = fmt.resolvedOptions().timeZone;
  if (resolved !== key && resolved.toLowerCase() === key.toLowerCase()) {
    // IANA names are case-sensitive (as the zone files are); ICU takes
    // any case.
    throw new ArgumentError(
      "time zone " +
        JSON.stringify(tz) +
        " is not a known IANA name (did you mean " +
        JSON.stringify(resolved) +
        "?)",
    );
  }
  const zone = new Zone(
    key,
    resolved === "UTC" || key === "UTC" ? undefined : fmt,
  );
  if (zones.size >= maxZones) {
    zones.clear();
  }
  zones.set(key, zone);
  return zone;
}

/** Throws an ArgumentError when tz ('' is UTC) is not a time zone this SDK knows. */
export function checkTimeZone(tz: string): void {
  zoneOf(tz);
}

// ---------------------------------------------------------------------------
// Cron

/** A parsed cron expression in a time zone. */
export class Cron implements Schedule {
  /** The expression as given. */
  readonly expr: string;
  /** The time zone's IANA name ("UTC" when given ""). */
  readonly tz: string;
  readonly #sec: Field;
  readonly #min: Field;
  readonly #hour: Field;
  readonly #dom: Field;
  readonly #month: Field;
  readonly #dow: Field;
  /** Whether a day matches when either of day of month and day of week does (neither field starts with *). */
  readonly #either: boolean;
  readonly #zone: Zone;

  /** Use parseCron. */
  private constructor(
    expr: string,
    zone: Zone,
    fields: Field[],
    either: boolean,
  ) {
    this.expr = expr;
    this.tz = zone.name;
    this.#zone = zone;
    this.#sec = fields[0]!;
    this.#min = fields[1]!;
    this.#hour = fields[2]!;
    this.#dom = fields[3]!;
    this.#month = fields[4]!;
    this.#dow = fields[5]!;
    this.#either = either;
  }

  /** Parses expr in tz ("" is UTC); see parseCron. */
  static parse(expr: string, tz: string): Cron {
    if (typeof expr !== "string") {
      throw new ArgumentError("a cron expression is a string");
    }
    if (Buffer.byteLength(expr) > CRON_MAX_BYTES) {
      refuse(expr, "longer than " + CRON_MAX_BYTES + " bytes");
    }
    let text = expr.replace(/^[ \t]+|[ \t]+$/g, "");
    if (text.startsWith("@")) {
      const m = MACROS[text.toLowerCase()];
      if (m === undefined) {
        refuse(expr, "unknown macro " + JSON.stringify(text));
      }
      text = m;
    }
    const parts = text === "" ? [] : text.split(/[ \t]+/);
    if (parts.length === 5) {
      parts.unshift("0");
    } else if (parts.length !== 6) {
      refuse(
        expr,
        "has " +
          parts.length +
          " fields; a cron expression has 5 (or 6, seconds first)",
      );
    }
    const fields: Field[] = [];
    const stars: boolean[] = [];
    parts.forEach((p, i) => {
      const f = parseField(expr, SPECS[i]!, p);
      fields.push(f.field);
      stars.push(f.star);
    });
    const zone = zoneOf(tz);
    return new Cron(expr, zone, fields, !stars[3] && !stars[5]);
  }

  #dayOk(y: number, mo: number, d: number): boolean {
    const dom = this.#dom.ok[d] === 1;
    const dow =
      this.#dow.ok[(((daysFromCivil(y, mo, d) + 4) % 7) + 7) % 7] === 1;
    return this.#either ? dom || dow : dom && dow;
  }

  /** The smallest matching wall time at or after w, or null past end. */
  #nextWall(w: number, end: number): number | null {
    const t = wallOf(Math.ceil(w / SECOND) * SECOND);
    const firstMonth = this.#month.up[1]!;
    for (;;) {
      if (daysFromCivil(t.y, t.mo, t.d) * DAY > end) {
        return null;
      }
      const mo = this.#month.up[t.mo]!;
      if (mo !== t.mo) {
        if (mo < 0) {
          t.y++;
          t.mo = firstMonth;
        } else {
          t.mo = mo;
        }
        t.d = 1;
        t.h = t.mi = t.s = 0;
        continue;
      }
      if (t.d > daysIn(t.y, t.mo)) {
        t.mo++;
        if (t.mo > 12) {
          t.mo = 1;
          t.y++;
        }
        t.d = 1;
        t.h = t.mi = t.s = 0;
        continue;
      }
      if (!this.#dayOk(t.y, t.mo, t.d)) {
        t.d++;
        t.h = t.mi = t.s = 0;
        continue;
      }
      const h = this.#hour.up[t.h]!;
      if (h < 0) {
        t.d++;
        t.h = t.mi = t.s = 0;
        continue;
      }
      if (h !== t.h) {
        t.h = h;
        t.mi = t.s = 0;
      }
      const mi = this.#min.up[t.mi]!;
      if (mi < 0) {
        t.mi = t.s = 0;
        if (++t.h > 23) {
          t.h = 0;
          t.d++;
        }
        continue;
      }
      if (mi !== t.mi) {
        t.mi = mi;
        t.s = 0;
      }
      const s = this.#sec.up[t.s]!;
      if (s < 0) {
        t.s = 0;
        if (++t.mi > 59) {
          t.mi = 0;
          if (++t.h > 23) {
            t.h = 0;
            t.d++;
          }
        }
        continue;
      }
      t.s = s;
      return wallMs(t);
    }
  }

  /** The largest matching wall time at or before w, or null before floor. */
  #prevWall(w: number, floor: number): number | null {
    const t = wallOf(Math.floor(w / SECOND) * SECOND);
    const lastMonth = this.#month.down[12]!;
    for (;;) {
      if (t.d >= 1 && (daysFromCivil(t.y, t.mo, t.d) + 1) * DAY <= floor) {
        return null;
      }
      const mo = this.#month.down[t.mo]!;
      if (mo !== t.mo) {
        if (mo < 0) {
          t.y--;
          t.mo = lastMonth;
        } else {
          t.mo = mo;
        }
        t.d = daysIn(t.y, t.mo);
        t.h = 23;
        t.mi = t.s = 59;
        continue;
      }
      if (t.d < 1) {
        if (--t.mo < 1) {
          t.mo = 12;
          t.y--;
        }
        t.d = daysIn(t.y, t.mo);
        t.h = 23;
        t.mi = t.s = 59;
        continue;
      }
      if (!this.#dayOk(t.y, t.mo, t.d)) {
        t.d--;
        t.h = 23;
        t.mi = t.s = 59;
        continue;
      }
      const h = this.#hour.down[t.h]!;
      if (h < 0) {
        t.d--;
        t.h = 23;
        t.mi = t.s = 59;
        continue;
      }
      if (h !== t.h) {
        t.h = h;
        t.mi = t.s = 59;
      }
      const mi = this.#min.down[t.mi]!;
      if (mi < 0) {
        t.mi = t.s = 59;
        if (--t.h < 0) {
          t.h = 23;
          t.d--;
        }
        continue;
      }
      if (mi !== t.mi) {
        t.mi = mi;
        t.s = 59;
      }
      const s = this.#sec.down[t.s]!;
      if (s < 0) {
        t.s = 59;
        if (--t.mi < 0) {
          t.mi = 59;
          if (--t.h < 0) {
            t.h = 23;
            t.d--;
          }
        }
        continue;
      }
      t.s = s;
      return wallMs(t);
    }
  }

  /**
   * @internal The smallest slot strictly after x, searching 8·366 days
   * past x; 0 when there is none. A slot is a whole second whose wall time
   * in the zone matches, except the second occurrence of a repeated wall
   * time; a wall time in a gap never occurs.
   */
  nextAfter(x: number): number {
    const z = this.#zone;
    const s0 = Math.floor(x / SECOND) * SECOND + SECOND;
    const limit = x + CRON_SEARCH_MS;
    let w = z.wall(s0);
    const r0 = z.resolve(w);
    if ("t" in r0 && r0.t < s0) {
      // s0 is the second occurrence of its wall time: the wall times up to
      // the end of the repeated ones first occurred before s0.
      const at = z.transition(r0.t, s0);
      w = at + z.offset(r0.t);
    }
    const end = limit + 2 * DAY;
    for (;;) {
      const m = this.#nextWall(w, end);
      if (m === null) {
        return 0;
      }
      const r = z.resolve(m);
      if (!("t" in r)) {
        w = Math.max(m + SECOND, r.gapEnd);
        continue;
      }
      if (r.t > limit) {
        return 0;
      }
      if (r.t < s0) {
        w = m + SECOND;
        continue;
      }
      return r.t;
    }
  }

  /** @internal The largest slot strictly before y and at or after floor; null when there is none. */
  prevBefore(y: number, floor: number): number | null {
    const z = this.#zone;
    const s0 = Math.ceil(y / SECOND) * SECOND - SECOND;
    if (s0 < floor) {
      return null;
    }
    let w = z.wall(s0);
    const r0 = z.resolve(w);
    if ("t" in r0 && r0.t < s0) {
      // s0 is a second occurrence: the repeated wall times after its own
      // first occurred before it.
      const at = z.transition(r0.t, s0);
      w = at + z.offset(r0.t) - SECOND;
    }
    const wFloor = floor - 2 * DAY;
    for (;;) {
      const m = this.#prevWall(w, wFloor);
      if (m === null) {
        return null;
      }
      const r = z.resolve(m);
      if (!("t" in r)) {
        w = Math.min(m - SECOND, r.gapStart - SECOND);
        continue;
      }
      if (r.t < floor) {
        return null;
      }
      if (r.t > s0) {
        w = m - SECOND;
        continue;
      }
      return r.t;
    }
  }

  /** The smallest slot strictly after afterMs (Unix ms); null when there is none within 8·366 days. */
  next(afterMs: number): number | null {
    checkInstant("afterMs", afterMs);
    const n = this.nextAfter(afterMs);
    return n === 0 ? null : n;
  }
}

/**
 * Parses a cron expression in an IANA time zone (echomq 2.6.0): 5 fields
 * (minute hour day-of-month month day-of-week, at second 0) or 6 (seconds
 * first), each a comma list of *, N or N-M with an optional /S; month and
 * day-of-week names (JAN, SUN, any case); 0 and 7 are Sunday; the macros
 * @yearly, @annually, @monthly, @weekly, @daily, @midnight and @hourly.
 * When neither day field starts with *, a day matches when either does.
 * tz "" is UTC; Local and unknown names are refused. Anything else (?, L,
 * W, #, a value out of range, a backwards range, a step below 1, an empty
 * item, another field count) throws an ArgumentError.
 */
export function parseCron(expr: string, tz: string = ""): Cron {
  return Cron.parse(expr, tz);
}

/** The slots of an interval: startMs + k·everyMs, k ≥ 0. */
export class Interval implements Schedule {
  readonly everyMs: number;
  readonly startMs: number;

  /** An interval of everyMs (above 0) from startMs (0 or more); bad values throw an ArgumentError. */
  constructor(everyMs: number, startMs: number) {
    if (!Number.isSafeInteger(everyMs) || everyMs < 1) {
      throw new ArgumentError(
        "everyMs " + everyMs + " is not a positive integer",
      );
    }
    if (!Number.isSafeInteger(startMs) || startMs < 0) {
      throw new ArgumentError(
        "startMs " + startMs + " is not a non-negative integer",
      );
    }
    this.everyMs = everyMs;
    this.startMs = startMs;
  }

  /** @internal The smallest slot strictly after x. */
  nextAfter(x: number): number {
    if (x < this.startMs) {
      return this.startMs;
    }
    return (
      this.startMs +
      (Math.floor((x - this.startMs) / this.everyMs) + 1) * this.everyMs
    );
  }

  /** @internal The largest slot strictly before y and at or after floor; null when there is none. */
  prevBefore(y: number, floor: number): number | null {
    if (y <= this.startMs) {
      return null;
    }
    const t =
      this.startMs +
      Math.floor((y - 1 - this.startMs) / this.everyMs) * this.everyMs;
    return t >= floor ? t : null;
  }

  /** The smallest slot strictly after afterMs; never null. */
  next(afterMs: number): number | null {
    checkInstant("afterMs", afterMs);
    return this.nextAfter(afterMs);
  }
}

function checkInstant(what: string, ms: number): void {
  if (!Number.isSafeInteger(ms)) {
    throw new ArgumentError(what + " " + ms + " is not an integer");
  }
}
