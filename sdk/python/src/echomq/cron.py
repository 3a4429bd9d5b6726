"""The schedules of job schedulers (echomq 2.6.0): cron expressions in a time zone, and intervals.

``Cron("*/15 9-17 * * MON-FRI", "Europe/Paris")`` parses a cron expression (5 fields
``minute hour day-of-month month day-of-week``, or 6 with the seconds first; the macros
``@yearly`` ``@annually`` ``@monthly`` ``@weekly`` ``@daily`` ``@midnight`` ``@hourly``) in an
IANA time zone ("" is UTC); anything else is refused with an ArgumentError. ``next_after(ms)``
is its first slot strictly after a Unix millisecond time, 0 when there is none within
SEARCH_DAYS (the schedule has ended: ``0 0 30 2 *``). ``Interval(every_ms, start_ms)`` is the
other kind of schedule: start_ms, then every every_ms. ``echomq.next_runs(schedule, after, n)``
lists the next n slots of either (or of a scheduler's record).

A slot is a whole second whose wall time in the zone matches the fields, except the second
occurrence of a repeated wall time (the hour a zone turns its clocks back): ``30 1 * * *`` in
America/New_York runs once on the day the clocks fall back, at the first 01:30. A wall time the
clocks skip (spring forward) never occurs, so it never runs: ``30 2 * * *`` there does not run
on the day the clocks go forward. When both the day-of-month and the day-of-week field do not
start with ``*``, a day matches when either matches (Vixie cron's rule); otherwise when both do.

The search is field by field (the zone's days, then the hours, minutes and seconds of a day
that matches), never second by second.
"""

from __future__ import annotations

import datetime
import functools
import re
import zoneinfo
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

from .errors import ArgumentError, ArgumentTypeError

__all__ = [
    "CRON_MAX_BYTES",
    "SEARCH_DAYS",
    "TZ_MAX_BYTES",
    "Cron",
    "Interval",
    "Schedule",
    "parse",
    "zone",
]

SEARCH_DAYS: Final[int] = 8 * 366
"""How far past its argument next_after searches for a cron expression's next slot, in days: far
enough for the 29th of February (seven years apart across a century that is not a leap year)."""

SEARCH_MS: Final[int] = SEARCH_DAYS * 86_400_000
"""SEARCH_DAYS in milliseconds."""

CRON_MAX_BYTES: Final = 256
"""The longest cron expression a scheduler stores, in UTF-8 bytes."""

TZ_MAX_BYTES: Final = 64
"""The longest time zone name a scheduler stores, in UTF-8 bytes."""

UTC_NAME: Final = "UTC"
"""The zone an empty time zone name means."""

_LOCAL_NAMES: Final = frozenset({"Local", "localtime"})
"""Names of the machine's own zone, which differs between the processes that fire a scheduler:
refused."""

_MACROS: Final = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

_MONTHS: Final = (
    "JAN",
    "FEB",
    "MAR",
    "APR",
    "MAY",
    "JUN",
    "JUL",
    "AUG",
    "SEP",
    "OCT",
    "NOV",
    "DEC",
)
_DAYS: Final = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")

_DIGITS: Final = re.compile(r"[0-9]+")
_NAME: Final = re.compile(r"[A-Za-z]{3}")
_SEPARATORS: Final = re.compile(r"[ \t]+")


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    lo: int
    hi: int
    names: tuple[str, ...] = ()
    first_name: int = 0
    """The value of names[0]."""


_SECOND: Final = _Field("second", 0, 59)
_MINUTE: Final = _Field("minute", 0, 59)
_HOUR: Final = _Field("hour", 0, 23)
_DOM: Final = _Field("day-of-month", 1, 31)
_MONTH: Final = _Field("month", 1, 12, _MONTHS, 1)
_DOW: Final = _Field("day-of-week", 0, 7, _DAYS, 0)

_ONE_DAY: Final = datetime.timedelta(days=1)
_ONE_SECOND: Final = datetime.timedelta(seconds=1)
_EPOCH: Final = datetime.datetime(1970, 1, 1)
_MIN_S: Final = (datetime.datetime(1, 1, 3) - _EPOCH) // _ONE_SECOND
"""The earliest second searched (a day's margin for any zone's offset)."""
_MAX_S: Final = (datetime.datetime(9999, 12, 29) - _EPOCH) // _ONE_SECOND
"""The latest second searched (a day's margin for any zone's offset)."""


def _refuse(expr: str, why: str) -> ArgumentError:
    return ArgumentError(f"cron expression {expr!r}: {why}")


def _value(expr: str, f: _Field, text: str) -> int:
    if _DIGITS.fullmatch(text):
        digits = text.lstrip("0") or "0"
        v = int(digits) if len(digits) <= 4 else f.hi + 1
    elif f.names and _NAME.fullmatch(text) and text.upper() in f.names:
        v = f.names.index(text.upper()) + f.first_name
    else:
        raise _refuse(expr, f"{f.name} {text!r} is not a number{' or a name' if f.names else ''}")
    if not f.lo <= v <= f.hi:
        raise _refuse(expr, f"{f.name} {text!r} is outside {f.lo}-{f.hi}")
    return v


def _field(expr: str, f: _Field, text: str) -> frozenset[int]:
    out: set[int] = set()
    for item in text.split(","):
        if not item:
            raise _refuse(expr, f"the {f.name} field {text!r} has an empty item")
        base, slash, step_text = item.partition("/")
        step = 1
        if slash:
            if not _DIGITS.fullmatch(step_text):
                raise _refuse(expr, f"the step of {f.name} {item!r} is not a number")
            step = int(step_text.lstrip("0") or "0") if len(step_text) <= 12 else f.hi + 1
            if step < 1:
                raise _refuse(expr, f"the step of {f.name} {item!r} is not at least 1")
        if base == "*":
            lo, hi = f.lo, f.hi
        else:
            a, dash, b = base.partition("-")
            lo = _value(expr, f, a)
            if dash:
                hi = _value(expr, f, b)
                if lo > hi:
                    raise _refuse(expr, f"the {f.name} range {base!r} runs backwards")
            elif slash:
                hi = f.hi
            else:
                hi = lo
        out.update(range(lo, hi + 1, step))
    return frozenset(out)


@functools.cache
def _zone_names() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def zone(tz: str) -> datetime.tzinfo:
    """The time zone named tz, an IANA name ("" and "UTC" are UTC); an ArgumentError for an
    unknown name and for the machine's own zone ("Local"), whose slots would differ between the
    processes that fire a scheduler."""
    if not isinstance(tz, str):
        raise ArgumentTypeError("tz", "a str (an IANA time zone name)", tz)
    if tz in ("", UTC_NAME):
        return datetime.UTC
    if len(tz.encode()) > TZ_MAX_BYTES:
        raise ArgumentError(f"time zone {tz[:80]!r} is longer than {TZ_MAX_BYTES} bytes")
    if tz in _LOCAL_NAMES:
        raise ArgumentError(f"time zone {tz!r} is the machine's own: name an IANA zone")
    if tz not in _zone_names():
        raise ArgumentError(f"time zone {tz!r} is not a known IANA time zone")
    try:
        return zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError) as err:
        raise ArgumentError(f"time zone {tz!r} cannot be loaded: {err}") from None


@runtime_checkable
class Schedule(Protocol):
    """A schedule: a Cron or an Interval."""

    def next_after(self, after_ms: int) -> int:
        """The first slot strictly after after_ms (Unix ms); 0 when there is none."""
        ...

    def last_slots(self, before_ms: int, since_ms: int, n: int) -> list[int]:
        """The last n slots (at most) in [since_ms, before_ms), oldest first."""
        ...


class Cron:
    """A cron expression in a time zone (see the module's doc); bad input raises an
    ArgumentError. ``next_after(ms)`` is its first slot strictly after ms, 0 when it has ended."""

    __slots__ = (
        "_dom_star",
        "_doms",
        "_dow_star",
        "_dows",
        "_hours",
        "_minutes",
        "_months",
        "_seconds",
        "_zone",
        "expr",
        "tz",
    )

    expr: str
    """The expression as given."""
    tz: str
    """The zone's name: "UTC" for one given as ""."""
    _seconds: tuple[int, ...]
    _minutes: tuple[int, ...]
    _hours: tuple[int, ...]
    _doms: frozenset[int]
    _months: frozenset[int]
    _dows: frozenset[int]
    """The days of the week, 0 (Sunday) to 6."""
    _dom_star: bool
    """Whether the day-of-month field starts with ``*`` (the Vixie day rule)."""
    _dow_star: bool
    """Whether the day-of-week field starts with ``*``."""

    def __init__(self, expr: str, tz: str = "") -> None:
        if not isinstance(expr, str):
            raise ArgumentTypeError("cron", "a str (a cron expression)", expr)
        self.expr = expr
        self._zone = zone(tz)
        self.tz = tz or UTC_NAME
        text = expr.strip(" \t")
        if text.startswith("@"):
            macro = _MACROS.get(text.lower())
            if macro is None:
                raise _refuse(expr, f"{text!r} is not one of {', '.join(_MACROS)}")
            text = macro
        fields = _SEPARATORS.split(text) if text else []
        if len(fields) == 5:
            fields.insert(0, "0")
        if len(fields) != 6:
            raise _refuse(expr, f"{len(fields)} fields, not 5 or 6")
        sec, mi, hr, dom, mon, dow = fields
        self._seconds = tuple(sorted(_field(expr, _SECOND, sec)))
        self._minutes = tuple(sorted(_field(expr, _MINUTE, mi)))
        self._hours = tuple(sorted(_field(expr, _HOUR, hr)))
        self._doms = _field(expr, _DOM, dom)
        self._months = _field(expr, _MONTH, mon)
        self._dows = frozenset(d % 7 for d in _field(expr, _DOW, dow))
        self._dom_star = dom.startswith("*")
        self._dow_star = dow.startswith("*")

    def __repr__(self) -> str:
        return f"Cron({self.expr!r}, {self.tz!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Cron):
            return NotImplemented
        return (self.expr, self.tz) == (other.expr, other.tz)

    def __hash__(self) -> int:
        return hash((self.expr, self.tz))

    def _day(self, d: datetime.date) -> bool:
        if d.month not in self._months:
            return False
        dom = d.day in self._doms
        dow = d.isoweekday() % 7 in self._dows
        if self._dom_star or self._dow_star:
            return dom and dow
        return dom or dow

    def _instant(self, d: datetime.date, h: int, m: int, s: int) -> int | None:
        """The second whose wall time in the zone is d h:m:s, its first occurrence; None when
        the wall time does not occur (the clocks skip it)."""
        wall = datetime.datetime(d.year, d.month, d.day, h, m, s)
        off = wall.replace(tzinfo=self._zone).utcoffset()
        t = (wall - _EPOCH) // _ONE_SECOND - (off // _ONE_SECOND if off is not None else 0)
        back = datetime.datetime.fromtimestamp(t, self._zone)
        if back.fold or back.replace(tzinfo=None) != wall:
            return None
        return t

    def _walls(
        self, d: datetime.date, first: tuple[int, int, int] | None, down: bool
    ) -> Iterator[tuple[int, int, int]]:
        """The day's wall times of the fields, in order (descending when down), from first
        (inclusive) when given."""
        hours = reversed(self._hours) if down else iter(self._hours)
        for h in hours:
            if first is not None and (h > first[0] if down else h < first[0]):
                continue
            on_h = first is not None and h == first[0]
            for m in reversed(self._minutes) if down else self._minutes:
                if on_h and first is not None and (m > first[1] if down else m < first[1]):
                    continue
                on_m = on_h and first is not None and m == first[1]
                for s in reversed(self._seconds) if down else self._seconds:
                    if on_m and first is not None and (s > first[2] if down else s < first[2]):
                        continue
                    yield (h, m, s)

    def _slots_up(self, start_s: int, end_s: int) -> Iterator[int]:
        """The slots t (Unix seconds) with start_s <= t <= end_s, ascending."""
        start_s = max(start_s, _MIN_S)
        end_s = min(end_s, _MAX_S)
        if start_s > end_s:
            return
        w0 = datetime.datetime.fromtimestamp(start_s, self._zone)
        d = w0.date()
        end_date = datetime.datetime.fromtimestamp(end_s, self._zone).date()
        first: tuple[int, int, int] | None = (w0.hour, w0.minute, w0.second)
        while d <= end_date:
            if self._day(d):
                for h, m, s in self._walls(d, first, False):
                    t = self._instant(d, h, m, s)
                    if t is None or t < start_s:
                        # skipped by the clocks; or the repeated hour's first pass, when start_s
                        # is in its second
                        continue
                    if t > end_s:
                        return
                    yield t
            first = None
            d += _ONE_DAY

    def _slots_down(self, start_s: int, floor_s: int) -> Iterator[int]:
        """The slots t (Unix seconds) with floor_s <= t <= start_s, descending."""
        start_s = min(start_s, _MAX_S)
        floor_s = max(floor_s, _MIN_S)
        if start_s < floor_s:
            return
        w0 = datetime.datetime.fromtimestamp(start_s, self._zone)
        wall = w0.replace(tzinfo=None, fold=0)
        if w0.fold:
            # start_s is in a repeated hour's second pass: the later wall times of the first pass
            # came before it
            first_pass = wall.replace(tzinfo=self._zone).utcoffset()  # fold 0
            now = w0.utcoffset()
            if first_pass is not None and now is not None:
                wall += first_pass - now
        d = wall.date()
        floor_date = datetime.datetime.fromtimestamp(floor_s, self._zone).date()
        first: tuple[int, int, int] | None = (wall.hour, wall.minute, wall.second)
        while d >= floor_date:
            if self._day(d):
                for h, m, s in self._walls(d, first, True):
                    t = self._instant(d, h, m, s)
                    if t is None or t > start_s:
                        continue
                    if t < floor_s:
                        return
                    yield t
            first = None
            d -= _ONE_DAY

    def next_after(self, after_ms: int) -> int:
        """The first slot strictly after after_ms (Unix ms), searching SEARCH_DAYS past it; 0 when
        there is none (the schedule has ended)."""
        for t in self._slots_up(after_ms // 1000 + 1, (after_ms + SEARCH_MS) // 1000):
            return t * 1000
        return 0

    def last_slots(self, before_ms: int, since_ms: int, n: int) -> list[int]:
        """The last n slots (at most) in [since_ms, before_ms), oldest first."""
        out: list[int] = []
        if n <= 0:
            return out
        for t in self._slots_down((before_ms - 1) // 1000, -(-since_ms // 1000)):
            out.append(t * 1000)
            if len(out) >= n:
                break
        out.reverse()
        return out

    def next(self, after: datetime.datetime) -> datetime.datetime | None:
        """The first slot strictly after the aware datetime after, as an aware datetime in the
        zone; None when the schedule has ended."""
        if not isinstance(after, datetime.datetime) or after.tzinfo is None:
            raise ArgumentTypeError("after", "an aware datetime.datetime", after)
        ms = (after - datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)) // datetime.timedelta(
            milliseconds=1
        )
        t = self.next_after(ms)
        if t == 0:
            return None
        return datetime.datetime.fromtimestamp(t // 1000, self._zone)


def parse(expr: str, tz: str = "") -> Cron:
    """A cron expression in the IANA zone tz ("" is UTC), parsed: an ArgumentError when either
    is refused (see the module's doc)."""
    return Cron(expr, tz)


@dataclass(frozen=True, slots=True)
class Interval:
    """An interval schedule: slots start_ms + k * every_ms for k >= 0 (Unix ms)."""

    every_ms: int
    start_ms: int = 0

    def __post_init__(self) -> None:
        for what, v in (("every_ms", self.every_ms), ("start_ms", self.start_ms)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise ArgumentTypeError(what, "an int of milliseconds", v)
        if self.every_ms < 1:
            raise ArgumentError(f"interval every_ms {self.every_ms!r} is not a positive integer")
        if self.start_ms < 0:
            raise ArgumentError(f"interval start_ms {self.start_ms!r} is negative")

    def next_after(self, after_ms: int) -> int:
        """The first slot strictly after after_ms."""
        if after_ms < self.start_ms:
            return self.start_ms
        return self.start_ms + ((after_ms - self.start_ms) // self.every_ms + 1) * self.every_ms

    def last_slots(self, before_ms: int, since_ms: int, n: int) -> list[int]:
        """The last n slots (at most) in [since_ms, before_ms), oldest first."""
        if n <= 0 or before_ms <= self.start_ms:
            return []
        top = (before_ms - 1 - self.start_ms) // self.every_ms
        low = max(0, -(-(since_ms - self.start_ms) // self.every_ms), top - n + 1)
        return [self.start_ms + k * self.every_ms for k in range(low, top + 1)]
