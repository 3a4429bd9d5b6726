"""echomq 2.5.0: deduplication by a caller's key and cancellation, through the SDK's public API,
against a real redis-server: keys released by every settle, the modes, concurrent pushes,
batches, and a running job cancelled by another client (its handler cancelled, never retried,
nothing left, no error logged)."""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest
from conftest import Server

import echomq
from echomq import (
    ADMISSION_ADMITTED,
    ADMISSION_DUPLICATE,
    ADMISSION_PARKED,
    ADMISSION_REPLACED,
    CANCELLED,
    DEDUP_DEBOUNCE,
    DEDUP_KEEP_LAST,
    DEDUP_THROTTLE,
    Counter,
    DedupKey,
    Job,
    NewJob,
    Retention,
    Tally,
    Worker,
)
from echomq._gen.protocol import (
    SET_PENDING,
    SETS,
    STATE_ACTIVE,
    STATE_DEAD,
    STATE_PENDING,
    STATE_SCHEDULED,
)

log = logging.getLogger("test_dedup")


async def eventually(cond: Callable[[], object], within: float = 15.0, what: str = "") -> None:
    deadline = time.monotonic() + within
    while True:
        v = cond()
        if asyncio.iscoroutine(v):
            v = await v
        if v:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within}s: {what}")
        await asyncio.sleep(0.01)


@asynccontextmanager
async def running(w: Worker) -> AsyncIterator[asyncio.Task[None]]:
    t = asyncio.create_task(w.run())
    try:
        yield t
    finally:
        w.stop()
        async with asyncio.timeout(30):
            await t


async def connect(server: Server) -> echomq.Client:
    return await echomq.connect(server.url, node_lease_ms=120_000, socket_timeout=5)


async def test_until_done_released_by_complete_bury_purge_cancel_and_reap(
    client: echomq.Client,
) -> None:
    q = client.queue("until")
    a, b, c = client.mint(), client.mint(), client.mint()
    r = await q.push(a, b"1", dedup=DedupKey("k"))
    assert (r.outcome, r.id, r.admitted) == (ADMISSION_ADMITTED, a, True)
    r = await q.push(b, b"2", dedup=DedupKey("k"))
    assert (r.outcome, r.id, r.admitted) == (ADMISSION_DUPLICATE, a, False)
    assert await q.get(b) is None
    # complete
    (j,) = await q.claim_ids(30_000, [a])
    assert (await q.push(b, b"2", dedup=DedupKey("k"))).outcome == ADMISSION_DUPLICATE
    await q.complete(j.id, j.token)
    (e,) = await q.dedup_entries(["k"])
    assert e.holder == a and not e.held and e.state == ""
    assert (await q.push(b, b"2", dedup=DedupKey("k"))).outcome == ADMISSION_ADMITTED
    # bury releases; with hold_dead it holds until the purge
    (j,) = await q.claim_ids(30_000, [b])
    await q.bury(j.id, j.token)
    assert (await q.push(c, b"3", dedup=DedupKey("k"))).outcome == ADMISSION_ADMITTED
    await q.cancel_ids([c])
    d, e2 = client.mint(), client.mint()
    assert (await q.push(d, b"", dedup=DedupKey("h", hold_dead=True))).admitted
    (j,) = await q.claim_ids(30_000, [d])
    await q.bury(j.id, j.token)
    r = await q.push(e2, b"", dedup=DedupKey("h", hold_dead=True))
    assert (r.outcome, r.id) == (ADMISSION_DUPLICATE, d)
    (ent,) = await q.dedup_entries(["h"])
    assert ent.held and ent.state == STATE_DEAD
    assert await q.purge(d)
    assert (await q.push(e2, b"", dedup=DedupKey("h", hold_dead=True))).admitted
    # cancel releases
    f, g = client.mint(), client.mint()
    assert (await q.push(f, b"", dedup=DedupKey("c"))).admitted
    assert await q.cancel_ids([f]) == [STATE_PENDING]
    assert (await q.push(g, b"", dedup=DedupKey("c"))).admitted
    # a reap that buries releases (a reap back to pending keeps it held)
    h, i = client.mint(), client.mint()
    assert (await q.push(h, b"", dedup=DedupKey("r"))).admitted
    await q.claim_ids(1, [h])

    async def reaped() -> bool:
        return await q.reap_recorded_ids([h], 1) == 1

    await eventually(reaped, what="the lease expired and was reaped to dead")
    info = await q.get(h)
    assert info is not None and info.state == STATE_DEAD
    assert (await q.push(i, b"", dedup=DedupKey("r"))).admitted


async def test_a_kept_result_holds_only_with_hold_result(client: echomq.Client) -> None:
    q = client.queue("kept")
    for hold in (False, True):
        key = f"k{hold}"
        a, b = client.mint(), client.mint()
        assert (await q.push(a, b"", dedup=DedupKey(key, hold_result=hold))).admitted
        (j,) = await q.claim_ids(30_000, [a])
        await q.complete_result_claim_ids(
            j.id, j.token, 30_000, [], result=b"ok", keep=Retention(count=10)
        )
        r = await q.push(b, b"", dedup=DedupKey(key, hold_result=hold))
        assert r.outcome == (ADMISSION_DUPLICATE if hold else ADMISSION_ADMITTED), hold


async def test_a_sub_second_throttle_expires(client: echomq.Client) -> None:
    q = client.queue("throttle")
    key = DedupKey("burst", DEDUP_THROTTLE, ttl=0.2)
    assert key.ttl_ms == 200
    a = client.mint()
    started = time.monotonic()
    assert (await q.push(a, b"", dedup=key)).admitted
    (j,) = await q.claim_ids(30_000, [a])
    await q.complete(j.id, j.token)  # the holder's fate does not matter
    b = client.mint()
    first = await q.push(b, b"", dedup=key)
    if time.monotonic() - started < 0.2:
        assert (first.outcome, first.id) == (ADMISSION_DUPLICATE, a)
    got: list[echomq.DedupResult] = [first]

    async def admitted() -> bool:
        got.append(await q.push(b, b"", dedup=key))
        return got[-1].admitted

    await eventually(admitted, what="the 200 ms throttle expired")
    assert time.monotonic() - started >= 0.2
    with pytest.raises(echomq.ArgumentError):
        DedupKey("x", DEDUP_THROTTLE)  # throttle needs a ttl
    with pytest.raises(echomq.ArgumentError):
        DedupKey("x", "forever")  # type: ignore[arg-type]
    with pytest.raises(echomq.ArgumentError):
        DedupKey("")


async def test_debounce_replaces_a_waiting_holder_and_never_an_active_one(
    client: echomq.Client,
) -> None:
    q = client.queue("debounce")
    a, b, c, d = (client.mint() for _ in range(4))
    r1 = await q.push(a, b"one", delay=60, dedup=DedupKey("s", DEDUP_DEBOUNCE))
    assert r1.admitted and r1.run_at_ms is not None
    r2 = await q.push(b, b"two", delay=120, dedup=DedupKey("s", DEDUP_DEBOUNCE), events_max=10)
    assert (r2.outcome, r2.id, r2.replaced) == (ADMISSION_REPLACED, a, True)
    assert r2.run_at_ms is not None and r2.run_at_ms >= r1.run_at_ms + 59_000
    info = await q.get(a)
    assert info is not None and info.payload == b"two" and info.state == STATE_SCHEDULED
    assert info.at_ms == r2.run_at_ms
    assert await q.get(b) is None
    evs = await q.read_events()
    assert [(e.event, e.id) for e in evs] == [(echomq.EVENT_REPLACED, a)]
    # no delay: pending now
    r3 = await q.push(c, b"three", dedup=DedupKey("s", DEDUP_DEBOUNCE))
    assert (r3.outcome, r3.id, r3.run_at_ms) == (ADMISSION_REPLACED, a, None)
    (j,) = await q.claim_ids(30_000, [a])
    assert j.payload == b"three"
    # the holder is active: a new job takes the key, the active one is untouched
    r4 = await q.push(d, b"four", dedup=DedupKey("s", DEDUP_DEBOUNCE))
    assert (r4.outcome, r4.id) == (ADMISSION_ADMITTED, d)
    info = await q.get(a)
    assert info is not None and info.state == STATE_ACTIVE and info.payload == b"three"


async def test_push_batch_with_keys_resolves_deferred_replacements(client: echomq.Client) -> None:
    q = client.queue("batch")
    a, b, c, d = (client.mint() for _ in range(4))
    assert (await q.push(a, b"one", dedup=DedupKey("s", DEDUP_DEBOUNCE))).admitted
    res = await q.push_batch(
        [
            NewJob(b, b"two", dedup=DedupKey("s", DEDUP_DEBOUNCE)),  # replaces a (deferred)
            NewJob(c, b"three"),  # no key: as add_many
            NewJob(d, b"four", dedup=DedupKey("t")),  # another policy: its own call
        ]
    )
    assert [r.error for r in res] == [None, None, None]
    assert res[0].dedup is not None and (res[0].dedup.outcome, res[0].dedup.id) == (
        ADMISSION_REPLACED,
        a,
    )
    assert not res[0].enqueued
    assert res[1].enqueued and res[1].dedup is None
    assert res[2].enqueued and res[2].dedup is not None and res[2].dedup.outcome == "admitted"
    info = await q.get(a)
    assert info is not None and info.payload == b"two"
    assert await q.get(b) is None


async def test_keep_last_parks_behind_the_active_holder_and_the_sweep_runs_it(
    server: Server,
) -> None:
    c = await connect(server)
    try:
        q = c.queue("keeplast")
        a, b, p = c.mint(), c.mint(), c.mint()
        assert (await q.push(a, b"first", dedup=DedupKey("sync", DEDUP_KEEP_LAST))).admitted
        started = asyncio.Event()
        release = asyncio.Event()
        ran: list[tuple[str, bytes]] = []

        async def handler(job: Job) -> None:
            ran.append((job.id, job.payload))
            if job.id == a:
                started.set()
                await release.wait()

        w = Worker(q, handler, concurrency=2, maintenance_ms=50)
        async with running(w):
            async with asyncio.timeout(15):
                await started.wait()
            r = await q.push(b, b"second", dedup=DedupKey("sync", DEDUP_KEEP_LAST))
            assert (r.outcome, r.id) == (ADMISSION_PARKED, b)
            r = await q.push(p, b"third", dedup=DedupKey("sync", DEDUP_KEEP_LAST))
            assert (r.outcome, r.id) == (ADMISSION_REPLACED, b)
            (e,) = await q.dedup_entries(["sync"])
            assert (e.holder, e.state, e.parked, e.held) == (a, STATE_ACTIVE, b, True)
            release.set()
            await eventually(lambda: len(ran) == 2, what="the parked job ran after the holder")
        assert ran == [(a, b"first"), (b, b"third")]
        assert await q.get(p) is None
    finally:
        await c.close()


async def test_concurrent_pushes_of_one_key_admit_exactly_one(server: Server) -> None:
    clients = [await connect(server) for _ in range(4)]
    try:
        qs = [c.queue("race") for c in clients]
        ids = [clients[i % 4].mint() for i in range(40)]
        res = await asyncio.gather(
            *(qs[i % 4].push(id, b"", dedup=DedupKey("one")) for i, id in enumerate(ids))
        )
        admitted = [r for r in res if r.admitted]
        assert len(admitted) == 1
        holder = admitted[0].id
        assert all(r.id == holder for r in res)
        assert await qs[0].size(SET_PENDING) == 1
    finally:
        for c in clients:
            await c.close()


async def test_cancel_pending_scheduled_and_by_key(client: echomq.Client) -> None:
    q = client.queue("cancel")
    a, b, c = client.mint(), client.mint(), client.mint()
    assert await q.push(a, b"")
    assert await q.push(b, b"", delay=60)
    assert await q.cancel_ids([a, b, c, a]) == [STATE_PENDING, STATE_SCHEDULED, None, None]
    assert await q.get(a) is None and await q.get(b) is None
    assert await q.cancel_ids([]) == []
    # by key: the holder (active) and the job parked behind it, in one call
    h, p = client.mint(), client.mint()
    assert (await q.push(h, b"", dedup=DedupKey("k", DEDUP_KEEP_LAST))).admitted
    await q.claim_ids(30_000, [h])
    assert (await q.push(p, b"", dedup=DedupKey("k", DEDUP_KEEP_LAST))).outcome == "parked"
    done = await q.cancel_key("k")
    assert [(x.id, x.state) for x in done] == [(h, STATE_ACTIVE), (p, STATE_SCHEDULED)]
    assert await q.cancel_key("k") == []
    assert await q.cancel_key("never") == []
    assert await q.sizes() == {s: 0 for s in SETS}


async def test_a_running_job_cancelled_by_another_client_cancels_its_handler(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="echomq")
    c = await connect(server)
    other = await connect(server)
    try:
        q = c.queue("cancelrun")
        tally = Tally()
        id = c.mint()
        started = asyncio.Event()
        cancelled = asyncio.Event()
        messages: list[str] = []
        runs = 0
        cancelled_at = 0.0

        async def handler(job: Job) -> None:
            nonlocal runs, cancelled_at
            runs += 1
            started.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError as err:
                cancelled_at = time.monotonic()
                messages.append(str(err.args[0]) if err.args else "")
                cancelled.set()
                raise

        w = Worker(q, handler, concurrency=2, lease_ms=30_000, maintenance_ms=50, metrics=tally)
        async with running(w):
            assert await q.push(id, b"")
            async with asyncio.timeout(15):
                await started.wait()
            t0 = time.monotonic()
            assert await other.queue("cancelrun").cancel_ids([id]) == [STATE_ACTIVE]
            async with asyncio.timeout(15):
                await cancelled.wait()
            latency_ms = (cancelled_at - t0) * 1000
            log.warning("handler cancelled %.1f ms after cancel_ids was called", latency_ms)
            print(f"cancel latency: {latency_ms:.1f} ms")
            await eventually(lambda: tally.get(Counter.CANCELLED) == 1, what="counted")
            # no retry, no burial, no row
            await asyncio.sleep(0)
            assert await q.get(id) is None
            assert await q.sizes() == {s: 0 for s in SETS}
        assert messages == [CANCELLED]
        assert runs == 1
        assert tally.get(Counter.RETRIED) == 0 and tally.get(Counter.BURIED) == 0
        assert tally.get(Counter.STALE) == 0
        bad = [
            r
            for r in caplog.records
            if r.name.startswith("echomq") and r.levelno >= logging.WARNING
        ]
        assert not bad, [r.getMessage() for r in bad]
    finally:
        await c.close()
        await other.close()


async def test_a_handler_that_finishes_as_it_is_cancelled_is_not_an_error(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    """A handler that swallows the cancellation and returns is not settled (the row is gone):
    counted as cancelled, no error, no stale."""
    caplog.set_level(logging.INFO, logger="echomq")
    c = await connect(server)
    try:
        q = c.queue("swallow")
        tally = Tally()
        id = c.mint()
        started = asyncio.Event()

        async def handler(job: Job) -> str:
            started.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                pass
            return "done anyway"

        w = Worker(q, handler, maintenance_ms=0, metrics=tally)
        async with running(w):
            assert await q.push(id, b"")
            async with asyncio.timeout(15):
                await started.wait()
            assert await q.cancel_ids([id]) == [STATE_ACTIVE]
            await eventually(lambda: tally.get(Counter.CANCELLED) == 1, what="counted")
        assert tally.get(Counter.COMPLETED) == 0 and tally.get(Counter.STALE) == 0
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    finally:
        await c.close()


async def test_a_missed_cancellation_is_learnt_at_the_next_extend(server: Server) -> None:
    """A worker that missed the message (here: the job is cancelled as its lease is extended by
    a short lease) cancels the handler at its next extend, and settles nothing."""
    c = await connect(server)
    try:
        q = c.queue("missed")
        tally = Tally()
        id = c.mint()
        started = asyncio.Event()
        cancelled = asyncio.Event()

        async def handler(job: Job) -> None:
            started.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled.set()
                raise

        w = Worker(q, handler, lease_ms=300, maintenance_ms=0, metrics=tally)
        async with running(w):
            assert await q.push(id, b"")
            async with asyncio.timeout(15):
                await started.wait()
            # the message is published to no one: the worker's subscription is dropped first
            w._holding.clear()
            assert await q.cancel_ids([id]) == [STATE_ACTIVE]
            async with asyncio.timeout(15):
                await cancelled.wait()
        assert tally.get(Counter.RETRIED) == 0 and tally.get(Counter.BURIED) == 0
        assert await q.get(id) is None
    finally:
        await c.close()


async def test_run_ends_promptly_after_stop_with_the_listener(server: Server) -> None:
    c = await connect(server)
    try:
        q = c.queue("prompt")
        for _ in range(5):

            async def handler(job: Job) -> None:
                pass

            w = Worker(q, handler, maintenance_ms=20)
            t = asyncio.create_task(w.run())
            await asyncio.sleep(0.05)
            t0 = time.monotonic()
            w.stop()
            async with asyncio.timeout(10):
                await t
            assert time.monotonic() - t0 < 5
        # the listener's connection is gone with the worker
        with server.raw() as r:
            assert r.pubsub_shardnumsub(q.keys.cancel) == [(q.keys.cancel.encode(), 0)]
    finally:
        await c.close()


def test_a_timedelta_ttl_is_exact() -> None:
    assert DedupKey("k", DEDUP_THROTTLE, ttl=datetime.timedelta(milliseconds=7)).ttl_ms == 7
