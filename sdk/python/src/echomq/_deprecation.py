"""Deprecated calls: kept, working as before, and warning their callers.

The idiomatic layer has one generation of calls: the 2.0 calls that the 2.2.0 calls replaced
(``claim``, ``promote``, ``reap``, ``complete_claim``) stay, since removing a call is a major,
and each warns with a DeprecationWarning naming its replacement, attributed to the line that
called it. The wire layer (``echomq._gen``) keeps every script.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def deprecated(replacement: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Marks a call deprecated in favour of replacement: calling it warns (DeprecationWarning,
    ``stacklevel=2``: at the caller's line) before it runs. For an async call the warning is
    given when it is called, before its coroutine is awaited."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            warnings.warn(
                f"emq: {fn.__qualname__} is deprecated: use {replacement}",
                DeprecationWarning,
                stacklevel=2,
            )
            return fn(*args, **kwargs)

        return call

    return wrap
