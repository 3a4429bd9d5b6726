"""The SDK on a real Redis Cluster of three primaries (redis_cluster.py), as the Go and TypeScript
cluster suites test theirs: the fence and the node lease on the reserve's slot, queues on every
primary, the manifest's probes, pipelines across slots, NOSCRIPT per node, the worker's doorbell,
MOVED after a slot moved (commands and the blocked doorbell pop), ASK and TRYAGAIN while a slot is
split by a batched migration, TRYAGAIN past its budget as a ConnectionError, the fence again
after the nodes' connections were killed, and the failure records (2.3.0) of get, purge and the
worker."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from redis.exceptions import ClusterDownError
from redis_cluster import ClusterNode, RedisCluster

import echomq
from echomq import Counter, Tally
from echomq._gen.keys import KEY_BUNDLE, KEY_LOCKS, KEY_VERSION
from echomq._gen.probes import PROBES
from echomq._gen.protocol import STATE_ACTIVE, VERSION_MAJOR, VERSION_RECORD, VERSION_RECORD_PREFIX
from echomq._gen.scripts import CompleteCall
from echomq.errors import CONNECTION_ERROR_CODE

quiet = logging.getLogger("echomq.test.cluster")
quiet.addHandler(logging.NullHandler())
quiet.propagate = False

Opener = Callable[..., Awaitable[echomq.Client]]

SLACK = 3.0
"""How late past its deadline a call may fail on a loaded machine."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisCluster]:
    cl = RedisCluster(tmp_path_factory.mktemp("cluster"))
    try:
        cl.start()
        yield cl
    finally:
        cl.stop()


@pytest.fixture
async def open_client(cluster: RedisCluster) -> AsyncIterator[Opener]:
    clients: list[echomq.Client] = []

    async def open(**opts: Any) -> echomq.Client:
        opts.setdefault("logger", quiet)
        opts.setdefault("socket_timeout", 10)
        c = await echomq.connect_cluster(cluster.urls, **opts)
        clients.append(c)
        return c

    try:
        yield open
    finally:
        for c in clients:
            await c.close()
        # A test that failed half way must not leave a slot open for the next.
        await cluster.wait_agreed()


_named = 0


async def queue_on(cluster: RedisCluster, n: ClusterNode, tag: str) -> str:
    """A fresh queue name whose slot the primary n serves."""
    global _named
    for _ in range(1000):
        _named += 1
        name = f"{tag}-{_named}"
        if await cluster.owner(await cluster.key_slot(echomq.QueueKeys(name).pending)) is n:
            return name
    raise AssertionError(f"no queue name found on {n}")


async def until(what: str, cond: Callable[[], Awaitable[bool]], limit: float = 15.0) -> None:
    """Waits for cond (checked every 10 ms) for up to limit seconds."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if await cond():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


async def round_trip(c: echomq.Client, q: echomq.Queue, n: int) -> list[str]:
    """Pushes, claims and completes n jobs on q; returns their ids."""
    ids = [c.mint() for _ in range(n)]
    for i, id in enumerate(ids):
        assert await q.push(id, f"p{i}") is True
    for id in ids:
        j = await q.claim(60_000)
        assert j is not None and j.id == id
        await q.complete(j.id, j.token)
    assert await q.sizes() == {"pending": 0, "active": 0, "schedule": 0, "dead": 0}
    return ids


async def test_connect_fences_and_leases_on_the_reserve_node_and_queues_run_on_every_primary(
    cluster: RedisCluster, open_client: Opener
) -> None:
    c = await open_client()
    assert c.version_found == VERSION_RECORD
    assert c.fences >= 1
    assert c.node >= 0
    assert isinstance(c.redis, echomq.ClusterRedis)
    slot = await cluster.key_slot(KEY_VERSION)
    reserve = await cluster.owner(slot)
    for k in (KEY_VERSION, KEY_BUNDLE, KEY_LOCKS):
        assert await cluster.key_slot(k) == slot
        assert await reserve.cmd("EXISTS", k) == 1, f"{k} on {reserve}"
    for n in cluster.nodes:
        if n is not reserve:
            assert await n.cmd("DBSIZE") == 0, f"{n} holds no reserve key"
    for n in cluster.nodes:
        q = c.queue(await queue_on(cluster, n, "every"))
        ids = await round_trip(c, q, 3)
        # The rows were retired on the queue's node, where the sets are.
        assert await n.cmd("EXISTS", q.keys.row(ids[0])) == 0
        assert await n.cmd("EXISTS", q.keys.pending) == 0


async def test_connect_with_cluster_true_discovers_from_one_node(
    cluster: RedisCluster, open_client: Opener
) -> None:
    c = await echomq.connect(cluster.urls[1], cluster=True, logger=quiet, node=7)
    try:
        assert isinstance(c.redis, echomq.ClusterRedis)
        assert c.node == 7
        for n in cluster.nodes:
            q = c.queue(await queue_on(cluster, n, "one-seed"))
            await round_trip(c, q, 1)
    finally:
        await c.close()


async def test_an_unreachable_cluster_is_a_connection_error(cluster: RedisCluster) -> None:
    from conftest import free_port

    with pytest.raises(echomq.ConnectionError) as e:
        await echomq.connect_cluster([f"redis://127.0.0.1:{free_port()}"], logger=quiet)
    assert e.value.retryable


async def test_every_probe_check_passes_on_the_cluster_and_leaves_nothing_behind(
    cluster: RedisCluster, open_client: Opener
) -> None:
    c = await open_client()

    async def keys() -> list[str]:
        out: list[str] = []
        for n in cluster.nodes:
            out += [f"{n.addr} {k}" for k in await n.cmd("KEYS", "*")]
        return sorted(out)

    before = await keys()
    t = await echomq.run_probes(c)
    total = sum(len(p.steps) for p in PROBES)
    assert len(t.results) == total > 0
    assert t.passed == total, "\n".join(t.lines())
    assert await keys() == before


async def test_a_pipeline_across_slots_goes_to_each_slots_node(
    cluster: RedisCluster, open_client: Opener
) -> None:
    c = await open_client()
    qs: list[echomq.Queue] = []
    for n in cluster.nodes:
        q = c.queue(await queue_on(cluster, n, "pipe"))
        for _ in range(len(qs) + 1):
            assert await q.push(c.mint(), "x") is True
        qs.append(q)
    async with c.redis.pipeline(transaction=False) as pipe:
        for q in qs:
            pipe.zcard(q.keys.pending)
        res = await pipe.execute()
    assert res == [1, 2, 3]
    # sizes reads the four sets of the queue in one round trip, get a row and its sets.
    assert (await qs[2].sizes())["pending"] == 3
    id = c.mint()
    await qs[2].push(id, "read me")
    info = await qs[2].get(id)
    assert info is not None and info.state == "pending"
    assert info.payload == b"read me"


async def test_noscript_is_per_node_after_script_flush_calls_run_with_eval_and_load_again(
    cluster: RedisCluster, open_client: Opener
) -> None:
    c = await open_client()
    n1 = cluster.nodes[1]
    q = c.queue(await queue_on(cluster, n1, "noscript"))
    await round_trip(c, q, 1)
    for n in cluster.nodes:
        await n.cmd("SCRIPT", "FLUSH")
    before = await n1.error_count("NOSCRIPT")
    await round_trip(c, q, 2)
    assert await n1.error_count("NOSCRIPT") > before
    # Loaded again: the next calls run with EVALSHA alone.
    after = await n1.error_count("NOSCRIPT")
    await round_trip(c, q, 2)
    assert await n1.error_count("NOSCRIPT") == after


async def test_a_worker_on_the_cluster_runs_every_job_once_woken_by_the_doorbell(
    cluster: RedisCluster, open_client: Opener
) -> None:
    tally = Tally()
    c = await open_client(metrics=tally)
    n2 = cluster.nodes[2]
    q = c.queue(await queue_on(cluster, n2, "worker"))
    seen: dict[str, int] = {}

    async def handler(job: echomq.Job) -> None:
        seen[job.id] = seen.get(job.id, 0) + 1

    w = echomq.Worker(q, handler, concurrency=4, wait_ms=10_000, logger=quiet)
    running = asyncio.create_task(w.run())
    try:
        # The worker found the queue empty and blocks on the doorbell, on the queue's node.
        async def blocked() -> bool:
            return "cmd=blpop" in str(await n2.cmd("CLIENT", "LIST"))

        await until("the worker blocked on the doorbell", blocked)
        t0 = time.monotonic()
        ids = [c.mint() for _ in range(30)]
        for id in ids:
            await q.push(id, "w")

        async def done() -> bool:
            return tally.get(Counter.COMPLETED) == 30

        await until("all done", done)
        assert time.monotonic() - t0 < 5, "woken by the bell, not the 10 s wait"
    finally:
        w.stop()
        await running
    assert sorted(seen) == sorted(ids)
    assert all(v == 1 for v in seen.values())


async def test_outputs_on_the_cluster_delay_result_progress_events_and_counters(
    cluster: RedisCluster, open_client: Opener
) -> None:
    """echomq 2.4.0 on the cluster: a delayed push (add_many) started by an idle worker that
    promotes it itself, its progress and kept result read by lookup (get's pipeline with the
    output script), the events listener (its XREAD wait on the queue's node) and the
    counters."""
    c = await open_client()
    n1 = cluster.nodes[1]
    q = c.queue(await queue_on(cluster, n1, "outputs"))
    id = c.mint()
    progressed = asyncio.Event()
    finish = asyncio.Event()

    async def handler(job: echomq.Job) -> str:
        await job.report_progress(7)
        progressed.set()
        await finish.wait()
        return "made"

    w = echomq.Worker(
        q, handler, wait=5, maintenance_ms=0, keep_results=echomq.Retention(10), logger=quiet
    )
    running = asyncio.create_task(w.run())
    got: list[echomq.QueueEvent] = []

    async def listen() -> None:
        async for ev in q.events(wait=0.5):
            got.append(ev)
            if ev.event == echomq.EVENT_COMPLETED:
                return

    listener = asyncio.create_task(listen())
    try:
        await asyncio.sleep(0.1)
        assert await q.push(id, b"x", delay=0.2, attempts=2)
        async with asyncio.timeout(10):
            await progressed.wait()
        info = await q.get(id)
        assert info is not None and info.progress == b"7"
        finish.set()
        async with asyncio.timeout(10):
            await listener
    finally:
        w.stop()
        await running
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)
    assert [e.event for e in got] == [echomq.EVENT_PROGRESS, echomq.EVENT_COMPLETED]
    found = await q.lookup(id)
    assert found.job is None and found.completed is not None
    assert found.completed.result == b"made"
    assert (await q.counters()).totals.completed == 1
    assert await n1.cmd("HLEN", q.keys.options) == 0, "the completion deleted the job's policy"


async def test_failure_records_on_the_cluster_get_purge_and_the_worker(
    cluster: RedisCluster, open_client: Opener
) -> None:
    """echomq 2.3.0 on the cluster: get pipelines the failures script with the row read (also
    after a SCRIPT FLUSH: NOSCRIPT per node), purge pipelines forget_failures, and the worker
    records, forgets after completing a retried job and sweeps (HSCAN) on the queue's node."""
    tally = Tally()
    c = await open_client(metrics=tally)
    n1 = cluster.nodes[1]
    q = c.queue(await queue_on(cluster, n1, "failures"))
    dead = c.mint()
    assert await q.push(dead, b"d")
    jobs = await q.claim_ids(60_000, [dead])
    await q.bury_failed(dead, jobs[0].token, echomq.Failure("error", "bad", worker="w"))
    for n in cluster.nodes:
        await n.cmd("SCRIPT", "FLUSH")
    info = await q.get(dead)
    assert info is not None and info.state == "dead"
    assert [(a.attempt, a.message, a.worker) for a in info.failures] == [(1, "bad", "w")]
    assert info.died_at_ms == info.failures[0].at_ms
    assert await q.purge(dead)
    assert await n1.cmd("HLEN", q.keys.failures) == 0, "purge forgot the record"

    ids = [c.mint() for _ in range(5)]

    async def handler(job: echomq.Job) -> None:
        if job.token == 1:
            raise RuntimeError("first time")

    async def forgotten() -> bool:
        return bool(await n1.cmd("HLEN", q.keys.failures) == 0)

    # No maintenance: only the completions (forget_failures pipelined behind them) forget.
    w = echomq.Worker(q, handler, backoff=lambda a: 0.0, maintenance_ms=0, logger=quiet)
    running = asyncio.create_task(w.run())
    try:
        for id in ids:
            assert await q.push(id, b"w")

        async def done() -> bool:
            return tally.get(Counter.COMPLETED) == len(ids)

        await until("every job completed on its second attempt", done)
        await until("no record left", forgotten)
    finally:
        w.stop()
        await running
    assert tally.get(Counter.RETRIED) == len(ids)

    # An orphan a 2.2 client's complete left is swept by the maintenance (HSCAN on n1).
    orphan = c.mint()
    assert await q.push(orphan, b"o")
    j = (await q.claim_ids(60_000, [orphan]))[0]
    await q.retry_failed(orphan, j.token, echomq.Failure("error", "x"))
    assert await q.promote_ids([orphan]) == 1
    j = (await q.claim_ids(60_000, [orphan]))[0]
    await CompleteCall(active=q.keys.active, row=q.keys.row(orphan), id=orphan, token=j.token).run(
        c.redis
    )
    assert not await forgotten()
    w = echomq.Worker(q, handler, maintenance_ms=20, logger=quiet)
    running = asyncio.create_task(w.run())
    try:
        await until("the orphan swept", forgotten)
    finally:
        w.stop()
        await running


async def test_after_the_slot_moved_calls_follow_moved_and_the_blocked_worker_is_woken(
    cluster: RedisCluster, open_client: Opener
) -> None:
    tally = Tally()
    c = await open_client(metrics=tally)
    src, dst = cluster.nodes[0], cluster.nodes[1]
    q = c.queue(await queue_on(cluster, src, "moved"))
    slot = await cluster.key_slot(q.keys.pending)
    early = [c.mint() for _ in range(5)]
    for id in early:
        assert await q.push(id, "e") is True
    # Jobs due in an hour keep keys in the slot to migrate (the schedule and their rows).
    for _ in range(3):
        assert await q.enqueue_at(c.mint(), "later", int(time.time() * 1000) + 3_600_000)
    seen: dict[str, int] = {}

    async def handler(job: echomq.Job) -> None:
        seen[job.id] = seen.get(job.id, 0) + 1

    w = echomq.Worker(q, handler, concurrency=2, wait_ms=20_000, logger=quiet)
    running = asyncio.create_task(w.run())
    try:

        async def early_done() -> bool:
            return tally.get(Counter.COMPLETED) == 5

        await until("the early jobs", early_done)

        async def blocked() -> bool:
            return "cmd=blpop" in str(await src.cmd("CLIENT", "LIST"))

        await until("the worker blocked on the doorbell on the old node", blocked)
        moved_before = await src.error_count("MOVED")
        keys = await cluster.migrate_slot(slot, dst, batch=2)
        assert keys >= 4, keys  # the schedule and three rows
        assert await dst.cmd("CLUSTER", "COUNTKEYSINSLOT", slot) == keys
        t0 = time.monotonic()
        late = [c.mint() for _ in range(5)]
        for id in late:
            assert await q.push(id, "l") is True

        async def late_done() -> bool:
            return tally.get(Counter.COMPLETED) == 10

        await until("the late jobs", late_done)
        assert time.monotonic() - t0 < 10, "the blocked pop was redirected, not left to its 20 s"
        assert await src.error_count("MOVED") > moved_before, "MOVED was met"
    finally:
        w.stop()
        await running
    assert sorted(seen) == sorted(early + late)
    assert all(v == 1 for v in seen.values())
    assert await dst.cmd("ZCARD", q.keys.pending) == 0
    assert await src.cmd("CLUSTER", "COUNTKEYSINSLOT", slot) == 0


async def test_while_the_slot_is_split_ask_is_followed_and_tryagain_resent_until_it_settles(
    cluster: RedisCluster, open_client: Opener
) -> None:
    c = await open_client()
    src, dst = cluster.nodes[2], cluster.nodes[0]
    q = c.queue(await queue_on(cluster, src, "split"))
    slot = await cluster.key_slot(q.keys.pending)
    for i in range(20):
        assert await q.push(c.mint(), f"s{i}") is True
    held = await q.claim(60_000)
    assert held is not None
    ask_before = await src.error_count("ASK")

    async def tryagains() -> int:
        # Answered by src (the push's keys on both sides) or, after ASK, by dst (not all there).
        return await src.error_count("TRYAGAIN") + await dst.error_count("TRYAGAIN")

    try_before = await tryagains()
    during: list[asyncio.Task[Any]] = []
    asked = False

    async def after_batch(moved: int) -> None:
        nonlocal asked
        if moved != 4:
            return
        # Some rows moved, the sets not: a script's keys are on both sides (TRYAGAIN); a moved
        # row is read on the importing node (ASK).
        row = await dst.cmd("CLUSTER", "GETKEYSINSLOT", slot, 1)
        id = row[0][len(q.keys.row_prefix) :]
        info = await q.get(id)
        asked = info is not None and info.id == id
        assert held is not None
        during.append(asyncio.create_task(q.push(c.mint(), "during")))
        during.append(asyncio.create_task(q.complete(held.id, held.token)))

        # Keep the slot split while the push is answered TRYAGAIN more often than redis-py's own
        # resends (16 within half a second) would bear, then let the rest move.
        async def split_met() -> bool:
            return await tryagains() >= try_before + 30

        await until("TRYAGAIN met 30 times", split_met)
        assert not during[0].done(), "the push waits for the slot to settle"

    await cluster.migrate_slot(slot, dst, batch=4, after_batch=after_batch)
    res = await asyncio.gather(*during, return_exceptions=True)
    assert len(res) == 2 and res[0] is True and res[1] is None, res
    assert asked, "a moved row was read through ASK"
    assert await src.error_count("ASK") > ask_before, "ASK was met"
    assert await tryagains() >= try_before + 30, "TRYAGAIN was met and resent"
    # Nothing was lost: the 19 left pending and the one pushed meanwhile are all there, on dst.
    assert await q.sizes() == {"pending": 20, "active": 0, "schedule": 0, "dead": 0}
    n = 0
    while (j := await q.claim(60_000)) is not None:
        await q.complete(j.id, j.token)
        n += 1
    assert n == 20


async def test_tryagain_past_its_budget_is_a_retryable_connection_error_and_writes_nothing(
    cluster: RedisCluster, open_client: Opener
) -> None:
    """A call answered TRYAGAIN is resent until its deadline (the client's offline_wait, or the
    caller's asyncio.timeout), one deadline for the whole call: an idempotent call's resends
    after a TRYAGAIN past it do not each get a budget of their own (8 of them made one call
    take eight times its bound)."""
    c = await open_client(offline_wait_ms=400)
    src, dst = cluster.nodes[1], cluster.nodes[2]
    q = c.queue(await queue_on(cluster, src, "budget"))
    slot = await cluster.key_slot(q.keys.pending)
    assert await q.push(c.mint(), "x") is True
    await dst.cmd("CLUSTER", "SETSLOT", slot, "IMPORTING", src.id)
    await src.cmd("CLUSTER", "SETSLOT", slot, "MIGRATING", dst.id)
    id = c.mint()
    try:
        t0 = time.monotonic()
        with pytest.raises(echomq.ConnectionWaitError) as e:
            await q.claim_ids(60_000, [id, c.mint()])
        took = time.monotonic() - t0
        assert 0.4 <= took < 0.4 + SLACK, f"claim_ids failed after {took:.3f} s"
        assert e.value.retryable and e.value.code == CONNECTION_ERROR_CODE
        assert "TRYAGAIN" in str(e.value)
        t0 = time.monotonic()
        with pytest.raises(echomq.ConnectionError, match="TRYAGAIN"):
            await q.enqueue(id, "split")  # resent as an idempotent call, within one deadline
        took = time.monotonic() - t0
        assert 0.4 <= took < 0.4 + SLACK, f"enqueue failed after {took:.3f} s"
        # the caller's asyncio.timeout is the deadline instead, longer than offline_wait
        t0 = time.monotonic()
        with pytest.raises(TimeoutError) as timed_out:
            async with asyncio.timeout(1.2):
                await q.enqueue(id, "split")
        took = time.monotonic() - t0
        # The call gives up a hair before the caller's timeout with its ConnectionWaitError; a
        # resend still in flight then (a loop late by more than the hair, as on a loaded
        # machine) meets the caller's own TimeoutError instead, as ConnectionWaitError's doc says.
        if isinstance(timed_out.value, echomq.ConnectionWaitError):
            assert "TRYAGAIN" in str(timed_out.value)
        else:
            assert type(timed_out.value) is TimeoutError
        assert 1.1 <= took < 1.2 + SLACK, f"enqueue in a timeout failed after {took:.3f} s"
    finally:
        await dst.cmd("CLUSTER", "SETSLOT", slot, "STABLE")
        await src.cmd("CLUSTER", "SETSLOT", slot, "STABLE")
        await cluster.wait_agreed()
    # Asked only now: a node answers ASK for a missing key of a migrating slot.
    assert await src.cmd("EXISTS", q.keys.row(id)) == 0
    assert await src.cmd("ZCARD", q.keys.pending) == 1
    assert await q.push(c.mint(), "after") is True


async def test_a_call_answered_tryagain_succeeds_when_the_slot_settles_within_its_deadline(
    cluster: RedisCluster, open_client: Opener
) -> None:
    """Calls resent after TRYAGAIN go through once the migration is over (the slot set stable
    again) within their deadline: a claim and an idempotent enqueue, made while the slot is
    split, both observed answered TRYAGAIN by the servers before the slot settles."""
    c = await open_client(offline_wait_ms=60_000)
    src, dst = cluster.nodes[1], cluster.nodes[2]
    q = c.queue(await queue_on(cluster, src, "settles"))
    slot = await cluster.key_slot(q.keys.pending)
    held = c.mint()
    assert await q.push(held, "held") is True

    async def tryagains() -> int:
        return await src.error_count("TRYAGAIN") + await dst.error_count("TRYAGAIN")

    before = await tryagains()
    await dst.cmd("CLUSTER", "SETSLOT", slot, "IMPORTING", src.id)
    await src.cmd("CLUSTER", "SETSLOT", slot, "MIGRATING", dst.id)
    fresh = c.mint()
    try:
        claim = asyncio.create_task(q.claim_ids(60_000, [held, c.mint()]))
        enqueue = asyncio.create_task(q.enqueue(fresh, "fresh"))
        await until("both calls answered TRYAGAIN", lambda: more(tryagains, before + 2))
        assert not claim.done() and not enqueue.done()
    finally:
        await dst.cmd("CLUSTER", "SETSLOT", slot, "STABLE")
        await src.cmd("CLUSTER", "SETSLOT", slot, "STABLE")
        await cluster.wait_agreed()
    async with asyncio.timeout(30):
        claimed = await claim
        assert await enqueue is True
    assert [j.id for j in claimed] == [held]
    info = await q.get(fresh)
    assert info is not None and info.payload == b"fresh"


async def more(count: Callable[[], Awaitable[int]], at_least: int) -> bool:
    return await count() >= at_least


async def test_the_server_configuration_is_read_from_every_node(
    cluster: RedisCluster, open_client: Opener, caplog: pytest.LogCaptureFixture
) -> None:
    """CONFIG GET answers for the node it is sent to: connect_cluster reads every node's, warns
    about each node whose policy may evict jobs (by name), and caps payloads at the lowest
    node's proto-max-bulk-len."""
    a, b = cluster.nodes[1], cluster.nodes[2]

    async def get(n: ClusterNode, name: str) -> str:
        v = await n.cmd("CONFIG", "GET", name)
        return str(v[name] if isinstance(v, dict) else v[1])

    policy = await get(a, "maxmemory-policy")
    bulk = await get(b, "proto-max-bulk-len")
    await a.cmd("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
    await b.cmd("CONFIG", "SET", "proto-max-bulk-len", str(2 * 1024 * 1024))
    log = logging.getLogger("echomq.test.cluster.config")
    log.propagate = False
    log.setLevel(logging.WARNING)
    log.addHandler(caplog.handler)
    try:
        c = await open_client(logger=log)
        warned = [r.getMessage() for r in caplog.records if "may evict" in r.getMessage()]
        assert len(warned) == 1 and a.addr in warned[0] and "allkeys-lru" in warned[0], warned
        assert c.max_payload == 2 * 1024 * 1024
    finally:
        log.removeHandler(caplog.handler)
        await a.cmd("CONFIG", "SET", "maxmemory-policy", policy)
        await b.cmd("CONFIG", "SET", "proto-max-bulk-len", bulk)


async def test_after_the_connections_are_killed_the_client_fences_again(
    cluster: RedisCluster, open_client: Opener
) -> None:
    c = await open_client()
    n0 = cluster.nodes[0]
    q = c.queue(await queue_on(cluster, n0, "refence"))
    assert await q.push(c.mint(), "before") is True
    rc = c.redis
    assert isinstance(rc, echomq.ClusterRedis)

    async def kill_all() -> None:
        for n in cluster.nodes:
            await n.cmd("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")

    fences = c.fences
    await kill_all()

    async def pushed() -> bool:
        try:
            return await q.push(c.mint(), "after")
        except echomq.ConnectionError:
            return False

    # Fenced again on the fresh connections: pushes go on.
    await until("a push after the kill", pushed)
    assert c.fences > fences
    reserve = await cluster.owner(await cluster.key_slot(KEY_VERSION))
    mine = await reserve.cmd("GET", KEY_VERSION)
    assert mine == VERSION_RECORD
    foreign = f"{VERSION_RECORD_PREFIX}{VERSION_MAJOR + 1}.0.0"
    await reserve.cmd("SET", KEY_VERSION, foreign)
    try:
        await kill_all()
        pending = await n0.cmd("ZCARD", q.keys.pending)
        refused: list[BaseException] = []

        async def refusal() -> bool:
            try:
                await q.push(c.mint(), "foreign")
            except echomq.ConnectionError as err:
                if err.fence is not None:
                    refused.append(err.fence)
                    return True
                return False
            except echomq.FenceError as err:
                refused.append(err)
                return True
            return False

        await until("the fence's refusal", refusal)
        err = refused[-1]
        assert isinstance(err, echomq.FenceError) and err.found == foreign
        # The next call is refused too, and nothing was written.
        with pytest.raises(echomq.FenceError):
            await q.push(c.mint(), "foreign again")
        assert await n0.cmd("ZCARD", q.keys.pending) == pending
        assert await reserve.cmd("GET", KEY_VERSION) == foreign
    finally:
        await reserve.cmd("SET", KEY_VERSION, mine)
    assert await q.push(c.mint(), "mine again") is True


async def test_moved_answers_do_not_cut_the_commands_in_flight_on_other_connections(
    cluster: RedisCluster, open_client: Opener
) -> None:
    # redis-py closes every node connection after every reinitialize_steps MOVED answers (here
    # every second), the ones other tasks' commands are in flight on included; the client
    # rediscovers the slots instead, and the command in flight gets its reply.
    c = await open_client(reinitialize_steps=2)
    n0, src, dst = cluster.nodes
    wake = echomq.QueueKeys(await queue_on(cluster, n0, "inflight")).wake

    async def pop() -> Any:
        return await c.redis.blpop([wake], timeout=30)

    blocked = asyncio.create_task(pop())

    async def blocking() -> bool:
        return "cmd=blpop" in str(await n0.cmd("CLIENT", "LIST"))

    await until("the pop blocked on its node", blocking)
    qs = [c.queue(await queue_on(cluster, src, "stale")) for _ in range(2)]
    for q in qs:
        assert await q.push(c.mint(), "x") is True
    for q in qs:  # moved behind the client's back
        await cluster.migrate_slot(await cluster.key_slot(q.keys.pending), dst)
    moved = await src.error_count("MOVED")
    for q in qs:
        assert await q.size("pending") == 1
    assert await src.error_count("MOVED") >= moved + 2
    assert not blocked.done(), "the pop in flight was not cut"
    await n0.cmd("RPUSH", wake, "ring")
    async with asyncio.timeout(10):
        assert tuple(await blocked) == (wake.encode(), b"ring")


class _Warnings(logging.Handler):
    """Keeps the records of WARNING and above."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


async def test_a_slot_migrated_in_batches_under_workers_and_a_producer_loses_nothing(
    cluster: RedisCluster, open_client: Opener
) -> None:
    warned = _Warnings()
    lg = logging.getLogger("echomq.test.cluster.busy")
    lg.addHandler(warned)
    lg.propagate = False
    tally = Tally()
    # Leases renewed every second, on the reserve, all along the migration.
    producer = await open_client(logger=lg, node_lease_ms=3000)
    src = await cluster.owner(await cluster.key_slot(KEY_VERSION))
    dst = next(n for n in cluster.nodes if n is not src)
    q = producer.queue(await queue_on(cluster, src, "busy"))
    slot = await cluster.key_slot(q.keys.pending)
    phase_of: dict[str, int] = {}  # enqueued: 0 before the migration, 1 during, 2 after
    runs: dict[str, int] = {}
    phase = 0
    errors: list[BaseException] = []

    backlog = [echomq.NewJob(producer.mint(), b"backlog") for _ in range(300)]
    for r in await q.push_batch(backlog):
        assert r.enqueued, r
    phase_of.update((j.id, 0) for j in backlog)

    async def handler(job: echomq.Job) -> None:
        await asyncio.sleep(0.002)
        runs[job.id] = runs.get(job.id, 0) + 1

    workers: list[echomq.Worker] = []
    for _ in range(2):
        wc = await open_client(logger=lg, node_lease_ms=3000, metrics=tally)
        workers.append(
            echomq.Worker(wc.queue(q.name), handler, concurrency=4, wait_ms=200, logger=lg)
        )
    running = [asyncio.create_task(w.run()) for w in workers]
    stop = asyncio.Event()

    async def produce() -> None:
        # One job a millisecond or so, push and enqueue in turn; each filed under the phase its
        # call returned in.
        i = 0
        while not stop.is_set():
            await asyncio.sleep(0.001)
            try:
                id = producer.mint()
                ok = await (q.push(id, "live") if i % 2 == 0 else q.enqueue(id, "live"))
            except Exception as err:
                errors.append(err)
                return
            if not ok:
                errors.append(AssertionError(f"{id} was not enqueued"))
                return
            phase_of[id] = phase
            i += 1

    producing = asyncio.create_task(produce())
    try:

        async def ran_60() -> bool:
            return len(runs) >= 60

        await until("the workers ran 60 jobs", ran_60)
        moved_before = await src.error_count("MOVED")
        try_before = await src.error_count("TRYAGAIN") + await dst.error_count("TRYAGAIN")
        phase = 1
        batches = 0

        async def after_batch(moved: int) -> None:
            nonlocal batches
            batches += 1
            await asyncio.sleep(0.005)

        moved = await cluster.migrate_slot(slot, dst, batch=4, after_batch=after_batch)
        phase = 2
        assert moved >= 10, f"only {moved} keys moved: the queue was not busy"
        assert batches >= 5, f"the slot moved in {batches} batches: it was not split for long"

        async def after() -> bool:  # more work on the new primary
            return sum(1 for p in phase_of.values() if p == 2) >= 20 or producing.done()

        await until("20 jobs enqueued after the migration", after)
        stop.set()
        await producing
        total = len(phase_of)

        async def all_ran() -> bool:
            return len(runs) >= total

        try:
            await until("every job ran", all_ran, 30)
        except AssertionError:
            missing = [id for id in phase_of if id not in runs]
            infos = [(id, phase_of[id], await q.get(id)) for id in missing[:5]]
            ended = [t.done() and not t.cancelled() and t.exception() for t in running]
            raise AssertionError(
                f"{len(missing)} of {total} jobs never ran: {infos}; sizes {await q.sizes()}; "
                f"worker tasks ended {ended}"
            ) from None
    finally:
        stop.set()
        for w in workers:
            w.stop()
        await asyncio.gather(producing, *running, return_exceptions=True)
    assert errors == []
    by_phase = [0, 0, 0]
    for id, p in phase_of.items():
        by_phase[p] += 1
        assert runs.get(id) == 1, f"job {id} (phase {p}) ran {runs.get(id)} times"
    assert set(runs) <= set(phase_of), "a job ran that was never enqueued"
    assert by_phase[0] > 0 and by_phase[2] > 0, by_phase
    assert tally.get(Counter.COMPLETED) == total
    for k in (Counter.RETRIED, Counter.BURIED):
        assert tally.get(k) == 0, k
    assert [r.getMessage() for r in warned.records] == []
    # Where everything is now.
    assert await cluster.owner(slot) is dst
    assert await cluster.owner(await cluster.key_slot(KEY_VERSION)) is src, "the reserve stayed"
    assert await src.cmd("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
    assert await q.sizes() == {"pending": 0, "active": 0, "schedule": 0, "dead": 0}
    producer.mint()
    # The clients met the migration: the servers answered MOVED and TRYAGAIN, none of it
    # reached a caller.
    assert await src.error_count("MOVED") > moved_before
    assert await src.error_count("TRYAGAIN") + await dst.error_count("TRYAGAIN") > try_before


README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
"""sdk/python/README.md, whose Redis Cluster snippet the last test runs."""


async def test_the_readmes_cluster_snippet_runs_on_the_cluster(cluster: RedisCluster) -> None:
    section = README.split("\n## Redis Cluster\n", 1)[1]
    m = re.search(r"```python\n(.*?)```", section, re.S)
    assert m is not None, "the README's Redis Cluster section has a python block"
    ns: dict[str, Any] = {}
    exec(compile(m.group(1), "README.md", "exec"), ns)
    owner = await cluster.owner(await cluster.key_slot(echomq.QueueKeys("orders").pending))

    async def calls() -> int:
        stats = str(await owner.cmd("INFO", "commandstats"))
        found = re.search(r"cmdstat_evalsha:calls=(\d+)", stats)
        return int(found.group(1)) if found else 0

    before = await calls()
    await ns["main"](cluster.urls)
    assert await calls() >= before + 3, "push, claim and complete ran on the node of {orders}"
    assert await owner.cmd("ZCARD", echomq.QueueKeys("orders").pending) == 0


async def test_clusterdown_is_a_connection_error_never_a_fence_refusal(
    cluster: RedisCluster,
) -> None:
    reserve = await cluster.owner(await cluster.key_slot(KEY_VERSION))
    # Not the reserve's node, nor the one redis-py discovers the commands from (slot 0's).
    first = await cluster.owner(0)
    victim = next(n for n in cluster.nodes if n is not reserve and n is not first)
    victim.kill()
    try:

        async def failed() -> bool:
            return "cluster_state:fail" in str(await reserve.cmd("CLUSTER", "INFO"))

        await until("the cluster failed", failed, 30)
        with pytest.raises(echomq.ConnectionError) as e:
            async with asyncio.timeout(20):
                await echomq.connect_cluster(cluster.urls, logger=quiet, socket_timeout=5)
        assert not isinstance(e.value, echomq.FenceError)
        assert isinstance(e.value.__cause__, ClusterDownError), repr(e.value.__cause__)
        assert e.value.retryable
    finally:
        victim.restart()
        await cluster.wait_agreed(60)
    # Healed: the client connects and serves the victim's queues again.
    c = await echomq.connect_cluster(cluster.urls, logger=quiet)
    try:
        await round_trip(c, c.queue(await queue_on(cluster, victim, "healed")), 1)
    finally:
        await c.close()


async def test_a_worker_on_the_cluster_hears_a_cancellation_on_its_queues_node(
    cluster: RedisCluster, open_client: Opener
) -> None:
    """echomq 2.5.0: the worker subscribes (SSUBSCRIBE) to the queue's cancel channel on the
    node of the queue's slot, and cancel_ids from another client cancels the running handler."""
    tally = Tally()
    c = await open_client(metrics=tally)
    other = await open_client()
    q = c.queue(await queue_on(cluster, cluster.nodes[1], "cancel"))
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def handler(job: echomq.Job) -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    w = echomq.Worker(q, handler, lease_ms=30_000, logger=quiet, metrics=tally)
    running = asyncio.create_task(w.run())
    try:
        id = c.mint()
        await q.push(id, "c")
        await asyncio.wait_for(started.wait(), 15)
        assert await other.queue(q.name).cancel_ids([id]) == [STATE_ACTIVE]
        await asyncio.wait_for(cancelled.wait(), 5)

        async def counted() -> bool:
            return tally.get(Counter.CANCELLED) == 1

        await until("the cancellation counted", counted)
    finally:
        w.stop()
        await asyncio.wait_for(running, 30)
    assert tally.get(Counter.RETRIED) == 0 and tally.get(Counter.BURIED) == 0
