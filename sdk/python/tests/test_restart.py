"""Calls across a server restart (SIGKILL, then a restart on the same append-only file)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from conftest import Server

import echomq
from echomq._gen.keys import KEY_VERSION
from echomq._gen.protocol import SET_PENDING, VERSION_MAJOR, VERSION_RECORD_PREFIX


async def test_first_push_after_restart_succeeds(aof_server: Server) -> None:
    c = await echomq.connect(aof_server.url, node_lease_ms=120_000, socket_timeout=5)
    try:
        q = c.queue("restarted")
        before = c.mint()
        assert await q.push(before, b"before")
        fences = c.fences
        aof_server.kill()
        aof_server.start()
        after = c.mint()
        assert await q.push(after, b"after"), "the first push after the restart is admitted"
        assert c.fences > fences, "the new connection was fenced"
        assert await q.size(SET_PENDING) == 2, "the job before the crash survived in the AOF"
        info = await q.get(before)
        assert info is not None and info.payload == b"before"
    finally:
        await c.close()


async def test_restart_to_a_fresh_keyspace_is_claimed_again(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    s = Server(tmp_path_factory.mktemp("fresh"))  # no AOF: the restart comes back empty
    s.start()
    try:
        c = await echomq.connect(s.url, node_lease_ms=120_000)
        try:
            q = c.queue("fresh")
            assert await q.push(c.mint(), b"")
            s.kill()
            s.start()
            assert await q.push(c.mint(), b"")
            with s.raw() as r:
                assert r.get(KEY_VERSION) is not None, "the fresh keyspace was fenced again"
        finally:
            await c.close()
    finally:
        s.stop()


async def test_a_claim_in_transport_failure_is_a_retryable_connection_error(
    aof_server: Server,
) -> None:
    # offline_wait_ms: a call that cannot reach the server waits that long for it (0.2 s here).
    c = await echomq.connect(
        aof_server.url, node_lease_ms=120_000, socket_timeout=2, offline_wait_ms=200
    )
    try:
        q = c.queue("down")
        assert await q.push(c.mint(), b"")
        aof_server.kill()
        with pytest.raises(echomq.ConnectionError) as ei:
            await q.claim(10_000)
        assert ei.value.retryable and ei.value.code == "ECONNECTION"
        assert isinstance(ei.value, ConnectionError), "a builtin ConnectionError too"
        assert ei.value.fence is None
        # Idempotent calls give up at their deadline too while the server is down.
        with pytest.raises(echomq.ConnectionError):
            async with asyncio.timeout(10):
                await q.push(c.mint(), b"")
        aof_server.start()
        job = await q.claim(10_000)
        assert job is not None
    finally:
        await c.close()


async def test_a_foreign_major_planted_during_the_restart_is_refused(aof_server: Server) -> None:
    c = await echomq.connect(aof_server.url, node_lease_ms=120_000, socket_timeout=5)
    try:
        q = c.queue("planted")
        assert await q.push(c.mint(), b"")
        aof_server.kill()
        aof_server.start()
        planted = f"{VERSION_RECORD_PREFIX}{VERSION_MAJOR + 1}.0.0"
        with aof_server.raw() as r:
            r.set(KEY_VERSION, planted)
        with pytest.raises(echomq.FenceError) as ei:
            await q.push(c.mint(), b"")
        assert ei.value.found == planted
        # A claim after another restart meets a keyspace planted foreign meanwhile: whether the
        # pool notices the dead connection first (FenceError) or the claim fails on it
        # (ConnectionError), the fresh connection's fence refuses it and nothing is claimed.
        with aof_server.raw() as r:
            r.set(KEY_VERSION, f"{VERSION_RECORD_PREFIX}{VERSION_MAJOR}.0.0")
        aof_server.kill()
        aof_server.start()
        with aof_server.raw() as r:
            r.set(KEY_VERSION, planted)
        with pytest.raises((echomq.FenceError, echomq.ConnectionError)) as ci:
            await q.claim(1000)
        err = ci.value
        fence = err.fence if isinstance(err, echomq.ConnectionError) else err
        assert isinstance(fence, echomq.FenceError) and fence.found == planted
        with aof_server.raw() as r:
            assert r.zcard(q.keys.pending) == 1, "nothing was claimed"
    finally:
        await c.close()


async def test_pushes_survive_client_kill(server: Server, client: echomq.Client) -> None:
    """CLIENT KILL drops every connection of the client's: the next idempotent calls are resent on
    fresh connections, each fenced first, and nothing is lost or doubled."""
    q = client.queue("killed")
    ids = [client.mint() for _ in range(20)]
    for n, id in enumerate(ids):
        if n % 5 == 0:
            with server.raw() as r:
                r.client_kill_filter(_type="normal", skipme=True)
        assert await q.push(id, b"")
    assert await q.size(SET_PENDING) == len(ids)
    assert client.fences >= 5


async def test_first_call_of_each_kind_after_restart_succeeds(aof_server: Server) -> None:
    """After SIGKILL and a restart on the same AOF, with the server answering again, the first call
    of any kind succeeds: the pooled connection the old server closed is replaced before the call
    is written (redis-py 8 skipped that check while maintenance notifications were enabled, its
    default, and every first claim failed with 'Connection closed by server'). The restart runs
    in a thread, so that the client's event loop runs meanwhile, as in a real deployment."""
    c = await echomq.connect(aof_server.url, node_lease_ms=120_000, socket_timeout=5)
    try:
        q = c.queue("first-after-restart")
        calls: dict[str, Callable[[], Awaitable[object]]] = {
            "claim": lambda: q.claim(60_000),
            "claim_many": lambda: q.claim_many(60_000, 2),
            "size": lambda: q.size(SET_PENDING),
            "push": lambda: q.push(c.mint(), b"after"),
        }
        for round in range(3):
            for name, call in calls.items():
                assert await q.push(c.mint(), b"held")
                held = await q.claim(60_000)
                assert await q.push(c.mint(), b"pending")
                assert held is not None
                await restart(aof_server)
                try:
                    result = await call()
                except Exception as e:
                    raise AssertionError(f"round {round}: {name}: {e!r}") from e
                assert result is not None and result != [], f"round {round}: {name} got {result!r}"
                # A settle of a lease taken before the restart is a first call too.
                await restart(aof_server)
                await q.complete(held.id, held.token)
                assert await q.get(held.id) is None, f"round {round}: the completed job is gone"
    finally:
        await c.close()


async def restart(s: Server) -> None:
    """SIGKILLs the server and starts it again on its AOF, off the event loop."""
    await asyncio.to_thread(s.kill)
    await asyncio.to_thread(s.start)
