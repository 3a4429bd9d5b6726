"""Cancellation honoured on every SDK call, whatever redis-py does with it.

redis-py 8.0.0 and 8.1.0 (the lock's) sometimes swallow a cancellation that lands while a command
is in flight: the call returns its reply and the task runs on, though ``Task.cancel()`` was
called and not withdrawn (``Task.cancelling()`` still counts it). A caller's ``asyncio.timeout``
then never fires, and a task told to stop (the worker's maintenance, a request handler) runs on.

``honour_cancel`` wraps an SDK call: when the calling task's cancellation count rose while the
call ran and the call did not raise CancelledError itself, the call raises CancelledError as it
returns (or fails), so the cancellation reaches the caller as asyncio promises. A count that was
already up when the call started (a call made in the ``finally`` of a cancelled task) is left
alone.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from .errors import ConnectionWaitError

P = ParamSpec("P")
R = TypeVar("R")


def cancelling() -> int:
    """The current task's count of cancellation requests not yet withdrawn (0 outside a task)."""
    t = asyncio.current_task()
    return t.cancelling() if t is not None else 0


def check_cancelled(before: int) -> None:
    """Raises CancelledError when the current task's cancellation count rose above before."""
    if cancelling() > before:
        raise asyncio.CancelledError()


async def honoured(aw: Awaitable[R]) -> R:
    """Awaits aw and raises CancelledError when the task was cancelled meanwhile (see the module's
    doc)."""
    before = cancelling()
    try:
        out = await aw
    except asyncio.CancelledError:
        raise
    except Exception as err:
        # A call whose wait for the connection the caller's asyncio.timeout ended raises its
        # ConnectionWaitError in the cancellation's stead (the Timeout takes it back as it exits).
        if cancelling() > before and not (isinstance(err, ConnectionWaitError) and err.timed_out):
            raise asyncio.CancelledError() from err
        raise
    check_cancelled(before)
    return out


def honour_cancel(fn: Callable[P, Awaitable[R]]) -> Callable[P, Coroutine[Any, Any, R]]:
    """Wraps an async SDK call so that a cancellation of its task that landed while it ran is
    raised when it returns, even if redis-py swallowed it."""

    @functools.wraps(fn)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        return await honoured(fn(*args, **kwargs))

    return call
