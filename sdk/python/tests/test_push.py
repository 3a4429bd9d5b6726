"""Coalesced pushes and the 2.2.0 Queue calls on a real server: batches formed with each caller's
own answer, refusals, cancellation before sending, linger, max batch, opt-out; push_many,
claim_ids, complete_claim_ids, promote_ids and reap_ids."""

from __future__ import annotations

import asyncio
import time

import pytest
from conftest import Server

import echomq
from echomq._gen.protocol import KINDS, SET_ACTIVE, SET_PENDING, STATE_DEAD, WORK_KIND


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def foreign_id() -> str:
    other = next(k for k in KINDS if k != WORK_KIND)
    return echomq.new_id(other, now_ms(), 5, 0)


async def connect(server: Server, **kw: object) -> echomq.Client:
    return await echomq.connect(server.url, node_lease_ms=120_000, socket_timeout=5, **kw)  # type: ignore[arg-type]


def script_calls(server: Server, c: echomq.Client | None = None, fences: int = 0) -> int:
    """EVALSHA calls since the last CONFIG RESETSTAT, less the fences of the connections c opened
    since it had fenced fences connections (each new connection runs the fence script)."""
    n = server.commandstats().get("evalsha", 0)
    return n - (c.fences - fences if c is not None else 0)


async def test_concurrent_pushes_are_coalesced_with_each_callers_answer(server: Server) -> None:
    tally = echomq.Tally()
    c = await connect(server, metrics=tally)
    try:
        q = c.queue("coalesce")
        ids = [c.mint() for _ in range(300)]
        dup = ids[7]
        bad = foreign_id()
        await q.push(c.mint(), b"warm")  # the scripts are loaded: no NOSCRIPT below
        await c.queue("coalesce").push_many([echomq.NewJob(c.mint(), b"")])
        with server.raw() as r:
            r.config_resetstat()
        f0 = c.fences
        calls = [q.push(i, i.encode()) for i in ids] + [q.push(dup, b"again"), q.push(bad, b"")]
        res = await asyncio.gather(*calls, return_exceptions=True)
        assert res[: len(ids)] == [True] * len(ids)
        assert res[len(ids)] is False, "a second push of one id inside a batch is a duplicate"
        assert isinstance(res[-1], echomq.KindError), "only the foreign id's caller is refused"
        n = script_calls(server, c, f0)
        assert n < len(calls) / 4, f"{n} script calls for {len(calls)} pushes"
        assert await q.size(SET_PENDING) == len(ids) + 2
        info = await q.get(dup)
        assert info is not None and info.payload == dup.encode(), "the duplicate left the row"
        assert await q.get(bad) is None
        assert tally.get(echomq.Counter.ENQUEUED) == len(ids) + 2, "the admitted jobs counted"
    finally:
        await c.close()


async def test_max_batch_caps_a_coalesced_call(server: Server) -> None:
    c = await connect(server, push_max_batch=10, push_linger_ms=50)
    try:
        q = c.queue("capped")
        await q.push(c.mint(), b"")
        with server.raw() as r:
            r.config_resetstat()
        f0 = c.fences
        ids = [c.mint() for _ in range(101)]
        assert all(await asyncio.gather(*(q.push(i, b"") for i in ids)))
        n = script_calls(server, c, f0)
        assert 11 <= n <= 20, f"batches of at most 10: {n} calls for {len(ids)} pushes"
    finally:
        await c.close()


async def test_a_push_cancelled_before_its_batch_is_sent_is_left_out(server: Server) -> None:
    c = await connect(server, push_linger_ms=200)
    try:
        q = c.queue("cancelled")
        a, b, d = c.mint(), c.mint(), c.mint()
        ta = asyncio.create_task(q.push(a, b""))  # sent at once
        tb = asyncio.create_task(q.push(b, b""))  # waits for a's batch
        td = asyncio.create_task(q.push(d, b""))
        await asyncio.sleep(0)
        tb.cancel()
        assert await ta is True and await td is True
        with pytest.raises(asyncio.CancelledError):
            await tb
        assert await q.get(b) is None, "the cancelled caller's job was never sent"
        assert await q.size(SET_PENDING) == 2
    finally:
        await c.close()


async def test_linger_bounds_the_wait_behind_a_batch_in_flight(server: Server) -> None:
    """A push arriving while a batch is in flight goes when it returns, or after the linger."""
    c = await connect(server, push_linger_ms=5)
    try:
        q = c.queue("linger")
        t0 = time.monotonic()
        res = await asyncio.gather(*(q.push(c.mint(), b"") for _ in range(50)))
        assert all(res)
        assert time.monotonic() - t0 < 2.0
    finally:
        await c.close()


async def test_coalescing_off_sends_one_call_per_push(server: Server) -> None:
    c = await connect(server, coalesce=False)
    try:
        q = c.queue("single")
        await q.push(c.mint(), b"")
        with server.raw() as r:
            r.config_resetstat()
        f0 = c.fences
        ids = [c.mint() for _ in range(40)]
        assert all(await asyncio.gather(*(q.push(i, b"") for i in ids)))
        assert script_calls(server, c, f0) == len(ids)
        with pytest.raises(echomq.KindError):
            await q.push(foreign_id(), b"")
    finally:
        await c.close()


async def test_coalesced_pushes_survive_a_restart(aof_server: Server) -> None:
    c = await connect(aof_server)
    try:
        q = c.queue("restart")
        before = [c.mint() for _ in range(50)]
        assert all(await asyncio.gather(*(q.push(i, b"") for i in before)))
        aof_server.kill()
        aof_server.start()
        after = [c.mint() for _ in range(50)]
        assert all(await asyncio.gather(*(q.push(i, b"") for i in after))), "no EOF seen"
        assert await q.size(SET_PENDING) == 100
    finally:
        await c.close()


async def test_push_many_admits_and_refuses_as_a_whole(
    server: Server, client: echomq.Client
) -> None:
    q = client.queue("many")
    ids = [client.mint() for _ in range(3)]
    jobs = [echomq.NewJob(i, b"p") for i in ids]
    assert await q.push_many(jobs) == [True, True, True]
    assert await q.push_many(jobs[:1]) == [False]
    with pytest.raises(echomq.KindError):
        await q.push_many([echomq.NewJob(client.mint(), b""), echomq.NewJob(foreign_id(), b"")])
    assert await q.size(SET_PENDING) == 3, "nothing of the refused call was written"
    with server.raw() as r:
        r.config_resetstat()
    with pytest.raises(echomq.IdError):
        await q.push_many([echomq.NewJob("not an id", b"")])
    assert script_calls(server) == 0, "a malformed id is refused before anything is sent"


async def test_claim_ids_and_complete_claim_ids(server: Server, client: echomq.Client) -> None:
    q = client.queue("ids")
    ids = [client.mint() for _ in range(4)]
    await q.push_batch([echomq.NewJob(i, i.encode()) for i in ids])
    assert await q.head(SET_PENDING, 10) == ids, "the head is FIFO"
    got = await q.claim_ids(30_000, [ids[1], ids[0]])
    assert [j.id for j in got] == [ids[1], ids[0]], "in the order given"
    assert [j.token for j in got] == [1, 1] and got[0].payload == ids[1].encode()
    assert await q.claim_ids(30_000, [ids[0]]) == [], "an id no longer pending is skipped"
    nxt = await q.complete_claim_ids(ids[1], 1, 30_000, [ids[0], ids[2]])
    assert [j.id for j in nxt] == [ids[2]]
    assert await q.get(ids[1]) is None
    with pytest.raises(echomq.StaleError):
        await q.complete_claim_ids(ids[0], 7, 30_000, [ids[3]])
    assert await q.head(SET_PENDING, 10) == [ids[3]], "a stale completion leases nothing"
    jobs = await q.complete_claim(ids[0], 1, 30_000, 5)
    assert [j.id for j in jobs] == [ids[3]]
    assert await q.claim_many(30_000, 5) == []
    assert await q.size(SET_ACTIVE) == 2


async def test_promote_ids_and_reap_ids(server: Server, client: echomq.Client) -> None:
    q = client.queue("maint")
    due, later = client.mint(), client.mint()
    assert await q.enqueue_at(due, b"", now_ms() - 1000)
    assert await q.enqueue_at(later, b"", now_ms() + 3_600_000)
    assert await q.promote_ids([due, later]) == 1, "only the due one moves"
    with server.raw() as r:
        assert r.llen(q.keys.wake) == 1, "promote_ids rang the doorbell"
        r.delete(q.keys.wake)
    assert await q.promote_due() == 0
    a = await q.claim_many(60_000, 1)
    assert [j.id for j in a] == [due]
    b_id = client.mint()
    assert await q.push(b_id, b"")
    b = await q.claim_ids(60_000, [b_id])
    assert await q.reap_ids(0, [due]) == 0, "an unexpired lease is left alone"
    with server.raw() as r:
        r.zadd(q.keys.active, {due: 1, b_id: 1})  # both leases expired
    assert await q.reap_ids(1, [due]) == 1
    info = await q.get(due)
    assert info is not None and info.state == STATE_DEAD, "out of attempts: buried"
    assert await q.reap_expired(100, 0) == 1
    assert [j.id for j in b] == [b_id]
    assert await q.head(SET_PENDING, 5) == [b_id], "reaped back to pending"
