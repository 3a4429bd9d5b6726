"""emqgen's Python target, as an out-of-process plugin (docs/plugins.md).

It reads one emqgen.plugin.request/v1 on standard input and writes one
emqgen.plugin.response/v1 on standard output: the generated layer of the
Python SDK (sdk/python/src/echomq/_gen/), a pure function of the request.
Everything protocol-specific comes from the request; this program knows
only Python and the shape of the request. It uses the standard library
alone, so `go run ./cmd/emqgen gen` needs nothing but python3, and it
writes every file exactly as `ruff format` (pinned in
sdk/python/requirements-dev.lock) prints it: sdk/python's checks run
`ruff format --check` and `ruff check` on the committed files.

Options (emqgen.yaml): "package" is the directory under `out` the files go
to (default "src/echomq/_gen").
"""

from __future__ import annotations

import json
import keyword
import re
import sys
import textwrap
from typing import Any

REQUEST = "emqgen.plugin.request/v1"
RESPONSE = "emqgen.plugin.response/v1"

LINE = 100  # ruff's line-length in sdk/python/pyproject.toml


class Refuse(Exception):
    """Something in the request this plugin cannot render."""


# ---------------------------------------------------------------- text helpers


def lit(s: str) -> str:
    """A Python string literal for s, quoted as ruff format prefers."""
    q = '"'
    if '"' in s and "'" not in s:
        q = "'"
    out = [q]
    for ch in s:
        if ch == "\\":
            out.append("\\\\")
        elif ch == q:
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append(q)
    return "".join(out)


def doc_text(s: str) -> str:
    """Text made safe inside a triple-quoted docstring."""
    s = " ".join(s.replace("\\", "\\\\").split())
    s = s.replace('"""', '\\"\\"\\"')
    return s


def sentence(s: str) -> str:
    s = " ".join(s.split())
    if s and s[-1] not in ".!?":
        s += "."
    return s


def lower_first(s: str) -> str:
    return s[:1].lower() + s[1:] if s and not s[:2].isupper() else s


def const(name: str) -> str:
    """An UPPER_SNAKE identifier for a manifest name."""
    c = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").upper()
    if not c or c[0].isdigit():
        c = "X_" + c
    return c


def ident(name: str) -> str:
    """A lower_snake identifier for a manifest name."""
    c = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").lower()
    if not c or c[0].isdigit():
        c = "x_" + c
    if keyword.iskeyword(c) or keyword.issoftkeyword(c):
        c += "_"
    return c


def pascal(name: str) -> str:
    return "".join(w[:1].upper() + w[1:] for w in re.split(r"[^A-Za-z0-9]+", name) if w)


class Src:
    """A Python module being written, line by line."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def line(self, s: str = "") -> None:
        self.lines.append(s)

    def blank(self, n: int = 1) -> None:
        for _ in range(n):
            self.lines.append("")

    def doc(self, ind: str, text: str) -> None:
        """A docstring: one line when it fits the idea, else wrapped paragraphs."""
        t = doc_text(text)
        if t.endswith('"'):
            t += " "
        one = f'{ind}"""{t}"""'
        if len(one) <= LINE:
            self.lines.append(one)
            return
        wrapped = textwrap.wrap(
            t,
            width=LINE - 3,
            initial_indent=ind + '"""',
            subsequent_indent=ind,
            break_long_words=False,
            break_on_hyphens=False,
        )
        if len(wrapped) == 1:
            self.lines.append(one)
            return
        self.lines.extend(wrapped)
        self.lines.append(f'{ind}"""')

    def comment(self, ind: str, text: str) -> None:
        t = " ".join(text.split())
        for w in textwrap.wrap(t, width=max(LINE - len(ind) - 2, 40), break_long_words=False):
            self.lines.append(f"{ind}# {w}")

    def call(self, ind: str, head: str, items: list[str], tail: str) -> None:
        """head(items)tail on one line when it fits, else one item a line."""
        one = ind + head + ", ".join(items) + tail
        if len(one) <= LINE and not any("\n" in i for i in items):
            self.lines.append(one)
            return
        self.lines.append(ind + head)
        for it in items:
            self.lines.append(ind + "    " + it + ",")
        self.lines.append(
            ind + tail.lstrip() if tail.startswith(")") or tail.startswith("]") else ind + tail
        )

    def seq(self, ind: str, head: str, items: list[str], close: str) -> None:
        """A collection always exploded, one item a line, trailing comma (ruff keeps it so)."""
        if not items:
            self.lines.append(ind + head + close)
            return
        if len(items) == 1 and head.endswith("(") and close.startswith(")"):
            one = ind + head + items[0] + "," + close
            if len(one) <= LINE:
                self.lines.append(one)
                return
        self.lines.append(ind + head)
        for it in items:
            self.lines.append(ind + "    " + it + ",")
        self.lines.append(ind + close)

    def text(self) -> str:
        out: list[str] = []
        for ln in self.lines:
            out.append(ln)
        while out and out[-1] == "":
            out.pop()
        return "\n".join(out) + "\n"


def header(src: Src, req: dict[str, Any], summary: str) -> None:
    h = req["emqgen"]["header"]
    p = req["protocol"]
    src.line(f"# {h['marker']}")
    src.line(
        f"# Source: {h['source']} ({p['name']} {p['version']['text']}). Regenerate with: {h['regenerate']}"
    )
    src.doc("", summary)
    src.blank()


# ---------------------------------------------------------------- protocol.py


def protocol_file(req: dict[str, Any]) -> str:
    p = req["protocol"]
    v = p["version"]
    s = Src()
    header(
        s,
        req,
        f"The {p['name']} protocol's constants: identity, kinds, the job row, states and sets.",
    )
    s.line("from typing import Final, Literal, TypeGuard")
    s.blank()
    record = p["version_record"]
    if not record.endswith(v["text"]):
        raise Refuse(f"the version record {record!r} does not end with the version {v['text']!r}")
    prefix = record[: len(record) - len(v["text"])]
    s.line(f"PROTOCOL: Final = {lit(p['name'])}")
    s.doc("", f"The name of the wire protocol: {p['summary']}")
    s.blank()
    s.line(f"VERSION: Final = {lit(v['text'])}")
    s.doc("", "The wire version this SDK speaks.")
    s.blank()
    s.line(f"VERSION_MAJOR: Final = {v['major']}")
    s.line(f"VERSION_MINOR: Final = {v['minor']}")
    s.line(f"VERSION_PATCH: Final = {v['patch']}")
    s.doc("", "The parts of VERSION.")
    s.blank()
    vm = next((m for m in p["reserve"] if m["value"]), None)
    tmpl = f" ({vm['value']})" if vm else ""
    s.line(f"VERSION_RECORD: Final = {lit(record)}")
    s.doc(
        "", f"The value of the reserve's version member that this SDK claims and fences on{tmpl}."
    )
    s.blank()
    s.line(f"VERSION_RECORD_PREFIX: Final = {lit(prefix)}")
    s.doc("", "The prefix of every version record.")
    s.blank()
    s.line(f"SERVER: Final = {lit(p['server'])}")
    s.doc("", "The servers the protocol runs on.")
    s.blank()
    s.line(f"INVARIANT: Final = {lit(p['invariant'])}")
    s.doc("", "The invariant every script keeps.")
    s.blank()

    # Kinds.
    for k in p["kinds"]:
        s.line(f"KIND_{const(k['name'])}: Final = {lit(k['name'])}")
        s.doc("", f"The kind {k['name']}: {k['summary']}")
        s.blank()
    kinds = [f"KIND_{const(k['name'])}" for k in p["kinds"]]
    s.call("", "Kind = Literal[", [lit(k["name"]) for k in p["kinds"]], "]")
    s.doc("", f"A kind: the namespace that starts every branded id ({p['ids']['kind_pattern']}).")
    s.blank()
    s.seq("", "KINDS: Final[tuple[Kind, ...]] = (", kinds, ")")
    s.doc("", "The kind registry, in manifest order.")
    s.blank()
    work = [k for k in p["kinds"] if k["name"] == p["work_kind"]]
    if not work:
        raise Refuse(f"the work kind {p['work_kind']!r} is not a registered kind")
    s.line(f"WORK_KIND: Final = KIND_{const(p['work_kind'])}")
    s.doc(
        "",
        f"The only kind the enqueue scripts admit in the job position ({p['work_kind']}); any other kind is refused with a wire error.",
    )
    s.blank(2)
    s.line("def is_kind(k: str) -> TypeGuard[Kind]:")
    s.doc("    ", "Reports whether k is in the kind registry.")
    s.line("    return k in KINDS")
    s.blank(2)

    vocabularies_code(s, p)

    # Row fields.
    roles = []
    for f in p["row"]["fields"]:
        role = f["role"]
        roles.append((role, f"FIELD_{const(role)}"))
        s.line(f"FIELD_{const(role)}: Final = {lit(f['name'])}")
        s.doc("", f"The row field with the {role} role (encoding {f['encoding']}): {f['summary']}")
        s.blank()
    s.seq("", "ROW_FIELDS: Final = (", [r for _, r in roles], ")")
    s.doc(
        "",
        f"The row's field names in manifest order; a row has exactly these. {p['row']['summary']}",
    )
    s.blank(2)
    s.line("def field_by_role(role: str) -> str | None:")
    s.doc(
        "    ",
        f"Returns the name of the row field with role ({', '.join(r for r, _ in roles)}), or None.",
    )
    s.seq("    ", "fields = {", [f"{lit(r)}: {c}" for r, c in roles], "}")
    s.line("    return fields.get(role)")
    s.blank(2)
    token = [f for f in p["row"]["fields"] if f["role"] == "token"]
    if token:
        s.line(f"INITIAL_TOKEN: Final = {lit(token[0]['initial'])}")
        s.doc("", "The token field's value at admission.")
        s.blank()

    # States.
    for st in p["row"]["states"]:
        s.line(f"STATE_{const(st['name'])}: Final = {lit(st['name'])}")
        s.doc("", f"The state {st['name']}: {st['summary']}")
        s.blank()
    s.call("", "State = Literal[", [lit(st["name"]) for st in p["row"]["states"]], "]")
    s.doc("", f"A value of the row's state field. {p['invariant']}")
    s.blank()
    s.seq(
        "",
        "STATES: Final[tuple[State, ...]] = (",
        [f"STATE_{const(st['name'])}" for st in p["row"]["states"]],
        ")",
    )
    s.doc("", "Every state, in manifest order.")
    s.blank(2)
    s.line("def is_state(s: str) -> TypeGuard[State]:")
    s.doc("    ", "Reports whether s is a state.")
    s.line("    return s in STATES")
    s.blank(2)

    # Sets.
    for st in p["sets"]:
        s.line(f"SET_{const(st['key'])}: Final = {lit(st['key'])}")
        score = "scored zero" if st["lex"] else f"scored {st['score']}"
        s.doc("", f"The set {st['key']} holds ids in state {st['state']}, {score}: {st['summary']}")
        s.blank()
    s.call("", "SetName = Literal[", [lit(st["key"]) for st in p["sets"]], "]")
    s.doc("", "A sorted set of a queue.")
    s.blank()
    s.seq(
        "",
        "SETS: Final[tuple[SetName, ...]] = (",
        [f"SET_{const(st['key'])}" for st in p["sets"]],
        ")",
    )
    s.doc("", "Every sorted set of a queue, in manifest order.")
    s.blank(2)
    s.line("def is_set_name(s: str) -> TypeGuard[SetName]:")
    s.doc("    ", "Reports whether s names a set.")
    s.line("    return s in SETS")
    s.blank(2)
    s.line("_SET_STATE: Final[dict[str, State]] = {")
    for st in p["sets"]:
        s.line(f"    SET_{const(st['key'])}: STATE_{const(st['state'])},")
    s.line("}")
    s.line("_STATE_SET: Final[dict[str, SetName]] = {")
    for st in p["sets"]:
        s.line(f"    STATE_{const(st['state'])}: SET_{const(st['key'])},")
    s.line("}")
    s.blank(2)
    s.line("def set_state(s: SetName) -> State:")
    s.doc("    ", "The state of the ids set s holds.")
    s.line("    return _SET_STATE[s]")
    s.blank(2)
    s.line("def state_set(st: State) -> SetName:")
    s.doc("    ", "The set that holds ids in state st.")
    s.line("    return _STATE_SET[st]")
    s.blank(2)
    lex = [f"SET_{const(st['key'])}" for st in p["sets"] if st["lex"]]
    s.line("def set_is_lex(s: SetName) -> bool:")
    s.doc(
        "    ",
        "Reports whether every member of s scores zero, so that lexicographic order is mint order and newest-first browse is a reverse lex range.",
    )
    if lex:
        s.line(f"    return s in ({', '.join(lex)}{',' if len(lex) == 1 else ''})")
    else:
        s.line("    return False")
    return s.text()


# ---------------------------------------------------------------- ids.py


def layout_field(p: dict[str, Any], name: str) -> dict[str, Any]:
    layout: list[dict[str, Any]] = p["ids"]["layout"]
    for f in layout:
        if f["name"] == name:
            return f
    raise Refuse(f"the snowflake layout has no field {name!r}")


def ids_file(req: dict[str, Any]) -> str:
    p = req["protocol"]
    ids = p["ids"]
    s = Src()
    header(s, req, "The id canon: branded ids, their snowflakes, parsing, formatting and minting.")
    s.line("import re")
    s.line("import time")
    s.line("from dataclasses import dataclass")
    s.line("from typing import Final")
    s.blank()
    s.line("from .protocol import Kind, is_kind")
    s.blank()
    s.line(f"ID_LENGTH: Final = {ids['length']}")
    s.doc("", "The length of every branded id in bytes: a kind, then the body.")
    s.blank()
    s.line(f"KIND_LENGTH: Final = {ids['kind_length']}")
    s.doc("", f"The length of an id's kind: {ids['kind_pattern']}.")
    s.blank()
    s.line(f"KIND_PATTERN: Final = {lit(ids['kind_pattern'])}")
    s.doc("", "The pattern of an id's kind (unanchored).")
    s.blank()
    s.line(f"ID_BODY_LENGTH: Final = {ids['body_length']}")
    s.doc("", f"The length of an id's body: {ids['body_summary']}")
    s.blank()
    s.line(f"ID_ALPHABET: Final = {lit(ids['alphabet'])}")
    s.doc("", f"The body's {ids['encoding']} alphabet, in digit order.")
    s.blank()
    s.line(f"ID_EPOCH_MS: Final = {ids['epoch_ms']}")
    s.doc("", f"The snowflake epoch, {ids['epoch']}, in Unix milliseconds.")
    s.blank()
    total = 0
    for f in ids["layout"]:
        total += f["bits"]
        n = const(f["name"])
        s.line(f"ID_{n}_SHIFT: Final = {f['shift']}")
        s.line(f"ID_{n}_BITS: Final = {f['bits']}")
        s.doc(
            "",
            f"The snowflake field {f['name']} (bits {f['shift']}..{f['shift'] + f['bits'] - 1}): {f['summary']}",
        )
        s.blank()
    if total != 64:
        raise Refuse(f"the snowflake layout has {total} bits, not 64")
    tf, nf, qf = layout_field(p, "time"), layout_field(p, "node"), layout_field(p, "sequence")
    top = max(
        f["shift"] + f["bits"] for f in ids["layout"] if f["name"] in ("time", "node", "sequence")
    )
    s.line("MAX_NODE: Final = (1 << ID_NODE_BITS) - 1")
    s.doc("", "The highest node number an IdGenerator may take.")
    s.blank()
    s.line("MAX_SEQUENCE: Final = (1 << ID_SEQUENCE_BITS) - 1")
    s.doc("", "The highest sequence number within one node and millisecond.")
    s.blank()
    s.line("MAX_TIME_OFFSET_MS: Final = (1 << ID_TIME_BITS) - 1")
    s.doc("", "The latest mint time a snowflake holds, in milliseconds since the epoch.")
    s.blank()
    s.line(f"_MAX_VALUE: Final = (1 << {top}) - 1")
    s.line("_BASE: Final = len(ID_ALPHABET)")
    s.line("_DIGITS: Final = {c: i for i, c in enumerate(ID_ALPHABET)}")
    s.line('_KIND_RE: Final = re.compile("(?:" + KIND_PATTERN + ")")')
    del tf, nf, qf
    s.blank(2)
    s.line("class IdError(ValueError):")
    s.doc(
        "    ",
        "A string that is not a well-formed branded id: not ID_LENGTH bytes, a kind that does not match KIND_PATTERN, or a body that is not a snowflake in ID_ALPHABET. Key builders and parse_id raise it before any command is sent.",
    )
    s.blank()
    s.line("    text: str")
    s.doc("    ", "The text that was refused.")
    s.blank()
    s.line("    def __init__(self, text: str, why: str) -> None:")
    s.line('        super().__init__(f"emq: malformed id {text!r}: {why}")')
    s.line("        self.text = text")
    s.blank(2)
    s.line("@dataclass(frozen=True, slots=True)")
    s.line("class DecodedId:")
    s.doc("    ", "What an id says of itself.")
    s.blank()
    s.line("    text: str")
    s.doc("    ", "The id's canonical text.")
    s.line("    kind: str")
    s.doc("    ", "The id's kind.")
    s.line("    value: int")
    s.doc("    ", "The id's snowflake.")
    s.line("    time_ms: int")
    s.doc("    ", "The mint time, in Unix milliseconds.")
    s.line("    node: int")
    s.doc("    ", "The node that minted the id.")
    s.line("    sequence: int")
    s.doc("    ", "The id's sequence within its node and millisecond.")
    s.blank(2)
    s.line("def _field(v: int, shift: int, bits: int) -> int:")
    s.line("    return (v >> shift) & ((1 << bits) - 1)")
    s.blank(2)
    s.line("def parse_id(text: str) -> DecodedId:")
    s.doc(
        "    ",
        "Checks text against the id canon and decodes it; a malformed id raises an IdError. Which kinds a queue admits is the enqueue script's policy, not the parser's.",
    )
    s.line("    if not isinstance(text, str):")
    s.line('        raise IdError(repr(text), "not a string")')
    s.line("    n = len(text.encode())")
    s.line("    if n != ID_LENGTH:")
    s.line('        raise IdError(text, f"{n} bytes, want {ID_LENGTH}")')
    s.line("    kind = text[:KIND_LENGTH]")
    s.line("    if not _KIND_RE.fullmatch(kind):")
    s.line('        raise IdError(text, f"the kind does not match {KIND_PATTERN}")')
    s.line("    v = 0")
    s.line("    for c in text[KIND_LENGTH:]:")
    s.line("        d = _DIGITS.get(c)")
    s.line("        if d is None:")
    s.line('            raise IdError(text, "the body is not a snowflake in ID_ALPHABET")')
    s.line("        v = v * _BASE + d")
    s.line("    if v > _MAX_VALUE:")
    s.line('        raise IdError(text, "the body is outside the snowflake")')
    s.call(
        "    ",
        "return DecodedId(",
        [
            "text=text",
            "kind=kind",
            "value=v",
            "time_ms=ID_EPOCH_MS + _field(v, ID_TIME_SHIFT, ID_TIME_BITS)",
            "node=_field(v, ID_NODE_SHIFT, ID_NODE_BITS)",
            "sequence=_field(v, ID_SEQUENCE_SHIFT, ID_SEQUENCE_BITS)",
        ],
        ")",
    )
    s.blank(2)
    s.line("def is_id(text: str) -> bool:")
    s.doc("    ", "Reports whether text is a well-formed branded id.")
    s.line("    try:")
    s.line("        parse_id(text)")
    s.line("    except IdError:")
    s.line("        return False")
    s.line("    return True")
    s.blank(2)
    s.line("def validate_id(text: str) -> str:")
    s.doc(
        "    ", "Returns text when it is a well-formed branded id and raises an IdError otherwise."
    )
    s.line("    return parse_id(text).text")
    s.blank(2)
    s.line("def format_id(kind: str, value: int) -> str:")
    s.doc("    ", "Returns the id of kind whose snowflake is value.")
    s.line(
        "    if not isinstance(kind, str) or len(kind) != KIND_LENGTH or not _KIND_RE.fullmatch(kind):"
    )
    s.line('        raise IdError(str(kind), f"the kind does not match {KIND_PATTERN}")')
    s.line("    if value < 0 or value > _MAX_VALUE:")
    s.line('        raise IdError(kind, "the value is outside the snowflake")')
    s.line("    body = []")
    s.line("    for _ in range(ID_BODY_LENGTH):")
    s.line("        value, d = divmod(value, _BASE)")
    s.line("        body.append(ID_ALPHABET[d])")
    s.line('    return kind + "".join(reversed(body))')
    s.blank(2)
    s.line("def new_id(kind: str, time_ms: int, node: int, sequence: int) -> str:")
    s.doc(
        "    ",
        "Returns the id of kind whose snowflake holds the time (Unix milliseconds), node and sequence. A malformed kind raises an IdError; a time outside the snowflake's range and a node or sequence out of range raise a ValueError.",
    )
    s.line("    format_id(kind, 0)")
    s.line("    ms = time_ms - ID_EPOCH_MS")
    s.line("    if ms < 0 or ms > MAX_TIME_OFFSET_MS:")
    s.line('        raise ValueError("emq: time is outside the snowflake\'s range")')
    s.line("    if node < 0 or node > MAX_NODE:")
    s.line('        raise ValueError(f"emq: node {node} is out of range")')
    s.line("    if sequence < 0 or sequence > MAX_SEQUENCE:")
    s.line('        raise ValueError(f"emq: sequence {sequence} is out of range")')
    s.line(
        "    v = (ms << ID_TIME_SHIFT) | (node << ID_NODE_SHIFT) | (sequence << ID_SEQUENCE_SHIFT)"
    )
    s.line("    return format_id(kind, v)")
    s.blank(2)
    s.line("class IdGenerator:")
    s.doc(
        "    ",
        f"Mints ids for one node. Ids from one generator strictly increase, also when the clock steps back or more than MAX_SEQUENCE ids are minted in one millisecond (the generator then runs ahead of the clock). Two live generators must never share a node: {ids['uniqueness']}",
    )
    s.blank()
    s.line("    def __init__(self, node: int) -> None:")
    s.doc("        ", "A generator for node; a node out of range raises a ValueError.")
    s.line("        if node < 0 or node > MAX_NODE:")
    s.line('            raise ValueError(f"emq: node {node} is out of range")')
    s.line("        self._node = node")
    s.line("        self._last = 0")
    s.blank()
    s.line("    @property")
    s.line("    def node(self) -> int:")
    s.doc("        ", "The generator's node number.")
    s.line("        return self._node")
    s.blank()
    s.line("    def mint(self, kind: Kind, now_ms: int | None = None) -> str:")
    s.doc("        ", "Returns a fresh id of a registered kind, greater than every id before.")
    s.line("        if not is_kind(kind):")
    s.line('            raise IdError(str(kind), "the kind is not registered")')
    s.line("        now = time.time_ns() // 1_000_000 if now_ms is None else now_ms")
    s.line("        ms = now - ID_EPOCH_MS")
    s.line("        if ms < 0:")
    s.line('            raise ValueError("emq: the clock is before the snowflake epoch")')
    s.line("        nxt = ms << ID_SEQUENCE_BITS")
    s.line("        if nxt <= self._last:")
    s.line("            nxt = self._last + 1")
    s.line("        self._last = nxt")
    s.line("        t = nxt >> ID_SEQUENCE_BITS")
    s.line("        if t > MAX_TIME_OFFSET_MS:")
    s.line('            raise ValueError("emq: the clock is past the snowflake\'s range")')
    s.line("        seq = nxt & MAX_SEQUENCE")
    s.line(
        "        v = (t << ID_TIME_SHIFT) | (self._node << ID_NODE_SHIFT) | (seq << ID_SEQUENCE_SHIFT)"
    )
    s.line("        return format_id(kind, v)")
    return s.text()


# ---------------------------------------------------------------- keys.py


def concat(parts: list[dict[str, Any]], fill: dict[str, str]) -> str:
    """A Python expression joining the parts; holes are the expressions of fill."""
    items: list[str] = []
    for part in parts:
        if "lit" in part:
            if items and items[-1].startswith(('"', "'")) and not items[-1].startswith("str("):
                prev = items.pop()
                items.append(lit(eval(prev) + part["lit"]))
            else:
                items.append(lit(part["lit"]))
        else:
            h = part["hole"]
            if h not in fill:
                raise Refuse(f"a key part has the hole {h!r}, which this plugin cannot fill")
            items.append(fill[h])
    return " + ".join(items) if items else '""'


def queue_key_types(p: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for t in p["key_types"]:
        holes = [x["hole"] for x in t["parts"] if "hole" in x]
        if holes == ["queue"]:
            out.append(t)
    return out


def row_type(p: dict[str, Any]) -> dict[str, Any]:
    types: list[dict[str, Any]] = p["key_types"]
    for t in types:
        if t["name"] == p["row"]["key"]:
            return t
    raise Refuse(f"the row's key type {p['row']['key']!r} is not a key type")


def keys_file(req: dict[str, Any]) -> str:
    p = req["protocol"]
    q = p["queues"]
    s = Src()
    header(
        s,
        req,
        "Key builders: queue names checked against the grammar, ids against the canon, before any command is sent.",
    )
    s.line("import re")
    s.line("from typing import Final, Literal")
    s.blank()
    s.line("from .ids import validate_id")
    sets = [f"SET_{const(st['key'])}" for st in p["sets"]]
    s.line("from .protocol import SetName")
    s.blank()
    s.line(f"MAX_QUEUE_LENGTH: Final = {q['max_length']}")
    s.doc("", "The longest queue name the grammar admits, in bytes.")
    s.blank()
    for t in p["key_types"]:
        w = t.get("tripwire")
        if w:
            n = const(t["name"])
            s.line(f"{n}_TRIPWIRE_TYPE: Final = {lit(w['redis'])}")
            s.doc(
                "",
                f"The redis type of the value left at a queue's {t['name']} key in its other layout, "
                f"where its members live at the {w['moves_to']} key: {w['summary']}",
            )
            s.blank()
            s.line(f"{n}_TRIPWIRE_FLOOR: Final = {lit(w['floor'])}")
            s.doc(
                "",
                f"The first release whose every script that declares the {t['name']} key refuses that layout "
                "before any write; a client of an older release on the deployment cannot be refused safely.",
            )
            s.blank()
    s.line(f"QUEUE_PATTERN: Final = {lit(q['pattern'])}")
    s.doc("", f"The queue-name grammar: {q['summary']}")
    s.blank()
    s.line('_QUEUE_RE: Final = re.compile("(?:" + QUEUE_PATTERN + ")")')
    s.blank(2)
    s.line("class QueueNameError(ValueError):")
    s.doc(
        "    ",
        "A queue name outside the grammar (QUEUE_PATTERN). Key builders raise it before any command is sent.",
    )
    s.blank()
    s.line("    queue: str")
    s.doc("    ", "The name that was refused.")
    s.blank()
    s.line("    def __init__(self, queue: str, why: str) -> None:")
    s.line('        super().__init__(f"emq: malformed queue name {queue!r}: {why}")')
    s.line("        self.queue = queue")
    s.blank(2)
    s.line("def validate_queue_name(name: str) -> str:")
    s.doc(
        "    ",
        "Returns name when it is a well-formed queue name, and raises a QueueNameError that says why otherwise.",
    )
    s.line("    if not isinstance(name, str):")
    s.line('        raise QueueNameError(repr(name), "not a string")')
    s.line("    if len(name.encode()) > MAX_QUEUE_LENGTH:")
    s.line('        raise QueueNameError(name, f"longer than {MAX_QUEUE_LENGTH} bytes")')
    s.line("    if not _QUEUE_RE.fullmatch(name):")
    s.line('        raise QueueNameError(name, f"a queue name matches {QUEUE_PATTERN}")')
    s.line("    return name")
    s.blank(2)
    qts = queue_key_types(p)
    s.seq("", "QUEUE_KEY_TYPES: Final = (", [lit(t["name"]) for t in qts], ")")
    s.doc("", "The per-queue key types, in manifest order.")
    s.blank()
    s.call("", "QueueKeyType = Literal[", [lit(t["name"]) for t in qts], "]")
    s.doc("", "A per-queue key type.")
    s.blank(2)
    rt = row_type(p)
    idx = next((i for i, x in enumerate(rt["parts"]) if x.get("hole") == "id"), None)
    if idx is None:
        raise Refuse("the row's key type has no id hole")
    s.line("class QueueKeys:")
    s.doc(
        "    ",
        "The keys of one queue, built once from a checked name. The queue name is the hashtag of every key, so all of them, and every row of the queue, share one cluster slot.",
    )
    s.blank()
    s.line('    __slots__ = ("_keys", "queue", "row_prefix")')
    s.blank()
    s.line("    queue: str")
    s.doc("    ", "The queue's name.")
    s.line("    row_prefix: str")
    s.doc(
        "    ",
        f"The prefix of the queue's job rows ({rt['shape']} without the id); scripts that reach rows of ids they pop take it as ARGV.",
    )
    s.blank()
    s.line("    def __init__(self, queue: str) -> None:")
    s.doc("        ", "Checks queue against the grammar (QueueNameError) and builds its keys.")
    s.line("        validate_queue_name(queue)")
    s.line("        self.queue = queue")
    s.line(f"        self.row_prefix = {concat(rt['parts'][:idx], {'queue': 'queue'})}")
    s.line("        self._keys: dict[str, str] = {")
    for t in qts:
        s.line(f"            {lit(t['name'])}: {concat(t['parts'], {'queue': 'queue'})},")
    s.line("        }")
    for t in qts:
        s.blank()
        s.line("    @property")
        s.line(f"    def {ident(t['name'])}(self) -> str:")
        s.doc("        ", f"{t['shape']} ({t['redis']}): {t['summary']}")
        s.line(f"        return self._keys[{lit(t['name'])}]")
    s.blank()
    s.line("    def row(self, id: str) -> str:")
    s.doc(
        "        ",
        f"Returns the key of id's row, {rt['shape']}; a malformed id raises an IdError before anything is sent.",
    )
    s.line(
        f"        return {concat(rt['parts'], {'queue': 'self.queue', 'id': 'validate_id(id)'})}"
    )
    s.blank()
    s.line("    def key(self, typ: str) -> str | None:")
    s.doc(
        "        ",
        "Returns the queue's key of the per-queue key type typ, or None when there is no such type.",
    )
    s.line("        return self._keys.get(typ)")
    s.blank()
    s.line("    def set(self, s: SetName) -> str:")
    s.doc("        ", "Returns the key of the queue's set s.")
    s.line("        return self._keys[s]")
    del sets

    # Reserve members.
    first = True
    for m in p["reserve"]:
        if not m["has_queue"]:
            s.blank(2 if first else 1)
            first = False
            s.line(f"KEY_{const(m['ident'])}: Final = {concat(m['parts'], {})}")
            s.doc("", f"The reserve member {m['shape']} ({m['redis']}): {m['summary']}")
    for m in p["reserve"]:
        if m["has_queue"]:
            s.blank(2)
            s.line(f"def key_{ident(m['ident'])}(queue: str) -> str:")
            s.doc(
                "    ",
                f"Returns the key of the reserve member {m['shape']} ({m['redis']}): {m['summary']} The queue name is checked first (QueueNameError).",
            )
            s.line(f"    return {concat(m['parts'], {'queue': 'validate_queue_name(queue)'})}")
    s.blank(2)
    s.line('def reserve_key(member: str, queue: str = "") -> str:')
    s.doc(
        "    ",
        "Returns the key of the reserve member named member (its name before any hole); queue fills a member that names a queue. An unknown member raises a KeyError.",
    )
    for m in p["reserve"]:
        s.line(f"    if member == {lit(m['ident'])}:")
        if m["has_queue"]:
            s.line(f"        return key_{ident(m['ident'])}(queue)")
        else:
            s.line(f"        return KEY_{const(m['ident'])}")
    s.line('    raise KeyError(f"emq: {member!r} is not a reserve member")')

    # Named fields of hash reserve members.
    for m in p["reserve"]:
        for fl in m["fields"]:
            first = fl["parts"][0].get("lit", "")
            name = ident(m["ident"].rstrip("s")) + "_" + ident(first.rstrip(":"))
            params, fill = [], {}
            for part in fl["parts"]:
                h = part.get("hole")
                if h == "queue":
                    params.append("queue: str")
                    fill["queue"] = "queue"
                elif h == "node":
                    params.append("node: int")
                    fill["node"] = "str(node)"
                elif h is not None:
                    params.append(f"{ident(h)}: str")
                    fill[h] = ident(h)
            s.blank(2)
            s.line(f"def {name}({', '.join(params)}) -> str:")
            s.doc(
                "    ",
                f"Returns the field {fl['name']} of the reserve member {m['shape']}: {sentence(fl['summary'])}",
            )
            s.line(f"    return {concat(fl['parts'], fill)}")
    return s.text()


# ---------------------------------------------------------------- errors.py


def class_error(c: dict[str, Any]) -> str:
    return pascal(c["name"]) + "Error"


def errors_file(req: dict[str, Any]) -> str:
    p = req["protocol"]
    s = Src()
    header(
        s, req, "The wire classes: one exception class per class word, under a common WireError."
    )
    s.line(
        "from typing import ClassVar, Final, Literal"
        if p["classes"]
        else "from typing import ClassVar, Final"
    )
    s.blank()
    for c in p["classes"]:
        s.line(f"CLASS_{const(c['name'])}: Final = {lit(c['word'])}")
        s.doc(
            "", f"The class word of refusals issued by {', '.join(c['issued_by'])}: {c['summary']}"
        )
        s.blank()
    s.seq("", "CLASSES: Final = (", [f"CLASS_{const(c['name'])}" for c in p["classes"]], ")")
    s.doc("", "The wire-class registry, in manifest order.")
    s.blank()
    if p["classes"]:
        s.call("", "ClassWord = Literal[", [lit(c["word"]) for c in p["classes"]], "]")
    else:
        s.line("ClassWord = str")
    s.doc("", "A wire class word: the first word of every refusal a bundle script issues.")
    s.blank(2)
    s.line("class WireError(Exception):")
    s.doc(
        "    ",
        "A refusal a bundle script issued: an error reply whose first word is a registered wire class. Every class has its own subclass, whose WORD is its class word; catch the subclass, or WireError for any. detail is the rest of the reply.",
    )
    s.blank()
    s.line('    WORD: ClassVar[str] = ""')
    s.doc("    ", "The class word of the subclass.")
    s.blank()
    s.line('    def __init__(self, detail: str, script: str = "") -> None:')
    s.line('        where = f"{script}: " if script else ""')
    s.line('        rest = f" {detail}" if detail else ""')
    s.line('        super().__init__(f"emq: {where}{self.WORD}{rest}")')
    s.line("        self.detail = detail")
    s.line("        self.script = script")
    s.blank()
    s.line("    @property")
    s.line("    def word(self) -> str:")
    s.doc("        ", "The class word.")
    s.line("        return self.WORD")
    for c in p["classes"]:
        s.blank(2)
        s.line(f"class {class_error(c)}(WireError):")
        s.doc("    ", f"A refusal of wire class {c['word']}: {c['summary']}")
        s.blank()
        s.line(f"    WORD: ClassVar[str] = CLASS_{const(c['name'])}")
    s.blank(2)
    s.seq(
        "",
        "WIRE_ERRORS: Final[dict[str, type[WireError]]] = {",
        [f"CLASS_{const(c['name'])}: {class_error(c)}" for c in p["classes"]],
        "}",
    )
    s.doc("", "The exception class of every class word.")
    s.blank(2)
    s.line("def classify_reply(reply: str) -> tuple[str, str]:")
    s.doc(
        "    ",
        "Splits an error reply's text (without RESP's leading '-') into its class word and message when its first word (up to the first space, or all of it) is a registered class word; otherwise the class is empty and the message is the whole reply.",
    )
    s.line('    word, _, rest = reply.partition(" ")')
    s.line("    if word in WIRE_ERRORS:")
    s.line("        return word, rest")
    s.line('    return "", reply')
    s.blank(2)
    s.line('def parse_error_reply(reply: str, script: str = "") -> WireError | None:')
    s.doc(
        "    ",
        "Parses an error reply into the exception of its wire class, or returns None when its first word is not a registered class.",
    )
    s.line("    word, detail = classify_reply(reply)")
    s.line("    if not word:")
    s.line("        return None")
    s.line("    return WIRE_ERRORS[word](detail, script)")
    names = [f"CLASS_{const(c['name'])}" for c in p["classes"]]
    names += ["CLASSES", "WIRE_ERRORS", "ClassWord", "WireError"]
    names += [class_error(c) for c in p["classes"]]
    names += ["classify_reply", "parse_error_reply"]
    s.blank(2)
    s.seq("", "__all__ = [", [lit(x) for x in sorted(set(names), key=isort_key)], "]")
    s.doc("", "What ``from echomq._gen.errors import *`` brings: every wire class and the parsers.")
    return s.text()


def isort_key(name: str) -> tuple[int, str]:
    """ruff's isort-style order: SCREAMING_CASE, then CamelCase, then the rest."""
    if name.isupper() or (name.upper() == name and any(c.isalpha() for c in name)):
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


# ---------------------------------------------------------------- vocabularies


def vocabulary_type(name: str) -> str:
    """The type of a vocabulary: failure_class -> FailureClass."""
    return pascal(name)


def vocabulary_names(v: dict[str, Any]) -> list[str]:
    """The names a vocabulary generates: its type, word constants, list and guard."""
    n = const(v["name"])
    return [
        vocabulary_type(v["name"]),
        *[f"{n}_{const(w['word'])}" for w in v["words"]],
        const(v["plural"]),
        f"is_{ident(v['name'])}",
    ]


def vocabularies_code(s: Src, p: dict[str, Any]) -> None:
    """Each vocabulary: a Literal type, one constant per word, the tuple and the guard."""
    for v in p["vocabularies"]:
        t = vocabulary_type(v["name"])
        n = const(v["name"])
        s.call("", f"{t} = Literal[", [lit(w["word"]) for w in v["words"]], "]")
        summ = f": {v['summary']}" if v["summary"] else ""
        s.doc("", f"A word of the {v['name']} vocabulary{summ}")
        s.blank()
        for w in v["words"]:
            s.line(f"{n}_{const(w['word'])}: Final[{t}] = {lit(w['word'])}")
            s.doc("", f"The {v['name']} word {w['word']}: {lower_first(w['summary'])}")
            s.blank()
        s.seq(
            "",
            f"{const(v['plural'])}: Final[tuple[{t}, ...]] = (",
            [f"{n}_{const(w['word'])}" for w in v["words"]],
            ")",
        )
        s.doc("", f"The words of the {v['name']} vocabulary, in manifest order.")
        s.blank(2)
        s.line(f"def is_{ident(v['name'])}(s: str) -> TypeGuard[{t}]:")
        s.doc("    ", f"Reports whether s is a word of the {v['name']} vocabulary.")
        s.line(f"    return s in {const(v['plural'])}")
        s.blank(2)


def vocabularies_file(req: dict[str, Any]) -> str:
    """The vocabularies of protocol.py again, with an __all__ for a star import."""
    p = req["protocol"]
    s = Src()
    header(
        s,
        req,
        "The vocabularies of the protocol (closed sets of words the wire carries as values), as protocol.py defines them; ``from echomq._gen.vocabularies import *`` brings every one.",
    )
    names: list[str] = []
    for v in p["vocabularies"]:
        names += vocabulary_names(v)
    if not names:
        s.line("__all__: list[str] = []")
        s.doc("", "There is no vocabulary.")
        return s.text()
    ordered = sorted(set(names), key=isort_key)
    # ruff's isort orders the imported names by type, then case-insensitively (FOO_BAR
    # before FOOS); RUF022 orders __all__ by type, then by code point.
    imported = sorted(ordered, key=lambda n: (isort_key(n)[0], n.lower()))
    import_from(s, ".protocol", imported)
    s.blank()
    s.seq("", "__all__ = [", [lit(x) for x in ordered], "]")
    s.doc("", "Every name of every vocabulary.")
    return s.text()


def import_from(s: Src, module: str, names: list[str]) -> None:
    """from module import names, on one line when it fits, else one name a line."""
    one = f"from {module} import {', '.join(names)}"
    if len(one) <= LINE:
        s.line(one)
        return
    s.seq("", f"from {module} import (", names, ")")


def elem_type(e: dict[str, Any]) -> str:
    """The Python type of a reply element: its vocabulary's type when it has one."""
    if e["vocabulary"]:
        return vocabulary_type(e["vocabulary"])
    return ELEM_TYPES[e["type"]]


def arg_type(a: dict[str, Any]) -> str:
    """The Python type of an argument: its vocabulary's type when it has one."""
    if a["vocabulary"]:
        return vocabulary_type(a["vocabulary"])
    return ARG_TYPES[a["type"]]


def used_vocabularies(p: dict[str, Any]) -> list[str]:
    """The types of the vocabularies some argument or reply element carries."""
    used = {
        a["vocabulary"]
        for sc in p["scripts"]
        for a in [*sc["argv"], *sc["reply"]["elements"]]
        if a["vocabulary"]
    }
    return sorted(
        (vocabulary_type(v["name"]) for v in p["vocabularies"] if v["name"] in used),
        key=str.lower,
    )


# ---------------------------------------------------------------- scripts.py

ARG_TYPES = {
    "id": "str",
    "token": "int",
    "bytes": "bytes | str",
    "int": "int",
    "string": "str",
    "prefix": "str",
}
ELEM_TYPES = {"id": "str", "int": "int", "bytes": "bytes", "string": "str", "token": "int"}
ELEM_DECODE = {
    "id": "_reply_id",
    "int": "_reply_int",
    "bytes": "_reply_bytes",
    "string": "_reply_text",
    "token": "_reply_int",
}


def arg_conv(script: str, a: dict[str, Any], expr: str) -> str:
    t = a["type"]
    if t == "id":
        return f"_id_arg({lit(script)}, {lit(a['name'])}, {expr})"
    if t in ("int", "token"):
        return f"_int_arg({lit(script)}, {lit(a['name'])}, {expr})"
    if t == "bytes":
        return f"_bytes_arg({expr})"
    if t in ("string", "prefix"):
        return f"_str_arg({lit(script)}, {lit(a['name'])}, {expr})"
    raise Refuse(
        f"script {script!r}: argument {a['name']!r} has the type {t!r}, which this plugin cannot render"
    )


def call_fields(
    sc: dict[str, Any],
) -> tuple[list[tuple[str, dict[str, Any]]], list[tuple[str, dict[str, Any]]]]:
    argn = {ident(a["name"]) for a in sc["argv"]}
    keys = []
    for k in sc["keys"]:
        n = ident(k["name"])
        if n in argn:
            n = ident(k["name"] + "_key")
        keys.append((n, k))
    args = [(ident(a["name"]), a) for a in sc["argv"]]
    return keys, args


def scripts_file(req: dict[str, Any]) -> str:
    p = req["protocol"]
    b = req["bundle"]
    s = Src()
    header(
        s,
        req,
        "The script bundle: every script's source and SHA-1, a typed call per script (KEYS and ARGV by name), reply decoders, and EVALSHA with the EVAL fallback on NOSCRIPT, alone or pipelined.",
    )
    s.line("from __future__ import annotations")
    s.blank()
    s.line("from collections.abc import Sequence")
    s.line("from dataclasses import dataclass")
    cast = any(e["vocabulary"] for sc in p["scripts"] for e in sc["reply"]["elements"])
    s.line("from typing import Any, ClassVar, Final" + (", cast" if cast else ""))
    s.blank()
    s.line("from redis.asyncio import Redis")
    s.line("from redis.asyncio.client import Pipeline")
    s.line("from redis.exceptions import NoScriptError, ResponseError")
    s.blank()
    s.line("from .errors import parse_error_reply")
    s.line("from .ids import validate_id")
    if used := used_vocabularies(p):
        import_from(s, ".protocol", used)
    s.blank()
    s.line("Arg = bytes | str | int")
    s.doc("", "An argument of a command: bytes, text (sent as UTF-8) or an integer.")
    s.blank(2)
    s.line("@dataclass(frozen=True, slots=True)")
    s.line("class Script:")
    s.doc(
        "    ",
        "One Lua script of the bundle: the exact text of its file in sdk/lua, its SHA-1, and the names and types of its KEYS and ARGV. It runs with EVALSHA and falls back to EVAL when the server answers NOSCRIPT.",
    )
    s.blank()
    for f, t, d in [
        ("name", "str", "The script's name."),
        ("sha1", "str", "The hex SHA-1 of source, as EVALSHA takes it."),
        ("source", "str", "The text sent with EVAL."),
        ("keys", "tuple[str, ...]", "The KEYS names, in order."),
        ("argv", "tuple[str, ...]", "The ARGV names, in order."),
        ("key_types", "tuple[str, ...]", "Each KEYS slot's key type, or reserve:<member>."),
        ("arg_types", "tuple[str, ...]", "Each ARGV slot's type."),
        (
            "repeated_keys",
            "tuple[str, ...]",
            "The KEYS names that are a repeated group (zero or more keys).",
        ),
        (
            "repeated_argv",
            "tuple[str, ...]",
            "The ARGV names that are a repeated group (zero or more values).",
        ),
        (
            "reply_elements",
            "tuple[str, ...]",
            "The names of the reply's elements, for array replies.",
        ),
    ]:
        s.line(f"    {f}: {t}")
        s.doc("    ", d)
    s.blank(2)
    s.line("@dataclass(frozen=True, slots=True)")
    s.line("class ScriptExec:")
    s.doc("    ", "One call of a script: its KEYS and ARGV, ready to send.")
    s.blank()
    s.line("    script: Script")
    s.line("    keys: tuple[str, ...]")
    s.line("    argv: tuple[Arg, ...]")
    s.blank(2)
    s.line(f"BUNDLE_DIGEST: Final = {lit(b['digest'])}")
    s.doc(
        "",
        "Identifies this bundle: the hex SHA-1 of the scripts' hex SHA-1s, in manifest order, each followed by a newline. The fence records it in the reserve per version.",
    )
    s.blank(2)
    s.line("class ReplyShapeError(Exception):")
    s.doc("    ", "A reply that does not have the shape its script's manifest entry says.")
    s.blank()
    s.line("    def __init__(self, script: str, why: str) -> None:")
    s.line('        super().__init__(f"emq: {script}: {why}")')
    s.line("        self.script = script")
    s.blank(2)
    s.line("def script_error(script: str, err: BaseException) -> BaseException:")
    s.doc(
        "    ",
        "Turns a script's failure into the exception of its wire class when it is a refusal; any other failure is returned as it is.",
    )
    s.line("    if isinstance(err, ResponseError):")
    s.line("        wire = parse_error_reply(str(err), script)")
    s.line("        if wire is not None:")
    s.line("            wire.__cause__ = err")
    s.line("            return wire")
    s.line("    return err")
    s.blank(2)
    s.line("async def run_script(r: Redis, x: ScriptExec) -> Any:")
    s.doc(
        "    ",
        "Runs one call with EVALSHA, and with EVAL when the server answers NOSCRIPT. A refusal raises the exception of its wire class.",
    )
    s.line("    try:")
    s.line("        return await r.evalsha(x.script.sha1, len(x.keys), *x.keys, *x.argv)")
    s.line("    except NoScriptError:")
    s.line("        pass")
    s.line("    except ResponseError as err:")
    s.line("        raise script_error(x.script.name, err) from None")
    s.line("    try:")
    s.line("        return await r.eval(x.script.source, len(x.keys), *x.keys, *x.argv)")
    s.line("    except ResponseError as err:")
    s.line("        raise script_error(x.script.name, err) from None")
    s.blank(2)
    s.line("def pipe_script(pipe: Pipeline, x: ScriptExec) -> None:")
    s.doc(
        "    ",
        "Queues one call on a pipeline with EVALSHA. Run the pipeline with run_scripts, or execute it with raise_on_error=False and resend the NOSCRIPT answers with EVAL yourself.",
    )
    s.line("    pipe.evalsha(x.script.sha1, len(x.keys), *x.keys, *x.argv)")
    s.blank(2)
    s.line("async def run_scripts(r: Redis, xs: Sequence[ScriptExec]) -> list[Any]:")
    s.doc(
        "    ",
        "Pipelines many calls with EVALSHA in one round trip and resends, as EVAL, exactly the calls answered NOSCRIPT, so that each reply stands for its own call. Each element of the result is the call's reply, or the exception it failed with (a refusal as the exception of its wire class); a failure of transport raises.",
    )
    s.line("    if not xs:")
    s.line("        return []")
    s.line("    async with r.pipeline(transaction=False) as pipe:")
    s.line("        for x in xs:")
    s.line("            pipe_script(pipe, x)")
    s.line("        res: list[Any] = await pipe.execute(raise_on_error=False)")
    s.line("    again = [i for i, v in enumerate(res) if isinstance(v, NoScriptError)]")
    s.line("    if again:")
    s.line("        async with r.pipeline(transaction=False) as pipe:")
    s.line("            for i in again:")
    s.line("                x = xs[i]")
    s.line("                pipe.eval(x.script.source, len(x.keys), *x.keys, *x.argv)")
    s.line("            evals: list[Any] = await pipe.execute(raise_on_error=False)")
    s.line("        for i, v in zip(again, evals, strict=True):")
    s.line("            res[i] = v")
    s.line("    return [")
    s.line("        script_error(x.script.name, v) if isinstance(v, BaseException) else v")
    s.line("        for x, v in zip(xs, res, strict=True)")
    s.line("    ]")
    s.blank(2)
    s.line("def _id_arg(script: str, name: str, v: str) -> str:")
    s.line("    return validate_id(v)")
    s.blank(2)
    s.line("def _int_arg(script: str, name: str, v: int) -> int:")
    s.line("    if not isinstance(v, int) or isinstance(v, bool):")
    s.line('        raise TypeError(f"emq: {script}: {name} is not an integer")')
    s.line("    return v")
    s.blank(2)
    s.line("def _str_arg(script: str, name: str, v: str) -> str:")
    s.line("    if not isinstance(v, str):")
    s.line('        raise TypeError(f"emq: {script}: {name} is not a string")')
    s.line("    return v")
    s.blank(2)
    s.line("def _bytes_arg(v: bytes | str) -> bytes:")
    s.line("    return v.encode() if isinstance(v, str) else bytes(v)")
    s.blank(2)
    s.line("def _reply_int(script: str, what: str, v: Any) -> int:")
    s.line("    if isinstance(v, int) and not isinstance(v, bool):")
    s.line("        return v")
    s.line('    raise ReplyShapeError(script, f"{what} is not an integer")')
    s.blank(2)
    s.line("def _reply_bytes(script: str, what: str, v: Any) -> bytes:")
    s.line("    if isinstance(v, bytes):")
    s.line("        return v")
    s.line("    if isinstance(v, str):")
    s.line("        return v.encode()")
    s.line("    if v is None:")
    s.line('        return b""')
    s.line('    raise ReplyShapeError(script, f"{what} is not a string")')
    s.blank(2)
    s.line("def _reply_text(script: str, what: str, v: Any) -> str:")
    s.line('    return _reply_bytes(script, what, v).decode("utf-8", "surrogateescape")')
    s.blank(2)
    s.line("def _reply_id(script: str, what: str, v: Any) -> str:")
    s.line("    return validate_id(_reply_text(script, what, v))")
    s.blank(2)
    s.line("def _reply_array(script: str, v: Any, n: int | None = None) -> list[Any]:")
    s.line("    if not isinstance(v, list):")
    s.line('        raise ReplyShapeError(script, "the reply is not an array")')
    s.line("    if n is not None and len(v) != n:")
    s.line('        raise ReplyShapeError(script, f"the reply has {len(v)} elements, want {n}")')
    s.line("    return v")

    by_name = {sc["name"]: sc for sc in p["scripts"]}
    for bs in b["scripts"]:
        sc = by_name.get(bs["name"])
        if sc is None:
            raise Refuse(f"the bundle's script {bs['name']!r} is not in the protocol")
        n = const(sc["name"])
        s.blank(2)
        src = bs["source"].replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
        body = src[:-1] if src.endswith("\n") else src
        s.line(f'_LUA_{n}: Final = """\\')
        s.lines.extend(body.split("\n"))
        if src.endswith("\n"):
            s.lines.append('"""')
        else:
            s.lines[-1] += '"""'
        s.doc("", f"The Lua source of sdk/lua/{bs['file']}.")
        s.blank()
        s.line(f"SCRIPT_{n}: Final = Script(")
        s.line(f"    name={lit(sc['name'])},")
        s.line(f"    sha1={lit(bs['sha1'])},")
        s.line(f"    source=_LUA_{n},")
        for f, vals in [
            ("keys", [k["name"] for k in sc["keys"]]),
            ("argv", [a["name"] for a in sc["argv"]]),
            (
                "key_types",
                [
                    k["type"] if k["type"] != "reserve" else "reserve:" + k["member"]
                    for k in sc["keys"]
                ],
            ),
            ("arg_types", [a["type"] for a in sc["argv"]]),
            ("repeated_keys", [k["name"] for k in sc["keys"] if k["repeated"]]),
            ("repeated_argv", [a["name"] for a in sc["argv"] if a["repeated"]]),
            ("reply_elements", [e["name"] for e in sc["reply"]["elements"]]),
        ]:
            tup = "(" + ", ".join(lit(v) for v in vals) + ("," if len(vals) == 1 else "") + ")"
            line = f"    {f}={tup},"
            if len(line) <= LINE:
                s.line(line)
            else:
                s.seq("    ", f"{f}=(", [lit(v) for v in vals], "),")
        s.line(")")
        s.doc("", f"The {sc['name']} script: {sc['summary']}")
        # An int argument's bounds, which the script refuses a value
        # outside of and a caller checks before it sends anything.
        for a in sc["argv"]:
            for key, word in (("min", "least"), ("max", "greatest")):
                if a.get(key) is None:
                    continue
                s.blank()
                s.line(f"{n}_{const(a['name'])}_{key.upper()}: Final = {a[key]}")
                s.doc(
                    "",
                    f"The {word} {a['name']} {sc['name']} admits (the script refuses any other before it writes).",
                )
    s.blank(2)
    s.seq("", "SCRIPTS: Final = (", [f"SCRIPT_{const(bs['name'])}" for bs in b["scripts"]], ")")
    s.doc("", "The bundle, in manifest order.")
    s.blank(2)
    s.line("def script_named(name: str) -> Script | None:")
    s.doc("    ", "Returns the script named name, or None.")
    s.line("    for sc in SCRIPTS:")
    s.line("        if sc.name == name:")
    s.line("            return sc")
    s.line("    return None")

    for sc in p["scripts"]:
        script_call(s, p, sc)
    return s.text()


def singular(plural: str) -> str:
    """An entry's field for a repeated argument (as the TypeScript target names it)."""
    return plural[:-1] if len(plural) > 1 and plural.endswith("s") else plural


def script_doc_lines(p: dict[str, Any], sc: dict[str, Any]) -> list[str]:
    out = []
    i = 1
    for k in sc["keys"]:
        if k["repeated"]:
            out.append(f"KEYS[{i}..] -> {k['name']}, one per entry: {k['shape']}")
        else:
            out.append(f"KEYS[{i}] -> {k['name']}: {k['shape']}")
            i += 1
    group = [a for a in sc["argv"] if a["repeated"]]
    i = 1
    for a in sc["argv"]:
        summ = f": {a['summary']}" if a["summary"] else ""
        if a["repeated"] and len(group) > 1:
            members = ", ".join(g["name"] for g in group)
            out.append(
                f"ARGV[{i}..] -> entries[].{ident(singular(a['name']))} ({a['type']}), one per entry of ({members}), every {len(group)}{summ}"
            )
            i += 1
        elif a["repeated"]:
            out.append(f"ARGV[{i}..] -> {a['name']} ({a['type']}), zero or more{summ}")
        else:
            out.append(f"ARGV[{i}] -> {a['name']} ({a['type']}){summ}")
            i += 1
    out.extend(" ".join(ln.split()) for ln in sc["reply"]["lines"])
    classes = {c["word"]: c for c in p["classes"]}
    for rf in sc["refusals"]:
        c = classes.get(rf["class"])
        cls = class_error(c) if c else "WireError"
        out.append(f"Refusal: {rf['text']} ({cls}), when {rf['when']}")
    if sc["transitions"]:
        out.append(
            "Transitions: " + ", ".join(f"{t['from']} -> {t['to']}" for t in sc["transitions"])
        )
    return out


def script_call(s: Src, p: dict[str, Any], sc: dict[str, Any]) -> None:
    name = sc["name"]
    n = const(name)
    cls = pascal(name) + "Call"
    keys, args = call_fields(sc)
    rep = sc["reply"]
    classes = {c["word"]: c for c in p["classes"]}
    refusal_classes = []
    for rf in sc["refusals"]:
        c = classes.get(rf["class"])
        e = class_error(c) if c else "WireError"
        if e not in refusal_classes:
            refusal_classes.append(e)

    # The reply's record type.
    rec = None
    if rep["type"] == "array" and rep["elements"]:
        rec = pascal(name) + "Reply"
        s.blank(2)
        s.line("@dataclass(frozen=True, slots=True)")
        s.line(f"class {rec}:")
        what = "One record of the reply" if rep["repeated"] else "The reply"
        s.doc("    ", f"{what} of the {name} script.")
        s.blank()
        for e in rep["elements"]:
            if e["type"] not in ELEM_TYPES:
                raise Refuse(
                    f"script {name!r}: reply element {e['name']!r} has the type {e['type']!r}, which this plugin cannot render"
                )
            t = elem_type(e)
            if e["repeated"]:
                t = f"list[{t}]"
            s.line(f"    {ident(e['name'])}: {t}")
            summ = f": {e['summary']}" if e["summary"] else ""
            s.doc("    ", f"{e['name']} ({e['type']}){summ}")
        s.blank()
        s.line("    @staticmethod")
        s.line(f"    def decode(reply: Any) -> {rec}:")
        s.doc("        ", f"Decodes one record of a reply of the {name} script.")
        s.line(f"        a = _reply_array({lit(name)}, reply, {len(rep['elements'])})")
        items = []
        for i, e in enumerate(rep["elements"]):
            dec = ELEM_DECODE[e["type"]]
            if e["repeated"]:
                items.append(
                    f"{ident(e['name'])}=[{dec}({lit(name)}, {lit(e['name'])}, v) for v in _reply_array({lit(name)}, a[{i}])]"
                )
            elif e["vocabulary"]:
                # A word outside the vocabulary is kept as read: a newer writer may know more
                # words (the guard tells).
                items.append(
                    f"{ident(e['name'])}=cast({lit(elem_type(e))}, {dec}({lit(name)}, {lit(e['name'])}, a[{i}]))"
                )
            else:
                items.append(f"{ident(e['name'])}={dec}({lit(name)}, {lit(e['name'])}, a[{i}])")
        s.call("        ", f"return {rec}(", items, ")")

    if rep["type"] == "int":
        rtype = "int"
    elif rep["type"] == "string":
        rtype = "str"
    elif rep["type"] == "array":
        if rec is None:
            rtype = "list[Any]"
        elif rep["repeated"]:
            rtype = f"list[{rec}]"
        elif rep["nil"]:
            rtype = f"{rec} | None"
        else:
            rtype = rec
    else:
        raise Refuse(
            f"script {name!r}: reply type {rep['type']!r} is not one this plugin can render"
        )

    # Reply value constants.
    for j, v in enumerate(rep["values"]):
        s.blank(2 if j == 0 else 1)
        s.line(f"{n}_{const(v['name'])}: Final = {v['value']}")
        summ = f": {v['summary']}" if v["summary"] else ""
        s.doc("", f"The {name} reply {v['value']} ({v['name']}){summ}.")

    group = [(fn, a) for fn, a in args if a["repeated"]]
    for _fn, a in args:
        if a["type"] not in ARG_TYPES:
            raise Refuse(
                f"script {name!r}: argument {a['name']!r} has the type {a['type']!r}, which this plugin cannot render"
            )
    if len(group) > 1:
        at = 1 + sum(1 for _, a in args if not a["repeated"])
        s.blank(2)
        s.line("@dataclass(frozen=True, slots=True)")
        s.line(f"class {pascal(name)}Entry:")
        s.doc(
            "    ",
            f"One entry of {cls}'s repeated ARGV group: its values are sent interleaved, entry after entry, from ARGV[{at}].",
        )
        s.blank()
        for j, (_fn, a) in enumerate(group):
            summ = f": {a['summary']}" if a["summary"] else ""
            s.line(f"    {ident(singular(a['name']))}: {arg_type(a)}")
            s.doc("    ", f"ARGV[{at + j}..], every {len(group)}: {a['name']} ({a['type']}){summ}")
        s.blank()
        s.line("    def args(self) -> tuple[Arg, ...]:")
        s.doc("        ", "The entry's values, checked, in the order they are sent.")
        s.seq(
            "        ",
            "return (",
            [arg_conv(name, g, "self." + ident(singular(g["name"]))) for _, g in group],
            ")",
        )
    s.blank(2)
    s.line("@dataclass(frozen=True, slots=True)")
    s.line(f"class {cls}:")
    lines = script_doc_lines(p, sc)
    body = f"A call of the {name} script: {lower_first(sentence(sc['summary']))}"
    t = doc_text(body)
    s.lines.append(f'    """{t}')
    s.lines.append("")
    for ln in lines:
        s.lines.append("    - " + doc_text(ln))
    s.lines.append('    """')
    s.blank()
    s.line(f"    SCRIPT: ClassVar[Script] = SCRIPT_{n}")
    s.doc("    ", "The script this call runs.")
    s.blank()
    i = 1
    for fn, k in keys:
        if k["repeated"]:
            s.line(f"    {fn}: Sequence[str]")
            s.doc("    ", f"KEYS[{i}..], one per entry: {k['shape']}")
        else:
            s.line(f"    {fn}: str")
            s.doc("    ", f"KEYS[{i}]: {k['shape']}")
            i += 1
    i = 1
    group = [(fn, a) for fn, a in args if a["repeated"]]
    entry = pascal(name) + "Entry" if len(group) > 1 else ""
    for fn, a in args:
        t = arg_type(a)
        summ = f": {a['summary']}" if a["summary"] else ""
        if a["repeated"] and entry:
            if (fn, a) == group[0]:
                s.line(f"    entries: Sequence[{entry}]")
                s.doc("    ", f"ARGV[{i}..]: zero or more entries, interleaved")
        elif a["repeated"]:
            s.line(f"    {fn}: Sequence[{t}]")
            s.doc("    ", f"ARGV[{i}..]: {a['name']} ({a['type']}), zero or more{summ}")
        else:
            s.line(f"    {fn}: {t}")
            s.doc("    ", f"ARGV[{i}]: {a['name']} ({a['type']}){summ}")
            i += 1
    s.blank()
    s.line("    def exec(self) -> ScriptExec:")
    s.doc(
        "        ",
        "Builds the call's KEYS and ARGV; a malformed id raises an IdError, a value of the wrong type a TypeError, and a repeated key group whose length is not its id group's a ValueError, before anything is sent.",
    )
    rk = [(fn, k) for fn, k in keys if k["repeated"]]
    if rk and group:
        what = "entries" if entry else group[0][0]
        s.line(f"        if len(self.{rk[0][0]}) != len(self.{what}):")
        msg = f'f"emq: {name}: {rk[0][1]["name"]}: {{len(self.{rk[0][0]})}} keys for {{len(self.{what})}} {what}"'
        one = f"            raise ValueError({msg})"
        if len(one) <= LINE:
            s.line(one)
        else:
            s.line("            raise ValueError(")
            s.line("                " + msg)
            s.line("            )")
    kitems = []
    for fn, k in keys:
        if k["repeated"]:
            kitems.append(f"*(_str_arg({lit(name)}, {lit(k['name'])}, v) for v in self.{fn})")
        else:
            kitems.append(f"_str_arg({lit(name)}, {lit(k['name'])}, self.{fn})")
    aitems = []
    for fn, a in args:
        if a["repeated"] and entry:
            if (fn, a) == group[0]:
                aitems.append("*(v for e in self.entries for v in e.args())")
        elif a["repeated"]:
            aitems.append(f"*({arg_conv(name, a, 'v')} for v in self.{fn})")
        else:
            aitems.append(arg_conv(name, a, "self." + fn))
    s.line("        return ScriptExec(")
    s.line(f"            script=SCRIPT_{n},")
    s.seq("            ", "keys=(", kitems, "),")
    s.seq("            ", "argv=(", aitems, "),")
    s.line("        )")
    s.blank()
    s.line("    @staticmethod")
    s.line(f"    def decode(reply: Any) -> {rtype}:")
    if rep["type"] == "array" and rec is not None and not rep["repeated"] and rep["nil"]:
        s.doc("        ", f"Decodes a reply of the {name} script; None when {rep['nil']}.")
    elif rep["repeated"]:
        s.doc(
            "        ",
            f"Decodes a reply of the {name} script: zero or more records, in the order the script produced them.",
        )
    else:
        s.doc("        ", f"Decodes a reply of the {name} script.")
    if rep["type"] == "int":
        if rep["nil"]:
            pass
        s.line(f'        return _reply_int({lit(name)}, "reply", reply)')
    elif rep["type"] == "string":
        s.line(f'        return _reply_text({lit(name)}, "reply", reply)')
    elif rec is None:
        s.line(f"        return _reply_array({lit(name)}, reply)")
    elif rep["repeated"]:
        one = f"        return [{rec}.decode(v) for v in _reply_array({lit(name)}, reply)]"
        if len(one) <= LINE:
            s.line(one)
        else:  # wrapped as ruff format wraps a comprehension past the line length
            inner = f"            {rec}.decode(v) for v in _reply_array({lit(name)}, reply)"
            s.line("        return [")
            if len(inner) <= LINE:
                s.line(inner)
            else:
                s.line(f"            {rec}.decode(v)")
                s.line(f"            for v in _reply_array({lit(name)}, reply)")
            s.line("        ]")
    elif rep["nil"]:
        s.line("        if reply is None:")
        s.line("            return None")
        s.line(f"        return {rec}.decode(reply)")
    else:
        s.line(f"        return {rec}.decode(reply)")
    s.blank()
    s.line(f"    async def run(self, r: Redis) -> {rtype}:")
    ref = f" A refusal raises {' or '.join(refusal_classes)}." if refusal_classes else ""
    s.doc("        ", f"Runs the call on r (EVALSHA, EVAL on NOSCRIPT) and decodes its reply.{ref}")
    s.line("        return self.decode(await run_script(r, self.exec()))")


# ---------------------------------------------------------------- probes.py


def probes_file(req: dict[str, Any]) -> str:
    p = req["protocol"]
    s = Src()
    header(s, req, "The probes: checks, as data, that a live server behaves as the manifest says.")
    s.line("from dataclasses import dataclass")
    s.line("from typing import Final")
    s.blank(2)
    s.line("@dataclass(frozen=True, slots=True)")
    s.line("class ProbeExpect:")
    s.doc("    ", "What a probe step's reply must be.")
    s.blank()
    s.line("    kind: str")
    s.doc("    ", "int, positive, string, nil, error (a refusal) or fence (a verdict).")
    s.line('    element: str = ""')
    s.doc("    ", "Narrows an array reply to this element first.")
    s.line("    int: int = 0")
    s.line('    string: str = ""')
    s.doc("    ", "The string, the refusal's class word, or the fence verdict.")
    s.blank(2)
    s.line("@dataclass(frozen=True, slots=True)")
    s.line("class ProbeStep:")
    s.doc(
        "    ",
        "One check of a probe: run a script (its ARGV by name) or send a command, then compare the reply. Strings may hold ${...} placeholders.",
    )
    s.blank()
    s.line("    check: str")
    s.line("    expect: ProbeExpect")
    s.line('    script: str = ""')
    s.line("    args: tuple[tuple[str, str], ...] = ()")
    s.line("    command: tuple[str, ...] = ()")
    s.line('    save: str = ""')
    s.doc("    ", "The name under which to keep the reply.")
    s.blank(2)
    s.line("@dataclass(frozen=True, slots=True)")
    s.line("class Probe:")
    s.doc("    ", "A named list of checks that a live server behaves as the manifest says.")
    s.blank()
    s.line("    target: str")
    s.doc("    ", "What it checks: a reserve member or a wire class.")
    s.line("    summary: str")
    s.line("    steps: tuple[ProbeStep, ...]")
    s.blank(2)
    # The placeholder vocabulary of probe strings: emqgen's own, as the TypeScript target's.
    for name, val, doc in [
        ("PROBE_VAR_QUEUE", "queue", "${queue}: the scratch queue's name."),
        ("PROBE_VAR_VERSION", "version", "${version}: this SDK's version record."),
        ("PROBE_VAR_SEMVER", "semver", "${semver}: this SDK's major.minor.patch."),
        ("PROBE_VAR_BUNDLE", "bundle", "${bundle}: this SDK's bundle digest."),
        ("PROBE_KIND_KEY", "key", "${key:<type>}: a key of the scratch queue."),
        ("PROBE_KIND_ROW", "row", "${row:<id variable>}: the row of an id."),
        ("PROBE_KIND_RESERVE", "reserve", "${reserve:<member>}: a reserve key."),
        ("PROBE_KIND_FIELD", "field", "${field:<role>}: a row field's name."),
        ("PROBE_KIND_STATE", "state", "${state:<name>}: a state's value."),
    ]:
        s.line(f"{name}: Final = {lit(val)}")
        s.doc("", doc)
        s.blank()
    s.seq("", "PROBE_ID_VARS: Final = (", [lit(v) for v in p["probe_id_vars"]], ")")
    s.doc(
        "",
        "The fresh id variables probes use (${job}, ...): a registered kind in lower case with an optional digit.",
    )
    s.blank()

    def step(st: dict[str, Any]) -> list[str]:
        e = st["expect"]
        exp = [f"kind={lit(e['kind'])}"]
        if e["element"]:
            exp.append(f"element={lit(e['element'])}")
        if e["int"]:
            exp.append(f"int={e['int']}")
        if e["string"]:
            exp.append(f"string={lit(e['string'])}")
        out = [f"check={lit(st['check'])}", "expect=ProbeExpect(" + ", ".join(exp) + ")"]
        if st["script"]:
            out.append(f"script={lit(st['script'])}")
        if st["with"]:
            out.append(
                "args=("
                + ", ".join(f"({lit(w['name'])}, {lit(w['value'])})" for w in st["with"])
                + ("," if len(st["with"]) == 1 else "")
                + ")"
            )
        if st["command"]:
            out.append(
                "command=("
                + ", ".join(lit(c) for c in st["command"])
                + ("," if len(st["command"]) == 1 else "")
                + ")"
            )
        if st["save"]:
            out.append(f"save={lit(st['save'])}")
        return out

    probes = []
    for m in p["reserve"]:
        probes.append((f"reserve member {m['shape']}", m["probe"]))
    for c in p["classes"]:
        probes.append((f"wire class {c['word']}", c["probe"]))
    s.line("PROBES: Final = (")
    for target, pr in probes:
        s.line("    Probe(")
        s.line(f"        target={lit(target)},")
        s.line(f"        summary={lit(pr['summary'])},")
        s.line("        steps=(")
        for st in pr["steps"]:
            items = step(st)
            one = "            ProbeStep(" + ", ".join(items) + "),"
            if len(one) <= LINE:
                s.line(one)
            else:
                s.line("            ProbeStep(")
                for it in items:
                    line = "                " + it + ","
                    if len(line) > LINE and it.startswith(("args=(", "command=(")):
                        key, _, rest = it.partition("=(")
                        inner = split_top(rest[:-1])
                        s.line(f"                {key}=(")
                        for x in inner:
                            s.line("                    " + x + ",")
                        s.line("                ),")
                    elif len(line) > LINE and it.startswith("expect=ProbeExpect("):
                        inner = split_top(it[len("expect=ProbeExpect(") : -1])
                        s.line("                expect=ProbeExpect(")
                        for x in inner:
                            s.line("                    " + x + ",")
                        s.line("                ),")
                    else:
                        s.line(line)
                s.line("            ),")
        s.line("        ),")
        s.line("    ),")
    s.line(")")
    s.doc(
        "",
        "Every probe the manifest declares, reserve members first, then wire classes, in manifest order.",
    )
    return s.text()


def split_top(s: str) -> list[str]:
    """Splits s at the commas outside brackets and string literals."""
    out, depth, cur, quote, esc = [], 0, [], "", False
    for ch in s:
        if quote:
            cur.append(ch)
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


# ---------------------------------------------------------------- main


def init_file(req: dict[str, Any]) -> str:
    s = Src()
    header(
        s,
        req,
        "The generated layer of the Python SDK: protocol constants, the id canon, key builders, wire classes, the script bundle and the probes. The hand-written package echomq builds on it; import the submodules.",
    )
    return s.text()


def render(req: dict[str, Any]) -> list[dict[str, str]]:
    opts = req.get("options") or {}
    pkg = opts.get("package", "src/echomq/_gen")
    if not isinstance(pkg, str) or not pkg or pkg.startswith("/") or ".." in pkg.split("/"):
        raise Refuse(f"option package {pkg!r} is not a relative directory")
    files = [
        ("__init__.py", init_file(req)),
        ("protocol.py", protocol_file(req)),
        ("ids.py", ids_file(req)),
        ("keys.py", keys_file(req)),
        ("errors.py", errors_file(req)),
        ("scripts.py", scripts_file(req)),
        ("probes.py", probes_file(req)),
        ("vocabularies.py", vocabularies_file(req)),
    ]
    return [{"path": f"{pkg}/{name}", "content": long_lines(text)} for name, text in files]


def long_lines(text: str) -> str:
    """Marks a module with lines over the line length: the manifest's texts (Lua lines, shapes,
    patterns, summaries) are never split, so ruff's E501 is waived for it, and only for it."""
    lines = text.split("\n")
    if not any(len(ln) > LINE for ln in lines):
        return text
    return "\n".join([*lines[:2], "# ruff: noqa: E501", *lines[2:]])


def main() -> int:
    req = json.load(sys.stdin)
    if req.get("schema") != REQUEST:
        print(
            f"emqgen-python: request schema {req.get('schema')!r} is not one this plugin reads ({REQUEST})",
            file=sys.stderr,
        )
        return 2
    try:
        files = render(req)
    except Refuse as e:
        json.dump({"schema": RESPONSE, "files": [], "errors": [str(e)]}, sys.stdout)
        sys.stdout.write("\n")
        return 0
    json.dump({"schema": RESPONSE, "files": files}, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
