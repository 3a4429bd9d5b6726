"""The client on a Redis Cluster (connect_cluster, in client.py), through redis-py's asyncio
RedisCluster.

redis-py routes a command by its key (a script call by its first KEYS) to the primary serving
the key's slot, and follows MOVED (it patches its slot table, then resends) and ASK (ASKING, then
the command, on the importing node) by itself. Every key of a queue shares the queue's hash tag
and the reserve's keys share theirs, so each script call goes whole to one node: the queue's, or
the reserve slot's for the fence and the node locks. NOSCRIPT is per node: a call answered
NOSCRIPT is sent again as EVAL, which routes where the EVALSHA went, and loads the script there.

What this module adds to RedisCluster:

- TRYAGAIN (a slot split by a migration, the keys of a multi-key command on both sides) is
  decided before the command runs, so a command answered TRYAGAIN is resent, with a backoff of
  2 ms doubling up to 50 ms, until the slot settles or ``try_again_ms`` passed; then the TRYAGAIN
  is raised as a ConnectionError (retryable: nothing ran). CLUSTERDOWN and a slot no node serves
  are raised as a ConnectionError too (nothing ran), never taken for the fence's refusal.
- The fence: the keyspace's version record lives on the reserve slot's node only, so a
  connection to another node cannot be fenced on itself. Instead the client fences the keyspace
  (on the reserve's node) before the first command after any node connection opened or any call
  failed in transport (the node restarted, failed over or closed it): a keyspace that came back
  foreign refuses that command with a FenceError, and nothing of it runs.
- A pipeline goes to each slot's node (one batch per node); its TRYAGAIN answers are resent one
  by one, and a failure of transport raises, as on one server.
- The worker's doorbell: a blocking pop on a connection of its own to the node serving the
  queue's slot, followed to the new node when the slot moved.
- redis-py's own reaction to a run of MOVED answers or to CLUSTERDOWN, closing every node
  connection (and with them the replies of other tasks' commands in flight), becomes a
  rediscovery of the slots before the next command.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import Any, ClassVar, cast
from urllib.parse import unquote, urlsplit

from redis.asyncio.cluster import ClusterNode, ClusterPipeline, RedisCluster
from redis.asyncio.connection import AbstractConnection, Connection, DefaultParser
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import (
    AskError,
    ClusterDownError,
    ClusterError,
    MovedError,
    NoScriptError,
    RedisClusterException,
    ResponseError,
    SlotNotCoveredError,
)
from redis.maint_notifications import MaintNotificationsConfig

from ._deadline import CALL_BOUND, Bound
from ._gen.keys import KEY_BUNDLE, KEY_VERSION
from ._gen.protocol import VERSION, VERSION_RECORD
from ._gen.scripts import BUNDLE_DIGEST, FenceCall, script_error
from ._session import check_version_record
from ._transport import TRANSPORT_ERRORS, TryAgainError, UnsentError, unsent_connection_class
from .errors import BundleError, ConnectionError, ConnectionWaitError, FenceError

__all__ = ["DEFAULT_TRY_AGAIN_MS", "ClusterRedis", "cluster_redis", "first_fence"]

log = logging.getLogger("echomq.client")

DEFAULT_TRY_AGAIN_MS = 10_000
"""How long a command answered TRYAGAIN is resent for by default, in milliseconds."""

_CLUSTER_STATE_ERRORS = (ClusterDownError, SlotNotCoveredError)
"""Answers that say the cluster's layout changed under the client (a failover, a slot unserved):
like a failure of transport, they make the client fence again before its next command."""


_IN_COMMAND: ContextVar[bool] = ContextVar("echomq_cluster_in_command", default=False)
"""Set while a command of ClusterRedis is being sent (see ClusterRedis.aclose)."""

_LEAVE_TRY_AGAIN: ContextVar[frozenset[tuple[Any, ...]]] = ContextVar(
    "echomq_cluster_leave_try_again", default=frozenset()
)
"""The commands (their arguments) of the pipeline being executed whose TRYAGAIN answer is left to
the caller instead of resent (_Pipeline.leave_try_again): redis-py sends a pipelined command
answered ASK again through ClusterRedis.execute_command, which reads it here."""


_TryAgain = TryAgainError
"""TRYAGAIN as this module's parser reads it: a plain ResponseError to redis-py (which would
otherwise resend it a fixed 16 times within half a second), resent here until the slot settles or
the budget is spent (a pipelined command marked with _Pipeline.leave_try_again is not)."""


class _Parser(DefaultParser):  # type: ignore[valid-type,misc]
    """redis-py's parser, with TRYAGAIN read as _TryAgain."""

    EXCEPTION_CLASSES: ClassVar = {**DefaultParser.EXCEPTION_CLASSES, "TRYAGAIN": _TryAgain}


_NUMKEYS_VERBS = frozenset({"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"})
"""The verbs whose KEYS follow a numkeys argument."""

_KEYLESS_VERBS = frozenset(
    {
        "ACL",
        "CLIENT",
        "CLUSTER",
        "COMMAND",
        "CONFIG",
        "DBSIZE",
        "ECHO",
        "FUNCTION",
        "HELLO",
        "INFO",
        "LATENCY",
        "MEMORY",
        "PING",
        "ROLE",
        "SCRIPT",
        "SLOWLOG",
        "TIME",
    }
)
"""Verbs that take no key: they go to any node."""


def _routing_key(verb: str, args: Sequence[Any]) -> Any:
    """The key a command is routed by: a script's first KEYS (none when it has none), none for a
    keyless command, else the argument after the verb."""
    v = verb.upper()
    if v in _NUMKEYS_VERBS:
        return args[3] if len(args) > 3 and int(args[2]) > 0 else None
    if v in _KEYLESS_VERBS or len(args) < 2:
        return None
    return args[1]


def _try_again_pause(n: int) -> float:
    """The pause before TRYAGAIN resend n (0 for the first): 2 ms doubling up to 50 ms, jittered to
    its upper half."""
    d = min(0.002 * 2.0**n, 0.050)
    return d / 2 + random.random() * (d / 2)


class ClusterRedis(RedisCluster):
    """redis-py's asyncio RedisCluster as the client uses it (see the module's doc): TRYAGAIN
    resent within a budget, the keyspace fenced again before the first command after a node
    connection opened or a call failed in transport, pipelines that resend TRYAGAIN and raise on
    a failure of transport, and ``client()``, the worker's doorbell connection. It is what
    ``Client.redis`` is on a cluster; use it for commands of your own."""

    def __init__(
        self,
        *,
        try_again_ms: int = DEFAULT_TRY_AGAIN_MS,
        logger: logging.Logger | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.try_again_ms = max(0, int(try_again_ms))
        """How long a command answered TRYAGAIN is resent for, in milliseconds."""
        self.logger = logger or log
        self.version_found = ""
        """The version record the last fence found."""
        self.fences = 0
        """How many times the keyspace was fenced."""
        self._generation = 0
        self._fenced = -1
        self._fencing: asyncio.Task[None] | None = None
        self._closing = False
        self._on_fenced: Callable[[str], None] | None = None
        """Called with the version record each fence found."""
        # Every node connection opened from now on counts (the fence runs before the next
        # command), and reads TRYAGAIN as _TryAgain. The startup nodes were made in
        # RedisCluster.__init__ with a copy of the options: they get them too.
        extra: dict[str, Any] = {"redis_connect_func": self._on_connect, "parser_class": _Parser}
        self.connection_kwargs.update(extra)
        # A node connection that cannot be opened fails its command before anything was
        # written (an UnsentError): the call waits for the node within its deadline.
        cls = unsent_connection_class(self.connection_kwargs.get("connection_class", Connection))
        self.connection_kwargs["connection_class"] = cls
        for n in [*self.startup_nodes, *self.nodes_manager.startup_nodes.values()]:
            n.connection_kwargs.update(extra)
            n.connection_class = cls

    # ------------------------------------------------------------ the fence

    async def _on_connect(self, conn: AbstractConnection) -> None:
        """The node connections' connect hook: the handshake, then a mark that the keyspace is
        fenced again before the next command."""
        await conn.on_connect()
        self._generation += 1

    def _refence(self) -> None:
        """Makes the next command fence first (a call failed in transport)."""
        self._generation += 1

    @property
    def _is_fenced(self) -> bool:
        """Whether no node connection opened and no call failed since the last fence."""
        return self._fenced == self._generation

    async def _ensure(self) -> None:
        """Fences the keyspace when a node connection opened or a call failed in transport since
        the last fence; one comparison when neither happened. Concurrent callers share one
        fence."""
        while self._fenced != self._generation:
            t = self._fencing
            if t is None:
                t = asyncio.ensure_future(self._fence(self._generation))
                # Retrieved here, so that a fence every waiter stopped waiting for is not
                # reported as never retrieved.
                t.add_done_callback(lambda f: f.cancelled() or f.exception())
                self._fencing = t
            await asyncio.shield(t)

    async def _ensure_unsent(self) -> None:
        """_ensure before a command: a fence that failed in transport is the failure of a
        command that was never sent (an UnsentError), whatever became of the fence script."""
        try:
            await self._ensure()
        except UnsentError:
            raise
        except TRANSPORT_ERRORS as err:
            raise UnsentError(f"the version fence before the command failed: {err}") from err

    async def _fence(self, g: int) -> None:
        try:
            x = FenceCall(
                version_key=KEY_VERSION,
                bundle_key=KEY_BUNDLE,
                version=VERSION_RECORD,
                semver=VERSION,
                bundle=BUNDLE_DIGEST,
            ).exec()
            try:
                try:
                    reply = await self._send(
                        "EVALSHA", x.script.sha1, len(x.keys), *x.keys, *x.argv
                    )
                except NoScriptError:
                    reply = await self._send("EVAL", x.script.source, len(x.keys), *x.keys, *x.argv)
            except ResponseError as err:
                # An answer, not a failure to talk: WRONGTYPE, NOPERM, ... The fence refused.
                why = script_error(FenceCall.SCRIPT.name, err)
                raise FenceError("", detail=f"the fence script was refused: {why}") from err
            r = FenceCall.decode(reply)
            ahead = check_version_record(r.version)
            if r.bundle != BUNDLE_DIGEST:
                raise BundleError(VERSION, r.bundle, BUNDLE_DIGEST)
            if ahead and self.version_found != r.version:
                self.logger.info(
                    "emq: the keyspace is ahead of this client; minors are additive, so it is "
                    "served (keyspace %s, client %s)",
                    r.version,
                    VERSION_RECORD,
                )
            self.version_found = r.version
            self.fences += 1
            if self._on_fenced is not None:
                self._on_fenced(r.version)
            self._fenced = g
        finally:
            self._fencing = None

    # ------------------------------------------------------------ commands

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        """Fences first when needed (see ensure), then sends the command as RedisCluster does,
        again while the cluster answers TRYAGAIN (up to try_again_ms)."""
        await self._ensure_unsent()
        if args and isinstance(args[0], bytes) and "target_nodes" not in kwargs:
            return await self._send_raw(*args, **kwargs)
        return await self._send(*args, **kwargs)

    async def _send_raw(self, *args: Any, **kwargs: Any) -> Any:
        """A command whose verb is bytes: its reply unparsed, as redis.asyncio.Redis gives it
        (redis-py's reply callbacks are keyed by the verb's text). It goes to the node of its
        routing key (a script's first KEYS, else the argument after the verb) or, keyless, to the
        default node, with its verb in lower case, which the server takes alike and no callback
        is registered for."""
        verb = args[0].decode()
        key = _routing_key(verb, args)
        if self._initialize:
            await self.initialize()
        node = self.get_node_from_key(key) if key is not None else self.get_default_node()
        return await self._send(verb.lower(), *args[1:], target_nodes=node, **kwargs)

    async def _send(self, *args: Any, **kwargs: Any) -> Any:
        token = _IN_COMMAND.set(True)
        try:
            return await self._send_again(*args, **kwargs)
        finally:
            _IN_COMMAND.reset(token)

    def _until(self) -> tuple[float, Bound | None]:
        """When a command sent now stops being resent after TRYAGAIN (a slot split by a
        migration) or a run of redirections, in loop time: at the deadline of the SDK call it is
        part of (the caller's asyncio.timeout, else the client's offline_wait, from the call's
        start: one deadline for all the call's commands and resends), else try_again_ms from
        now (a command of the caller's own through the client's redis)."""
        b = CALL_BOUND.get()
        if b is not None:
            return b.until(), b
        return asyncio.get_running_loop().time() + self.try_again_ms / 1000, None

    async def _send_again(self, *args: Any, **kwargs: Any) -> Any:
        until: float | None = None
        bound: Bound | None = None
        n = 0
        while True:
            try:
                return await super().execute_command(*args, **kwargs)
            except _CLUSTER_STATE_ERRORS as err:
                # CLUSTERDOWN (a primary failed, no replica took over yet), a slot unserved:
                # decided before the command ran, and the layout may change under the client.
                self._refence()
                raise ConnectionError(f"the cluster is not serving the slot: {err}") from err
            except (_TryAgain, ClusterError) as err:
                if isinstance(err, ClusterError) and "TTL exhausted" not in str(err):
                    raise
                # TRYAGAIN: the slot is split by a migration and the command's keys are on
                # both sides: nothing ran; the next MIGRATE batch, or the slot's settling, lets
                # it through. TTL exhausted: redis-py followed MOVED and ASK answers 16 times
                # without an answer of the command's (the slots moving meanwhile): nothing ran
                # either. Each is resent after a backoff, until the call's deadline.
                if isinstance(err, _TryAgain) and args in _LEAVE_TRY_AGAIN.get():
                    raise  # the caller does without it (_Pipeline.leave_try_again)
                if until is None:
                    until, bound = self._until()
                loop = asyncio.get_running_loop()
                now = loop.time()
                if self._closing or now >= until:
                    what = (
                        "TRYAGAIN (a slot split by a migration)"
                        if isinstance(err, _TryAgain)
                        else "redirections (MOVED, ASK) without an end"
                    )
                    if bound is not None:
                        waited = now - bound.start
                        ce: ConnectionError = ConnectionWaitError(
                            f"the cluster answered {what} until the call's deadline (waited "
                            f"{waited:.3f} s): {err}",
                            waited,
                        )
                    else:
                        ce = ConnectionError(
                            f"the cluster answered {what} for {self.try_again_ms} ms: {err}"
                        )
                    raise ce from err
                await asyncio.sleep(min(_try_again_pause(n), until - now))
                n += 1
            except RedisClusterException as err:
                # The cluster could not be discovered again (no startup node answers).
                self._refence()
                raise ConnectionError(str(err)) from err
            except TRANSPORT_ERRORS:
                self._refence()
                raise

    def pipeline(self, transaction: Any | None = None, shard_hint: Any | None = None) -> Any:
        """A pipeline whose commands go to their slots' nodes, one batch per node; TRYAGAIN
        answers are resent one by one, and a failure of transport raises."""
        if shard_hint:
            raise RedisClusterException("shard_hint is deprecated in cluster mode")
        return _Pipeline(self, transaction)  # type: ignore[abstract]

    def client(self) -> Any:  # a _Bell: redis.asyncio.Redis.client() as the worker uses it
        """A connection of its own for blocking pops (the worker's doorbell), to the node serving
        the key's slot."""
        return _Bell(self)

    async def aclose(self) -> None:
        """Closes every node connection. Called by redis-py itself in the middle of a command
        (after every reinitialize_steps MOVED answers, and on CLUSTERDOWN), it only makes the
        client discover the slots again before its next command: closing would cut the
        connections other tasks' commands are in flight on, and lose their replies (a claim whose
        lease no one would hold until it expired)."""
        if _IN_COMMAND.get() and not self._closing:
            self._initialize = True
            return
        self._closing = True
        await super().aclose()


class _Pipeline(ClusterPipeline):
    """ClusterPipeline with the fence first, TRYAGAIN resent, and transport failures raised."""

    def __init__(self, client: ClusterRedis, transaction: bool | None = None) -> None:
        super().__init__(client, transaction)
        self._emq = client
        self._sent: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self._leave: set[int] = set()

    def leave_try_again(self) -> None:
        """Marks the command queued last: a TRYAGAIN answer to it is left in the results (a
        TryAgainError) instead of being resent until the slot settles. For a part of a read the
        caller can do without while a slot is split (get's failure record)."""
        if self._sent:
            self._leave.add(len(self._sent) - 1)

    def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        self._sent.append((args, dict(kwargs)))
        return super().execute_command(*args, **kwargs)

    # redis-py blocks scripts in a cluster pipeline (their keys could span slots); the bundle's
    # keep every key of a call in one slot, and each call goes to its first KEYS' node.
    def evalsha(self, sha: str, numkeys: int, *keys_and_args: Any) -> Any:
        return self.execute_command("EVALSHA", sha, numkeys, *keys_and_args)

    def eval(self, script: str, numkeys: int, *keys_and_args: Any) -> Any:
        return self.execute_command("EVAL", script, numkeys, *keys_and_args)

    def time(self, **kwargs: Any) -> Any:
        """TIME, on the node of the last keyed command queued before it (the server clock the
        replies of that command are compared with), else on the default node."""
        c = self._emq
        node = None
        for args, _ in reversed(self._sent):
            verb = args[0].decode() if isinstance(args[0], bytes) else str(args[0])
            key = _routing_key(verb, args)
            if key is not None:
                node = c.get_node_from_key(key)
                break
        return self.execute_command("TIME", target_nodes=node or c.get_default_node(), **kwargs)

    async def execute(self, raise_on_error: bool = True, allow_redirections: bool = True) -> Any:
        sent, self._sent = self._sent, []
        leave, self._leave = self._leave, set()
        c = self._emq
        try:
            await c._ensure_unsent()
        except BaseException:
            await self.reset()  # type: ignore[no-untyped-call]
            raise
        left = _LEAVE_TRY_AGAIN.set(frozenset(sent[i][0] for i in leave if i < len(sent)))
        try:
            res: list[Any] = await super().execute(False, allow_redirections)
        except _CLUSTER_STATE_ERRORS as err:
            c._refence()
            raise ConnectionError(f"the cluster is not serving the slot: {err}") from err
        except TRANSPORT_ERRORS:
            c._refence()
            raise
        finally:
            _LEAVE_TRY_AGAIN.reset(left)
        if len(res) == len(sent):
            for i, v in enumerate(res):
                if isinstance(v, _TryAgain) and i not in leave:
                    args, kwargs = sent[i]
                    try:
                        res[i] = await c._send(*args, **kwargs)
                    except Exception as err:
                        res[i] = err
        for v in res:
            if isinstance(v, TRANSPORT_ERRORS):
                c._refence()
                raise v
            if isinstance(v, _CLUSTER_STATE_ERRORS):
                c._refence()
                raise ConnectionError(f"the cluster is not serving the slot: {v}") from v
        if raise_on_error:
            for v in res:
                if isinstance(v, Exception):
                    raise v
        return res


class _Bell:
    """The worker's doorbell connection on a cluster: BLPOP on a connection of its own to the
    node serving the key's slot, opened again on the new node when the slot moved."""

    def __init__(self, cluster: ClusterRedis) -> None:
        self._c = cluster
        self._conn: AbstractConnection | None = None
        self._node = ""

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                await conn.disconnect()
            except Exception:
                pass

    async def _connection(self, key: Any) -> AbstractConnection:
        c = self._c
        if c._initialize:
            await c.initialize()
        node = c.get_node_from_key(key)
        if node is None:
            raise SlotNotCoveredError(f"no node serves the slot of {key!r}")
        if self._conn is None or self._node != node.name:
            await self._drop()
            kw = dict(node.connection_kwargs)
            kw["retry"] = Retry(NoBackoff(), 0)
            self._conn = cast(AbstractConnection, node.connection_class(**kw))
            self._node = node.name
        return self._conn

    async def blpop(self, keys: Sequence[Any], timeout: float = 0) -> Any:  # noqa: ASYNC109
        """BLPOP keys (all of one slot) for up to timeout seconds: the popped [key, value], or None
        when the wait ended empty, the slot moved (the next wait is on the new node) or the slot
        is being migrated (the doorbell is in flux; the caller looks for work)."""
        return await self._blocking(keys[0], timeout, ("BLPOP", *keys, timeout))

    async def xread(
        self, streams: dict[Any, Any], count: int | None = None, block: int | None = None
    ) -> Any:
        """XREAD BLOCK on one stream (redis-py's xread as the events listener uses it: one
        stream, a block in ms), on the node serving its slot; None when the wait ended empty or
        the slot moved, as blpop."""
        ((key, after),) = streams.items()
        args: list[Any] = ["XREAD"]
        if count is not None:
            args += ["COUNT", count]
        ms = int(block or 0)
        args += ["BLOCK", ms, "STREAMS", key, after]
        return await self._blocking(key, ms / 1000, tuple(args))

    async def _blocking(self, key: Any, timeout: float, command: tuple[Any, ...]) -> Any:  # noqa: ASYNC109
        """Sends a blocking command on the bell's connection to the node of key's slot."""
        c = self._c
        await c._ensure()
        started = time.monotonic()
        try:
            conn = await self._connection(key)
            await conn.send_command(*command)
            return await conn.read_response(timeout=timeout + 5 if timeout > 0 else None)
        except MovedError:
            # The slot moved: let the cluster learn where (a read through it meets the MOVED),
            # and wait on the new node next time. The wait ends now, as if the bell rang.
            await self._drop()
            try:
                await c.execute_command("LLEN", key)
            except Exception as err:
                c.logger.debug("emq: following the doorbell's slot failed: %s", err)
            return None
        except AskError:
            # The slot is being migrated and the key is not here: poll instead of blocking.
            left = timeout - (time.monotonic() - started)
            await asyncio.sleep(max(0.0, min(left, 0.025)))
            return None
        except (*TRANSPORT_ERRORS, *_CLUSTER_STATE_ERRORS):
            await self._drop()
            c._refence()
            raise
        except BaseException:
            # Cancelled (or failed) mid-command: the connection's state is unknown.
            await self._drop()
            raise

    async def aclose(self) -> None:
        await self._drop()


def _startup_node(seed: str | tuple[str, int], opts: dict[str, Any]) -> ClusterNode:
    """A ClusterNode of a seed: redis://host:port, rediss://host:port (TLS), host:port or a (host,
    port) pair; a URL's user and password become the options' unless they set them."""
    if isinstance(seed, tuple):
        host, port = seed
        return ClusterNode(host, int(port))
    if "://" not in seed:
        seed = "redis://" + seed
    u = urlsplit(seed)
    if u.scheme not in ("redis", "rediss"):
        raise ValueError(f"emq: connect_cluster: {seed!r} is not a redis:// or rediss:// URL")
    if u.path not in ("", "/", "/0"):
        raise ValueError(f"emq: connect_cluster: a cluster has only database 0, not {u.path!r}")
    if u.scheme == "rediss":
        opts.setdefault("ssl", True)
    if u.username:
        opts.setdefault("username", unquote(u.username))
    if u.password:
        opts.setdefault("password", unquote(u.password))
    return ClusterNode(u.hostname or "127.0.0.1", u.port or 6379)


def cluster_redis(
    startup_nodes: Sequence[str | tuple[str, int]],
    *,
    try_again_ms: int,
    logger: logging.Logger,
    on_fenced: Callable[[str], None],
    redis_options: dict[str, Any],
) -> ClusterRedis:
    """The ClusterRedis connect_cluster opens its client on (see there): ``redis_options`` are
    checked (a TypeError for one the client sets itself, a ValueError for no startup node), and
    ``on_fenced`` is called with the version record each fence found. Nothing is sent yet."""
    for k in (
        "decode_responses",
        "retry",
        "startup_nodes",
        "host",
        "port",
        "cluster_error_retry_attempts",
        "read_from_replicas",
        "load_balancing_strategy",
    ):
        if k in redis_options:
            raise TypeError(f"emq: connect_cluster: the client sets {k} itself")
    if isinstance(startup_nodes, str):
        startup_nodes = [startup_nodes]
    if not startup_nodes:
        raise ValueError("emq: connect_cluster: a cluster needs at least one startup node")
    nodes = [_startup_node(s, redis_options) for s in startup_nodes]
    redis_options.setdefault("maint_notifications_config", MaintNotificationsConfig(enabled=False))
    rc = ClusterRedis(
        try_again_ms=try_again_ms,
        logger=logger,
        startup_nodes=nodes,
        decode_responses=False,
        retry=Retry(NoBackoff(), 0),
        **redis_options,
    )
    rc._on_fenced = on_fenced
    return rc


async def first_fence(rc: ClusterRedis) -> None:
    """Discovers the cluster's slots and fences the keyspace, on the node of the reserve's slot:
    the first thing connect_cluster sends."""
    try:
        await rc.initialize()
    except RedisClusterException as err:
        raise ConnectionError(str(err)) from err
    await rc._ensure()
