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
import logging
import random
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, TypeVar, cast, overload

from redis.asyncio import Redis
from redis.asyncio.connection import AbstractConnection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ResponseError
from redis.maint_notifications import MaintNotificationsConfig

from ._cancel import cancelling, check_cancelled, honour_cancel
from ._cluster import DEFAULT_TRY_AGAIN_MS, ClusterRedis, cluster_redis, first_fence
from ._deadline import CALL_BOUND, Bound
from ._duration import Duration, duration_ms
from ._gen.ids import MAX_NODE, IdGenerator
from ._gen.keys import KEY_LOCKS, lock_node
from ._gen.protocol import (
    VERSION,
    VERSION_RECORD,
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
from ._session import (
    Verdict,
    check_version_record,
    fence_on,
    judge_version_record,
    once,
    resend,
)
from ._transport import TRANSPORT_ERRORS, as_connection_error, unsent_connection_class
from .codec import Codec, TypedQueue
from .errors import (
    ArgumentError,
    ArgumentTypeError,
    BundleError,
    FenceError,
    NoNodeError,
    PayloadTooLargeError,
)
from .metrics import Metrics, NoMetrics
from .outputs import DEFAULT_EVENTS_MAX
from .queue import PAYLOAD_PARAM, PAYLOAD_TYPES, Queue

__all__ = [
    "DEFAULT_MAX_PAYLOAD",
    "DEFAULT_OFFLINE_WAIT_MS",
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

DEFAULT_OFFLINE_WAIT_MS: Final = 5000
"""How long a call that was never sent waits for the connection by default, in milliseconds
(connect's offline_wait_ms; TypeScript's offlineWaitMs default)."""

_SAFE_POLICIES: Final = frozenset(
    {"noeviction", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"}
)
"""The maxmemory policies that never evict a job's keys (EchoMQ sets no TTL)."""


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
    offline_wait_ms: int = DEFAULT_OFFLINE_WAIT_MS,
    offline_wait: Duration | None = None,
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

    ``offline_wait_ms`` (or ``offline_wait`` in seconds or a timedelta) is how long a call
    that was never sent waits for the connection when the caller gives it no deadline: a call
    made while the server is out of reach (the connection refused, the server restarting or
    loading its dataset) is sent once the connection is back and fenced, whatever the call is
    (claim and complete too: nothing of it ran). The caller's ``asyncio.timeout`` around the
    call bounds that wait instead, shorter or longer. Past the deadline the call raises a
    ConnectionWaitError (a ConnectionError and a TimeoutError). Default
    DEFAULT_OFFLINE_WAIT_MS (5 s, TypeScript's offlineWaitMs); 0 fails such a call at once.
    The whole call shares that deadline: its resends after a failure in transport, and on a
    cluster its TRYAGAIN resends, stop at it. connect itself does not wait: a server out of
    reach at connect raises a ConnectionError.

    ``cluster=True`` opens the client on a Redis Cluster discovered from the node at ``url``:
    ``connect_cluster([url], ...)`` (see there; it takes several startup nodes).
    """
    if node_lease is not None:
        node_lease_ms = duration_ms("node_lease", node_lease)
    if push_linger is not None:
        push_linger_ms = duration_ms("push_linger", push_linger, allow_zero=True)
    if offline_wait is not None:
        offline_wait_ms = duration_ms("offline_wait", offline_wait, allow_zero=True)
    if cluster:
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
            offline_wait_ms=offline_wait_ms,
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
        offline_wait_ms=offline_wait_ms,
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
    # A connection that cannot be opened fails its command before anything was written: the
    # pool's connections say so (an UnsentError), and the call waits for the server.
    pool = c.redis.connection_pool
    pool.connection_class = unsent_connection_class(pool.connection_class)

    async def first() -> None:
        await c.redis.ping()  # opens the first connection: the fence runs on it

    return await _open(c, first, node)


async def connect_cluster(
    startup_nodes: Sequence[str | tuple[str, int]],
    *,
    node: int | None = None,
    node_lease_ms: int = 30_000,
    max_payload: int = 0,
    logger: logging.Logger | None = None,
    coalesce: bool = True,
    push_linger_ms: float = DEFAULT_PUSH_LINGER_MS,
    push_max_batch: int = DEFAULT_PUSH_MAX_BATCH,
    metrics: Metrics | None = None,
    try_again_ms: int = DEFAULT_TRY_AGAIN_MS,
    events_max: int = DEFAULT_EVENTS_MAX,
    offline_wait_ms: int = DEFAULT_OFFLINE_WAIT_MS,
    offline_wait: Duration | None = None,
    **redis_options: Any,
) -> Client:
    """Opens a client on a Redis Cluster and fences the keyspace, as connect() does on one server.

    ``startup_nodes`` are the nodes to discover the cluster from (``redis://host:port`` or
    ``rediss://`` URLs, ``host:port`` or ``(host, port)``): at least one; list several, so that
    discovery survives a node that is down. The fence and the node lease run on the node serving
    the reserve's slot; each queue's calls on the node serving the queue's. The keyspace is fenced
    again before the first command after a node connection opened or a call failed in transport.
    A command the cluster answers TRYAGAIN (a slot split by a migration: nothing ran), or that
    meets MOVED and ASK answers for longer than redis-py follows them, is resent after a backoff
    (2 ms doubling up to 50 ms) until the deadline of the call it is part of: the caller's
    ``asyncio.timeout``, else ``offline_wait`` from the call's start (see connect), one deadline
    for every command and resend of the call. Then it raises a ConnectionWaitError (a
    ConnectionError). ``try_again_ms`` bounds it instead for the commands of your own sent
    through ``client.redis`` (default DEFAULT_TRY_AGAIN_MS). ``redis_options`` go to
    ``redis.asyncio.cluster.RedisCluster`` (password, ssl options, socket_timeout,
    max_connections, ...), except that the client always reads bytes and never lets redis-py
    resend a command after a failure of transport. The other options are connect()'s.

    Returns a Client whose ``redis`` is a ClusterRedis.
    """
    if offline_wait is not None:
        offline_wait_ms = duration_ms("offline_wait", offline_wait, allow_zero=True)
    c = Client(
        logger=logger or log,
        node_lease_ms=node_lease_ms,
        max_payload=max_payload,
        coalesce=coalesce,
        push_linger_ms=push_linger_ms,
        push_max_batch=push_max_batch,
        metrics=metrics,
        events_max=events_max,
        offline_wait_ms=offline_wait_ms,
    )
    rc = cluster_redis(
        startup_nodes,
        try_again_ms=try_again_ms,
        logger=c.logger,
        on_fenced=c._fenced,
        redis_options=redis_options,
    )
    # The Client sends through rc as through a redis.asyncio.Redis: the calls it makes (scripts,
    # reads, pipelines, the doorbell's client()) are ones ClusterRedis serves alike.
    c.redis = cast(Redis, rc)
    return await _open(c, lambda: first_fence(rc), node)


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
        offline_wait_ms: int = DEFAULT_OFFLINE_WAIT_MS,
    ) -> None:
        if isinstance(offline_wait_ms, bool) or not isinstance(offline_wait_ms, int | float):
            raise ArgumentTypeError("offline_wait_ms", "an int of milliseconds", offline_wait_ms)
        if offline_wait_ms < 0:
            raise ArgumentError(f"offline wait {offline_wait_ms!r} ms is negative")
        self.offline_wait_s = offline_wait_ms / 1000
        """How long a call that was never sent waits for the connection, in seconds, when the
        caller gives it no deadline (connect's offline_wait)."""
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
            reply = await fence_on(conn)
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
        self._fenced(r.version)

    def _fenced(self, version: str) -> None:
        """Notes a fence that found version (on one server, or the cluster's reserve node)."""
        self._found = version
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

    def _bound(self) -> Bound:
        """The deadline of a call starting now (see _deadline): the caller's asyncio.timeout, else
        offline_wait from now; the call under way's when this one is part of it."""
        b = CALL_BOUND.get()
        return b if b is not None else Bound(self.offline_wait_s)

    @honour_cancel
    async def _resend(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """Runs attempt, one attempt of an idempotent call, again while it fails in transport,
        within the call's deadline (see _session.resend)."""
        b = self._bound()
        token = CALL_BOUND.set(b)
        try:
            return await resend(self.logger, attempt, b)
        finally:
            CALL_BOUND.reset(token)

    @honour_cancel
    async def _once(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """Runs attempt, one attempt of a call that is never resent once it may have run (one that
        was never sent waits for the connection within the call's deadline); a transport failure
        raises a ConnectionError, and the client then opens and fences a fresh connection at once,
        so that a keyspace that came back foreign is reported by this very call (see
        _session.once)."""
        b = self._bound()
        token = CALL_BOUND.set(b)
        try:
            return await once(attempt, self._refence, b, self.logger)
        finally:
            CALL_BOUND.reset(token)

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

    def _check_payload(self, payload: bytes | str) -> None:
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
        without a TTL is warned about, and the payload cap is lowered to proto-max-bulk-len. On
        a cluster it is read from every node the client discovered, primaries and replicas
        (CONFIG GET answers for the node it is sent to, and each node has its own): a node with
        an evicting policy is warned about by name (a replica's matters once it is promoted),
        and the cap is the lowest node's, since a job may land on any primary (a queue's slot
        moves) and be replicated to any replica. A node that joins the cluster later is not
        read."""
        rc = self.redis
        if isinstance(rc, ClusterRedis):
            nodes: list[Any] = list(rc.get_nodes())
        else:
            nodes = [None]
        for node in nodes:
            try:
                if node is None:
                    m: Any = await rc.config_get("maxmemory-policy", "proto-max-bulk-len")
                else:
                    m = await rc.config_get(
                        "maxmemory-policy", "proto-max-bulk-len", target_nodes=node
                    )
            except ResponseError as err:
                self.logger.debug("emq: cannot read the server's configuration: %s", err)
                continue
            where = "" if node is None else f" on node {node.name}"
            # Bytes from one server; text from a cluster node (redis-py's cluster client
            # decodes CONFIG GET's reply itself).
            got = {
                (k.decode() if isinstance(k, bytes) else str(k)): (
                    v.decode() if isinstance(v, bytes) else str(v)
                )
                for k, v in dict(m).items()
            }
            policy = got.get("maxmemory-policy", "")
            if policy and policy not in _SAFE_POLICIES:
                self.logger.warning(
                    "emq: the server may evict keys without a TTL, and so lose jobs; set "
                    "maxmemory-policy to noeviction (it is %s%s)",
                    policy,
                    where,
                )
            try:
                bulk = int(got.get("proto-max-bulk-len", "0"))
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
