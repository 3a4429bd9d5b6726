"""Queue: the bus surface of one queue. The caller never builds a key or names a script."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ._gen.errors import WireError
from ._gen.ids import parse_id
from ._gen.keys import QueueKeys
from ._gen.protocol import (
    FIELD_PAYLOAD,
    FIELD_STATE,
    FIELD_TOKEN,
    SETS,
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
    REVIVE_REVIVED,
    BuryCall,
    ClaimCall,
    ClaimManyCall,
    CompleteCall,
    CompleteClaimCall,
    EnqueueAtCall,
    EnqueueCall,
    ExtendCall,
    PromoteCall,
    PurgeCall,
    PushCall,
    PushManyCall,
    PushManyEntry,
    ReapCall,
    RetryCall,
    ReviveCall,
    RingCall,
    ScriptExec,
    run_script,
    run_scripts,
)
from ._transport import as_connection_error
from .errors import RESEND_ATTEMPTS, ArgumentError, ConnectionError

if TYPE_CHECKING:
    from .client import Client

__all__ = ["PUSH_MAX_BATCH", "BatchResult", "Job", "JobInfo", "NewJob", "Page", "Payload", "Queue"]

log = logging.getLogger(__name__)

Payload = bytes | str
"""A job's payload as given: bytes, or text (sent as UTF-8)."""

_INT_RE = re.compile(r"-?[0-9]+")

PUSH_MAX_BATCH: Final = 128
"""The most jobs push_batch sends in one push_many call (the Go SDK's default PushMaxBatch)."""


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


@dataclass(frozen=True, slots=True)
class NewJob:
    """A job to admit."""

    id: str
    payload: Payload


@dataclass(frozen=True, slots=True)
class BatchResult:
    """The outcome of one job of a batch: enqueued (False: a duplicate), or the error it failed
    with (the others still took effect)."""

    enqueued: bool
    error: BaseException | None = None


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


@dataclass(frozen=True, slots=True)
class Page:
    """A page of a set: its ids, newest first, and the cursor of the next page ("" after the
    last)."""

    ids: list[str]
    next: str


def _bytes(p: Payload) -> bytes:
    return p.encode() if isinstance(p, str) else bytes(p)


def _positive(what: str, n: int) -> None:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ArgumentError(f"{what} {n!r} is not a positive integer")


def _non_negative(what: str, n: int) -> None:
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ArgumentError(f"{what} {n!r} is not a non-negative integer")


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _jobs(rs: Sequence[Any]) -> list[Job]:
    return [Job(id=r.id, token=r.token, payload=r.payload, deadline_ms=r.deadline_ms) for r in rs]


class Queue:
    """A handle on one queue of a fenced keyspace. Use ``client.queue(name)``."""

    def __init__(self, client: Client, name: str) -> None:
        """A malformed name raises a QueueNameError before anything is sent."""
        self.client = client
        """The client the queue belongs to."""
        self.keys = QueueKeys(name)
        """The queue's keys."""

    @property
    def name(self) -> str:
        """The queue's name."""
        return self.keys.queue

    def _push_exec(self, id: str, payload: Payload) -> ScriptExec:
        row = self.keys.row(id)
        self.client.check_payload(payload)
        return PushCall(
            row=row, pending=self.keys.pending, wake=self.keys.wake, id=id, payload=_bytes(payload)
        ).exec()

    async def push(self, id: str, payload: Payload) -> bool:
        """Admits a job like enqueue and rings the queue's doorbell, so that an idle worker starts
        it within milliseconds.

        Returns False for a duplicate id (the row is left untouched); an id of another kind than
        the work kind is refused with the wire error of its class. A push is idempotent while the
        job exists, so one that failed in transport is resent (see Client.resend); should the lost
        attempt have admitted the job, the resend returns False.
        """
        x = self._push_exec(id, payload)

        async def attempt() -> bool:
            return PushCall.decode(await _run(self.client, x)) == PUSH_ENQUEUED

        return await self.client.resend(attempt)

    async def push_batch(self, jobs: Sequence[NewJob]) -> list[BatchResult]:
        """Admits many jobs in push_many script calls of up to PUSH_MAX_BATCH jobs each, pipelined
        in one round trip.

        Malformed ids and oversized payloads raise before anything is sent. The result tells, per
        job, whether it was enqueued (False: a duplicate, also for a second job of one id in the
        batch) or why it failed; the others still took effect. A chunk push_many refuses as a
        whole (an id of another kind in it) is pushed again job by job, so that only the offending
        jobs carry the wire error. Calls that failed in transport, and only those, are resent on
        a fresh, fenced connection (a resent job the lost attempt had admitted reports False).
        """
        rows: list[str] = []
        payloads: list[bytes] = []
        for i, j in enumerate(jobs):
            try:
                rows.append(self.keys.row(j.id))
                self.client.check_payload(j.payload)
            except Exception as err:
                err.args = (f"job {i}: {err}",)
                raise
            payloads.append(_bytes(j.payload))
        out = [BatchResult(enqueued=False) for _ in jobs]
        chunks = [
            list(range(k, min(k + PUSH_MAX_BATCH, len(jobs))))
            for k in range(0, len(jobs), PUSH_MAX_BATCH)
        ]
        calls = [
            PushManyCall(
                pending=self.keys.pending,
                wake=self.keys.wake,
                rows=[rows[i] for i in c],
                entries=[PushManyEntry(id=jobs[i].id, payload=payloads[i]) for i in c],
            ).exec()
            for c in chunks
        ]
        one_by_one: list[int] = []
        for c, r in zip(chunks, await self._settle(calls), strict=True):
            if isinstance(r, WireError):
                one_by_one += c
                continue
            try:
                if isinstance(r, BaseException):
                    raise r
                recs = PushManyCall.decode(r)
                if len(recs) != len(c):
                    raise ValueError(f"emq: push_many answered {len(recs)} records for {len(c)}")
            except Exception as err:
                for i in c:
                    out[i] = BatchResult(enqueued=False, error=err)
                continue
            for i, rec in zip(c, recs, strict=True):
                out[i] = BatchResult(enqueued=rec.enqueued > 0)
        singles = [
            PushCall(
                row=rows[i],
                pending=self.keys.pending,
                wake=self.keys.wake,
                id=jobs[i].id,
                payload=payloads[i],
            ).exec()
            for i in one_by_one
        ]
        for i, r in zip(one_by_one, await self._settle(singles), strict=True):
            if isinstance(r, BaseException):
                out[i] = BatchResult(enqueued=False, error=r)
                continue
            try:
                out[i] = BatchResult(enqueued=PushCall.decode(r) == PUSH_ENQUEUED)
            except Exception as err:
                out[i] = BatchResult(enqueued=False, error=err)
        return out

    async def _settle(self, xs: list[ScriptExec]) -> list[Any]:
        """Runs idempotent calls pipelined and settles each on its own: its reply, or the
        exception it failed with. The calls that failed in transport, and only those, are sent
        again (up to RESEND_ATTEMPTS rounds, a doubling pause between them); one still failing so
        is a ConnectionError. A keyspace refused by the fence raises."""
        out: list[Any] = [None] * len(xs)
        todo = list(range(len(xs)))
        attempt = 0
        while todo:
            idx, todo = todo, []
            try:
                res = await run_scripts(self.client.redis, [xs[i] for i in idx])
            except Exception as err:
                ce = _transport(err)
                if ce is None or attempt + 1 >= RESEND_ATTEMPTS:
                    raise (ce or err) from None
                todo = idx
            else:
                for i, r in zip(idx, res, strict=True):
                    ce = _transport(r) if isinstance(r, BaseException) else None
                    out[i] = ce or r
                    if ce is not None and attempt + 1 < RESEND_ATTEMPTS:
                        todo.append(i)
            attempt += 1
            if todo:
                await asyncio.sleep(min(0.010 * 2**attempt, 0.5))
        return out

    async def enqueue(self, id: str, payload: Payload) -> bool:
        """Admits a job with id and payload, without ringing the doorbell. Returns False when a
        job with this id already exists; an id of another kind than the work kind is refused with
        the wire error of its class. Resent across a reconnect, like push."""
        row = self.keys.row(id)
        self.client.check_payload(payload)
        call = EnqueueCall(row=row, pending=self.keys.pending, id=id, payload=_bytes(payload))

        async def attempt() -> bool:
            return await call.run(self.client.redis) == ENQUEUE_ENQUEUED

        return await self.client.resend(attempt)

    async def enqueue_at(self, id: str, payload: Payload, run_at_ms: int) -> bool:
        """Admits a job that becomes claimable at run_at_ms (server clock, Unix milliseconds),
        once maintenance promotes it. Replies and refusals are enqueue's."""
        row = self.keys.row(id)
        self.client.check_payload(payload)
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

        return await self.client.resend(attempt)

    async def claim(self, lease_ms: int) -> Job | None:
        """Leases the oldest pending job for lease_ms; None when nothing is pending. The job's
        token must be presented to every later transition. Never resent."""
        _positive("lease", lease_ms)
        call = ClaimCall(
            pending=self.keys.pending,
            active=self.keys.active,
            prefix=self.keys.row_prefix,
            lease_ms=lease_ms,
        )
        r = await self.client.once(lambda: call.run(self.client.redis))
        if r is None:
            return None
        return Job(id=r.id, token=r.token, payload=r.payload, deadline_ms=r.deadline_ms)

    async def claim_many(self, lease_ms: int, count: int) -> list[Job]:
        """Leases up to count of the oldest pending jobs for lease_ms at once, oldest first; empty
        when nothing is pending. It rings the doorbell again when jobs remain."""
        _positive("lease", lease_ms)
        _positive("count", count)
        call = ClaimManyCall(
            pending=self.keys.pending,
            active=self.keys.active,
            wake=self.keys.wake,
            prefix=self.keys.row_prefix,
            lease_ms=lease_ms,
            count=count,
        )
        return _jobs(await self.client.once(lambda: call.run(self.client.redis)))

    async def complete_claim(self, id: str, token: int, lease_ms: int, count: int) -> list[Job]:
        """Retires an active job like complete, then leases up to count (0 or more) of the oldest
        pending jobs for lease_ms, in one call. A stale token is refused with the wire error of its
        class, and nothing is leased."""
        row = self.keys.row(id)
        _positive("lease", lease_ms)
        _non_negative("count", count)
        call = CompleteClaimCall(
            row=row,
            active=self.keys.active,
            pending=self.keys.pending,
            wake=self.keys.wake,
            id=id,
            token=token,
            prefix=self.keys.row_prefix,
            lease_ms=lease_ms,
            count=count,
        )
        return _jobs(await self.client.once(lambda: call.run(self.client.redis)))

    async def extend(self, id: str, token: int, lease_ms: int) -> int:
        """Pushes the lease of an active job to now + lease_ms and returns the new deadline; a
        token that is not the row's, or a job no longer active, is refused with the wire error of
        its class."""
        row = self.keys.row(id)
        _positive("lease", lease_ms)
        call = ExtendCall(active=self.keys.active, row=row, id=id, token=token, lease_ms=lease_ms)
        return await self.client.once(lambda: call.run(self.client.redis))

    async def complete(self, id: str, token: int) -> None:
        """Retires an active job: its row is deleted. A stale token is refused with the wire error
        of its class, and the lease holder's work survives."""
        row = self.keys.row(id)
        call = CompleteCall(active=self.keys.active, row=row, id=id, token=token)
        await self.client.once(lambda: call.run(self.client.redis))

    async def retry(self, id: str, token: int, delay_ms: int) -> int:
        """Hands an active job back to run again after delay_ms (it is scheduled, and promote makes
        it pending) and returns its run-at. A stale token is refused with the wire error of its
        class."""
        row = self.keys.row(id)
        _non_negative("delay", delay_ms)
        call = RetryCall(
            active=self.keys.active,
            row=row,
            schedule=self.keys.schedule,
            id=id,
            token=token,
            delay_ms=delay_ms,
        )
        return await self.client.once(lambda: call.run(self.client.redis))

    async def bury(self, id: str, token: int) -> None:
        """Moves an active job to the dead set; a stale token is refused with the wire error of its
        class."""
        row = self.keys.row(id)
        call = BuryCall(active=self.keys.active, row=row, dead=self.keys.dead, id=id, token=token)
        await self.client.once(lambda: call.run(self.client.redis))

    async def promote(self, limit: int = 1000) -> int:
        """Moves up to limit scheduled jobs whose run-at has come to pending; returns how many
        moved."""
        _positive("limit", limit)
        call = PromoteCall(
            schedule=self.keys.schedule,
            pending=self.keys.pending,
            prefix=self.keys.row_prefix,
            limit=limit,
        )
        return await self.client.once(lambda: call.run(self.client.redis))

    async def reap(self, limit: int = 1000, max_attempts: int = 0) -> int:
        """Takes back up to limit expired leases: each job goes back to pending, or to dead when
        max_attempts > 0 and its attempts reached it. Returns how many moved."""
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
        return await self.client.once(lambda: call.run(self.client.redis))

    async def ring(self) -> bool:
        """Rings the queue's doorbell; returns whether it was silent before."""
        call = RingCall(wake=self.keys.wake)
        return await self.client.once(lambda: call.run(self.client.redis)) > 0

    async def revive(self, id: str) -> bool:
        """Moves a dead job back to pending, keeping its attempts, and rings the doorbell. Returns
        False when the job is not dead."""
        row = self.keys.row(id)
        call = ReviveCall(dead=self.keys.dead, pending=self.keys.pending, row=row, id=id)
        n = await self.client.once(lambda: call.run(self.client.redis))
        if n != REVIVE_REVIVED:
            return False
        try:
            await self.ring()
        except Exception as err:  # the revive stands without the bell
            log.debug("emq: revive %s: ringing the doorbell failed: %s", id, err)
        return True

    async def purge(self, id: str) -> bool:
        """Deletes a dead job for good: its row and its id. Returns False when the job is not
        dead."""
        row = self.keys.row(id)
        call = PurgeCall(dead=self.keys.dead, row=row, id=id)
        return await self.client.once(lambda: call.run(self.client.redis)) == PURGE_PURGED

    def _set_key(self, s: str) -> str:
        if not is_set_name(s):
            raise ArgumentError(f"unknown set {s!r}")
        return self.keys.set(s)

    async def size(self, s: SetName) -> int:
        """How many ids set s holds."""
        key = self._set_key(s)

        async def attempt() -> int:
            return int(await self.client.redis.zcard(key))

        return await self.client.resend(attempt)

    async def sizes(self) -> dict[SetName, int]:
        """The size of every set, read in one round trip."""

        async def attempt() -> dict[SetName, int]:
            async with self.client.redis.pipeline(transaction=False) as pipe:
                for s in SETS:
                    pipe.zcard(self.keys.set(s))
                res = await pipe.execute()
            return {s: int(n) for s, n in zip(SETS, res, strict=True)}

        return await self.client.resend(attempt)

    async def browse(self, s: SetName, n: int) -> list[str]:
        """Returns up to n ids of set s, newest first: for a score-zero set that is reverse mint
        order; for a scored set the latest deadline or run-at first."""
        return (await self.page(s, "", n)).ids

    async def get(self, id: str) -> JobInfo | None:
        """Reads one job: its row and its score in the set its state names, in one round trip.
        Returns None when the job does not exist (never enqueued, or completed and retired)."""
        row = self.keys.row(id)

        async def attempt() -> JobInfo | None:
            async with self.client.redis.pipeline(transaction=False) as pipe:
                pipe.hgetall(row)
                for s in SETS:
                    pipe.zscore(self.keys.set(s), id)
                res = await pipe.execute()
            h: dict[bytes, bytes] = res[0]
            if not h:
                return None
            state = h.get(FIELD_STATE.encode(), b"").decode()
            if not is_state(state):
                raise ValueError(f"emq: get {id}: the row holds an unknown state {state!r}")
            tok = h.get(FIELD_TOKEN.encode(), b"").decode()
            if not _INT_RE.fullmatch(tok):
                raise ValueError(f"emq: get {id}: the row's token is not an integer")
            at_ms: int | None = None
            home = state_set(state)
            for s, score in zip(SETS, res[1:], strict=True):
                if s == home and not set_is_lex(s) and score is not None:
                    at_ms = int(score)
            return JobInfo(
                id=id,
                state=state,
                attempts=int(tok),
                payload=h.get(FIELD_PAYLOAD.encode(), b""),
                at_ms=at_ms,
            )

        return await self.client.resend(attempt)

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

        async def attempt() -> Page:
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

        return await self.client.resend(attempt)


async def _run(client: Client, x: ScriptExec) -> Any:
    return await run_script(client.redis, x)


def _transport(err: BaseException) -> ConnectionError | None:
    """The ConnectionError of a transport failure, or None for any other error."""
    ce = as_connection_error(err)
    return ce if isinstance(ce, ConnectionError) else None
