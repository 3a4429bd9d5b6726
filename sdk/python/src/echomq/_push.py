"""Multi-job pushes: push_many calls cut in chunks, and the coalescing of concurrent pushes.

``push_jobs`` admits checked jobs in push_many calls (a chunk of one job is a push call),
pipelined in one round trip; a chunk push_many refuses as a whole (an id of another kind among
them) is pushed again job by job, so that each job gets its own answer; chunks that failed in
transport are resent on a fresh, fenced connection.

``Pusher`` coalesces the concurrent ``Queue.push`` calls of one queue of a client: a push that
meets no batch of its queue in flight is sent at once; pushes that arrive while one is in flight
wait and go together in one push_many call when it returns, after the linger, or as soon as a
full batch waits. Everything runs on the client's event loop, so no lock is needed.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from ._deadline import CALL_BOUND, Bound, latest
from ._gen.protocol import BACKOFF_INHERIT, Backoff
from ._gen.scripts import (
    PUSH_ENQUEUED,
    AddManyCall,
    AddManyEntry,
    PushCall,
    PushManyCall,
    PushManyEntry,
    ScriptExec,
    run_scripts,
)
from ._transport import TRANSPORT_ERRORS, as_connection_error, transient, unsent
from .errors import RESEND_ATTEMPTS, BundleError, FenceError
from .metrics import Counter

if TYPE_CHECKING:
    from .queue import BatchResult, Queue

log = logging.getLogger(__name__)

DEFAULT_PUSH_LINGER_MS: Final = 1.0
"""How long a coalesced push waits, at most, while an earlier batch of its queue is in flight."""

DEFAULT_PUSH_MAX_BATCH: Final = 128
"""The most jobs of one push_many call."""

MAX_BATCH_BYTES: Final = 1 << 20
"""The most payload bytes of one push_many call (a larger job goes alone)."""


@dataclass(frozen=True, slots=True)
class PushJob:
    """A job checked for a push: its row, id and payload bytes."""

    row: str
    id: str
    payload: bytes


@dataclass(frozen=True, slots=True)
class AddOptions:
    """The options of a push that go to add_many (echomq 2.4.0): a delay on the server's clock
    and the jobs' own retry policy. Pushes coalesce only with pushes of equal options."""

    delay_ms: int = 0
    attempts: int = 0
    backoff: Backoff = BACKOFF_INHERIT
    backoff_ms: int = 0
    backoff_max_ms: int = 0


def _chunks(jobs: Sequence[PushJob], max_batch: int) -> list[tuple[int, int]]:
    """Cuts jobs into [lo, hi) ranges of at most max_batch jobs and MAX_BATCH_BYTES of payload."""
    out: list[tuple[int, int]] = []
    lo = 0
    while lo < len(jobs):
        hi, size = lo + 1, len(jobs[lo].payload)
        while hi < len(jobs) and hi - lo < max_batch:
            nxt = len(jobs[hi].payload)
            if size + nxt > MAX_BATCH_BYTES:
                break
            size += nxt
            hi += 1
        out.append((lo, hi))
        lo = hi
    return out


def add_exec(q: Queue, jobs: Sequence[PushJob], opts: AddOptions) -> ScriptExec:
    """The add_many call of jobs with opts."""
    k = q.keys
    return AddManyCall(
        pending=k.pending,
        schedule=k.schedule,
        wake=k.wake,
        options=k.options,
        rows=[j.row for j in jobs],
        delay_ms=opts.delay_ms,
        attempts=opts.attempts,
        backoff=opts.backoff,
        backoff_ms=opts.backoff_ms,
        backoff_max_ms=opts.backoff_max_ms,
        entries=[AddManyEntry(id=j.id, payload=j.payload) for j in jobs],
    ).exec()


def _exec(
    q: Queue, jobs: Sequence[PushJob], lo: int, hi: int, opts: AddOptions | None = None
) -> ScriptExec:
    """The push call of jobs[lo] when the unit has one job, else the push_many call of the unit;
    the add_many call of the unit when there are options."""
    k = q.keys
    if opts is not None:
        return add_exec(q, jobs[lo:hi], opts)
    if hi - lo == 1:
        j = jobs[lo]
        return PushCall(
            row=j.row, pending=k.pending, wake=k.wake, id=j.id, payload=j.payload
        ).exec()
    part = jobs[lo:hi]
    return PushManyCall(
        pending=k.pending,
        wake=k.wake,
        rows=[j.row for j in part],
        entries=[PushManyEntry(id=j.id, payload=j.payload) for j in part],
    ).exec()


def _pause(attempt: int) -> float:
    """The pause before resend attempt (1 for the first): none, then 10 ms doubling up to 500 ms,
    jittered to its upper half."""
    if attempt <= 1:
        return 0.0
    d = min(0.010 * 2.0 ** (attempt - 2), 0.5)
    return d / 2 + random.random() * (d / 2)


async def push_jobs(
    q: Queue,
    jobs: Sequence[PushJob],
    max_batch: int,
    opts: AddOptions | None = None,
    bound: Bound | None = None,
) -> list[BatchResult]:
    """Admits jobs in push_many calls (add_many calls with opts) of up to max_batch jobs,
    pipelined, and returns per job
    whether it was enqueued (False: a duplicate, also for a second job of one id) or the error it
    failed with (a transport failure as a ConnectionError). A call push_many refuses (any error
    reply) is replaced at once by one push call per job (nothing of the refused call was written).
    Calls that failed in transport are resent, whole, on a fresh fenced connection, up to
    RESEND_ATTEMPTS attempts; calls that were never sent (the server out of reach: see
    _transport.unsent) are sent again once the connection is back, within bound (the deadline
    of the call, or of the longest-waiting caller of a coalesced batch; then each job's error is
    a ConnectionWaitError), and no resend starts past it. A FenceError or BundleError met before
    anything was written is raised.
    """
    # The cluster's TRYAGAIN resends of these calls stop at the same deadline.
    token = CALL_BOUND.set(bound) if bound is not None else None
    try:
        return await _push_jobs(q, jobs, max_batch, opts, bound)
    finally:
        if token is not None:
            CALL_BOUND.reset(token)


async def _push_jobs(
    q: Queue,
    jobs: Sequence[PushJob],
    max_batch: int,
    opts: AddOptions | None,
    bound: Bound | None,
) -> list[BatchResult]:
    from .queue import BatchResult

    out: list[BatchResult] = [BatchResult(enqueued=False) for _ in jobs]
    todo = _chunks(jobs, max_batch)
    settled = 0
    failed = 0  # rounds that failed in transport after something may have been written
    waits = 0  # rounds whose failures were all of calls never sent
    while todo:
        again: list[tuple[int, int]] = []
        last: BaseException | None = None
        written = False
        rnd = todo
        while rnd:
            try:
                res = await run_scripts(
                    q.client.redis, [_exec(q, jobs, lo, hi, opts) for lo, hi in rnd]
                )
            except (FenceError, BundleError):
                raise  # the fresh connection's fence refused: nothing of this call was written
            except TRANSPORT_ERRORS as err:
                ce = as_connection_error(err)
                for lo, hi in rnd:
                    for i in range(lo, hi):
                        out[i] = BatchResult(enqueued=False, error=ce)
                again.extend(rnd)
                last = err
                written = written or not unsent(err)
                break
            split: list[tuple[int, int]] = []
            for (lo, hi), r in zip(rnd, res, strict=True):
                if isinstance(r, BaseException):
                    if transient(r):
                        ce = as_connection_error(r)
                        for i in range(lo, hi):
                            out[i] = BatchResult(enqueued=False, error=ce)
                        again.append((lo, hi))
                        last = r
                        written = written or not unsent(r)
                    elif hi - lo == 1:
                        out[lo] = BatchResult(enqueued=False, error=r)
                        settled += 1
                    else:
                        split.extend((i, i + 1) for i in range(lo, hi))
                    continue
                try:
                    if opts is not None:
                        flags = [x.enqueued == PUSH_ENQUEUED for x in AddManyCall.decode(r)]
                    elif hi - lo == 1:
                        flags = [PushCall.decode(r) == PUSH_ENQUEUED]
                    else:
                        flags = [x.enqueued == PUSH_ENQUEUED for x in PushManyCall.decode(r)]
                    if len(flags) != hi - lo:
                        raise ValueError(
                            f"emq: {(AddManyCall if opts else PushManyCall).SCRIPT.name}: "
                            f"{len(flags)} records for "
                            f"{hi - lo} jobs"
                        )
                except Exception as err:
                    for i in range(lo, hi):
                        out[i] = BatchResult(enqueued=False, error=err)
                    continue
                for i, f in zip(range(lo, hi), flags, strict=True):
                    out[i] = BatchResult(enqueued=f)
                settled += hi - lo
            rnd = split
        todo = again
        if not todo or last is None:
            break
        if bound is not None and not written:
            # Nothing of the round reached a server: wait for the connection, within bound.
            waits += 1
            if waits == 1:
                q.client.logger.debug(
                    "emq: the call was not sent (the server is out of reach); it waits for the "
                    "connection (%.3f s left): %s",
                    bound.left(),
                    last,
                )
            if not await bound.wait_turn(waits):
                ce = bound.gave_up(last)
                for lo, hi in todo:
                    for i in range(lo, hi):
                        out[i] = BatchResult(enqueued=False, error=ce)
                break
            continue
        failed += 1
        if failed >= RESEND_ATTEMPTS or (bound is not None and bound.left() <= 0):
            break
        await asyncio.sleep(_pause(failed))
    q.client.metrics.add(Counter.ENQUEUED, q.name, sum(1 for x in out if x.enqueued))
    return out


class _Req:
    """One caller's push waiting in a Pusher."""

    __slots__ = ("bound", "fut", "job")

    def __init__(self, job: PushJob, fut: asyncio.Future[BatchResult], bound: Bound) -> None:
        self.job = job
        self.fut = fut
        self.bound = bound
        """The caller's deadline (its task and start), read by the batch should it not be sent."""


class Pusher:
    """Coalesces the concurrent pushes of one queue of a client into push_many calls (add_many
    calls for pushes with options: one Pusher per queue and options)."""

    def __init__(
        self, q: Queue, linger_s: float, max_batch: int, opts: AddOptions | None = None
    ) -> None:
        self.q = q
        self.opts = opts
        self.linger_s = linger_s
        self.max_batch = max_batch
        self.wait: list[_Req] = []
        self.flying = 0
        self.timer: asyncio.TimerHandle | None = None
        self.tasks: set[asyncio.Task[None]] = set()
        self.batches = 0
        """How many batches were sent (for tests and a quick look)."""

    async def push(self, job: PushJob) -> BatchResult:
        """Queues job, starts a batch when one is due, and waits for the job's answer. A caller
        cancelled before its batch is sent is left out of it; one cancelled after that may or may
        not have had its job admitted."""
        loop = asyncio.get_running_loop()
        r = _Req(job, loop.create_future(), self.q.client._bound())
        self.wait.append(r)
        if self.flying == 0 or len(self.wait) >= self.max_batch:
            self._start()
        elif self.timer is None and self.linger_s > 0:
            self.timer = loop.call_later(self.linger_s, self._linger)
        return await r.fut

    def _linger(self) -> None:
        self.timer = None
        self._start()

    def _take(self) -> list[_Req]:
        """Takes the next batch off the waiting pushes (up to max_batch jobs and MAX_BATCH_BYTES
        of payload, at least one), oldest first, leaving out callers that gave up."""
        batch: list[_Req] = []
        size, n = 0, 0
        while n < len(self.wait) and len(batch) < self.max_batch:
            r = self.wait[n]
            if batch and size + len(r.job.payload) > MAX_BATCH_BYTES:
                break
            n += 1
            if r.fut.done():
                continue  # cancelled before sending: left out
            batch.append(r)
            size += len(r.job.payload)
        del self.wait[:n]
        return batch

    def _start(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        batch = self._take()
        if not batch:
            return
        self.flying += 1
        t = asyncio.get_running_loop().create_task(self._send(batch), name="emq push batch")
        self.tasks.add(t)
        t.add_done_callback(self.tasks.discard)

    async def _send(self, batch: list[_Req]) -> None:
        while batch:
            self.batches += 1
            try:
                res = await push_jobs(
                    self.q,
                    [r.job for r in batch],
                    self.max_batch,
                    self.opts,
                    latest([r.bound for r in batch]),
                )
            except BaseException as err:
                for r in batch:
                    if not r.fut.done():
                        r.fut.set_exception(err)
                if isinstance(err, asyncio.CancelledError):
                    self.flying -= 1
                    raise
            else:
                for r, x in zip(batch, res, strict=True):
                    if not r.fut.done():
                        r.fut.set_result(x)
            batch = []
            if self.flying == 1 and self.wait:
                if self.timer is not None:
                    self.timer.cancel()
                    self.timer = None
                batch = self._take()
        self.flying -= 1
        if self.flying == 0 and self.wait:
            self._start()
