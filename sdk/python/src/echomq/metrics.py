"""The metrics hook: what the Worker counts, and a protocol an exporter implements.

An adapter to Prometheus or OpenTelemetry implements ``add`` with a counter labelled by the
counter's name and the queue; ``Tally`` keeps totals in memory for tests and a quick look.
"""

from __future__ import annotations

import enum
from collections import Counter as _Totals
from typing import Protocol

__all__ = ["Counter", "Metrics", "NoMetrics", "Tally"]


class Counter(enum.Enum):
    """One thing the SDK counts. Its value is a stable name fit for a metric's label."""

    ENQUEUED = "enqueued"
    """Jobs admitted (not duplicates)."""
    CLAIMED = "claimed"
    """Jobs leased by a worker."""
    COMPLETED = "completed"
    """Jobs a handler finished and whose completion was accepted."""
    RETRIED = "retried"
    """Jobs handed back to run again after a failure."""
    BURIED = "buried"
    """Jobs moved to dead: out of attempts, permanently failed or undecodable."""
    STALE = "stale"
    """Transitions refused because the lease was lost (the wire class of a stale token): the
    normal outcome of a handler slower than its lease."""
    REAPED = "reaped"
    """Expired leases taken back by maintenance."""
    PROMOTED = "promoted"
    """Scheduled jobs made pending by maintenance."""
    HANDED_BACK = "handed_back"
    """Jobs of handlers that overran a shutdown's deadline, handed back to run elsewhere."""
    CANCELLED = "cancelled"
    """Jobs cancelled (echomq 2.5.0: Queue.cancel_ids) while a worker ran them: their handlers
    were cancelled and nothing was settled."""


class Metrics(Protocol):
    """Receives counts. ``add`` must not block and must not raise."""

    def add(self, counter: Counter, queue: str, n: int) -> None:
        """Counts n of counter for queue."""


class NoMetrics:
    """A Metrics that drops every count."""

    def add(self, counter: Counter, queue: str, n: int) -> None:
        """Does nothing."""


class Tally:
    """A Metrics that keeps totals in memory (the queue is not kept apart)."""

    def __init__(self) -> None:
        self._n: _Totals[Counter] = _Totals()

    def add(self, counter: Counter, queue: str, n: int) -> None:
        """Counts n of counter."""
        self._n[counter] += n

    def get(self, counter: Counter) -> int:
        """The total of counter."""
        return self._n[counter]

    def snapshot(self) -> dict[str, int]:
        """Every total by the counter's name."""
        return {c.value: self._n[c] for c in Counter}

    def __repr__(self) -> str:
        """The totals that are not zero, in the counters' order: Tally(enqueued=5, completed=3)."""
        return "Tally(" + ", ".join(f"{c.value}={self._n[c]}" for c in Counter if self._n[c]) + ")"
