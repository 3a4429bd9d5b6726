"""Calls made while the server is out of reach (SIGKILLed, restarting): a call that was never
sent waits for the connection within its deadline (the caller's asyncio.timeout, else the
client's offline_wait) and is sent once the server is back, whatever the call is; past the
deadline it raises a ConnectionWaitError, not earlier and not later. The tests wait on the
client's own log line saying a call waits (never on a sleep), and restart the server off the
event loop."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from conftest import Server

import echomq
from echomq._gen.protocol import SET_PENDING

WAITS = "it waits for the connection"
"""What the client logs (debug) as a call that was never sent starts to wait."""

SLACK = 3.0
"""How late past its deadline a call may fail on a loaded machine."""


class Waits(logging.Handler):
    """Counts the client's "it waits for the connection" records, and wakes who waits for n."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.n = 0
        self.loop = asyncio.get_running_loop()
        self.changed = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if WAITS in record.getMessage():
            self.n += 1
            self.loop.call_soon_threadsafe(self.changed.set)

    async def reach(self, n: int) -> None:
        async with asyncio.timeout(30):
            while self.n < n:
                self.changed.clear()
                await self.changed.wait()


@asynccontextmanager
async def watched(server: Server, **opts: object) -> AsyncIterator[tuple[echomq.Client, Waits]]:
    logger = logging.getLogger(f"test_offline.{id(server)}.{time.monotonic_ns()}")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    w = Waits()
    logger.addHandler(w)
    c = await echomq.connect(
        server.url,
        node_lease_ms=120_000,
        socket_timeout=5,
        logger=logger,
        **opts,  # type: ignore[arg-type]
    )
    try:
        yield c, w
    finally:
        await c.close()


async def test_a_push_and_a_claim_made_while_the_server_is_down_succeed_once_it_is_up(
    aof_server: Server,
) -> None:
    async with watched(aof_server, offline_wait_ms=60_000) as (c, w):
        q = c.queue("offline")
        before = c.mint()
        assert await q.push(before, b"before")
        await asyncio.to_thread(aof_server.kill)
        after = c.mint()
        push = asyncio.create_task(q.push(after, b"after"))
        claim = asyncio.create_task(q.claim_many(60_000, 1))
        await w.reach(2)  # both are waiting for the connection
        assert not push.done() and not claim.done()
        await asyncio.to_thread(aof_server.start)
        async with asyncio.timeout(30):
            pushed, claimed = await asyncio.gather(push, claim)
        assert pushed is True
        assert len(claimed) == 1 and claimed[0].id in (before, after)
        assert await q.size(SET_PENDING) == 1, "one of the two is pending, the other claimed"
        # the same with the push not coalesced, and a settle (complete) of the job claimed
        await asyncio.to_thread(aof_server.kill)
        n = w.n
        done = asyncio.create_task(q.complete(claimed[0].id, claimed[0].token))
        sized = asyncio.create_task(q.size(SET_PENDING))
        await w.reach(n + 2)
        await asyncio.to_thread(aof_server.start)
        async with asyncio.timeout(30):
            await done
            assert await sized == 1
        assert await q.get(claimed[0].id) is None, "the completed job is gone"


async def test_a_call_made_while_the_server_is_down_fails_at_its_deadline(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    s = Server(tmp_path_factory.mktemp("never"))
    s.start()
    try:
        async with watched(s, offline_wait_ms=400) as (c, _):
            q = c.queue("never")
            await asyncio.to_thread(s.kill)  # and never started again
            for name, call in (
                ("push", lambda: q.push(c.mint(), b"x")),
                ("claim", lambda: q.claim_many(60_000, 1)),
                ("push_batch", lambda: q.push_batch([echomq.NewJob(c.mint(), b"y")])),
            ):
                t0 = time.monotonic()
                e: BaseException | None = None
                try:
                    out = await call()
                except echomq.ConnectionWaitError as err:
                    e = err
                else:  # push_batch answers per job
                    assert isinstance(out, list) and isinstance(out[0], echomq.BatchResult)
                    e = out[0].error
                took = time.monotonic() - t0
                assert isinstance(e, echomq.ConnectionWaitError), f"{name}: {e!r}"
                assert isinstance(e, echomq.ConnectionError) and isinstance(e, TimeoutError)
                assert e.retryable and e.code == "ECONNECTION"
                assert 0.4 <= took < 0.4 + SLACK, f"{name} failed after {took:.3f} s"
                assert e.waited_s >= 0.39 and e.__cause__ is not None, name
            # the caller's asyncio.timeout is the deadline instead: shorter than offline_wait ...
            for deadline in (0.2, 1.0):  # ... or longer
                t0 = time.monotonic()
                with pytest.raises(TimeoutError) as ei:
                    async with asyncio.timeout(deadline):
                        await q.claim_many(60_000, 1)
                took = time.monotonic() - t0
                assert deadline - 0.05 <= took < deadline + SLACK, f"{deadline}: {took:.3f} s"
                assert isinstance(ei.value, echomq.ConnectionWaitError), repr(ei.value)
                t0 = time.monotonic()
                with pytest.raises(TimeoutError) as ei:
                    async with asyncio.timeout(deadline):
                        await q.push(c.mint(), b"z")
                took = time.monotonic() - t0
                assert deadline - 0.05 <= took < deadline + SLACK, f"{deadline}: {took:.3f} s"
                # A coalesced push is sent by its batch's task, which gives up a hair before the
                # caller's deadline; on a loop later than that hair the caller's own Timeout
                # fires first, with asyncio's bare TimeoutError, at the deadline.
                assert isinstance(ei.value, echomq.ConnectionWaitError) or took >= deadline, repr(
                    ei.value
                )
            # a loop late past the hair before the deadline (blocked here on purpose, so that
            # the call's pause and the caller's Timeout end in one turn of the loop): the call
            # still raises its ConnectionWaitError, in the TimeoutError's stead
            loop = asyncio.get_running_loop()
            blocker = loop.call_later(0.25, time.sleep, 0.2)
            try:
                with pytest.raises(echomq.ConnectionWaitError) as wi:
                    async with asyncio.timeout(0.3):
                        await q.claim_many(60_000, 1)
            finally:
                blocker.cancel()
            assert wi.value.timed_out and isinstance(wi.value, TimeoutError)
            # a call cancelled while it waits is cancelled, as asyncio promises
            t = asyncio.create_task(q.claim_many(60_000, 1))
            await asyncio.sleep(0)
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await t
        with pytest.raises(echomq.ConnectionError):
            await echomq.connect(s.url)  # connect itself does not wait
    finally:
        s.stop()


async def test_offline_wait_zero_fails_at_once_and_bad_values_are_refused(server: Server) -> None:
    async with watched(server, offline_wait=0) as (c, _):
        q = c.queue("zero")
        assert await q.push(c.mint(), b"")
        await asyncio.to_thread(server.kill)
        t0 = time.monotonic()
        with pytest.raises(echomq.ConnectionWaitError):
            await q.claim_many(60_000, 1)
        assert time.monotonic() - t0 < SLACK
    with pytest.raises(echomq.ArgumentError):
        await echomq.connect(server.url, offline_wait_ms=-1)
    with pytest.raises(echomq.ArgumentError):
        await echomq.connect(server.url, offline_wait=-1)


async def test_a_worker_stopped_while_its_claim_waits_for_the_server_stops_at_once(
    server: Server,
) -> None:
    """A worker's claim that was never sent waits for the connection (up to the worker's own
    bound on a claim), but stop() ends that wait: nothing of the claim ran, so no lease is
    left behind, and run() returns without waiting the deadline out."""
    async with watched(server, offline_wait_ms=60_000) as (c, w):
        q = c.queue("offline-worker")
        ran = asyncio.Event()

        async def handle(job: echomq.Job) -> None:
            ran.set()

        settled = asyncio.Event()

        class Settled(echomq.Tally):
            def add(self, counter: echomq.Counter, queue: str, n: int) -> None:
                super().add(counter, queue, n)
                if counter == echomq.Counter.COMPLETED:
                    settled.set()

        worker = echomq.Worker(q, handle, maintenance_ms=0, metrics=Settled())
        run = asyncio.create_task(worker.run())
        assert await q.push(c.mint(), b"")
        async with asyncio.timeout(15):
            await ran.wait()
            await settled.wait()  # no settle in flight: only the worker's own calls wait below
        await asyncio.to_thread(server.kill)
        await w.reach(w.n + 1)  # the worker's claim waits for the server
        t0 = time.monotonic()
        worker.stop()
        async with asyncio.timeout(SLACK + 5):
            await run
        assert time.monotonic() - t0 < SLACK
