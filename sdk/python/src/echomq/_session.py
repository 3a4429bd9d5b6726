"""The session: what every call of a client runs through, private to the package.

The version fence's judgement (Verdict, judge_version_record, check_version_record, and
fence_on, the fence script on one connection), and the two ways a call meets a failure of
transport: resend (an idempotent call, sent again on a freshly fenced connection) and once (a
call that is never resent). client.py builds the Client on it and _cluster.py the cluster's
fence: the client imports the cluster module and the queue module, and none of the modules it
imports imports client.py at run time (queue.py and probe.py name the Client in annotations
only, under TYPE_CHECKING), so there is no import circle to break by importing late. Queues and
workers reach the client's plumbing through its private methods (``Client._resend``,
``_once``, ``_check_payload``): they are not part of the API.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from redis.asyncio.connection import AbstractConnection
from redis.exceptions import NoScriptError

from ._deadline import Bound
from ._gen.keys import KEY_BUNDLE, KEY_VERSION
from ._gen.protocol import (
    VERSION,
    VERSION_MAJOR,
    VERSION_MINOR,
    VERSION_PATCH,
    VERSION_RECORD,
    VERSION_RECORD_PREFIX,
)
from ._gen.scripts import BUNDLE_DIGEST, FenceCall
from ._transport import TRANSPORT_ERRORS, as_connection_error, unsent
from .errors import RESEND_ATTEMPTS, BundleError, ConnectionError, FenceError

T = TypeVar("T")


class Verdict(enum.Enum):
    """What this SDK's version fence makes of the version record a keyspace holds."""

    ABSENT = "absent"
    """The keyspace has no version record: no client has fenced it."""
    CURRENT = "current"
    """The record is VERSION_RECORD."""
    AHEAD = "ahead"
    """A higher minor or patch of this major: served, as minors are additive."""
    BEHIND = "behind"
    """A lower minor or patch of this major: the fence raises it."""
    FOREIGN = "foreign"
    """Another major or protocol, or a value that is not a version record: refused, never
    written."""

    @property
    def admitted(self) -> bool:
        """Whether this SDK serves a keyspace with the verdict without raising it first."""
        return self in (Verdict.CURRENT, Verdict.AHEAD)


def _parse_record(record: str) -> tuple[int, int, int] | None:
    if not record.startswith(VERSION_RECORD_PREFIX):
        return None
    parts = record[len(VERSION_RECORD_PREFIX) :].split(".")
    if len(parts) != 3:
        return None
    out: list[int] = []
    for s in parts:
        if not s.isascii() or not s.isdigit() or str(int(s)) != s:
            return None
        out.append(int(s))
    return out[0], out[1], out[2]


def judge_version_record(record: str) -> Verdict:
    """This SDK's verdict on a version record found in a keyspace, like the Go SDK's
    JudgeVersionRecord: CURRENT, AHEAD or BEHIND within this major, FOREIGN for anything else
    (another major or protocol, a value that is not a record, the empty string). It never returns
    ABSENT: absence is what a reader reports when there is no record to judge."""
    v = _parse_record(record)
    this = (VERSION_MAJOR, VERSION_MINOR, VERSION_PATCH)
    if v is None or v[0] != this[0]:
        return Verdict.FOREIGN
    if v[1:] > this[1:]:
        return Verdict.AHEAD
    if v[1:] < this[1:]:
        return Verdict.BEHIND
    return Verdict.CURRENT


def check_version_record(record: str) -> bool:
    """Judges a version record the fence answered: False when it is this client's version, True
    when it is ahead (a higher minor or patch of this major); a FenceError for anything else."""
    verdict = judge_version_record(record)
    if verdict is Verdict.CURRENT:
        return False
    if verdict is Verdict.AHEAD:
        return True
    raise FenceError(record, VERSION_RECORD)


def _resend_pause(n: int) -> float:
    """The pause before resend n (1 for the first): none, then 10 ms doubling up to 500 ms,
    jittered to its upper half."""
    if n <= 1:
        return 0.0
    d = min(0.010 * 2.0 ** (n - 2), 0.5)
    return d / 2 + random.random() * (d / 2)


async def resend(
    logger: logging.Logger, attempt: Callable[[], Awaitable[T]], bound: Bound | None = None
) -> T:
    """Runs attempt, one attempt of an idempotent call (which checks its arguments before it
    sends anything), again while it fails in transport. An attempt that was never sent (see
    _transport.unsent) is made again once the connection is back, within bound (the call's
    deadline: see _deadline; past it a ConnectionWaitError). One that may have been written is
    resent up to RESEND_ATTEMPTS attempts in all, the first resend at once and then after a
    doubling, jittered pause (10 ms up to 500 ms; about a second), and never past bound. Each
    resend goes out on a connection the pool opens and fences afresh, so a keyspace that came
    back foreign refuses it with a FenceError and nothing is written. The last error is raised,
    a transport failure as a ConnectionError."""
    n = 0
    waits = 0
    while True:
        try:
            return await attempt()
        except TRANSPORT_ERRORS as err:
            if bound is not None and unsent(err):
                waits += 1
                if waits == 1:
                    logger.debug(
                        "emq: the call was not sent (the server is out of reach); it waits for "
                        "the connection (%.3f s left): %s",
                        bound.left(),
                        err,
                    )
                if not await bound.wait_turn_or_time_out(waits, err):
                    raise bound.gave_up(err) from err
                continue
            n += 1
            if n >= RESEND_ATTEMPTS or (bound is not None and bound.left() <= 0):
                raise as_connection_error(err) from None
            logger.debug(
                "emq: an idempotent call failed in transport; resending it (attempt %d): %s",
                n,
                err,
            )
            await asyncio.sleep(_resend_pause(n))


async def once(
    attempt: Callable[[], Awaitable[T]],
    refence: Callable[[], Awaitable[FenceError | BundleError | None]],
    bound: Bound | None = None,
    logger: logging.Logger | None = None,
) -> T:
    """Runs attempt, one attempt of a call that is never resent once it may have run. An
    attempt that was never sent (see _transport.unsent) is made again once the connection is
    back, within bound (past it a ConnectionWaitError): nothing of it ran. Any other transport
    failure raises a ConnectionError, after refence (which opens and fences a fresh connection
    at once) ran, so that a keyspace that came back foreign is reported by this very call (the
    ConnectionError's ``fence``)."""
    waits = 0
    while True:
        try:
            return await attempt()
        except TRANSPORT_ERRORS as err:
            if bound is not None and unsent(err):
                waits += 1
                if waits == 1 and logger is not None:
                    logger.debug(
                        "emq: the call was not sent (the server is out of reach); it waits for "
                        "the connection (%.3f s left): %s",
                        bound.left(),
                        err,
                    )
                if not await bound.wait_turn_or_time_out(waits, err):
                    raise bound.gave_up(err) from err
                continue
            ce = as_connection_error(err)
            if isinstance(ce, ConnectionError):
                ce.fence = await refence()
            raise ce from None


async def fence_on(conn: AbstractConnection) -> Any:
    """Runs the fence script on one connection (EVALSHA, EVAL on NOSCRIPT) and returns its raw
    reply."""
    x = FenceCall(
        version_key=KEY_VERSION,
        bundle_key=KEY_BUNDLE,
        version=VERSION_RECORD,
        semver=VERSION,
        bundle=BUNDLE_DIGEST,
    ).exec()
    await conn.send_command("EVALSHA", x.script.sha1, len(x.keys), *x.keys, *x.argv)
    try:
        return await conn.read_response()
    except NoScriptError:
        pass
    await conn.send_command("EVAL", x.script.source, len(x.keys), *x.keys, *x.argv)
    return await conn.read_response()
