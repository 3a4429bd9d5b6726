"""Typed payloads: a codec turns a value into a job's payload bytes and back.

``client.queue("orders", codec=JSONCodec(Order))`` is a TypedQueue: its push takes an Order (a
dataclass, a TypedDict, or any JSON value), and a Worker on it hands its handler a TypedJob whose
``value`` is the decoded Order. Raw bytes stay one call away: ``typed.raw`` is the plain Queue.
A payload that does not decode is buried at once (no retry can fix it), with the reason logged.
"""

from __future__ import annotations

import builtins
import dataclasses
import json
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast, overload

from ._cancel import honour_cancel
from ._deprecation import deprecated
from ._duration import Duration
from ._gen.protocol import Missed, SetName
from .dedup import DedupKey, DedupResult
from .errors import ArgumentTypeError
from .failures import FailedAttempt
from .outputs import BackoffPolicy
from .policy import QueuePolicy
from .queue import BatchResult, Job, JobInfo, NewJob, Page, Queue, failures_repr, ms_repr
from .schedulers import DEFAULT_MISSED, UpsertResult

if TYPE_CHECKING:
    import datetime

__all__ = [
    "Codec",
    "CodecError",
    "JSONCodec",
    "TypedJob",
    "TypedJobInfo",
    "TypedQueue",
]

T = TypeVar("T")


class CodecError(ValueError):
    """A payload that does not decode to the codec's type, or a value that does not encode."""


class Codec(Protocol[T]):
    """Turns values into payload bytes and back. ``decode`` raises (a CodecError or a ValueError)
    on bytes that are not a value of its type."""

    def encode(self, value: T) -> bytes:
        """The payload bytes of value."""
        ...

    def decode(self, data: bytes) -> T:
        """The value of payload bytes."""
        ...


def _to_json(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: _to_json(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, dict):
        return {k: _to_json(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_to_json(x) for x in v]
    return v


def _from_json(tp: Any, v: Any, where: str) -> Any:
    """v (decoded JSON) as a value of type tp: dataclasses and TypedDicts checked field by field
    (nested ones too), list[X] and dict[str, X] element by element, X | None, Any and plain
    scalar types; a CodecError saying where for a mismatch."""
    if tp is Any or tp is object:
        return v
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        errs = []
        for a in typing.get_args(tp):
            try:
                return _from_json(a, v, where)
            except CodecError as err:
                errs.append(str(err))
        raise CodecError(f"{where}: {v!r} is none of {tp}")
    if origin is typing.Literal:
        if v in typing.get_args(tp):
            return v
        raise CodecError(f"{where}: {v!r} is not one of {typing.get_args(tp)}")
    if tp is type(None):
        if v is None:
            return None
        raise CodecError(f"{where}: expected null, got {type(v).__name__}")
    if origin in (list, Sequence, tuple) or tp in (list, tuple):
        if not isinstance(v, list):
            raise CodecError(f"{where}: expected a JSON array, got {type(v).__name__}")
        args = typing.get_args(tp)
        items = [_from_json(args[0] if args else Any, x, f"{where}[{i}]") for i, x in enumerate(v)]
        return tuple(items) if origin is tuple or tp is tuple else items
    if origin is dict or tp is dict:
        if not isinstance(v, dict):
            raise CodecError(f"{where}: expected a JSON object, got {type(v).__name__}")
        args = typing.get_args(tp)
        vt = args[1] if len(args) == 2 else Any
        return {k: _from_json(vt, x, f"{where}.{k}") for k, x in v.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(v, dict):
            raise CodecError(f"{where}: expected a JSON object for {tp.__name__}, got {v!r}")
        hints = typing.get_type_hints(tp)
        kw = {}
        for f in dataclasses.fields(tp):
            if f.name in v:
                kw[f.name] = _from_json(hints.get(f.name, Any), v[f.name], f"{where}.{f.name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise CodecError(f"{where}: {tp.__name__} needs the field {f.name!r}")
        extra = set(v) - {f.name for f in dataclasses.fields(tp)}
        if extra:
            raise CodecError(f"{where}: {tp.__name__} has no field {sorted(extra)[0]!r}")
        return tp(**kw)
    if typing.is_typeddict(tp):
        if not isinstance(v, dict):
            raise CodecError(f"{where}: expected a JSON object for {tp.__name__}, got {v!r}")
        hints = typing.get_type_hints(tp, include_extras=True)
        out: dict[str, Any] = {}
        for k, h in hints.items():
            o = typing.get_origin(h)
            if o is typing.NotRequired or o is typing.Required:
                # read here, not from __required_keys__: under postponed annotations (PEP 563)
                # Python 3.11 counts a NotRequired key as required
                required, h = o is typing.Required, typing.get_args(h)[0]
            else:
                required = k in tp.__required_keys__
            if k in v:
                out[k] = _from_json(h, v[k], f"{where}.{k}")
            elif required:
                raise CodecError(f"{where}: {tp.__name__} needs the key {k!r}")
        extra = set(v) - set(hints)
        if extra:
            raise CodecError(f"{where}: {tp.__name__} has no key {sorted(extra)[0]!r}")
        return out
    if tp is float and isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    if isinstance(tp, type):
        if isinstance(v, tp) and not (tp is int and isinstance(v, bool)):
            return v
        raise CodecError(f"{where}: expected {tp.__name__}, got {type(v).__name__}")
    return v  # a type this codec does not check (a TypeVar, a NewType, ...)


class JSONCodec(Generic[T]):
    """A JSON codec: ``JSONCodec(Order)`` for a dataclass or a TypedDict (checked on decode, field
    by field, nested ones too: a payload missing a required field fails to decode),
    ``JSONCodec(dict[str, int])`` or ``JSONCodec()`` for any JSON value. Encoding writes compact
    UTF-8 JSON; ``dumps``/``loads`` replace json.dumps/json.loads (orjson's, say)."""

    @overload
    def __init__(
        self: JSONCodec[T],
        type: builtins.type[T],
        *,
        dumps: Callable[[Any], str | bytes] | None = ...,
        loads: Callable[[bytes], Any] | None = ...,
    ) -> None: ...
    @overload
    def __init__(
        self: JSONCodec[Any],
        *,
        dumps: Callable[[Any], str | bytes] | None = ...,
        loads: Callable[[bytes], Any] | None = ...,
    ) -> None: ...

    def __init__(
        self,
        type: Any = Any,
        *,
        dumps: Callable[[Any], str | bytes] | None = None,
        loads: Callable[[bytes], Any] | None = None,
    ) -> None:
        self.type = type
        """The type decode returns."""
        self._dumps = dumps
        self._loads = loads or json.loads

    def encode(self, value: T) -> bytes:
        """The JSON of value (a dataclass as an object of its fields)."""
        try:
            doc = _to_json(value)
            out = (
                self._dumps(doc)
                if self._dumps is not None
                else json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
            )
        except (TypeError, ValueError) as err:
            raise CodecError(
                f"emq: JSONCodec: cannot encode {type(value).__name__}: {err}"
            ) from err
        return out.encode() if isinstance(out, str) else bytes(out)

    def decode(self, data: bytes) -> T:
        """The value of JSON data, checked against the codec's type."""
        try:
            doc = self._loads(data)
        except ValueError as err:
            raise CodecError(f"emq: JSONCodec: the payload is not JSON: {err}") from err
        name = getattr(self.type, "__name__", str(self.type))
        return cast(T, _from_json(self.type, doc, name))

    def __repr__(self) -> str:
        return f"JSONCodec({getattr(self.type, '__name__', self.type)!s})"


@dataclass(frozen=True, slots=True)
class TypedJob(Job, Generic[T]):
    """A claimed job of a TypedQueue: a Job (id, token, payload bytes, deadline) with its payload
    decoded by the queue's codec."""

    value: T
    """The decoded payload."""

    def __repr__(self) -> str:
        return (
            f"TypedJob(id={self.id!r}, token={self.token}, value={self.value!r}, "
            f"deadline={ms_repr(self.deadline_ms)})"
        )


@dataclass(frozen=True, slots=True)
class TypedJobInfo(JobInfo, Generic[T]):
    """What inspection shows of one job of a TypedQueue, with its payload decoded (None when it
    does not decode: ``error`` says why)."""

    value: T | None = None
    """The decoded payload, or None when it does not decode."""
    error: str | None = None
    """Why the payload did not decode, or None."""

    def __repr__(self) -> str:
        at = "" if self.at_ms is None else f", at={ms_repr(self.at_ms)}"
        v = f"value={self.value!r}" if self.error is None else f"error={self.error!r}"
        f = failures_repr(self.failures, self.died_at_ms)
        return (
            f"TypedJobInfo(id={self.id!r}, state={self.state!r}, attempts={self.attempts}, "
            f"{v}{at}{f})"
        )


class TypedQueue(Generic[T]):
    """A queue whose payloads are values of a codec's type: ``client.queue(name, codec=...)``.
    Producing calls take values; reading calls give decoded values; ``raw`` is the plain Queue for
    everything else (and for bytes)."""

    def __init__(self, queue: Queue, codec: Codec[T]) -> None:
        self.raw = queue
        """The plain Queue of the same name."""
        self.codec = codec
        """The codec of the queue's payloads."""

    def __repr__(self) -> str:
        return f"TypedQueue({self.raw.name!r}, codec={self.codec!r})"

    @property
    def name(self) -> str:
        """The queue's name."""
        return self.raw.name

    def encode(self, value: T) -> bytes:
        """The payload bytes of value (a CodecError when it does not encode)."""
        try:
            return self.codec.encode(value)
        except CodecError:
            raise
        except (TypeError, ValueError) as err:
            raise CodecError(f"emq: queue {self.name}: cannot encode the value: {err}") from err

    def job(self, job: Job) -> TypedJob[T]:
        """job with its payload decoded (a CodecError, or the codec's ValueError, when it does not
        decode)."""
        return TypedJob(
            id=job.id,
            token=job.token,
            payload=job.payload,
            deadline_ms=job.deadline_ms,
            value=self.codec.decode(job.payload),
        )

    @overload
    async def push(
        self,
        id: str,
        value: T,
        *,
        delay: Duration | None = None,
        attempts: int | None = None,
        backoff: BackoffPolicy | None = None,
        dedup: None = None,
        events_max: int | None = None,
    ) -> bool: ...
    @overload
    async def push(
        self,
        id: str,
        value: T,
        *,
        delay: Duration | None = None,
        attempts: int | None = None,
        backoff: BackoffPolicy | None = None,
        dedup: DedupKey,
        events_max: int | None = None,
    ) -> DedupResult: ...
    @honour_cancel
    async def push(
        self,
        id: str,
        value: T,
        *,
        delay: Duration | None = None,
        attempts: int | None = None,
        backoff: BackoffPolicy | None = None,
        dedup: DedupKey | None = None,
        events_max: int | None = None,
    ) -> bool | DedupResult:
        """Queue.push with the value encoded (and its options: delay, attempts, backoff). With
        ``dedup`` (a DedupKey, echomq 2.5.0) it is Queue.push's deduplicated push: the job is
        admitted under the key, a replacement takes the encoded value as its payload, and it
        returns the DedupResult (``events_max`` as there). A value the codec refuses raises a
        CodecError and nothing is sent."""
        payload = self.encode(value)
        if dedup is not None:
            return await self.raw.push(
                id,
                payload,
                delay=delay,
                attempts=attempts,
                backoff=backoff,
                dedup=dedup,
                events_max=events_max,
            )
        return await self.raw.push(
            id, payload, delay=delay, attempts=attempts, backoff=backoff, events_max=events_max
        )

    @honour_cancel
    async def upsert_scheduler(
        self,
        scheduler: str,
        value: T,
        *,
        cron: str | None = None,
        tz: str = "",
        every: Duration | None = None,
        every_ms: int | None = None,
        start: datetime.datetime | None = None,
        start_ms: int | None = None,
        missed: Missed = DEFAULT_MISSED,
        backfill: int = 0,
        grace: Duration | None = None,
        grace_ms: int | None = None,
    ) -> UpsertResult:
        """Queue.upsert_scheduler (echomq 2.6.0) whose runs' payload is value encoded: its
        encoding is the template, in which each firing replaces ``{scheduler}``, ``{slot}`` and
        ``{until}`` (so a JSON codec's value may carry them in its strings), and the runs decode
        as values of the queue's type. A value the codec refuses raises a CodecError and nothing
        is sent; the rest is Queue.upsert_scheduler's (TypeScript's TypedQueue.upsertScheduler)."""
        return await self.raw.upsert_scheduler(
            scheduler,
            cron=cron,
            tz=tz,
            every=every,
            every_ms=every_ms,
            start=start,
            start_ms=start_ms,
            missed=missed,
            backfill=backfill,
            grace=grace,
            grace_ms=grace_ms,
            template=self.encode(value),
        )

    @honour_cancel
    async def enqueue(self, id: str, value: T) -> bool:
        """Queue.enqueue with the value encoded."""
        return await self.raw.enqueue(id, self.encode(value))

    @honour_cancel
    async def enqueue_at(
        self,
        id: str,
        value: T,
        run_at_ms: int | None = None,
        *,
        at: datetime.datetime | None = None,
    ) -> bool:
        """Queue.enqueue_at with the value encoded."""
        if at is not None:
            return await self.raw.enqueue_at(id, self.encode(value), at=at)
        if run_at_ms is None:
            raise TypeError("emq: enqueue_at needs run_at_ms or at")
        return await self.raw.enqueue_at(id, self.encode(value), run_at_ms)

    @honour_cancel
    async def push_batch(
        self,
        jobs: Sequence[tuple[str, T]],
        *,
        delay: Duration | None = None,
        attempts: int | None = None,
        backoff: BackoffPolicy | None = None,
    ) -> list[BatchResult]:
        """Queue.push_batch of (id, value) pairs (and its options: delay, attempts, backoff)."""
        return await self.raw.push_batch(
            self._new(jobs), delay=delay, attempts=attempts, backoff=backoff
        )

    @honour_cancel
    async def push_many(self, jobs: Sequence[tuple[str, T]]) -> list[bool]:
        """Queue.push_many of (id, value) pairs."""
        return await self.raw.push_many(self._new(jobs))

    def _new(self, jobs: Sequence[tuple[str, T]]) -> list[NewJob]:
        out = []
        for i, j in enumerate(jobs):
            if not isinstance(j, tuple) or len(j) != 2:
                raise ArgumentTypeError(f"jobs[{i}]", "an (id, value) tuple", j)
            out.append(NewJob(id=j[0], payload=self.encode(j[1])))
        return out

    @deprecated("raw.claim_many(lease_ms, 1), and job() of each job it leased")
    @honour_cancel
    async def claim(
        self, lease_ms: int | None = None, *, lease: Duration | None = None
    ) -> TypedJob[T] | None:
        """Queue.claim, the job's payload decoded (a CodecError when it does not decode: the job
        stays leased to the caller, who may bury it).

        Deprecated, as Queue.claim is: use ``raw.claim_many(lease_ms, 1)`` and ``job()`` of each
        job it leased; calling it warns (DeprecationWarning)."""
        j = await self.raw._claim_one(lease_ms, lease)
        return None if j is None else self.job(j)

    @honour_cancel
    async def get(self, id: str) -> TypedJobInfo[T] | None:
        """Queue.get, the payload decoded (or the reason it does not decode)."""
        info = await self.raw.get(id)
        if info is None:
            return None
        value: T | None = None
        error: str | None = None
        try:
            value = self.codec.decode(info.payload)
        except (TypeError, ValueError) as err:
            error = str(err)
        return TypedJobInfo(
            id=info.id,
            state=info.state,
            attempts=info.attempts,
            payload=info.payload,
            at_ms=info.at_ms,
            value=value,
            error=error,
            failures=info.failures,
            died_at_ms=info.died_at_ms,
            progress=info.progress,
        )

    @honour_cancel
    async def failures(self, id: str) -> list[FailedAttempt]:
        """Queue.failures."""
        return await self.raw.failures(id)

    @honour_cancel
    async def size(self, s: SetName) -> int:
        """Queue.size."""
        return await self.raw.size(s)

    @honour_cancel
    async def sizes(self) -> dict[SetName, int]:
        """Queue.sizes."""
        return await self.raw.sizes()

    @honour_cancel
    async def pending_size(self) -> int:
        """Queue.pending_size."""
        return await self.raw.pending_size()

    @honour_cancel
    async def page(self, s: SetName, after: str, n: int) -> Page:
        """Queue.page."""
        return await self.raw.page(s, after, n)

    @honour_cancel
    async def revive(self, id: str) -> bool:
        """Queue.revive."""
        return await self.raw.revive(id)

    @honour_cancel
    async def purge(self, id: str) -> bool:
        """Queue.purge."""
        return await self.raw.purge(id)

    @honour_cancel
    async def pause(self, *, force: bool = False) -> QueuePolicy:
        """Queue.pause (echomq 2.7.0)."""
        return await self.raw.pause(force=force)

    @honour_cancel
    async def resume(self) -> QueuePolicy:
        """Queue.resume (echomq 2.7.0)."""
        return await self.raw.resume()

    @honour_cancel
    async def set_concurrency(self, concurrency: int, *, force: bool = False) -> QueuePolicy:
        """Queue.set_concurrency (echomq 2.7.0)."""
        return await self.raw.set_concurrency(concurrency, force=force)

    @honour_cancel
    async def set_rate_limit(
        self,
        limit: int,
        period_ms: int | datetime.timedelta | None = None,
        *,
        period: Duration | None = None,
        force: bool = False,
    ) -> QueuePolicy:
        """Queue.set_rate_limit (echomq 2.8.0)."""
        return await self.raw._set_rate_limit(limit, period_ms, period, force)

    @honour_cancel
    async def policy(self) -> QueuePolicy:
        """Queue.policy (echomq 2.7.0)."""
        return await self.raw.policy()
