"""What jobs report (echomq 2.4.0): retry policies of their own, results kept under a retention,
progress, the queue's events and its settle counters by the minute.

The types here are what the Queue's 2.4 calls take and give: a BackoffPolicy (a job's own, given
to push/push_batch/add_many, or a worker's, given to Queue.fail) and a Retention (how many
completion records, and how old, a queue keeps: Worker(keep_results=...)) going in; AddResult,
FailOutcome, JobOutput with its Completion, Counters with SettleCounts and MinuteCounts, and
QueueEvent coming out.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import random
from dataclasses import dataclass, field
from typing import Any, Final

from ._duration import Duration, duration_ms
from ._gen.protocol import (
    BACKOFF_EXPONENTIAL,
    BACKOFF_FIXED,
    BACKOFF_INHERIT,
    BACKOFFS,
    Backoff,
    Event,
    FailureClass,
)
from .errors import ArgumentError, ArgumentTypeError

__all__ = [
    "DEFAULT_EVENTS_MAX",
    "PROGRESS_MAX_BYTES",
    "RESULT_MAX_BYTES",
    "AddResult",
    "BackoffPolicy",
    "Completion",
    "Counters",
    "FailOutcome",
    "JobOutput",
    "MinuteCounts",
    "QueueEvent",
    "Retention",
    "SettleCounts",
    "encode_value",
]

DEFAULT_EVENTS_MAX: Final = 10_000
"""The events stream's default approximate bound (XADD MAXLEN ~) for the calls that write it:
connect(events_max=...) and Worker(events_max=...) change it; 0 writes no events."""

RESULT_MAX_BYTES: Final = 1 << 20
"""The most bytes of a handler's result a completion keeps (a larger one is refused)."""

PROGRESS_MAX_BYTES: Final = 4096
"""The most bytes of one progress report (a larger one is refused)."""

EVENTS_PAGE_MAX: Final = 1000
"""The most events one read_events call returns."""

COUNTERS_MINUTES_MAX: Final = 1440
"""The most minutes of buckets counters() reads back (a day)."""


def _int(what: str, v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ArgumentTypeError(what, "an int", v)
    return v


def _non_negative(what: str, v: object) -> int:
    n = _int(what, v)
    if n < 0:
        raise ArgumentError(f"{what} {n!r} is not a non-negative integer")
    return n


def _plain(v: object) -> object:
    """json.dumps' default: a dataclass instance as the dict of its fields."""
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return dataclasses.asdict(v)
    raise TypeError(f"{type(v).__name__} is not JSON serializable")


def encode_value(v: object, what: str = "value") -> bytes:
    """The bytes a handler's result or a progress report is sent as: bytes as they are, a str as
    its UTF-8, None as nothing (empty), any other value as compact JSON (json.dumps, a dataclass
    as the object of its fields; a value JSON cannot encode raises an ArgumentTypeError)."""
    if v is None:
        return b""
    if isinstance(v, bytes | bytearray | memoryview):
        return bytes(v)
    if isinstance(v, str):
        return v.encode()
    try:
        return json.dumps(v, separators=(",", ":"), allow_nan=False, default=_plain).encode()
    except (TypeError, ValueError) as err:
        raise ArgumentTypeError(what, f"bytes, a str or a JSON value ({err})", v) from None


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    """How long a failed attempt waits before the job runs again: ``fixed`` (delay_ms each time)
    or ``exponential`` (delay_ms doubling with each earlier attempt, up to max_ms when it is above
    0, and shortened by up to half by the caller's jitter draw). Make one with
    ``BackoffPolicy.fixed(seconds)`` or ``BackoffPolicy.exponential(seconds, max=seconds)``.

    Given to a push (``queue.push(id, p, backoff=...)``) it is the job's own policy, which the
    queue applies whatever the worker's; given to a Worker (or Queue.fail) it is the policy of
    jobs that have none. A kind outside fixed and exponential or a negative number raises an
    ArgumentError."""

    kind: Backoff
    """A word of the backoff vocabulary other than inherit: BACKOFF_FIXED or BACKOFF_EXPONENTIAL."""
    delay_ms: int = 0
    """The base delay in milliseconds."""
    max_ms: int = 0
    """The bound of an exponential delay in milliseconds; 0 is unbounded."""

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or self.kind not in BACKOFFS:
            raise ArgumentError(
                f"backoff {self.kind!r} is not one of {BACKOFF_FIXED}, {BACKOFF_EXPONENTIAL}"
            )
        if self.kind == BACKOFF_INHERIT:
            raise ArgumentError(
                f"backoff {self.kind!r}: give no policy (None) to keep the worker's"
            )
        _non_negative("backoff delay", self.delay_ms)
        _non_negative("backoff max", self.max_ms)

    def __call__(self, attempt: int) -> float:
        """The delay in ms after the given failed attempt (1 for the first), as a worker waits
        it: a policy is also a ``backoff`` function of the attempt. An exponential delay is drawn
        from the upper half of its interval, as the fail call's jitter does."""
        if self.kind != BACKOFF_EXPONENTIAL:
            return float(self.delay_ms)
        d = float(self.delay_ms) * 2.0 ** min(max(attempt, 1) - 1, 60)
        if self.max_ms > 0:
            d = min(d, float(self.max_ms))
        return d - (d // 2) * random.random()

    @classmethod
    def fixed(cls, delay: Duration) -> BackoffPolicy:
        """A fixed backoff: every retry waits delay (seconds or a timedelta)."""
        return cls(BACKOFF_FIXED, duration_ms("delay", delay, allow_zero=True))

    @classmethod
    def exponential(cls, delay: Duration, max: Duration | None = None) -> BackoffPolicy:
        """An exponential backoff: delay (seconds or a timedelta) after the first attempt,
        doubling with each further one, up to max (None: unbounded); jittered by the worker."""
        m = 0 if max is None else duration_ms("max", max, allow_zero=True)
        return cls(BACKOFF_EXPONENTIAL, duration_ms("delay", delay, allow_zero=True), m)


@dataclass(frozen=True, slots=True)
class Retention:
    """How many completion records (when a job completed, its attempt and the handler's result)
    a queue keeps: at most ``count`` (the oldest dropped first), none older than ``age_ms`` (0: no
    age bound). The default, count 0, keeps none, as BullMQ's ``removeOnComplete: true``: a
    completed job leaves nothing behind. ``Retention.keep(100, age=3600)`` keeps the last 100
    of the last hour. A negative number raises an ArgumentError."""

    count: int = 0
    """The most completion records the queue keeps; 0 keeps none (this one included)."""
    age_ms: int = 0
    """How long a kept record lives after its completion, in milliseconds; 0 is no bound."""

    def __post_init__(self) -> None:
        _non_negative("keep", self.count)
        _non_negative("keep age", self.age_ms)

    @classmethod
    def keep(cls, count: int, *, age: Duration | None = None) -> Retention:
        """Keeps up to count records, each for up to age (seconds or a timedelta; None: no
        bound)."""
        return cls(count, 0 if age is None else duration_ms("age", age))


@dataclass(frozen=True, slots=True)
class AddResult:
    """The outcome of one job of an add_many call."""

    enqueued: bool
    """Whether the job was admitted (False: a duplicate, left untouched)."""
    run_at_ms: int | None = None
    """When a delayed job may run (server clock, Unix ms); None when it was admitted pending or
    not admitted."""


@dataclass(frozen=True, slots=True)
class FailOutcome:
    """How Queue.fail settled a failed attempt."""

    outcome: Event | str
    """EVENT_RETRIED (scheduled to run again at run_at_ms) or EVENT_DEAD (buried)."""
    run_at_ms: int | None = None
    """When the job runs again (server clock, Unix ms); None when it is dead."""

    @property
    def dead(self) -> bool:
        """Whether the job was buried."""
        return self.run_at_ms is None


@dataclass(frozen=True, slots=True)
class Completion:
    """A kept completion record: when the job completed, the attempt that completed it and the
    handler's result (bytes; empty when it returned none)."""

    at_ms: int
    """When it completed (server clock, Unix ms)."""
    attempt: int
    """The attempt (token) that completed it."""
    result: bytes
    """The handler's result as sent: bytes as returned, a str's UTF-8, other values as JSON."""

    @property
    def at(self) -> datetime.datetime:
        """at_ms as an aware datetime in UTC."""
        return datetime.datetime.fromtimestamp(self.at_ms / 1000, datetime.UTC)

    def text(self) -> str:
        """The result as UTF-8 text (an invalid sequence becomes U+FFFD)."""
        return self.result.decode("utf-8", "replace")

    def json(self) -> Any:
        """The result decoded as JSON (None when it is empty); a result that is not JSON raises
        ValueError."""
        return json.loads(self.result) if self.result else None


@dataclass(frozen=True, slots=True)
class JobOutput:
    """What a job said of itself besides its failures: its last progress while its row exists,
    its completion record once it completed (when the worker's retention kept it)."""

    progress: bytes = b""
    """The lease holder's last report; empty when none was made or the row is gone."""
    completed: Completion | None = None
    """The kept completion record; None while the job exists, and when none was kept."""


@dataclass(frozen=True, slots=True)
class SettleCounts:
    """How many settlements a queue counted: jobs completed, attempts failed, attempts retried
    (handed back to run again), jobs buried."""

    completed: int = 0
    failed: int = 0
    retried: int = 0
    dead: int = 0


@dataclass(frozen=True, slots=True)
class MinuteCounts(SettleCounts):
    """The settle counts of one minute."""

    minute_ms: int = 0
    """The start of the minute (server clock, Unix ms)."""

    @property
    def minute(self) -> datetime.datetime:
        """minute_ms as an aware datetime in UTC."""
        return datetime.datetime.fromtimestamp(self.minute_ms / 1000, datetime.UTC)


@dataclass(frozen=True, slots=True)
class Counters:
    """A queue's settle counters: the totals since the counters began, and the last minutes',
    the current minute first (a minute without counts reads as zeros)."""

    totals: SettleCounts
    minutes: tuple[MinuteCounts, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class QueueEvent:
    """One entry of a queue's events stream."""

    stream_id: str
    """The entry's stream id (ms-seq): resume after it (Queue.events(after=...))."""
    event: Event | str
    """What happened: a word of the event vocabulary (EVENTS), or a word a later minor added,
    kept as it is."""
    id: str
    """The job it happened to."""
    attempt: int
    """The job's attempts when it happened."""
    failure_class: FailureClass | str = ""
    """Why an attempt failed (failed events); empty otherwise."""
    error: str = ""
    """The start of the error's text (failed events, at most 256 bytes); empty otherwise."""
    run_at_ms: int | None = None
    """When the next attempt may run (retried events after a failed attempt); None otherwise."""
    progress: bytes = b""
    """What was reported (progress events); empty otherwise."""
