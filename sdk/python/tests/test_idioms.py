"""What Python users reach for: readable errors for arguments of the wrong type (sent nothing),
durations in seconds or timedelta beside integer milliseconds, pending_size, a ConnectionError
name that does not shadow the builtin, typed JSON payloads (dataclass, TypedDict) and reprs."""

from __future__ import annotations

import asyncio
import builtins
import dataclasses
import datetime
import time
from collections.abc import Awaitable, Callable
from typing import Any, NotRequired, TypedDict

import pytest
from conftest import Server

import echomq
from echomq import (
    ArgumentError,
    ArgumentTypeError,
    Counter,
    JSONCodec,
    Tally,
    TypedJob,
    Worker,
)
from echomq._gen.protocol import SET_PENDING, SET_SCHEDULE, STATE_ACTIVE, STATE_DEAD


async def test_wrong_argument_types_name_the_parameter_and_send_nothing(
    server: Server, client: echomq.Client
) -> None:
    q = client.queue("types")
    id = client.mint()
    before = server.commandstats()
    cases: list[tuple[Callable[[], Awaitable[Any]], str, str]] = [
        (lambda: q.push(id, {"a": 1}), "the payload", "bytes or str"),  # type: ignore[call-overload]
        (lambda: q.enqueue(id, 42), "the payload", "bytes or str"),  # type: ignore[arg-type]
        (lambda: q.push(42, b""), "id", "a str"),  # type: ignore[call-overload]
        (lambda: q.claim(1.5), "lease_ms", "an int of milliseconds"),  # type: ignore[call-overload]
        (lambda: q.claim("30s"), "lease_ms", "an int"),  # type: ignore[call-overload]
        (lambda: q.claim(lease="30s"), "lease", "seconds"),  # type: ignore[call-overload]
        (lambda: q.complete(id, "1"), "token", "an int"),  # type: ignore[arg-type]
        (lambda: q.retry(id, 1, 0.5), "delay_ms", "an int"),  # type: ignore[call-overload]
        (lambda: q.claim_many(1000, "3"), "count", "an int"),  # type: ignore[call-overload]
        (lambda: q.claim_ids(1000, id), "ids", "a sequence"),
        (lambda: q.enqueue_at(id, b"", at="tomorrow"), "at", "datetime"),  # type: ignore[call-overload]
    ]
    for call, param, expected in cases:
        with pytest.raises(TypeError) as ei:
            await call()
        msg = str(ei.value)
        assert isinstance(ei.value, ArgumentTypeError) and isinstance(ei.value, ArgumentError)
        assert msg.startswith(f"emq: invalid argument: {param} must be "), msg
        assert expected in msg and "cannot be interpreted" not in msg, msg
    # the example, word for word
    with pytest.raises(TypeError, match=r"payload must be bytes or str .*codec.*, not dict"):
        await q.push(id, {"a": 1})  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="not both"):
        await q.claim(1000, lease=1)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="name must be a str"):
        client.queue(b"types")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="handler"):
        Worker(q, "not callable")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="lease_ms must be an int"):
        Worker(q, _noop, lease_ms=2.5)  # type: ignore[call-overload]
    assert server.commandstats() == before, "a refused argument sent a command"


async def _noop(job: echomq.Job) -> None:
    pass


async def test_durations_in_seconds_or_timedelta_beside_milliseconds(
    client: echomq.Client,
) -> None:
    q = client.queue("durations")
    ids = [client.mint() for _ in range(4)]
    for i in ids:
        assert await q.push(i, b"")
    t0 = time.time() * 1000
    j1 = await q.claim(lease=30)  # seconds
    j2 = await q.claim(datetime.timedelta(seconds=60))  # type: ignore[call-overload]  # a timedelta where ms go
    j3 = await q.claim(lease=datetime.timedelta(minutes=2))
    j4 = await q.claim(90_000)  # milliseconds, as before
    assert j1 and j2 and j3 and j4
    for j, s in ((j1, 30), (j2, 60), (j3, 120), (j4, 90)):
        assert abs(j.deadline_ms - (t0 + s * 1000)) < 5_000, (j, s)
    d = await q.extend(j1.id, j1.token, lease=0.5)
    assert d - t0 < 5_000
    run_at = await q.retry(j2.id, j2.token, delay=datetime.timedelta(hours=1))
    assert abs(run_at - (t0 + 3_600_000)) < 5_000
    assert (await q.sizes())[SET_SCHEDULE] == 1
    # enqueue_at: at a datetime, at Unix seconds, after a delay
    when = datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=5)
    a, b, c = client.mint(), client.mint(), client.mint()
    assert await q.enqueue_at(a, b"", at=when)
    assert await q.enqueue_at(b, b"", at=time.time() + 300)
    assert await q.enqueue_at(c, b"", delay=300)
    for i in (a, b, c):
        info = await q.get(i)
        assert info is not None and info.at_ms is not None
        assert abs(info.at_ms - (t0 + 300_000)) < 5_000, info
    with pytest.raises(ArgumentError):
        await q.claim(lease=0)
    with pytest.raises(ArgumentError):
        await q.claim(lease=-1.0)
    w = Worker(
        q,
        _noop,
        lease=datetime.timedelta(seconds=20),
        wait=0.25,
        maintenance_every=0,
        shutdown_timeout=1.5,
    )
    assert (w.lease_ms, w.wait_ms, w.maintenance_ms, w.shutdown_timeout_ms) == (
        20_000,
        250,
        0,
        1_500,
    )
    w2 = Worker(q, _noop, lease_ms=datetime.timedelta(seconds=3))  # type: ignore[call-overload]
    assert w2.lease_ms == 3_000
    with pytest.raises(TypeError, match="not both"):
        Worker(q, _noop, lease_ms=1000, lease=1)


async def test_connect_takes_durations_in_seconds(server: Server) -> None:
    c = await echomq.connect(
        server.url, node_lease=datetime.timedelta(minutes=2), push_linger=0.002
    )
    try:
        assert c._lease_ms == 120_000 and c.push_linger_ms == 2.0
    finally:
        await c.close()


async def test_pending_size(client: echomq.Client) -> None:
    q = client.queue("pendingsize")
    assert await q.pending_size() == 0
    for _ in range(3):
        assert await q.push(client.mint(), b"")
    assert await q.enqueue_at(client.mint(), b"", delay=600)
    assert await q.pending_size() == 3 == await q.size(SET_PENDING)
    assert await q.claim(lease=30)
    assert await q.pending_size() == 2


async def test_connection_error_has_a_name_that_does_not_shadow_the_builtin(
    server: Server,
) -> None:
    assert issubclass(echomq.EmqConnectionError, echomq.ConnectionError)
    assert issubclass(echomq.EmqConnectionError, builtins.ConnectionError)
    assert echomq.EmqConnectionError.__name__ != "ConnectionError"
    c = await echomq.connect(server.url, node=3, socket_timeout=2)
    try:
        q = c.queue("gone")
        server.stop()
        with pytest.raises(echomq.EmqConnectionError) as ei:
            await q.claim(lease=1)
        assert isinstance(ei.value, echomq.ConnectionError)  # the old name catches it too
        assert "EmqConnectionError" in repr(ei.value)
    finally:
        server.start()
        await c.close()


@dataclasses.dataclass
class Address:
    city: str
    zip: str


@dataclasses.dataclass
class Order:
    sku: str
    qty: int
    ship_to: Address
    tags: list[str] = dataclasses.field(default_factory=list)
    note: str | None = None


class Refund(TypedDict):
    order: str
    cents: int
    reason: NotRequired[str]


async def test_typed_json_payloads_with_a_dataclass(server: Server, client: echomq.Client) -> None:
    q = client.queue("orders", codec=JSONCodec(Order))
    assert "TypedQueue('orders'" in repr(q)
    order = Order("A-1", 2, Address("Lyon", "69001"), ["gift"])
    id = client.mint()
    assert await q.push(id, order)
    raw = await q.raw.get(id)
    assert raw is not None and raw.payload.startswith(b'{"sku":"A-1"')
    info = await q.get(id)
    assert info is not None and info.value == order and info.error is None
    got: list[Order] = []
    tally = Tally()

    async def handle(job: TypedJob[Order]) -> None:
        assert isinstance(job.value, Order) and isinstance(job.value.ship_to, Address)
        got.append(job.value)

    # a payload planted as bytes that is no Order is buried at once, not retried
    bad = client.mint()
    assert await q.raw.push(bad, b'{"sku": "B", "qty": "two"}')
    w = Worker(q, handle, maintenance_ms=0, metrics=tally)
    t = asyncio.create_task(w.run())
    deadline = time.monotonic() + 10
    while tally.get(Counter.COMPLETED) < 1 or tally.get(Counter.BURIED) < 1:
        assert time.monotonic() < deadline, tally.snapshot()
        await asyncio.sleep(0.01)
    w.stop()
    await t
    assert got == [order]
    dead = await q.get(bad)
    assert dead is not None and dead.state == STATE_DEAD and dead.attempts == 1
    assert dead.value is None and dead.error is not None and "qty" in dead.error


async def test_typed_json_payloads_with_a_typeddict_and_a_plain_handler(
    client: echomq.Client,
) -> None:
    q = client.queue("refunds", codec=JSONCodec(Refund))
    ids = [client.mint() for _ in range(3)]
    res = await q.push_batch([(i, Refund(order=f"o{n}", cents=100 * n)) for n, i in enumerate(ids)])
    assert all(r.enqueued for r in res)
    got: list[Refund] = []
    tally = Tally()

    def handle(job: TypedJob[Refund]) -> None:  # plain def: in the thread pool
        got.append(job.value)

    w = Worker(q, handle, maintenance_ms=0, metrics=tally)
    t = asyncio.create_task(w.run())
    deadline = time.monotonic() + 10
    while tally.get(Counter.COMPLETED) < 3:
        assert time.monotonic() < deadline, tally.snapshot()
        await asyncio.sleep(0.01)
    w.stop()
    await t
    assert sorted(got, key=lambda r: r["cents"]) == [
        {"order": "o0", "cents": 0},
        {"order": "o1", "cents": 100},
        {"order": "o2", "cents": 200},
    ]
    codec = JSONCodec(Refund)
    with pytest.raises(echomq.CodecError, match="cents"):
        codec.decode(b'{"order": "x"}')
    with pytest.raises(echomq.CodecError, match="not JSON"):
        codec.decode(b"\xff")
    with pytest.raises(echomq.CodecError, match="cannot encode"):
        JSONCodec().encode(object())


async def test_claim_on_a_typed_queue_decodes(client: echomq.Client) -> None:
    q = client.queue("anyjson", codec=JSONCodec(dict[str, int]))
    id = client.mint()
    assert await q.push(id, {"a": 1})
    j = await q.claim(lease=30)
    assert j is not None and j.value == {"a": 1} and j.id == id
    info = await q.get(id)
    assert info is not None and info.state == STATE_ACTIVE


async def test_reprs_are_useful(client: echomq.Client) -> None:
    q = client.queue("reprs")
    id = client.mint()
    assert await q.push(id, b"hello")
    info = await q.get(id)
    r = repr(info)
    assert r.startswith("JobInfo(") and id in r and "state='pending'" in r and "b'hello'" in r
    job = await q.claim(lease=30)
    assert job is not None
    jr = repr(job)
    assert jr.startswith("Job(") and id in jr and "token=1" in jr and "deadline=" in jr, jr
    big = client.mint()
    assert await q.push(big, b"x" * 10_000)
    bi = repr(await q.get(big))
    assert len(bi) < 300 and "10000 bytes" in bi, bi
    t = Tally()
    t.add(Counter.COMPLETED, "reprs", 3)
    t.add(Counter.ENQUEUED, "reprs", 5)
    assert repr(t) == "Tally(enqueued=5, completed=3)", repr(t)
    assert "Queue('reprs')" == repr(q)
    assert repr(client).startswith("Client(") and "node=" in repr(client)
