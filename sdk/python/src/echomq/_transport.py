"""Telling a failure of transport from an answer of the server's."""

from __future__ import annotations

from typing import Any, Final, TypeVar, cast

from redis.asyncio.connection import AbstractConnection
from redis.exceptions import (
    AuthenticationError,
    AuthorizationError,
    BusyLoadingError,
    ResponseError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .errors import BundleError, ConnectionError, EmqConnectionError, FenceError

TRANSPORT_ERRORS: Final = (RedisConnectionError, RedisTimeoutError, OSError, EOFError)
"""What redis-py raises when a call failed in transport (LOADING is a redis ConnectionError)."""


class TryAgainError(ResponseError):
    """TRYAGAIN as the Redis Cluster client's parser reads it (a slot split by a migration, the
    keys of a multi-key command on both sides: nothing ran)."""


class UnsentError(RedisConnectionError):
    """A command that never reached a server: the connection it was to go out on could not be
    opened (refused, timed out connecting, its handshake or the version fence on it failed in
    transport). Nothing of the command was written, so it can be sent again whatever it does.
    ``__cause__`` is redis-py's error."""


def unsent(err: BaseException) -> bool:
    """Whether err is the failure of a command that never ran on a server: never written
    (UnsentError), or answered LOADING (a server loading its dataset runs nothing)."""
    return isinstance(err, UnsentError | BusyLoadingError)


_ANSWERS: Final = (AuthenticationError, AuthorizationError)
"""Connection errors that are a server's answer to the handshake (bad credentials, an ACL), not a
server out of reach: waiting does not change them."""

_UNSENT_CLASSES: dict[type[Any], type[Any]] = {}


_C = TypeVar("_C", bound=AbstractConnection)


def unsent_connection_class(cls: type[_C]) -> type[_C]:
    """cls (redis-py's Connection, SSLConnection, UnixDomainSocketConnection, or one of the
    caller's) with every failure in transport to open a connection raised as an UnsentError:
    both redis.asyncio.Redis (its pool, before the command is written) and the cluster's nodes
    (in send_packed_command, before the write) open connections through connect_check_health."""
    if issubclass(cls, _UnsentMixin):
        return cls
    out = _UNSENT_CLASSES.get(cls)
    if out is None:
        out = type(cls.__name__, (_UnsentMixin, cls), {"__module__": __name__})
        _UNSENT_CLASSES[cls] = out
    return cast(type[_C], out)


class _UnsentMixin:
    async def connect_check_health(self, *args: Any, **kwargs: Any) -> None:
        try:
            await super().connect_check_health(*args, **kwargs)  # type: ignore[misc]
        except _ANSWERS:
            raise
        except UnsentError:
            raise
        except TRANSPORT_ERRORS as err:
            raise UnsentError(str(err) or type(err).__name__) from err


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
