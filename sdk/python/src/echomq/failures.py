"""Failure records (echomq 2.3.0): why a job's attempts failed, as the queue records them.

A failed attempt is recorded by the call that moves the job on (Queue.retry_failed and
Queue.bury_failed instead of retry and bury; Queue.reap_failed_ids for a lost lease), in the
queue's failure records, never in the job's row. A job's history (its last attempts, oldest first)
is read with Queue.failures, and with the row by Queue.get.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from ._gen.protocol import FAILURE_CLASSES, STATE_DEAD, FailureClass, is_failure_class
from ._gen.scripts import FailuresCall
from .errors import ArgumentError, ArgumentTypeError

__all__ = [
    "MESSAGE_MAX_BYTES",
    "WORKER_MAX_BYTES",
    "FailedAttempt",
    "Failure",
    "decode_failures",
]

MESSAGE_MAX_BYTES: Final = 2048
"""The most bytes of a failure's message a record keeps (the scripts cut the rest)."""

WORKER_MAX_BYTES: Final = 128
"""The most bytes of a worker's name a record keeps (the scripts cut the rest)."""


@dataclass(frozen=True, slots=True)
class Failure:
    """Why an attempt failed, as Queue.retry_failed and Queue.bury_failed record it."""

    failure_class: FailureClass
    """Why: a word of the failure_class vocabulary (FAILURE_CLASSES). Any other is refused with an
    ArgumentError before anything is sent."""
    message: str
    """The error's text; the record keeps its first MESSAGE_MAX_BYTES bytes (cut here at a
    character's boundary, so that it reads back as text)."""
    worker: str | None = None
    """The worker that ran the attempt (the record keeps its first WORKER_MAX_BYTES bytes); None
    records none."""


@dataclass(frozen=True, slots=True)
class FailedAttempt:
    """One failed attempt of a job, as its failure record holds it."""

    attempt: int
    """The attempt that failed: the token its lease held."""
    at_ms: int
    """When it was recorded, on the server's clock (Unix milliseconds)."""
    failure_class: FailureClass | str
    """Why it failed: a word of the failure_class vocabulary, or a word a later minor added, kept
    as it is."""
    worker: str
    """The worker that ran it; empty for a lost lease."""
    message: str
    """The error's text."""

    @property
    def at(self) -> datetime.datetime:
        """at_ms as an aware datetime in UTC."""
        return datetime.datetime.fromtimestamp(self.at_ms / 1000, datetime.UTC)

    def __str__(self) -> str:
        from .queue import ms_repr

        s = f"attempt {self.attempt} at {ms_repr(self.at_ms)}: {self.failure_class}"
        if self.worker:
            s += f" by {self.worker}"
        if self.message:
            s += f": {self.message}"
        return s


def decode_failures(reply: Any) -> list[FailedAttempt]:
    """The attempts of a reply of the failures script, oldest first. A class word this SDK does
    not know (a later minor's) is kept as it is; the error's bytes are read as UTF-8 (an invalid
    sequence becomes U+FFFD)."""
    return [
        FailedAttempt(
            attempt=r.attempt,
            at_ms=r.at_ms,
            failure_class=r.class_,
            worker=r.worker,
            message=r.error.decode("utf-8", "replace"),
        )
        for r in FailuresCall.decode(reply)
    ]


def died_at_ms(state: str, attempts: int, history: Sequence[FailedAttempt]) -> int | None:
    """When a job died, by its failure record: the time of the last recorded attempt when that
    attempt is the row's attempts and the row is dead; None when the record does not say (the
    last attempt was settled by a client that records nothing): never guessed."""
    if state != STATE_DEAD or not history:
        return None
    last = history[-1]
    return last.at_ms if last.attempt == attempts else None


def _cut(s: str, n: int) -> str:
    """s cut to at most n bytes of UTF-8, at a character's boundary."""
    b = s.encode("utf-8", "surrogateescape")
    if len(b) <= n:
        return s
    return b[:n].decode("utf-8", "ignore")


def check_failure(f: object) -> Failure:
    """f, checked before anything is sent: an ArgumentTypeError for a value that is not a Failure
    (or whose message or worker is not a str), an ArgumentError for a class outside the
    vocabulary. Returns it with its message and worker cut to what a record keeps."""
    if not isinstance(f, Failure):
        raise ArgumentTypeError("failure", "an echomq.Failure", f)
    if not isinstance(f.failure_class, str) or not is_failure_class(f.failure_class):
        raise ArgumentError(
            f"failure class {f.failure_class!r} is not one of {', '.join(FAILURE_CLASSES)}"
        )
    if not isinstance(f.message, str):
        raise ArgumentTypeError("failure message", "a str", f.message)
    if f.worker is not None and not isinstance(f.worker, str):
        raise ArgumentTypeError("failure worker", "a str or None", f.worker)
    return Failure(
        failure_class=f.failure_class,
        message=_cut(f.message, MESSAGE_MAX_BYTES),
        worker=None if f.worker is None else _cut(f.worker, WORKER_MAX_BYTES),
    )
