"""Cancellation is honoured on every SDK call, whatever redis-py does with it (8.0.0 and 8.1.0
swallow some cancellations that land while a command is in flight), and Worker.run() returns
within its shutdown bound after stop() even when maintenance and claims are in flight.

EMQ_CANCEL_ROUNDS sets the rounds of the worker test: 500 by default, the quick variant CI runs
(the hang it guards against came 7 times in 200 rounds); the long campaign is 10,000."""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Awaitable, Callable

import pytest
import redis.asyncio
from conftest import Server

import echomq
from echomq import Job, NewJob, Worker
from echomq._gen.protocol import SET_PENDING

TASKS = 100
ROUNDS = 12


async def _cancel_campaign(
    call: Callable[[int], Awaitable[object]], tasks: int = TASKS, rounds: int = ROUNDS
) -> tuple[int, int]:
    """Runs tasks that make call(i) in a loop, cancels them all while their calls are in flight,
    and counts the tasks that ended cancelled (honoured) and those that ran on (lost)."""
    honoured = lost = 0
    for _ in range(rounds):
        started = [asyncio.Event() for _ in range(tasks)]
        ran_on = [False] * tasks

        async def loop(
            i: int, started: list[asyncio.Event] = started, ran_on: list[bool] = ran_on
        ) -> None:
            cancelled_at = 0
            while True:
                await call(i)
                started[i].set()
                t = asyncio.current_task()
                assert t is not None
                if t.cancelling() > 0:
                    # the cancel landed and the call returned as if nothing happened
                    ran_on[i] = True
                    cancelled_at += 1
                    if cancelled_at > 3:
                        return

        ts = [asyncio.create_task(loop(i)) for i in range(tasks)]
        async with asyncio.timeout(30):
            for e in started:
                await e.wait()
        for _ in range(random.randrange(4)):
            await asyncio.sleep(0)  # land the cancels at varied points of the calls
        for t in ts:
            t.cancel()
        async with asyncio.timeout(30):
            await asyncio.wait(ts)
        for i, t in enumerate(ts):
            if t.cancelled() and not ran_on[i]:
                honoured += 1
            else:
                lost += 1
    return honoured, lost


async def test_every_sdk_call_honours_a_cancellation_landing_in_flight(
    client: echomq.Client,
) -> None:
    q = client.queue("cancels")
    ids = [client.mint() for _ in range(TASKS)]
    await q.push_batch([NewJob(id=i, payload=b"x") for i in ids])
    calls: dict[str, Callable[[int], Awaitable[object]]] = {
        "get": lambda i: q.get(ids[i]),
        "size": lambda i: q.size(SET_PENDING),
        "sizes": lambda i: q.sizes(),
        "page": lambda i: q.page(SET_PENDING, "", 5),
        "push (duplicate)": lambda i: q.push(ids[i], b"x"),
        "enqueue (duplicate)": lambda i: q.enqueue(ids[i], b"x"),
        "claim_ids (none pending)": lambda i: q.claim_ids(60_000, [client.mint()]),
        "ring": lambda i: q.ring(),
    }
    report = {}
    for name, call in calls.items():
        honoured, lost = await _cancel_campaign(call)
        report[name] = (honoured, lost)
    assert all(lost == 0 for _, lost in report.values()), (
        f"cancellations lost (honoured, lost) per call: {report}"
    )
    assert all(h == TASKS * ROUNDS for h, _ in report.values()), report


async def test_asyncio_timeout_bounds_a_call_even_when_redis_py_swallows_the_cancel(
    client: echomq.Client,
) -> None:
    """The README's advice: bound a call with asyncio.timeout. A timeout is a cancellation, so it
    fires only if the call lets the cancellation through."""
    q = client.queue("timeouts")
    timed_out = 0
    ran_on = 0
    for _ in range(300):
        try:
            async with asyncio.timeout(0):
                await q.sizes()
            ran_on += 1
        except TimeoutError:
            timed_out += 1
    assert ran_on == 0, f"{ran_on} of 300 calls ran past an expired asyncio.timeout"
    assert timed_out == 300


async def test_plain_redis_py_is_the_control(server: Server) -> None:
    """The same campaign on plain redis-py, for the record: it may lose cancellations (8.0.0 and
    8.1.0 do); the SDK's calls above must not. Asserts only that the campaign ran."""
    r = redis.asyncio.Redis(port=server.port)
    try:
        await r.set("k", "v")
        honoured, lost = await _cancel_campaign(lambda i: r.get("k"), rounds=6)
    finally:
        await r.aclose()
    print(f"plain redis-py {redis.__version__}: {honoured} cancellations honoured, {lost} lost")
    assert honoured + lost == TASKS * 6


ROUNDS_ENV = "EMQ_CANCEL_ROUNDS"


async def test_worker_run_returns_within_its_bound_after_stop_in_many_rounds(
    client: echomq.Client,
) -> None:
    """stop() lands while maintenance calls (maintenance_ms=1: the lock, promote_due, reap_expired)
    and claims are in flight; run() must return within its bound every time."""
    rounds = int(os.environ.get(ROUNDS_ENV, "500"))
    q = client.queue("stops")
    bound_s = 5.0  # shutdown_timeout_ms=0: nothing to wait for but the calls in flight
    seen: set[str] = set()

    async def handler(job: Job) -> None:
        seen.add(job.id)

    slowest = 0.0
    for n in range(rounds):
        if n % 50 == 0:
            await q.push(client.mint(), b"x")  # a job now and then: claims in flight too
        w = Worker(
            q,
            handler,
            concurrency=2,
            maintenance_ms=1,
            wait_ms=50,
            shutdown_timeout_ms=0,
        )
        t = asyncio.create_task(w.run())
        for _ in range(random.randrange(40)):
            await asyncio.sleep(0)
        w.stop()
        start = time.monotonic()
        done, _ = await asyncio.wait({t}, timeout=bound_s)
        if not done:
            # not awaited further: a run() that lost its cancellations may never return
            pytest.fail(f"run() outlived its bound of {bound_s}s after stop() (round {n})")
        t.result()
        slowest = max(slowest, time.monotonic() - start)
    # no job lost: what was pushed was processed, or is still there to process
    sizes = await q.sizes()
    assert len(seen) + sum(sizes.values()) >= (rounds + 49) // 50, (seen, sizes)
    print(f"{rounds} rounds; the slowest run() returned {slowest:.3f}s after stop()")
