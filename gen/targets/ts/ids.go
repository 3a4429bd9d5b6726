package ts

import (
	"fmt"
	"math/big"

	"github.com/echomq/echomq/gen/target"
)

func idsFile(s *src, in *target.Input) {
	p := in.Protocol
	c := p.IDs
	tm, _ := c.Bitfield("time")
	nd, _ := c.Bitfield("node")
	sq, _ := c.Bitfield("sequence")
	total := 0
	for _, b := range c.Layout {
		total += b.Bits
	}
	maxBits := total
	if top := c.Layout[0]; top.Name == "zero" {
		maxBits -= top.Bits
	}
	maxValue := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(maxBits)), big.NewInt(1))
	example := ""
	if len(c.Examples) > 0 {
		example = ", e.g. " + c.Examples[0].ID
	}

	s.line(`import { isKind, type Kind } from "./protocol.js";`)
	s.blank()
	s.doc("", "The length of every branded id in bytes: a kind, then the body.")
	s.decl("", "export const ID_LENGTH", itoa(c.Length))
	s.blank()
	s.doc("", fmt.Sprintf("The length of an id's kind: %s.", c.KindPattern))
	s.decl("", "export const KIND_LENGTH", itoa(c.KindLength))
	s.blank()
	s.doc("", fmt.Sprintf("The length of an id's body: %s", sentence(c.BodySummary)))
	s.decl("", "export const ID_BODY_LENGTH", itoa(c.BodyLength))
	s.blank()
	s.doc("", fmt.Sprintf("The body's %s alphabet, in digit order.", c.Encoding))
	s.decl("", "export const ID_ALPHABET", q(c.Alphabet))
	s.blank()
	s.doc("", fmt.Sprintf("The snowflake epoch, %s, in Unix milliseconds.", c.Epoch.UTC().Format("2006-01-02T15:04:05Z07:00")))
	s.decl("", "export const ID_EPOCH_MS", fmt.Sprint(c.Epoch.UnixMilli()))
	s.blank()
	for _, b := range c.Layout {
		s.doc("", fmt.Sprintf("The snowflake field %s (bits %d..%d): %s", b.Name, b.Shift, b.Shift+b.Bits-1, sentence(b.Summary)))
		s.decl("", "export const ID_"+constName(b.Name)+"_SHIFT", itoa(b.Shift))
		s.decl("", "export const ID_"+constName(b.Name)+"_BITS", itoa(b.Bits))
		s.blank()
	}
	s.doc("", "The highest node number an IdGenerator may take.")
	s.decl("", "export const MAX_NODE", fmt.Sprint(1<<nd.Bits-1))
	s.blank()
	s.doc("", "The highest sequence number within one node and millisecond.")
	s.decl("", "export const MAX_SEQUENCE", fmt.Sprint(1<<sq.Bits-1))
	s.blank()
	s.doc("", "The latest mint time a snowflake holds, in milliseconds since the epoch.")
	s.decl("", "export const MAX_TIME_OFFSET_MS", fmt.Sprint(int64(1)<<tm.Bits-1))
	s.blank()
	s.doc("", "The largest snowflake value.")
	s.decl("", "const MAX_VALUE", maxValue.String()+"n")
	s.decl("", "const BASE", fmt.Sprint(len(c.Alphabet))+"n")
	s.blank()
	s.lines("", fmt.Sprintf(`/** DIGITS maps a character code to its digit in ID_ALPHABET, or -1. */
const DIGITS: Int8Array = (() => {
  const t = new Int8Array(128).fill(-1);
  for (let i = 0; i < ID_ALPHABET.length; i++) {
    t[ID_ALPHABET.charCodeAt(i)] = i;
  }
  return t;
})();

/**
 * A string that is not a well-formed branded id: not ID_LENGTH bytes, a
 * kind that is not KIND_LENGTH ASCII capitals, or a body that is not a
 * base62 snowflake. Key builders and parseId throw it before any command is
 * sent.
 */
export class IdError extends Error {
  /** The text that was refused. */
  readonly text: string;

  constructor(text: string, why: string) {
    super("emq: malformed id " + JSON.stringify(text) + ": " + why);
    this.name = "IdError";
    this.text = text;
  }
}

/** What an id says of itself. */
export interface DecodedId {
  /** The id's canonical text%[1]s. */
  readonly text: string;
  /** The id's kind. */
  readonly kind: string;
  /** The id's snowflake. */
  readonly value: bigint;
  /** The mint time, in Unix milliseconds. */
  readonly timeMs: number;
  /** The node that minted the id. */
  readonly node: number;
  /** The id's sequence within its node and millisecond. */
  readonly sequence: number;
}

function field(v: bigint, shift: number, bits: number): number {
  return Number((v >> BigInt(shift)) & ((1n << BigInt(bits)) - 1n));
}

/** Returns the snowflake of an id's body, or undefined when it is not one. */
function idValue(text: string): bigint | undefined {
  let v = 0n;
  for (let i = KIND_LENGTH; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const d = c < 128 ? DIGITS[c]! : -1;
    if (d < 0) {
      return undefined;
    }
    v = v * BASE + BigInt(d);
  }
  return v > MAX_VALUE ? undefined : v;
}

/**
 * Checks text against the id canon and decodes it; a malformed id throws an
 * IdError. Which kinds a queue admits is the enqueue script's policy, not
 * the parser's.
 */
export function parseId(text: string): DecodedId {
  if (typeof text !== "string") {
    throw new IdError(String(text), "not a string");
  }
  if (text.length !== ID_LENGTH) {
    throw new IdError(text, text.length + " bytes, want " + ID_LENGTH);
  }
  for (let i = 0; i < KIND_LENGTH; i++) {
    const c = text.charCodeAt(i);
    if (c < 65 || c > 90) {
      throw new IdError(text, "the kind is not ASCII capitals");
    }
  }
  const v = idValue(text);
  if (v === undefined) {
    throw new IdError(text, "the body is not a base62 snowflake");
  }
  return {
    text,
    kind: text.slice(0, KIND_LENGTH),
    value: v,
    timeMs: ID_EPOCH_MS + field(v, ID_TIME_SHIFT, ID_TIME_BITS),
    node: field(v, ID_NODE_SHIFT, ID_NODE_BITS),
    sequence: field(v, ID_SEQUENCE_SHIFT, ID_SEQUENCE_BITS),
  };
}

/** Reports whether text is a well-formed branded id. */
export function isId(text: string): boolean {
  try {
    parseId(text);
    return true;
  } catch {
    return false;
  }
}

/** Returns the id of kind whose snowflake is value. */
export function formatId(kind: string, value: bigint): string {
  if (!/^[A-Z]+$/.test(kind) || kind.length !== KIND_LENGTH) {
    throw new IdError(kind, "the kind is not KIND_LENGTH ASCII capitals");
  }
  if (value < 0n || value > MAX_VALUE) {
    throw new IdError(kind, "the value is outside the snowflake");
  }
  let body = "";
  let v = value;
  for (let i = 0; i < ID_BODY_LENGTH; i++) {
    body = ID_ALPHABET[Number(v %% BASE)] + body;
    v /= BASE;
  }
  return kind + body;
}

/** The parts of a snowflake. */
export interface IdParts {
  /** The mint time, in Unix milliseconds. */
  readonly timeMs: number;
  readonly node: number;
  readonly sequence: number;
}

/**
 * Returns the id of kind whose snowflake holds the time (to the
 * millisecond), node and sequence. A malformed kind throws an IdError; a
 * time outside the snowflake's range and a node or sequence out of range
 * throw a RangeError.
 */
export function newId(kind: string, parts: IdParts): string {
  formatId(kind, 0n);
  const ms = parts.timeMs - ID_EPOCH_MS;
  if (!Number.isSafeInteger(ms) || ms < 0 || ms > MAX_TIME_OFFSET_MS) {
    throw new RangeError("emq: time is outside the snowflake's range");
  }
  const { node, sequence } = parts;
  if (!Number.isInteger(node) || node < 0 || node > MAX_NODE) {
    throw new RangeError("emq: node " + node + " is out of range");
  }
  if (!Number.isInteger(sequence) || sequence < 0 || sequence > MAX_SEQUENCE) {
    throw new RangeError("emq: sequence " + sequence + " is out of range");
  }
  const v =
    (BigInt(ms) << BigInt(ID_TIME_SHIFT)) |
    (BigInt(node) << BigInt(ID_NODE_SHIFT)) |
    (BigInt(sequence) << BigInt(ID_SEQUENCE_SHIFT));
  return formatId(kind, v);
}

/**
 * Mints ids for one node. Ids from one generator strictly increase, also
 * when the clock steps back or more than MAX_SEQUENCE ids are minted in one
 * millisecond (the generator then runs ahead of the clock). Two live
 * generators must never share a node: %[2]s
 */
export class IdGenerator {
  /** The generator's node number. */
  readonly node: number;
  /** The last minted millisecond and sequence, packed. */
  private last = 0n;

  constructor(node: number) {
    if (!Number.isInteger(node) || node < 0 || node > MAX_NODE) {
      throw new RangeError("emq: node " + node + " is out of range");
    }
    this.node = node;
  }

  /** Returns a fresh id of a registered kind, greater than every id before. */
  mint(kind: Kind, nowMs: number = Date.now()): string {
    if (!isKind(kind)) {
      throw new IdError(String(kind), "the kind is not registered");
    }
    const ms = Math.floor(nowMs) - ID_EPOCH_MS;
    if (ms < 0) {
      throw new RangeError("emq: the clock is before the snowflake epoch");
    }
    let next = BigInt(ms) << BigInt(ID_SEQUENCE_BITS);
    if (next <= this.last) {
      next = this.last + 1n;
    }
    this.last = next;
    const t = next >> BigInt(ID_SEQUENCE_BITS);
    if (t > BigInt(MAX_TIME_OFFSET_MS)) {
      throw new RangeError("emq: the clock is past the snowflake's range");
    }
    const seq = next & BigInt(MAX_SEQUENCE);
    const v =
      (t << BigInt(ID_TIME_SHIFT)) |
      (BigInt(this.node) << BigInt(ID_NODE_SHIFT)) |
      (seq << BigInt(ID_SEQUENCE_SHIFT));
    return formatId(kind, v);
  }
}`, example, sentence(c.Uniqueness)))
}
