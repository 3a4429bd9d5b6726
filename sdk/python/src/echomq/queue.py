"""Queue: the bus surface of one queue. The caller never builds a key or names a script."""

from __future__ import annotations

import asyncio
import contextvars
import datetime
import inspect
import logging
import math
import re
import secrets
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, Protocol, TypeVar, overload

from redis.asyncio import Redis
from redis.exceptions import NoScriptError, ResponseError

from ._cancel import honour_cancel, honoured
from ._deprecation import deprecated
from ._duration import Duration, duration_ms, ms_int, pick_ms
from ._gen.ids import parse_id
from ._gen.keys import ACTIVE_TRIPWIRE_TYPE, KEY_BUNDLE, QueueKeys
from ._gen.protocol import (
    ADMISSION_DEFERRED,
    BACKOFF_FIXED,
    BACKOFF_INHERIT,
    EVENT_DEAD,
    FIELD_PAYLOAD,
    FIELD_STATE,
    FIELD_TOKEN,
    FIRING_ADVANCED,
    FIRING_FIRED,
    SET_ACTIVE,
    SET_PENDING,
    SETS,
    Dedup,
    Firing,
    Missed,
    SetName,
    State,
    is_set_name,
    is_state,
    set_is_lex,
    state_set,
)
from ._gen.scripts import (
    ENQUEUE_AT_ENQUEUED,
    ENQUEUE_ENQUEUED,
    PURGE_PURGED,
    PUSH_ENQUEUED,
    REVIVE_RECORDED_REVIVED,
    AddDedupPolicyCall,
    AddDedupPolicyEntry,
    AddManyCall,
    BuryFailedCall,
    BuryPolicyCall,
    CancelPolicyIdsCall,
    ClaimCall,
    ClaimRateIdsCall,
    CompleteCall,
    CompleteClaimIdsCall,
    CompleteRateIdsCall,
    ConfigurePolicyCall,
    CountersCall,
    DedupPolicyEntriesCall,
    DueSchedulersCall,
    DueSchedulersReply,
    EnqueueAtCall,
    EnqueueCall,
    EventsCall,
    EventsReply,
    ExtendPolicyCall,
    FailPolicyCall,
    FailuresCall,
    FireSchedulersCall,
    FireSchedulersEntry,
    ForgetFailuresCall,
    ForgetIdsCall,
    ListSchedulersCall,
    ListSchedulersReply,
    OutputCall,
    OutputReply,
    PauseSchedulersCall,
    ProgressCall,
    PromoteCall,
    PromoteIdsCall,
    PurgeCall,
    PushCall,
    PushManyCall,
    PushManyEntry,
    ReadPolicyCall,
    ReadPolicyReply,
    ReapCall,
    ReapFailedIdsCall,
    ReapIdsCall,
    ReapPolicyIdsCall,
    RemoveSchedulersCall,
    ReplaceDedupPolicyCall,
    ReplyShapeError,
    RetryFailedCall,
    RetryPolicyCall,
    ReviveRecordedCall,
    RingCall,
    SchedulerEntriesCall,
    SchedulerEntriesReply,
    Script,
    ScriptExec,
    SweepDedupPolicyCall,
    UpsertSchedulerCall,
    pipe_script,
    run_script,
    run_scripts,
    script_error,
)
from ._push import DEFAULT_PUSH_MAX_BATCH, AddOptions, Pusher, PushJob, add_exec, push_jobs
from ._transport import TryAgainError
from .dedup import (
    REPLACE_ATTEMPTS,
    Cancelled,
    DedupContentionError,
    DedupEntry,
    DedupKey,
    DedupResult,
    DedupSweep,
    dedup_key_bytes,
    dedup_mode,
    dedup_ttl_ms,
    hold_bits,
)
from .errors import ArgumentError, ArgumentTypeError
from .failures import FailedAttempt, Failure, check_failure, decode_failures, died_at_ms
from .metrics import Counter
from .outputs import (
    COUNTERS_MINUTES_MAX,
    EVENTS_PAGE_MAX,
    PROGRESS_MAX_BYTES,
    RESULT_MAX_BYTES,
    AddResult,
    BackoffPolicy,
    Completion,
    Counters,
    FailOutcome,
    JobOutput,
    MinuteCounts,
    QueueEvent,
    Retention,
    SettleCounts,
    encode_value,
)
from .policy import (
    RATE_LIMIT_MAX,
    RATE_PERIOD_MAX_MS,
    PolicyFloorError,
    QueuePolicy,
    below_floor,
    is_wrongtype,
    legacy_policy_error,
)
from .schedulers import (
    DEFAULT_GRACE_MS,
    DEFAULT_MISSED,
    FiredRun,
    FireEntry,
    PlanEntry,
    SchedulerInfo,
    UpsertResult,
    check_scheduler_id,
    check_scheduler_ids,
    plan,
    upsert_args,
)

if TYPE_CHECKING:
    from .client import Client

__all__ = [
    "PEEK_ATTEMPTS",
    "PUSH_MAX_BATCH",
    "BatchResult",
    "Job",
    "JobInfo",
    "JobLookup",
    "NewJob",
    "Page",
    "Payload",
    "Queue",
]

log = logging.getLogger(__name__)

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class _LegacyCall(Protocol[T_co]):
    """A generated call of a script older than 2.7 that declares the active key."""

    SCRIPT: ClassVar[Script]

    def run(self, r: Redis) -> Awaitable[T_co]: ...


Payload = bytes | str
"""A job's payload as given: bytes, or text (sent as UTF-8)."""

_INT_RE = re.compile(r"-?[0-9]+")

PUSH_MAX_BATCH: Final = DEFAULT_PUSH_MAX_BATCH
"""The most jobs push_batch and a coalesced push send in one push_many call by default (the Go
SDK's default PushMaxBatch); connect(push_max_batch=...) changes it."""

DUE_PAGE: Final = 100
"""How many due schedulers one round of fire_due reads and fires at most (echomq 2.6.0)."""

LIST_SCHEDULERS_MAX: Final = 1000
"""The largest page of list_schedulers and of a due read."""

DEFAULT_SCHEDULER_POLL: Final = 0.25
"""How long run_schedulers waits between rounds, in seconds, unless told."""

SCHEDULER_RETRY_MAX_S: Final = 5.0
"""The longest pause of run_schedulers after failed rounds, in seconds."""

PEEK_ATTEMPTS: Final = 3
"""How many times claim_many, complete_claim, promote_due and reap_expired read the head of their
set again when another caller took every id they read, before they give up for this call."""


_REPORTER: contextvars.ContextVar[Callable[[Job, object], Awaitable[None]]] = (
    contextvars.ContextVar("emq_progress_reporter")
)
"""How Job.report_progress reports in the context of a Worker's handler (the Worker sets it)."""


@dataclass(frozen=True, slots=True)
class Job:
    """A claimed job."""

    id: str
    """The job's id."""
    token: int
    """The fencing token the claim minted; every later transition presents it. It is the row's
    attempts: which claim of the job this is, 1 for the first."""
    payload: bytes
    """The payload's bytes."""
    deadline_ms: int
    """The lease deadline on the server's clock, in Unix milliseconds."""

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(id={self.id!r}, token={self.token}, "
            f"payload={payload_repr(self.payload)}, deadline={ms_repr(self.deadline_ms)})"
        )

    async def report_progress(self, progress: object) -> None:
        """Reports the job's progress (echomq 2.4.0) from inside the handler a Worker runs it
        with: bytes, a str (as UTF-8) or any JSON value (a number, a dict, ...), at most
        PROGRESS_MAX_BYTES, replacing the last report. get and output read it while the job
        exists; a progress event is emitted (unless the worker's events_max is 0). A lease the
        worker lost is refused with a StaleError, and nothing is written. Outside a Worker's
        handler it raises a RuntimeError: Queue.report_progress reports for any lease holder."""
        report = _REPORTER.get(None)
        if report is None:
            raise RuntimeError(
                "emq: Job.report_progress works inside a Worker's handler; "
                "elsewhere call Queue.report_progress(id, token, progress)"
            )
        await report(self, progress)


@dataclass(frozen=True, slots=True)
class NewJob:
    """A job to admit; with ``dedup`` (echomq 2.5.0) push_batch admits it under that key."""

    id: str
    payload: Payload
    dedup: DedupKey | None = None


@dataclass(frozen=True, slots=True)
class BatchResult:
    """The outcome of one job of a batch: enqueued (False: a duplicate), or the error it failed
    with (the others still took effect)."""

    enqueued: bool
    error: BaseException | None = None
    dedup: DedupResult | None = None
    """What the admission did under the job's deduplication key (echomq 2.5.0); None for a job
    without one. enqueued is then whether the job was written (admitted or parked)."""


@dataclass(frozen=True, slots=True)
class JobInfo:
    """What inspection shows of one job."""

    id: str
    state: State
    attempts: int
    """The fencing token: how many times the job was claimed."""
    payload: bytes
    at_ms: int | None = None
    """The lease deadline of an active job and the run-at of a scheduled one (server clock, Unix
    ms); None in the other states."""
    failures: tuple[FailedAttempt, ...] = field(default=(), kw_only=True)
    """The job's recorded failed attempts, oldest first (at most the last 10; echomq 2.3.0):
    empty when none was recorded (a 2.2 client records nothing), and, on a Redis Cluster, while
    the queue's slot is split by a migration (the record cannot be read then; Queue.failures
    waits for the slot to settle)."""
    died_at_ms: int | None = field(default=None, kw_only=True)
    """When a dead job died (server clock, Unix ms): the time of its last recorded attempt, when
    that attempt is the row's attempts. None for a job that is not dead, and for one whose last
    attempt was settled by a client that records nothing: not recorded, never guessed."""
    progress: bytes = field(default=b"", kw_only=True)
    """The lease holder's last progress report (echomq 2.4.0: Job.report_progress); empty when
    none was made."""

    @property
    def died_at(self) -> datetime.datetime | None:
        """died_at_ms as an aware datetime in UTC, or None."""
        if self.died_at_ms is None:
            return None
        return datetime.datetime.fromtimestamp(self.died_at_ms / 1000, datetime.UTC)

    def __repr__(self) -> str:
        at = "" if self.at_ms is None else f", at={ms_repr(self.at_ms)}"
        return (
            f"{type(self).__name__}(id={self.id!r}, state={self.state!r}, "
            f"attempts={self.attempts}, payload={payload_repr(self.payload)}{at}"
            f"{failures_repr(self.failures, self.died_at_ms)})"
        )


def failures_repr(failures: Sequence[FailedAttempt], died_at_ms: int | None) -> str:
    """The failure part of a JobInfo's repr: how many attempts failed, the last one's class, and
    when the job died; empty when nothing was recorded."""
    if not failures:
        return ""
    out = f", failures={len(failures)} (last: {failures[-1].failure_class})"
    if died_at_ms is not None:
        out += f", died_at={ms_repr(died_at_ms)}"
    return out


@dataclass(frozen=True, slots=True)
class JobLookup:
    """What Queue.lookup finds of one job: the job while its row exists, else its completion
    record when one was kept (echomq 2.4.0)."""

    job: JobInfo | None = None
    """The job, as Queue.get reads it; None when its row is gone (or never was)."""
    completed: Completion | None = None
    """The kept completion record of a job whose row is gone; None otherwise."""

    @property
    def found(self) -> bool:
        """Whether the job's row exists."""
        return self.job is not None


@dataclass(frozen=True, slots=True)
class Page:
    """A page of a set: its ids, newest first, and the cursor of the next page ("" after the
    last)."""

    ids: list[str]
    next: str


PAYLOAD_TYPES: Final = (
    "bytes or str (for other values give the queue a codec: "
    "client.queue(name, codec=echomq.JSONCodec(...)))"
)
"""What a payload parameter takes, in words."""

PAYLOAD_PARAM: Final = "the payload"
"""How an error names the payload parameter."""


PAYLOAD_REPR_MAX: Final = 64
"""The most payload bytes a repr shows."""


def payload_repr(p: bytes) -> str:
    """A payload for a repr: its bytes up to PAYLOAD_REPR_MAX, else its size and a prefix."""
    if len(p) <= PAYLOAD_REPR_MAX:
        return repr(p)
    return f"<{len(p)} bytes: {p[: PAYLOAD_REPR_MAX // 2]!r}...>"


def ms_repr(ms: int) -> str:
    """Unix milliseconds for a repr: an ISO 8601 UTC time with milliseconds."""
    try:
        t = datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def _bytes(p: Payload) -> bytes:
    if isinstance(p, str):
        return p.encode()
    if isinstance(p, bytes | bytearray | memoryview):
        return bytes(p)
    raise ArgumentTypeError(PAYLOAD_PARAM, PAYLOAD_TYPES, p)


def _int(what: str, n: object) -> int:
    if not isinstance(n, int) or isinstance(n, bool):
        raise ArgumentTypeError(what, "an int", n)
    return n


def _positive(what: str, n: int | None) -> None:
    n = _int(what, n)
    if n < 1:
        raise ArgumentError(f"{what} {n!r} is not a positive integer")


def _non_negative(what: str, n: int | None) -> None:
    n = _int(what, n)
    if n < 0:
        raise ArgumentError(f"{what} {n!r} is not a non-negative integer")


def _ids(ids: Sequence[str]) -> list[str]:
    if isinstance(ids, str | bytes):
        raise ArgumentTypeError("ids", "a sequence of id strings", ids)
    return list(ids)


def _backoff(b: object) -> BackoffPolicy | None:
    if b is not None and not isinstance(b, BackoffPolicy):
        raise ArgumentTypeError(
            "backoff",
            "an echomq.BackoffPolicy (BackoffPolicy.fixed(...), BackoffPolicy.exponential(...)) "
            "or None",
            b,
        )
    return b


def add_options(
    delay: Duration | None = None,
    attempts: int | None = None,
    backoff: BackoffPolicy | None = None,
    *,
    delay_ms: int | None = None,
) -> AddOptions | None:
    """The add_many options of a push's keywords, checked (a negative delay or attempts, a
    backoff that is not a BackoffPolicy: an ArgumentError before anything is sent); None when
    they ask for nothing (the push goes as a plain push)."""
    d = pick_ms("delay_ms", delay_ms, "delay", delay, 0, allow_zero=True)
    _non_negative("delay", d)
    a = 0 if attempts is None else attempts
    _non_negative("attempts of a job", a)
    b = _backoff(backoff)
    opts = AddOptions(
        delay_ms=d,
        attempts=a,
        backoff=BACKOFF_INHERIT if b is None else b.kind,
        backoff_ms=0 if b is None else b.delay_ms,
        backoff_max_ms=0 if b is None else b.max_ms,
    )
    return None if opts == AddOptions() else opts


def _at_ms(at: datetime.datetime | float) -> int:
    """Unix milliseconds of a datetime (a naive one is local time) or of Unix seconds."""
    if isinstance(at, datetime.datetime):
        return math.ceil(at.timestamp() * 1000)
    if isinstance(at, int | float) and not isinstance(at, bool) and math.isfinite(at):
        return math.ceil(float(at) * 1000)
    raise ArgumentTypeError("at", "a datetime.datetime or Unix seconds (an int or a float)", at)


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _check_force(force: object) -> None:
    if not isinstance(force, bool):
        raise ArgumentTypeError("force", "a bool", force)


def _rate_period_ms(period_ms: object, period: object) -> int | None:
    """A rate limit's period as whole milliseconds (echomq 2.8.0), given as period_ms (an int of
    milliseconds or a timedelta) or period (seconds or a timedelta); None when neither is given.
    Both given is a TypeError; a value of another type an ArgumentTypeError; a period that is
    not a whole number of milliseconds, or is outside 1 ms..RATE_PERIOD_MAX_MS, an
    ArgumentError."""
    if period_ms is not None and period is not None:
        raise TypeError("emq: give period_ms (milliseconds) or period (seconds), not both")
    what, v = ("period", period) if period is not None else ("period_ms", period_ms)
    if v is None:
        return None
    if isinstance(v, datetime.timedelta):
        us = v // datetime.timedelta(microseconds=1)
        if us % 1000 != 0:
            raise ArgumentError(f"{what} {v!r} is not a whole number of milliseconds")
        ms = us // 1000
    elif what == "period_ms":
        ms = ms_int(what, v)
    elif isinstance(v, int | float) and not isinstance(v, bool):
        f = float(v) * 1000
        if not math.isfinite(f) or abs(f - round(f)) > 1e-6:
            raise ArgumentError(f"{what} {v!r} is not a whole number of milliseconds")
        ms = round(f)
    else:
        raise ArgumentTypeError(what, "seconds (an int or a float) or a datetime.timedelta", v)
    if not 1 <= ms <= RATE_PERIOD_MAX_MS:
        raise ArgumentError(
            f"{what} {v!r} is not a rate limit's period (1 ms to {RATE_PERIOD_MAX_MS} ms)"
        )
    return ms


def _queue_policy(rp: ReadPolicyReply) -> QueuePolicy:
    """The QueuePolicy of a read_policy reply (echomq 2.8.0)."""
    return QueuePolicy(
        paused=rp.paused == 1,
        concurrency=rp.concurrency,
        requires=rp.requires,
        leased=rp.leased,
        rate_limit=rp.rate_limit,
        rate_period_ms=rp.rate_period_ms,
        admit_in_ms=rp.admit_in_ms,
    )


def _jobs(rs: Sequence[Any]) -> list[Job]:
    return [Job(id=r.id, token=r.token, payload=r.payload, deadline_ms=r.deadline_ms) for r in rs]


class Queue:
    """A handle on one queue of a fenced keyspace. Use ``client.queue(name)``.

    echomq 2.7.0: claim_ids (and claim_many), complete_result_claim_ids, fail,
    reap_recorded_ids, extend, cancel_ids, add_dedup, replace_dedup, dedup_entries and
    sweep_dedup (and the calls made of them: push with a DedupKey, cancel_key, the Worker) run
    the 2.7 twins of their scripts, which serve a queue in either layout and honour its policy
    (pause, set_concurrency). The calls of older scripts that lease or settle (claim, complete,
    complete_claim_ids, retry, bury, retry_failed, bury_failed, reap_ids, reap_failed_ids, reap)
    raise a PolicyError on a queue with a policy, which their scripts cannot honour: the server
    refused them before any write. Inspection (size, sizes, head, browse, page, get) reads the
    leased jobs in either layout.

    echomq 2.8.0: claim_ids (and claim_many, the Worker) run claim_rate_ids and
    complete_result_claim_ids runs complete_rate_ids, which honour the queue's rate limit
    (set_rate_limit) too; the policy setters run configure_policy and policy() read_policy."""

    def __init__(self, client: Client, name: str) -> None:
        """A malformed name raises a QueueNameError before anything is sent."""
        self.client = client
        """The client the queue belongs to."""
        self.keys = QueueKeys(name)
        """The queue's keys."""
        self._unplannable: set[tuple[str, str, str]] = set()
        """The schedulers (id, cron, tz) fire_due met with a schedule it cannot evaluate, each
        logged once."""

    @property
    def name(self) -> str:
        """The queue's name."""
        return self.keys.queue

    def __repr__(self) -> str:
        return f"Queue({self.name!r})"

    def _row(self, id: str) -> str:
        """The row key of id: an ArgumentTypeError for an id that is not a str, an IdError for a
        malformed one."""
        if not isinstance(id, str):
            raise ArgumentTypeError("id", "a str (an id from client.mint())", id)
        return self.keys.row(id)

    async def _tripped_now(self) -> bool:
        """Whether the queue's active key holds the tripwire of a policy (echomq 2.7.0: its leased
        jobs are in the running set): one TYPE, not resent (for inside an attempt)."""
        t = await self.client.redis.type(self.keys.active)
        return _text(t) == ACTIVE_TRIPWIRE_TYPE

    async def _tripped(self) -> bool:
        """_tripped_now, resent across a reconnect."""
        return await self.client._resend(self._tripped_now)

    async def _legacy(self, script: str, use: str, call: Callable[[], Awaitable[T]]) -> T:
        """call, a call of a script older than 2.7 that declares the active key; its WRONGTYPE
        refusal raises a PolicyError naming the queue and the 2.7 call to use when the queue's
        active key holds the tripwire of a policy (nothing was written: the script reads every
        key before it writes). Any other WRONGTYPE is raised as it is."""
        try:
            return await call()
        except ResponseError as err:
            if not is_wrongtype(err) or not await self._tripped():
                raise
            raise legacy_policy_error(self.name, script, use) from err

    async def _once_legacy(self, call: _LegacyCall[T], use: str) -> T:
        """call, run once (never resent), as _legacy: a call of a script older than 2.7 that
        cannot honour a policy; use names the call to make instead."""
        r = self.client.redis
        return await self._legacy(
            call.SCRIPT.name, use, lambda: self.client._once(lambda: call.run(r))
        )

    async def _leased(self, key: str, read: Callable[[str], Awaitable[T]]) -> T:
        """read(key), a read of one of the queue's sets; when key is the active set's and the
        queue has a policy (WRONGTYPE on the tripwire, echomq 2.7.0), read(running): the leased
        jobs are there. For inside an attempt: nothing is resent."""
        if key != self.keys.active:
            return await read(key)
        try:
            return await read(key)
        except ResponseError as err:
            if not is_wrongtype(err) or not await self._tripped_now():
                raise
        return await read(self.keys.running)

    def _counted(self, enqueued: bool) -> bool:
        """Counts an admitted job in the client's metrics; returns enqueued."""
        if enqueued:
            self.client.metrics.add(Counter.ENQUEUED, self.name, 1)
        return enqueued

    def _push_job(self, id: str, payload: Payload) -> PushJob:
        """Checks a job for a push: a malformed id raises an IdError, a payload over the cap a
        PayloadTooLargeError, before anything is sent."""
        row = self._row(id)
        self.client._check_payload(payload)
        return PushJob(row=row, id=id, payload=_bytes(payload))

    def _events_max(self, events_max: int | None) -> int:
        """events_max, checked, or the client's when None."""
        if events_max is None:
            return self.client.events_max
        _non_negative("events max", events_max)
        return events_max

    @overload
    async def push(
        self,
        id: str,
        payload: Payload,
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
        payload: Payload,
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
        payload: Payload,
        *,
        delay: Duration | None = None,
        attempts: int | None = None,
        backoff: BackoffPolicy | None = None,
        dedup: DedupKey | None = None,
        events_max: int | None = None,
    ) -> bool | DedupResult:
        """Admits a job like enqueue and rings the queue's doorbell, so that an idle worker starts
        it within milliseconds.

        Options (echomq 2.4.0), like BullMQ's add(name, data, opts): ``delay`` (seconds or a
        timedelta) makes the job claimable that long after now on the server's clock;
        ``attempts`` (how many claims the job gets before it is buried) and ``backoff`` (a
        BackoffPolicy) give the job a retry policy of its own, which its workers apply instead of
        theirs. A push with any of them is an add_many call (coalesced only with pushes of the
        same options); without them it is exactly the push it always was.

        Returns False for a duplicate id (the row is left untouched); an id of another kind than
        the work kind is refused with the wire error of its class (KindError). A malformed id or a
        payload over the cap raises before anything is sent.

        Concurrent pushes to one queue of a client are coalesced: a push that meets no batch of
        its queue in flight is sent at once; pushes arriving while one is in flight wait for it
        and then go together in one push_many call, or go after the client's push_linger_ms, or
        as soon as push_max_batch of them wait. Each caller gets its own answer: True, False for a
        duplicate (a second push of one id inside a batch is one), or its own refusal (a batch
        push_many refuses as a whole is pushed job by job, so only the offending caller sees the
        KindError). A caller cancelled before its batch is sent is left out of it; one cancelled
        after that may or may not have had its job admitted. ``connect(coalesce=False)`` makes
        every push a call of its own.

        A push is idempotent while the job exists, so one that failed in transport is resent on a
        fresh, fenced connection (see Client._resend); should the lost attempt have admitted the
        job, the resend returns False.

        With ``dedup`` (a DedupKey, echomq 2.5.0) the job is admitted under a deduplication key
        and push returns a DedupResult instead of a bool: the outcome (admitted, duplicate of the
        key's holder, replaced: a waiting holder took the payload, parked behind an active
        holder) and the id it concerns. It is one replace_dedup call (not coalesced), sent again
        naming the job to replace when the key's holder changed meanwhile, up to
        REPLACE_ATTEMPTS calls (then DedupContentionError). ``events_max`` bounds the events
        stream for the replaced event a replacement writes (default the client's; 0 writes
        none). A resend after a lost reply may answer duplicate (of the job itself) for a job
        the lost attempt admitted, or replace again with the same payload.
        """
        job = self._push_job(id, payload)
        c = self.client
        opts = None
        if dedup is not None:
            if not isinstance(dedup, DedupKey):
                raise ArgumentTypeError("the dedup option", "an echomq.DedupKey or None", dedup)
            em = self._events_max(events_max)
            return await self._push_dedup(
                job, dedup, add_options(delay, attempts, backoff) or AddOptions(), em
            )
        if delay is not None or attempts is not None or backoff is not None:
            opts = add_options(delay, attempts, backoff)
        if opts is not None:
            return await self._push_with(job, opts)
        if not c.coalesce:
            x = PushCall(
                row=job.row,
                pending=self.keys.pending,
                wake=self.keys.wake,
                id=id,
                payload=job.payload,
            ).exec()

            async def attempt() -> bool:
                return PushCall.decode(await _run(c, x)) == PUSH_ENQUEUED

            return self._counted(await c._resend(attempt))
        p = c._pushers.get(self.name)
        if p is None:
            p = Pusher(self, c.push_linger_ms / 1000, c.push_max_batch)
            c._pushers[self.name] = p
        r = await p.push(job)
        if r.error is not None:
            raise r.error
        return r.enqueued

    async def _push_with(self, job: PushJob, opts: AddOptions) -> bool:
        """push with options: one add_many call of its own, or coalesced with the pushes of the
        same options."""
        c = self.client
        if not c.coalesce:
            x = add_exec(self, [job], opts)

            async def attempt() -> bool:
                (r,) = AddManyCall.decode(await _run(c, x))
                return r.enqueued == PUSH_ENQUEUED

            return self._counted(await c._resend(attempt))
        key = (self.name, opts)
        p = c._pushers.get(key)
        if p is None:
            p = Pusher(self, c.push_linger_ms / 1000, c.push_max_batch, opts)
            c._pushers[key] = p
        r = await p.push(job)
        if r.error is not None:
            raise r.error
        return r.enqueued

    def _replace_exec(
        self,
        job: PushJob,
        key: bytes,
        target: str,
        policy: tuple[Dedup, int, int],
        opts: AddOptions,
        events_max: int,
    ) -> ScriptExec:
        """The replace_dedup call of job under key, expecting to replace target."""
        k = self.keys
        mode, ttl_ms, hold = policy
        return ReplaceDedupPolicyCall(
            pending=k.pending,
            active=k.active,
            running=k.running,
            schedule=k.schedule,
            dead=k.dead,
            results=k.results,
            wake=k.wake,
            options=k.options,
            dedup=k.dedup,
            events=k.events,
            row=job.row,
            target_row=k.row(target),
            mode=mode,
            ttl_ms=ttl_ms,
            hold=hold,
            delay_ms=opts.delay_ms,
            attempts=opts.attempts,
            backoff=opts.backoff,
            backoff_ms=opts.backoff_ms,
            backoff_max_ms=opts.backoff_max_ms,
            events_max=events_max,
            id=job.id,
            payload=job.payload,
            dedup_key=key,
            target=target,
        ).exec()

    def _add_dedup_exec(
        self,
        jobs: Sequence[PushJob],
        keys: Sequence[bytes],
        policy: tuple[Dedup, int, int],
        opts: AddOptions,
    ) -> ScriptExec:
        """The add_dedup call of jobs under keys (b"": none)."""
        k = self.keys
        mode, ttl_ms, hold = policy
        return AddDedupPolicyCall(
            pending=k.pending,
            active=k.active,
            running=k.running,
            schedule=k.schedule,
            dead=k.dead,
            results=k.results,
            wake=k.wake,
            options=k.options,
            dedup=k.dedup,
            rows=[j.row for j in jobs],
            mode=mode,
            ttl_ms=ttl_ms,
            hold=hold,
            delay_ms=opts.delay_ms,
            attempts=opts.attempts,
            backoff=opts.backoff,
            backoff_ms=opts.backoff_ms,
            backoff_max_ms=opts.backoff_max_ms,
            entries=[
                AddDedupPolicyEntry(id=j.id, payload=j.payload, dedup_key=key)
                for j, key in zip(jobs, keys, strict=True)
            ],
        ).exec()

    async def _replace_loop(
        self,
        job: PushJob,
        key: bytes,
        target: str,
        policy: tuple[Dedup, int, int],
        opts: AddOptions,
        events_max: int,
    ) -> DedupResult:
        """replace_dedup calls of job, each naming the job the last one said to replace, until
        one is not deferred (at most REPLACE_ATTEMPTS; then DedupContentionError)."""
        c = self.client
        for _ in range(REPLACE_ATTEMPTS):
            x = self._replace_exec(job, key, target, policy, opts, events_max)

            async def attempt(x: ScriptExec = x) -> DedupResult:
                r = ReplaceDedupPolicyCall.decode(await _run(c, x))
                return DedupResult(outcome=r.outcome, id=r.id, run_at_ms=r.run_at_ms or None)

            res = await c._resend(attempt)
            if res.outcome != ADMISSION_DEFERRED:
                if res.admitted:
                    self.client.metrics.add(Counter.ENQUEUED, self.name, 1)
                return res
            target = res.id
        raise DedupContentionError(job.id, target)

    async def _push_dedup(
        self, job: PushJob, d: DedupKey, opts: AddOptions, events_max: int
    ) -> DedupResult:
        """push with a DedupKey: replace_dedup expecting to replace nothing (its target is the job
        itself), then naming the job each deferred answer names."""
        return await self._replace_loop(job, d.key, job.id, d.policy, opts, events_max)

    async def _push_batch_dedup(
        self, pj: Sequence[PushJob], dedups: Sequence[DedupKey | None], opts: AddOptions
    ) -> list[BatchResult]:
        """push_batch with deduplication keys: the jobs grouped by their keys' policies (mode, ttl,
        hold; jobs without a key join the first group) into add_dedup calls of up to
        push_max_batch jobs, sent in order, and each deferred job sent on with replace_dedup."""
        groups: dict[tuple[Dedup, int, int], list[int]] = {}
        free: list[int] = []
        for i, d in enumerate(dedups):
            if d is None:
                free.append(i)
            else:
                groups.setdefault(d.policy, []).append(i)
        first = next(iter(groups))
        groups[first] = sorted(groups[first] + free)
        out: list[BatchResult] = [BatchResult(enqueued=False) for _ in pj]
        c = self.client
        em = c.events_max
        n = c.push_max_batch
        for policy, idx in groups.items():
            for lo in range(0, len(idx), n):
                part = idx[lo : lo + n]
                keys = [b"" if dedups[i] is None else dedups[i].key for i in part]  # type: ignore[union-attr]
                x = self._add_dedup_exec([pj[i] for i in part], keys, policy, opts)

                async def attempt(x: ScriptExec = x) -> list[Any]:
                    return AddDedupPolicyCall.decode(await _run(c, x))

                try:
                    recs = await c._resend(attempt)
                    if len(recs) != len(part):
                        raise ValueError(
                            f"emq: {AddDedupPolicyCall.SCRIPT.name}: {len(recs)} records for "
                            f"{len(part)} jobs"
                        )
                except Exception as err:
                    for i in part:
                        out[i] = BatchResult(enqueued=False, error=err)
                    continue
                for i, key, r in zip(part, keys, recs, strict=True):
                    res = DedupResult(outcome=r.outcome, id=r.id, run_at_ms=r.run_at_ms or None)
                    if res.outcome == ADMISSION_DEFERRED:
                        try:
                            res = await self._replace_loop(pj[i], key, r.id, policy, opts, em)
                        except Exception as err:
                            out[i] = BatchResult(enqueued=False, error=err)
                            continue
                    elif res.admitted:
                        c.metrics.add(Counter.ENQUEUED, self.name, 1)
                    out[i] = BatchResult(
                        enqueued=res.admitted, dedup=res if dedups[i] is not None else None
                    )
        return out

    @honour_cancel
    async def push_batch(
        self,
        jobs: Sequence[NewJob],
        *,
        delay: Duration | None = None,
        attempts: int | None = None,
        backoff: BackoffPolicy | None = None,
    ) -> list[BatchResult]:
        """Admits many jobs in push_many calls of up to the client's push_max_batch jobs each,
        pipelined in one round trip. With ``delay``, ``attempts`` or ``backoff`` (as for push;
        one policy for every job) the calls are add_many calls.

        Malformed ids and oversized payloads raise before anything is sent. The result tells, per
        job, whether it was enqueued (False: a duplicate, also for a second job of one id in the
        batch) or why it failed; the others still took effect. A chunk push_many refuses as a whole
        (an id of another kind in it) is pushed again job by job, so that only the offending jobs
        carry the KindError. Chunks that failed in transport, and only those, are resent on a
        fresh, fenced connection; a keyspace the fence refuses raises its FenceError.

        Jobs with a ``dedup`` key (NewJob(id, p, dedup=DedupKey(...)), echomq 2.5.0) make the
        batch go as add_dedup calls, one per policy of the keys (mode, ttl, hold), the jobs
        without a key in the first; a job whose key's waiting holder it would replace is sent
        on with replace_dedup. Each result's ``dedup`` tells what its admission did.
        """
        pj: list[PushJob] = []
        for i, j in enumerate(jobs):
            try:
                pj.append(self._push_job(j.id, j.payload))
                if j.dedup is not None and not isinstance(j.dedup, DedupKey):
                    raise ArgumentTypeError(
                        "the dedup option", "an echomq.DedupKey or None", j.dedup
                    )
            except Exception as err:
                err.args = (f"job {i}: {err}",)
                raise
        opts = add_options(delay, attempts, backoff)
        if not pj:
            return []
        dedups = [j.dedup for j in jobs]
        if any(d is not None for d in dedups):
            return await self._push_batch_dedup(pj, dedups, opts or AddOptions())
        return await push_jobs(self, pj, self.client.push_max_batch, opts, self.client._bound())

    @honour_cancel
    async def push_many(self, jobs: Sequence[NewJob]) -> list[bool]:
        """Admits jobs in one push_many call (the script declares every row it writes) and rings
        the doorbell once; returns per job whether it was enqueued (False: a duplicate). An id of
        another kind than the work kind among them refuses the whole call with a KindError, and
        nothing is written. Malformed ids and oversized payloads raise before anything is sent.
        Resent across a reconnect, like push. No jobs send nothing."""
        pj = [self._push_job(j.id, j.payload) for j in jobs]
        if not pj:
            return []
        call = PushManyCall(
            pending=self.keys.pending,
            wake=self.keys.wake,
            rows=[j.row for j in pj],
            entries=[PushManyEntry(id=j.id, payload=j.payload) for j in pj],
        )

        async def attempt() -> list[bool]:
            return [r.enqueued == PUSH_ENQUEUED for r in await call.run(self.client.redis)]

        out = await self.client._resend(attempt)
        self.client.metrics.add(Counter.ENQUEUED, self.name, sum(out))
        return out

    @honour_cancel
    async def enqueue(self, id: str, payload: Payload) -> bool:
        """Admits a job with id and payload, without ringing the doorbell. Returns False when a
        job with this id already exists; an id of another kind than the work kind is refused with
        the wire error of its class. Resent across a reconnect, like push."""
        row = self._row(id)
        self.client._check_payload(payload)
        call = EnqueueCall(row=row, pending=self.keys.pending, id=id, payload=_bytes(payload))

        async def attempt() -> bool:
            return await call.run(self.client.redis) == ENQUEUE_ENQUEUED

        return self._counted(await self.client._resend(attempt))

    @overload
    async def enqueue_at(self, id: str, payload: Payload, run_at_ms: int) -> bool: ...
    @overload
    async def enqueue_at(
        self, id: str, payload: Payload, *, at: datetime.datetime | float
    ) -> bool: ...
    @overload
    async def enqueue_at(self, id: str, payload: Payload, *, delay: Duration) -> bool: ...

    @honour_cancel
    async def enqueue_at(
        self,
        id: str,
        payload: Payload,
        run_at_ms: int | None = None,
        *,
        at: datetime.datetime | float | None = None,
        delay: Duration | None = None,
    ) -> bool:
        """Admits a job that becomes claimable at run_at_ms (server clock, Unix milliseconds),
        once maintenance promotes it. Replies and refusals are enqueue's.

        ``at`` gives the run-at as a datetime.datetime (a naive one is local time) or Unix
        seconds, ``delay`` as a duration from now (seconds or a datetime.timedelta); both are read
        on this machine's clock, and the server's decides when the job is due."""
        if sum(x is not None for x in (run_at_ms, at, delay)) != 1:
            raise TypeError("emq: enqueue_at takes one of run_at_ms, at or delay")
        if at is not None:
            run_at_ms = _at_ms(at)
        elif delay is not None:
            run_at_ms = time.time_ns() // 1_000_000 + pick_ms(
                "delay", None, "delay", delay, allow_zero=True
            )
        assert run_at_ms is not None
        row = self._row(id)
        self.client._check_payload(payload)
        _non_negative("run-at", run_at_ms)
        call = EnqueueAtCall(
            row=row,
            schedule=self.keys.schedule,
            id=id,
            payload=_bytes(payload),
            run_at_ms=run_at_ms,
        )

        async def attempt() -> bool:
            return await call.run(self.client.redis) == ENQUEUE_AT_ENQUEUED

        return self._counted(await self.client._resend(attempt))

    @overload
    async def claim(self, lease_ms: int) -> Job | None: ...
    @overload
    async def claim(self, *, lease: Duration) -> Job | None: ...

    @deprecated("claim_many(lease_ms, 1), or head and claim_ids")
    @honour_cancel
    async def claim(
        self, lease_ms: int | datetime.timedelta | None = None, *, lease: Duration | None = None
    ) -> Job | None:
        """Leases the oldest pending job for lease_ms (or ``lease``: seconds or a timedelta);
        None when nothing is pending. The job's token must be presented to every later transition.
        Never resent. It runs the 2.0 claim script, which reaches the row through the row prefix
        rather than KEYS (its behaviour is frozen: it never rings the doorbell).

        Deprecated: use ``claim_many(lease_ms, 1)``, or ``head`` and ``claim_ids``, which declare
        every key they touch; calling it warns (DeprecationWarning). The 2.0 script stays in the
        wire layer (ClaimCall)."""
        return await self._claim_one(lease_ms, lease)

    async def _claim_one(
        self, lease_ms: int | datetime.timedelta | None, lease: Duration | None
    ) -> Job | None:
        """claim, without its warning (TypedQueue.claim calls it)."""
        lease_ms = pick_ms("lease_ms", lease_ms, "lease", lease)
        _positive("lease", lease_ms)
        call = ClaimCall(
            pending=self.keys.pending,
            active=self.keys.active,
            prefix=self.keys.row_prefix,
            lease_ms=lease_ms,
        )
        r = await self._once_legacy(call, "claim_many (claim_rate_ids)")
        if r is None:
            return None
        return Job(id=r.id, token=r.token, payload=r.payload, deadline_ms=r.deadline_ms)

    @honour_cancel
    async def head(self, s: SetName, n: int) -> list[str]:
        """Reads up to n ids at the head of set s (ZRANGE 0 n-1): for the pending set the oldest
        first, for a scored set the earliest deadline or run-at first. Resent across a
        reconnect."""
        key = self._set_key(s)
        _positive("count", n)

        r = self.client.redis

        async def attempt() -> list[str]:
            got = await self._leased(key, lambda k: r.zrange(k, 0, n - 1))
            return [_text(m) for m in got]

        return await self.client._resend(attempt)

    async def _due(self, key: str, n: int) -> list[str]:
        """The ids among the first n of the scored set at key whose score has come on the server's
        clock (ZRANGE with scores and TIME in one round trip)."""

        async def read(k: str) -> list[Any]:
            async with self.client.redis.pipeline(transaction=False) as pipe:
                pipe.zrange(k, 0, n - 1, withscores=True)
                pipe.time()
                res: list[Any] = await pipe.execute(raise_on_error=False)
            for v in res:
                if isinstance(v, BaseException):
                    raise v  # as the server said it (WRONGTYPE on the tripwire: see _leased)
            return res

        async def attempt() -> list[str]:
            res = await self._leased(key, read)
            sec, usec = res[1]
            now = int(sec) * 1000 + int(usec) // 1000
            return [_text(m) for m, sc in res[0] if float(sc) <= now]

        return await self.client._resend(attempt)

    @honour_cancel
    @overload
    async def claim_many(self, lease_ms: int, count: int) -> list[Job]: ...
    @overload
    async def claim_many(self, *, lease: Duration, count: int) -> list[Job]: ...

    @honour_cancel
    async def claim_many(
        self,
        lease_ms: int | datetime.timedelta | None = None,
        count: int | None = None,
        *,
        lease: Duration | None = None,
    ) -> list[Job]:
        """Leases up to count of the oldest pending jobs for lease_ms (or ``lease``: seconds or a
        timedelta) at once, oldest first; empty when nothing is pending. It rings the doorbell
        again when jobs remain. It reads the head of the pending set (ZRANGE), then claims exactly
        those ids with claim_ids, which declares every key it touches; when another claimer took
        every id read in between, it reads the head again, up to PEEK_ATTEMPTS times. Never
        resent."""
        lease_ms = pick_ms("lease_ms", lease_ms, "lease", lease)
        _positive("lease", lease_ms)
        _positive("count", count)
        assert count is not None
        for n in range(1, PEEK_ATTEMPTS + 1):
            ids = await self.head(SET_PENDING, count)
            if not ids:
                return []
            jobs = await self.claim_ids(lease_ms, ids)
            if jobs or n >= PEEK_ATTEMPTS:
                return jobs
        return []

    @overload
    async def claim_ids(self, lease_ms: int, ids: Sequence[str]) -> list[Job]: ...
    @overload
    async def claim_ids(self, *, lease: Duration, ids: Sequence[str]) -> list[Job]: ...

    @honour_cancel
    async def claim_ids(
        self,
        lease_ms: int | datetime.timedelta | None = None,
        ids: Sequence[str] = (),
        *,
        lease: Duration | None = None,
    ) -> list[Job]:
        """Leases exactly the given ids that are still pending, for lease_ms (or ``lease``), in
        the order given
        (claim_rate_ids, echomq 2.8.0: claim_ids in either layout, leasing nothing while the
        queue is paused, at most its cap less the jobs leased, and under a rate limit only the
        starts the limit admits now, the rest staying pending; it declares every key it
        touches); ids no longer pending are skipped. It
        rings the doorbell again when jobs remain. Malformed ids raise an IdError before anything
        is sent; no ids send nothing. Never resent: a lease may have been granted."""
        lease_ms = pick_ms("lease_ms", lease_ms, "lease", lease)
        _positive("lease", lease_ms)
        rows = [self._row(i) for i in _ids(ids)]
        if not rows:
            return []
        call = ClaimRateIdsCall(
            pending=self.keys.pending,
            active=self.keys.active,
            running=self.keys.running,
            policy=self.keys.policy,
            starts=self.keys.starts,
            wake=self.keys.wake,
            rows=rows,
            lease_ms=lease_ms,
            ids=list(ids),
        )
        return _jobs(await self.client._once(lambda: call.run(self.client.redis)))

    @overload
    async def complete_claim(self, id: str, token: int, lease_ms: int, count: int) -> list[Job]: ...
    @overload
    async def complete_claim(
        self, id: str, token: int, *, lease: Duration, count: int
    ) -> list[Job]: ...

    @deprecated("complete_claim_ids with the ids to lease next (those of head), or complete")
    @honour_cancel
    async def complete_claim(
        self,
        id: str,
        token: int,
        lease_ms: int | datetime.timedelta | None = None,
        count: int | None = None,
        *,
        lease: Duration | None = None,
    ) -> list[Job]:
        """Retires an active job like complete, then leases up to count (0 or more) of the oldest
        pending jobs for lease_ms, in one call. A stale token is refused with the wire error of its
        class, and nothing is leased. It reads the head of the pending set first and calls
        complete_claim_ids with those ids; when another claimer took all of them in between, it
        claims with claim_many.

        Deprecated: use ``complete_claim_ids`` with the ids to lease next (those of
        ``head(SET_PENDING, n)``, or a worker's pool), or ``complete`` when nothing more is to be
        leased; calling it warns (DeprecationWarning)."""
        self._row(id)
        _int("token", token)
        lease_ms = pick_ms("lease_ms", lease_ms, "lease", lease)
        _positive("lease", lease_ms)
        _non_negative("count", count)
        assert count is not None
        ids = await self.head(SET_PENDING, count) if count > 0 else []
        jobs = await self.complete_claim_ids(id, token, lease_ms, ids)
        if not jobs and ids:
            return await self.claim_many(lease_ms, count)
        return jobs

    @overload
    async def complete_claim_ids(
        self, id: str, token: int, lease_ms: int, ids: Sequence[str]
    ) -> list[Job]: ...
    @overload
    async def complete_claim_ids(
        self, id: str, token: int, *, lease: Duration, ids: Sequence[str]
    ) -> list[Job]: ...

    @honour_cancel
    async def complete_claim_ids(
        self,
        id: str,
        token: int,
        lease_ms: int | datetime.timedelta | None = None,
        ids: Sequence[str] = (),
        *,
        lease: Duration | None = None,
    ) -> list[Job]:
        """Retires an active job like complete, then leases exactly the given ids that are still
        pending, for lease_ms, in the order given (complete_claim_ids, which declares every key it
        touches). A stale token is refused with a StaleError, and nothing is leased. Malformed ids
        raise an IdError before anything is sent. Never resent."""
        row = self._row(id)
        _int("token", token)
        lease_ms = pick_ms("lease_ms", lease_ms, "lease", lease)
        _positive("lease", lease_ms)
        call = CompleteClaimIdsCall(
            row=row,
            active=self.keys.active,
            pending=self.keys.pending,
            wake=self.keys.wake,
            rows=[self._row(i) for i in _ids(ids)],
            id=id,
            token=token,
            lease_ms=lease_ms,
            ids=list(ids),
        )
        return _jobs(await self._once_legacy(call, "complete_result_claim_ids (complete_rate_ids)"))

    @overload
    async def extend(self, id: str, token: int, lease_ms: int) -> int: ...
    @overload
    async def extend(self, id: str, token: int, *, lease: Duration) -> int: ...

    @honour_cancel
    async def extend(
        self,
        id: str,
        token: int,
        lease_ms: int | datetime.timedelta | None = None,
        *,
        lease: Duration | None = None,
    ) -> int:
        """Pushes the lease of an active job to now + lease_ms (or ``lease``: seconds or a
        timedelta) and returns the new deadline; a token that is not the row's, or a job no longer
        active, is refused with the wire error of its class."""
        row = self._row(id)
        _int("token", token)
        lease_ms = pick_ms("lease_ms", lease_ms, "lease", lease)
        _positive("lease", lease_ms)
        call = ExtendPolicyCall(
            active=self.keys.active,
            running=self.keys.running,
            row=row,
            id=id,
            token=token,
            lease_ms=lease_ms,
        )
        return await self.client._once(lambda: call.run(self.client.redis))

    @honour_cancel
    async def complete(self, id: str, token: int) -> None:
        """Retires an active job: its row is deleted. A stale token is refused with the wire error
        of its class, and the lease holder's work survives."""
        row = self._row(id)
        _int("token", token)
        call = CompleteCall(active=self.keys.active, row=row, id=id, token=token)
        await self._once_legacy(call, "complete_result_claim_ids (complete_rate_ids)")

    @overload
    async def retry(self, id: str, token: int, delay_ms: int) -> int: ...
    @overload
    async def retry(self, id: str, token: int, *, delay: Duration) -> int: ...

    @honour_cancel
    async def retry(
        self,
        id: str,
        token: int,
        delay_ms: int | datetime.timedelta | None = None,
        *,
        delay: Duration | None = None,
    ) -> int:
        """Hands an active job back to run again after delay_ms (or ``delay``: seconds or a
        timedelta; it is scheduled, and promote makes it pending) and returns its run-at, on a queue
        with a policy too (retry_policy, echomq 2.7.0). A stale token is refused with the wire error
        of its class."""
        row = self._row(id)
        _int("token", token)
        delay_ms = pick_ms("delay_ms", delay_ms, "delay", delay, allow_zero=True)
        _non_negative("delay", delay_ms)
        k = self.keys
        call = RetryPolicyCall(
            active=k.active,
            running=k.running,
            policy=k.policy,
            pending=k.pending,
            wake=k.wake,
            row=row,
            schedule=k.schedule,
            id=id,
            token=token,
            delay_ms=delay_ms,
        )
        return await self.client._once(lambda: call.run(self.client.redis))

    @honour_cancel
    async def bury(self, id: str, token: int) -> None:
        """Moves an active job to the dead set, on a queue with a policy too (bury_policy, echomq
        2.7.0); a stale token is refused with the wire error of its class."""
        row = self._row(id)
        _int("token", token)
        k = self.keys
        call = BuryPolicyCall(
            active=k.active,
            running=k.running,
            policy=k.policy,
            pending=k.pending,
            wake=k.wake,
            row=row,
            dead=k.dead,
            id=id,
            token=token,
        )
        await self.client._once(lambda: call.run(self.client.redis))

    @honour_cancel
    async def retry_failed(
        self,
        id: str,
        token: int,
        failure: Failure,
        *,
        delay: Duration = 0,
        delay_ms: int | None = None,
    ) -> int:
        """Hands an active job back to run again after ``delay`` (seconds or a timedelta; or
        ``delay_ms``), as retry does, and records the failed attempt in the job's failure record
        (its token, the server's time and failure) in the same atomic call (echomq 2.3.0).
        Returns the run-at (server clock, Unix ms).

        A stale token is refused with a StaleError and nothing is recorded; a negative delay or a
        class outside the failure_class vocabulary raises an ArgumentError before anything is
        sent. Never resent."""
        row = self._row(id)
        _int("token", token)
        if delay_ms is not None and delay != 0:
            raise TypeError("emq: give delay_ms (milliseconds) or delay (seconds), not both")
        if delay_ms is not None:
            ms = pick_ms("delay_ms", delay_ms, "delay", None, allow_zero=True)
        else:
            ms = pick_ms("delay_ms", None, "delay", delay, allow_zero=True)
        _non_negative("delay", ms)
        f = check_failure(failure)
        call = RetryFailedCall(
            active=self.keys.active,
            row=row,
            schedule=self.keys.schedule,
            failures=self.keys.failures,
            id=id,
            token=token,
            delay_ms=ms,
            class_=f.failure_class,
            worker=f.worker or "",
            error=f.message,
        )
        return await self._once_legacy(call, "fail (fail_policy)")

    @honour_cancel
    async def bury_failed(self, id: str, token: int, failure: Failure) -> None:
        """Moves an active job to the dead set, as bury does, and records its last failed attempt
        in the job's failure record in the same atomic call: the job is dead since then
        (JobInfo.died_at_ms). A stale token is refused with a StaleError and nothing is recorded;
        a class outside the vocabulary raises an ArgumentError before anything is sent."""
        row = self._row(id)
        _int("token", token)
        f = check_failure(failure)
        call = BuryFailedCall(
            active=self.keys.active,
            row=row,
            dead=self.keys.dead,
            failures=self.keys.failures,
            id=id,
            token=token,
            class_=f.failure_class,
            worker=f.worker or "",
            error=f.message,
        )
        await self._once_legacy(call, "fail with bury=True (fail_policy)")

    @honour_cancel
    async def failures(self, id: str) -> list[FailedAttempt]:
        """Reads a job's recorded failed attempts, oldest first (at most the last 10). Empty when
        none was recorded (a 2.2 client records nothing), when the record is not one the scripts
        wrote, and when the job's row is gone: a record its row left behind is never read. get
        returns the same history with the row. Resent across a reconnect, like every read."""
        row = self._row(id)
        call = FailuresCall(row=row, failures=self.keys.failures, id=id)

        async def attempt() -> list[FailedAttempt]:
            return decode_failures(await run_script(self.client.redis, call.exec()))

        return await self.client._resend(attempt)

    @honour_cancel
    async def forget_failures(self, ids: Sequence[str]) -> int:
        """Deletes the failure records of those of ids whose rows are gone (a job completed or
        purged by a client that leaves its record behind) and returns how many it deleted; a job
        whose row exists keeps its record. Malformed ids raise an IdError before anything is sent;
        no ids send nothing. Resent across a reconnect (deleting what is gone is idempotent)."""
        ids = _ids(ids)
        rows = [self._row(i) for i in ids]
        if not rows:
            return 0
        call = ForgetFailuresCall(failures=self.keys.failures, rows=rows, ids=ids)
        return await self.client._resend(lambda: call.run(self.client.redis))

    @honour_cancel
    async def reap_failed_ids(self, ids: Sequence[str], max_attempts: int = 0) -> int:
        """Takes back those of ids whose lease expired, as reap_ids does, and records each as a
        lost lease (class lease_lost, no worker) in its failure record. Returns how many moved. A
        negative max_attempts raises an ArgumentError and malformed ids an IdError before anything
        is sent; no ids send nothing."""
        _non_negative("max attempts", max_attempts)
        ids = _ids(ids)
        rows = [self._row(i) for i in ids]
        if not rows:
            return 0
        call = ReapFailedIdsCall(
            active=self.keys.active,
            pending=self.keys.pending,
            dead=self.keys.dead,
            wake=self.keys.wake,
            failures=self.keys.failures,
            rows=rows,
            max_attempts=max_attempts,
            ids=ids,
        )
        return await self._once_legacy(call, "reap_recorded_ids (reap_policy_ids)")

    # ------------------------------------------------------------ echomq 2.4.0

    @honour_cancel
    async def add_many(
        self,
        jobs: Sequence[NewJob],
        *,
        delay: Duration | None = None,
        delay_ms: int | None = None,
        attempts: int = 0,
        backoff: BackoffPolicy | None = None,
    ) -> list[AddResult]:
        """Admits jobs in one add_many call (echomq 2.4.0) and rings the doorbell once when it
        leaves claimable jobs or schedules the earliest one; returns per job whether it was
        enqueued (False: a duplicate, also for a second job of one id) and, for a delayed job,
        its run-at. ``delay`` (seconds or a timedelta; or ``delay_ms``) schedules the jobs that
        long after now on the server's clock; ``attempts`` (0: the worker's) and ``backoff``
        (None: the worker's) give every job of the call a retry policy of its own, kept until
        the job completes.

        An id of another kind than the work kind refuses the whole call with a KindError, and
        nothing is written; malformed ids, oversized payloads, a negative delay or attempts and a
        backoff that is not a BackoffPolicy raise before anything is sent. Resent across a
        reconnect, like push_many. No jobs send nothing."""
        opts = add_options(delay, attempts, backoff, delay_ms=delay_ms) or AddOptions()
        pj = [self._push_job(j.id, j.payload) for j in jobs]
        if not pj:
            return []
        x = add_exec(self, pj, opts)

        async def attempt() -> list[AddResult]:
            return [
                AddResult(enqueued=r.enqueued == PUSH_ENQUEUED, run_at_ms=r.run_at_ms or None)
                for r in AddManyCall.decode(await _run(self.client, x))
            ]

        out = await self.client._resend(attempt)
        self.client.metrics.add(Counter.ENQUEUED, self.name, sum(r.enqueued for r in out))
        return out

    @overload
    async def complete_result_claim_ids(
        self,
        id: str,
        token: int,
        lease_ms: int,
        ids: Sequence[str],
        *,
        result: object = ...,
        keep: Retention | None = ...,
        events_max: int | None = ...,
    ) -> list[Job]: ...
    @overload
    async def complete_result_claim_ids(
        self,
        id: str,
        token: int,
        *,
        lease: Duration,
        ids: Sequence[str],
        result: object = ...,
        keep: Retention | None = ...,
        events_max: int | None = ...,
    ) -> list[Job]: ...

    @honour_cancel
    async def complete_result_claim_ids(
        self,
        id: str,
        token: int,
        lease_ms: int | datetime.timedelta | None = None,
        ids: Sequence[str] = (),
        *,
        lease: Duration | None = None,
        result: object = None,
        keep: Retention | None = None,
        events_max: int | None = None,
    ) -> list[Job]:
        """Retires an active job like complete_claim_ids and leases the given pending ids in the
        same call (echomq 2.4.0), deleting the job's failure record, progress and retry policy,
        emitting a completed event (unless ``events_max``, default the client's, is 0) and
        counting the completion (Queue.counters).

        ``result`` is the handler's result (bytes, a str as UTF-8, None as none, other values as
        JSON; at most RESULT_MAX_BYTES): it is kept with the completion's time and attempt only
        when ``keep`` (a Retention; default None: keep none) says so: the queue then keeps at
        most keep.count records, none older than keep.age_ms; Queue.output and Queue.lookup read
        it once the row is gone. A stale token is refused with a StaleError, and nothing is kept
        or leased. The ids are leased as claim_ids leases them (complete_rate_ids, echomq 2.8.0:
        in either layout, as the queue's policy and rate limit allow). Never resent."""
        row = self._row(id)
        _int("token", token)
        lease_ms = pick_ms("lease_ms", lease_ms, "lease", lease)
        _positive("lease", lease_ms)
        if keep is None:
            keep = Retention()
        elif not isinstance(keep, Retention):
            raise ArgumentTypeError("keep", "an echomq.Retention or None", keep)
        em = self._events_max(events_max)
        res = encode_value(result, "result")
        if len(res) > RESULT_MAX_BYTES:
            raise ArgumentError(f"the result's {len(res)} bytes are over {RESULT_MAX_BYTES}")
        k = self.keys
        call = CompleteRateIdsCall(
            row=row,
            active=k.active,
            running=k.running,
            policy=k.policy,
            starts=k.starts,
            pending=k.pending,
            wake=k.wake,
            results=k.results,
            result_times=k.result_times,
            progress=k.progress,
            failures=k.failures,
            options=k.options,
            events=k.events,
            counters=k.counters,
            rows=[self._row(i) for i in _ids(ids)],
            id=id,
            token=token,
            lease_ms=lease_ms,
            result=res,
            keep=keep.count,
            keep_age_ms=keep.age_ms,
            events_max=em,
            ids=list(ids),
        )
        return _jobs(await self.client._once(lambda: call.run(self.client.redis)))

    @honour_cancel
    async def fail(
        self,
        id: str,
        token: int,
        failure: Failure,
        *,
        max_attempts: int = 0,
        backoff: BackoffPolicy | None = None,
        jitter: int | None = None,
        bury: bool = False,
        events_max: int | None = None,
    ) -> FailOutcome:
        """Settles a failed attempt of an active job (echomq 2.4.0) by the job's own retry policy
        when it has one (given to its push), else by ``max_attempts`` (0: never buried by count)
        and ``backoff`` (default: fixed, no delay): the job is scheduled to run again, or buried
        once its attempts reach the limit, or at once with ``bury`` (the failure is final). The
        attempt is recorded in the job's failure record as retry_failed records it; failed and
        then retried or dead events are emitted (unless events_max is 0) and counted.

        ``jitter`` (0..1000; None draws one uniformly at random) shortens an exponential delay d
        to d - floor(d/2 * jitter/1000). Returns the outcome and the run-at of a retried job. A
        stale token is refused with a StaleError and nothing is recorded; a class outside the
        vocabulary, a jitter outside 0..1000 or a negative number raise an ArgumentError before
        anything is sent. Never resent."""
        row = self._row(id)
        _int("token", token)
        f = check_failure(failure)
        _non_negative("max attempts", max_attempts)
        b = _backoff(backoff) or BackoffPolicy(BACKOFF_FIXED)
        if jitter is None:
            jitter = secrets.randbelow(JITTER_MAX + 1)
        _non_negative("jitter", jitter)
        if jitter > JITTER_MAX:
            raise ArgumentError(f"jitter {jitter!r} is over {JITTER_MAX}")
        k = self.keys
        call = FailPolicyCall(
            active=k.active,
            running=k.running,
            policy=k.policy,
            pending=k.pending,
            row=row,
            schedule=k.schedule,
            dead=k.dead,
            wake=k.wake,
            failures=k.failures,
            options=k.options,
            events=k.events,
            counters=k.counters,
            id=id,
            token=token,
            class_=f.failure_class,
            worker=f.worker or "",
            error=f.message,
            max_attempts=max_attempts,
            backoff=b.kind,
            backoff_ms=b.delay_ms,
            backoff_max_ms=b.max_ms,
            jitter=jitter,
            bury=1 if bury else 0,
            events_max=self._events_max(events_max),
        )
        r = await self.client._once(lambda: call.run(self.client.redis))
        if r.outcome == EVENT_DEAD:
            return FailOutcome(outcome=r.outcome, run_at_ms=None)
        return FailOutcome(outcome=r.outcome, run_at_ms=r.run_at_ms)

    @honour_cancel
    async def reap_recorded_ids(
        self, ids: Sequence[str], max_attempts: int = 0, *, events_max: int | None = None
    ) -> int:
        """Takes back those of ids whose lease expired (echomq 2.4.0), as reap_failed_ids does
        (each recorded as a lost lease), burying a job once its attempts reach its own limit
        (given to its push), else max_attempts (0: never by count); failed and retried or dead
        events are emitted (unless events_max is 0) and counted. Returns how many moved. No ids
        send nothing."""
        _non_negative("max attempts", max_attempts)
        em = self._events_max(events_max)
        ids = _ids(ids)
        rows = [self._row(i) for i in ids]
        if not rows:
            return 0
        k = self.keys
        call = ReapPolicyIdsCall(
            active=k.active,
            running=k.running,
            policy=k.policy,
            pending=k.pending,
            dead=k.dead,
            wake=k.wake,
            failures=k.failures,
            options=k.options,
            events=k.events,
            counters=k.counters,
            rows=rows,
            max_attempts=max_attempts,
            events_max=em,
            ids=ids,
        )
        return await self.client._once(lambda: call.run(self.client.redis))

    @honour_cancel
    async def report_progress(
        self, id: str, token: int, progress: object, *, events_max: int | None = None
    ) -> None:
        """Reports an active job's progress for the holder of its lease (echomq 2.4.0): the
        report (bytes, a str as UTF-8, other values as JSON; at most PROGRESS_MAX_BYTES) replaces
        its last, is read by get and output while the job exists, and is emitted as a progress
        event (unless events_max is 0). Inside a handler, ``await job.report_progress(x)`` calls
        it. A token that is not the lease holder's is refused with a StaleError, and nothing is
        written. Never resent."""
        row = self._row(id)
        _int("token", token)
        p = encode_value(progress, "progress report")
        if len(p) > PROGRESS_MAX_BYTES:
            raise ArgumentError(
                f"the progress report's {len(p)} bytes are over {PROGRESS_MAX_BYTES}"
            )
        k = self.keys
        call = ProgressCall(
            row=row,
            progress_key=k.progress,
            events=k.events,
            id=id,
            token=token,
            progress=p,
            events_max=self._events_max(events_max),
        )
        await self.client._once(lambda: call.run(self.client.redis))

    @honour_cancel
    async def output(self, id: str) -> JobOutput:
        """Reads what a job said of itself (echomq 2.4.0), in one read-only call: its last
        progress while its row exists; once the row is gone, its completion record when the
        completing worker kept one. Resent across a reconnect."""
        row = self._row(id)
        k = self.keys
        x = OutputCall(row=row, results=k.results, progress=k.progress, id=id).exec()

        async def attempt() -> JobOutput:
            return _output(OutputCall.decode(await _run_ro(self.client, x)))

        return await self.client._resend(attempt)

    @honour_cancel
    async def counters(self, minutes: int = 0) -> Counters:
        """Reads the queue's settle counters (echomq 2.4.0), in one read-only call: the totals,
        and one record for each of the last ``minutes`` minutes (0..COUNTERS_MINUTES_MAX), the
        current minute first. Counted by the 2.4 settle calls (a 2.3 client counts nothing).
        Resent across a reconnect."""
        _non_negative("minutes", minutes)
        if minutes > COUNTERS_MINUTES_MAX:
            raise ArgumentError(f"minutes {minutes!r} is over {COUNTERS_MINUTES_MAX}")
        x = CountersCall(counters=self.keys.counters, minutes=minutes).exec()

        async def attempt() -> Counters:
            rs = CountersCall.decode(await _run_ro(self.client, x))
            if not rs:
                raise ValueError(f"emq: counters of {self.name}: the reply has no totals")
            t = rs[0]
            return Counters(
                totals=SettleCounts(t.completed, t.failed, t.retried, t.dead),
                minutes=tuple(
                    MinuteCounts(r.completed, r.failed, r.retried, r.dead, r.minute_ms)
                    for r in rs[1:]
                ),
            )

        return await self.client._resend(attempt)

    @honour_cancel
    async def read_events(self, after: str = "", count: int = 100) -> list[QueueEvent]:
        """Reads a page of the queue's events (echomq 2.4.0), oldest first: up to count
        (1..1000) after the stream id ``after`` ("" from the oldest kept), in one read-only
        call. A count out of range or an ``after`` that is not a stream id raise an
        ArgumentError before anything is sent. Resent across a reconnect. Queue.events listens
        for them."""
        _check_after(after)
        _positive("count", count)
        if count > EVENTS_PAGE_MAX:
            raise ArgumentError(f"count {count!r} is over {EVENTS_PAGE_MAX}")
        x = EventsCall(events=self.keys.events, after=after, count=count).exec()

        async def attempt() -> list[QueueEvent]:
            return [_event(r) for r in EventsCall.decode(await _run_ro(self.client, x))]

        return await self.client._resend(attempt)

    async def events(
        self, after: str = "", *, count: int = 100, wait: Duration = 1.0
    ) -> AsyncGenerator[QueueEvent, None]:
        """Listens to the queue's events (echomq 2.4.0): ``async for ev in queue.events(after=
        last)`` yields every event after the stream id ``after`` ("" from the oldest kept),
        oldest first, then each new one as it is written, resuming after the last it yielded:
        keep ``ev.stream_id`` to resume there later. It reads pages of up to count with
        read_events; when a page is empty it waits on the stream (XREAD BLOCK, for up to
        ``wait`` at a time, default 1 s: keep it under the client's socket_timeout, on a
        connection of its own) and reads again. Stop it by leaving the loop (``async with
        contextlib.aclosing(queue.events()) as evs`` closes it at once), or by cancelling the
        task that runs it. A failed read raises; a failed wait is logged and the page read
        again."""
        _check_after(after)
        _positive("count", count)
        if count > EVENTS_PAGE_MAX:
            raise ArgumentError(f"count {count!r} is over {EVENTS_PAGE_MAX}")
        block_ms = duration_ms("wait", wait)
        key = self.keys.events
        bell: Any = None
        try:
            while True:
                page = await self.read_events(after, count)
                for ev in page:
                    after = ev.stream_id
                    yield ev
                if len(page) >= count:
                    continue
                if bell is None:
                    bell = self.client.redis.client()
                try:
                    got = await honoured(bell.xread({key: after or "0-0"}, count=1, block=block_ms))
                except asyncio.CancelledError:
                    raise
                except Exception as err:
                    log.debug("emq: waiting on the events of %s failed: %s", self.name, err)
                    await asyncio.sleep(min(block_ms / 1000, 0.1))
                    continue
                # The wait's content is not read, but its id is: the next page is read after
                # it when the page is empty again (an entry the events script skips is passed).
                nxt = _stream_id(got)
                if nxt and not await self.read_events(after, 1):
                    after = _later_id(after, nxt)
        finally:
            if bell is not None:
                try:
                    await bell.aclose()
                except Exception as err:
                    log.debug("emq: closing the events connection failed: %s", err)

    # ------------------------------------------------------------ echomq 2.5.0

    @staticmethod
    def _dedup_policy(
        mode: Dedup, ttl: Duration | None, ttl_ms: int | None, hold_dead: bool, hold_result: bool
    ) -> tuple[Dedup, int, int]:
        """mode, ttl and hold flags, checked, as one call's policy (mode, ttl_ms, hold bits)."""
        m = dedup_mode(mode)
        t = dedup_ttl_ms(m, pick_ms("ttl_ms", ttl_ms, "ttl", ttl, 0, allow_zero=True))
        return (m, t, hold_bits(hold_dead, hold_result))

    @honour_cancel
    async def add_dedup(
        self,
        jobs: Sequence[NewJob],
        keys: Sequence[str | bytes],
        mode: Dedup,
        *,
        ttl: Duration | None = None,
        ttl_ms: int | None = None,
        hold_dead: bool = False,
        hold_result: bool = False,
        delay: Duration | None = None,
        delay_ms: int | None = None,
        attempts: int = 0,
        backoff: BackoffPolicy | None = None,
    ) -> list[DedupResult]:
        """Admits jobs in one add_dedup call (echomq 2.5.0), each under its key of keys (the same
        length; "" admits the job as add_many does), all under one mode, ttl and hold; the rest as
        add_many. Returns per job what the admission did; ADMISSION_DEFERRED names the job it
        would replace, which this call cannot (send it with replace_dedup; push and push_batch
        do it themselves). An id of another kind than the work kind refuses the whole call with a
        KindError; a mode outside the dedup vocabulary, a throttle without a ttl and negative
        numbers raise an ArgumentError before anything is sent. Resent across a reconnect. No
        jobs send nothing."""
        policy = self._dedup_policy(mode, ttl, ttl_ms, hold_dead, hold_result)
        opts = add_options(delay, attempts, backoff, delay_ms=delay_ms) or AddOptions()
        if isinstance(keys, str | bytes) or len(keys) != len(jobs):
            raise ArgumentError("add_dedup takes one key per job")
        pj = [self._push_job(j.id, j.payload) for j in jobs]
        kb = [dedup_key_bytes(k, allow_empty=True) for k in keys]
        if not pj:
            return []
        x = self._add_dedup_exec(pj, kb, policy, opts)
        c = self.client

        async def attempt() -> list[DedupResult]:
            return [
                DedupResult(outcome=r.outcome, id=r.id, run_at_ms=r.run_at_ms or None)
                for r in AddDedupPolicyCall.decode(await _run(c, x))
            ]

        out = await c._resend(attempt)
        c.metrics.add(Counter.ENQUEUED, self.name, sum(r.admitted for r in out))
        return out

    @honour_cancel
    async def replace_dedup(
        self,
        id: str,
        payload: Payload,
        key: str | bytes,
        target: str,
        mode: Dedup,
        *,
        ttl: Duration | None = None,
        ttl_ms: int | None = None,
        hold_dead: bool = False,
        hold_result: bool = False,
        delay: Duration | None = None,
        delay_ms: int | None = None,
        attempts: int = 0,
        backoff: BackoffPolicy | None = None,
        events_max: int | None = None,
    ) -> DedupResult:
        """Admits one job under key with one replace_dedup call (echomq 2.5.0), declaring target,
        the job it expects to replace (an ADMISSION_DEFERRED answer's id; the job's own id when it
        expects none). Answers as add_dedup, plus ADMISSION_REPLACED (target took the payload,
        and a replaced event is written when events_max, default the client's, is above 0) and
        ADMISSION_DEFERRED when the job to replace is not target (its id is then the one). An
        empty key raises an ArgumentError before anything is sent. One call, resent across a
        reconnect: push(dedup=...) is the loop over it."""
        policy = self._dedup_policy(mode, ttl, ttl_ms, hold_dead, hold_result)
        opts = add_options(delay, attempts, backoff, delay_ms=delay_ms) or AddOptions()
        em = self._events_max(events_max)
        job = self._push_job(id, payload)
        self._row(target)
        x = self._replace_exec(job, dedup_key_bytes(key), target, policy, opts, em)
        c = self.client

        async def attempt() -> DedupResult:
            r = ReplaceDedupPolicyCall.decode(await _run(c, x))
            return DedupResult(outcome=r.outcome, id=r.id, run_at_ms=r.run_at_ms or None)

        res = await c._resend(attempt)
        if res.admitted:
            c.metrics.add(Counter.ENQUEUED, self.name, 1)
        return res

    @honour_cancel
    async def dedup_entries(self, keys: Sequence[str | bytes]) -> list[DedupEntry]:
        """Reads the entries of the given deduplication keys (echomq 2.5.0), judged as an
        admission would judge them now, in one read-only call: per key its holder, mode, expiry,
        whether it is held, the holder's state and the job parked behind it. A key without an
        entry reads holder "" and held False. No keys send nothing."""
        if isinstance(keys, str | bytes):
            raise ArgumentTypeError("keys", "a sequence of keys (str or bytes)", keys)
        kb = [dedup_key_bytes(k, allow_empty=True) for k in keys]
        if not kb:
            return []
        k = self.keys
        x = DedupPolicyEntriesCall(
            pending=k.pending,
            active=k.active,
            running=k.running,
            schedule=k.schedule,
            dead=k.dead,
            results=k.results,
            wake=k.wake,
            dedup=k.dedup,
            dedup_keys=kb,
        ).exec()

        async def attempt() -> list[DedupEntry]:
            return [
                DedupEntry(
                    holder=r.holder,
                    mode=r.mode,
                    expires_ms=r.expires_ms,
                    held=r.held == 1,
                    state=r.state,
                    parked=r.parked,
                )
                for r in DedupPolicyEntriesCall.decode(await _run_ro(self.client, x))
            ]

        return await self.client._resend(attempt)

    @honour_cancel
    async def sweep_dedup(self, cursor: str = "0", count: int = 100) -> DedupSweep:
        """Walks one page of the queue's deduplication entries (echomq 2.5.0) from cursor ("0" to
        start): each parked job whose holder is done becomes due and its key's holder, and the
        entries that hold their keys no longer are deleted. Returns the next cursor ("0" when
        the walk is done) and the counts. count is the page's size hint, 1 to 1000 (an
        ArgumentError outside). Workers sweep every maintenance tick."""
        _positive("count", count)
        if count > 1000:
            raise ArgumentError(f"count {count!r} is over 1000")
        if not isinstance(cursor, str) or not cursor.isdigit():
            raise ArgumentError(f"cursor {cursor!r} is not a sweep cursor")
        k = self.keys
        call = SweepDedupPolicyCall(
            pending=k.pending,
            active=k.active,
            running=k.running,
            schedule=k.schedule,
            dead=k.dead,
            results=k.results,
            wake=k.wake,
            dedup=k.dedup,
            cursor=cursor,
            count=count,
        )

        async def attempt() -> DedupSweep:
            r = await call.run(self.client.redis)
            return DedupSweep(cursor=r.cursor, dropped=r.dropped, released=r.released)

        return await self.client._resend(attempt)

    @honour_cancel
    async def cancel_ids(
        self, ids: Sequence[str], *, events_max: int | None = None
    ) -> list[State | None]:
        """Cancels the given jobs that are pending, scheduled or active in one cancel_ids call
        (echomq 2.5.0): their rows, failure records, progress and retry policies are deleted, a
        cancelled event is written for each (unless events_max, default the client's, is 0), and
        the worker holding an active one is told on the queue's cancel channel, so that it
        cancels its handler at once (a worker that missed it learns at its next extend or
        settle). Returns per id the state it was cancelled from, or None when it was in none of
        them (dead, gone, or given twice) and was left as it is. Resent across a reconnect (a
        job the lost attempt cancelled then reads None). No ids send nothing."""
        ids = _ids(ids)
        rows = [self._row(i) for i in ids]
        em = self._events_max(events_max)
        if not rows:
            return []
        k = self.keys
        call = CancelPolicyIdsCall(
            pending=k.pending,
            schedule=k.schedule,
            active=k.active,
            running=k.running,
            policy=k.policy,
            wake=k.wake,
            failures=k.failures,
            progress=k.progress,
            options=k.options,
            events=k.events,
            cancel=k.cancel,
            rows=rows,
            events_max=em,
            ids=ids,
        )

        async def attempt() -> list[State | None]:
            out: list[State | None] = []
            for r in await call.run(self.client.redis):
                out.append(r.state if is_state(r.state) else None)
            return out

        return await self.client._resend(attempt)

    @honour_cancel
    async def cancel_key(
        self, key: str | bytes, *, events_max: int | None = None
    ) -> list[Cancelled]:
        """Cancels the jobs of a deduplication key (echomq 2.5.0): its holder and the job parked
        behind it, read with dedup_entries and cancelled in one cancel_ids call. Returns the jobs
        actually cancelled, holder first, with the state each was cancelled from; [] when the
        key has no live holder."""
        (e,) = await self.dedup_entries([dedup_key_bytes(key)])
        ids = [i for i in (e.holder, e.parked) if i]
        if not ids:
            return []
        states = await self.cancel_ids(ids, events_max=events_max)
        return [Cancelled(id=i, state=s) for i, s in zip(ids, states, strict=True) if s]

    @honour_cancel
    async def forget_ids(self, ids: Sequence[str]) -> int:
        """Deletes the failure records, progress reports and retry policies of those of ids whose
        rows are gone (echomq 2.4.0: what a 2.3 client's completion or a purge leaves behind) and
        returns how many it deleted; a job whose row exists keeps them. No ids send nothing.
        Resent across a reconnect. Workers sweep with it."""
        ids = _ids(ids)
        rows = [self._row(i) for i in ids]
        if not rows:
            return 0
        k = self.keys
        call = ForgetIdsCall(
            failures=k.failures, progress=k.progress, options=k.options, rows=rows, ids=ids
        )
        return await self.client._resend(lambda: call.run(self.client.redis))

    # ------------------------------------------------------------ echomq 2.7.0

    async def _check_floor(self) -> None:
        """Refuses, with a PolicyFloorError, to lay the queue's tripwire on a deployment whose
        bundle record (the fields of the reserve's bundle hash: the versions whose clients
        fenced it) names a release below ACTIVE_TRIPWIRE_FLOOR, whose scripts write before they
        read the active key: its clients would not be refused by the tripwire."""
        r = self.client.redis

        async def attempt() -> list[str]:
            return [_text(f) for f in await r.hkeys(KEY_BUNDLE)]

        low = below_floor(await self.client._resend(attempt))
        if low:
            raise PolicyFloorError(self.name, low)

    async def _configure(
        self, paused: int, concurrency: int, rate_limit: int, rate_period_ms: int, force: bool
    ) -> QueuePolicy:
        """One configure_policy call (echomq 2.8.0) with its checked ARGV (-1 keeps a policy as
        it is), and read_policy in the same round trip: the policy after the call. The bundle
        record is read first when the call may lay the tripwire (a pause, a cap or a rate limit
        on a queue with no policy), unless force."""
        if not force and (paused == 1 or concurrency > 0 or rate_limit > 0):
            if not await self._tripped():
                await self._check_floor()  # the call may lay the tripwire: the queue has none
        k = self.keys
        xs = [
            ConfigurePolicyCall(
                pending=k.pending,
                active=k.active,
                running=k.running,
                policy=k.policy,
                starts=k.starts,
                wake=k.wake,
                paused=paused,
                concurrency=concurrency,
                rate_limit=rate_limit,
                rate_period_ms=rate_period_ms,
            ).exec(),
            self._read_policy_exec(),
        ]
        r = self.client.redis

        async def attempt() -> QueuePolicy:
            res = await run_scripts(r, xs)
            for v in res:
                if isinstance(v, BaseException):
                    raise v
            cp = ConfigurePolicyCall.decode(res[0])
            got = _queue_policy(ReadPolicyCall.decode(res[1]))
            want = (cp.paused == 1, cp.concurrency, cp.requires, cp.rate_limit, cp.rate_period_ms)
            if want != (
                got.paused,
                got.concurrency,
                got.requires,
                got.rate_limit,
                got.rate_period_ms,
            ):
                # The read ran before the call (the server answered the call NOSCRIPT and it was
                # sent again, as EVAL, after the read), or another client changed the policy in
                # between: read it again.
                got = _queue_policy(ReadPolicyCall.decode(await _run_ro(self.client, xs[1])))
            return got

        return await self.client._resend(attempt)

    def _read_policy_exec(self) -> ScriptExec:
        k = self.keys
        return ReadPolicyCall(
            active=k.active, running=k.running, policy=k.policy, starts=k.starts
        ).exec()

    @honour_cancel
    async def set_policy(
        self,
        *,
        paused: bool | None = None,
        concurrency: int | None = None,
        force: bool = False,
    ) -> QueuePolicy:
        """Sets the queue's pause and concurrency cap in one call (echomq 2.7.0; from 2.8.0 the
        configure_policy script, which keeps the queue's rate limit as it is) and returns the
        policy after it: ``paused`` True pauses the queue (claims lease nothing; producers keep
        enqueueing), False resumes it, None leaves it; ``concurrency`` n > 0 caps the queue's
        jobs leased at once across every worker, 0 removes the cap, None leaves it.

        The queue's first policy lays its tripwire: the leased jobs move to the running set and
        the active key takes the string of the least minors that honour its policies, so that
        every client older than 2.7 fails on the queue (WRONGTYPE: its call refused before any
        write) instead of ignoring the policy; clearing the last policy lifts it. Before a call
        that may lay it (a pause or a cap on a queue with no policy) the deployment's bundle
        record is read, and a version recorded there below ACTIVE_TRIPWIRE_FLOOR refuses the
        call with a PolicyFloorError: such a client writes before it reads the active key.
        ``force=True`` skips that check: only when no such client is left. A resume, or a raised
        or removed cap, rings the doorbell when jobs are pending. A queue whose tripwire names a
        later minor than this client's is refused with a PolicyError, and nothing is written.
        Bad arguments raise an ArgumentError before anything is sent. Resent across a
        reconnect."""
        if paused is not None and not isinstance(paused, bool):
            raise ArgumentTypeError("paused", "a bool or None", paused)
        if concurrency is not None:
            _non_negative("concurrency", concurrency)
        _check_force(force)
        p = -1 if paused is None else int(paused)
        n = -1 if concurrency is None else concurrency
        return await self._configure(p, n, -1, 0, force)

    @honour_cancel
    async def pause(self, *, force: bool = False) -> QueuePolicy:
        """Pauses the queue (echomq 2.7.0): from the next claim on, no worker of any client
        leases a job of it (running jobs finish and settle); producers keep enqueueing. Returns
        the policy after the call; a rate limit stays as it is. A queue with no policy before
        gets its tripwire, and the deployment's bundle record is checked first (``force``: see
        set_policy, only when no client older than ACTIVE_TRIPWIRE_FLOOR is left)."""
        return await self.set_policy(paused=True, force=force)

    @honour_cancel
    async def resume(self) -> QueuePolicy:
        """Resumes a paused queue (echomq 2.7.0) and rings its doorbell when jobs are pending, so
        that idle workers claim within milliseconds; returns the policy after the call. A rate
        limit stays as it is. With no cap and no rate limit left either, the queue is back in the
        classic layout (no tripwire)."""
        return await self.set_policy(paused=False)

    @honour_cancel
    async def set_concurrency(self, concurrency: int, *, force: bool = False) -> QueuePolicy:
        """Caps the queue's jobs leased at once at concurrency, across every worker of every
        client (echomq 2.7.0); 0 removes the cap. Returns the policy after the call. A claim
        leases at most the cap less the jobs leased; a raised or removed cap rings the doorbell.
        A cap on a queue with no policy lays its tripwire, the bundle record checked first
        (``force``: see set_policy). A negative concurrency raises an ArgumentError before
        anything is sent."""
        _non_negative("concurrency", concurrency)
        return await self.set_policy(concurrency=concurrency, force=force)

    @overload
    async def set_rate_limit(
        self, limit: int, period_ms: int | datetime.timedelta, *, force: bool = ...
    ) -> QueuePolicy: ...
    @overload
    async def set_rate_limit(
        self, limit: int, *, period: Duration, force: bool = ...
    ) -> QueuePolicy: ...
    @overload
    async def set_rate_limit(self, limit: Literal[0], *, force: bool = ...) -> QueuePolicy: ...

    @honour_cancel
    async def set_rate_limit(
        self,
        limit: int,
        period_ms: int | datetime.timedelta | None = None,
        *,
        period: Duration | None = None,
        force: bool = False,
    ) -> QueuePolicy:
        """Limits how many of the queue's jobs are started (leased) across every worker of every
        client (echomq 2.8.0, the configure_policy script): at most ``limit`` starts in any window
        of ``period_ms`` milliseconds (or ``period``: seconds or a timedelta), paced one start
        every period / limit, so that starts spread over the period instead of bursting at a
        window's edge. A job the limit holds back stays pending (never failed; its attempts
        unchanged), and an idle worker waits until the limit admits the next start (or the
        doorbell rings) instead of polling. ``limit`` 0 removes the limit (the period may then
        be omitted); a changed limit or period restarts the pace. The pause and the cap stay as
        they are. Returns the policy after the call.

        While the queue has a rate limit its tripwire refuses the claims of 2.7 clients (they
        cannot honour it; their settles still go through), and Queue.set_policy of a 2.7 client
        is refused too. A rate limit on a queue with no policy lays the tripwire, the bundle
        record checked first (``force``: see set_policy, only when no client older than
        ACTIVE_TRIPWIRE_FLOOR is left). A limit outside 0..RATE_LIMIT_MAX, or a period that is
        not a whole number of milliseconds from 1 ms to RATE_PERIOD_MAX_MS (a day), raises an
        ArgumentError before anything is sent. Resent across a reconnect."""
        return await self._set_rate_limit(limit, period_ms, period, force)

    async def _set_rate_limit(
        self, limit: int, period_ms: object, period: object, force: object
    ) -> QueuePolicy:
        """set_rate_limit, unchecked types aside (TypedQueue.set_rate_limit calls it)."""
        _non_negative("limit", limit)
        if limit > RATE_LIMIT_MAX:
            raise ArgumentError(f"limit {limit!r} is over {RATE_LIMIT_MAX}")
        per = _rate_period_ms(period_ms, period)
        if per is None and limit > 0:
            raise ArgumentError(f"a rate limit of {limit} needs its period (period_ms or period)")
        _check_force(force)
        assert isinstance(force, bool)
        return await self._configure(-1, -1, limit, per or 0, force)

    @honour_cancel
    async def policy(self) -> QueuePolicy:
        """Reads the queue's policy (echomq 2.7.0; from 2.8.0 the read_policy script) in one
        read-only call: paused, the cap (0: none), the minor its tripwire names (0: no policy),
        how many of its jobs are leased, in either layout, and the rate limit with the
        milliseconds until it admits the next start. Resent across a reconnect."""
        x = self._read_policy_exec()

        async def attempt() -> QueuePolicy:
            return _queue_policy(ReadPolicyCall.decode(await _run_ro(self.client, x)))

        return await self.client._resend(attempt)

    # ------------------------------------------------------------ echomq 2.6.0

    @honour_cancel
    async def upsert_scheduler(
        self,
        scheduler: str,
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
        template: Payload = b"",
    ) -> UpsertResult:
        """Creates or updates the job scheduler named scheduler (echomq 2.6.0; an id of 1 to 256
        bytes): a cron expression in an IANA zone (``cron="0 9 * * MON-FRI", tz="Europe/Paris"``;
        tz "" is UTC), or an interval (``every`` seconds or a timedelta, or ``every_ms``; its
        first slot ``start``, an aware datetime, or ``start_ms``, default the upsert's server
        time). Its runs are jobs of this queue whose payload is template with ``{scheduler}``,
        ``{slot}`` and ``{until}`` (Unix ms) replaced; missed (MISSED_RUN_ONCE by default,
        MISSED_SKIP, MISSED_BACKFILL with ``backfill`` up to 100) says what a firing later than
        ``grace`` (default 60 s) after a slot does with it. An unchanged schedule keeps its next
        slot, so a fleet that upserts at every start never resets nor repeats a run; the other
        settings take effect at once. Everything is checked first (the cron expression parses,
        the zone is known, exactly one of cron and every): an ArgumentError before anything is
        sent. Resent across a reconnect."""
        ev = pick_ms("every_ms", every_ms, "every", every, 0, allow_zero=True)
        if start is not None and start_ms is not None:
            raise TypeError("emq: give start_ms (Unix ms) or start (a datetime), not both")
        st = 0 if start_ms is None else start_ms
        if start is not None:
            if not isinstance(start, datetime.datetime) or start.tzinfo is None:
                raise ArgumentTypeError("start", "an aware datetime.datetime", start)
            st = _at_ms(start)
        args = upsert_args(
            scheduler,
            cron=cron,
            tz=tz,
            every_ms=ev,
            start_ms=st,
            missed=missed,
            backfill=backfill,
            grace_ms=pick_ms(
                "grace_ms", grace_ms, "grace", grace, DEFAULT_GRACE_MS, allow_zero=True
            ),
            template=template,
        )
        k = self.keys
        call = UpsertSchedulerCall(
            schedulers=k.schedulers,
            scheduler_next=k.scheduler_next,
            scheduler=args.scheduler,
            cron=args.cron,
            every_ms=args.every_ms,
            start_ms=args.start_ms,
            tz=args.tz,
            missed=args.missed,
            backfill=args.backfill,
            grace_ms=args.grace_ms,
            template=args.template,
        )

        async def attempt() -> UpsertResult:
            r = await call.run(self.client.redis)
            return UpsertResult(created=r.created == 1, changed=r.changed == 1, next_ms=r.next_ms)

        return await self.client._resend(attempt)

    @honour_cancel
    async def schedulers(self, ids: Sequence[str]) -> list[SchedulerInfo | None]:
        """Reads the records of the given job schedulers (echomq 2.6.0) in one read-only call,
        in order; None for one that does not exist. No ids send nothing."""
        sids = check_scheduler_ids(ids)
        if not sids:
            return []
        k = self.keys
        x = SchedulerEntriesCall(
            schedulers_key=k.schedulers, scheduler_next=k.scheduler_next, schedulers=sids
        ).exec()

        async def attempt() -> list[SchedulerInfo | None]:
            return [
                _scheduler_info(r) if r.scheduler else None
                for r in SchedulerEntriesCall.decode(await _run_ro(self.client, x))
            ]

        return await self.client._resend(attempt)

    @honour_cancel
    async def list_schedulers(self, offset: int = 0, count: int = 100) -> list[SchedulerInfo]:
        """Reads a page of the queue's job schedulers (echomq 2.6.0) in next-slot order, paused
        and ended ones last: count (1 to 1000) records after passing over offset. A page is by
        rank: a scheduler that fires meanwhile may move across pages."""
        _non_negative("offset", offset)
        self._page_count(count)
        k = self.keys
        x = ListSchedulersCall(
            schedulers=k.schedulers, scheduler_next=k.scheduler_next, offset=offset, count=count
        ).exec()

        async def attempt() -> list[SchedulerInfo]:
            return [
                _scheduler_info(r) for r in ListSchedulersCall.decode(await _run_ro(self.client, x))
            ]

        return await self.client._resend(attempt)

    async def _pause(self, paused: int, ids: Sequence[str]) -> int:
        sids = check_scheduler_ids(ids)
        if not sids:
            return 0
        k = self.keys
        call = PauseSchedulersCall(
            schedulers_key=k.schedulers,
            scheduler_next=k.scheduler_next,
            paused=paused,
            schedulers=sids,
        )
        return await self.client._resend(lambda: call.run(self.client.redis))

    @honour_cancel
    async def pause_schedulers(self, ids: Sequence[str]) -> int:
        """Pauses the given job schedulers (echomq 2.6.0): they fire nothing until resumed.
        Returns how many changed (one already paused, or gone, is not counted; so is one a lost
        attempt paused, as the call is resent across a reconnect). No ids send nothing."""
        return await self._pause(1, ids)

    @honour_cancel
    async def resume_schedulers(self, ids: Sequence[str]) -> int:
        """Resumes the given paused job schedulers (echomq 2.6.0): a resumed scheduler's next
        slot is at the earliest now, so the slots that fell due while it was paused never run.
        Returns how many changed, as pause_schedulers."""
        return await self._pause(0, ids)

    @honour_cancel
    async def remove_schedulers(self, ids: Sequence[str]) -> int:
        """Removes the given job schedulers (echomq 2.6.0); the runs they created are jobs and
        stay. Returns how many existed (resent across a reconnect: one a lost attempt removed is
        not counted). No ids send nothing."""
        sids = check_scheduler_ids(ids)
        if not sids:
            return 0
        k = self.keys
        call = RemoveSchedulersCall(
            schedulers_key=k.schedulers, scheduler_next=k.scheduler_next, schedulers=sids
        )
        return await self.client._resend(lambda: call.run(self.client.redis))

    @honour_cancel
    async def fire_schedulers(self, entries: Sequence[FireEntry]) -> list[Firing]:
        """Fires planned entries in one fire_schedulers call (echomq 2.6.0), each compared and set
        against its scheduler's next slot: per entry FIRING_FIRED (its run was created, pending
        when its slot has come, else scheduled at it), FIRING_ADVANCED (the next slot moved; no
        run), or nothing written: FIRING_STALE (the next slot is not expect_ms: another process
        fired it, or the schedule changed; the rest of that scheduler's chain is stale too),
        FIRING_PAUSED, FIRING_GONE. The raw call under fire_due: plan(...) makes the entries.
        A malformed id raises an IdError, a bad scheduler id or a negative number an
        ArgumentError, before anything is sent; an id of another kind than the work kind refuses
        the whole call with a KindError. Never resent (a lost reply is answered by a later
        firing: its entries are then stale). No entries send nothing."""
        if isinstance(entries, str | bytes) or not isinstance(entries, Sequence):
            raise ArgumentTypeError("entries", "a sequence of echomq.FireEntry", entries)
        es: list[FireSchedulersEntry] = []
        rows: list[str] = []
        for e in entries:
            if not isinstance(e, FireEntry):
                raise ArgumentTypeError("entry", "an echomq.FireEntry", e)
            for what, v in (
                ("expect_ms", e.expect_ms),
                ("next_ms", e.next_ms),
                ("slot_ms", e.slot_ms),
                ("until_ms", e.until_ms),
            ):
                _non_negative(what, v)
            rows.append(self._row(e.id))
            es.append(
                FireSchedulersEntry(
                    id=e.id,
                    scheduler=check_scheduler_id(e.scheduler),
                    expect=e.expect_ms,
                    next=e.next_ms,
                    slot=e.slot_ms,
                    until=e.until_ms,
                )
            )
        if not es:
            return []
        k = self.keys
        call = FireSchedulersCall(
            schedulers_key=k.schedulers,
            scheduler_next=k.scheduler_next,
            pending=k.pending,
            schedule=k.schedule,
            wake=k.wake,
            rows=rows,
            entries=es,
        )

        async def attempt() -> list[Firing]:
            return [r.outcome for r in await call.run(self.client.redis)]

        out = await self.client._once(attempt)
        fired = sum(1 for o, e in zip(out, es, strict=True) if o == FIRING_FIRED and e.slot > 0)
        self.client.metrics.add(Counter.ENQUEUED, self.name, fired)
        return out

    def _plan(self, info: SchedulerInfo, horizon_ms: int) -> list[PlanEntry]:
        """info's plan; [] (logged once per scheduler and schedule) for a record whose schedule
        this SDK cannot evaluate."""
        try:
            sched = info.schedule
        except ArgumentError as err:
            what = (info.id, info.cron, info.tz)
            if what not in self._unplannable:
                self._unplannable.add(what)
                self.client.logger.warning(
                    "emq: scheduler %r of queue %s has a schedule this client cannot evaluate; "
                    "it is not fired: %s",
                    info.id,
                    self.name,
                    err,
                )
            return []
        return plan(info, info.now_ms, horizon_ms, schedule=sched)

    def _due_exec(self, horizon_ms: int, count: int, spread: int) -> ScriptExec:
        k = self.keys
        return DueSchedulersCall(
            schedulers=k.schedulers,
            scheduler_next=k.scheduler_next,
            horizon_ms=horizon_ms,
            count=count,
            spread=spread,
        ).exec()

    @staticmethod
    def _page_count(count: int) -> None:
        _positive("count", count)
        if count > LIST_SCHEDULERS_MAX:
            raise ArgumentError(f"count {count!r} is over {LIST_SCHEDULERS_MAX}")

    @honour_cancel
    async def due_schedulers(
        self,
        *,
        horizon: Duration | None = None,
        horizon_ms: int | None = None,
        count: int = DUE_PAGE,
        spread: int | None = None,
    ) -> list[SchedulerInfo]:
        """Reads a page of the job schedulers due within horizon (default 0: due now; echomq
        2.6.0) in one read-only call, in next-slot order, with the server's time in each record:
        of d due, the page spread modulo ceil(d / count) (spread default random, so that
        competing processes work different pages). The raw read under fire_due. count is 1 to
        1000 and spread non-negative (an ArgumentError before anything is sent)."""
        hz = pick_ms("horizon_ms", horizon_ms, "horizon", horizon, 0, allow_zero=True)
        _non_negative("horizon", hz)
        self._page_count(count)
        sp = secrets.randbits(32) if spread is None else spread
        _non_negative("spread", sp)
        x = self._due_exec(hz, count, sp)

        async def attempt() -> list[SchedulerInfo]:
            return [
                _scheduler_info(r) for r in DueSchedulersCall.decode(await _run_ro(self.client, x))
            ]

        return await self.client._resend(attempt)

    @honour_cancel
    async def fire_due(
        self,
        *,
        horizon: Duration | None = None,
        horizon_ms: int | None = None,
        count: int = DUE_PAGE,
    ) -> list[FiredRun]:
        """One round of the scheduler loop (echomq 2.6.0): reads a page of the schedulers due
        within horizon (default 0: due now) with the server's time (due_schedulers), plans each
        (plan, with the record's server time), mints one id per entry and fires them in one
        fire_schedulers call; again at once while the page was full and something moved.
        Returns the runs created, in firing order. A run fired ahead (horizon) waits scheduled
        at its slot. Any number of processes may call it at once: each slot fires once. A
        scheduler whose schedule this SDK cannot evaluate is skipped (logged once)."""
        hz = pick_ms("horizon_ms", horizon_ms, "horizon", horizon, 0, allow_zero=True)
        _non_negative("horizon", hz)
        self._page_count(count)
        fired: list[FiredRun] = []
        while True:
            x = self._due_exec(hz, count, secrets.randbits(32))

            async def due(x: ScriptExec = x) -> list[SchedulerInfo]:
                return [
                    _scheduler_info(r)
                    for r in DueSchedulersCall.decode(await _run_ro(self.client, x))
                ]

            recs = await self.client._resend(due)
            entries: list[FireEntry] = []
            for rec in recs:
                for p in self._plan(rec, hz):
                    entries.append(
                        FireEntry(
                            id=self.client.mint(),
                            scheduler=rec.id,
                            expect_ms=p.expect_ms,
                            next_ms=p.next_ms,
                            slot_ms=p.slot_ms,
                            until_ms=p.until_ms,
                        )
                    )
            moved = False
            if entries:
                outcomes = await self.fire_schedulers(entries)
                for e, o in zip(entries, outcomes, strict=True):
                    if o in (FIRING_FIRED, FIRING_ADVANCED):
                        moved = True
                    if o == FIRING_FIRED and e.slot_ms > 0:
                        fired.append(
                            FiredRun(
                                scheduler=e.scheduler,
                                slot_ms=e.slot_ms,
                                until_ms=e.until_ms,
                                id=e.id,
                            )
                        )
            if len(recs) < count or not moved:
                return fired

    async def run_schedulers(
        self,
        *,
        poll: Duration = DEFAULT_SCHEDULER_POLL,
        horizon: Duration | None = None,
        horizon_ms: int | None = None,
        count: int = DUE_PAGE,
        stop: asyncio.Event | None = None,
        on_fire: Callable[[list[FiredRun]], object] | None = None,
    ) -> None:
        """The scheduler loop of this queue (echomq 2.6.0): fire_due, then a wait of poll
        (default 0.25 s), until the task is cancelled (CancelledError, as asyncio does) or stop
        is set (then it returns). Run it in as many processes as you like: each slot fires once.
        An error is logged and the round tried again after a growing pause (up to 5 s); the
        loop never ends by itself. Bad arguments raise an ArgumentError at once.

        ``on_fire``, when given, is called after each round that fired runs, with them (the
        FiredRuns fire_due returned, in firing order), from the runner's task: a plain function,
        or an async one, which is awaited before the next round. An exception it raises is
        logged (the client's logger, with its traceback) and the runner goes on; it is never
        called with an empty list (Go's SchedulerOptions.OnFire, TypeScript's onFired)."""
        pause = duration_ms("poll", poll) / 1000
        hz = pick_ms("horizon_ms", horizon_ms, "horizon", horizon, 0, allow_zero=True)
        _non_negative("horizon", hz)
        self._page_count(count)
        if on_fire is not None and not callable(on_fire):
            raise ArgumentTypeError("on_fire", "a callable or None", on_fire)
        failures = 0
        while stop is None or not stop.is_set():
            wait = pause
            try:
                fired = await self.fire_due(horizon_ms=hz, count=count)
                failures = 0
                if fired and on_fire is not None:
                    await self._on_fire(on_fire, fired)
            except Exception as err:
                failures += 1
                wait = min(SCHEDULER_RETRY_MAX_S, pause * 2 ** min(failures, 16))
                wait *= 0.5 + secrets.randbelow(1000) / 2000
                self.client.logger.warning(
                    "emq: firing the schedulers of queue %s failed; retrying in %.2fs: %s",
                    self.name,
                    wait,
                    err,
                )
            if stop is None:
                await asyncio.sleep(wait)
                continue
            try:
                await asyncio.wait_for(stop.wait(), wait)
            except TimeoutError:
                pass

    async def _on_fire(
        self, on_fire: Callable[[list[FiredRun]], object], runs: list[FiredRun]
    ) -> None:
        """Calls run_schedulers' on_fire with the runs of a round (awaiting what it returns when
        that is awaitable); an exception of its is logged, never raised."""
        try:
            out = on_fire(runs)
            if inspect.isawaitable(out):
                await out
        except asyncio.CancelledError:
            raise
        except Exception:
            self.client.logger.exception(
                "emq: the on_fire callback of queue %s's scheduler runner raised (%d runs fired); "
                "the runner goes on",
                self.name,
                len(runs),
            )

    @deprecated("promote_due")
    @honour_cancel
    async def promote(self, limit: int = 1000) -> int:
        """Moves up to limit scheduled jobs whose run-at has come to pending; returns how many
        moved. It runs the 2.0 promote script, which reaches rows through the row prefix (its
        behaviour is frozen: it never rings the doorbell).

        Deprecated: use ``promote_due``, which declares every key it touches and rings the
        doorbell; calling it warns (DeprecationWarning). The 2.0 script stays in the wire layer
        (PromoteCall)."""
        _positive("limit", limit)
        call = PromoteCall(
            schedule=self.keys.schedule,
            pending=self.keys.pending,
            prefix=self.keys.row_prefix,
            limit=limit,
        )
        return await self.client._once(lambda: call.run(self.client.redis))

    @deprecated("reap_expired")
    @honour_cancel
    async def reap(self, limit: int = 1000, max_attempts: int = 0) -> int:
        """Takes back up to limit expired leases: each job goes back to pending, or to dead when
        max_attempts > 0 and its attempts reached it. Returns how many moved. It runs the 2.0 reap
        script, which reaches rows through the row prefix (its behaviour is frozen: it never rings
        the doorbell).

        Deprecated: use ``reap_expired``, which declares every key it touches; calling it warns
        (DeprecationWarning). The 2.0 script stays in the wire layer (ReapCall)."""
        _positive("limit", limit)
        _non_negative("max attempts", max_attempts)
        call = ReapCall(
            active=self.keys.active,
            pending=self.keys.pending,
            dead=self.keys.dead,
            prefix=self.keys.row_prefix,
            limit=limit,
            max_attempts=max_attempts,
        )
        return await self._once_legacy(call, "reap_recorded_ids (reap_policy_ids)")

    @honour_cancel
    async def promote_due(self, limit: int = 1000) -> int:
        """Moves up to limit scheduled jobs whose run-at has come to pending, and rings the
        doorbell when any moved; returns how many moved. It reads the head of the schedule with
        the server's clock (ZRANGE and TIME, one round trip) and calls promote_ids with the due
        ids, so it touches only declared keys; when another caller moved every one of them in
        between, it reads again, up to PEEK_ATTEMPTS times. The Worker's maintenance promotes with
        it. (promote keeps the 2.0 script, which reaches rows through the row prefix and never
        rings.)"""
        _positive("limit", limit)
        for n in range(1, PEEK_ATTEMPTS + 1):
            ids = await self._due(self.keys.schedule, limit)
            if not ids:
                return 0
            moved = await self.promote_ids(ids)
            if moved > 0 or n >= PEEK_ATTEMPTS:
                return moved
        return 0

    @honour_cancel
    async def promote_ids(self, ids: Sequence[str]) -> int:
        """Moves the given scheduled jobs whose run-at has come to pending (promote_ids), ringing
        the doorbell when any moved; an id not scheduled or not yet due is left as it is. Returns
        how many moved. Malformed ids raise an IdError before anything is sent; no ids send
        nothing."""
        rows = [self._row(i) for i in _ids(ids)]
        if not rows:
            return 0
        call = PromoteIdsCall(
            schedule=self.keys.schedule,
            pending=self.keys.pending,
            wake=self.keys.wake,
            rows=rows,
            ids=list(ids),
        )
        return await self.client._once(lambda: call.run(self.client.redis))

    @honour_cancel
    async def reap_expired(self, limit: int = 1000, max_attempts: int = 0) -> int:
        """Takes back up to limit expired leases like reap, and rings the doorbell when any went
        back to pending; returns how many moved. It reads the head of the active set with the
        server's clock (ZRANGE and TIME, one round trip) and calls reap_ids with the expired ids,
        so it touches only declared keys; when another caller took every one of them in between,
        it reads again, up to PEEK_ATTEMPTS times. The Worker's maintenance reaps with it. (reap
        keeps the 2.0 script, which reaches rows through the row prefix and never rings.)"""
        return await self._reap_expired(limit, max_attempts, record=False)

    async def _reap_expired(
        self, limit: int, max_attempts: int, *, record: bool, events_max: int | None = None
    ) -> int:
        """reap_expired, with reap_recorded_ids (each lease taken back recorded as lost,
        reported and counted) when record is set, as the Worker's maintenance reaps."""
        _positive("limit", limit)
        _non_negative("max attempts", max_attempts)
        for n in range(1, PEEK_ATTEMPTS + 1):
            ids = await self._due(self.keys.active, limit)
            if not ids:
                return 0
            if record:
                moved = await self.reap_recorded_ids(ids, max_attempts, events_max=events_max)
            else:
                moved = await self.reap_ids(max_attempts, ids)
            if moved > 0 or n >= PEEK_ATTEMPTS:
                return moved
        return 0

    @honour_cancel
    async def reap_ids(self, max_attempts: int, ids: Sequence[str]) -> int:
        """Takes back the given expired leases (reap_ids): each goes back to pending, or to dead
        when max_attempts > 0 and its attempts reached it; the doorbell rings when any went back to
        pending. An id not active, or whose lease has not expired, is left as it is. Returns how
        many moved. Malformed ids raise an IdError before anything is sent; no ids send nothing."""
        _non_negative("max attempts", max_attempts)
        rows = [self._row(i) for i in _ids(ids)]
        if not rows:
            return 0
        call = ReapIdsCall(
            active=self.keys.active,
            pending=self.keys.pending,
            dead=self.keys.dead,
            wake=self.keys.wake,
            rows=rows,
            max_attempts=max_attempts,
            ids=list(ids),
        )
        return await self._once_legacy(call, "reap_recorded_ids (reap_policy_ids)")

    @honour_cancel
    async def ring(self) -> bool:
        """Rings the queue's doorbell; returns whether it was silent before."""
        call = RingCall(wake=self.keys.wake)
        return await self.client._once(lambda: call.run(self.client.redis)) > 0

    @honour_cancel
    async def revive(self, id: str, *, events_max: int | None = None) -> bool:
        """Moves a dead job back to pending, keeping its attempts, and rings the doorbell, in one
        call (revive_recorded, echomq 2.4.0), emitting a revived event unless ``events_max``
        (default the client's) is 0. Returns False when the job is not dead."""
        row = self._row(id)
        k = self.keys
        call = ReviveRecordedCall(
            dead=k.dead,
            pending=k.pending,
            row=row,
            wake=k.wake,
            events=k.events,
            id=id,
            events_max=self._events_max(events_max),
        )
        n = await self.client._once(lambda: call.run(self.client.redis))
        return n == REVIVE_RECORDED_REVIVED

    @honour_cancel
    async def purge(self, id: str, *, forget: bool = True) -> bool:
        """Deletes a dead job for good: its row and its id, and (unless ``forget`` is False) its
        failure record, progress and retry policy, with forget_ids pipelined right after the
        purge in the same round trip. Returns False when the job is not dead (its record is then
        kept). ``forget=False`` sends the purge alone, as a 2.2 client does: the record it leaves
        reads as not recorded, and forget_ids (or a worker's maintenance) deletes it."""
        row = self._row(id)
        call = PurgeCall(dead=self.keys.dead, row=row, id=id)
        if not forget:
            return await self.client._once(lambda: call.run(self.client.redis)) == PURGE_PURGED
        k = self.keys
        fc = ForgetIdsCall(
            failures=k.failures, progress=k.progress, options=k.options, rows=[row], ids=[id]
        )
        xs = [call.exec(), fc.exec()]
        res = await self.client._once(lambda: run_scripts(self.client.redis, xs))
        if isinstance(res[0], BaseException):
            raise res[0]
        if isinstance(res[1], BaseException):  # the record is left to forget_failures
            log.debug("emq: purge %s: forgetting its failure record failed: %s", id, res[1])
        return PurgeCall.decode(res[0]) == PURGE_PURGED

    def _set_key(self, s: str) -> str:
        if not is_set_name(s):
            raise ArgumentError(f"unknown set {s!r}")
        return self.keys.set(s)

    @honour_cancel
    async def size(self, s: SetName) -> int:
        """How many ids set s holds."""
        key = self._set_key(s)

        r = self.client.redis

        async def attempt() -> int:
            return int(await self._leased(key, r.zcard))

        return await self.client._resend(attempt)

    @honour_cancel
    async def pending_size(self) -> int:
        """How many jobs wait to be claimed (the pending set's size), like the Go SDK's
        PendingSize. Scheduled jobs not yet promoted are not counted: see sizes()."""
        return await self.size(SET_PENDING)

    @honour_cancel
    async def sizes(self) -> dict[SetName, int]:
        """The size of every set, read in one round trip."""

        r = self.client.redis

        async def attempt() -> dict[SetName, int]:
            async with r.pipeline(transaction=False) as pipe:
                for s in SETS:
                    pipe.zcard(self.keys.set(s))
                res = await pipe.execute(raise_on_error=False)
            out: dict[SetName, int] = {}
            for s, n in zip(SETS, res, strict=True):
                if s == SET_ACTIVE and is_wrongtype(n):
                    # the policy layout (echomq 2.7.0): the leased jobs are in the running set
                    n = await self._leased(self.keys.active, r.zcard)
                if isinstance(n, BaseException):
                    raise n
                out[s] = int(n)
            return out

        return await self.client._resend(attempt)

    @honour_cancel
    async def browse(self, s: SetName, n: int) -> list[str]:
        """Returns up to n ids of set s, newest first: for a score-zero set that is reverse mint
        order; for a scored set the latest deadline or run-at first."""
        return (await self.page(s, "", n)).ids

    @honour_cancel
    async def get(self, id: str) -> JobInfo | None:
        """Reads one job: its row, its score in the set its state names, its failure record
        (failures, died_at_ms: the failures script) and its last progress report (the output
        script, echomq 2.4.0), in one round trip. Returns None when the job does not exist
        (never enqueued, or completed and retired): Queue.lookup reads, in the same round trip,
        the completion record such a job may have left."""
        return (await self.lookup(id)).job

    @honour_cancel
    async def lookup(self, id: str) -> JobLookup:
        """Reads one job as get does, in one round trip, and, when its row is gone, the completion
        record its completing worker kept (echomq 2.4.0: ``JobLookup.completed``: when it
        completed, the attempt, the handler's result)."""
        row = self._row(id)
        k = self.keys
        fx = FailuresCall(row=row, failures=k.failures, id=id).exec()
        ox = OutputCall(row=row, results=k.results, progress=k.progress, id=id).exec()
        r = self.client.redis

        async def script(res: Any, x: ScriptExec) -> Any:
            if isinstance(res, NoScriptError):  # the first call on this server: EVAL it
                try:
                    return await run_script(r, x)
                except TryAgainError as err:
                    return err
            return res

        async def attempt() -> JobLookup:
            async with r.pipeline(transaction=False) as pipe:
                pipe.hgetall(row)
                for s in SETS:
                    pipe.zscore(self.keys.set(s), id)
                leave = getattr(pipe, "leave_try_again", None)  # a Redis Cluster pipeline's
                pipe_script(pipe, fx)
                if leave is not None:
                    leave()
                pipe_script(pipe, ox)
                if leave is not None:
                    leave()
                res = await pipe.execute(raise_on_error=False)
            scores = list(res[1 : 1 + len(SETS)])
            at = SETS.index(SET_ACTIVE)
            if is_wrongtype(scores[at]) and await self._tripped_now():
                # the policy layout (echomq 2.7.0): a leased job's deadline is in the running set
                scores[at] = await r.zscore(k.running, id)
            for v in (res[0], *scores):
                if isinstance(v, BaseException):
                    raise v
            h: dict[bytes, bytes] = res[0]
            out = JobOutput()
            ores = await script(res[-1], ox)
            if isinstance(ores, TryAgainError):
                # A Redis Cluster slot split by a migration: the output waits for it to settle.
                log.debug("emq: get %s: the job's output is unreadable for now: %s", id, ores)
            elif isinstance(ores, BaseException):
                raise ores
            else:
                try:
                    out = _output(OutputCall.decode(ores))
                except ReplyShapeError as err:
                    raise ValueError(f"emq: get {id}: the job's output: {err}") from err
            if not h:
                return JobLookup(job=None, completed=out.completed)
            fres = await script(res[-2], fx)
            history: tuple[FailedAttempt, ...] = ()
            if isinstance(fres, TryAgainError):
                # A Redis Cluster slot split by a migration (the row and the record on both
                # sides): the row reads through ASK, the record not until the slot settles.
                log.debug("emq: get %s: the failure record is unreadable for now: %s", id, fres)
            elif isinstance(fres, BaseException):
                raise fres
            else:
                try:
                    history = tuple(decode_failures(fres))
                except ReplyShapeError as err:
                    raise ValueError(f"emq: get {id}: the failure record: {err}") from err
            state = h.get(FIELD_STATE.encode(), b"").decode()
            if not is_state(state):
                raise ValueError(f"emq: get {id}: the row holds an unknown state {state!r}")
            tok = h.get(FIELD_TOKEN.encode(), b"").decode()
            if not _INT_RE.fullmatch(tok):
                raise ValueError(f"emq: get {id}: the row's token is not an integer")
            at_ms: int | None = None
            home = state_set(state)
            for s, score in zip(SETS, scores, strict=True):
                if s == home and not set_is_lex(s) and score is not None:
                    at_ms = int(score)
            info = JobInfo(
                id=id,
                state=state,
                attempts=int(tok),
                payload=h.get(FIELD_PAYLOAD.encode(), b""),
                at_ms=at_ms,
                failures=history,
                died_at_ms=died_at_ms(state, int(tok), history),
                progress=out.progress,
            )
            return JobLookup(job=info)

        return await self.client._resend(attempt)

    @honour_cancel
    async def page(self, s: SetName, after: str, n: int) -> Page:
        """Returns up to n ids of set s, newest first, starting after the cursor ("" for the first
        page), and the cursor of the next page ("" when this was the last).

        Pages are stable under concurrent change: an id never shows twice across pages, and an id
        present throughout is never skipped. A cursor page() cannot have returned raises an
        ArgumentError before anything is sent.
        """
        key = self._set_key(s)
        _positive("page size", n)
        lex = set_is_lex(s)
        cur_score, cur_id = "", ""
        if after:
            if lex:
                cur_id = after
            else:
                cur_score, slash, cur_id = after.partition("/")
                if not slash or not _INT_RE.fullmatch(cur_score):
                    raise ArgumentError(f"cursor {after!r}")
            try:
                parse_id(cur_id)
            except ValueError:
                raise ArgumentError(f"cursor {after!r}") from None
        r = self.client.redis

        async def read(key: str) -> Page:
            ids: list[str] = []
            scores: list[float] = []
            if lex:
                hi = "(" + cur_id if after else "+"
                got = await r.zrange(key, hi, "-", desc=True, bylex=True, offset=0, num=n)
                ids.extend(_text(m) for m in got)
            else:
                rest = "+inf"
                if after:
                    same: Any = await r.zrange(
                        key, cur_score, cur_score, desc=True, byscore=True, withscores=True
                    )
                    for m, sc in same:
                        if len(ids) >= n:
                            break
                        t = _text(m)
                        if t < cur_id:
                            ids.append(t)
                            scores.append(float(sc))
                    rest = "(" + cur_score
                if len(ids) < n:
                    got2: Any = await r.zrange(
                        key,
                        rest,
                        "-inf",
                        desc=True,
                        byscore=True,
                        offset=0,
                        num=n - len(ids),
                        withscores=True,
                    )
                    for m, sc in got2:
                        ids.append(_text(m))
                        scores.append(float(sc))
            for i in ids:
                parse_id(i)
            if len(ids) < n:
                return Page(ids=ids, next="")
            nxt = ids[-1] if lex else f"{int(scores[-1])}/{ids[-1]}"
            return Page(ids=ids, next=nxt)

        async def attempt() -> Page:
            return await self._leased(key, read)

        return await self.client._resend(attempt)


async def _run(client: Client, x: ScriptExec) -> Any:
    return await run_script(client.redis, x)


async def _run_ro(client: Client, x: ScriptExec) -> Any:
    """Runs a read-only script (output, counters, events) with EVALSHA_RO, and EVAL_RO when the
    server answers NOSCRIPT: the server refuses it should it ever write. A refusal raises the
    exception of its wire class."""
    r = client.redis
    try:
        return await r.evalsha_ro(x.script.sha1, len(x.keys), *x.keys, *x.argv)
    except NoScriptError:
        pass
    except ResponseError as err:
        raise script_error(x.script.name, err) from None
    try:
        return await r.eval_ro(x.script.source, len(x.keys), *x.keys, *x.argv)
    except ResponseError as err:
        raise script_error(x.script.name, err) from None


JITTER_MAX: Final = 1000
"""The top of a fail call's jitter draw (0..JITTER_MAX)."""

_STREAM_ID_RE: Final = re.compile(r"[0-9]+-[0-9]+")


def _check_after(after: object) -> None:
    if not isinstance(after, str):
        raise ArgumentTypeError("after", "a str (a stream id, or empty)", after)
    if after and not _STREAM_ID_RE.fullmatch(after):
        raise ArgumentError(f"after {after!r} is not a stream id (ms-seq)")


def _stream_id(xread_reply: Any) -> str:
    """The id of the entry an XREAD answered with; empty when it answered none."""
    try:
        if isinstance(xread_reply, dict):  # RESP3
            entries = next(iter(xread_reply.values()))
            if entries and isinstance(entries[0], list):
                entries = entries[0]
        else:
            entries = xread_reply[0][1]
        return _text(entries[0][0])
    except (TypeError, IndexError, KeyError, StopIteration):
        return ""


def _later_id(a: str, b: str) -> str:
    """The later of stream ids a and b (either may be empty)."""

    def key(s: str) -> tuple[int, int]:
        ms, _, seq = s.partition("-")
        return (int(ms or 0), int(seq or 0))

    if not a or not _STREAM_ID_RE.fullmatch(a):
        return b
    if not _STREAM_ID_RE.fullmatch(b):
        return a
    return a if key(a) >= key(b) else b


def _event(r: EventsReply) -> QueueEvent:
    return QueueEvent(
        stream_id=r.stream_id,
        event=r.event,
        id=r.id,
        attempt=r.attempt,
        failure_class=r.class_,
        error=r.error.decode("utf-8", "replace"),
        run_at_ms=r.run_at_ms or None,
        progress=r.progress,
    )


def _scheduler_info(
    r: SchedulerEntriesReply | ListSchedulersReply | DueSchedulersReply,
) -> SchedulerInfo:
    return SchedulerInfo(
        id=r.scheduler,
        cron=r.cron,
        tz=r.tz,
        every_ms=r.every_ms,
        start_ms=r.start_ms,
        missed=r.missed,
        backfill=r.backfill,
        grace_ms=r.grace_ms,
        template=r.template,
        paused=r.paused == 1,
        next_ms=r.next_ms,
        last_slot_ms=r.last_slot_ms,
        last_id=r.last_id,
        runs=r.runs,
        now_ms=r.now_ms,
    )


def _output(o: OutputReply) -> JobOutput:
    c = None
    if o.completed_at_ms > 0:
        c = Completion(at_ms=o.completed_at_ms, attempt=o.attempt, result=o.result)
    return JobOutput(progress=o.progress, completed=c)
