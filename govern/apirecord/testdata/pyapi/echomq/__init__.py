"""A small package in the shape of the Python SDK, for the recorder's tests."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import gen
from ._client import Client, connect
from .gen import *  # noqa: F403
from .queue import Job, Queue, State

if TYPE_CHECKING:
    from collections.abc import Sequence

SDK_VERSION = "0.1.0"
RESEND_ATTEMPTS: int = 3
Payload = bytes | str
_PRIVATE = 1

__all__ = ["Client", "Job", "Payload", "Queue", "RESEND_ATTEMPTS", "SDK_VERSION", "State", "connect", "gen"] + gen.__all__


def unlisted() -> None:
    """Not in __all__: not part of the API."""
