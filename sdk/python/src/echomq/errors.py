"""The SDK's errors.

Beside the generated ones (malformed ids and queue names, one exception per
wire class under WireError): the version fence, the bundle check, bad
arguments, oversized payloads, lost connections and a missing snowflake node.
Every error of the SDK's own is an EmqError.
"""

from __future__ import annotations

import builtins
from typing import Final

from ._gen.errors import WireError
from ._gen.ids import IdError
from ._gen.keys import QueueNameError
from ._gen.protocol import VERSION_RECORD

__all__ = [
    "CONNECTION_ERROR_CODE",
    "RESEND_ATTEMPTS",
    "ArgumentError",
    "ArgumentTypeError",
    "BundleError",
    "ConnectionError",
    "ConnectionWaitError",
    "EmqConnectionError",
    "EmqError",
    "FenceError",
    "IdError",
    "NoNodeError",
    "PayloadTooLargeError",
    "QueueNameError",
    "WireError",
]


class EmqError(Exception):
    """The base of the SDK's own errors (the generated IdError, QueueNameError and WireError are
    ValueErrors and a refusal of the server's, and stand beside it)."""


class FenceError(EmqError):
    """The version fence's refusal: the keyspace's version record is not one this client may serve
    (another major, a lower version the fence could not raise, or a value that is not a version
    record). Nothing was written."""

    def __init__(self, found: str, want: str = VERSION_RECORD, detail: str = "") -> None:
        why = detail or f"the keyspace is {found!r}"
        super().__init__(f"emq: version fence: {why}, this client speaks {want!r}")
        self.found = found
        """The version record found; empty when none could be read."""
        self.want = want
        """This client's version record."""
        self.detail = detail
        """What refused the fence when no record could be judged (the server's error reply)."""


class BundleError(EmqError):
    """The bundle check's refusal: the reserve records another script bundle for this client's
    version, so some client runs other scripts under the same version number."""

    def __init__(self, version: str, found: str, want: str) -> None:
        super().__init__(
            f"emq: bundle identity: the reserve records bundle {found} for version {version}, "
            f"this client runs {want}"
        )
        self.version = version
        """The version whose bundle is recorded."""
        self.found = found
        """The digest recorded in the reserve."""
        self.want = want
        """This client's bundle digest."""


class ArgumentError(EmqError, ValueError):
    """An argument out of range (a lease or a limit that is not positive, a cursor the SDK cannot
    have returned, an unknown set); nothing was sent."""

    def __init__(self, message: str) -> None:
        super().__init__(f"emq: invalid argument: {message}")


class ArgumentTypeError(ArgumentError, TypeError):
    """An argument of the wrong type (a dict where the payload's bytes go, a float of
    milliseconds, ...); the message names the parameter and the types it takes. Nothing was sent.
    It is a TypeError, and an ArgumentError as every refused argument is."""

    def __init__(self, what: str, expected: str, got: object) -> None:
        super().__init__(f"{what} must be {expected}, not {type(got).__name__}")
        self.expected = expected
        """The types the parameter takes, in words."""


class PayloadTooLargeError(ArgumentError):
    """A payload larger than the client's cap; nothing was sent."""

    def __init__(self, size: int, cap: int) -> None:
        super().__init__(
            f"payload too large: {size} bytes, the cap is {cap} "
            "(max_payload, or the server's proto-max-bulk-len)"
        )
        self.size = size
        """The payload's size in bytes."""
        self.cap = cap
        """The cap in bytes."""


RESEND_ATTEMPTS: Final = 8
"""How many attempts an idempotent call gets in all, across reconnects."""

CONNECTION_ERROR_CODE: Final = "ECONNECTION"
"""The code of every ConnectionError."""


class ConnectionError(EmqError, builtins.ConnectionError):
    """A call failed in transport, not by any answer of the server's.

    The connection was lost (the server restarted, or closed it), could not be opened, timed out,
    or met a server still loading its dataset; ``__cause__`` says why. It is never a FenceError,
    even when the step that failed was the version fence. It is retryable: the client fences every
    new connection before its first command. Idempotent calls (push, push_batch, enqueue,
    enqueue_at and the read-only size, sizes, browse, page, get) are already resent by the client a
    few times over about a second; the others (claim, complete, retry, bury, extend, revive, purge,
    promote, reap, claim_many, complete_claim, ...) are never resent, as they may or may not have
    run. When the keyspace came back foreign, ``fence`` holds the FenceError the client met on the
    fresh connection.
    """

    code: Final = CONNECTION_ERROR_CODE
    """Always CONNECTION_ERROR_CODE."""
    retryable: Final = True
    """Always true: the call may be made again."""

    def __init__(self, message: str, fence: FenceError | BundleError | None = None) -> None:
        super().__init__(f"emq: connection: {message}")
        self.fence = fence
        """The fence's refusal met right after the failure, if any."""


class EmqConnectionError(ConnectionError):
    """The ConnectionError the SDK raises, under a name that does not shadow the builtin
    ``ConnectionError`` (``from echomq import EmqConnectionError``). ``echomq.ConnectionError`` is
    its base and names the same failures: ``except echomq.ConnectionError`` catches it still."""


class ConnectionWaitError(EmqConnectionError, builtins.TimeoutError):
    """A call that was never sent: the server could not be reached (the connection was refused,
    the server was restarting, or still loading its dataset) and was not back within the call's
    deadline, which the call waited out. Nothing of the call ran, whatever the call is (claim and
    complete too), so it may be made again.

    The deadline is the caller's ``asyncio.timeout`` around the call when there is one (the call
    gives up a hair before it, so that it is this error the caller sees rather than the bare
    TimeoutError of ``asyncio.timeout``; on a loop late by more than that hair it may be that
    one), else the client's ``offline_wait`` from the call's start (see connect). It is a
    ConnectionError (``code`` ECONNECTION, retryable) and a builtin TimeoutError;
    ``__cause__`` is the last failure to send the call."""

    def __init__(self, message: str, waited_s: float) -> None:
        super().__init__(message)
        self.waited_s = waited_s
        """How long the call waited for the connection, in seconds."""
        self.timed_out = False
        """Whether the caller's asyncio.timeout expired during the wait (the error then stands
        for the TimeoutError asyncio.timeout would raise)."""


class NoNodeError(EmqError):
    """The client holds no snowflake node to mint ids with."""

    def __init__(self, message: str = "no snowflake node held") -> None:
        super().__init__(f"emq: {message}")
