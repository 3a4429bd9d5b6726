"""Failure records (echomq 2.3.0) on a real server: the queue's calls that record and read them,
get's history and time of death, the worker's records (error, timeout, its name), its maintenance
(a lost lease recorded, orphaned records swept), and the decoder's tolerance of a later minor's
class word."""

from __future__ import annotations

import asyncio
import datetime
import os
import socket
import time
from collections.abc import Callable

import pytest
from conftest import Server

import echomq
from echomq import FailedAttempt, Failure, Job, Worker
from echomq._gen.protocol import (
    FAILURE_CLASS_ERROR,
    FAILURE_CLASS_LEASE_LOST,
    FAILURE_CLASS_PANIC,
    FAILURE_CLASS_TIMEOUT,
    STATE_DEAD,
    STATE_PENDING,
    STATE_SCHEDULED,
)
from echomq._gen.scripts import CompleteCall
from echomq.failures import decode_failures


def now_ms() -> int:
    return time.time_ns() // 1_000_000


async def eventually(cond: Callable[[], object], within: float = 10.0, what: str = "") -> None:
    """Waits until cond() is truthy (sync or awaitable result), failing after within seconds."""
    deadline = time.monotonic() + within
    while True:
        v = cond()
        if asyncio.iscoroutine(v):
            v = await v
        if v:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what or cond}")
        await asyncio.sleep(0.01)


async def claimed(q: echomq.Queue, id: str, lease_ms: int = 30_000) -> Job:
    jobs = await q.claim_ids(lease_ms, [id])
    assert [j.id for j in jobs] == [id]
    return jobs[0]


def record_exists(server: Server, q: echomq.Queue, id: str) -> bool:
    with server.raw() as r:
        return bool(r.hexists(q.keys.failures, id))


# --------------------------------------------------------------------- the queue's calls


async def test_retry_failed_bury_failed_and_the_history_get_reads(client: echomq.Client) -> None:
    q = client.queue("fragile")
    id = client.mint()
    assert await q.push(id, b"vase")
    assert await q.failures(id) == []
    info = await q.get(id)
    assert info is not None and info.failures == () and info.died_at_ms is None

    job = await claimed(q, id)
    before = now_ms()
    run_at = await q.retry_failed(
        id, job.token, Failure(FAILURE_CLASS_ERROR, "ValueError: boom", worker="w1"), delay=60
    )
    assert run_at >= before + 60_000 - 1000
    info = await q.get(id)
    assert info is not None and info.state == STATE_SCHEDULED and info.at_ms == run_at
    assert info.died_at_ms is None and info.died_at is None, "not dead: no time of death"
    (a1,) = info.failures
    assert (a1.attempt, a1.failure_class, a1.worker, a1.message) == (
        1,
        FAILURE_CLASS_ERROR,
        "w1",
        "ValueError: boom",
    )
    assert a1.at_ms == run_at - 60_000, "recorded at the server time the retry was scheduled from"
    assert a1.at.tzinfo is datetime.UTC and abs(a1.at.timestamp() * 1000 - a1.at_ms) < 1
    assert str(a1).startswith("attempt 1 at ") and str(a1).endswith(
        ": error by w1: ValueError: boom"
    )

    assert await q.promote_ids([id]) == 0, "not due yet"
    with pytest.raises(echomq.StaleError):  # the job is scheduled now, not active
        await q.retry_failed(id, job.token, Failure(FAILURE_CLASS_ERROR, "late"))
    assert [a.attempt for a in await q.failures(id)] == [1], "a refusal records nothing"


async def test_a_dead_job_shows_its_history_and_when_it_died(client: echomq.Client) -> None:
    q = client.queue("morgue")
    id = client.mint()
    assert await q.push(id, "payload")
    job = await claimed(q, id)
    await q.retry_failed(id, job.token, Failure(FAILURE_CLASS_TIMEOUT, "slow", worker="w1"))
    assert await q.promote_ids([id]) == 1
    job = await claimed(q, id)
    assert job.token == 2
    await q.bury_failed(id, job.token, Failure(FAILURE_CLASS_PANIC, "crash", worker="w2"))
    info = await q.get(id)
    assert info is not None and info.state == STATE_DEAD and info.attempts == 2
    assert [(a.attempt, a.failure_class) for a in info.failures] == [
        (1, FAILURE_CLASS_TIMEOUT),
        (2, FAILURE_CLASS_PANIC),
    ]
    assert info.died_at_ms == info.failures[-1].at_ms
    assert info.died_at is not None and info.died_at == info.failures[-1].at
    assert "failures=2 (last: panic)" in repr(info) and "died_at=" in repr(info)
    assert await q.failures(id) == list(info.failures)

    # Revived and buried by a client that records nothing: the last attempt is not on the
    # record, so the time of death is not recorded (never guessed from an older attempt).
    assert await q.revive(id)
    job = await claimed(q, id)
    await q.bury(id, job.token)
    info = await q.get(id)
    assert info is not None and info.state == STATE_DEAD and info.attempts == 3
    assert len(info.failures) == 2 and info.died_at_ms is None


async def test_a_typed_queue_reads_the_history_too(client: echomq.Client) -> None:
    q = client.queue("typed", codec=echomq.JSONCodec(dict))
    id = client.mint()
    assert await q.push(id, {"n": 1})
    job = await claimed(q.raw, id)
    await q.raw.bury_failed(id, job.token, Failure(FAILURE_CLASS_ERROR, "no"))
    info = await q.get(id)
    assert info is not None and info.value == {"n": 1}
    assert [a.message for a in info.failures] == ["no"] and info.died_at_ms is not None
    assert await q.failures(id) == list(info.failures)


async def test_bad_input_is_refused_before_anything_is_sent(
    server: Server, client: echomq.Client
) -> None:
    q = client.queue("refusals")
    id = client.mint()
    assert await q.push(id, b"")
    job = await claimed(q, id)
    before = server.commandstats()
    bogus = Failure("melted", "x")  # type: ignore[arg-type]
    with pytest.raises(echomq.ArgumentError):
        await q.retry_failed(id, job.token, bogus)
    with pytest.raises(echomq.ArgumentError):
        await q.bury_failed(id, job.token, Failure("", "x"))  # type: ignore[arg-type]
    with pytest.raises(echomq.ArgumentError):
        await q.retry_failed(id, job.token, Failure(FAILURE_CLASS_ERROR, "x"), delay=-1)
    with pytest.raises(echomq.ArgumentError):
        await q.retry_failed(id, job.token, Failure(FAILURE_CLASS_ERROR, "x"), delay_ms=-1)
    with pytest.raises(TypeError):
        await q.retry_failed(id, job.token, "boom")  # type: ignore[arg-type]
    with pytest.raises(echomq.IdError):
        await q.failures("not-an-id")
    with pytest.raises(echomq.IdError):
        await q.forget_failures([id, "not-an-id"])
    with pytest.raises(echomq.IdError):
        await q.reap_failed_ids(["not-an-id"], 0)
    with pytest.raises(echomq.ArgumentError):
        await q.reap_failed_ids([id], -1)
    assert await q.forget_failures([]) == 0
    assert await q.reap_failed_ids([], 0) == 0
    assert server.commandstats() == before, "nothing was sent"
    info = await q.get(id)
    assert info is not None and info.failures == ()


async def test_purge_forgets_the_record_and_forget_failures_keeps_live_ones(
    server: Server, client: echomq.Client
) -> None:
    q = client.queue("purged")
    a, b, c = client.mint(), client.mint(), client.mint()
    for i in (a, b, c):
        assert await q.push(i, b"")
        job = await claimed(q, i)
        await q.bury_failed(i, job.token, Failure(FAILURE_CLASS_ERROR, "bad"))
    assert await q.purge(a)
    assert not record_exists(server, q, a), "purge forgot the record in its round trip"
    assert await q.purge(b, forget=False)
    assert record_exists(server, q, b), "a 2.2-style purge leaves it"
    assert await q.failures(b) == [], "a record whose row is gone reads as not recorded"
    assert await q.forget_failures([b, c]) == 1
    assert not record_exists(server, q, b)
    assert record_exists(server, q, c) and len(await q.failures(c)) == 1
    assert not await q.purge(client.mint()), "not dead: nothing purged"


def test_the_decoder_keeps_a_class_word_it_does_not_know() -> None:
    # A later minor may add a word; a well-formed record with one decodes, kept as a str.
    reply = [
        [1, 1_700_000_000_000, b"error", b"w1", b"boom"],
        [2, 1_700_000_000_500, b"melted", b"", b"\xff not utf-8"],
    ]
    got = decode_failures(reply)
    assert got == [
        FailedAttempt(1, 1_700_000_000_000, FAILURE_CLASS_ERROR, "w1", "boom"),
        FailedAttempt(2, 1_700_000_000_500, "melted", "", "\ufffd not utf-8"),
    ]
    assert got[1].at == datetime.datetime(2023, 11, 14, 22, 13, 20, 500000, datetime.UTC)
    assert str(got[1]) == "attempt 2 at 2023-11-14T22:13:20.500Z: melted: \ufffd not utf-8"
    assert decode_failures([]) == []


# --------------------------------------------------------------------- the worker


async def connect(server: Server) -> echomq.Client:
    return await echomq.connect(server.url, node_lease_ms=120_000, socket_timeout=5)


async def test_the_worker_records_a_raised_error_with_its_name(server: Server) -> None:
    c = await connect(server)
    try:
        q = c.queue("records")
        id, perm = c.mint(), c.mint()
        assert await q.push(id, b"x")
        assert await q.push(perm, b"p")
        tally = echomq.Tally()

        async def handler(job: Job) -> None:
            if job.id == perm:
                raise echomq.permanent(KeyError("sku"))
            raise ValueError(f"boom {job.token}")

        w = Worker(q, handler, max_attempts=2, backoff=lambda a: 0.0, name="w-test", metrics=tally)
        assert Worker(q, handler).name == f"{socket.gethostname()}:{os.getpid()}"
        t = asyncio.create_task(w.run())
        try:
            await eventually(lambda: tally.get(echomq.Counter.BURIED) == 2, what="buried")
        finally:
            await w.close()
            await t
        (p,) = await q.failures(perm)
        assert (p.attempt, p.message) == (1, "KeyError: 'sku'"), "a permanent error's cause"
        info = await q.get(id)
        assert info is not None and info.state == STATE_DEAD
        assert [(a.attempt, a.failure_class, a.worker, a.message) for a in info.failures] == [
            (1, FAILURE_CLASS_ERROR, "w-test", "ValueError: boom 1"),
            (2, FAILURE_CLASS_ERROR, "w-test", "ValueError: boom 2"),
        ]
        assert info.died_at_ms == info.failures[-1].at_ms
    finally:
        await c.close()


async def test_the_worker_records_a_timeout_and_cancels_the_handler(server: Server) -> None:
    c = await connect(server)
    try:
        q = c.queue("slow")
        id = c.mint()
        assert await q.push(id, b"x")
        cancelled: list[str] = []
        tally = echomq.Tally()

        async def handler(job: Job) -> None:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError as err:
                cancelled.append(str(err.args[0]) if err.args else "")
                raise

        w = Worker(q, handler, max_attempts=1, job_timeout=0.1, name="w-slow", metrics=tally)
        assert w.job_timeout_ms == 100
        t = asyncio.create_task(w.run())
        try:
            await eventually(lambda: tally.get(echomq.Counter.BURIED) == 1, what="buried")
        finally:
            await w.close()
            await t
        assert cancelled == [echomq.JOB_TIMEOUT]
        (a,) = await q.failures(id)
        assert (a.attempt, a.failure_class, a.worker) == (1, FAILURE_CLASS_TIMEOUT, "w-slow")
        assert "100 ms" in a.message
        with pytest.raises(echomq.ArgumentError):
            Worker(q, handler, job_timeout_ms=-1)
    finally:
        await c.close()


async def test_completing_a_retried_job_leaves_no_record(server: Server) -> None:
    c = await connect(server)
    try:
        q = c.queue("second-time-lucky")
        id = c.mint()
        assert await q.push(id, b"x")
        seen: list[int] = []
        recorded = False

        async def handler(job: Job) -> None:
            nonlocal recorded
            seen.append(job.token)
            if job.token == 1:
                raise RuntimeError("once")
            recorded = record_exists(server, q, id)

        # No maintenance (so no sweep): only the completion can forget the record.
        w = Worker(q, handler, backoff=lambda a: 0.0, maintenance_ms=0)
        t = asyncio.create_task(w.run())
        try:
            await eventually(lambda: len(seen) == 2, what="the second attempt")
            await eventually(lambda: not record_exists(server, q, id), what="the record gone")
        finally:
            await w.close()
            await t
        assert recorded, "the record existed while the second attempt ran"
        assert await q.get(id) is None
    finally:
        await c.close()


async def test_maintenance_records_a_lost_lease_and_sweeps_orphans(server: Server) -> None:
    c = await connect(server)
    try:
        q = c.queue("sweep")
        # Orphans: failed attempts recorded, then the jobs completed by a 2.2 client (the
        # generated complete call alone), which leaves the records behind.
        orphans = [c.mint() for _ in range(250)]
        await q.push_many([echomq.NewJob(i, b"") for i in orphans])
        jobs = await q.claim_ids(30_000, orphans)
        for j in jobs:
            await q.retry_failed(j.id, j.token, Failure(FAILURE_CLASS_ERROR, "x"))
        assert await q.promote_ids(orphans) == len(orphans)
        for j in await q.claim_ids(30_000, orphans):
            call = CompleteCall(active=q.keys.active, row=q.keys.row(j.id), id=j.id, token=j.token)
            await call.run(c.redis)
        assert all(record_exists(server, q, i) for i in orphans)
        # A live record (a scheduled job that failed) is kept; a lease left to expire is
        # taken back and recorded as lost.
        live, lost = c.mint(), c.mint()
        assert await q.push(live, b"")
        j = await claimed(q, live)
        await q.retry_failed(live, j.token, Failure(FAILURE_CLASS_ERROR, "kept"), delay=600)
        assert await q.push(lost, b"")
        await claimed(q, lost, lease_ms=1)

        async def never(job: Job) -> None:
            await asyncio.sleep(30)

        # concurrency 1 and the lost job's handler never returns: it is reaped, then claimed.
        w = Worker(q, never, concurrency=1, maintenance_ms=20, shutdown_timeout_ms=0)
        t = asyncio.create_task(w.run())
        try:
            with server.raw() as r:
                await eventually(
                    lambda: r.hlen(q.keys.failures) == 2, within=20, what="the orphans swept"
                )
            await eventually(lambda: q.failures(lost), what="the lost lease recorded")
        finally:
            await w.close()
            await t
        (a,) = await q.failures(lost)
        assert (a.attempt, a.failure_class, a.worker) == (1, FAILURE_CLASS_LEASE_LOST, "")
        assert [x.message for x in await q.failures(live)] == ["kept"]
        info = await q.get(lost)
        assert info is not None and info.state in (STATE_PENDING, STATE_SCHEDULED)
    finally:
        await c.close()


async def test_sweeps_orphans_while_another_owner_holds_the_maintenance_lock(
    server: Server,
) -> None:
    """A 2.2 worker holding the maintenance lock never sweeps: every 2.3 worker sweeps anyway."""
    from echomq._gen.keys import KEY_LOCKS, lock_maintenance
    from echomq._gen.scripts import LockCall

    c = await connect(server)
    try:
        q = c.queue("sweep-unlocked")
        orphans = [c.mint() for _ in range(30)]
        await q.push_many([echomq.NewJob(i, b"") for i in orphans])
        for j in await q.claim_ids(30_000, orphans):
            await q.retry_failed(j.id, j.token, Failure(FAILURE_CLASS_ERROR, "x"))
        assert await q.promote_ids(orphans) == len(orphans)
        for j in await q.claim_ids(30_000, orphans):
            call = CompleteCall(active=q.keys.active, row=q.keys.row(j.id), id=j.id, token=j.token)
            await call.run(c.redis)
        lock = LockCall(
            locks=KEY_LOCKS, name=lock_maintenance(q.name), owner="a-2.2-worker", ttl_ms=600_000
        )
        assert await lock.run(c.redis) > 0

        async def noop(job: Job) -> None:
            return None

        w = Worker(q, noop, maintenance_ms=20)
        t = asyncio.create_task(w.run())
        try:
            with server.raw() as r:
                await eventually(
                    lambda: r.hlen(q.keys.failures) == 0,
                    what="the orphans swept by a worker that does not hold the lock",
                )
        finally:
            await w.close()
            await t
    finally:
        await c.close()
