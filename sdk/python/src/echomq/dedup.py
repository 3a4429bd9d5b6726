"""Deduplication by a caller's key and cancellation (echomq 2.5.0): the push option, the results.

``queue.push(id, p, dedup=DedupKey("invoice-42"))`` admits the job only when no job holds the key
(mode until_done, the default); the other modes are throttle (the key is held for ``ttl``,
whatever the holder's fate), debounce (a waiting holder takes the later payload and its run-at
moves) and keep_last (one job of the key active and one waiting, parked behind it). The result,
a DedupResult, tells what the admission did and the id of the job it concerns.
``queue.dedup_entries(keys)`` reads the keys' entries, ``queue.cancel_ids(ids)`` and
``queue.cancel_key(key)`` cancel jobs (a running one's handler is cancelled by its worker).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ._duration import Duration, pick_ms
from ._gen.protocol import (
    ADMISSION_ADMITTED,
    ADMISSION_PARKED,
    ADMISSION_REPLACED,
    DEDUP_THROTTLE,
    DEDUP_UNTIL_DONE,
    DEDUPS,
    Admission,
    Dedup,
    State,
)
from .errors import ArgumentError, ArgumentTypeError, EmqError

__all__ = [
    "HOLD_DEAD",
    "HOLD_RESULT",
    "REPLACE_ATTEMPTS",
    "Cancelled",
    "DedupContentionError",
    "DedupEntry",
    "DedupKey",
    "DedupResult",
    "DedupSweep",
]

HOLD_DEAD: Final = 1
"""The hold bit that keeps a key held while its holder is dead."""

HOLD_RESULT: Final = 2
"""The hold bit that keeps a key held while its holder's completion record is kept."""

REPLACE_ATTEMPTS: Final = 5
"""How many replace_dedup calls a push sends, at most, while the job it would replace keeps
changing under it (each deferred answer names the new one); then DedupContentionError."""


def dedup_mode(mode: object) -> Dedup:
    """mode, checked against the dedup vocabulary (an ArgumentError before anything is sent)."""
    if not isinstance(mode, str) or mode not in DEDUPS:
        raise ArgumentError(f"dedup mode {mode!r} is not one of {', '.join(DEDUPS)}")
    return mode


def dedup_ttl_ms(mode: Dedup, ttl_ms: int) -> int:
    """ttl_ms, checked: a non-negative int, above 0 for throttle."""
    if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int):
        raise ArgumentTypeError("dedup ttl", "an int of milliseconds", ttl_ms)
    if ttl_ms < 0:
        raise ArgumentError(f"dedup ttl {ttl_ms!r} is not a non-negative duration")
    if mode == DEDUP_THROTTLE and ttl_ms == 0:
        raise ArgumentError(f"dedup mode {mode} needs a ttl above 0")
    return ttl_ms


def hold_bits(hold_dead: bool, hold_result: bool) -> int:
    """The hold bits of the two flags."""
    return (HOLD_DEAD if hold_dead else 0) | (HOLD_RESULT if hold_result else 0)


def dedup_key_bytes(key: object, *, allow_empty: bool = False) -> bytes:
    """A caller's key as sent: a str (as UTF-8) or bytes; empty only when allow_empty."""
    if isinstance(key, str):
        b = key.encode()
    elif isinstance(key, bytes | bytearray | memoryview):
        b = bytes(key)
    else:
        raise ArgumentTypeError("dedup key", "a str or bytes", key)
    if not b and not allow_empty:
        raise ArgumentError("the dedup key is empty")
    return b


@dataclass(frozen=True, slots=True, init=False)
class DedupKey:
    """A job's deduplication key and how its admission treats the key's holder (echomq 2.5.0),
    given to a push (``queue.push(id, p, dedup=DedupKey(key, DEDUP_DEBOUNCE, ttl=5))``) or to a
    NewJob of push_batch.

    ``mode`` is a word of the dedup vocabulary: DEDUP_UNTIL_DONE (default: nothing is admitted
    while the holder is pending, scheduled or active), DEDUP_THROTTLE (held for ``ttl`` from the
    admission, whatever happens to the holder), DEDUP_DEBOUNCE (a waiting holder takes the new
    payload and its run-at moves to now plus the push's delay; an active one is never touched)
    or DEDUP_KEEP_LAST (a waiting holder takes the new payload; behind an active one the job is
    parked until it is done). ``ttl`` (seconds or a timedelta, sub-second allowed; or ``ttl_ms``)
    bounds how long the key is held (None: no bound; throttle needs one). ``hold_dead`` keeps the
    key held while its holder is dead, ``hold_result`` while its completion record is kept.
    Bad values raise an ArgumentError at once."""

    key: bytes
    """The key as sent (a str given is kept as its UTF-8)."""
    mode: Dedup
    """How the admission treats the key's holder."""
    ttl_ms: int
    """How long the key is held at most, in milliseconds; 0 is no bound."""
    hold_dead: bool
    """The key stays held while its holder is dead."""
    hold_result: bool
    """The key stays held while its holder's completion record is kept."""

    def __init__(
        self,
        key: str | bytes,
        mode: Dedup = DEDUP_UNTIL_DONE,
        *,
        ttl: Duration | None = None,
        ttl_ms: int | None = None,
        hold_dead: bool = False,
        hold_result: bool = False,
    ) -> None:
        m = dedup_mode(mode)
        object.__setattr__(self, "key", dedup_key_bytes(key))
        object.__setattr__(self, "mode", m)
        t = pick_ms("ttl_ms", ttl_ms, "ttl", ttl, 0, allow_zero=True)
        object.__setattr__(self, "ttl_ms", dedup_ttl_ms(m, t))
        object.__setattr__(self, "hold_dead", bool(hold_dead))
        object.__setattr__(self, "hold_result", bool(hold_result))

    @property
    def hold(self) -> int:
        """The hold bits sent (HOLD_DEAD, HOLD_RESULT)."""
        return hold_bits(self.hold_dead, self.hold_result)

    @property
    def policy(self) -> tuple[Dedup, int, int]:
        """What one add_dedup call shares: mode, ttl_ms and hold bits."""
        return (self.mode, self.ttl_ms, self.hold)


@dataclass(frozen=True, slots=True)
class DedupResult:
    """What an admission with a deduplication key did (echomq 2.5.0)."""

    outcome: Admission
    """ADMISSION_ADMITTED (the job holds the key), ADMISSION_DUPLICATE (the key is held, or the
    job's row exists: nothing was admitted), ADMISSION_REPLACED (the waiting holder, or the
    parked job, took the payload), ADMISSION_PARKED (admitted behind an active holder, keep_last);
    a push never returns ADMISSION_DEFERRED (add_dedup's own answer)."""
    id: str
    """The job concerned: the admitted or parked job, the holder (or the job itself) of a
    duplicate, the replaced job."""
    run_at_ms: int | None = None
    """The run-at of an admitted delayed job, or of the replaced job after a debounce with a
    delay (server clock, Unix ms); None otherwise."""

    @property
    def admitted(self) -> bool:
        """Whether the push wrote a job of its own (admitted or parked)."""
        return self.outcome in (ADMISSION_ADMITTED, ADMISSION_PARKED)

    @property
    def replaced(self) -> bool:
        """Whether a waiting job took the push's payload."""
        return self.outcome == ADMISSION_REPLACED


@dataclass(frozen=True, slots=True)
class DedupEntry:
    """A deduplication key's entry as an admission would judge it now (Queue.dedup_entries)."""

    holder: str
    """The job holding the key; empty when the key has no entry."""
    mode: str
    """The mode of the admission that took it; empty when none."""
    expires_ms: int
    """When the hold ends at the latest (server ms); 0 when no bound."""
    held: bool
    """Whether an admission now would meet the holder."""
    state: State | str
    """The state of the set holding the holder; empty when it is in none (done, cancelled)."""
    parked: str
    """The job parked behind an active holder (keep_last); empty when none."""


@dataclass(frozen=True, slots=True)
class DedupSweep:
    """One page of Queue.sweep_dedup."""

    cursor: str
    """The cursor of the next page; "0" when the walk is done."""
    dropped: int
    """Entries deleted (holders done, holds expired)."""
    released: int
    """Parked jobs made due (and their keys' holders)."""


@dataclass(frozen=True, slots=True)
class Cancelled:
    """A job Queue.cancel_key cancelled."""

    id: str
    state: State
    """The state it was cancelled from."""


class DedupContentionError(EmqError):
    """A push with a deduplication key met a different job to replace on each of its
    REPLACE_ATTEMPTS replace_dedup calls (the key's holder kept changing under it); nothing of
    the last call was written."""

    def __init__(self, id: str, last: str) -> None:
        super().__init__(
            f"emq: push {id}: the job to replace under its dedup key changed "
            f"{REPLACE_ATTEMPTS} times (last {last}); nothing was admitted"
        )
        self.id = id
        self.last = last
