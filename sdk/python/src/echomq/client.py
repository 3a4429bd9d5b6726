"""connect(): a fenced connection to an EchoMQ keyspace, on redis-py's asyncio client.

Every connection the client's pool opens is fenced before it carries a command of the caller's:
the pool's connections run the fence script in their connect hook (redis-py's
``redis_connect_func``), right after the handshake. So after a restart, a failover or a
``CLIENT KILL`` the first command on the replacement connection meets a keyspace that was
fenced on it: a fresh keyspace is claimed again, a foreign one refuses the command with a
FenceError and nothing of the caller's runs there.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import random
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar, overload

from redis.asyncio import Redis
from redis.asyncio.connection import AbstractConnection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import NoScriptError, ResponseError
from redis.maint_notifications import MaintNotificationsConfig

from ._cancel import cancelling, check_cancelled, honour_cancel
from ._duration import Duration, duration_ms
from ._gen.ids import MAX_NODE, IdGenerator
from ._gen.keys import KEY_BUNDLE, KEY_LOCKS, KEY_VERSION, lock_node
from ._gen.protocol import (
    VERSION,
    VERSION_MAJOR,
    VERSION_MINOR,
    VERSION_PATCH,
    VERSION_RECORD,
    VERSION_RECORD_PREFIX,
    WORK_KIND,
    Kind,
)
from ._gen.scripts import (
    BUNDLE_DIGEST,
    LOCK_HELD,
    FenceCall,
    LockCall,
    UnlockCall,
    script_error,
)
from ._push import DEFAULT_PUSH_LINGER_MS, DEFAULT_PUSH_MAX_BATCH, Pusher
from ._transport import TRANSPORT_ERRORS, as_connection_error
from .codec import Codec, TypedQueue
from .errors import (
    RESEND_ATTEMPTS,
    ArgumentError,
    ArgumentTypeError,
    BundleError,
    ConnectionError,
    FenceError,
    NoNodeError,
    PayloadTooLargeError,
)
from .metrics import Metrics, NoMetrics
from .outputs import DEFAULT_EVENTS_MAX
from .queue import PAYLOAD_PARAM, PAYLOAD_TYPES, Queue

__all__ = [
    "DEFAULT_MAX_PAYLOAD",
    "Client",
    "Verdict",
    "check_version_record",
    "connect",
    "judge_version_record",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_MAX_PAYLOAD: Final = 512 * 1024 * 1024
"""Redis's default proto-max-bulk-len, the payload cap when the server's cannot be read."""

_SAFE_POLICIES: Final = frozenset(
    {"noeviction", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"}
)
"""The maxmemory policies that never evict a job's keys (EchoMQ sets no TTL)."""


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


async def connect(
    url: str = "redis://127.0.0.1:6379/0",
    *,
    node: int | None = None,
    node_lease_ms: int = 30_000,
    max_payload: int = 0,
    logger: logging.Logger | None = None,
    coalesce: bool = True,
    push_linger_ms: float = DEFAULT_PUSH_LINGER_MS,
    push_max_batch: int = DEFAULT_PUSH_MAX_BATCH,
    metrics: Metrics | None = None,
    node_lease: Duration | None = None,
    push_linger: Duration | None = None,
    cluster: bool = False,
    events_max: int = DEFAULT_EVENTS_MAX,
    **redis_options: Any,
) -> Client:
    """Opens a client and fences the keyspace.

    It claims a fresh keyspace with this version, raises a lower minor of this major, admits a
    higher minor (logged as ahead), refuses anything else with a FenceError, and refuses a
    different bundle recorded for this version with a BundleError. Every connection the client
    opens later is fenced the same way before its first command. Unless ``node`` is given, it
    leases a snowflake node from the reserve's locks and renews it in the background.

    ``url`` is a redis:// (or rediss://) URL; ``redis_options`` go to ``redis.asyncio.Redis``
    (socket_timeout, password, ssl options, ...), except that the client always reads bytes
    (decode_responses=False) and never lets redis-py resend a command on its own (the client
    resends only idempotent calls). A server that cannot be reached raises a ConnectionError.

    Concurrent ``Queue.push`` calls of one queue are coalesced into push_many calls (see
    Queue.push): ``push_linger_ms`` bounds how long a push waits while an earlier batch of its
    queue is in flight, ``push_max_batch`` caps the jobs of one call (and of push_batch's chunks),
    and ``coalesce=False`` makes every push a call of its own. ``metrics`` receives the client's
    counts (jobs enqueued) and is the default of its workers'. ``node_lease`` and
    ``push_linger`` give node_lease_ms and push_linger_ms in seconds (an int, a float or a
    datetime.timedelta) instead.

    ``events_max`` (echomq 2.4.0) is the approximate bound of each queue's events stream for the
    client's calls that write it (Queue.revive, fail, report_progress, ...; its workers' default):
    DEFAULT_EVENTS_MAX; 0 writes no events.

    ``cluster=True`` opens the client on a Redis Cluster discovered from the node at ``url``:
    ``connect_cluster([url], ...)`` (see there; it takes several startup nodes).
    """
    if node_lease is not None:
        node_lease_ms = duration_ms("node_lease", node_lease)
    if push_linger is not None:
        push_linger_ms = duration_ms("push_linger", push_linger, allow_zero=True)
    if cluster:
        from ._cluster import connect_cluster

        return await connect_cluster(
            [url],
            node=node,
            node_lease_ms=node_lease_ms,
            max_payload=max_payload,
            logger=logger,
            coalesce=coalesce,
            push_linger_ms=push_linger_ms,
            push_max_batch=push_max_batch,
            metrics=metrics,
            events_max=events_max,
            **redis_options,
        )
    for k in ("decode_responses", "retry", "redis_connect_func", "connection_pool"):
        if k in redis_options:
            raise TypeError(f"emq: connect: the client sets {k} itself")
    c = Client(
        logger=logger or log,
        node_lease_ms=node_lease_ms,
        max_payload=max_payload,
        coalesce=coalesce,
        push_linger_ms=push_linger_ms,
        push_max_batch=push_max_batch,
        metrics=metrics,
        events_max=events_max,
    )
    # redis-py 8 skips its check of a pooled connection's state before a command ("has the
    # server closed it?") while maintenance notifications are enabled, which they are by default
    # ("auto"): the first command after a server restart then goes out on the dead connection and
    # fails, though it was never received. EchoMQ talks to open-source Redis and Valkey, which
    # send no such notifications; a caller who wants them passes maint_notifications_config.
    redis_options.setdefault("maint_notifications_config", MaintNotificationsConfig(enabled=False))
    c.redis = Redis.from_url(
        url,
        decode_responses=False,
        retry=Retry(NoBackoff(), 0),
        redis_connect_func=c._on_connect,
        **redis_options,
    )

    async def first() -> None:
        await c.redis.ping()  # opens the first connection: the fence runs on it

    return await _open(c, first, node)


async def _open(c: Client, first: Callable[[], Awaitable[None]], node: int | None) -> Client:
    """The rest of connect and connect_cluster once ``c.redis`` is set: ``first`` opens the first
    connection (and fences it); then the server's configuration is read and a snowflake node
    leased (renewed in the background), or ``node`` fixed. A failure in transport raises a
    ConnectionError, a cancellation redis-py swallowed is raised again, and any failure closes
    ``c.redis``."""
    before = cancelling()
    try:
        try:
            await first()
            await c._read_server_config()
            if node is not None:
                c._fix_node(node)
            else:
                await c._lease_node()
            check_cancelled(before)  # a cancellation redis-py swallowed
        except TRANSPORT_ERRORS as err:
            check_cancelled(before)
            ce = as_connection_error(err)
            if ce is err:
                raise
            raise ce from err  # the transport's error stays the cause (CLUSTERDOWN on a cluster)
    except BaseException:
        await c.redis.aclose()
        raise
    if node is None:
        c._start_renewal()
    return c


class Client:
    """A fenced connection to an EchoMQ keyspace: redis-py's asyncio client whose every
    connection is fenced as it opens. Use connect(); safe for concurrent use by the tasks of one
    event loop."""

    redis: Redis
    """The underlying redis-py client, for commands of your own (its connections are fenced
    too)."""

    def __init__(
        self,
        *,
        logger: logging.Logger,
        node_lease_ms: int,
        max_payload: int,
        coalesce: bool = True,
        push_linger_ms: float = DEFAULT_PUSH_LINGER_MS,
        push_max_batch: int = DEFAULT_PUSH_MAX_BATCH,
        metrics: Metrics | None = None,
        events_max: int = DEFAULT_EVENTS_MAX,
    ) -> None:
        if isinstance(events_max, bool) or not isinstance(events_max, int):
            raise ArgumentTypeError("events_max", "an int", events_max)
        if events_max < 0:
            raise ArgumentError(f"events max {events_max!r} is not a non-negative integer")
        self.events_max = events_max
        """The approximate bound of each queue's events stream for the client's calls that write
        it (echomq 2.4.0); 0 writes no events."""
        self.logger = logger
        """Where the client's notices go."""
        self.coalesce = coalesce
        """Whether concurrent pushes of one queue are coalesced into push_many calls."""
        self.push_linger_ms = max(0.0, float(push_linger_ms))
        """How long a coalesced push waits, at most, while a batch of its queue is in flight."""
        self.push_max_batch = max(1, int(push_max_batch))
        """The most jobs of one push_many call."""
        self.metrics: Metrics = metrics or NoMetrics()
        """Where the client's counts go (jobs enqueued); the default of its workers'."""
        self._pushers: dict[Any, Pusher] = {}
        """The push coalescer of each queue (and of each set of push options), made on first use."""
        self.owner = secrets.token_hex(8)
        """This client's lock owner token."""
        self._max_payload = (
            max_payload if 0 < max_payload < DEFAULT_MAX_PAYLOAD else DEFAULT_MAX_PAYLOAD
        )
        self._lease_ms = node_lease_ms if node_lease_ms > 0 else 30_000
        self._found = ""
        self._fences = 0
        self._gen: IdGenerator | None = None
        self._lease_until = 0.0
        self._fixed = False
        self._renewal: asyncio.Task[None] | None = None
        self._closed = False

    # ------------------------------------------------------------ the fence

    async def _on_connect(self, conn: AbstractConnection) -> None:
        """redis-py's connect hook: the handshake, then the fence, on every new connection."""
        await conn.on_connect()
        try:
            reply = await _fence_on(conn)
        except ResponseError as err:
            # An answer, not a failure to talk: the key of another type (WRONGTYPE), an ACL
            # without the fence's keys (NOPERM), ... The fence refused; nothing was written.
            await conn.disconnect()
            why = script_error(FenceCall.SCRIPT.name, err)
            raise FenceError("", detail=f"the fence script was refused: {why}") from err
        except BaseException:
            await conn.disconnect()
            raise
        try:
            r = FenceCall.decode(reply)
            ahead = check_version_record(r.version)
            if r.bundle != BUNDLE_DIGEST:
                raise BundleError(VERSION, r.bundle, BUNDLE_DIGEST)
        except BaseException:
            await conn.disconnect()
            raise
        if ahead and self._found != r.version:
            self.logger.info(
                "emq: the keyspace is ahead of this client; minors are additive, so it is served "
                "(keyspace %s, client %s)",
                r.version,
                VERSION_RECORD,
            )
        self._found = r.version
        self._fences += 1

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"fences={self._fences}"
        return f"Client(node={self.node}, version={self._found!r}, {state})"

    @property
    def version_found(self) -> str:
        """The version record the last fence found: this version, or a higher minor of this
        major."""
        return self._found

    @property
    def fences(self) -> int:
        """How many connections the client has fenced so far."""
        return self._fences

    # ------------------------------------------------------------ calls

    @honour_cancel
    async def resend(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """Runs attempt, one attempt of an idempotent call (which checks its arguments before it
        sends anything), again while it fails in transport: up to RESEND_ATTEMPTS attempts, the
        first resend at once and then after a doubling, jittered pause (10 ms up to 500 ms; about
        a second in all). Each resend goes out on a connection the pool opens and fences afresh,
        so a keyspace that came back foreign refuses it with a FenceError and nothing is written.
        Bound the whole with ``asyncio.timeout``. The last error is raised, a transport failure as
        a ConnectionError."""
        n = 0
        while True:
            try:
                return await attempt()
            except TRANSPORT_ERRORS as err:
                n += 1
                if n >= RESEND_ATTEMPTS:
                    raise as_connection_error(err) from None
                self.logger.debug(
                    "emq: an idempotent call failed in transport; resending it (attempt %d): %s",
                    n,
                    err,
                )
                await asyncio.sleep(_resend_pause(n))

    @honour_cancel
    async def once(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """Runs attempt, one attempt of a call that is never resent (it may or may not have run
        when the connection failed). A transport failure raises a ConnectionError; the client
        then opens and fences a fresh connection at once, so that a keyspace that came back
        foreign is reported by this very call (the ConnectionError's ``fence``)."""
        try:
            return await attempt()
        except TRANSPORT_ERRORS as err:
            ce = as_connection_error(err)
            if isinstance(ce, ConnectionError):
                ce.fence = await self._refence()
            raise ce from None

    async def _refence(self) -> FenceError | BundleError | None:
        # Other pooled connections may be stale too: each fails at once, until one is replaced.
        for _ in range(3):
            try:
                await self.redis.ping()
            except (FenceError, BundleError) as err:
                return err
            except TRANSPORT_ERRORS:
                continue
            except Exception:
                return None
            return None
        return None

    # ------------------------------------------------------------ the rest

    @property
    def max_payload(self) -> int:
        """The payload cap in bytes."""
        return self._max_payload

    def check_payload(self, payload: bytes | str) -> None:
        """Raises a PayloadTooLargeError when payload is over the cap, an ArgumentTypeError (a
        TypeError) when it is neither bytes nor str."""
        if isinstance(payload, str):
            n = len(payload.encode())
        elif isinstance(payload, bytes | bytearray | memoryview):
            n = len(payload)
        else:
            raise ArgumentTypeError(PAYLOAD_PARAM, PAYLOAD_TYPES, payload)
        if n > self._max_payload:
            raise PayloadTooLargeError(n, self._max_payload)

    @overload
    def queue(self, name: str) -> Queue: ...
    @overload
    def queue(self, name: str, *, codec: Codec[T]) -> TypedQueue[T]: ...

    def queue(self, name: str, *, codec: Codec[T] | None = None) -> Queue | TypedQueue[T]:
        """Returns the handle of the queue named name; a malformed name raises a QueueNameError
        before anything is sent. With a codec (``codec=echomq.JSONCodec(Order)``) it is a
        TypedQueue whose push takes values the codec encodes and whose workers' handlers get
        TypedJobs carrying the decoded value."""
        if not isinstance(name, str):
            raise ArgumentTypeError("name", "a str", name)
        q = Queue(self, name)
        return q if codec is None else TypedQueue(q, codec)

    @property
    def node(self) -> int:
        """The snowflake node the client mints with, or -1 when it holds none."""
        return self._gen.node if self._gen is not None else -1

    def mint(self, kind: Kind = WORK_KIND) -> str:
        """Returns a fresh id of kind (default the work kind) from the client's node; a
        NoNodeError while the node lease is not surely held."""
        if self._gen is None or time.time() * 1000 >= self._lease_until:
            raise NoNodeError()
        return self._gen.mint(kind)

    async def _read_server_config(self) -> None:
        """Reads what the server's configuration means for jobs: a policy that may evict keys
        without a TTL is warned about, and the payload cap is lowered to proto-max-bulk-len."""
        try:
            m: Any = await self.redis.config_get("maxmemory-policy", "proto-max-bulk-len")
        except ResponseError as err:
            self.logger.debug("emq: cannot read the server's configuration: %s", err)
            return
        policy = m.get(b"maxmemory-policy", b"").decode()
        if policy and policy not in _SAFE_POLICIES:
            self.logger.warning(
                "emq: the server may evict keys without a TTL, and so lose jobs; set "
                "maxmemory-policy to noeviction (it is %s)",
                policy,
            )
        try:
            bulk = int(m.get(b"proto-max-bulk-len", b"0"))
        except ValueError:
            bulk = 0
        if 0 < bulk < self._max_payload:
            self._max_payload = bulk

    def _fix_node(self, node: int) -> None:
        self._gen = IdGenerator(node)
        self._fixed = True
        self._lease_until = float("inf")

    async def _lease_node(self) -> None:
        """Takes a free snowflake node from the reserve's locks, starting at a random node so that
        clients spread out."""
        start = random.randrange(MAX_NODE + 1)
        for i in range(MAX_NODE + 1):
            n = (start + i) % (MAX_NODE + 1)
            if await self._lock_node(n):
                self._gen = IdGenerator(n)
                return
        raise NoNodeError(f"all {MAX_NODE + 1} nodes are leased")

    async def _lock_node(self, n: int) -> bool:
        start = time.time() * 1000
        call = LockCall(locks=KEY_LOCKS, name=lock_node(n), owner=self.owner, ttl_ms=self._lease_ms)
        deadline = await call.run(self.redis)
        if deadline == LOCK_HELD:
            return False
        self._lease_until = start + self._lease_ms - self._lease_ms / 10
        return True

    def _start_renewal(self) -> None:
        self._renewal = asyncio.create_task(self._renew(), name="emq node lease")

    async def _renew(self) -> None:
        """Renews the node lease every third of its length until close; a lease lost to another
        owner is replaced by a fresh one."""
        while not self._closed:
            await asyncio.sleep(self._lease_ms / 3000)
            g = self._gen
            if g is None:
                continue
            try:
                if not await self._lock_node(g.node):
                    self.logger.error(
                        "emq: the node lease was lost to another owner; leasing a new node "
                        "(node %d)",
                        g.node,
                    )
                    self._lease_until = 0
                    self._gen = None
                    await self._lease_node()
            except asyncio.CancelledError:
                raise
            except Exception as err:
                self.logger.warning(
                    "emq: renewing the node lease failed; retrying (node %d): %s", g.node, err
                )

    @honour_cancel
    async def close(self) -> None:
        """Releases the node lease and closes the connections."""
        if self._closed:
            return
        self._closed = True
        if self._renewal is not None:
            self._renewal.cancel()
            try:
                await self._renewal
            except asyncio.CancelledError:
                pass
        g = self._gen
        if g is not None and not self._fixed:
            try:
                async with asyncio.timeout(1):
                    await UnlockCall(locks=KEY_LOCKS, name=lock_node(g.node), owner=self.owner).run(
                        self.redis
                    )
            except Exception:
                pass  # the lease expires by itself
        await self.redis.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def _fence_on(conn: AbstractConnection) -> Any:
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
