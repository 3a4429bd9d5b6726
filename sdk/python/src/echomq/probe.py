"""run_probes: the manifest's probes (generated data, PROBES) run against a live keyspace, each on
a scratch queue of its own, as the Go SDK's RunProbes and the TypeScript SDK's runProbes do."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from redis.exceptions import ResponseError

from ._gen.errors import WireError
from ._gen.ids import MAX_NODE, IdGenerator
from ._gen.keys import (
    KEY_LOCKS,
    QueueKeys,
    key_migration,
    lock_maintenance,
    lock_probe,
    reserve_key,
)
from ._gen.probes import (
    PROBE_KIND_FIELD,
    PROBE_KIND_KEY,
    PROBE_KIND_RESERVE,
    PROBE_KIND_ROW,
    PROBE_KIND_STATE,
    PROBE_VAR_BUNDLE,
    PROBE_VAR_QUEUE,
    PROBE_VAR_SEMVER,
    PROBE_VAR_VERSION,
    PROBES,
    Probe,
    ProbeExpect,
    ProbeStep,
)
from ._gen.protocol import (
    SETS,
    VERSION,
    VERSION_RECORD,
    WORK_KIND,
    field_by_role,
    is_kind,
    is_state,
)
from ._gen.scripts import (
    BUNDLE_DIGEST,
    SCRIPTS,
    Arg,
    FenceCall,
    ScriptExec,
    run_script,
    script_named,
)
from ._session import Verdict, judge_version_record

if TYPE_CHECKING:
    from .client import Client

__all__ = ["SCRATCH_PREFIX", "ProbeResult", "ProbeTranscript", "run_probes"]

SCRATCH_PREFIX: Final = "emqprobe-"
"""Starts the name of every scratch queue a probe runs on."""

_PLACEHOLDER: Final = re.compile(r"\$\{([^}]*)\}")


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """The outcome of one probe check."""

    target: str
    check: str
    error: str | None = None
    """Why the check failed; None when it passed."""


@dataclass(slots=True)
class ProbeTranscript:
    """The outcome of a probe run: one result per check."""

    results: list[ProbeResult] = field(default_factory=list)

    @property
    def passed(self) -> int:
        """How many checks passed."""
        return sum(1 for r in self.results if r.error is None)

    @property
    def ok(self) -> bool:
        """Whether every check passed, and there was at least one."""
        return bool(self.results) and self.passed == len(self.results)

    def lines(self) -> list[str]:
        """One line per check: "ok <target>: <check>" or "FAIL <target>: <check>: <why>"."""
        return [
            f"ok {r.target}: {r.check}"
            if r.error is None
            else f"FAIL {r.target}: {r.check}: {r.error}"
            for r in self.results
        ]


class _StepError(Exception):
    """A check that failed: its message is the transcript's reason."""


@dataclass(slots=True)
class _Reply:
    """A reply as a step sees it: the value, or the error the server answered."""

    value: Any = None
    error: BaseException | None = None


def _text(v: Any) -> str | None:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v if isinstance(v, str) else None


def _scalar(v: Any) -> str:
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    return _text(v) or ""


def _describe(r: _Reply) -> str:
    if r.error is not None:
        return f"error {str(r.error)!r}"

    def d(v: Any) -> str:
        if v is None:
            return "nil"
        if isinstance(v, list):
            return "[" + ", ".join(d(x) for x in v) + "]"
        if isinstance(v, int):
            return f"integer {v}"
        t = _text(v)
        return repr(t if t is not None else v)

    return d(r.value)


def _scratch_keys(k: QueueKeys) -> list[str]:
    """The keys of a scratch queue a probe may write and cleaning up deletes, rows aside."""
    keys: dict[str, None] = {}
    for s in SETS:
        keys[k.set(s)] = None
    for sc in SCRIPTS:
        for t in sc.key_types:
            key = k.key(t)
            if key is not None:
                keys[key] = None
    keys[key_migration(k.queue)] = None
    return list(keys)


class _Runtime:
    """One probe's scratch queue and ids."""

    def __init__(
        self, c: Client, gen: IdGenerator, read_only: dict[str, bool], keys: QueueKeys
    ) -> None:
        self.c = c
        self.gen = gen
        self.read_only = read_only
        self.keys = keys
        self.scratch = _scratch_keys(keys)
        self.ids: dict[str, str] = {}
        self.held: dict[str, bool] = {}

    async def send(self, *args: str | bytes) -> Any:
        """Sends a command as it is, its reply unparsed (a bytes verb skips redis-py's reply
        callbacks)."""
        raw = [a.encode() if isinstance(a, str) else a for a in args]
        return await self.c.redis.execute_command(*raw)  # type: ignore[no-untyped-call]

    @classmethod
    async def open(cls, c: Client, gen: IdGenerator, read_only: dict[str, bool]) -> _Runtime:
        """Opens a runtime on a fresh scratch queue: one none of whose keys exists."""
        for _ in range(5):
            keys = QueueKeys(SCRATCH_PREFIX + gen.mint(WORK_KIND).lower())
            rt = cls(c, gen, read_only, keys)
            taken = False
            for k in rt.scratch:
                taken = taken or int(await rt.send("EXISTS", k)) > 0
            if taken:
                continue
            for f in (lock_probe(keys.queue), lock_maintenance(keys.queue)):
                try:
                    rt.held[f] = int(await rt.send("HEXISTS", KEY_LOCKS, f)) > 0
                except ResponseError:
                    rt.held[f] = True  # unreadable counts as held: never removed
            return rt
        raise RuntimeError("emq: probes: found no fresh scratch queue in 5 tries")

    def _id(self, name: str) -> str | None:
        """The id variable name (a registered kind in lower case, maybe a digit), minted on first
        use."""
        have = self.ids.get(name)
        if have is not None:
            return have
        kind = name.rstrip("0123456789").upper()
        if not is_kind(kind):
            return None
        id = self.gen.mint(kind)
        self.ids[name] = id
        return id

    def lookup(self, name: str) -> str | None:
        fixed = {
            PROBE_VAR_QUEUE: self.keys.queue,
            PROBE_VAR_VERSION: VERSION_RECORD,
            PROBE_VAR_SEMVER: VERSION,
            PROBE_VAR_BUNDLE: BUNDLE_DIGEST,
        }
        if name in fixed:
            return fixed[name]
        kind, colon, arg = name.partition(":")
        if not colon:
            return self._id(name)
        if kind == PROBE_KIND_KEY:
            return self.keys.key(arg)
        if kind == PROBE_KIND_ROW:
            id = self._id(arg)
            return None if id is None else self.keys.row(id)
        if kind == PROBE_KIND_RESERVE:
            try:
                return reserve_key(arg, self.keys.queue)
            except (KeyError, ValueError):
                return None
        if kind == PROBE_KIND_FIELD:
            return field_by_role(arg)
        if kind == PROBE_KIND_STATE:
            return arg if is_state(arg) else None
        return None

    async def run_script(self, name: str, args: dict[str, str]) -> _Reply:
        """Runs a script of the bundle on the scratch queue; the fence script is refused, unsent."""
        sc = script_named(name)
        if sc is None:
            return _Reply(error=ValueError(f"no script {name!r}"))
        if sc is FenceCall.SCRIPT:
            return _Reply(
                error=ValueError(
                    f"not run: script {name} writes the fence's keys, which a probe only reads"
                )
            )
        # The first row key takes the row of the first id argument (the job a
        # script moves); later row keys, a repeated group run with one entry,
        # take the row of the last (the repeated ids' one value).
        first: str | None = None
        last = ""
        argv: list[Arg] = []
        for a, t in zip(sc.argv, sc.arg_types, strict=True):
            if t == "prefix":
                argv.append(self.keys.row_prefix)
                continue
            v = args.get(a, "")
            if t == "id":
                if first is None:
                    first = v
                last = v
            argv.append(v)
        id = first if first is not None else ""
        try:
            keys: list[str] = []
            for t in sc.key_types:
                member = t.removeprefix(PROBE_KIND_RESERVE + ":")
                if member != t:
                    keys.append(reserve_key(member, self.keys.queue))
                else:
                    key = self.keys.key(t)
                    if key is None:
                        key = self.keys.row(id)
                        id = last
                    keys.append(key)
            return _Reply(
                value=await run_script(self.c.redis, ScriptExec(sc, tuple(keys), tuple(argv)))
            )
        except (ResponseError, WireError, ValueError) as err:
            return _Reply(error=err)

    async def do(self, cmd: list[str]) -> _Reply:
        """Sends one command when the server calls it read-only, or when every key it names
        belongs to the scratch queue; anything else is not sent."""
        if not cmd:
            return _Reply(error=ValueError("an empty command"))
        name = cmd[0]
        try:
            if not await self._is_read_only(name):
                keys = [_scalar(k) for k in await self.send("COMMAND", "GETKEYS", *cmd)]
                if not keys:
                    return _Reply(
                        error=ValueError(
                            f"not sent: {name} writes and names no key of the probe's scratch queue"
                        )
                    )
                for k in keys:
                    if not self._owns(k):
                        return _Reply(
                            error=ValueError(
                                f"not sent: {name} would write {k}, outside the probe's scratch "
                                "queue"
                            )
                        )
        except (ResponseError, ValueError) as err:
            return _Reply(
                error=ValueError(f"not sent: the server did not say what {name} does: {err}")
            )
        try:
            return _Reply(value=await self.send(*cmd))
        except ResponseError as err:
            return _Reply(error=err)

    def _owns(self, key: str) -> bool:
        return key in self.scratch or any(self.keys.row(id) == key for id in self.ids.values())

    async def _is_read_only(self, name: str) -> bool:
        n = name.lower()
        have = self.read_only.get(n)
        if have is not None:
            return have
        arr = await self.send("COMMAND", "INFO", n)
        info = arr[0] if isinstance(arr, list) and arr else None
        if not isinstance(info, list) or len(info) < 3 or not isinstance(info[2], list):
            raise ValueError(f"the server does not know {n}")
        flags = {_scalar(f) for f in info[2]}
        ro = "readonly" in flags and "write" not in flags
        self.read_only[n] = ro
        return ro

    async def close(self) -> None:
        """Deletes what the probe wrote: the scratch keys, the rows of its ids, and lock fields
        naming the queue that were absent before."""
        for k in [*self.scratch, *(self.keys.row(id) for id in self.ids.values())]:
            await self.send("DEL", k)
        for f, held in self.held.items():
            if not held and int(await self.send("HEXISTS", KEY_LOCKS, f)) > 0:
                await self.send("HDEL", KEY_LOCKS, f)


def _expand(rt: _Runtime, vars: dict[str, str], s: str) -> str:
    missing: list[str] = []

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        v = vars.get(name)
        if v is None:
            v = rt.lookup(name)
        if v is None:
            missing.append(name)
            return m.group(0)
        return v

    out = _PLACEHOLDER.sub(sub, s)
    if missing:
        raise _StepError("unknown placeholder " + ", ".join("${" + m + "}" for m in missing))
    return out


def _check(rt: _Runtime, vars: dict[str, str], e: ProbeExpect, r: _Reply) -> None:
    got = _describe(r)
    v = r.value if r.error is None else None
    ok_int = r.error is None and isinstance(v, int) and not isinstance(v, bool)
    if e.kind == "int":
        if not ok_int or v != e.int:
            raise _StepError(f"want integer {e.int}, got {got}")
    elif e.kind == "positive":
        if not ok_int or not isinstance(v, int) or v <= 0:
            raise _StepError(f"want a positive integer, got {got}")
    elif e.kind == "string":
        want = _expand(rt, vars, e.string)
        if r.error is not None or _text(v) != want:
            raise _StepError(f"want {want!r}, got {got}")
    elif e.kind == "nil":
        if r.error is not None or v is not None:
            raise _StepError(f"want nil, got {got}")
    elif e.kind == "error":
        err = r.error
        word = None
        if isinstance(err, WireError):
            word = err.word
        elif isinstance(err, ResponseError):
            word = str(err).split(" ")[0]
        if word != e.string:
            raise _StepError(f"want a {e.string} refusal, got {got}")
    elif e.kind == "fence":
        s = _text(v) if r.error is None else None
        if s is None or judge_version_record(s) not in (Verdict.CURRENT, Verdict.AHEAD):
            raise _StepError(f"want a version record this client's fence admits, got {got}")
    else:
        raise _StepError(f"unknown expectation {e.kind!r}")


async def _run_step(rt: _Runtime, vars: dict[str, str], s: ProbeStep) -> None:
    if s.script:
        args = {k: _expand(rt, vars, v) for k, v in s.args}
        r = await rt.run_script(s.script, args)
    elif s.command:
        r = await rt.do([_expand(rt, vars, c) for c in s.command])
    else:
        raise _StepError("the step runs nothing")
    if r.error is not None and not isinstance(r.error, ResponseError | WireError):
        raise _StepError(str(r.error))
    sc = script_named(s.script) if s.script else None
    names = list(sc.reply_elements) if sc is not None else []
    # A repeated reply (a list of records, each a list) is narrowed to its
    # first record for the step's save and element.
    record = r.value
    if isinstance(record, list) and record and isinstance(record[0], list):
        record = record[0]
    if s.save and r.error is None:
        if isinstance(record, list):
            for i, n in enumerate(names):
                if i < len(record):
                    vars[f"{s.save}.{n}"] = _scalar(record[i])
        else:
            vars[s.save] = _scalar(r.value)
    if s.expect.element:
        if r.error is not None or not isinstance(record, list):
            raise _StepError(f"want an array reply, got {_describe(r)}")
        if s.expect.element not in names or names.index(s.expect.element) >= len(record):
            raise _StepError(f"the reply has no element {s.expect.element!r}")
        r = _Reply(value=record[names.index(s.expect.element)])
    _check(rt, vars, s.expect, r)


async def run_probes(c: Client, probes: Sequence[Probe] = PROBES) -> ProbeTranscript:
    """Runs every probe of the manifest against the client's keyspace and returns the transcript.

    Every probe runs on a scratch queue of its own with fresh ids from an unleased node, and
    everything it wrote there is deleted when it ends; the fence script is never run, and a
    command is sent only when the server calls it read-only or every key it names is the scratch
    queue's. A failed check is a line of the transcript; what stops the run (a connection,
    cleaning up) raises.
    """
    gen = IdGenerator(random.randrange(MAX_NODE + 1))
    read_only: dict[str, bool] = {}
    t = ProbeTranscript()
    for p in probes:
        rt = await _Runtime.open(c, gen, read_only)
        vars: dict[str, str] = {}
        for s in p.steps:
            try:
                await _run_step(rt, vars, s)
                t.results.append(ProbeResult(p.target, s.check))
            except _StepError as err:
                t.results.append(ProbeResult(p.target, s.check, str(err)))
        await rt.close()
    return t
