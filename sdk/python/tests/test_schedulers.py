"""echomq 2.6.0: job schedulers through the SDK's public API, against a real redis-server: the
upsert keeps an unchanged schedule's next slot, the missed policies with slots in the past of
the server's clock (no sleeps), cron advance, pause/resume/remove, stale firings, the template
filled in, runs that a worker runs as jobs, racing runners that create each slot once, and the
runner's errors, logs and cancellation."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import pytest
from conftest import Server

import echomq
from echomq import (
    FIRING_ADVANCED,
    FIRING_FIRED,
    FIRING_GONE,
    FIRING_PAUSED,
    FIRING_STALE,
    MISSED_BACKFILL,
    MISSED_RUN_ONCE,
    MISSED_SKIP,
    ArgumentError,
    FireEntry,
    IdError,
    Job,
    KindError,
    Worker,
    next_runs,
)
from echomq._gen.protocol import KINDS, SET_PENDING, SET_SCHEDULE, STATE_SCHEDULED, WORK_KIND
from echomq._gen.scripts import UpsertSchedulerCall

MINUTE = 60_000
HOUR = 3_600_000


async def server_ms(c: echomq.Client) -> int:
    s, us = await c.redis.time()
    return int(s) * 1000 + int(us) // 1000


async def eventually(cond: Callable[[], object], within: float = 15.0, what: str = "") -> None:
    deadline = time.monotonic() + within
    while True:
        v = cond()
        if asyncio.iscoroutine(v):
            v = await v
        if v:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within}s: {what}")
        await asyncio.sleep(0.01)


async def connect(server: Server) -> echomq.Client:
    return await echomq.connect(server.url, node_lease_ms=120_000, socket_timeout=5)


async def test_upsert_created_unchanged_changed(client: echomq.Client) -> None:
    q = client.queue("upserts")
    now = await server_ms(client)
    u = await q.upsert_scheduler("nightly", cron="0 3 * * *", tz="Europe/Paris", template="n")
    assert u.created and u.changed and abs(u.next_ms - now) < 20_000
    again = await q.upsert_scheduler(
        "nightly", cron="0 3 * * *", tz="Europe/Paris", missed=MISSED_SKIP, grace=5, backfill=3
    )
    assert (again.created, again.changed, again.next_ms) == (False, False, u.next_ms)
    (rec,) = await q.schedulers(["nightly"])
    assert rec is not None
    assert (rec.cron, rec.tz, rec.missed, rec.grace_ms, rec.backfill) == (
        "0 3 * * *",
        "Europe/Paris",
        MISSED_SKIP,
        5000,
        3,
    )
    assert rec.template == b"" and not rec.paused and rec.runs == 0 and rec.last_id == ""
    assert rec.next_run_ms == rec.schedule.next_after(rec.next_ms - 1) > rec.next_ms
    assert next_runs(rec, rec.next_ms, 2) == next_runs(rec.schedule, rec.next_ms, 2)
    changed = await q.upsert_scheduler("nightly", cron="0 4 * * *", tz="Europe/Paris")
    assert not changed.created and changed.changed
    # an interval: its first slot is start_ms, or the upsert's server time
    iv = await q.upsert_scheduler("every", every=1.5, start_ms=now + HOUR)
    assert iv.created and iv.next_ms == now + HOUR
    iv = await q.upsert_scheduler("every", every_ms=1500, start_ms=now + HOUR, template="x")
    assert not iv.changed and iv.next_ms == now + HOUR
    iv = await q.upsert_scheduler("every", every_ms=1500)
    assert iv.changed and abs(iv.next_ms - now) < 20_000
    assert [r and r.id for r in await q.schedulers(["every", "nosuch", "nightly"])] == [
        "every",
        None,
        "nightly",
    ]
    u = await q.upsert_scheduler("utc", cron="@daily")
    (rec,) = await q.schedulers(["utc"])
    assert rec is not None and rec.tz == "UTC"
    assert not (await q.upsert_scheduler("utc", cron="@daily", tz="UTC")).changed


@pytest.mark.parametrize(
    "kw",
    [
        {"cron": "61 * * * *"},
        {"cron": "0 0 * * 5#2"},
        {"cron": "0 3 * * *", "tz": "Mars/Olympus"},
        {"cron": "0 3 * * *", "tz": "Local"},
        {"cron": "0 3 * * *", "every_ms": 1000},
        {},
        {"every_ms": 1000, "tz": "UTC"},
        {"cron": "0 3 * * *", "start_ms": 1000},
        {"every_ms": 1000, "missed": "sometimes"},
        {"every_ms": 1000, "missed": MISSED_BACKFILL, "backfill": 101},
        {"every_ms": 1000, "backfill": -1},
        {"every_ms": -1000},
        {"every_ms": 1000, "grace_ms": -1},
        {"every_ms": 1000, "start_ms": -1},
        {"every_ms": 1000, "template": b"x" * (1024 * 1024 + 1)},
        {"cron": "* " * 200 + "*"},
    ],
)
async def test_upsert_refusals_send_nothing(
    server: Server, client: echomq.Client, kw: dict[str, object]
) -> None:
    q = client.queue("refused")
    before = server.commandstats()
    with pytest.raises(ArgumentError):
        await q.upsert_scheduler("x", **kw)  # type: ignore[arg-type]
    for bad in ("", "x" * 257):
        with pytest.raises(ArgumentError):
            await q.upsert_scheduler(bad, every_ms=1000)
    with pytest.raises(ArgumentError):
        await q.list_schedulers(0, 1001)
    with pytest.raises(ArgumentError):
        await q.list_schedulers(-1, 1)
    with pytest.raises(ArgumentError):
        await q.due_schedulers(count=0)
    with pytest.raises(ArgumentError):
        await q.fire_due(horizon_ms=-1)
    assert await q.schedulers([]) == []
    assert await q.pause_schedulers([]) == 0
    assert await q.remove_schedulers([]) == 0
    assert await q.fire_schedulers([]) == []
    assert server.commandstats() == before, "a refused call sent a command"


async def test_missed_policies_with_slots_in_the_past(client: echomq.Client) -> None:
    """Three interval schedulers (every minute, grace 30 s) whose first slot was ten minutes and
    half a second ago, by the server's clock."""
    q = client.queue("missed")
    start = await server_ms(client) - 10 * MINUTE - 500
    common = {"every_ms": MINUTE, "start_ms": start, "grace_ms": 30_000}
    await q.upsert_scheduler("a-once", missed=MISSED_RUN_ONCE, **common)  # type: ignore[arg-type]
    await q.upsert_scheduler("b-skip", missed=MISSED_SKIP, **common)  # type: ignore[arg-type]
    await q.upsert_scheduler(
        "c-backfill",
        missed=MISSED_BACKFILL,
        backfill=3,
        **common,  # type: ignore[arg-type]
    )
    fired = await q.fire_due()
    got = sorted((f.scheduler, f.slot_ms, f.until_ms) for f in fired)
    s = [start + k * MINUTE for k in range(12)]
    assert got == [
        ("a-once", s[0], s[10]),  # one run for the ten missed slots
        ("a-once", s[10], s[11]),
        ("b-skip", s[10], s[11]),
        ("c-backfill", s[7], s[8]),
        ("c-backfill", s[8], s[9]),
        ("c-backfill", s[9], s[10]),
        ("c-backfill", s[10], s[11]),
    ]
    assert await q.size(SET_PENDING) == 7
    assert await q.fire_due() == []
    recs = {r.id: r for r in await q.list_schedulers() if r is not None}
    assert {k: (r.runs, r.next_ms) for k, r in recs.items()} == {
        "a-once": (2, s[11]),
        "b-skip": (1, s[11]),
        "c-backfill": (4, s[11]),
    }
    assert recs["c-backfill"].last_slot_ms == s[10]
    last = {f.scheduler: f.id for f in fired if f.slot_ms == s[10]}
    assert recs["a-once"].last_id == last["a-once"]


async def test_horizon_fires_ahead_scheduled_and_cron_advances(client: echomq.Client) -> None:
    q = client.queue("ahead")
    now = await server_ms(client)
    await q.upsert_scheduler("soon", every_ms=HOUR, start_ms=now + 30_000)
    assert await q.due_schedulers() == []
    assert [r.id for r in await q.due_schedulers(horizon=60)] == ["soon"]
    assert await q.fire_due() == []
    (f,) = await q.fire_due(horizon_ms=MINUTE)
    assert (f.scheduler, f.slot_ms, f.until_ms) == ("soon", now + 30_000, now + 30_000 + HOUR)
    info = await q.get(f.id)
    assert info is not None and info.state == STATE_SCHEDULED and info.at_ms == f.slot_ms
    assert await q.size(SET_SCHEDULE) == 1 and await q.size(SET_PENDING) == 0
    # a cron schedule whose first slot is not due: its next slot moves to it, nothing fires
    u = await q.upsert_scheduler("yearly", cron="0 0 1 1 *")
    assert await q.fire_due() == []
    (rec,) = await q.schedulers(["yearly"])
    assert rec is not None and rec.runs == 0
    assert rec.next_ms == echomq.Cron("0 0 1 1 *").next_after(u.next_ms - 1) > u.next_ms
    assert await q.fire_due() == []  # not due any more: nothing read


async def test_a_cron_schedule_fires_its_due_slot(client: echomq.Client) -> None:
    """Every second, 6 fields: upserted, advanced to its first slot, which fires once due."""
    q = client.queue("crons")
    await q.upsert_scheduler("secs", cron="* * * * * *", template="{scheduler}@{slot}")
    fired: list[echomq.FiredRun] = []

    async def some() -> bool:
        fired.extend(await q.fire_due())
        return bool(fired)

    await eventually(some, what="a run of an every-second cron")
    f = fired[0]
    assert f.slot_ms % 1000 == 0 and f.until_ms == f.slot_ms + 1000
    (j,) = await q.claim_ids(30_000, [f.id])
    assert j.payload == f"secs@{f.slot_ms}".encode()


async def test_pause_resume_and_remove(client: echomq.Client) -> None:
    q = client.queue("paused")
    now = await server_ms(client)
    h = await q.upsert_scheduler("hourly", every_ms=HOUR, start_ms=now - 1000)
    await q.upsert_scheduler("yearly", cron="0 0 1 1 *")
    assert await q.pause_schedulers(["hourly", "nosuch"]) == 1
    assert await q.pause_schedulers(["hourly"]) == 0
    assert [(r.id, r.paused) for r in await q.list_schedulers(0, 10)] == [
        ("yearly", False),
        ("hourly", True),
    ]
    assert [r.id for r in await q.list_schedulers(1, 1)] == ["hourly"]
    assert await q.fire_due() == [] and await q.size(SET_PENDING) == 0
    assert await q.resume_schedulers(["hourly"]) == 1
    assert await q.resume_schedulers(["hourly"]) == 0
    (rec,) = await q.schedulers(["hourly"])
    assert rec is not None and not rec.paused and rec.next_ms >= now > h.next_ms
    # the slot that fell due while it was paused never runs
    assert await q.fire_due() == [] and await q.size(SET_PENDING) == 0
    (rec,) = await q.schedulers(["hourly"])
    assert rec is not None and rec.next_ms == h.next_ms + HOUR and rec.runs == 0
    assert await q.remove_schedulers(["hourly", "nosuch"]) == 1
    assert await q.schedulers(["hourly"]) == [None]
    assert [r.id for r in await q.list_schedulers()] == ["yearly"]


async def test_fire_schedulers_compare_and_set(client: echomq.Client) -> None:
    q = client.queue("raw")
    await q.upsert_scheduler(
        "raw", every_ms=1000, start_ms=1, template="{scheduler} {slot} {until} {slot}"
    )
    a, b, c, d = (client.mint() for _ in range(4))

    def e(id: str, expect: int, nxt: int, slot: int, until: int) -> FireEntry:
        return FireEntry(id, "raw", expect, nxt, slot, until)

    other = client.mint(next(k for k in KINDS if k != WORK_KIND))
    with pytest.raises(KindError):
        await q.fire_schedulers([e(other, 1, 1001, 1, 1001)])
    with pytest.raises(IdError):
        await q.fire_schedulers([e("not-an-id", 1, 1001, 1, 1001)])
    with pytest.raises(ArgumentError):
        await q.fire_schedulers([e(a, -1, 1001, 1, 1001)])
    assert await q.fire_schedulers([e(a, 1, 1001, 1, 1001)]) == [FIRING_FIRED]
    assert await q.fire_schedulers([e(b, 1, 1001, 1, 1001)]) == [FIRING_STALE]
    assert await q.get(b) is None
    (j,) = await q.claim_ids(30_000, [a])
    assert j.payload == b"raw 1 1001 1"
    # a chain: the entries of one scheduler follow one another; a stale one writes nothing
    got = await q.fire_schedulers(
        [e(b, 1001, 2001, 1001, 2001), e(c, 2001, 3001, 2001, 3001), e(d, 1001, 2001, 1001, 2001)]
    )
    assert got == [FIRING_FIRED, FIRING_FIRED, FIRING_STALE]
    assert await q.fire_schedulers([e(d, 3001, 9001, 0, 0)]) == [FIRING_ADVANCED]
    assert await q.get(d) is None
    assert await q.fire_schedulers([e(a, 9001, 10001, 9001, 10001)]) == [FIRING_STALE]  # row
    assert await q.pause_schedulers(["raw"]) == 1
    assert await q.fire_schedulers([e(d, 9001, 10001, 9001, 10001)]) == [FIRING_PAUSED]
    assert await q.remove_schedulers(["raw"]) == 1
    assert await q.fire_schedulers([e(d, 9001, 10001, 9001, 10001)]) == [FIRING_GONE]


async def test_runs_are_jobs_a_worker_runs(client: echomq.Client) -> None:
    q = client.queue("worked")
    now = await server_ms(client)
    await q.upsert_scheduler(
        "report",
        every_ms=MINUTE,
        start_ms=now - 5 * MINUTE,
        grace_ms=HOUR,
        template='{"report": "{scheduler}", "slot": {slot}, "until": {until}}',
    )
    fired = await q.fire_due()
    assert len(fired) == 6  # five past slots within the grace, and the one at now - 0
    got: list[bytes] = []

    async def handle(job: Job) -> None:
        got.append(job.payload)

    w = Worker(q, handle)
    t = asyncio.create_task(w.run())
    try:
        await eventually(lambda: len(got) == 6, what="the runs processed")
    finally:
        w.stop()
        async with asyncio.timeout(30):
            await t
    want = [
        f'{{"report": "report", "slot": {f.slot_ms}, "until": {f.until_ms}}}'.encode()
        for f in fired
    ]
    assert sorted(got) == sorted(want)
    assert await q.size(SET_PENDING) == 0


async def test_racing_runners_create_each_slot_once(server: Server) -> None:
    """Four clients fire twenty schedulers (thirty slots each within the grace) at once, with
    fire_due and with run_schedulers: every slot has exactly one run."""
    clients = [await connect(server) for _ in range(4)]
    try:
        q0 = clients[0].queue("race")
        now = await server_ms(clients[0])
        ids = [f"s{i:02d}" for i in range(20)]
        for sid in ids:
            await q0.upsert_scheduler(
                sid, every_ms=1000, start_ms=now - 29_500, grace_ms=HOUR, template="{scheduler}"
            )

        async def fire(c: echomq.Client) -> list[echomq.FiredRun]:
            out: list[echomq.FiredRun] = []
            for _ in range(5):
                out += await c.queue("race").fire_due(count=3)
            return out

        runs = [f for fs in await asyncio.gather(*(fire(c) for c in clients)) for f in fs]
        # the rest by the runners, until every scheduler is past now
        stop = asyncio.Event()
        tasks = [
            asyncio.create_task(c.queue("race").run_schedulers(poll=0.01, count=7, stop=stop))
            for c in clients
        ]
        try:

            async def all_past() -> bool:
                return all(r is not None and r.next_ms > now for r in await q0.schedulers(ids))

            await eventually(all_past, what="every scheduler fired up to now")
        finally:
            stop.set()
            async with asyncio.timeout(10):
                await asyncio.gather(*tasks)
        recs = await q0.schedulers(ids)
        total = sum(r.runs for r in recs if r is not None)
        assert total >= 20 * 30
        assert await q0.size(SET_PENDING) + await q0.size(SET_SCHEDULE) == total
        slots = [(f.scheduler, f.slot_ms) for f in runs]
        assert len(slots) == len(set(slots)), "a slot fired twice"
        # every run's payload is its scheduler's id; the counts add up per scheduler
        pending = await q0.browse(SET_PENDING, 100_000)
        per: dict[str, int] = {}
        for id in pending:
            info = await q0.get(id)
            assert info is not None
            per[info.payload.decode()] = per.get(info.payload.decode(), 0) + 1
        for r in recs:
            assert r is not None and per.get(r.id, 0) == r.runs
            # the slots from start to next, each once: runs is their number
            assert r.runs == (r.next_ms - r.start_ms) // 1000
    finally:
        for c in clients:
            await c.close()


async def test_the_runner_logs_and_retries_errors_and_skips_what_it_cannot_plan(
    server: Server, client: echomq.Client, caplog: pytest.LogCaptureFixture
) -> None:
    q = client.queue("errors")
    now = await server_ms(client)
    # a record whose cron no SDK evaluates, written below the SDK's checks
    await UpsertSchedulerCall(
        schedulers=q.keys.schedulers,
        scheduler_next=q.keys.scheduler_next,
        scheduler="bad",
        cron="0 0 L * *",
        every_ms=0,
        start_ms=0,
        tz="",
        missed=MISSED_RUN_ONCE,
        backfill=0,
        grace_ms=MINUTE,
        template=b"",
    ).run(client.redis)
    await q.upsert_scheduler("good", every_ms=HOUR, start_ms=now - 1000)
    caplog.set_level(logging.WARNING)
    assert [f.scheduler for f in await q.fire_due()] == ["good"]
    assert await q.fire_due() == []
    warned = [r for r in caplog.records if "cannot evaluate" in r.getMessage()]
    assert len(warned) == 1 and "'bad'" in warned[0].getMessage()
    # a foreign key of another type under the due index: each round fails, is logged, retried
    with server.raw() as raw:
        raw.delete(q.keys.scheduler_next)
        raw.set(q.keys.scheduler_next, "not a zset")
    caplog.clear()
    task = asyncio.create_task(q.run_schedulers(poll=0.01))
    try:
        await eventually(
            lambda: sum("failed; retrying" in r.getMessage() for r in caplog.records) >= 2,
            what="the failed rounds logged",
        )
        assert not task.done()
        with server.raw() as raw:
            raw.delete(q.keys.scheduler_next)
        await q.upsert_scheduler("later", every_ms=HOUR, start_ms=now - 500)

        async def fired_later() -> bool:
            (r,) = await q.schedulers(["later"])
            return r is not None and r.runs == 1

        await eventually(fired_later, within=20, what="the runner back at work")
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            async with asyncio.timeout(5):
                await task


async def test_the_runner_is_cancelled_cleanly_and_stops_on_its_event(
    client: echomq.Client,
) -> None:
    q = client.queue("runner")
    now = await server_ms(client)
    await q.upsert_scheduler("tick", every_ms=HOUR, start_ms=now - 1000)
    task = asyncio.create_task(q.run_schedulers(poll=0.05))

    async def fired() -> bool:
        (r,) = await q.schedulers(["tick"])
        return r is not None and r.runs == 1

    await eventually(fired, what="the runner's first firing")
    t0 = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - t0 < 2
    stop = asyncio.Event()
    task = asyncio.create_task(q.run_schedulers(poll=30, stop=stop))
    await asyncio.sleep(0)  # the first round starts
    stop.set()
    async with asyncio.timeout(5):
        await task
    assert task.done() and not task.cancelled()
    with pytest.raises(ArgumentError):
        await q.run_schedulers(poll=0)
    with pytest.raises(ArgumentError):
        await q.run_schedulers(count=1001)


async def test_the_runner_calls_on_fire_with_each_rounds_runs_and_survives_its_errors(
    client: echomq.Client, caplog: pytest.LogCaptureFixture
) -> None:
    """on_fire (Go's OnFire, TypeScript's onFired) gets the runs of each round that fired, after
    their firing (each run's job exists); a callback that raises is logged and the runner goes
    on to fire the next round; an async callback is awaited."""
    q = client.queue("onfire")
    now = await server_ms(client)
    await q.upsert_scheduler("a", every_ms=HOUR, start_ms=now - 1000, template="a {slot}")
    seen: list[list[echomq.FiredRun]] = []
    existed: list[bool] = []
    fired = asyncio.Event()

    async def on_fire(runs: list[echomq.FiredRun]) -> None:
        seen.append(runs)
        for r in runs:
            existed.append(await q.get(r.id) is not None)
        fired.set()
        if len(seen) == 1:
            raise RuntimeError("the callback broke")

    caplog.set_level(logging.ERROR)
    stop = asyncio.Event()
    task = asyncio.create_task(q.run_schedulers(poll=0.01, stop=stop, on_fire=on_fire))
    try:
        async with asyncio.timeout(15):
            await fired.wait()
        assert [[r.scheduler for r in runs] for runs in seen] == [["a"]]
        assert existed == [True], "called after the firing: the run's job exists"
        fired.clear()
        # the error was logged and the runner goes on: a second scheduler fires in a later round
        await q.upsert_scheduler("b", every_ms=HOUR, start_ms=now - 500)
        async with asyncio.timeout(15):
            await fired.wait()
        assert [[r.scheduler for r in runs] for runs in seen] == [["a"], ["b"]]
        assert not task.done()
        broke = [r for r in caplog.records if "on_fire" in r.getMessage()]
        assert len(broke) == 1 and broke[0].exc_info is not None
        assert "the callback broke" in str(broke[0].exc_info[1])
    finally:
        stop.set()
        async with asyncio.timeout(5):
            await task
    # a plain function too; never called for a round that fired nothing
    plain: list[str] = []
    await q.upsert_scheduler("c", every_ms=HOUR, start_ms=now - 100)
    stop = asyncio.Event()

    def on_plain(runs: list[echomq.FiredRun]) -> None:
        plain.extend(r.scheduler for r in runs)
        stop.set()

    async with asyncio.timeout(15):
        await q.run_schedulers(poll=0.01, stop=stop, on_fire=on_plain)
    assert plain == ["c"]
    with pytest.raises(ArgumentError):
        await q.run_schedulers(on_fire="not callable")  # type: ignore[arg-type]


async def test_a_typed_queue_upserts_a_scheduler_with_its_value_encoded(
    client: echomq.Client,
) -> None:
    """TypedQueue.upsert_scheduler (TypeScript's upsertScheduler): the template is the value's
    encoding, its placeholders filled in by the firing, and the run decodes as the queue's
    type; a value the codec refuses raises a CodecError before anything is sent."""
    q = client.queue("typed-sched", codec=echomq.JSONCodec(dict[str, str]))
    now = await server_ms(client)
    up = await q.upsert_scheduler(
        "report", {"what": "report", "slot": "{slot}"}, every_ms=HOUR, start_ms=now - 1000
    )
    assert up.created
    (rec,) = await q.raw.schedulers(["report"])
    assert rec is not None and rec.template == b'{"what":"report","slot":"{slot}"}'
    (run,) = await q.raw.fire_due()
    info = await q.get(run.id)
    assert info is not None and info.value == {"what": "report", "slot": str(run.slot_ms)}
    with pytest.raises(echomq.CodecError):
        await q.upsert_scheduler("bad", object(), every_ms=HOUR)  # type: ignore[arg-type]
    assert await q.raw.schedulers(["bad"]) == [None]


async def test_a_typed_queue_pushes_with_a_dedup_key(client: echomq.Client) -> None:
    """TypedQueue.push(dedup=...) is Queue.push's deduplicated push with the value encoded: it
    returns the DedupResult, and a replacement takes the new value."""
    q = client.queue("typed-dedup", codec=echomq.JSONCodec(dict[str, int]))
    a, b = client.mint(), client.mint()
    r = await q.push(a, {"n": 1}, dedup=echomq.DedupKey("k"))
    assert r.outcome == echomq.ADMISSION_ADMITTED and r.id == a
    r = await q.push(b, {"n": 2}, dedup=echomq.DedupKey("k"))
    assert r.outcome == echomq.ADMISSION_DUPLICATE and r.id == a
    r = await q.push(b, {"n": 3}, dedup=echomq.DedupKey("k", echomq.DEDUP_DEBOUNCE))
    assert r.outcome == echomq.ADMISSION_REPLACED and r.id == a
    info = await q.get(a)
    assert info is not None and info.value == {"n": 3}
    assert await q.get(b) is None
    assert await q.push(b, {"n": 4}) is True, "without dedup: a plain push, a bool"
