"""Queue policies (echomq 2.7.0) on a real server: a pause stops claims and a resume continues
them, a concurrency cap bounds the handlers running across workers, the pre-2.7 scripts fail
WRONGTYPE on the tripwire and change nothing (the SDK's own pre-2.7 calls raise PolicyError),
clearing the last policy restores the classic layout, inspection reads the running set, a
tripwire naming a later minor refuses the 2.7 calls with PolicyError, and the bundle floor."""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
from conftest import Server
from redis.exceptions import ResponseError

import echomq
from echomq import Job, PolicyError, PolicyFloorError, QueuePolicy, Worker
from echomq._gen import scripts as wire
from echomq._gen.keys import ACTIVE_TRIPWIRE_FLOOR, KEY_BUNDLE
from echomq._gen.protocol import (
    BACKOFF_FIXED,
    BACKOFF_INHERIT,
    DEDUP_UNTIL_DONE,
    FAILURE_CLASS_ERROR,
    SET_ACTIVE,
    SET_DEAD,
    SET_PENDING,
    STATE_ACTIVE,
)
from echomq._gen.scripts import BUNDLE_DIGEST


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


async def snapshot(c: echomq.Client, q: echomq.Queue) -> dict[str, object]:
    """Every key of the queue with its DUMP: equal snapshots hold equal values."""
    r = c.redis
    found = await r.keys("emq:{" + q.name + "}:*")
    keys = sorted(k.decode() if isinstance(k, bytes) else k for k in found)
    out: dict[str, object] = {k: await r.dump(k) for k in keys}
    assert out and all(v is not None for v in out.values())
    return out


async def key_type(c: echomq.Client, key: str) -> str:
    t = await c.redis.type(key)
    return t.decode() if isinstance(t, bytes) else str(t)


async def blocked_on_bell(server: Server) -> bool:
    """Whether some connection of the server waits in BLPOP (an idle worker's doorbell)."""
    with server.raw() as r:
        return any(c.get("cmd") == "blpop" for c in r.client_list())


def script_calls(server: Server) -> int:
    """How many script calls the server ran (EVALSHA, EVAL and their read-only forms)."""
    s = server.commandstats()
    return sum(s.get(c, 0) for c in ("evalsha", "eval", "evalsha_ro", "eval_ro"))


async def gone(q: echomq.Queue, id: str) -> bool:
    return await q.get(id) is None


async def test_the_policy_calls_return_the_policy(client: echomq.Client) -> None:
    q = client.queue("pol")
    assert await q.policy() == QueuePolicy(paused=False, concurrency=0, requires=0, leased=0)
    p = await q.pause()
    assert p == QueuePolicy(paused=True, concurrency=0, requires=7, leased=0) and p.has_policy
    assert await key_type(client, q.keys.active) == "string"
    assert await q.set_concurrency(3) == QueuePolicy(True, 3, 7, 0)
    assert await q.resume() == QueuePolicy(False, 3, 7, 0)
    assert await q.set_policy(concurrency=0) == QueuePolicy(False, 0, 0, 0)
    assert await q.policy() == QueuePolicy(False, 0, 0, 0)
    assert await key_type(client, q.keys.active) == "none"
    with pytest.raises(echomq.ArgumentError):
        await q.set_concurrency(-1)
    with pytest.raises(echomq.ArgumentTypeError):
        await q.set_policy(paused=1)  # type: ignore[arg-type]


async def test_pause_stops_claims_within_one_claim_and_resume_continues(
    server: Server, client: echomq.Client
) -> None:
    q = client.queue("paused")
    ids = [client.mint() for _ in range(5)]
    await q.push_batch([echomq.NewJob(i, b"") for i in ids])
    started: list[str] = []
    release: dict[str, asyncio.Event] = {i: asyncio.Event() for i in ids}
    first = asyncio.Event()

    async def handler(job: Job) -> None:
        started.append(job.id)
        first.set()
        await release[job.id].wait()

    w = Worker(q, handler, concurrency=1, wait_ms=60_000, maintenance_ms=0)
    async with running(w):
        async with asyncio.timeout(10):
            await first.wait()
        assert started == [ids[0]]
        await q.pause()
        # the running job completes; its completion leases nothing, and nothing else is claimed
        release[ids[0]].set()
        await eventually(lambda: gone(q, ids[0]), what="the first job completed")
        await eventually(lambda: blocked_on_bell(server), what="the worker waiting on the bell")
        assert started == [ids[0]]
        assert (await q.sizes())[SET_PENDING] == 4
        # idle on the doorbell, not polling: no script runs while nothing rings. The
        # completion's reply may come back after the worker's first empty claim, which wakes it
        # for one more claim and policy read (two calls) before it waits again; a worker
        # polling at its 50 ms pause would run a dozen.
        calls = script_calls(server)
        await asyncio.sleep(0.3)
        assert script_calls(server) - calls <= 3, "the paused worker kept claiming"
        # a push rings the bell: the worker claims, leases nothing, and waits again
        extra = client.mint()
        release[extra] = asyncio.Event()
        calls = script_calls(server)
        assert await q.push(extra, b"")

        async def claimed_and_waiting() -> bool:
            # the push, the worker's claim and its read of the policy
            return script_calls(server) >= calls + 3 and await blocked_on_bell(server)

        await eventually(claimed_and_waiting, what="the worker claiming and waiting again")
        assert started == [ids[0]]
        p = await q.resume()
        assert not p.paused and p.requires == 0, "the last policy cleared: classic layout"
        for i in [*ids[1:], extra]:
            release[i].set()
        await eventually(lambda: len(started) == 6, what="the resumed queue drained")
    assert started[0] == ids[0] and sorted(started) == sorted([*ids, extra])


async def test_a_cap_bounds_the_handlers_running_across_workers(server: Server) -> None:
    cap = 2
    producer = await connect(server)
    clients = [await connect(server) for _ in range(3)]
    try:
        q = producer.queue("capped")
        assert (await q.set_concurrency(cap)).concurrency == cap
        ids = [producer.mint() for _ in range(40)]
        seen: collections.Counter[str] = collections.Counter()
        inflight = 0
        most = 0

        async def handler(job: Job) -> None:
            nonlocal inflight, most
            inflight += 1
            most = max(most, inflight)
            seen[job.id] += 1
            try:
                await asyncio.sleep(0.005)
            finally:
                inflight -= 1

        workers = [
            Worker(c.queue("capped"), handler, concurrency=4, wait_ms=200, maintenance_ms=0)
            for c in clients
        ]
        tasks = [asyncio.create_task(w.run()) for w in workers]
        try:
            await q.push_batch([echomq.NewJob(i, b"") for i in ids])
            await eventually(lambda: len(seen) == len(ids), within=30, what="every job ran")
            await eventually(lambda: gone(q, ids[-1]), what="the last one completed")
        finally:
            for w in workers:
                w.stop()
            async with asyncio.timeout(30):
                await asyncio.gather(*tasks)
        assert set(seen) == set(ids) and all(n == 1 for n in seen.values()), seen
        assert 1 <= most <= cap, f"{most} handlers ran at once under a cap of {cap}"
        p = await q.policy()
        assert p.concurrency == cap and p.leased == 0
        assert all(n == 0 for n in (await q.sizes()).values())
    finally:
        await producer.close()
        for c in clients:
            await c.close()


def twenty_six_calls(q: echomq.Queue, id: str, token: int) -> list[tuple[str, wire.ScriptExec]]:
    """One call of each 2.6 script a 2.7 twin replaces, on q's keys."""
    k = q.keys
    row = k.row(id)
    return [
        (
            "claim_ids",
            wire.ClaimIdsCall(
                pending=k.pending, active=k.active, wake=k.wake, rows=[row], lease_ms=1000, ids=[id]
            ).exec(),
        ),
        (
            "complete_result_claim_ids",
            wire.CompleteResultClaimIdsCall(
                row=row,
                active=k.active,
                pending=k.pending,
                wake=k.wake,
                results=k.results,
                result_times=k.result_times,
                progress=k.progress,
                failures=k.failures,
                options=k.options,
                events=k.events,
                counters=k.counters,
                rows=[],
                id=id,
                token=token,
                lease_ms=1000,
                result=b"",
                keep=0,
                keep_age_ms=0,
                events_max=10,
                ids=[],
            ).exec(),
        ),
        (
            "fail",
            wire.FailCall(
                active=k.active,
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
                class_=FAILURE_CLASS_ERROR,
                worker="w",
                error="e",
                max_attempts=0,
                backoff=BACKOFF_FIXED,
                backoff_ms=0,
                backoff_max_ms=0,
                jitter=0,
                bury=0,
                events_max=10,
            ).exec(),
        ),
        (
            "reap_recorded_ids",
            wire.ReapRecordedIdsCall(
                active=k.active,
                pending=k.pending,
                dead=k.dead,
                wake=k.wake,
                failures=k.failures,
                options=k.options,
                events=k.events,
                counters=k.counters,
                rows=[row],
                max_attempts=0,
                events_max=10,
                ids=[id],
            ).exec(),
        ),
        (
            "extend",
            wire.ExtendCall(active=k.active, row=row, id=id, token=token, lease_ms=1000).exec(),
        ),
        (
            "cancel_ids",
            wire.CancelIdsCall(
                pending=k.pending,
                schedule=k.schedule,
                active=k.active,
                failures=k.failures,
                progress=k.progress,
                options=k.options,
                events=k.events,
                cancel=k.cancel,
                rows=[row],
                events_max=10,
                ids=[id],
            ).exec(),
        ),
        (
            "add_dedup",
            wire.AddDedupCall(
                pending=k.pending,
                active=k.active,
                schedule=k.schedule,
                dead=k.dead,
                results=k.results,
                wake=k.wake,
                options=k.options,
                dedup=k.dedup,
                rows=[row],
                mode=DEDUP_UNTIL_DONE,
                ttl_ms=0,
                hold=0,
                delay_ms=0,
                attempts=0,
                backoff=BACKOFF_INHERIT,
                backoff_ms=0,
                backoff_max_ms=0,
                entries=[wire.AddDedupEntry(id=id, payload=b"x", dedup_key=b"k")],
            ).exec(),
        ),
        (
            "replace_dedup",
            wire.ReplaceDedupCall(
                pending=k.pending,
                active=k.active,
                schedule=k.schedule,
                dead=k.dead,
                results=k.results,
                wake=k.wake,
                options=k.options,
                dedup=k.dedup,
                events=k.events,
                row=row,
                target_row=row,
                mode=DEDUP_UNTIL_DONE,
                ttl_ms=0,
                hold=0,
                delay_ms=0,
                attempts=0,
                backoff=BACKOFF_INHERIT,
                backoff_ms=0,
                backoff_max_ms=0,
                events_max=10,
                id=id,
                payload=b"x",
                dedup_key=b"k",
                target=id,
            ).exec(),
        ),
        (
            "dedup_entries",
            wire.DedupEntriesCall(
                pending=k.pending,
                active=k.active,
                schedule=k.schedule,
                dead=k.dead,
                results=k.results,
                wake=k.wake,
                dedup=k.dedup,
                dedup_keys=[b"k"],
            ).exec(),
        ),
        (
            "sweep_dedup",
            wire.SweepDedupCall(
                pending=k.pending,
                active=k.active,
                schedule=k.schedule,
                dead=k.dead,
                results=k.results,
                wake=k.wake,
                dedup=k.dedup,
                cursor="0",
                count=100,
            ).exec(),
        ),
    ]


async def test_the_2_6_scripts_fail_wrongtype_on_a_paused_queue_and_change_nothing(
    client: echomq.Client,
) -> None:
    q = client.queue("tripped")
    leased, waiting = client.mint(), client.mint()
    assert await q.push(leased, b"a") and await q.push(waiting, b"b")
    (job,) = await q.claim_many(60_000, 1)
    assert job.id == leased
    assert (await q.dedup_entries([b"k"]))[0].holder == ""
    await q.pause()
    before = await snapshot(client, q)
    calls = twenty_six_calls(q, leased, job.token) + twenty_six_calls(q, waiting, 0)
    assert len({name for name, _ in calls}) == 10
    for name, x in calls:
        with pytest.raises(ResponseError, match=r"^WRONGTYPE"):
            await wire.run_script(client.redis, x)
        assert await snapshot(client, q) == before, f"{name} wrote to the paused queue"
    # the SDK's own pre-2.7 calls say why, typed
    attempts: list[tuple[str, Callable[[], Awaitable[object]]]] = [
        ("claim", lambda: q.claim(1000)),
        ("complete", lambda: q.complete(leased, job.token)),
        ("complete_claim_ids", lambda: q.complete_claim_ids(leased, job.token, 1000, [])),
        ("reap_ids", lambda: q.reap_ids(0, [leased])),
        ("reap_failed_ids", lambda: q.reap_failed_ids([leased])),
    ]
    for script, call in attempts:
        with pytest.raises(PolicyError) as err:
            await call()
        assert err.value.script == script
        assert q.name in str(err.value) and "has a policy" in str(err.value), err.value
        assert isinstance(err.value.__cause__, ResponseError)
    assert await snapshot(client, q) == before
    # the 2.7 calls serve the queue
    assert await q.extend(leased, job.token, 60_000) > 0
    assert await q.claim_many(60_000, 1) == []  # paused
    await q.complete_result_claim_ids(leased, job.token, 60_000, [])
    assert await q.get(leased) is None


async def test_another_wrongtype_stays_what_it_is(client: echomq.Client) -> None:
    q = client.queue("foreign")
    id = client.mint()
    assert await q.push(id, b"")
    await client.redis.hset(q.keys.active, "not", "a zset")
    with pytest.raises(ResponseError, match=r"^WRONGTYPE") as err:
        await q.complete(id, 1)
    assert not isinstance(err.value, PolicyError)


async def test_clearing_the_last_policy_returns_the_classic_layout(client: echomq.Client) -> None:
    q = client.queue("layout")
    ids = [client.mint() for _ in range(3)]
    await q.push_batch([echomq.NewJob(i, b"") for i in ids])
    await q.pause()
    assert await key_type(client, q.keys.active) == "string"
    assert (await q.set_concurrency(1)).requires == 7
    p = await q.resume()
    assert p == QueuePolicy(paused=False, concurrency=1, requires=7, leased=0), "the cap stays"
    jobs = await q.claim_many(60_000, 3)
    assert [j.id for j in jobs] == ids[:1], "at most the cap"
    assert await key_type(client, q.keys.running) == "zset"
    assert (await q.policy()).leased == 1
    p = await q.set_concurrency(0)
    assert p == QueuePolicy(paused=False, concurrency=0, requires=0, leased=1)
    assert await key_type(client, q.keys.active) == "zset"
    assert await client.redis.exists(q.keys.running, q.keys.policy) == 0
    assert await client.redis.zscore(q.keys.active, ids[0]) == jobs[0].deadline_ms
    assert [j.id for j in await q.claim_many(60_000, 3)] == ids[1:]


async def test_inspection_works_on_a_paused_queue(client: echomq.Client) -> None:
    q = client.queue("inspect")
    ids = [client.mint() for _ in range(3)]
    await q.push_batch([echomq.NewJob(i, b"") for i in ids])
    (job,) = await q.claim_many(60_000, 1)
    await q.pause()
    sizes = await q.sizes()
    assert sizes[SET_ACTIVE] == 1 and sizes[SET_PENDING] == 2
    assert await q.size(SET_ACTIVE) == 1
    assert await q.head(SET_ACTIVE, 10) == [job.id]
    assert await q.browse(SET_ACTIVE, 10) == [job.id]
    page = await q.page(SET_ACTIVE, "", 1)
    assert page.ids == [job.id] and (await q.page(SET_ACTIVE, page.next, 1)).ids == []
    info = await q.get(job.id)
    assert info is not None and info.state == STATE_ACTIVE and info.at_ms == job.deadline_ms
    pending = await q.get(ids[1])
    assert pending is not None and pending.at_ms is None
    assert (await q.dedup_entries([b"none"]))[0].holder == ""
    assert (await q.policy()).leased == 1
    # the maintenance's reap reads the running set too
    assert await q.reap_recorded_ids([job.id]) == 0


async def test_a_reaped_lease_under_a_cap_runs_again(client: echomq.Client) -> None:
    q = client.queue("reaped")
    id = client.mint()
    await q.set_concurrency(1)
    assert await q.push(id, b"")
    (job,) = await q.claim_many(50, 1)
    assert await q.claim_many(60_000, 1) == []  # at the cap
    ran = asyncio.Event()

    async def handler(j: Job) -> None:
        assert j.id == id and j.token == job.token + 1
        ran.set()

    w = Worker(q, handler, concurrency=2, wait_ms=200, maintenance_ms=50)
    async with running(w):
        async with asyncio.timeout(10):
            await ran.wait()
    await eventually(lambda: gone(q, id), what="the job completed")
    assert (await q.policy()).leased == 0


async def test_hand_back_and_bury_serve_a_paused_queue(client: echomq.Client) -> None:
    """retry and bury run their 2.7 twins (retry_policy, bury_policy), so a worker's hand-back
    at shutdown and the burial of a job leave the running set of a paused queue."""
    q = client.queue("handback")
    a, b = client.mint(), client.mint()
    assert await q.push(a, b"a") and await q.push(b, b"b")
    ja, jb = await q.claim_many(60_000, 2)
    await q.pause()
    assert await q.retry(ja.id, ja.token, 0) > 0
    await q.bury(jb.id, jb.token)
    assert (await q.policy()).leased == 0
    assert (await q.get(ja.id)) is not None and (await q.get(jb.id)) is not None
    sizes = await q.sizes()
    assert sizes[SET_ACTIVE] == 0 and sizes[SET_DEAD] == 1, sizes


async def test_a_tripwire_naming_a_later_minor_refuses_the_2_7_calls(client: echomq.Client) -> None:
    q = client.queue("later")
    leased, waiting = client.mint(), client.mint()
    assert await q.push(leased, b"a") and await q.push(waiting, b"b")
    await q.set_concurrency(5)
    (job,) = await q.claim_ids(60_000, [leased])
    failure = echomq.Failure(failure_class=FAILURE_CLASS_ERROR, message="boom")
    claims: list[Callable[[], Awaitable[object]]] = [
        lambda: q.claim_many(1000, 1),
        lambda: q.claim_ids(1000, [waiting]),
        lambda: q.pause(),
        lambda: q.resume(),
        lambda: q.set_concurrency(2),
    ]
    settles: list[Callable[[], Awaitable[object]]] = [
        lambda: q.extend(leased, job.token, 60_000),
        lambda: q.complete_result_claim_ids(leased, job.token, 1000, [waiting]),
        lambda: q.fail(leased, job.token, failure),
        lambda: q.reap_recorded_ids([leased]),
        lambda: q.cancel_ids([waiting]),
        lambda: q.dedup_entries([b"k"]),
        lambda: q.sweep_dedup(),
        lambda: q.add_dedup([echomq.NewJob(client.mint(), b"c")], [b"k"], DEDUP_UNTIL_DONE),
    ]
    # a later minor to claim and to settle, and a tripwire that does not read: everything refused
    for wire_ in ("99 99", "99"):
        await client.redis.set(q.keys.active, wire_)
        before = await snapshot(client, q)
        for call in claims + settles:
            with pytest.raises(PolicyError):
                await call()
        assert await snapshot(client, q) == before
    await client.redis.set(q.keys.active, "99 99")
    p = await q.policy()
    assert p.requires == 99 and p.concurrency == 5 and p.leased == 1
    # a later policy that binds only claimers: the 2.7 claims are refused, the settles serve
    await client.redis.set(q.keys.active, "99 7")
    for call in claims:
        with pytest.raises(PolicyError):
            await call()
    assert await q.extend(leased, job.token, 60_000) > 0
    assert await q.reap_recorded_ids([leased]) == 0
    assert (await q.dedup_entries([b"k"]))[0].holder == ""
    assert (await q.sweep_dedup()).cursor == "0"
    # a completion completes and leases none of the next jobs it was given
    assert await q.complete_result_claim_ids(leased, job.token, 1000, [waiting]) == []
    assert await q.get(leased) is None and (await q.policy()).leased == 0
    # one that binds only settlers: the claims serve, the settles are refused
    await client.redis.set(q.keys.active, "7 99")
    assert [j.id for j in await q.claim_ids(60_000, [waiting])] == [waiting]
    with pytest.raises(PolicyError):
        await q.extend(waiting, 1, 60_000)


async def test_the_bundle_floor_refuses_to_lay_the_tripwire(client: echomq.Client) -> None:
    q = client.queue("floor")
    r = client.redis
    old = "2.0.0"
    await r.hset(KEY_BUNDLE, old, BUNDLE_DIGEST)
    refused: list[Callable[[], Awaitable[QueuePolicy]]] = [
        q.pause,
        lambda: q.set_concurrency(2),
        lambda: q.set_policy(paused=True),
    ]
    for call in refused:
        with pytest.raises(PolicyFloorError) as err:
            await call()
        assert err.value.versions == [old] and err.value.floor == ACTIVE_TRIPWIRE_FLOOR
        assert isinstance(err.value, echomq.ArgumentError)
        assert "force=True" in str(err.value) and q.name in str(err.value)
    assert await r.exists(q.keys.active, q.keys.policy) == 0, "nothing was written"
    assert (await q.resume()).requires == 0  # lays nothing: not checked
    assert (await q.pause(force=True)).requires == 7
    # a cap on a queue that has a policy lays nothing: not checked
    assert (await q.set_concurrency(2)) == QueuePolicy(True, 2, 7, 0)
    # a pause of a queue the cap keeps in the policy layout lays nothing: not checked either
    assert (await q.resume()).requires == 7
    assert (await q.pause()).paused
    await r.hdel(KEY_BUNDLE, old)
    await r.hset(KEY_BUNDLE, "not a version", "x")
    assert (await q.set_policy(paused=False, concurrency=0)).requires == 0
    assert (await q.pause()).requires == 7


async def test_a_typed_queue_has_the_policy_calls(client: echomq.Client) -> None:
    tq = client.queue("typed", codec=echomq.JSONCodec(dict))
    assert (await tq.pause()).paused
    assert (await tq.set_concurrency(3)).concurrency == 3
    assert await tq.policy() == await tq.raw.policy()
    assert (await tq.resume()).requires == 7
    assert (await tq.set_concurrency(0)).requires == 0
