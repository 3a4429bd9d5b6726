"""Job schedulers (echomq 2.6.0): the records, the upsert's checks and the planner.

A scheduler (an id of 1 to 256 bytes, per queue) holds a schedule (a cron expression in an IANA
time zone, or an interval), what it does with the slots it missed (MISSED_SKIP, MISSED_RUN_ONCE,
MISSED_BACKFILL with its bound), a grace, a payload template and its next slot, which
fire_schedulers compares and sets: any number of processes fire each slot once, with no leader.
``queue.upsert_scheduler(...)`` creates or updates one, ``queue.run_schedulers()`` is the loop
that fires them (``queue.fire_due()`` one round of it), ``plan(record, now_ms, horizon_ms)`` is
the pure function that turns a record into what one firing writes.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from ._gen.protocol import MISSED_BACKFILL, MISSED_RUN_ONCE, MISSED_SKIP, MISSEDS, Missed
from .cron import CRON_MAX_BYTES, Cron, Interval, Schedule
from .errors import ArgumentError, ArgumentTypeError

__all__ = [
    "BACKFILL_MAX",
    "DEFAULT_GRACE_MS",
    "PLAN_CAP",
    "SCHEDULER_ID_MAX_BYTES",
    "TEMPLATE_MAX_BYTES",
    "FireEntry",
    "FiredRun",
    "PlanEntry",
    "PlanRecord",
    "SchedulerInfo",
    "UpsertResult",
    "next_runs",
    "plan",
    "schedule_of",
]

PLAN_CAP: Final = 100
"""The most runs one plan of one scheduler holds (the rest wait for the next round)."""

BACKFILL_MAX: Final = 100
"""The largest backfill bound of a scheduler."""

DEFAULT_GRACE_MS: Final = 60_000
"""A scheduler's grace unless told: a slot fired later than this after it fell due is missed."""

SCHEDULER_ID_MAX_BYTES: Final = 256
"""The longest scheduler id, in UTF-8 bytes."""

TEMPLATE_MAX_BYTES: Final[int] = 1024 * 1024
"""The largest payload template, in bytes."""


@dataclass(frozen=True, slots=True)
class UpsertResult:
    """What Queue.upsert_scheduler did."""

    created: bool
    """The scheduler is new."""
    changed: bool
    """Its schedule (cron, tz, every, start) is new or differs from the stored one, so its next
    slot was reset (to the interval's start, or to now for a cron expression)."""
    next_ms: int
    """Its stored next slot after the upsert (server clock, Unix ms)."""


@dataclass(frozen=True, slots=True)
class SchedulerInfo:
    """A scheduler's record as the server holds it (Queue.schedulers, Queue.list_schedulers)."""

    id: str
    """The scheduler's id."""
    cron: str
    """Its cron expression; empty for an interval."""
    tz: str
    """Its cron expression's time zone; empty for an interval."""
    every_ms: int
    """Its interval; 0 for a cron expression."""
    start_ms: int
    """The interval's anchor, its first slot; 0 for a cron expression."""
    missed: Missed | str
    """What it does with missed slots: a word of the missed vocabulary (a later minor's word is
    kept as read, and planned as MISSED_RUN_ONCE)."""
    backfill: int
    """At most this many missed slots get a run each under MISSED_BACKFILL."""
    grace_ms: int
    """A slot fired more than this long after it fell due is missed."""
    template: bytes
    """The payload of its runs, with {scheduler}, {slot} and {until} replaced in each."""
    paused: bool
    """Whether it is paused."""
    next_ms: int
    """Its stored next slot: its next run is its schedule's first slot at or after it; 0 when
    the schedule has ended."""
    last_slot_ms: int
    """The slot of its last run; 0 when it fired none."""
    last_id: str
    """The job id of its last run; empty when it fired none."""
    runs: int
    """How many runs it fired."""
    now_ms: int
    """The server's time of the read: plan with it, never with the local clock."""

    @property
    def schedule(self) -> Cron | Interval:
        """Its schedule, parsed; an ArgumentError when its cron expression or zone is not one
        this SDK can evaluate."""
        return schedule_of(self.cron, self.tz, self.every_ms, self.start_ms)

    @property
    def next_run_ms(self) -> int:
        """Its next run's slot: the first slot of its schedule at or after next_ms; 0 when it has
        ended (or its schedule cannot be evaluated)."""
        if self.next_ms == 0:
            return 0
        try:
            return self.schedule.next_after(self.next_ms - 1)
        except ArgumentError:
            return 0


@dataclass(frozen=True, slots=True)
class PlanEntry:
    """One entry of a plan: fire_schedulers moves the scheduler's next slot from expect_ms to
    next_ms and, when slot_ms is above 0, creates a run standing for the slots from slot_ms up
    to, not including, until_ms (0: no later slot)."""

    expect_ms: int
    next_ms: int
    slot_ms: int
    until_ms: int


@dataclass(frozen=True, slots=True)
class FireEntry:
    """One entry of Queue.fire_schedulers: a plan entry of a scheduler, with its run's id (any
    fresh id of the work kind, minted by the caller; also for an entry without a run)."""

    id: str
    scheduler: str
    expect_ms: int
    next_ms: int
    slot_ms: int
    until_ms: int


@dataclass(frozen=True, slots=True)
class FiredRun:
    """A run a firing created: an ordinary job of the queue."""

    scheduler: str
    slot_ms: int
    """The run's slot (Unix ms): it is pending when its slot has come, else scheduled at it."""
    until_ms: int
    """The run stands for the slots from slot_ms up to, not including, until_ms (0: none
    later)."""
    id: str
    """The run's job id."""


class PlanRecord(Protocol):
    """What plan reads of a scheduler's record (a SchedulerInfo has it all)."""

    @property
    def cron(self) -> str: ...
    @property
    def tz(self) -> str: ...
    @property
    def every_ms(self) -> int: ...
    @property
    def start_ms(self) -> int: ...
    @property
    def missed(self) -> str: ...
    @property
    def backfill(self) -> int: ...
    @property
    def grace_ms(self) -> int: ...
    @property
    def next_ms(self) -> int: ...
    @property
    def paused(self) -> bool: ...


def schedule_of(cron: str, tz: str, every_ms: int, start_ms: int) -> Cron | Interval:
    """A record's schedule: its cron expression in its zone, else its interval."""
    if cron:
        return Cron(cron, tz)
    return Interval(every_ms, start_ms)


def plan(
    record: PlanRecord,
    now_ms: int,
    horizon_ms: int = 0,
    *,
    schedule: Schedule | None = None,
) -> list[PlanEntry]:
    """What one firing of a scheduler writes at server time now_ms, firing ahead up to horizon_ms:
    at most PLAN_CAP runs, chained from its stored next slot, or one entry that only moves it.
    Slots older than now_ms minus its grace are missed (MISSED_SKIP: none run; MISSED_RUN_ONCE:
    one run stands for them all; MISSED_BACKFILL: the last backfill of them run). [] for a paused
    or ended scheduler, or one with nothing to do. schedule, when given, is the record's (parsed
    once by the caller); else it is parsed here (an ArgumentError when it cannot be)."""
    n = record.next_ms
    if n == 0 or record.paused:
        return []
    s = (
        schedule
        if schedule is not None
        else schedule_of(record.cron, record.tz, record.every_ms, record.start_ms)
    )
    cutoff = now_ms - record.grace_ms
    end = now_ms + horizon_ms
    s1 = s.next_after(n - 1)
    runs: list[tuple[int, int]] = []
    if s1 != 0 and s1 < cutoff:
        o = s.next_after(cutoff - 1)
        if record.missed == MISSED_SKIP:
            pass
        elif record.missed == MISSED_BACKFILL:
            for slot in s.last_slots(cutoff, s1, min(record.backfill, PLAN_CAP)):
                runs.append((slot, s.next_after(slot)))
        else:  # MISSED_RUN_ONCE, and a later minor's word
            runs.append((s1, o))
        at = o
    else:
        at = s1
    while at != 0 and at <= end and len(runs) < PLAN_CAP:
        until = s.next_after(at)
        runs.append((at, until))
        at = until
    out: list[PlanEntry] = []
    e = n
    for slot, until in runs:
        out.append(PlanEntry(expect_ms=e, next_ms=until, slot_ms=slot, until_ms=until))
        e = until
    if not runs and at != n:
        out.append(PlanEntry(expect_ms=n, next_ms=at, slot_ms=0, until_ms=0))
    return out


def next_runs(
    schedule: Schedule | SchedulerInfo, after: int | datetime.datetime, n: int
) -> list[int]:
    """The next n slots (Unix ms) of a schedule (a Cron, an Interval, or a scheduler's record:
    its schedule) strictly after after (Unix ms, or an aware datetime); fewer when the schedule
    ends first. For inspection and dashboards: a scheduler's next run is the first slot at or
    after its stored next_ms (SchedulerInfo.next_run_ms)."""
    s: Schedule = schedule.schedule if isinstance(schedule, SchedulerInfo) else schedule
    if isinstance(after, datetime.datetime):
        if after.tzinfo is None:
            raise ArgumentTypeError("after", "Unix ms (an int) or an aware datetime", after)
        after = (after - _EPOCH) // _ONE_MS
    if isinstance(after, bool) or not isinstance(after, int):
        raise ArgumentTypeError("after", "Unix ms (an int) or an aware datetime", after)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ArgumentError(f"n {n!r} is not a non-negative integer")
    out: list[int] = []
    t = after
    while len(out) < n:
        t = s.next_after(t)
        if t == 0:
            break
        out.append(t)
    return out


_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_ONE_MS: Final = datetime.timedelta(milliseconds=1)


# ---------------------------------------------------------------- the upsert's checks


def _int(what: str, v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ArgumentTypeError(what, "an int", v)
    return v


def check_scheduler_id(id: object) -> str:
    """A scheduler id, checked: a str of 1 to SCHEDULER_ID_MAX_BYTES UTF-8 bytes."""
    if not isinstance(id, str):
        raise ArgumentTypeError("scheduler", "a str (the scheduler's id)", id)
    n = len(id.encode())
    if not 1 <= n <= SCHEDULER_ID_MAX_BYTES:
        raise ArgumentError(
            f"scheduler id {id[:80]!r} is {n} bytes, not 1 to {SCHEDULER_ID_MAX_BYTES}"
        )
    return id


def check_scheduler_ids(ids: Sequence[str]) -> list[str]:
    """Scheduler ids, each checked."""
    if isinstance(ids, str | bytes):
        raise ArgumentTypeError("ids", "a sequence of scheduler ids (str)", ids)
    return [check_scheduler_id(i) for i in ids]


def check_missed(missed: object) -> Missed:
    """missed, checked against the missed vocabulary."""
    if not isinstance(missed, str) or missed not in MISSEDS:
        raise ArgumentError(f"missed {missed!r} is not one of {', '.join(MISSEDS)}")
    return missed


@dataclass(frozen=True, slots=True)
class UpsertArgs:
    """An upsert's values, checked, as upsert_scheduler sends them."""

    scheduler: str
    cron: str
    tz: str
    every_ms: int
    start_ms: int
    missed: Missed
    backfill: int
    grace_ms: int
    template: bytes


def upsert_args(
    scheduler: str,
    *,
    cron: str | None,
    tz: str,
    every_ms: int | None,
    start_ms: int,
    missed: str,
    backfill: int,
    grace_ms: int,
    template: bytes | str,
) -> UpsertArgs:
    """Checks everything an upsert sends (an ArgumentError before anything is sent)."""
    sid = check_scheduler_id(scheduler)
    if cron is not None and not isinstance(cron, str):
        raise ArgumentTypeError("cron", "a str (a cron expression) or None", cron)
    if not isinstance(tz, str):
        raise ArgumentTypeError("tz", "a str (an IANA time zone name)", tz)
    every = 0 if every_ms is None else _int("every", every_ms)
    start = _int("start_ms", start_ms)
    backfill = _int("backfill", backfill)
    grace = _int("grace", grace_ms)
    c = cron or ""
    if every < 0:
        raise ArgumentError(f"every {every!r} ms is negative")
    if (c == "") == (every == 0):
        raise ArgumentError("give exactly one of cron and every (a positive interval)")
    if start < 0:
        raise ArgumentError(f"start_ms {start!r} is negative")
    if not 0 <= backfill <= BACKFILL_MAX:
        raise ArgumentError(f"backfill {backfill!r} is not 0 to {BACKFILL_MAX}")
    if grace < 0:
        raise ArgumentError(f"grace {grace!r} ms is negative")
    m = check_missed(missed)
    if isinstance(template, str):
        t = template.encode()
    elif isinstance(template, bytes | bytearray | memoryview):
        t = bytes(template)
    else:
        raise ArgumentTypeError("template", "bytes or str", template)
    if len(t) > TEMPLATE_MAX_BYTES:
        raise ArgumentError(f"template of {len(t)} bytes is over {TEMPLATE_MAX_BYTES}")
    if c:
        if start != 0:
            raise ArgumentError("start_ms is for an interval only")
        if len(c.encode()) > CRON_MAX_BYTES:
            raise ArgumentError(f"cron expression is longer than {CRON_MAX_BYTES} bytes")
        Cron(c, tz)  # parses, and the zone is known
    elif tz:
        raise ArgumentError("tz is for a cron expression only")
    return UpsertArgs(
        scheduler=sid,
        cron=c,
        tz=tz,
        every_ms=every,
        start_ms=start,
        missed=m,
        backfill=backfill,
        grace_ms=grace,
        template=t,
    )


DEFAULT_MISSED: Final[Missed] = MISSED_RUN_ONCE
"""What an upsert does with missed slots unless told."""
