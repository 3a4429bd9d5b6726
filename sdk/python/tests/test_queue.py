"""The Queue's calls on a real server: admission, the lifecycle, inspection, batches."""

from __future__ import annotations

import asyncio
import time

import pytest
from conftest import Server

import echomq
from echomq import Job, NewJob
from echomq._gen.keys import KEY_BUNDLE, KEY_LOCKS, KEY_VERSION
from echomq._gen.protocol import (
    SET_ACTIVE,
    SET_DEAD,
    SET_PENDING,
    SET_SCHEDULE,
    SETS,
    STATE_ACTIVE,
    STATE_DEAD,
    STATE_PENDING,
    STATE_SCHEDULED,
    VERSION,
    VERSION_RECORD,
)
from echomq._gen.scripts import BUNDLE_DIGEST


def now_ms() -> int:
    return time.time_ns() // 1_000_000


async def test_connect_fences_a_fresh_keyspace(server: Server, client: echomq.Client) -> None:
    with server.raw() as r:
        assert r.get(KEY_VERSION) == VERSION_RECORD.encode()
        assert r.hget(KEY_BUNDLE, VERSION) == BUNDLE_DIGEST.encode()
    assert client.version_found == VERSION_RECORD
    assert client.fences >= 1
    assert 0 <= client.node <= 1023


async def test_push_claim_complete(client: echomq.Client) -> None:
    q = client.queue("orders")
    id = client.mint()
    assert await q.push(id, b"hello")
    assert not await q.push(id, b"again"), "a duplicate id is answered False"
    info = await q.get(id)
    assert info is not None and info.state == STATE_PENDING and info.payload == b"hello"
    assert info.attempts == 0 and info.at_ms is None
    job = await q.claim(30_000)
    assert isinstance(job, Job)
    assert job.id == id and job.token == 1 and job.payload == b"hello"
    assert job.deadline_ms > now_ms()
    info = await q.get(id)
    assert info is not None and info.state == STATE_ACTIVE and info.at_ms == job.deadline_ms
    assert await q.claim(30_000) is None
    deadline = await q.extend(id, job.token, 60_000)
    assert deadline >= job.deadline_ms
    await q.complete(id, job.token)
    assert await q.get(id) is None
    assert await q.sizes() == {s: 0 for s in SETS}


async def test_enqueue_at_promote_retry_bury_revive_purge(client: echomq.Client) -> None:
    q = client.queue("mail.v2")
    id = client.mint()
    assert await q.enqueue_at(id, "text payload", now_ms() - 1)
    info = await q.get(id)
    assert info is not None and info.state == STATE_SCHEDULED and info.at_ms is not None
    assert await q.promote() == 1
    job = await q.claim(10_000)
    assert job is not None and job.payload == b"text payload"
    run_at = await q.retry(id, job.token, 0)
    assert run_at > 0
    assert (await q.sizes())[SET_SCHEDULE] == 1
    assert await q.promote() == 1
    job2 = await q.claim(10_000)
    assert job2 is not None and job2.token == 2
    await q.bury(id, job2.token)
    info = await q.get(id)
    assert info is not None and info.state == STATE_DEAD and info.attempts == 2
    assert await q.revive(id)
    assert not await q.revive(id), "a job that is not dead is not revived"
    info = await q.get(id)
    assert info is not None and info.state == STATE_PENDING and info.attempts == 2
    job3 = await q.claim(10_000)
    assert job3 is not None
    await q.bury(id, job3.token)
    assert await q.purge(id)
    assert not await q.purge(id)
    assert await q.get(id) is None


async def test_enqueue_and_reap(client: echomq.Client) -> None:
    q = client.queue("reaped")
    id = client.mint()
    assert await q.enqueue(id, b"x")
    assert not await q.enqueue(id, b"x")
    job = await q.claim(1)
    assert job is not None
    await asyncio.sleep(0.01)
    assert await q.reap(max_attempts=1) == 1
    assert (await q.sizes())[SET_DEAD] == 1


async def test_push_batch_claim_many_complete_claim(client: echomq.Client) -> None:
    q = client.queue("batch")
    ids = [client.mint() for _ in range(5)]
    res = await q.push_batch([NewJob(id=i, payload=f"p{n}") for n, i in enumerate(ids)])
    assert [r.enqueued for r in res] == [True] * 5
    assert all(r.error is None for r in res)
    again = await q.push_batch(
        [NewJob(id=ids[0], payload=b""), NewJob(id=client.mint(), payload=b"")]
    )
    assert [r.enqueued for r in again] == [False, True]
    jobs = await q.claim_many(30_000, 2)
    assert [j.id for j in jobs] == ids[:2], "oldest first"
    nxt = await q.complete_claim(jobs[0].id, jobs[0].token, 30_000, 2)
    assert [j.id for j in nxt] == ids[2:4]
    sizes = await q.sizes()
    assert sizes[SET_ACTIVE] == 3 and sizes[SET_PENDING] == 2
    assert await q.push_batch([]) == []


async def test_push_batch_after_script_flush(server: Server, client: echomq.Client) -> None:
    """EVALSHA answered NOSCRIPT in a pipeline is resent as EVAL, call by call."""
    q = client.queue("flushed")
    with server.raw() as r:
        r.script_flush()
    res = await q.push_batch([NewJob(id=client.mint(), payload=b"a") for _ in range(3)])
    assert [r.enqueued for r in res] == [True, True, True]
    with server.raw() as r:
        r.script_flush()
    assert await q.push(client.mint(), b"b")
    assert (await q.sizes())[SET_PENDING] == 4


async def test_page_and_browse(client: echomq.Client) -> None:
    q = client.queue("paged")
    ids = [client.mint() for _ in range(7)]
    for i in ids:
        assert await q.push(i, b"")
    assert await q.browse(SET_PENDING, 3) == list(reversed(ids))[:3]
    seen: list[str] = []
    after = ""
    for _ in range(10):
        p = await q.page(SET_PENDING, after, 3)
        seen += p.ids
        if not p.next:
            break
        after = p.next
    assert seen == list(reversed(ids))
    # A scored set pages by score, then id.
    for _ in range(4):
        job = await q.claim(60_000)
        assert job is not None
    seen, after = [], ""
    for _ in range(10):
        p = await q.page(SET_ACTIVE, after, 3)
        seen += p.ids
        if not p.next:
            break
        after = p.next
    assert sorted(seen) == sorted(ids[:4]) and len(seen) == 4


async def test_payload_cap(server: Server) -> None:
    c = await echomq.connect(server.url, max_payload=8, node_lease_ms=120_000)
    try:
        assert c.max_payload == 8
        with pytest.raises(echomq.PayloadTooLargeError):
            await c.queue("capped").push(c.mint(), b"123456789")
        assert await c.queue("capped").push(c.mint(), b"12345678")
    finally:
        await c.close()


async def test_node_leases_are_unique_and_released(server: Server) -> None:
    a = await echomq.connect(server.url, node_lease_ms=120_000)
    b = await echomq.connect(server.url, node_lease_ms=120_000)
    try:
        assert a.node != b.node
        with server.raw() as r:
            locks = r.hgetall(KEY_LOCKS)
        assert len(locks) == 2
    finally:
        await a.close()
        await b.close()
    with server.raw() as r:
        assert r.hlen(KEY_LOCKS) == 0, "close releases the node lease"


async def test_fixed_node(server: Server) -> None:
    c = await echomq.connect(server.url, node=7)
    try:
        assert c.node == 7
        assert echomq.parse_id(c.mint()).node == 7
    finally:
        await c.close()


async def test_push_batch_sends_push_many_chunks(server: Server, client: echomq.Client) -> None:
    """300 jobs go out as three push_many calls in one round trip; a duplicate inside the batch
    reports False; a chunk refused for one foreign id is pushed job by job, so only that job fails
    with the wire error of its class and the others are admitted."""
    from echomq.queue import PUSH_MAX_BATCH

    q = client.queue("chunked")
    ids = [client.mint() for _ in range(2 * PUSH_MAX_BATCH + 44)]
    jobs = [NewJob(id=i, payload=b"x") for i in ids] + [NewJob(id=ids[0], payload=b"again")]
    with server.raw() as r:
        r.config_resetstat()
    res = await q.push_batch(jobs)
    assert [x.enqueued for x in res] == [True] * len(ids) + [False]
    assert all(x.error is None for x in res)
    calls = server.commandstats()
    # three calls; on a server that had not seen push_many yet, each answered NOSCRIPT once
    assert calls.get("evalsha") == 3 and calls.get("eval", 0) in (0, 3), calls
    info = await q.get(ids[0])
    assert info is not None and info.payload == b"x", "the duplicate left the row untouched"

    other = next(k for k in echomq._gen.protocol.KINDS if k != echomq._gen.protocol.WORK_KIND)
    foreign = echomq.new_id(other, now_ms(), 3, 0)
    fresh = [client.mint() for _ in range(4)]
    res = await q.push_batch(
        [NewJob(fresh[0], b""), NewJob(fresh[1], b""), NewJob(foreign, b""), NewJob(fresh[2], b"")]
    )
    assert [x.enqueued for x in res] == [True, True, False, True]
    assert isinstance(res[2].error, echomq.KindError)
    assert [x.error for x in (res[0], res[1], res[3])] == [None, None, None]
    assert await q.get(foreign) is None
