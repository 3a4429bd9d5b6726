"""Worker: runs a handler over the jobs of one queue, with the Go SDK's worker semantics.

Every script the worker runs touches only the keys it declares (echomq 2.2.0): it reads the head
of the pending set (ZRANGE) and claims exactly those ids with claim_ids, completes a job and
leases the next head id in the same complete_claim_ids call, and maintains the queue with
promote_ids and reap_failed_ids on the due heads of the schedule and of the active set. A pool of
head ids, refilled by a ZRANGE pipelined behind a claiming call when it runs low, keeps the steady
state at one round trip per job.

A failed attempt is recorded (echomq 2.3.0) by the call that settles it, with the failure's
class, the worker's name and the error's text.

The 2.4 worker (echomq 2.4.0) completes with complete_result_claim_ids (the handler's return value
is the job's result, kept as the worker's retention says), settles a failed attempt with fail (by
the job's own retry policy when its push gave one, else the worker's), reaps with
reap_recorded_ids, sweeps the failure records, retry policies and progress reports whose rows are
gone with forget_ids, and reports what it does on the queue's events stream. An idle worker
sleeps until the schedule's earliest job is due (or the doorbell rings) and promotes it itself.

The 2.7 worker (echomq 2.7.0) claims, completes, fails, reaps and extends with the 2.7 twins of
those scripts (claim_policy_ids, complete_policy_ids, fail_policy, reap_policy_ids,
extend_policy), which serve a queue in either layout and honour its policy (Queue.pause,
Queue.set_concurrency): a claim that leases nothing because the queue is paused or at its cap
waits on the doorbell as on an empty queue, and a resume or a freed lease rings it.

The 2.8 worker (echomq 2.8.0) claims with claim_rate_ids and completes with complete_rate_ids,
which honour the queue's rate limit too (Queue.set_rate_limit): a claim that offered pending ids
and leased none reads the queue's policy (read_policy), and when the limit holds its starts back
the worker waits on the doorbell until the limit admits the next one (admit_in_ms, at most
wait_ms), so that a resume or a raised limit still wakes it early; every claim again is paced by
the limit or by the doorbell, never a busy loop.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import functools
import inspect
import logging
import os
import random
import re
import secrets
import socket
import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar, overload

from redis.asyncio import Redis
from redis.exceptions import AskError, MovedError, NoScriptError, TryAgainError

from ._cancel import check_cancelled
from ._deadline import giving_up_on
from ._duration import Duration, pick_ms
from ._gen.errors import StaleError
from ._gen.ids import parse_id
from ._gen.keys import KEY_LOCKS, lock_maintenance
from ._gen.protocol import (
    BACKOFF_FIXED,
    EVENT_DEAD,
    FAILURE_CLASS_ERROR,
    FAILURE_CLASS_TIMEOUT,
    FailureClass,
)
from ._gen.scripts import (
    LOCK_HELD,
    SCRIPT_BURY_POLICY,
    SCRIPT_CLAIM_RATE_IDS,
    SCRIPT_COMPLETE_RATE_IDS,
    BuryPolicyCall,
    ClaimRateIdsReply,
    CompleteRateIdsReply,
    ExtendPolicyCall,
    LockCall,
    ScriptExec,
    UnlockCall,
    pipe_script,
    run_script,
    run_scripts,
    script_error,
)
from .codec import Codec, CodecError, TypedJob, TypedQueue
from .errors import ArgumentError, ArgumentTypeError
from .failures import Failure
from .metrics import Counter, Metrics
from .outputs import RESULT_MAX_BYTES, BackoffPolicy, Retention, encode_value
from .queue import _REPORTER, PEEK_ATTEMPTS, Job, Queue

__all__ = [
    "CANCELLED",
    "JOB_TIMEOUT",
    "LEASE_LOST",
    "SHUTDOWN",
    "Handler",
    "PermanentError",
    "SyncHandler",
    "UnrecoverableError",
    "Worker",
    "exponential_backoff",
    "permanent",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

SyncHandler = Callable[[Job], None]
"""A plain (not async) handler: the Worker runs it in a thread pool. Returning completes the job
(what it returns is the job's result: see Handler), raising hands it back, as for a Handler."""

Handler = Callable[[Job], Awaitable[None]]
"""Processes one job (a handler that returns a result is a Callable[[Job],
Awaitable[object]], which Worker takes as well). Returning completes it: what it returns is the
job's result (echomq 2.4.0: bytes as they are, a str as UTF-8, None as none, any other value as
JSON), kept as the worker's
``keep_results`` says. Raising hands it back to run again after a backoff (the job's own, given
to its push, else the worker's), until the job has been claimed max_attempts times (the job's
own attempts, else the worker's); then it is buried. An UnrecoverableError (or a PermanentError:
see permanent) buries it at once.

The handler runs in a task of its own, which the worker cancels when the job's lease is lost
(another worker may be running it: nothing the handler does can be completed; the
CancelledError's message is LEASE_LOST), when a shutdown's deadline passes (SHUTDOWN; the job
was handed back) and when the job is cancelled (echomq 2.5.0: Queue.cancel_ids or cancel_key, by
any client; CANCELLED: the job is gone, and is neither retried nor buried)."""

LEASE_LOST: Final = "emq: the job's lease was lost"
"""The message of the cancellation of a handler whose lease was lost."""

SHUTDOWN: Final = "emq: the worker shut down"
"""The message of the cancellation of a handler that overran a shutdown's deadline."""

CANCELLED: Final = "emq: the job was cancelled"
"""The message of the cancellation of a handler whose job was cancelled (echomq 2.5.0)."""

JOB_TIMEOUT: Final = "emq: the job ran out of its time"
"""The message of the cancellation of a handler that overran the worker's job_timeout (the
attempt is recorded with the failure class timeout)."""

SWEEP_COUNT: Final = 100
"""How many fields of each of the queue's failure records, retry policies and progress reports
one maintenance tick scans (HSCAN COUNT) for entries whose rows are gone, which it deletes with
forget_ids."""

DEFAULT_BACKOFF: Final = BackoffPolicy.exponential(1, max=600)
"""The worker's default backoff: 1 s after the first attempt, doubling up to 10 minutes, each
delay drawn from its upper half (a fresh jitter per failure), as exponential_backoff(1000,
600000) did before echomq 2.4.0."""

OP_TIMEOUT_S: Final = 10.0
"""Bounds each claim and each settling of a job the worker makes (seconds)."""

MAINTENANCE_BATCH: Final = 1000
"""The most ids one promote or reap call of the maintenance handles."""

SWEEP_DEDUP_COUNT: Final = 100
"""The page size (HSCAN COUNT) of the maintenance's sweep_dedup calls (echomq 2.5.0)."""

SWEEP_DEDUP_PAGES: Final = 10
"""The most sweep_dedup pages one maintenance tick walks; the walk goes on next tick."""

LISTEN_POLL_S: Final = 1.0
"""How long one read of the cancel channel waits before the listener looks again."""

SUBSCRIBE_WAIT_S: Final = 5.0
"""How long run() waits, at most, for the first subscription to the cancel channel before it
claims anyway."""


class PermanentError(Exception):
    """A handler error that no retry can fix: the job is buried at once. ``__cause__`` is the
    error it marks."""

    def __init__(self, cause: BaseException | str) -> None:
        super().__init__(f"permanent: {cause}")
        if isinstance(cause, BaseException):
            self.__cause__ = cause


class UnrecoverableError(PermanentError):
    """Raise it from a handler to say the failure is final (BullMQ's UnrecoverableError): the job
    is buried at once, whatever its attempts and policy. ``UnrecoverableError("why")`` or
    ``UnrecoverableError(err)``, whose ``__cause__`` is err."""

    def __init__(self, cause: BaseException | str) -> None:
        super().__init__(cause)
        self.args = (str(cause),)


def permanent(err: BaseException | str) -> PermanentError:
    """Marks err as permanent: raise the result from a handler to bury the job at once."""
    return PermanentError(err)


def exponential_backoff(base_ms: float, max_ms: float) -> Callable[[int], float]:
    """A backoff policy: base_ms for the first attempt, doubling with each further attempt up to
    max_ms, with jitter drawn from the upper half of the interval so that retries of a burst
    spread out. The policy maps the attempt that failed (1 for the first) to a delay in ms."""

    def backoff(attempt: int) -> float:
        d = float(base_ms)
        i = 1
        while i < attempt and d < max_ms:
            d *= 2
            i += 1
        d = min(d, float(max_ms))
        if d < 2:
            return d
        return d / 2 + random.random() * (d / 2)

    return backoff


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


CANCEL_BOUND_S: Final = 5.0
"""How long run() waits, at most, for its own tasks to end once cancelled."""


async def _cancel_all(
    tasks: set[asyncio.Task[Any]] | set[asyncio.Future[Any]], bound_s: float = CANCEL_BOUND_S
) -> None:
    """Cancels tasks and waits until every one is done, cancelling again those still running
    every 50 ms: a cancellation redis-py swallowed (8.0.0 and 8.1.0 do, now and then) is sent
    again rather than waited out. Past bound_s the rest are left to end on their own (logged)."""
    every: list[asyncio.Future[Any]] = list(tasks)
    pending: set[asyncio.Future[Any]] = set(every)
    deadline = time.monotonic() + bound_s
    while pending:
        if time.monotonic() > deadline:
            log.error("emq: %d worker tasks did not end when cancelled; leaving them", len(pending))
            break
        for t in pending:
            t.cancel()
        _, pending = await asyncio.wait(pending, timeout=0.05)
    for t in every:
        if t.done() and not t.cancelled():
            t.exception()  # retrieved: a failure of a task being torn down is not news


_AWAITABLE_RE: Final = re.compile(r"\b(Awaitable|Coroutine|Future|Task)\b")


def _is_async(h: Callable[..., Any]) -> bool:
    """Whether the worker calls h on the event loop: a coroutine function (a partial of one, or an
    object whose __call__ is one), or a callable annotated to return an awaitable (-> Awaitable[
    None], as the Handler type reads: called in the runner task, as in 2.2.0). Anything else is a
    plain function, run in the thread pool."""
    while isinstance(h, functools.partial):
        h = h.func
    call = getattr(h, "__call__", None)  # noqa: B004 - the method itself, not callable()
    if inspect.iscoroutinefunction(h) or (call is not None and inspect.iscoroutinefunction(call)):
        return True
    for f in (h, call):
        if f is None:
            continue
        try:
            ret = inspect.signature(f).return_annotation
        except (TypeError, ValueError):
            continue
        if ret is inspect.Signature.empty:
            continue
        return _AWAITABLE_RE.search(ret if isinstance(ret, str) else repr(ret)) is not None
    return False


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(eq=False)
class _Inflight:
    """A job a handler is running."""

    job: Job
    deadline_ms: int
    task: asyncio.Task[Any] | None = None
    lost: bool = False
    """The lease was lost (an extension was refused as stale)."""
    handed_back: bool = False
    """Shutdown handed the job back."""
    timed_out: bool = False
    """The handler ran longer than the worker's job_timeout and was cancelled."""
    cancelled: bool = False
    """The job was cancelled (echomq 2.5.0: a message on the queue's cancel channel)."""
    counted: bool = False
    """The cancellation was counted."""


@dataclass
class _HeadPool:
    """The ids at the head of the pending set as the worker last read them, less those its calls
    took since: each claiming call takes its ids from the pool, so that concurrent calls of one
    worker never ask for the same id. Another claimer may have taken a pooled id meanwhile; the
    claim scripts skip it.

    A read of the head may come back after calls sent later (they run on other connections), so
    a fill leaves out the ids of calls still in flight and of calls answered since the read was
    sent: those ran after the read, or may have."""

    ids: list[str] = field(default_factory=list)
    at: int = 0
    flight: set[str] = field(default_factory=set)
    """The ids of calls sent and not yet answered."""
    tick: int = 0
    """Counts the answers of calls."""
    answered: collections.deque[tuple[int, str]] = field(default_factory=collections.deque)
    """The ids of answered calls with the tick of their answer, while a read older than it is
    outstanding."""
    reads: collections.Counter[int] = field(default_factory=collections.Counter)
    """The ticks at which the outstanding reads were sent."""

    @property
    def size(self) -> int:
        return len(self.ids) - self.at

    def take(self, n: int) -> list[str]:
        """Takes up to n ids off the pool; give them back to done() once their call answered."""
        end = min(len(self.ids), self.at + n)
        out = self.ids[self.at : end]
        self.at = end
        self.flight.update(out)
        return out

    def done(self, ids: Sequence[str]) -> None:
        """The call of ids was answered (or failed)."""
        if not ids:
            return
        self.flight.difference_update(ids)
        self.tick += 1
        if self.reads:
            self.answered.extend((self.tick, i) for i in ids)

    def begin_read(self) -> int:
        """A read of the head is sent; returns its tick for fill."""
        self.reads[self.tick] += 1
        return self.tick

    def end_read(self, t: int) -> None:
        """The read sent at tick t was answered (or failed)."""
        self.reads[t] -= 1
        if self.reads[t] <= 0:
            del self.reads[t]
        lo = min(self.reads) if self.reads else self.tick + 1
        while self.answered and self.answered[0][0] <= lo:
            self.answered.popleft()

    def fill(self, ids: Sequence[str], t: int) -> None:
        """Replaces the pool with the read of the head sent at tick t, less the ids of calls in
        flight and of calls answered since t."""
        skip = set(self.flight)
        skip.update(i for tk, i in self.answered if tk > t)
        self.ids = [i for i in ids if i not in skip] if skip else list(ids)
        self.at = 0

    def clear(self) -> None:
        self.ids = []
        self.at = 0


class Worker:
    """Runs a handler over the jobs of one queue: ``await Worker(queue, handler).run()`` until
    ``stop()``.

    Idle, it blocks on the queue's doorbell (BLPOP on a connection of its own, for up to wait_ms)
    instead of polling. It claims up to ``batch`` jobs in one call when several of its
    ``concurrency`` handlers are idle, and completes a job and leases the next one in one call.
    While a handler runs, its lease is extended every third of ``lease_ms``; an extension refused
    as stale (another worker took the job after its lease expired) cancels the handler. A handler
    that raises hands its job back to run again after ``backoff(attempt)`` ms, until the job has
    been claimed ``max_attempts`` times; then it is buried (a PermanentError buries it at once).
    Every ``maintenance_ms`` the worker holding the queue's maintenance lock promotes due jobs and
    reaps expired leases. Refusals because the lease was lost are counted as stale (they are the
    normal outcome of a handler slower than its lease). Counts go to ``metrics`` (default the
    client's); notices to ``logger`` (default this module's logger). ``await close()`` stops it and
    waits for run().
    """

    @overload
    def __init__(
        self,
        queue: Queue,
        handler: Handler,
        *,
        concurrency: int = ...,
        lease_ms: int = ...,
        batch: int | None = ...,
        max_attempts: int = ...,
        backoff: Callable[[int], float] | None = ...,
        wait_ms: int = ...,
        maintenance_ms: int = ...,
        shutdown_timeout_ms: int = ...,
        logger: logging.Logger | None = ...,
        metrics: Metrics | None = ...,
        lease: Duration | None = ...,
        wait: Duration | None = ...,
        maintenance_every: Duration | None = ...,
        shutdown_timeout: Duration | None = ...,
        executor: Executor | None = ...,
        in_thread: bool | None = ...,
        name: str | None = ...,
        job_timeout_ms: int | None = ...,
        job_timeout: Duration | None = ...,
        keep_results: Retention | None = ...,
        events_max: int | None = ...,
    ) -> None: ...

    @overload
    def __init__(
        self,
        queue: Queue,
        handler: SyncHandler,
        *,
        concurrency: int = ...,
        lease_ms: int = ...,
        batch: int | None = ...,
        max_attempts: int = ...,
        backoff: Callable[[int], float] | None = ...,
        wait_ms: int = ...,
        maintenance_ms: int = ...,
        shutdown_timeout_ms: int = ...,
        logger: logging.Logger | None = ...,
        metrics: Metrics | None = ...,
        lease: Duration | None = ...,
        wait: Duration | None = ...,
        maintenance_every: Duration | None = ...,
        shutdown_timeout: Duration | None = ...,
        executor: Executor | None = ...,
        in_thread: bool | None = ...,
        name: str | None = ...,
        job_timeout_ms: int | None = ...,
        job_timeout: Duration | None = ...,
        keep_results: Retention | None = ...,
        events_max: int | None = ...,
    ) -> None: ...

    @overload
    def __init__(
        self,
        queue: TypedQueue[T],
        handler: Callable[[TypedJob[T]], Awaitable[None]],
        *,
        concurrency: int = ...,
        lease_ms: int = ...,
        batch: int | None = ...,
        max_attempts: int = ...,
        backoff: Callable[[int], float] | None = ...,
        wait_ms: int = ...,
        maintenance_ms: int = ...,
        shutdown_timeout_ms: int = ...,
        logger: logging.Logger | None = ...,
        metrics: Metrics | None = ...,
        lease: Duration | None = ...,
        wait: Duration | None = ...,
        maintenance_every: Duration | None = ...,
        shutdown_timeout: Duration | None = ...,
        executor: Executor | None = ...,
        in_thread: bool | None = ...,
        name: str | None = ...,
        job_timeout_ms: int | None = ...,
        job_timeout: Duration | None = ...,
        keep_results: Retention | None = ...,
        events_max: int | None = ...,
    ) -> None: ...

    @overload
    def __init__(
        self,
        queue: TypedQueue[T],
        handler: Callable[[TypedJob[T]], None],
        *,
        concurrency: int = ...,
        lease_ms: int = ...,
        batch: int | None = ...,
        max_attempts: int = ...,
        backoff: Callable[[int], float] | None = ...,
        wait_ms: int = ...,
        maintenance_ms: int = ...,
        shutdown_timeout_ms: int = ...,
        logger: logging.Logger | None = ...,
        metrics: Metrics | None = ...,
        lease: Duration | None = ...,
        wait: Duration | None = ...,
        maintenance_every: Duration | None = ...,
        shutdown_timeout: Duration | None = ...,
        executor: Executor | None = ...,
        in_thread: bool | None = ...,
        name: str | None = ...,
        job_timeout_ms: int | None = ...,
        job_timeout: Duration | None = ...,
        keep_results: Retention | None = ...,
        events_max: int | None = ...,
    ) -> None: ...

    @overload
    def __init__(
        self,
        queue: Queue,
        handler: Callable[[Job], object],
        *,
        concurrency: int = ...,
        lease_ms: int = ...,
        batch: int | None = ...,
        max_attempts: int = ...,
        backoff: Callable[[int], float] | None = ...,
        wait_ms: int = ...,
        maintenance_ms: int = ...,
        shutdown_timeout_ms: int = ...,
        logger: logging.Logger | None = ...,
        metrics: Metrics | None = ...,
        lease: Duration | None = ...,
        wait: Duration | None = ...,
        maintenance_every: Duration | None = ...,
        shutdown_timeout: Duration | None = ...,
        executor: Executor | None = ...,
        in_thread: bool | None = ...,
        name: str | None = ...,
        job_timeout_ms: int | None = ...,
        job_timeout: Duration | None = ...,
        keep_results: Retention | None = ...,
        events_max: int | None = ...,
    ) -> None: ...

    @overload
    def __init__(
        self,
        queue: TypedQueue[T],
        handler: Callable[[TypedJob[T]], object],
        *,
        concurrency: int = ...,
        lease_ms: int = ...,
        batch: int | None = ...,
        max_attempts: int = ...,
        backoff: Callable[[int], float] | None = ...,
        wait_ms: int = ...,
        maintenance_ms: int = ...,
        shutdown_timeout_ms: int = ...,
        logger: logging.Logger | None = ...,
        metrics: Metrics | None = ...,
        lease: Duration | None = ...,
        wait: Duration | None = ...,
        maintenance_every: Duration | None = ...,
        shutdown_timeout: Duration | None = ...,
        executor: Executor | None = ...,
        in_thread: bool | None = ...,
        name: str | None = ...,
        job_timeout_ms: int | None = ...,
        job_timeout: Duration | None = ...,
        keep_results: Retention | None = ...,
        events_max: int | None = ...,
    ) -> None: ...

    def __init__(
        self,
        queue: Queue | TypedQueue[Any],
        handler: Callable[[Any], Any],
        *,
        concurrency: int = 10,
        lease_ms: int | None = None,
        batch: int | None = None,
        max_attempts: int = 25,
        backoff: Callable[[int], float] | None = None,
        wait_ms: int | None = None,
        maintenance_ms: int | None = None,
        shutdown_timeout_ms: int | None = None,
        logger: logging.Logger | None = None,
        metrics: Metrics | None = None,
        lease: Duration | None = None,
        wait: Duration | None = None,
        maintenance_every: Duration | None = None,
        shutdown_timeout: Duration | None = None,
        executor: Executor | None = None,
        in_thread: bool | None = None,
        name: str | None = None,
        job_timeout_ms: int | None = None,
        job_timeout: Duration | None = None,
        keep_results: Retention | None = None,
        events_max: int | None = None,
    ) -> None:
        """Makes a worker for queue that runs handler. concurrency is how many handlers run at
        once; lease_ms how long a job is leased (extended while its handler runs); batch the most
        jobs one claim leases (default and at most concurrency); max_attempts how many claims a
        job gets (a job pushed with attempts of its own gets those); backoff how long a failed job
        waits before it runs again: a BackoffPolicy (default DEFAULT_BACKOFF: exponential from 1
        s up to 10 minutes, jittered), or a function of the attempt that failed (1 for the first)
        to a delay in ms (a fixed delay for that attempt; exponential_backoff(base, max) is one);
        a job pushed with a backoff of its own waits by that; wait_ms the longest an idle worker
        blocks on the doorbell before it looks for work anyway; maintenance_ms how often the queue
        is maintained (0 or less: never by this worker); shutdown_timeout_ms how long run() waits,
        once stopped, for running handlers before it hands their jobs back and cancels them
        (negative: at once). Bad values raise an ArgumentError (an ArgumentTypeError, which is a
        TypeError too, for a value of the wrong type).

        Every duration may be given in seconds instead, as an int, a float or a
        datetime.timedelta: ``lease`` for lease_ms, ``wait`` for wait_ms, ``maintenance_every``
        for maintenance_ms (0: never), ``shutdown_timeout`` for shutdown_timeout_ms; the ``_ms``
        parameters take a timedelta too. Giving both forms of one is a TypeError.

        Why an attempt failed is recorded with it (echomq 2.3.0: Queue.failures, JobInfo.failures):
        class error for a handler that raised, timeout for one that ran longer than
        ``job_timeout_ms`` (or ``job_timeout``, in seconds; default none: a handler may run as long
        as it keeps its lease), whose task is then cancelled (JOB_TIMEOUT), with ``name`` (default
        ``<hostname>:<pid>``) as the worker and the error's text. Maintenance records each lease it
        takes back as lost (lease_lost) and deletes the records whose rows are gone, a bounded
        slice (SWEEP_COUNT) per tick; completing a job that ran before (token > 1) deletes its
        record in the completion's round trip.

        Results (echomq 2.4.0): what the handler returns is the job's result. ``keep_results``
        (a Retention) says how many completion records (time, attempt, result) the queue keeps
        and for how long: the default, None (Retention(): count 0), keeps none, like BullMQ's
        ``removeOnComplete: true``; ``Retention.keep(1000, age=86400)`` keeps the last 1000 of
        the last day, readable with Queue.lookup and Queue.output once the job is gone. Inside
        the handler ``await job.report_progress(x)`` reports progress. ``events_max`` bounds
        the queue's events stream for what this worker writes (default the client's,
        DEFAULT_EVENTS_MAX; 0 writes no events).

        On a TypedQueue (``client.queue(name, codec=...)``) the handler gets a TypedJob whose
        ``value`` is the decoded payload; a payload that does not decode is buried at once.

        The handler is an ``async def`` (a coroutine function, or a callable annotated to return
        an awaitable, ``-> Awaitable[None]``), run on the event loop, or a plain ``def``, run in a
        thread pool so that blocking code does not stall the loop (``in_thread`` True or False
        decides it instead): ``executor`` when given, else a pool of
        ``concurrency`` threads the worker makes and shuts down when run() returns. A plain
        handler cannot be interrupted: when its lease is lost or a shutdown's deadline passes,
        its job is given up as for an async handler (handed back, or left to the new lease
        holder), while the thread runs the function to its end and its outcome is ignored.
        """
        if not callable(handler):
            raise ArgumentTypeError("handler", "an async or a plain function of a Job", handler)
        lease_v = pick_ms("lease_ms", lease_ms, "lease", lease, 30_000)
        wait_v = pick_ms("wait_ms", wait_ms, "wait", wait, 1000)
        maint_v = pick_ms(
            "maintenance_ms",
            maintenance_ms,
            "maintenance_every",
            maintenance_every,
            1000,
            allow_zero=True,
        )
        shut_v = pick_ms(
            "shutdown_timeout_ms",
            shutdown_timeout_ms,
            "shutdown_timeout",
            shutdown_timeout,
            30_000,
            allow_zero=True,
        )
        timeout_v = pick_ms("job_timeout_ms", job_timeout_ms, "job_timeout", job_timeout, 0)
        if not isinstance(timeout_v, int) or isinstance(timeout_v, bool):
            raise ArgumentTypeError("job_timeout", "an int", timeout_v)
        if timeout_v < 0:
            raise ArgumentError(f"job timeout {timeout_v!r} is not a non-negative integer")
        if name is not None and not isinstance(name, str):
            raise ArgumentTypeError("name", "a str", name)
        for what, v in (("concurrency", concurrency), ("lease", lease_v), ("wait", wait_v)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise ArgumentTypeError(what, "an int", v)
            if v < 1:
                raise ArgumentError(f"{what} {v!r} is not a positive integer")
        if not isinstance(max_attempts, int) or isinstance(max_attempts, bool):
            raise ArgumentTypeError("max_attempts", "an int", max_attempts)
        if max_attempts < 1:
            raise ArgumentError(f"max attempts {max_attempts!r} is not a positive integer")
        self._codec: Codec[Any] | None = None
        if isinstance(queue, TypedQueue):
            raw, self._codec = queue.raw, queue.codec
        elif isinstance(queue, Queue):
            raw = queue
        else:
            raise ArgumentTypeError("queue", "a Queue (client.queue(name))", queue)
        self.queue: Queue = raw
        """The queue the worker serves (the plain Queue of a TypedQueue)."""
        self._h = handler
        self._sync = not _is_async(handler) if in_thread is None else bool(in_thread)
        self._executor = executor
        self._own_executor: ThreadPoolExecutor | None = None
        self.concurrency = concurrency
        """How many handlers run at once."""
        self.lease_ms: int = lease_v
        """How long a job is leased."""
        self.batch = max(1, min(batch if batch is not None else concurrency, concurrency))
        """The most jobs one claim leases."""
        self.max_attempts = max_attempts
        """How many claims a job gets."""
        if backoff is not None and not callable(backoff):
            raise ArgumentTypeError(
                "backoff", "an echomq.BackoffPolicy or a function of the attempt", backoff
            )
        self._backoff: Callable[[int], float] = backoff or DEFAULT_BACKOFF
        if keep_results is not None and not isinstance(keep_results, Retention):
            raise ArgumentTypeError("keep_results", "an echomq.Retention or None", keep_results)
        self.keep_results: Retention = keep_results or Retention()
        """How many completion records (and how old) the queue keeps; count 0 keeps none."""
        if events_max is None:
            events_max = raw.client.events_max
        if isinstance(events_max, bool) or not isinstance(events_max, int):
            raise ArgumentTypeError("events_max", "an int", events_max)
        if events_max < 0:
            raise ArgumentError(f"events max {events_max!r} is not a non-negative integer")
        self.events_max: int = events_max
        """The events stream's approximate bound for this worker's calls; 0 writes none."""
        self.wait_ms: int = wait_v
        """The longest an idle worker blocks on the doorbell."""
        self.maintenance_ms: int = maint_v
        """How often the queue is maintained; 0 or less: never by this worker."""
        self.shutdown_timeout_ms = max(0, shut_v)
        """How long run() waits for running handlers once stopped."""
        self.job_timeout_ms: int = timeout_v
        """How long a handler may run before it is cancelled and its attempt recorded as a
        timeout; 0: no bound."""
        self.name: str = name if name else f"{socket.gethostname()}:{os.getpid()}"
        """The worker's name, as the failure records name the worker that ran an attempt."""
        self._sweep_cursors: dict[str, int] = {}
        self.log = logger or log
        """Where the worker's notices go."""
        self.metrics: Metrics = metrics or raw.client.metrics
        """Where the worker's counts go (default the client's)."""
        self._owner = f"{raw.client.owner}/{raw.name}/{secrets.token_hex(4)}"
        self._pool = _HeadPool()
        self._pool_size = max(16, 4 * self.batch)
        self._running: set[_Inflight] = set()
        self._runners: set[asyncio.Task[None]] = set()
        self._aux: set[asyncio.Task[Any]] = set()
        self._timers: set[asyncio.TimerHandle] = set()
        self._idle = concurrency
        self._draining = False
        self._started = False
        self._stop: asyncio.Event | None = None
        self._wake: asyncio.Event | None = None
        self._bell: Redis | None = None
        self._admit_ms: int | None = None
        """When the last claim leased nothing because the queue's rate limit held it back
        (echomq 2.8.0): the milliseconds until the limit admits a start, which bound the next
        wait on the doorbell; None otherwise."""
        self._finished: asyncio.Event | None = None
        self._holding: dict[str, _Inflight] = {}
        """The jobs this worker holds, by id, from the start of their handler to their settle."""
        self._listening: asyncio.Event | None = None
        self._dedup_cursor = "0"

    def __repr__(self) -> str:
        state = (
            "stopped"
            if self._finished is not None and self._finished.is_set()
            else "stopping"
            if self._draining
            else "working"
            if self._started
            else "new"
        )
        return (
            f"Worker(queue={self.queue.name!r}, concurrency={self.concurrency}, "
            f"running={len(self._running)}, {state})"
        )

    # ------------------------------------------------------------ running

    def stop(self) -> None:
        """Stops the worker: run() stops claiming, shuts down gracefully and returns."""
        self._draining = True
        if self._stop is not None:
            self._stop.set()
        if self._wake is not None:
            self._wake.set()

    async def close(self) -> None:
        """Stops the worker and waits until run() returned (at once when it never ran)."""
        self.stop()
        if self._finished is not None:
            await self._finished.wait()

    async def run(self) -> None:
        """Claims and runs jobs until stop(), then shuts down gracefully: it stops claiming, lets
        running handlers finish (completing their jobs without claiming more) for up to
        shutdown_timeout_ms, then hands the jobs of handlers still running back to the queue at
        once (they run again elsewhere without waiting out their lease) and cancels their tasks.

        Cancelling run() itself hands back every running job at once, cancels the handlers and
        raises the CancelledError. A Worker runs once."""
        if self._started:
            raise ArgumentError("a worker runs once")
        self._started = True
        self._finished = asyncio.Event()
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()
        if self._draining:
            self._stop.set()
        self._bell = self.queue.client.redis.client()
        held = asyncio.Event()
        self._listening = asyncio.Event()
        self._spawn(self._extender(), "emq lease extender")
        self._spawn(self._canceller(), "emq cancel listener")
        if self.maintenance_ms > 0:
            self._spawn(self._maintainer(held), "emq maintenance")
        try:
            # A job cancelled as soon as it starts reaches its handler: listen before claiming.
            try:
                async with asyncio.timeout(SUBSCRIBE_WAIT_S):
                    await self._listening.wait()
            except TimeoutError:
                self.log.warning(
                    "emq: the cancel channel of queue %s is not subscribed yet; claiming anyway",
                    self.queue.name,
                )
            await self._claimer()
            self._draining = True
            await self._drain()
        except asyncio.CancelledError:
            self._draining = True
            await asyncio.shield(self._abort())
            raise
        finally:
            for h in self._timers:
                h.cancel()
            self._timers.clear()
            await _cancel_all(self._aux)
            if held.is_set():
                await self._unlock()
            ex, self._own_executor = self._own_executor, None
            if ex is not None:
                # Threads still running a handler that overran the shutdown finish on their own.
                ex.shutdown(wait=False, cancel_futures=True)
            bell, self._bell = self._bell, None
            if bell is not None:
                try:
                    await bell.aclose()
                except Exception as err:
                    self.log.debug("emq: closing the doorbell connection failed: %s", err)
            self._finished.set()

    def _spawn(self, coro: Awaitable[Any], name: str) -> None:
        t: asyncio.Task[Any] = asyncio.ensure_future(coro)
        t.set_name(name)
        self._aux.add(t)
        t.add_done_callback(self._aux.discard)

    async def _drain(self) -> None:
        if await self._within(self.shutdown_timeout_ms / 1000):
            return
        await self._hand_back()
        for fl in list(self._running):
            if fl.task is not None:
                fl.task.cancel(SHUTDOWN)
        if not await self._within(1.0):
            self.log.warning(
                "emq: handlers still running after the shutdown deadline; their jobs were "
                "handed back (queue %s)",
                self.queue.name,
            )

    async def _abort(self) -> None:
        """run() was cancelled: hand every running job back at once and cancel the handlers."""
        await self._hand_back()
        for fl in list(self._running):
            if fl.task is not None:
                fl.task.cancel(SHUTDOWN)
        for r in list(self._runners):
            r.cancel()
        if self._runners:
            await asyncio.wait(list(self._runners), timeout=1.0)

    async def _within(self, seconds: float) -> bool:
        """Whether every runner returned within seconds."""
        runners = list(self._runners)
        if not runners:
            return True
        if seconds > 0:
            await asyncio.wait(runners, timeout=seconds)
        return not self._runners

    async def _claimer(self) -> None:
        """Leases jobs for idle runners until stop(), blocking on the doorbell when the queue is
        empty."""
        assert self._stop is not None and self._wake is not None
        pause = 0.05
        while not self._stop.is_set():
            if self._idle == 0:
                self._wake.clear()
                await self._wake.wait()
                continue
            n = min(self._idle, self.batch)
            jobs: list[Job] = []
            failed = False
            try:
                # Not cut short by stop(): a lease the server granted must reach a runner, or it
                # would sit out its lease. A claim that was never sent (the server out of reach)
                # stops waiting for the connection at stop(), though: nothing of it ran.
                with giving_up_on(self._stop):
                    async with asyncio.timeout(OP_TIMEOUT_S):
                        jobs = await self._claim(n)
            except asyncio.CancelledError:
                raise
            except Exception as err:
                failed = True
                if not self._stop.is_set():
                    self.log.warning("emq: claiming failed; retrying in %.2fs: %s", pause, err)
            for j in jobs:
                self._start(j)
            if self._stop.is_set():
                return
            if failed:
                await self._sleep(pause)
                pause = min(pause * 2, 5.0)
            elif not jobs:
                pause = 0.05
                await self._wait_bell(self._admit_ms)
            else:
                pause = 0.05

    async def _sleep(self, seconds: float) -> None:
        """Sleeps for seconds, or until stop()."""
        assert self._stop is not None
        try:
            async with asyncio.timeout(seconds):
                await self._stop.wait()
        except TimeoutError:
            pass

    async def _due_in_ms(self) -> int | None:
        """How long until the schedule's earliest job is due, by the server's clock (its head's
        score and TIME, one round trip); None when nothing is scheduled."""
        c = self.queue.client
        key = self.queue.keys.schedule

        async def attempt() -> int | None:
            async with c.redis.pipeline(transaction=False) as pipe:
                pipe.zrange(key, 0, 0, withscores=True)
                pipe.time()
                res: list[Any] = await pipe.execute()
            if not res[0]:
                return None
            sec, usec = res[1]
            return int(float(res[0][0][1])) - (int(sec) * 1000 + int(usec) // 1000)

        return await c._resend(attempt)

    async def _wait_bell(self, admit_ms: int | None = None) -> None:
        """Blocks on the queue's doorbell for up to wait_ms, or until stop(), or until the
        schedule's earliest job is due (echomq 2.4.0): then it promotes the due jobs itself
        (promote_ids, safe to race with other workers' and the maintenance's), so that a delayed
        job starts within milliseconds of its run-at. A push or a failure that schedules a new
        earliest job rings the doorbell, and the next wait is measured again. admit_ms (echomq
        2.8.0: the queue's rate limit held the last claim back) bounds the wait too: the limit
        admits a start then.

        The run-at is kept by a timer of this loop (a blocking pop's own timeout is only as
        precise as the server's clock tick, 100 ms by default): when it fires first, the worker
        promotes, which rings the doorbell its pop is waiting on. The rate limit's admission is
        kept likewise: when it comes first, the worker rings the doorbell itself (ring), which
        ends its pop (or another idle worker's, which claims then)."""
        assert self._stop is not None and self._bell is not None
        wait_ms = self.wait_ms
        due_in: int | None = None
        try:
            with giving_up_on(self._stop):  # a read never sent: stop() ends its wait
                due_in = await self._due_in_ms()
        except asyncio.CancelledError:
            raise
        except Exception as e:
            self.log.debug("emq: reading the schedule's head failed: %s", e)
        if due_in is not None and due_in <= 0:
            if await self._promote() > 0:
                return
            # Due but not promotable (its row is not scheduled: a foreign or broken entry):
            # wait as if nothing were scheduled rather than spin on it.
            due_in = None
        timed = due_in is not None and due_in < wait_ms
        if due_in is not None and timed:
            wait_ms = due_in
        # the rate limit admits a start before the run-at and wait_ms: ring then, not promote
        paced = admit_ms is not None and 0 < admit_ms < wait_ms
        if admit_ms is not None and paced:
            wait_ms, timed = admit_ms, True
        wait_s = wait_ms / 1000
        bell = asyncio.ensure_future(self._bell.blpop([self.queue.keys.wake], timeout=wait_s))
        stop = asyncio.ensure_future(self._stop.wait())
        promoted = False
        try:
            done, _ = await asyncio.wait(
                {bell, stop},
                timeout=wait_s if timed else wait_s + 1.0,
                return_when=asyncio.FIRST_COMPLETED,
            )
            if timed and not done:
                # The run-at (or the admission) came before the pop's timeout: promote, which
                # rings the bell (or ring it).
                promoted = True
                await (self._ring() if paced else self._promote())
                done, _ = await asyncio.wait(
                    {bell, stop}, timeout=wait_s + 1.0, return_when=asyncio.FIRST_COMPLETED
                )
        finally:
            stop.cancel()
            if not bell.done():
                await _cancel_all({bell})
        if bell in done and not bell.cancelled():
            failed = bell.exception()
            if failed is not None and not self._stop.is_set():
                self.log.debug("emq: waiting on the doorbell failed: %s", failed)
                await self._sleep(min(wait_s, 0.1))
            elif failed is None and bell.result() is None and timed and not promoted:
                if not self._stop.is_set() and not paced:
                    await self._promote()  # the pop ended at the earliest job's run-at

    async def _ring(self) -> None:
        """Rings the queue's doorbell (the ring script) at the time the queue's rate limit admits
        a start (echomq 2.8.0); a failure is logged, and the pop ends at its own timeout."""
        try:
            await self.queue.ring()
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self.log.debug("emq: ringing the doorbell failed: %s", err)

    def _start(self, job: Job) -> None:
        self._idle -= 1
        t = asyncio.ensure_future(self._runner(job))
        t.set_name(f"emq runner {job.id}")
        self._runners.add(t)
        t.add_done_callback(self._runner_done)

    def _runner_done(self, t: asyncio.Task[None]) -> None:
        self._runners.discard(t)
        self._idle += 1
        if not t.cancelled() and t.exception() is not None:
            self.log.error("emq: a runner failed: %r", t.exception())
        if self._wake is not None:
            self._wake.set()

    async def _runner(self, first: Job) -> None:
        """Runs a job, and the jobs each completion claims next; a job leased while the worker
        stopped is handed back unstarted."""
        job: Job | None = first
        while job is not None:
            if self._draining:
                await self._return_unstarted(job)
                return
            job = await self._process(job)

    async def _return_unstarted(self, job: Job) -> None:
        """Hands back a job leased by a call that was answered after stop(): it runs elsewhere
        without waiting out its lease."""
        try:
            await self.queue.retry(job.id, job.token, 0)
        except Exception as err:
            self._settle_error(job, "hand-back", err)
            return
        self.metrics.add(Counter.HANDED_BACK, self.queue.name, 1)
        self.log.info("emq: job %s was leased as the worker stopped; handed back", job.id)
        await self._promote()

    # ------------------------------------------------------------ claiming

    async def _claim(self, n: int) -> list[Job]:
        """Claims up to n jobs with claim_rate_ids: the ids from the head pool, read again (a
        ZRANGE of its own) when the pool is empty; read again, up to PEEK_ATTEMPTS times, when
        another claimer took every id, unless the first claim leased nothing because the queue's
        policy holds claims back (echomq 2.7.0: paused, or at its cap; 2.8.0: its rate limit,
        which also sets _admit_ms): then none at once."""
        self._admit_ms = None
        for attempt in range(1, PEEK_ATTEMPTS + 1):
            if self._pool.size == 0:
                await self._peek()
                if self._pool.size == 0:
                    return []
            ids = self._pool.take(n)
            try:
                reply, refilled = await self._call(self._claim_exec(ids), refill=True)
            finally:
                self._pool.done(ids)
            jobs = await self._records(reply, ClaimRateIdsReply.decode)
            if len(jobs) < len(ids) and not refilled:
                self._pool.clear()  # another claimer took some: read the head again
            if jobs or attempt >= PEEK_ATTEMPTS:
                return jobs
            if attempt == 1:
                held = await self._held_back()
                if held is not None:
                    # paused, at its cap or held by its rate limit: wait on the doorbell as on an
                    # empty queue (under the rate limit until it admits a start)
                    self._admit_ms = held or None
                    return []
        return []

    async def _held_back(self) -> int | None:
        """Whether the queue's policy leases nothing now, read with read_policy (echomq 2.8.0):
        0 when it is paused or as many of its jobs are leased as its cap allows (echomq 2.7.0),
        the milliseconds until it admits a start when its rate limit holds the starts back, None
        when nothing holds them (another claimer took the ids). A claim that offered ids and
        leased nothing asks, so that the claimer waits on the doorbell (which a resume, a freed
        lease or a changed limit rings) instead of reading the head again."""
        p = await self.queue.policy()
        if p.paused or 0 < p.concurrency <= p.leased:
            return 0
        return p.admit_in_ms if p.admit_in_ms > 0 else None

    async def _peek(self) -> None:
        """Fills the pool with the ids at the head of the pending set, oldest first, as read (not
        parsed, so that an id a foreign writer planted is leased and buried rather than stalling
        the head)."""
        r = self.queue.client.redis
        key, n = self.queue.keys.pending, self._pool_size

        async def attempt() -> list[str]:
            return [_text(m) for m in await r.zrange(key, 0, n - 1)]

        t = self._pool.begin_read()
        try:
            self._pool.fill(await self.queue.client._resend(attempt), t)
        finally:
            self._pool.end_read(t)

    def _claim_exec(self, ids: Sequence[str]) -> ScriptExec:
        """The claim_rate_ids call of ids as read from the server (echomq 2.8.0: claim_ids in
        either layout, honouring the queue's policy and rate limit)."""
        k = self.queue.keys
        return ScriptExec(
            script=SCRIPT_CLAIM_RATE_IDS,
            keys=(
                k.pending,
                k.active,
                k.running,
                k.policy,
                k.starts,
                k.wake,
                *(k.row_prefix + i for i in ids),
            ),
            argv=(self.lease_ms, *ids),
        )

    def _complete_exec(self, job: Job, ids: Sequence[str], result: bytes = b"") -> ScriptExec:
        """The complete_rate_ids call of job (its id parsed when it was leased) leasing ids as
        read from the server (not parsed: a planted one is leased and buried); echomq 2.8.0:
        complete_result_claim_ids in either layout, leasing as the queue's policy and rate limit
        allow."""
        k = self.queue.keys
        keep = self.keep_results
        return ScriptExec(
            script=SCRIPT_COMPLETE_RATE_IDS,
            keys=(
                k.row(job.id),
                k.active,
                k.running,
                k.policy,
                k.starts,
                k.pending,
                k.wake,
                k.results,
                k.result_times,
                k.progress,
                k.failures,
                k.options,
                k.events,
                k.counters,
                *(k.row_prefix + i for i in ids),
            ),
            argv=(
                job.id,
                job.token,
                self.lease_ms,
                result,
                keep.count,
                keep.age_ms,
                self.events_max,
                *ids,
            ),
        )

    async def _report(self, job: Job, progress: object) -> None:
        """Job.report_progress of a job this worker runs: the progress call with its token."""
        await self.queue.report_progress(job.id, job.token, progress, events_max=self.events_max)

    async def _call(
        self, x: ScriptExec, refill: bool, after: Sequence[ScriptExec] = ()
    ) -> tuple[Any, bool]:
        """Sends one claiming call, and the calls of after pipelined right behind it (their
        failures are logged, not raised: they tidy up). When refill is set, the pool runs low
        (under two batches) and no read of the head is on its way, a ZRANGE of four batches of
        the head goes in the same round trip, last, and refills the pool. Returns the script's
        reply and whether the pool was refilled. Never resent."""
        c = self.queue.client
        r = c.redis
        read = refill and self._pool.size < 2 * self.batch and not self._pool.reads
        if not read and not after:
            # the pool holds two batches, or a read of the head is already on its way
            return await c._once(lambda: run_script(r, x)), False
        key, n = self.queue.keys.pending, self._pool_size

        async def attempt() -> list[Any]:
            async with r.pipeline(transaction=False) as pipe:
                pipe_script(pipe, x)
                for a in after:
                    pipe_script(pipe, a)
                if read:
                    pipe.zrange(key, 0, n - 1)
                res: list[Any] = await pipe.execute(raise_on_error=False)
            return res

        t = self._pool.begin_read() if read else None
        z: Any = None
        try:
            res = await c._once(attempt)
            if read:
                z = res[-1]
                if t is not None and not isinstance(z, BaseException) and isinstance(z, list):
                    self._pool.fill([_text(m) for m in z], t)
        finally:
            if t is not None:
                self._pool.end_read(t)
        s = res[0]
        if isinstance(s, NoScriptError):
            reply = await c._once(lambda: run_script(r, x))
        elif isinstance(s, BaseException):
            raise script_error(x.script.name, s)
        else:
            reply = s
        for a, v in zip(after, res[1 : 1 + len(after)], strict=True):
            if isinstance(s, NoScriptError) or isinstance(v, NoScriptError):
                # it ran before the call it follows, or not at all: once more, after it
                try:
                    v = await c._once(functools.partial(run_script, r, a))
                except Exception as err:
                    v = err
            if isinstance(v, BaseException):
                self.log.debug("emq: %s after %s failed: %s", a.script.name, x.script.name, v)
        return reply, read and not isinstance(z, BaseException)

    async def _records(
        self,
        reply: Any,
        dec: Callable[[Any], ClaimRateIdsReply | CompleteRateIdsReply],
    ) -> list[Job]:
        """Decodes a reply of leased jobs one record at a time: a record that cannot be decoded
        (an id a foreign writer planted) is buried, not left to stall the queue."""
        jobs: list[Job] = []
        for rec in reply if isinstance(reply, list) else []:
            try:
                d = dec(rec)
            except Exception as err:
                await self._bury_raw(rec, err)
                continue
            jobs.append(Job(id=d.id, token=d.token, payload=d.payload, deadline_ms=d.deadline_ms))
        if jobs:
            self.metrics.add(Counter.CLAIMED, self.queue.name, len(jobs))
        return jobs

    async def _bury_raw(self, rec: Any, why: BaseException) -> None:
        """Buries a leased record whose id does not parse, addressing it by the raw member."""
        if not isinstance(rec, list) or len(rec) < 2 or not isinstance(rec[1], int):
            self.log.error("emq: a leased record cannot be read; it will be reaped: %s", why)
            return
        raw, token = _text(rec[0]), rec[1]
        k = self.queue.keys
        s = BuryPolicyCall.SCRIPT
        x = ScriptExec(
            script=SCRIPT_BURY_POLICY,
            keys=tuple(k.key(t) or k.row_prefix + raw for t in s.key_types),
            argv=tuple(token if t == "token" else raw for t in s.arg_types),
        )
        try:
            await self.queue.client._once(lambda: run_script(self.queue.client.redis, x))
        except Exception as err:
            self.log.error("emq: burying an undecodable job %r failed: %s", raw, err)
            return
        self.metrics.add(Counter.BURIED, self.queue.name, 1)
        self.log.error("emq: buried a job that cannot be decoded (%r): %s", raw, why)

    # ------------------------------------------------------------ processing

    async def _process(self, job: Job) -> Job | None:
        """Runs one job and settles it; returns the next job when the completion leased one."""
        fl = _Inflight(job=job, deadline_ms=job.deadline_ms)
        self._holding[job.id] = fl
        try:
            return await self._process_held(fl)
        finally:
            if self._holding.get(job.id) is fl:
                del self._holding[job.id]

    async def _process_held(self, fl: _Inflight) -> Job | None:
        """_process of a job registered as held (so that a cancellation finds it)."""
        job = fl.job
        failure: BaseException | None = None
        result: object = None
        arg: Job = job
        # Job.report_progress, in the handler's context (its task copies the runner's)
        _REPORTER.set(self._report)
        if self._codec is not None:
            try:
                arg = TypedJob(
                    id=job.id,
                    token=job.token,
                    payload=job.payload,
                    deadline_ms=job.deadline_ms,
                    value=self._codec.decode(job.payload),
                )
            except Exception as err:  # no retry decodes it: buried at once
                failure = PermanentError(CodecError(f"the payload does not decode: {err}"))
        if failure is None:
            try:
                # Called here, in the runner's task (its context), and awaited in a task of its
                # own that the extender and the shutdown can cancel; a plain function runs in
                # the thread pool.
                if self._sync:
                    fl.task = asyncio.ensure_future(self._in_thread(arg))
                else:
                    r = self._h(arg)
                    # in_thread=False on a plain function: it ran, here, on the loop
                    if inspect.isawaitable(r):
                        fl.task = asyncio.ensure_future(r)
                    else:
                        result = r
            except Exception as err:  # the handler raised at once, or returned no awaitable
                failure = err
        self._running.add(fl)
        try:
            try:
                if fl.task is not None:
                    if self.job_timeout_ms > 0:
                        await self._timed(fl)
                    else:
                        await fl.task
                    t = fl.task
                    if t.done() and not t.cancelled() and t.exception() is None:
                        result = t.result()
            except asyncio.CancelledError as err:
                me = asyncio.current_task()
                if me is not None and me.cancelling() > 0:
                    raise  # the runner itself is cancelled (run() was cancelled)
                if fl.lost or fl.handed_back or fl.cancelled:
                    if fl.cancelled:
                        self._was_cancelled(fl)
                    return None  # the extension's refusal was counted; the job is not ours
                failure = err
            except Exception as err:
                failure = err
            if fl.cancelled:
                # The handler ended as it was cancelled (it swallowed the cancellation, or
                # finished first): the job is gone, nothing is settled.
                self._running.discard(fl)
                self._was_cancelled(fl)
                return None
            if fl.timed_out and not (fl.lost or fl.handed_back):
                failure = TimeoutError(
                    f"the handler ran longer than the job timeout ({self.job_timeout_ms} ms)"
                )
            # Settling is the runner's: neither extended nor handed back from here on.
            self._running.discard(fl)
            if fl.handed_back:
                return None
            sent = b""
            if failure is None:
                try:
                    sent = encode_value(result, "the handler's result")
                    if len(sent) > RESULT_MAX_BYTES:
                        raise ArgumentError(
                            f"the handler's result has {len(sent)} bytes, over {RESULT_MAX_BYTES}"
                        )
                except Exception as err:  # the result cannot be kept: the attempt failed
                    failure = err
            try:
                async with asyncio.timeout(OP_TIMEOUT_S):
                    if failure is not None:
                        cls = FAILURE_CLASS_TIMEOUT if fl.timed_out else FAILURE_CLASS_ERROR
                        await self._fail(job, failure, cls)
                        return None
                    return await self._complete(job, sent)
            except TimeoutError:
                self.log.error(
                    "emq: settling job %s timed out; its lease will be reaped and it runs again",
                    job.id,
                )
                return None
        finally:
            self._running.discard(fl)

    async def _timed(self, fl: _Inflight) -> None:
        """Awaits the handler's task for up to job_timeout_ms; past it, cancels the task
        (JOB_TIMEOUT), waits a moment for it to end and marks the attempt timed out."""
        t = fl.task
        assert t is not None
        done, _ = await asyncio.wait({t}, timeout=self.job_timeout_ms / 1000)
        if t in done:
            t.result()  # its outcome: returned, raised, or cancelled (lease lost, shutdown)
            return
        if fl.lost or fl.handed_back:
            return
        fl.timed_out = True
        t.cancel(JOB_TIMEOUT)
        # A plain handler's thread runs on; an async one gets a moment to unwind.
        await asyncio.wait({t}, timeout=1.0)
        if t.done() and not t.cancelled():
            t.exception()  # retrieved: the attempt is a timeout whatever it ended with

    async def _in_thread(self, job: Job) -> object:
        """Runs a plain handler in the thread pool (in a copy of the runner's context); an
        awaitable it returns is awaited here, on the loop."""
        ex = self._executor
        if ex is None:
            if self._own_executor is None:
                self._own_executor = ThreadPoolExecutor(
                    max_workers=self.concurrency, thread_name_prefix=f"emq-{self.queue.name}"
                )
            ex = self._own_executor
        ctx = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        out = await loop.run_in_executor(ex, functools.partial(ctx.run, self._h, job))
        if inspect.isawaitable(out):
            return await out
        return out

    async def _complete(self, job: Job, result: bytes = b"") -> Job | None:
        """Completes a job with complete_result_claim_ids (its result kept as keep_results says;
        its failure record, progress and retry policy deleted), leasing the next id of the head
        pool in the same call (none while draining): one call per job in the steady state."""
        q = self.queue.name
        ids = [] if self._draining else self._pool.take(1)
        try:
            reply, refilled = await self._call(
                self._complete_exec(job, ids, result), refill=not self._draining
            )
        except StaleError as err:
            self._stale(job, "complete", err)
            return None
        except Exception as err:
            self.log.error(
                "emq: completing job %s failed; its lease will be reaped and it runs again: %s",
                job.id,
                err,
            )
            return None
        finally:
            self._pool.done(ids)
        self.metrics.add(Counter.COMPLETED, q, 1)
        nxt = await self._records(reply, CompleteRateIdsReply.decode)
        if len(nxt) < len(ids) and not refilled:
            self._pool.clear()
        return nxt[0] if nxt else None

    def _failure(self, why: BaseException, cls: FailureClass) -> Failure:
        """The failure record of an attempt that failed with why: its class, this worker's name,
        and the error's text as Python shows its last line ("ValueError: boom"; for a
        PermanentError, its cause's)."""
        if isinstance(why, PermanentError) and why.__cause__ is not None:
            why = why.__cause__
        text = "".join(traceback.format_exception_only(why)).strip()
        return Failure(failure_class=cls, message=text, worker=self.name)

    async def _fail(
        self, job: Job, why: BaseException, cls: FailureClass = FAILURE_CLASS_ERROR
    ) -> None:
        """Settles a failed attempt with fail (echomq 2.4.0), recording it (class cls): the job
        runs again after its backoff (the job's own policy, else the worker's), or is buried
        when it is out of attempts (its own, else max_attempts) or failed for good (an
        UnrecoverableError or PermanentError)."""
        q = self.queue.name
        f = self._failure(why, cls)
        b = self._backoff
        jitter: int | None = None  # a fresh draw per call, for an exponential policy
        if not isinstance(b, BackoffPolicy):
            # a function of the attempt: its delay, fixed, for this attempt
            b = BackoffPolicy(BACKOFF_FIXED, max(0, int(b(job.token))))
            jitter = 0
        try:
            out = await self.queue.fail(
                job.id,
                job.token,
                f,
                max_attempts=self.max_attempts,
                backoff=b,
                jitter=jitter,
                bury=isinstance(why, PermanentError),
                events_max=self.events_max,
            )
        except Exception as err:
            self._settle_error(job, "fail", err)
            return
        if out.outcome == EVENT_DEAD or out.run_at_ms is None:
            self.metrics.add(Counter.BURIED, q, 1)
            self.log.warning("emq: job %s buried after attempt %d: %r", job.id, job.token, why)
            return
        self.metrics.add(Counter.RETRIED, q, 1)
        delay = max(0, out.run_at_ms - _now_ms())
        if self.maintenance_ms <= 0 or delay < self.maintenance_ms:
            # Sooner than the next maintenance: promote it when it is due.
            loop = asyncio.get_running_loop()
            h: asyncio.TimerHandle | None = None

            def due() -> None:
                if h is not None:
                    self._timers.discard(h)
                self._spawn(self._promote(), "emq promote")

            h = loop.call_later(delay / 1000, due)
            self._timers.add(h)
        self.log.info(
            "emq: job %s failed (attempt %d); it runs again in %d ms: %r",
            job.id,
            job.token,
            delay,
            why,
        )

    def _settle_error(self, job: Job, op: str, err: BaseException) -> None:
        if isinstance(err, StaleError):
            self._stale(job, op, err)
            return
        self.log.error(
            "emq: settling job %s (%s) failed; its lease will be reaped and it runs again: %s",
            job.id,
            op,
            err,
        )

    def _was_cancelled(self, fl: _Inflight) -> None:
        """Counts, once, a job cancelled while this worker held it (echomq 2.5.0): gone, not
        settled."""
        if fl.counted:
            return
        fl.counted = True
        self.metrics.add(Counter.CANCELLED, self.queue.name, 1)
        self.log.info("emq: job %s (token %d) was cancelled", fl.job.id, fl.job.token)

    def _stale(self, job: Job, op: str, err: BaseException) -> None:
        """Counts a transition refused because the lease was lost: another claim took the job.
        It is the normal outcome of a handler slower than its lease, not an alarm. A job
        cancelled meanwhile (its message came) is counted as cancelled instead."""
        fl = self._holding.get(job.id)
        if fl is not None and fl.job.token == job.token and fl.cancelled:
            self._was_cancelled(fl)
            return
        self.metrics.add(Counter.STALE, self.queue.name, 1)
        self.log.info(
            "emq: the lease of job %s (token %d) was lost before its %s; the holder of the new "
            "lease settles it: %s",
            job.id,
            job.token,
            op,
            err,
        )

    # ------------------------------------------------------------ leases

    async def _extender(self) -> None:
        """Extends the leases of running jobs, every third of the lease, in one pipelined round
        trip; a refused extension cancels the handler."""
        every_ms = max(1, self.lease_ms // 3)
        while True:
            await asyncio.sleep(every_ms / 1000)
            try:
                await self._extend(every_ms)
            except asyncio.CancelledError:
                raise
            except Exception as err:
                self.log.warning("emq: extending leases failed; retrying: %s", err)

    async def _extend(self, every_ms: int) -> None:
        now = _now_ms()
        due: list[_Inflight] = []
        xs: list[ScriptExec] = []
        k = self.queue.keys
        for fl in self._running:
            if fl.lost or fl.handed_back or fl.deadline_ms - now > self.lease_ms - every_ms:
                continue
            due.append(fl)
            xs.append(
                ExtendPolicyCall(
                    active=k.active,
                    running=k.running,
                    row=k.row(fl.job.id),
                    id=fl.job.id,
                    token=fl.job.token,
                    lease_ms=self.lease_ms,
                ).exec()
            )
        if not xs:
            return
        r = self.queue.client.redis
        async with asyncio.timeout(every_ms / 1000 + 1):
            res = await self.queue.client._once(lambda: run_scripts(r, xs))
        for fl, v in zip(due, res, strict=True):
            if isinstance(v, StaleError):
                fl.lost = True
                if fl.task is not None:
                    # gone to another claim, or cancelled with its message missed: either way
                    # the handler's work can no longer be settled
                    fl.task.cancel(CANCELLED if fl.cancelled else LEASE_LOST)
                self._stale(fl.job, "extend", v)
            elif isinstance(v, BaseException):
                self.log.warning(
                    "emq: extending the lease of %s failed; retrying: %s", fl.job.id, v
                )
            else:
                try:
                    fl.deadline_ms = ExtendPolicyCall.decode(v)
                except Exception as err:
                    self.log.warning("emq: extending the lease of %s: %s", fl.job.id, err)

    async def _hand_back(self) -> None:
        """Gives the jobs of handlers still running back to the queue at once: they are retried
        with no delay and promoted."""
        n = 0
        for fl in list(self._running):
            if fl.lost or fl.handed_back or fl not in self._running:
                continue  # lost, done, or its handler returned meanwhile (the runner settles it)
            fl.handed_back = True
            try:
                await self.queue.retry(fl.job.id, fl.job.token, 0)
            except Exception as err:
                self._settle_error(fl.job, "hand-back", err)
                continue
            self.metrics.add(Counter.HANDED_BACK, self.queue.name, 1)
            n += 1
        if n > 0:
            self.log.warning(
                "emq: handlers overran the shutdown deadline; %d jobs were handed back (queue %s)",
                n,
                self.queue.name,
            )
            await self._promote()

    # ------------------------------------------------------------ cancellation

    def _on_cancel(self, data: Any) -> None:
        """A message of the cancel channel, "<id> <token>": cancels the handler of that job when
        this worker holds it with that token."""
        id, _, tok = _text(data).partition(" ")
        fl = self._holding.get(id)
        if fl is None or not tok.isdigit() or int(tok) != fl.job.token or fl.cancelled:
            return
        fl.cancelled = True
        self.log.debug("emq: job %s (token %s) cancelled; cancelling its handler", id, tok)
        if fl.task is not None and not fl.task.done():
            fl.task.cancel(CANCELLED)

    async def _canceller(self) -> None:
        """Listens on the queue's cancel channel (sharded pub/sub: SSUBSCRIBE on the node of the
        queue's slot; a cluster client's pubsub finds it) and cancels the handlers of the jobs
        cancel_ids names. A failed subscription or read is retried on a fresh subscription
        after a pause, doubling from 50 ms up to 5 s: after a reconnect the channel is
        subscribed again. Ends, unsubscribed, when cancelled (run() ending)."""
        assert self._listening is not None
        channel = self.queue.keys.cancel
        cluster = hasattr(self.queue.client.redis, "get_node_from_key")
        pause = 0.05
        while True:
            ps: Any = self.queue.client.redis.pubsub()
            try:
                await ps.ssubscribe(channel)
                self._listening.set()
                pause = 0.05
                while True:
                    check_cancelled(0)  # a cancellation redis-py swallowed ends the loop too
                    if cluster:
                        msg = await ps.get_sharded_message(
                            ignore_subscribe_messages=True, timeout=LISTEN_POLL_S
                        )
                    else:
                        msg = await ps.get_message(
                            ignore_subscribe_messages=True, timeout=LISTEN_POLL_S
                        )
                    if msg is not None and msg.get("data") is not None:
                        self._on_cancel(msg["data"])
            except asyncio.CancelledError:
                raise
            except (MovedError, AskError, TryAgainError) as err:
                # The queue's slot moved (or is moving) to another node of the
                # cluster: subscribe again, where the slot is now.
                self._listening.set()
                self.log.info(
                    "emq: queue %s's cancel channel moved with its slot; subscribing again: %s",
                    self.queue.name,
                    err,
                )
            except Exception as err:
                self._listening.set()  # run() claims without it rather than wait
                self.log.warning(
                    "emq: listening for cancellations on queue %s failed; again in %.2fs: %s",
                    self.queue.name,
                    pause,
                    err,
                )
            finally:
                try:
                    async with asyncio.timeout(1.0):
                        await ps.aclose()
                except Exception as err:
                    self.log.debug("emq: closing the cancel channel's connection failed: %s", err)
            await asyncio.sleep(pause)
            pause = min(pause * 2, 5.0)

    # ------------------------------------------------------------ maintenance

    async def _maintainer(self, held: asyncio.Event) -> None:
        """Promotes due jobs and reaps expired leases every maintenance_ms while this worker holds
        the queue's maintenance lock, so that one worker per queue does it (on a queue with a
        policy it reaps without the lock too); sweeps a slice of the
        failure records every tick whoever holds the lock (a 2.2 worker holding it never sweeps,
        and a sweep is safe to repeat)."""
        every_ms = self.maintenance_ms
        name = lock_maintenance(self.queue.name)
        c = self.queue.client
        while True:
            await asyncio.sleep(every_ms / 1000)
            call = LockCall(locks=KEY_LOCKS, name=name, owner=self._owner, ttl_ms=3 * every_ms)
            try:
                d = await c._once(functools.partial(call.run, c.redis))
            except asyncio.CancelledError:
                raise
            except Exception as err:
                self.log.warning("emq: taking the maintenance lock failed: %s", err)
                await self._sweep()
                continue
            if d == LOCK_HELD:
                held.clear()
                await self._reap_under_policy()
                await self._sweep()
                continue
            held.set()
            await self._promote()
            await self._reap()
            await self._sweep()

    async def _reap_under_policy(self) -> None:
        """Reaps without the maintenance lock when the queue has a policy (echomq 2.7.0): the
        lock's holder may be a worker older than 2.7, whose reaps fail on the tripwire while it
        renews the lock, which would leave expired leases filling a capped queue until the policy
        is cleared. reap_policy_ids takes back only leases still expired, so reapers side by side
        are safe."""
        try:
            if (await self.queue.policy()).requires == 0:
                return
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self.log.warning("emq: reading the queue's policy failed: %s", err)
            return
        await self._reap()

    async def _unlock(self) -> None:
        c = self.queue.client
        call = UnlockCall(
            locks=KEY_LOCKS, name=lock_maintenance(self.queue.name), owner=self._owner
        )
        try:
            async with asyncio.timeout(2):
                await call.run(c.redis)
        except Exception as err:
            self.log.debug("emq: releasing the maintenance lock failed: %s", err)

    async def _promote(self) -> int:
        """Promotes the due jobs (promote_due, in batches); returns how many moved."""
        total = 0
        try:
            while True:
                with giving_up_on(self._stop):  # a promote never sent: stop() ends its wait
                    n = await self.queue.promote_due(MAINTENANCE_BATCH)
                total += n
                if n < MAINTENANCE_BATCH:
                    break
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self.log.warning("emq: promoting due jobs failed: %s", err)
        if total > 0:
            self.metrics.add(Counter.PROMOTED, self.queue.name, total)  # promote_ids rang
        return total

    async def _reap(self) -> None:
        total = 0
        try:
            while True:
                n = await self.queue._reap_expired(
                    MAINTENANCE_BATCH, self.max_attempts, record=True, events_max=self.events_max
                )
                total += n
                if n < MAINTENANCE_BATCH:
                    break
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self.log.warning("emq: reaping expired leases failed: %s", err)
        if total > 0:
            self.metrics.add(Counter.REAPED, self.queue.name, total)  # reap_ids rang
            self.log.info("emq: %d expired leases taken back (queue %s)", total, self.queue.name)

    async def _sweep(self) -> None:
        """Scans the next SWEEP_COUNT fields of each of the queue's failure records, retry
        policies and progress reports (HSCAN, pipelined in one round trip, each cursor kept
        between ticks) and deletes those whose rows are gone with forget_ids: what a 2.3
        client's complete or a purge left behind is gone within ceil(entries / SWEEP_COUNT)
        ticks. A field that is not an id is left as it is."""
        c = self.queue.client
        k = self.queue.keys
        keys = (k.failures, k.options, k.progress)
        cursors = self._sweep_cursors

        dedup_entries = False

        async def scan() -> list[tuple[int, list[str]]]:
            nonlocal dedup_entries
            async with c.redis.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.hscan(key, cursors.get(key, 0), count=SWEEP_COUNT)
                pipe.exists(k.dedup)  # the deduplication entries (2.5.0): any to sweep?
                res: list[Any] = await pipe.execute()
            dedup_entries = bool(res[-1])
            return [(int(nxt), [_text(f) for f in fields]) for nxt, fields in res[:-1]]

        try:
            scanned = await c._resend(scan)
            ids: list[str] = []
            seen: set[str] = set()
            for key, (nxt, fields) in zip(keys, scanned, strict=True):
                cursors[key] = nxt
                for f in fields:
                    if f in seen:
                        continue
                    try:
                        parse_id(f)
                    except ValueError:
                        continue
                    seen.add(f)
                    ids.append(f)
            n = await self.queue.forget_ids(ids) if ids else 0
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self.log.warning("emq: sweeping the records of jobs that are gone failed: %s", err)
            return
        if n > 0:
            self.log.info(
                "emq: %d records of jobs that are gone deleted (queue %s)",
                n,
                self.queue.name,
            )
        if dedup_entries:
            await self._sweep_dedup()

    async def _sweep_dedup(self) -> None:
        """Walks the queue's deduplication entries with sweep_dedup (echomq 2.5.0), up to
        SWEEP_DEDUP_PAGES pages a tick (the cursor kept between ticks): a parked job whose
        holder is done becomes due, and entries that no longer hold their keys are deleted."""
        released = 0
        try:
            for _ in range(SWEEP_DEDUP_PAGES):
                pg = await self.queue.sweep_dedup(self._dedup_cursor, SWEEP_DEDUP_COUNT)
                self._dedup_cursor = pg.cursor
                released += pg.released
                if pg.cursor == "0":
                    break
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self._dedup_cursor = "0"
            self.log.warning("emq: sweeping the deduplication entries failed: %s", err)
            return
        if released > 0:
            self.log.info("emq: %d parked jobs made due (queue %s)", released, self.queue.name)
