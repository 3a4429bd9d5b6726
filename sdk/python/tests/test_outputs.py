"""echomq 2.4.0 against a real redis-server: push options (delay, attempts, backoff) on add_many,
results kept under a retention, progress, per-job retry policies, the events listener, the
counters, the sweep of what a 2.3 client leaves, and how soon an idle worker starts a delayed
job."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest
from conftest import Server

import echomq
from echomq import BackoffPolicy, Job, Retention, StaleError, Worker
from echomq._gen.protocol import (
    BACKOFF_EXPONENTIAL,
    EVENT_COMPLETED,
    EVENT_DEAD,
    EVENT_FAILED,
    EVENT_PROGRESS,
    EVENT_RETRIED,
    EVENT_REVIVED,
    FAILURE_CLASS_ERROR,
    STATE_ACTIVE,
    STATE_DEAD,
    STATE_SCHEDULED,
)

log = logging.getLogger(__name__)
quiet = logging.getLogger("echomq.test.quiet")
quiet.addHandler(logging.NullHandler())
quiet.propagate = False


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
    t = asyncio.create_task(w.run())
    try:
        yield t
    finally:
        w.stop()
        async with asyncio.timeout(30):
            await t


async def server_ms(c: echomq.Client) -> int:
    sec, usec = await c.redis.time()
    return int(sec) * 1000 + int(usec) // 1000


async def test_a_handlers_result_is_kept_and_read_after_completion(
    client: echomq.Client,
) -> None:
    q = client.queue("results")
    ids = [client.mint() for _ in range(3)]
    for i in ids:
        assert await q.push(i, i)

    @dataclasses.dataclass
    class Made:
        total: int
        id: str

    async def handler(job: Job) -> object:
        if job.id == ids[0]:
            return Made(total=42, id=job.id)  # a dataclass: the JSON object of its fields
        if job.id == ids[1]:
            return "done"
        return b"\x00\xff"

    w = Worker(q, handler, keep_results=Retention.keep(10, age=3600), logger=quiet)
    async with running(w):
        for i in ids:
            await eventually(
                lambda i=i: _completed(q, i),  # type: ignore[misc]
                what=f"{i} completed with a kept record",
            )
    found = await q.lookup(ids[0])
    assert not found.found and found.job is None
    assert found.completed is not None
    assert found.completed.json() == {"total": 42, "id": ids[0]}
    assert found.completed.attempt == 1
    assert abs(found.completed.at_ms - await server_ms(client)) < 60_000
    assert isinstance(found.completed.at, datetime.datetime)
    out = await q.output(ids[1])
    assert out.completed is not None and out.completed.text() == "done" and out.progress == b""
    out = await q.output(ids[2])
    assert out.completed is not None and out.completed.result == b"\x00\xff"
    assert await q.get(ids[0]) is None, "get keeps answering None for a job that is gone"


async def _completed(q: echomq.Queue, id: str) -> bool:
    return (await q.lookup(id)).completed is not None


async def test_the_default_retention_keeps_nothing_and_a_count_keeps_the_newest(
    client: echomq.Client,
) -> None:
    q = client.queue("retention")
    done: list[str] = []

    async def handler(job: Job) -> bytes:
        done.append(job.id)
        return b"r-" + job.payload

    # Default: keep none (BullMQ's removeOnComplete: true).
    a = client.mint()
    assert await q.push(a, b"a")
    async with running(Worker(q, handler, logger=quiet)):
        await eventually(lambda: a in done, what="a ran")
        await eventually(lambda: _gone(q, a), what="a retired")
    assert (await q.lookup(a)).completed is None
    assert await client.redis.exists(q.keys.results) == 0

    # Count 2: three completions keep the last two.
    ids = [client.mint() for _ in range(3)]
    w = Worker(q, handler, concurrency=1, keep_results=Retention(count=2), logger=quiet)
    async with running(w):
        for i in ids:  # one at a time, so that completion order is push order
            assert await q.push(i, i.encode())
            await eventually(lambda i=i: _completed(q, i), what="kept")  # type: ignore[misc]
    assert (await q.lookup(ids[0])).completed is None, "the oldest record was dropped"
    for i in ids[1:]:
        c = (await q.lookup(i)).completed
        assert c is not None and c.result == b"r-" + i.encode()
    assert await client.redis.hlen(q.keys.results) == 2

    with pytest.raises(echomq.ArgumentError):
        Retention(count=-1)
    with pytest.raises(echomq.ArgumentTypeError):
        Worker(q, handler, keep_results=2)  # type: ignore[call-overload]


async def _gone(q: echomq.Queue, id: str) -> bool:
    return await q.get(id) is None


async def test_progress_reported_from_the_handler_is_read_while_it_runs(
    client: echomq.Client,
) -> None:
    q = client.queue("progress")
    id = client.mint()
    assert await q.push(id, b"long")
    reported = asyncio.Event()
    finish = asyncio.Event()

    async def handler(job: Job) -> None:
        await job.report_progress({"done": 50})
        await job.report_progress("60%")
        reported.set()
        await finish.wait()

    async with running(Worker(q, handler, logger=quiet)):
        async with asyncio.timeout(10):
            await reported.wait()
        info = await q.get(id)
        assert info is not None and info.state == STATE_ACTIVE and info.progress == b"60%"
        assert (await q.output(id)).progress == b"60%"
        # Anyone but the lease holder is refused as stale, and nothing is written.
        with pytest.raises(StaleError):
            await q.report_progress(id, info.attempts + 1, "99%")
        assert (await q.output(id)).progress == b"60%"
        finish.set()
        await eventually(lambda: _gone(q, id), what="completed")
    assert await client.redis.hlen(q.keys.progress) == 0, "the completion deleted the report"
    evs = [e for e in await q.read_events() if e.event == EVENT_PROGRESS]
    assert [e.progress for e in evs] == [b'{"done":50}', b"60%"]
    # Outside a worker's handler there is no lease to report for.
    with pytest.raises(RuntimeError):
        await Job(id=id, token=1, payload=b"", deadline_ms=0).report_progress(1)
    with pytest.raises(echomq.ArgumentError):
        await q.report_progress(id, 1, b"x" * (echomq.PROGRESS_MAX_BYTES + 1))


async def test_a_jobs_own_attempts_are_honoured_over_the_workers(client: echomq.Client) -> None:
    q = client.queue("attempts")
    own, plain = client.mint(), client.mint()
    assert await q.push(own, b"own", attempts=2)
    assert await q.push(plain, b"plain")
    runs: dict[str, int] = {own: 0, plain: 0}

    async def handler(job: Job) -> None:
        runs[job.id] += 1
        raise RuntimeError(f"attempt {job.token}")

    w = Worker(
        q, handler, max_attempts=4, backoff=BackoffPolicy.fixed(0), maintenance_ms=20, logger=quiet
    )
    async with running(w):
        for i in (own, plain):
            await eventually(lambda i=i: _dead(q, i), what=f"{i} dead")  # type: ignore[misc]
    assert runs == {own: 2, plain: 4}
    c = await q.counters(1)
    assert c.totals.failed == 6 and c.totals.dead == 2 and c.totals.retried == 4
    assert c.minutes and c.minutes[0].failed == 6 and c.minutes[0].minute.tzinfo is not None


async def _dead(q: echomq.Queue, id: str) -> bool:
    info = await q.get(id)
    return info is not None and info.state == STATE_DEAD


async def test_an_unrecoverable_error_buries_at_once(client: echomq.Client) -> None:
    q = client.queue("unrecoverable")
    id = client.mint()
    assert await q.push(id, b"x", attempts=10)

    async def handler(job: Job) -> None:
        raise echomq.UnrecoverableError(ValueError("the order does not exist"))

    async with running(Worker(q, handler, logger=quiet)):
        await eventually(lambda: _dead(q, id), what="buried")
    info = await q.get(id)
    assert info is not None and info.attempts == 1
    assert info.failures[-1].message == "ValueError: the order does not exist"
    assert str(echomq.UnrecoverableError("no such order")) == "no such order"


async def test_an_exponential_backoff_schedules_by_the_attempt(client: echomq.Client) -> None:
    q = client.queue("exponential")
    id = client.mint()
    policy = BackoffPolicy.exponential(datetime.timedelta(seconds=10), max=30)
    assert policy == BackoffPolicy(BACKOFF_EXPONENTIAL, 10_000, 30_000)
    # A policy is a backoff function of the attempt too (Worker(backoff=...) takes either).
    assert 5_000 <= policy(1) <= 10_000 and 15_000 <= policy(3) <= 30_000
    assert BackoffPolicy.fixed(0.25)(7) == 250
    assert await q.push(id, b"x", backoff=policy)
    failure = echomq.Failure(FAILURE_CLASS_ERROR, "boom", worker="t")
    expect = [10_000, 20_000, 30_000]  # doubling from the base, up to the bound
    for attempt, delay in enumerate(expect, start=1):
        (job,) = await q.claim_ids(60_000, [id])
        assert job.token == attempt
        before = await server_ms(client)
        # The worker's own policy (fixed 1 s) does not apply: the job has one of its own.
        out = await q.fail(id, job.token, failure, backoff=BackoffPolicy.fixed(1), jitter=0)
        after = await server_ms(client)
        assert out.outcome == EVENT_RETRIED and not out.dead and out.run_at_ms is not None
        assert before + delay <= out.run_at_ms <= after + delay
        info = await q.get(id)
        assert info is not None and info.state == STATE_SCHEDULED and info.at_ms == out.run_at_ms
        await client.redis.zadd(q.keys.schedule, {id: 0})  # due now
        assert await q.promote_ids([id]) == 1
    # The jitter draw shortens an exponential delay by up to half.
    (job,) = await q.claim_ids(60_000, [id])
    before = await server_ms(client)
    out = await q.fail(id, job.token, failure, jitter=1000)
    assert out.run_at_ms is not None and before + 15_000 <= out.run_at_ms <= before + 16_000
    with pytest.raises(echomq.ArgumentError):
        await q.fail(id, job.token, failure, jitter=1001)
    with pytest.raises(echomq.ArgumentError):
        BackoffPolicy("linear", 1)  # type: ignore[arg-type]


async def test_push_options_go_to_add_many_and_coalesce_only_alike(
    client: echomq.Client,
) -> None:
    q = client.queue("options")
    ids = [client.mint() for _ in range(6)]
    before = await server_ms(client)
    res = await asyncio.gather(
        q.push(ids[0], b"0"),
        q.push(ids[1], b"1", attempts=3),
        q.push(ids[2], b"2"),
        q.push(ids[3], b"3", attempts=3),
        q.push(ids[4], b"4", delay=datetime.timedelta(minutes=1)),
        q.push(ids[5], b"5", delay=0, attempts=None, backoff=None),  # no options: a plain push
    )
    assert list(res) == [True] * 6
    policies = await client.redis.hkeys(q.keys.options)
    assert sorted(p.decode() if isinstance(p, bytes) else p for p in policies) == sorted(
        [ids[1], ids[3]]
    )
    info = await q.get(ids[4])
    assert info is not None and info.state == STATE_SCHEDULED and info.at_ms is not None
    assert before + 60_000 <= info.at_ms <= await server_ms(client) + 60_000
    assert await q.pending_size() == 5
    assert not await q.push(ids[1], b"again", attempts=3), "a duplicate"
    # push_batch with options: add_many calls, one policy for the batch
    more = [client.mint() for _ in range(3)]
    out = await q.push_batch([echomq.NewJob(i, b"m") for i in more], backoff=BackoffPolicy.fixed(2))
    assert [r.enqueued for r in out] == [True] * 3
    assert await client.redis.hlen(q.keys.options) == 5
    with pytest.raises(echomq.ArgumentError):
        await q.push(client.mint(), b"x", attempts=-1)
    with pytest.raises(echomq.ArgumentTypeError):
        await q.push(client.mint(), b"x", backoff="fixed")  # type: ignore[call-overload]
    added = await q.add_many([echomq.NewJob(client.mint(), b"d")], delay=5)
    assert added[0].enqueued and added[0].run_at_ms is not None


async def test_the_events_listener_resumes_after_the_last_event(client: echomq.Client) -> None:
    q = client.queue("listener")
    a, b = client.mint(), client.mint()
    got: list[echomq.QueueEvent] = []
    seen_two = asyncio.Event()

    async def listen(after: str, n: int) -> None:
        async for ev in q.events(after=after, wait=0.2):
            got.append(ev)
            if len(got) >= n:
                seen_two.set()
                return

    # Events written after the listener started blocking reach it.
    task = asyncio.create_task(listen("", 2))
    await asyncio.sleep(0.05)
    assert await q.push(a, b"a")
    (job,) = await q.claim_ids(60_000, [a])
    await q.fail(job.id, job.token, echomq.Failure(FAILURE_CLASS_ERROR, "once"), bury=True)
    async with asyncio.timeout(10):
        await seen_two.wait()
        await task
    assert [(e.event, e.id, e.attempt) for e in got] == [(EVENT_FAILED, a, 1), (EVENT_DEAD, a, 1)]
    assert got[0].failure_class == FAILURE_CLASS_ERROR and got[0].error.endswith("once")
    last = got[-1].stream_id

    # More happen while nobody listens; a listener resuming after the last one gets only those.
    assert await q.revive(a)
    (job,) = await q.claim_ids(60_000, [a])
    await q.complete_result_claim_ids(job.id, job.token, 60_000, [], result="ok")
    assert await q.push(b, b"b")
    got.clear()
    async with contextlib.aclosing(q.events(after=last, wait=0.2)) as evs:
        async with asyncio.timeout(10):
            async for ev in evs:
                got.append(ev)
                if len(got) == 2:
                    break
    assert [(e.event, e.id) for e in got] == [(EVENT_REVIVED, a), (EVENT_COMPLETED, a)]
    assert got[1].attempt == 2

    # A listener with nothing to read is cancelled promptly.
    idle = asyncio.create_task(listen(got[-1].stream_id, 1))
    await asyncio.sleep(0.3)
    idle.cancel()
    async with asyncio.timeout(5):
        with pytest.raises(asyncio.CancelledError):
            await idle
    with pytest.raises(echomq.ArgumentError):
        await q.read_events("not-an-id")
    with pytest.raises(echomq.ArgumentError):
        await q.read_events("", 1001)


async def test_events_max_zero_writes_no_events(server: Server) -> None:
    c = await echomq.connect(server.url, node_lease_ms=120_000, events_max=0)
    try:
        q = c.queue("silent")
        id = c.mint()
        assert await q.push(id, b"x")
        (job,) = await q.claim_ids(60_000, [id])
        await q.fail(id, job.token, echomq.Failure(FAILURE_CLASS_ERROR, "x"), bury=True)
        assert await q.revive(id)
        assert await c.redis.exists(q.keys.events) == 0
        assert (await q.counters()).totals.failed == 1, "counted all the same"
    finally:
        await c.close()


async def test_the_sweep_forgets_what_a_23_client_left(client: echomq.Client) -> None:
    q = client.queue("sweep")
    id = client.mint()
    assert await q.push(id, b"x", attempts=5)
    (job,) = await q.claim_ids(60_000, [id])
    await q.report_progress(id, job.token, "half")
    await q.complete_claim_ids(id, job.token, 60_000, [])  # the 2.3 completion leaves them
    assert await client.redis.hlen(q.keys.options) == 1
    assert await client.redis.hlen(q.keys.progress) == 1

    async def handler(job: Job) -> None:
        pass

    async with running(Worker(q, handler, maintenance_ms=20, logger=quiet)):

        async def swept() -> bool:
            n = await client.redis.hlen(q.keys.options) + await client.redis.hlen(q.keys.progress)
            return n == 0

        await eventually(swept, what="the policy and the report swept")


async def test_an_idle_worker_starts_a_delayed_job_on_time(client: echomq.Client) -> None:
    """The worker waits on the doorbell for up to 4 s, with no maintenance of its own: the
    delayed push rings it (the new earliest job), and it sleeps until the run-at, then promotes
    the job itself."""
    q = client.queue("delayed")
    started: dict[str, int] = {}

    async def handler(job: Job) -> None:
        started[job.id] = now_ms()

    w = Worker(q, handler, wait=4, maintenance_ms=0, logger=quiet)
    latencies: list[int] = []
    async with running(w):
        await asyncio.sleep(0.1)  # the worker is idle, blocked on the doorbell
        for delay in (0.2, 0.35, 0.5):
            id = client.mint()
            (added,) = await q.add_many([echomq.NewJob(id, b"d")], delay=delay)
            assert added.run_at_ms is not None
            await eventually(lambda id=id: id in started, within=10, what="started")  # type: ignore[misc]
            latencies.append(started[id] - added.run_at_ms)
    log.warning("emq: delayed start latency (handler start - run-at), ms: %s", latencies)
    print(f"delayed start latency (ms): {latencies}")
    assert all(-5 <= x < 1000 for x in latencies), latencies


async def test_a_due_entry_that_cannot_be_promoted_does_not_spin_the_idle_worker(
    server: Server, client: echomq.Client
) -> None:
    """A due schedule entry that is not an id (a foreign writer's) cannot be promoted: the idle
    worker then waits on the doorbell as if nothing were scheduled, rather than spin on it."""
    q = client.queue("stuck")
    await client.redis.zadd(q.keys.schedule, {"not-an-id": 1})

    async def handler(job: Job) -> None:
        pass

    async with running(Worker(q, handler, wait=1, maintenance_ms=0, logger=quiet)):
        await asyncio.sleep(0.3)  # started, idle
        before = server.commandstats()
        await asyncio.sleep(1.0)
        after = server.commandstats()
    calls = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    assert sum(calls.values()) < 40, f"the idle worker polled: {calls}"
