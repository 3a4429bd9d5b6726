// How the SDK's records print: console.log and util.inspect show a job's
// payload as text (or its size, when it is not text), times as dates; and
// JSON.stringify writes the payload as text instead of a Buffer's bytes.
// The methods are non-enumerable: the records compare and spread as the
// plain objects they are.

import { inspect } from "node:util";

/** How much of a payload inspect shows. */
const previewChars = 80;

/** @internal Whether b reads as UTF-8 text (no control characters but whitespace). */
function isText(b: Buffer, s: string): boolean {
  // eslint-disable-next-line no-control-regex
  return (
    Buffer.byteLength(s) === b.length &&
    !/[\u0000-\u0008\u000e-\u001f\ufffd]/.test(s)
  );
}

/** @internal A payload as JSON writes it: its text, or { base64 } when it is not text. */
export function payloadJSON(b: Buffer): string | { base64: string } {
  const s = b.toString("utf8");
  return isText(b, s) ? s : { base64: b.toString("base64") };
}

/** @internal A payload as inspect shows it: its text (cut at previewChars), or its size. */
function payloadPreview(b: Buffer): string {
  const s = b.toString("utf8");
  if (!isText(b, s)) {
    return "<" + b.length + " bytes>";
  }
  const cut = s.length > previewChars;
  return (
    JSON.stringify(cut ? s.slice(0, previewChars) : s) +
    (cut ? "… (" + b.length + " bytes)" : "")
  );
}

/** A value inspect prints as it is, without quotes. */
class Verbatim {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  [inspect.custom](): string {
    return this.text;
  }
}

type Rec = { readonly payload: Buffer } & Record<string, unknown>;

const timeFields: Record<string, string> = {
  deadlineMs: "deadline",
  atMs: "at",
};

/**
 * @internal Makes rec (a Job, a JobInfo, or one with decoded data) print
 * usefully under name: inspect shows its fields with the payload as text
 * (when the record has data, data instead) and times as ISO dates; toJSON
 * writes the payload (and any other bytes, a progress report) as text (or
 * base64) and leaves the rest as it is.
 */
export function printable<R extends object>(name: string, rec: R): R {
  const r = rec as unknown as Rec;
  Object.defineProperty(rec, inspect.custom, {
    enumerable: false,
    configurable: true,
    value(_depth: number, opts: object, insp: typeof inspect = inspect) {
      const shown: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(r)) {
        if (v === r.payload) {
          // the payload: as text, or left out beside its decoded data
          if (!("data" in r)) {
            shown.payload = new Verbatim(payloadPreview(r.payload));
          }
          continue;
        }
        if (Buffer.isBuffer(v)) {
          // other bytes (a progress report): as the payload is shown
          shown[k] = new Verbatim(payloadPreview(v));
          continue;
        }
        const t = timeFields[k];
        if (t !== undefined && typeof v === "number" && Number.isFinite(v)) {
          shown[t] = new Verbatim(new Date(v).toISOString());
          continue;
        }
        shown[k] = v;
      }
      return name + " " + insp(shown, opts);
    },
  });
  Object.defineProperty(rec, "toJSON", {
    enumerable: false,
    configurable: true,
    value() {
      const out: Record<string, unknown> = { ...r };
      for (const [k, v] of Object.entries(out)) {
        if (Buffer.isBuffer(v)) {
          out[k] = payloadJSON(v);
        }
      }
      return out;
    },
  });
  return rec;
}
