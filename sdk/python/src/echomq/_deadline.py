"""The deadline of one call: how long a call that was never sent waits for the connection.

A call whose command never reached a server (the connection was refused, the server is
restarting or loading its dataset: see _transport.unsent) is sent again once the connection is
back, whatever the call is, for nothing of it ran. It waits for that within its deadline: the
caller's ``asyncio.timeout`` around the call when there is one, else the client's
``offline_wait`` from the call's start. Past it the call raises a ConnectionWaitError.

asyncio has no public way to read the deadline of the ``asyncio.timeout`` a task is in. A
Timeout schedules its expiry on the task's loop (``loop.call_at(when, timeout._on_timeout)``),
so the deadline is found among the loop's timers: the earliest of the Timeouts entered by the
task that have not expired. That reads the loop's private timer heap (``_scheduled``) of the
standard event loops; on a loop without it (uvloop) the client's offline_wait bounds the wait,
and a shorter ``asyncio.timeout`` still cuts it short (with its TimeoutError). The search runs
only when a call was refused its connection, never on a call that went out.

The deadline is read at the first failure to send, from the call's own task: a coalesced push
is sent by a batch task, so each push keeps its Bound (its task and start) for the batch to
read.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Final

from .errors import ConnectionWaitError

__all__ = [
    "CALL_BOUND",
    "GIVE_UP",
    "MARGIN_S",
    "Bound",
    "caller_timeout",
    "giving_up_on",
    "timeout_deadline",
]

MARGIN_S: Final = 0.010
"""How long before the caller's ``asyncio.timeout`` a call gives up waiting, so that it raises
its ConnectionWaitError before the Timeout cancels it."""

_PAUSE_MAX_S: Final = 0.100
"""The longest pause between two attempts at a call that was never sent (Go's sendMaxWait): a
server back from a restart is met within it."""

CALL_BOUND: ContextVar[Bound | None] = ContextVar("echomq_call_bound", default=None)
"""The Bound of the SDK call under way in this context (the cluster's TRYAGAIN resends share
it)."""


GIVE_UP: ContextVar[asyncio.Event | None] = ContextVar("echomq_call_give_up", default=None)
"""An event that ends the wait for the connection of the calls made in this context once set
(a worker's stop(): its claim, never sent, gives up instead of waiting out its deadline)."""


@contextlib.contextmanager
def giving_up_on(event: asyncio.Event | None) -> Iterator[None]:
    """Within it, a call that waits for the connection stops waiting once event is set."""
    token = GIVE_UP.set(event)
    try:
        yield
    finally:
        GIVE_UP.reset(token)


def caller_timeout(task: asyncio.Task[object] | None) -> asyncio.Timeout | None:
    """The ``asyncio.timeout`` scope of task that expires first and has not expired, or None
    (no such scope, or a loop whose timers cannot be read)."""
    if task is None:
        return None
    scheduled = getattr(task.get_loop(), "_scheduled", None)
    if not isinstance(scheduled, list):
        return None
    best: asyncio.Timeout | None = None
    for h in scheduled:
        if not isinstance(h, asyncio.TimerHandle) or h.cancelled():
            continue
        t = getattr(getattr(h, "_callback", None), "__self__", None)
        if not isinstance(t, asyncio.Timeout) or getattr(t, "_task", None) is not task:
            continue
        when = t.when()
        if when is None or t.expired():
            continue
        bw = best.when() if best is not None else None
        if bw is None or when < bw:
            best = t
    return best


def timeout_deadline(task: asyncio.Task[object] | None) -> float | None:
    """The earliest deadline (loop time) of the ``asyncio.timeout`` scopes task is in and that
    have not expired, or None (see caller_timeout)."""
    t = caller_timeout(task)
    return t.when() if t is not None else None


class Bound:
    """The deadline of one call's wait for the connection (see the module's doc): made as the
    call starts (its task and start time, nothing else), read at its first failure to send."""

    __slots__ = ("_cancelling", "_timeout", "_until", "give_up", "start", "task", "wait_s")

    def __init__(self, wait_s: float) -> None:
        self.task: asyncio.Task[object] | None = asyncio.current_task()
        self.start = asyncio.get_running_loop().time()
        self.wait_s = wait_s
        self.give_up = GIVE_UP.get()
        """Ends the wait once set (see GIVE_UP)."""
        self._until: float | None = None
        self._timeout: asyncio.Timeout | None = None
        self._cancelling = self.task.cancelling() if self.task is not None else 0

    def until(self) -> float:
        """When the call stops waiting, in loop time: a hair before the caller's
        ``asyncio.timeout``, else start plus the client's offline_wait."""
        if self._until is None:
            t = caller_timeout(self.task)
            when = t.when() if t is not None else None
            if when is not None:
                self._timeout = t
                self._until = when - MARGIN_S
            else:
                self._until = self.start + self.wait_s
        return self._until

    def timed_out(self) -> bool:
        """Whether a cancellation of the call's task is the caller's asyncio.timeout expiring,
        and nothing else: the call may then raise its ConnectionWaitError instead (the Timeout
        takes back its cancellation as it exits, and lets that error through)."""
        t, task = self._timeout, self.task
        return (
            t is not None
            and task is not None
            and t.expired()
            and task.cancelling() == self._cancelling + 1
        )

    async def wait_turn_or_time_out(self, n: int, last: BaseException) -> bool:
        """wait_turn, with the caller's asyncio.timeout expiring during the pause (a loop late
        past MARGIN_S) raised as the call's ConnectionWaitError rather than the bare
        cancellation: the call was not sent, and the pause sends nothing."""
        try:
            return await self.wait_turn(n)
        except asyncio.CancelledError:
            if not self.timed_out():
                raise
            err = self.gave_up(last)
            err.timed_out = True
            raise err from None

    def left(self) -> float:
        """Seconds until the deadline (negative past it)."""
        return self.until() - asyncio.get_running_loop().time()

    async def wait_turn(self, n: int) -> bool:
        """The pause before attempt n + 1 at a call that was never sent (n failures so far): 10
        ms doubling up to 100 ms, jittered to its upper half, cut at the deadline. False when
        the deadline has passed (no attempt is due)."""
        left = self.left()
        if left <= 0 or self._given_up():
            return False
        d = min(0.010 * 2.0 ** (n - 1), _PAUSE_MAX_S)
        await asyncio.sleep(min(d / 2 + random.random() * (d / 2), left))
        return self.left() > 0 and not self._given_up()

    def _given_up(self) -> bool:
        return self.give_up is not None and self.give_up.is_set()

    def gave_up(self, last: BaseException) -> ConnectionWaitError:
        """The ConnectionWaitError of the call, whose last failure to send was last."""
        waited = max(0.0, asyncio.get_running_loop().time() - self.start)
        why = (
            "its wait for the connection was ended (a worker stopping)"
            if self._given_up()
            else "the connection was not back within its deadline"
        )
        ce = ConnectionWaitError(
            f"the call was not sent: {why} (waited {waited:.3f} s): {last}", waited
        )
        ce.__cause__ = last
        return ce


def latest(bounds: list[Bound]) -> Bound:
    """The Bound of the call that waits longest among bounds (a batch of coalesced pushes waits
    while any of its callers does)."""
    if len(bounds) == 1:
        return bounds[0]
    return max(bounds, key=lambda b: b.until())
