"""Queue policies (echomq 2.7.0): a pause and a concurrency cap, kept by the queue itself; and
(echomq 2.8.0) a rate limit: at most so many jobs started in any window of a period, across every
worker.

While a queue has a policy its leased jobs live in its running set, and its active key holds the
tripwire: a string naming the least minors that claim and that settle there ("7 7" for a pause or
a cap; "8 7" while the queue has a rate limit, which binds claimers only: a 2.7 claim is refused,
a 2.7 settle goes through). Every script of a release from ACTIVE_TRIPWIRE_FLOOR on that declares
the active key fails WRONGTYPE on it before it writes anything, so an older client is refused,
never silently wrong; the 2.7 and 2.8 twins serve both layouts. This module holds what the
queue's policy calls share: the record they return, the refusal of a deployment an older client
still runs on, and the typed error of a pre-2.7 call meeting the tripwire.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from redis.exceptions import ResponseError

from ._gen.errors import PolicyError
from ._gen.keys import ACTIVE_TRIPWIRE_FLOOR
from ._gen.scripts import CONFIGURE_POLICY_RATE_LIMIT_MAX, CONFIGURE_POLICY_RATE_PERIOD_MS_MAX
from .errors import ArgumentError

__all__ = [
    "ACTIVE_TRIPWIRE_FLOOR",
    "RATE_LIMIT_MAX",
    "RATE_PERIOD_MAX_MS",
    "PolicyFloorError",
    "QueuePolicy",
]

RATE_LIMIT_MAX: Final = CONFIGURE_POLICY_RATE_LIMIT_MAX
"""The most starts a rate limit allows per period (echomq 2.8.0: configure_policy's bound)."""
RATE_PERIOD_MAX_MS: Final = CONFIGURE_POLICY_RATE_PERIOD_MS_MAX
"""The longest period of a rate limit, in milliseconds: a day (echomq 2.8.0: configure_policy's
bound); the shortest is 1 ms."""

_SEMVER: Final = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")


@dataclass(frozen=True, slots=True)
class QueuePolicy:
    """A queue's policy as a call left it (echomq 2.7.0): Queue.pause, resume, set_concurrency,
    set_policy, set_rate_limit (echomq 2.8.0) and policy return it."""

    paused: bool
    """Whether the queue is paused: claims lease nothing, producers keep enqueueing."""
    concurrency: int
    """The cap on the queue's jobs leased at once, across every worker; 0: none."""
    requires: int
    """The minor the queue's tripwire names (the later of its claim and settle minors: 7 for a
    pause or a cap, 8 with a rate limit); 0: the queue has no policy (the classic layout)."""
    leased: int
    """How many of the queue's jobs are leased (in either layout)."""
    rate_limit: int = 0
    """(echomq 2.8.0) The starts (leases) the queue's rate limit allows in any window of
    rate_period_ms, across every worker; 0: no limit."""
    rate_period_ms: int = 0
    """(echomq 2.8.0) The rate limit's period in milliseconds; 0: no limit."""
    admit_in_ms: int = 0
    """(echomq 2.8.0) The milliseconds until the rate limit admits the next start, as the server
    read it; 0: one is admitted now, or there is no limit."""

    @property
    def has_policy(self) -> bool:
        """Whether the queue has a policy, and so the tripwire."""
        return self.requires > 0


def version_tuple(v: str) -> tuple[int, int, int] | None:
    """major.minor.patch of a release's version, or None for text that is not one."""
    m = _SEMVER.fullmatch(v)
    if m is None:
        return None
    return int(m[1]), int(m[2]), int(m[3])


def below_floor(versions: Iterable[str], floor: str = ACTIVE_TRIPWIRE_FLOOR) -> list[str]:
    """The versions (fields of the reserve's bundle record) of releases below floor, sorted; a
    field that is not a version is not a release and is passed over."""
    f = version_tuple(floor)
    if f is None:
        raise ValueError(f"emq: the tripwire floor {floor!r} is not a version")
    out = []
    for v in versions:
        t = version_tuple(v)
        if t is not None and t < f:
            out.append((t, v))
    return [v for _, v in sorted(out)]


class PolicyFloorError(ArgumentError):
    """A pause, a concurrency cap or a rate limit that would lay a queue's tripwire, refused
    before anything is written (echomq 2.7.0): the deployment's bundle record names a release
    below ACTIVE_TRIPWIRE_FLOOR, whose scripts write before they read the active key, so a client
    of it still running would not be refused by the tripwire. Pass ``force=True`` only when no
    such client is left."""

    def __init__(self, queue: str, versions: list[str], floor: str = ACTIVE_TRIPWIRE_FLOOR) -> None:
        super().__init__(
            f"queue {queue}: the deployment's bundle record names {', '.join(versions)}, below "
            f"{floor}, the first release the tripwire of a policy refuses safely; a client of "
            f"it would write to the queue regardless (force=True only when no such client is left)"
        )
        self.queue = queue
        """The queue whose policy was refused."""
        self.versions = versions
        """The recorded versions below the floor."""
        self.floor = floor
        """ACTIVE_TRIPWIRE_FLOOR."""


def is_wrongtype(err: BaseException) -> bool:
    """Whether err is the server's WRONGTYPE refusal."""
    return isinstance(err, ResponseError) and str(err).startswith("WRONGTYPE")


def legacy_policy_error(queue: str, script: str, use: str) -> PolicyError:
    """The typed error of a pre-2.7 call (its script) that met the tripwire of a queue with a
    policy: it cannot honour the policy, so the server refused it before any write."""
    return PolicyError(
        f"queue {queue} has a policy (paused, a concurrency cap or a rate limit), which the "
        f"{script} script cannot honour, and refused it; nothing was written: use {use}",
        script,
    )
