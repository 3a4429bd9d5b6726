"""The Worker on a real server: exactly-once processing under concurrency, lease extension, a lost
lease, retries with backoff then bury, graceful shutdown with hand-back, and the scripts it runs
(only those that declare every key they touch, the 2.3.0 ones that record failed attempts)."""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager

import pytest
import redis.asyncio
from conftest import Server

import echomq
from echomq import Counter, Job, Tally, Worker
from echomq._gen.protocol import (
    SET_ACTIVE,
    SET_PENDING,
    SET_SCHEDULE,
    STATE_ACTIVE,
    STATE_DEAD,
    STATE_PENDING,
)
from echomq._gen.scripts import SCRIPTS


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


@asynccontextmanager
async def running(w: Worker) -> AsyncIterator[asyncio.Task[None]]:
    """Runs w in a task; stops it and waits for run() on leaving."""
    t = asyncio.create_task(w.run())
    try:
        yield t
    finally:
        w.stop()
        async with asyncio.timeout(30):
            await t


async def connect(server: Server, **kw: object) -> echomq.Client:
    return await echomq.connect(server.url, node_lease_ms=120_000, socket_timeout=5, **kw)  # type: ignore[arg-type]


async def empty(q: echomq.Queue) -> bool:
    return all(n == 0 for n in (await q.sizes()).values())


async def test_every_job_runs_exactly_once_across_concurrent_workers(server: Server) -> None:
    producer = await connect(server)
    clients = [await connect(server) for _ in range(3)]
    try:
        q = producer.queue("once")
        seen: collections.Counter[str] = collections.Counter()
        tally = Tally()

        async def handler(job: Job) -> None:
            seen[job.id] += 1
            assert job.payload == job.id.encode()
            await asyncio.sleep(0.001)

        workers = [
            Worker(c.queue("once"), handler, concurrency=8, metrics=tally, wait_ms=200)
            for c in clients
        ]
        ids = [producer.mint() for _ in range(600)]
        tasks = [asyncio.create_task(w.run()) for w in workers]
        try:
            # Producers push while the workers are already waiting on the doorbell.
            res = await asyncio.gather(*(q.push(i, i.encode()) for i in ids))
            assert all(res)
            await eventually(lambda: len(seen) == len(ids), what="every job handled")
            await eventually(lambda: empty(q), what="an empty queue")
        finally:
            async with asyncio.timeout(10):
                await asyncio.gather(*(w.close() for w in workers))  # stop, and wait for run()
            assert all(t.done() for t in tasks)
        assert set(seen) == set(ids)
        assert all(n == 1 for n in seen.values()), "no job ran twice"
        assert tally.get(Counter.COMPLETED) == len(ids)
        assert tally.get(Counter.CLAIMED) == len(ids)
        assert tally.get(Counter.STALE) == 0
    finally:
        for c in [producer, *clients]:
            await c.close()


async def test_lease_is_extended_while_the_handler_runs(server: Server) -> None:
    c = await connect(server)
    try:
        q = c.queue("extend")
        id = c.mint()
        assert await q.push(id, b"")
        first: list[int] = []
        later: list[int] = []
        release = asyncio.Event()
        tally = Tally()

        async def handler(job: Job) -> None:
            first.append(job.deadline_ms)
            await release.wait()

        w = Worker(q, handler, lease_ms=600, maintenance_ms=100, metrics=tally)
        async with running(w):
            await eventually(lambda: first, what="the handler started")
            await asyncio.sleep(1.5)  # 2.5 leases: maintenance would reap an unextended one
            info = await q.get(id)
            assert info is not None and info.state == STATE_ACTIVE and info.at_ms
            later.append(info.at_ms)
            assert info.attempts == 1, "never reaped and claimed again"
            release.set()
            await eventually(lambda: empty(q), what="the job completed")
        assert later[0] > first[0] + 600, "the deadline moved on"
        assert tally.get(Counter.COMPLETED) == 1
        assert tally.get(Counter.REAPED) == 0 and tally.get(Counter.STALE) == 0
    finally:
        await c.close()


async def test_a_lost_lease_cancels_the_handler_and_its_late_complete_is_stale(
    server: Server,
) -> None:
    c = await connect(server)
    other = await connect(server)
    try:
        q = c.queue("lost")
        oq = other.queue("lost")
        id = c.mint()
        assert await q.push(id, b"")
        started = asyncio.Event()
        cancelled: list[str] = []
        tally = Tally()

        async def handler(job: Job) -> None:
            started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError as err:
                cancelled.append(str(err.args[0]) if err.args else "")
                # A handler that ignores the cancellation and returns: its complete comes late.

        w = Worker(q, handler, lease_ms=600, maintenance_ms=0, metrics=tally)
        async with running(w):
            await asyncio.wait_for(started.wait(), 5)
            # The lease expires (its deadline set in the past), another worker's maintenance
            # reaps it and another worker takes the job: token 2.
            with server.raw() as r:
                r.zadd(q.keys.active, {id: 1})
            assert await oq.reap_expired() == 1
            taken = await oq.claim_many(60_000, 1)
            assert [j.id for j in taken] == [id] and taken[0].token == 2
            await eventually(lambda: cancelled, what="the handler cancelled")
            await eventually(lambda: tally.get(Counter.STALE) >= 2, what="the late complete")
        assert cancelled == [echomq.LEASE_LOST]
        assert tally.get(Counter.COMPLETED) == 0
        info = await q.get(id)
        assert info is not None and info.attempts == 2, "the new holder's lease survived"
        await oq.complete(id, 2)
    finally:
        await c.close()
        await other.close()


async def test_failures_are_retried_with_backoff_then_buried(server: Server) -> None:
    c = await connect(server)
    try:
        q = c.queue("retry")
        id, perm = c.mint(), c.mint()
        assert await q.push(id, b"flaky")
        assert await q.push(perm, b"hopeless")
        attempts: dict[str, list[tuple[int, float]]] = collections.defaultdict(list)
        tally = Tally()

        async def handler(job: Job) -> None:
            attempts[job.id].append((job.token, time.monotonic()))
            if job.payload == b"hopeless":
                raise echomq.permanent(ValueError("no retry fixes it"))
            raise RuntimeError("try again")

        w = Worker(
            q,
            handler,
            max_attempts=3,
            backoff=lambda a: 150.0 * a,
            maintenance_ms=0,  # the retries' own timers promote them
            metrics=tally,
        )
        async with running(w):
            await eventually(lambda: tally.get(Counter.BURIED) == 2, what="both buried")
        assert [t for t, _ in attempts[id]] == [1, 2, 3]
        gaps = [b - a for (_, a), (_, b) in zip(attempts[id], attempts[id][1:], strict=False)]
        assert gaps[0] >= 0.14 and gaps[1] >= 0.29, f"the backoff was kept: {gaps}"
        assert [t for t, _ in attempts[perm]] == [1], "a permanent failure is buried at once"
        assert tally.get(Counter.RETRIED) == 2 and tally.get(Counter.BURIED) == 2
        for j in (id, perm):
            info = await q.get(j)
            assert info is not None and info.state == STATE_DEAD
    finally:
        await c.close()


async def test_graceful_shutdown_finishes_then_hands_back(server: Server) -> None:
    c = await connect(server)
    try:
        q = c.queue("shutdown")
        quick, stuck, waiting = c.mint(), c.mint(), c.mint()
        for i in (quick, stuck, waiting):
            assert await q.push(i, i.encode())
        release_quick = asyncio.Event()
        started: list[str] = []
        cancelled: list[str] = []
        tally = Tally()

        async def handler(job: Job) -> None:
            started.append(job.id)
            if job.id == quick:
                await release_quick.wait()
                await asyncio.sleep(0.05)
                return
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError as err:
                cancelled.append(str(err.args[0]) if err.args else "")
                raise

        w = Worker(q, handler, concurrency=2, shutdown_timeout_ms=300, metrics=tally)
        t = asyncio.create_task(w.run())
        await eventually(lambda: len(started) == 2, what="two handlers running")
        assert sorted(started) == sorted([quick, stuck])
        w.stop()
        release_quick.set()  # finishes inside the shutdown window: completed, nothing claimed
        async with asyncio.timeout(5):
            await t
        assert cancelled == [echomq.SHUTDOWN]
        assert tally.get(Counter.COMPLETED) == 1 and tally.get(Counter.HANDED_BACK) == 1
        sizes = await q.sizes()
        assert sizes[SET_ACTIVE] == 0 and sizes[SET_SCHEDULE] == 0
        assert sizes[SET_PENDING] == 2, "the stuck job was handed back, the third never claimed"
        assert await q.get(quick) is None
        info = await q.get(stuck)
        assert info is not None and info.state == STATE_PENDING and info.attempts == 1
        assert started.count(waiting) == 0
    finally:
        await c.close()


# --------------------------------------------------------------------- the scripts it runs

FROZEN_POPS = {"claim", "claim_many", "complete_claim", "promote", "reap"}
"""The 2.0/2.1 scripts that reach rows through the row prefix, not KEYS."""

_BY_SHA = {s.sha1: s.name for s in SCRIPTS}


def _script_of(command: str) -> str | None:
    """The script name of a monitored EVALSHA or EVAL command (MONITOR's text of it); ZRANGE for
    a read of a set's head."""
    args = command.split(" ", 2)
    cmd = args[0].upper()
    if cmd == "EVALSHA" and len(args) > 1:
        return _BY_SHA.get(args[1].strip('"'), "?" + args[1])
    if cmd == "ZRANGE":
        return cmd
    if cmd == "EVAL":
        for s in SCRIPTS:
            if f"script {s.name}. " in command:
                return s.name
        return "?eval"
    return None


@asynccontextmanager
async def monitored(server: Server) -> AsyncIterator[collections.Counter[str]]:
    """Counts the scripts every client of the server runs (MONITOR), by name."""
    seen: collections.Counter[str] = collections.Counter()
    r = redis.asyncio.Redis(port=server.port)
    ready = asyncio.Event()

    async def watch() -> None:
        async with r.monitor() as m:
            ready.set()
            while True:
                info = await m.next_command()
                name = _script_of(str(info.get("command", "")))
                if name is not None:
                    seen[name] += 1

    t = asyncio.create_task(watch())
    await asyncio.wait_for(ready.wait(), 5)
    await asyncio.sleep(0.05)
    try:
        yield seen
    finally:
        await asyncio.sleep(0.1)
        t.cancel()
        await asyncio.gather(t, return_exceptions=True)
        await r.aclose()


async def test_the_worker_runs_only_scripts_that_declare_their_keys(server: Server) -> None:
    c = await connect(server)
    other = await connect(server)
    try:
        q = c.queue("declared")
        oq = other.queue("declared")
        ids = [c.mint() for _ in range(30)]
        failed_once: set[str] = set()
        tally = Tally()

        async def handler(job: Job) -> None:
            if job.id not in failed_once and len(failed_once) < 5:
                failed_once.add(job.id)
                raise RuntimeError("once more")  # a retry: promoted by promote_ids
            await asyncio.sleep(0.25 if job.id == ids[0] else 0)  # over a lease third: extended

        async with monitored(server) as seen:
            # An expired lease left behind by a crashed worker: reaped by reap_failed_ids.
            orphan = c.mint()
            assert await oq.push(orphan, b"")
            assert [j.id for j in await oq.claim_ids(100, [orphan])] == [orphan]
            w = Worker(
                q,
                handler,
                concurrency=4,
                lease_ms=300,
                backoff=lambda a: 20.0,
                maintenance_ms=100,
                metrics=tally,
            )
            async with running(w):
                for i in ids:
                    assert await q.push(i, b"")
                await eventually(lambda: empty(q), what="everything processed")
        assert tally.get(Counter.COMPLETED) == len(ids) + 1
        assert tally.get(Counter.RETRIED) == 5 and tally.get(Counter.REAPED) >= 1
        used = set(seen)
        assert not used & FROZEN_POPS, f"frozen pop scripts ran: {used & FROZEN_POPS}"
        # 2.4.0: the worker settles, reaps and sweeps with the 2.4 scripts; 2.7.0: with the 2.7
        # twins of those that declare the active key, which serve either layout; 2.8.0: it claims
        # and completes with their 2.8 twins, which honour a rate limit too
        for name in (
            "claim_rate_ids",
            "complete_rate_ids",
            "promote_ids",
            "reap_policy_ids",
            "fail_policy",
            "forget_ids",
            "extend_policy",
        ):
            assert seen[name] > 0, f"{name} never ran: {dict(seen)}"
        # 2.3.0: a failed attempt and a lost lease are recorded by the scripts that settle them;
        # 2.4.0: by fail and reap_recorded_ids, not their 2.3 variants
        for name in (
            "retry",
            "bury",
            "reap_ids",
            "retry_failed",
            "bury_failed",
            "reap_failed_ids",
            "complete_claim_ids",
            # 2.7.0: their 2.7 twins run instead
            "claim_ids",
            "complete_result_claim_ids",
            "reap_recorded_ids",
            "fail",
            "extend",
            # 2.8.0: their 2.8 twins run instead
            "claim_policy_ids",
            "complete_policy_ids",
        ):
            assert seen[name] == 0, f"{name} ran instead of its later variant: {dict(seen)}"
        assert not any(n.startswith("?") for n in used), dict(seen)
    finally:
        await c.close()
        await other.close()


async def test_steady_state_is_one_script_call_per_job(server: Server) -> None:
    """With a backlog, complete_rate_ids leases the next head id in the completion's own call:
    the claim calls (claim_rate_ids) are far fewer than the jobs."""
    c = await connect(server)
    try:
        q = c.queue("steady")
        ids = [c.mint() for _ in range(300)]
        await q.push_batch([echomq.NewJob(i, b"") for i in ids])
        done: list[str] = []

        async def handler(job: Job) -> None:
            done.append(job.id)

        async with monitored(server) as seen:
            w = Worker(q, handler, concurrency=4, maintenance_ms=0)
            async with running(w):
                await eventually(lambda: len(done) == len(ids), what="the backlog drained")
        assert sorted(done) == sorted(ids)
        # One call per job, plus the EVAL of the first calls the server answered NOSCRIPT.
        assert len(ids) <= seen["complete_rate_ids"] <= len(ids) + 4, dict(seen)
        assert seen["claim_rate_ids"] <= 10, dict(seen)
        # the completion deletes the failure record itself (2.4.0): nothing is sent to forget one
        assert seen["forget_failures"] == 0 and seen["forget_ids"] == 0, dict(seen)
        assert seen["ZRANGE"] <= len(ids) / 4, f"refills read several jobs each: {dict(seen)}"
        assert done[:4] and set(done[:4]) <= set(ids[:8]), "oldest first"
    finally:
        await c.close()


@pytest.fixture
def restartable(aof_server: Server) -> Iterator[Server]:
    yield aof_server


async def test_sigkill_and_restart_mid_load_loses_no_acknowledged_job(
    restartable: Server,
) -> None:
    server = restartable
    producer = await connect(server)
    wc = await connect(server)
    try:
        q = producer.queue("crash")
        handled: collections.Counter[str] = collections.Counter()

        async def handler(job: Job) -> None:
            handled[job.id] += 1
            await asyncio.sleep(0.002)

        w = Worker(wc.queue("crash"), handler, concurrency=8, lease_ms=1000, maintenance_ms=100)
        acked: list[str] = []

        async def produce(n: int) -> None:
            async def one(i: str) -> None:
                try:
                    if await q.push(i, b""):
                        acked.append(i)
                except echomq.ConnectionError:
                    pass  # not acknowledged: the caller knows to push it again

            for _ in range(n):
                await asyncio.gather(*(one(producer.mint()) for _ in range(20)))
                await asyncio.sleep(0.005)

        async with running(w):
            p = asyncio.create_task(produce(30))
            await eventually(lambda: len(acked) >= 150, what="load before the crash")
            server.kill()
            await asyncio.sleep(0.2)
            server.start()
            await p
            await eventually(
                lambda: set(acked) <= set(handled), within=20, what="every acked job handled"
            )
            await eventually(lambda: empty(q), within=10, what="an empty queue")
        assert len(acked) >= 300, f"most pushes were acknowledged: {len(acked)}"
        assert set(acked) <= set(handled)
    finally:
        await producer.close()
        await wc.close()


async def test_a_job_leased_as_the_worker_stops_is_handed_back_unstarted(server: Server) -> None:
    """A claim the server answers after stop(): its job is handed back at once, never started."""
    c = await connect(server)
    try:
        q = c.queue("unstarted")
        id = c.mint()
        started: list[str] = []
        tally = Tally()

        async def handler(job: Job) -> None:
            started.append(job.id)

        w = Worker(q, handler, concurrency=1, wait_ms=200, maintenance_ms=0, metrics=tally)
        t = asyncio.create_task(w.run())
        await asyncio.sleep(0.05)  # idle on the doorbell
        assert await q.enqueue(id, b"")  # no bell: found when the wait ends
        with server.raw() as r:
            r.execute_command("CLIENT", "PAUSE", "700", "WRITE")  # the claim waits for it
        await asyncio.sleep(0.45)
        w.stop()
        async with asyncio.timeout(5):
            await t
        assert started == []
        assert tally.get(Counter.CLAIMED) == 1 and tally.get(Counter.HANDED_BACK) == 1
        info = await q.get(id)
        assert info is not None and info.state == STATE_PENDING and info.attempts == 1
    finally:
        await c.close()


async def test_cancelling_run_hands_back_at_once(server: Server) -> None:
    c = await connect(server)
    try:
        q = c.queue("aborted")
        id = c.mint()
        assert await q.push(id, b"")
        started = asyncio.Event()
        cancelled: list[str] = []

        async def handler(job: Job) -> None:
            started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError as err:
                cancelled.append(str(err.args[0]) if err.args else "")
                raise

        w = Worker(q, handler, shutdown_timeout_ms=30_000)
        t = asyncio.create_task(w.run())
        await asyncio.wait_for(started.wait(), 5)
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            async with asyncio.timeout(5):
                await t
        assert cancelled == [echomq.SHUTDOWN]
        info = await q.get(id)
        assert info is not None and info.state == STATE_PENDING, "handed back, not left leased"
    finally:
        await c.close()


async def test_a_plain_def_handler_runs_in_a_thread_pool(server: Server) -> None:
    """A plain def handler runs in the worker's thread pool, off the event loop: it may block
    (time.sleep) while the loop goes on; returning completes its job and raising retries it."""
    import threading

    c = await connect(server)
    try:
        q = c.queue("plaindef")
        ids = [c.mint() for _ in range(6)]
        for i in ids:
            assert await q.push(i, b"ok")
        bad = c.mint()
        assert await q.push(bad, b"fail")
        tally = Tally()
        threads: set[str] = set()
        loop_thread = threading.current_thread().name
        done: list[str] = []

        def handler(job: Job) -> None:
            threads.add(threading.current_thread().name)
            time.sleep(0.05)  # blocks its thread, not the loop
            if job.payload == b"fail":
                raise RuntimeError("no luck")
            done.append(job.id)

        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.005)
                ticks += 1

        tick = asyncio.create_task(ticker())
        w = Worker(q, handler, concurrency=3, max_attempts=1, maintenance_ms=0, metrics=tally)
        async with running(w):
            await eventually(
                lambda: tally.get(Counter.COMPLETED) == 6 and tally.get(Counter.BURIED) == 1,
                what="six completed and one buried",
            )
        tick.cancel()
        assert sorted(done) == sorted(ids)
        assert loop_thread not in threads and all(t.startswith("emq-plaindef") for t in threads)
        assert ticks > 10, "the loop stalled while plain handlers slept"
        info = await q.get(bad)
        assert info is not None and info.state == STATE_DEAD
    finally:
        await c.close()


async def test_async_and_plain_handlers_of_every_shape(server: Server) -> None:
    """A coroutine function, a partial of one, an object with an async __call__ run on the loop; a
    plain function, and a lambda returning a coroutine, run in the pool (the coroutine awaited on
    the loop)."""
    import contextvars
    import functools
    import threading
    from collections.abc import Awaitable

    c = await connect(server)
    try:
        seen: list[tuple[str, bool]] = []
        main = threading.current_thread()

        async def coro(job: Job, tag: str = "coro") -> None:
            seen.append((tag, threading.current_thread() is main))

        class Callable_:
            async def __call__(self, job: Job) -> None:
                seen.append(("object", threading.current_thread() is main))

        def plain(job: Job) -> None:
            seen.append(("plain", threading.current_thread() is main))

        ctx: contextvars.ContextVar[str] = contextvars.ContextVar("ctx", default="")

        def returns_awaitable(job: Job) -> Awaitable[None]:
            # annotated so: called on the loop, in the runner task, as 2.2.0 called every handler
            seen.append(("returns_awaitable", threading.current_thread() is main))
            ctx.set("set at call time")
            return coro(job, "its coroutine")

        handlers: list[tuple[str, object]] = [
            ("coro", coro),
            ("partial", functools.partial(coro, tag="partial")),
            ("object", Callable_()),
            ("plain", plain),
            ("lambda", lambda job: coro(job, "lambda")),
            ("returns_awaitable", returns_awaitable),
        ]
        for name, h in handlers:
            q = c.queue(f"shape-{name}")
            assert await q.push(c.mint(), b"")
            tally = Tally()
            w = Worker(q, h, maintenance_ms=0, metrics=tally)  # type: ignore[call-overload]
            async with running(w):
                await eventually(functools.partial(tally.get, Counter.COMPLETED), what=name)
        assert seen == [
            ("coro", True),
            ("partial", True),
            ("object", True),
            ("plain", False),
            ("lambda", True),
            ("returns_awaitable", True),
            ("its coroutine", True),
        ]
        # in_thread overrides the rule either way
        seen.clear()
        for name, h, flag in (("forced-thread", coro, True), ("forced-loop", plain, False)):
            q = c.queue(name)
            assert await q.push(c.mint(), b"")
            tally = Tally()
            w = Worker(q, h, maintenance_ms=0, metrics=tally, in_thread=flag)
            async with running(w):
                await eventually(functools.partial(tally.get, Counter.COMPLETED), what=name)
        assert seen == [("coro", True), ("plain", True)]
    finally:
        await c.close()
