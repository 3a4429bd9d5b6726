"""Durations as Python code gives them: seconds (int or float) or a datetime.timedelta, beside the
integer milliseconds of the protocol's calls."""

from __future__ import annotations

import datetime
import math

Duration = float | datetime.timedelta
"""A duration: seconds as an int or a float, or a datetime.timedelta."""


def duration_ms(what: str, v: object, *, allow_zero: bool = False) -> int:
    """The milliseconds of a Duration (rounded up, so that a positive duration never becomes 0);
    a TypeError naming what for a value of another type, an ArgumentError for a negative (or,
    unless allow_zero, a zero) duration or one that is not finite."""
    from .errors import ArgumentError, ArgumentTypeError

    if isinstance(v, datetime.timedelta):
        us = v // datetime.timedelta(microseconds=1)
        if us < 0 or (us == 0 and not allow_zero):
            raise ArgumentError(
                f"{what} {v!r} is not a {'non-negative' if allow_zero else 'positive'} duration"
            )
        return -(-us // 1000)  # exact: rounded up, as for seconds
    elif isinstance(v, int | float) and not isinstance(v, bool):
        s = float(v)
    else:
        raise ArgumentTypeError(what, "seconds (an int or a float) or a datetime.timedelta", v)
    if not math.isfinite(s) or s < 0 or (s == 0 and not allow_zero):
        raise ArgumentError(
            f"{what} {v!r} is not a {'non-negative' if allow_zero else 'positive'} duration"
        )
    return math.ceil(s * 1000)


def pick_ms(
    what_ms: str,
    ms: object,
    what: str,
    d: object,
    default: int | None = None,
    *,
    allow_zero: bool = False,
) -> int:
    """One duration given either as integer milliseconds (the parameter what_ms, which also takes a
    timedelta) or as a Duration (the keyword what): both given is a TypeError; neither, default
    (a TypeError when there is none)."""
    if ms is not None and d is not None:
        raise TypeError(f"emq: give {what_ms} (milliseconds) or {what} (seconds), not both")
    if d is not None:
        return duration_ms(what, d, allow_zero=allow_zero)
    if ms is None:
        if default is None:
            raise TypeError(
                f"emq: missing the {what_ms} (milliseconds) or {what} (seconds) argument"
            )
        return default
    if isinstance(ms, datetime.timedelta):
        return duration_ms(what_ms, ms, allow_zero=allow_zero)
    return ms_int(what_ms, ms)


def ms_int(what: str, v: object) -> int:
    """v as integer milliseconds: an ArgumentTypeError (a TypeError) naming what and the types
    expected for anything but an int (a bool is no int here)."""
    from .errors import ArgumentTypeError

    if isinstance(v, bool) or not isinstance(v, int):
        raise ArgumentTypeError(what, "an int of milliseconds or a datetime.timedelta", v)
    return v
