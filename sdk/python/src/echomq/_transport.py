"""Telling a failure of transport from an answer of the server's."""

from __future__ import annotations

from typing import Final

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .errors import BundleError, ConnectionError, EmqConnectionError, FenceError

TRANSPORT_ERRORS: Final = (RedisConnectionError, RedisTimeoutError, OSError, EOFError)
"""What redis-py raises when a call failed in transport (LOADING is a redis ConnectionError)."""


class TryAgainError(ResponseError):
    """TRYAGAIN as the Redis Cluster client's parser reads it (a slot split by a migration, the
    keys of a multi-key command on both sides: nothing ran)."""


def transient(err: BaseException) -> bool:
    """Whether err is a failure of transport (or a server still loading its dataset) rather than
    an answer: the call may be sent again on another connection."""
    if isinstance(err, ConnectionError):
        return True
    if isinstance(err, FenceError | BundleError):
        return False
    return isinstance(err, TRANSPORT_ERRORS)


def as_connection_error(err: BaseException) -> BaseException:
    """Marks a transport failure as a ConnectionError (its cause the original); any other error is
    returned as it is."""
    if isinstance(err, ConnectionError) or not transient(err):
        return err
    ce = EmqConnectionError(str(err) or type(err).__name__)
    ce.__cause__ = err
    return ce
