"""Rate limits (echomq 2.8.0) on a real server: Queue.set_rate_limit and the policy it returns,
its bad input refused before any command, the bundle floor; concurrent workers never start more
than the limit in any window of its period (by the reply deadlines), every job once, the held
jobs pending with their attempts unchanged, no busy loop while held, removing the limit releases
the rest; a 2.7 claim and a 2.7 set_policy are refused on a rate-limited queue and write nothing;
pause and resume keep the limit; a worker whose claims are refused keeps running and settles the
jobs it holds."""

from __future__ import annotations

import asyncio
import collections
import datetime
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
from conftest import Server

import echomq
from echomq import Job, PolicyError, PolicyFloorError, QueuePolicy, Worker
from echomq._gen import scripts as wire
from echomq._gen.keys import KEY_BUNDLE
from echomq._gen.protocol import SET_PENDING, STATE_PENDING
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


class CountingWorker(Worker):
    """A Worker that counts its claiming rounds (each a claim_rate_ids call, at most a few when
    another claimer took the ids)."""

    claims = 0

    async def _claim(self, n: int) -> list[Job]:
        self.claims += 1
        return await super()._claim(n)


@asynccontextmanager
async def running(*ws: Worker) -> AsyncIterator[list[asyncio.Task[None]]]:
    ts = [asyncio.create_task(w.run()) for w in ws]
    try:
        yield ts
    finally:
        for w in ws:
            w.stop()
        async with asyncio.timeout(30):
            await asyncio.gather(*ts)


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


def commands(server: Server) -> int:
    """How many commands the server ran (INFO commandstats, less the test's own reads)."""
    return sum(server.commandstats().values())


async def test_set_rate_limit_returns_the_policy_and_pause_resume_keep_it(
    client: echomq.Client,
) -> None:
    q = client.queue("rated")
    p = await q.set_rate_limit(20, 200)
    assert p == QueuePolicy(
        paused=False,
        concurrency=0,
        requires=8,
        leased=0,
        rate_limit=20,
        rate_period_ms=200,
        admit_in_ms=0,
    )
    assert p.has_policy and await key_type(client, q.keys.active) == "string"
    assert await q.policy() == p
    # pause, resume and the cap go through configure_policy: the limit stays
    assert await q.pause() == QueuePolicy(True, 0, 8, 0, 20, 200, 0)
    assert await q.set_concurrency(3) == QueuePolicy(True, 3, 8, 0, 20, 200, 0)
    assert await q.resume() == QueuePolicy(False, 3, 8, 0, 20, 200, 0)
    assert await q.set_policy(concurrency=0) == QueuePolicy(False, 0, 8, 0, 20, 200, 0)
    # the period as seconds or a timedelta
    assert (await q.set_rate_limit(5, period=0.5)).rate_period_ms == 500
    assert (await q.set_rate_limit(5, period=datetime.timedelta(seconds=2))).rate_period_ms == 2000
    assert (await q.set_rate_limit(7, datetime.timedelta(milliseconds=250))).rate_period_ms == 250
    assert (await q.set_rate_limit(1_000_000, 86_400_000)).rate_limit == 1_000_000
    # a pause with a limit, then the limit removed: the pause keeps the tripwire at 7
    await q.pause()
    assert await q.set_rate_limit(0) == QueuePolicy(True, 0, 7, 0)
    # the last policy cleared: the classic layout
    assert await q.resume() == QueuePolicy(False, 0, 0, 0)
    assert await client.redis.exists(q.keys.active, q.keys.policy, q.keys.starts) == 0
    # a typed queue has it too
    tq = client.queue("rated", codec=echomq.JSONCodec(dict))
    assert (await tq.set_rate_limit(3, period=1)).rate_period_ms == 1000
    assert (await tq.set_rate_limit(0)).requires == 0


async def test_bad_rate_limits_are_refused_before_any_command(
    server: Server, client: echomq.Client
) -> None:
    q = client.queue("badrate")
    refused: list[tuple[type[Exception], Callable[[], Awaitable[object]]]] = [
        (echomq.ArgumentError, lambda: q.set_rate_limit(-1, 1000)),
        (echomq.ArgumentError, lambda: q.set_rate_limit(1_000_001, 1000)),
        (echomq.ArgumentError, lambda: q.set_rate_limit(5, 0)),
        (echomq.ArgumentError, lambda: q.set_rate_limit(5, -5)),
        (echomq.ArgumentError, lambda: q.set_rate_limit(5, 86_400_001)),
        (echomq.ArgumentError, lambda: q.set_rate_limit(5, period=86_400.001)),
        (echomq.ArgumentError, lambda: q.set_rate_limit(5, period=0.0015)),  # 1.5 ms
        (echomq.ArgumentError, lambda: q.set_rate_limit(5, period=float("inf"))),
        (echomq.ArgumentError, lambda: q.set_rate_limit(5, period=float("nan"))),
        (
            echomq.ArgumentError,
            lambda: q.set_rate_limit(5, datetime.timedelta(microseconds=1500)),
        ),
        (echomq.ArgumentError, lambda: q.set_rate_limit(5, datetime.timedelta(0))),
        (echomq.ArgumentError, lambda: q.set_rate_limit(5)),  # type: ignore[call-overload]
        (echomq.ArgumentTypeError, lambda: q.set_rate_limit("5", 1000)),  # type: ignore[call-overload]
        (echomq.ArgumentTypeError, lambda: q.set_rate_limit(True, 1000)),
        (echomq.ArgumentTypeError, lambda: q.set_rate_limit(5, 1.5)),  # type: ignore[call-overload]
        (echomq.ArgumentTypeError, lambda: q.set_rate_limit(5, period="1s")),  # type: ignore[call-overload]
        (echomq.ArgumentTypeError, lambda: q.set_rate_limit(5, 1000, force=1)),  # type: ignore[call-overload]
        (TypeError, lambda: q.set_rate_limit(5, 1000, period=1)),  # type: ignore[call-overload]
    ]
    before = commands(server)
    for kind, call in refused:
        with pytest.raises(kind):
            await call()
    assert commands(server) == before, "a refused argument sent a command"


async def test_the_bundle_floor_refuses_a_rate_limit_that_lays_the_tripwire(
    client: echomq.Client,
) -> None:
    q = client.queue("ratefloor")
    r = client.redis
    await r.hset(KEY_BUNDLE, "2.0.0", BUNDLE_DIGEST)
    with pytest.raises(PolicyFloorError) as err:
        await q.set_rate_limit(10, 1000)
    assert err.value.versions == ["2.0.0"] and "force=True" in str(err.value)
    assert await r.exists(q.keys.active, q.keys.policy) == 0, "nothing was written"
    assert (await q.set_rate_limit(0)).requires == 0  # lays nothing: not checked
    assert (await q.set_rate_limit(10, 1000, force=True)).requires == 8
    # on a queue that has a policy a limit lays nothing: not checked
    assert (await q.set_rate_limit(20, 1000)).rate_limit == 20


def sliding_max(starts: list[int], period_ms: int) -> int:
    """The most starts (server ms) in any window [t, t + period_ms)."""
    s = sorted(starts)
    most, j = 0, 0
    for i in range(len(s)):
        while s[i] - s[j] >= period_ms:
            j += 1
        most = max(most, i - j + 1)
    return most


async def test_a_limit_bounds_the_starts_in_every_window_across_workers(server: Server) -> None:
    limit, period, n = 20, 200, 70
    lease = 30_000
    producer = await connect(server)
    clients = [await connect(server) for _ in range(3)]
    try:
        q = producer.queue("windows")
        assert (await q.set_rate_limit(limit, period)).requires == 8
        ids = [producer.mint() for _ in range(n)]
        seen: collections.Counter[str] = collections.Counter()
        starts: list[int] = []
        tokens: list[int] = []

        async def handler(job: Job) -> None:
            seen[job.id] += 1
            starts.append(job.deadline_ms - lease)  # the start's server ms
            tokens.append(job.token)

        workers = [
            CountingWorker(
                c.queue("windows"), handler, concurrency=4, lease_ms=lease, maintenance_ms=0
            )
            for c in clients
        ]
        t0 = time.monotonic()
        async with running(*workers):
            await q.push_batch([echomq.NewJob(i, b"") for i in ids])
            await eventually(lambda: len(seen) == n, within=30, what="every job ran")
            elapsed_ms = (time.monotonic() - t0) * 1000
            await eventually(lambda: all_gone(q, ids), within=10, what="every job completed")
        assert set(seen) == set(ids) and all(v == 1 for v in seen.values()), seen
        assert tokens == [1] * n, "a held job was never claimed: its attempts unchanged"
        most = sliding_max(starts, period)
        assert most <= limit, f"{most} starts in a window of {period} ms under {limit}"
        # the limit paces: n starts take at least (n - limit) / limit periods
        assert max(starts) - min(starts) >= (n - limit) * period // limit - period // limit
        # no busy loop: each claiming round is paced by the limit (one start every
        # period / limit ms) or the doorbell, per worker
        claims = sum(w.claims for w in workers)
        bound = 2 * len(workers) * (elapsed_ms / (period / limit) + 10)
        assert claims < bound, f"{claims} claiming rounds in {elapsed_ms:.0f} ms"
        p = await q.policy()
        assert p.rate_limit == limit and p.leased == 0
    finally:
        await producer.close()
        for c in clients:
            await c.close()


async def all_gone(q: echomq.Queue, ids: list[str]) -> bool:
    return all(g is None for g in [await q.get(i) for i in ids])


async def test_held_jobs_stay_pending_without_a_busy_loop_until_the_limit_is_removed(
    server: Server, client: echomq.Client
) -> None:
    q = client.queue("held")
    await q.set_rate_limit(2, 60_000)  # two starts, then none for a minute
    ids = [client.mint() for _ in range(6)]
    await q.push_batch([echomq.NewJob(i, b"") for i in ids])
    done: list[str] = []

    async def handler(job: Job) -> None:
        done.append(job.id)

    w = CountingWorker(q, handler, concurrency=3, wait_ms=200, maintenance_ms=0)
    async with running(w):
        await eventually(lambda: len(done) == 2, what="the two starts the limit allows")
        await eventually(lambda: all_gone(q, done), what="the two completed")
        p = await q.policy()
        assert p.admit_in_ms > 50_000 and p.leased == 0
        # held: pending, never failed, attempts unchanged
        for i in ids[2:]:
            info = await q.get(i)
            assert info is not None and info.state == STATE_PENDING and info.attempts == 0
        # idle on the doorbell, bounded by wait_ms (200 ms), not polling
        claims = w.claims
        t0 = time.monotonic()
        await asyncio.sleep(1.0)
        waited = time.monotonic() - t0
        assert w.claims - claims <= waited / 0.2 + 2, f"{w.claims - claims} claims in {waited}s"
        assert done == ids[:2]
        # removing the limit rings the doorbell: the rest run at once
        assert await q.set_rate_limit(0) == QueuePolicy(False, 0, 0, 0)
        t1 = time.monotonic()
        await eventually(lambda: len(done) == 6, what="the rest ran")
        assert time.monotonic() - t1 < 5
    assert sorted(done) == sorted(ids)
    assert (await q.sizes())[SET_PENDING] == 0


async def test_a_raised_limit_wakes_a_held_worker(client: echomq.Client) -> None:
    q = client.queue("raised")
    await q.set_rate_limit(1, 60_000)
    ids = [client.mint() for _ in range(3)]
    await q.push_batch([echomq.NewJob(i, b"") for i in ids])
    done: list[str] = []

    async def handler(job: Job) -> None:
        done.append(job.id)

    w = Worker(q, handler, concurrency=2, wait_ms=60_000, maintenance_ms=0)
    async with running(w):
        await eventually(lambda: len(done) == 1, what="the one start the limit allows")
        await asyncio.sleep(0.1)
        assert len(done) == 1
        # a changed limit restarts the pace and rings the doorbell, though the wait is a minute
        await q.set_rate_limit(100, 1000)
        await eventually(lambda: len(done) == 3, within=5, what="the raised limit's starts")


async def test_2_7_claims_and_set_policy_are_refused_on_a_rate_limited_queue(
    client: echomq.Client,
) -> None:
    q = client.queue("refused27")
    leased, waiting = client.mint(), client.mint()
    assert await q.push(leased, b"a") and await q.push(waiting, b"b")
    await q.set_rate_limit(10, 1000)
    (job,) = await q.claim_ids(60_000, [leased])
    k = q.keys
    before = await snapshot(client, q)
    with pytest.raises(PolicyError) as err:
        await wire.ClaimPolicyIdsCall(
            pending=k.pending,
            active=k.active,
            running=k.running,
            policy=k.policy,
            wake=k.wake,
            rows=[k.row(waiting)],
            lease_ms=1000,
            ids=[waiting],
        ).run(client.redis)
    assert err.value.script == "claim_policy_ids"
    assert await snapshot(client, q) == before, "the 2.7 claim wrote"
    with pytest.raises(PolicyError):
        await wire.SetPolicyCall(
            pending=k.pending,
            active=k.active,
            running=k.running,
            policy=k.policy,
            wake=k.wake,
            paused=1,
            concurrency=-1,
        ).run(client.redis)
    assert await snapshot(client, q) == before, "the 2.7 set_policy wrote"
    # a 2.7 settle still goes through: its completion completes and leases nothing
    x = wire.CompletePolicyIdsCall(
        row=k.row(leased),
        active=k.active,
        running=k.running,
        policy=k.policy,
        pending=k.pending,
        wake=k.wake,
        results=k.results,
        result_times=k.result_times,
        progress=k.progress,
        failures=k.failures,
        options=k.options,
        events=k.events,
        counters=k.counters,
        rows=[k.row(waiting)],
        id=leased,
        token=job.token,
        lease_ms=1000,
        result=b"",
        keep=0,
        keep_age_ms=0,
        events_max=0,
        ids=[waiting],
    )
    assert await x.run(client.redis) == []
    assert await q.get(leased) is None
    info = await q.get(waiting)
    assert info is not None and info.state == STATE_PENDING
    # the SDK's own pre-2.7 calls say the queue has a rate limit among its policies
    with pytest.raises(PolicyError, match="rate limit"):
        await q.claim(1000)


async def test_a_worker_whose_claims_are_refused_keeps_running_and_settles_its_jobs(
    server: Server, client: echomq.Client, caplog: pytest.LogCaptureFixture
) -> None:
    q = client.queue("later")
    await q.set_rate_limit(100, 1000)
    first, *rest = [client.mint() for _ in range(4)]
    assert await q.push(first, b"")
    release = asyncio.Event()
    started: list[str] = []

    async def handler(job: Job) -> None:
        started.append(job.id)
        if job.id == first:
            await release.wait()

    log = logging.getLogger("test.rate.later")
    w = CountingWorker(q, handler, concurrency=2, wait_ms=200, maintenance_ms=50, logger=log)
    caplog.set_level(logging.WARNING, logger=log.name)
    async with running(w) as (task,):
        await eventually(lambda: started == [first], what="the first job started")
        # a later policy binding claimers only: this client's claims are refused (EMQPOLICY),
        # its settles go through
        await client.redis.set(q.keys.active, "99 7")
        await q.push_batch([echomq.NewJob(i, b"") for i in rest])
        await eventually(
            lambda: any("claiming failed" in r.getMessage() for r in caplog.records),
            what="the refused claim logged",
        )
        claims = w.claims
        t0 = time.monotonic()
        await asyncio.sleep(1.0)
        # backing off, not spinning: 50 ms doubling
        assert w.claims - claims <= 6, f"{w.claims - claims} claims in {time.monotonic() - t0}s"
        assert not task.done()
        release.set()
        await eventually(lambda: gone(q, first), what="the held job completed")
        assert started == [first], "nothing claimed under the later tripwire"
        for i in rest:
            info = await q.get(i)
            assert info is not None and info.state == STATE_PENDING and info.attempts == 0
        # the tripwire back to this client's: the worker claims again after its backoff
        await client.redis.set(q.keys.active, "8 7")
        await eventually(lambda: len(started) == 4, within=15, what="the rest ran")
        assert not task.done()
    refused = [r for r in caplog.records if "claiming failed" in r.getMessage()]
    assert refused and all(r.levelno == logging.WARNING for r in refused)
    assert any("EMQPOLICY" in r.getMessage() or "later minor" in r.getMessage() for r in refused)


async def gone(q: echomq.Queue, id: str) -> bool:
    return await q.get(id) is None
