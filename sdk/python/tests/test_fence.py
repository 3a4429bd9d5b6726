"""The version fence and the bundle check, at connect and on every new connection."""

from __future__ import annotations

import pytest
from conftest import Server

import echomq
from echomq import BundleError, FenceError, Verdict, check_version_record, judge_version_record
from echomq._gen.keys import KEY_BUNDLE, KEY_VERSION
from echomq._gen.protocol import (
    VERSION,
    VERSION_MAJOR,
    VERSION_MINOR,
    VERSION_PATCH,
    VERSION_RECORD,
    VERSION_RECORD_PREFIX,
)


def record(major: int, minor: int, patch: int) -> str:
    return f"{VERSION_RECORD_PREFIX}{major}.{minor}.{patch}"


def test_judge_version_record() -> None:
    M, m, p = VERSION_MAJOR, VERSION_MINOR, VERSION_PATCH
    assert judge_version_record(VERSION_RECORD) is Verdict.CURRENT
    assert judge_version_record(record(M, m + 1, 0)) is Verdict.AHEAD
    assert judge_version_record(record(M, m, p + 1)) is Verdict.AHEAD
    if m > 0:
        assert judge_version_record(record(M, m - 1, 0)) is Verdict.BEHIND
    if p > 0:
        assert judge_version_record(record(M, m, p - 1)) is Verdict.BEHIND
    for foreign in [
        record(M + 1, 0, 0),
        record(M - 1, m, p) if M > 0 else record(M + 2, 0, 0),
        "",
        "other:" + VERSION,
        VERSION,
        VERSION_RECORD + ".0",
        record(M, m, p).replace(f".{m}.", f".0{m}."),
        VERSION_RECORD_PREFIX + f"{M}.{m}",
        VERSION_RECORD_PREFIX + f"{M}.{m}.x",
    ]:
        assert judge_version_record(foreign) is Verdict.FOREIGN, foreign
    assert Verdict.CURRENT.admitted and Verdict.AHEAD.admitted
    assert not Verdict.BEHIND.admitted and not Verdict.FOREIGN.admitted
    assert check_version_record(VERSION_RECORD) is False
    assert check_version_record(record(M, m + 1, 0)) is True
    with pytest.raises(FenceError):
        check_version_record(record(M + 1, 0, 0))


async def test_fence_refuses_a_foreign_major(server: Server) -> None:
    planted = record(VERSION_MAJOR + 1, 0, 0)
    with server.raw() as r:
        r.set(KEY_VERSION, planted)
    with pytest.raises(FenceError) as ei:
        await echomq.connect(server.url)
    assert ei.value.found == planted and ei.value.want == VERSION_RECORD
    assert not isinstance(ei.value, echomq.ConnectionError)
    with server.raw() as r:
        assert r.get(KEY_VERSION) == planted.encode(), "a foreign record is never written"
        assert r.dbsize() == 1, "nothing else was written"


@pytest.mark.parametrize("planted", ["garbage", "other:" + VERSION, ""])
async def test_fence_refuses_what_is_not_a_record(server: Server, planted: str) -> None:
    with server.raw() as r:
        r.set(KEY_VERSION, planted)
    with pytest.raises(FenceError):
        await echomq.connect(server.url)


async def test_fence_refuses_a_key_of_another_type(server: Server) -> None:
    with server.raw() as r:
        r.rpush(KEY_VERSION, "x")
    with pytest.raises(FenceError):
        await echomq.connect(server.url)


async def test_fence_raises_a_lower_minor_and_admits_a_higher(server: Server) -> None:
    if VERSION_MINOR > 0:
        with server.raw() as r:
            r.set(KEY_VERSION, record(VERSION_MAJOR, VERSION_MINOR - 1, 0))
        c = await echomq.connect(server.url, node=1)
        assert c.version_found == VERSION_RECORD
        await c.close()
        with server.raw() as r:
            assert r.get(KEY_VERSION) == VERSION_RECORD.encode()
    ahead = record(VERSION_MAJOR, VERSION_MINOR + 1, 0)
    with server.raw() as r:
        r.set(KEY_VERSION, ahead)
    c = await echomq.connect(server.url, node=1)
    try:
        assert c.version_found == ahead
        assert await c.queue("ahead").push(c.mint(), b"")
    finally:
        await c.close()
    with server.raw() as r:
        assert r.get(KEY_VERSION) == ahead.encode(), "the fence never lowers a version"


async def test_bundle_check(server: Server) -> None:
    with server.raw() as r:
        r.hset(KEY_BUNDLE, VERSION, "0" * 40)
    with pytest.raises(BundleError) as ei:
        await echomq.connect(server.url)
    assert ei.value.found == "0" * 40 and ei.value.version == VERSION


async def test_a_new_connection_is_fenced_before_use(server: Server, client: echomq.Client) -> None:
    """CLIENT KILL drops the client's connections; the foreign record planted meanwhile refuses
    the next call on the fresh connection, and nothing of it is written."""
    q = client.queue("killed")
    assert await q.push(client.mint(), b"")
    fences = client.fences
    planted = record(VERSION_MAJOR + 1, 0, 0)
    with server.raw() as r:
        r.set(KEY_VERSION, planted)
        r.client_kill_filter(_type="normal", skipme=True)
    id = client.mint()
    with pytest.raises(FenceError):
        await q.push(id, b"")
    assert await _exists(server, q.keys.row(id)) == 0
    with server.raw() as r:
        r.client_kill_filter(_type="normal", skipme=True)
    with pytest.raises(FenceError):
        await q.sizes()  # a pipeline's connection is fenced too
    with pytest.raises(FenceError):
        await q.push_batch([echomq.NewJob(id, b"")])
    assert await _exists(server, q.keys.row(id)) == 0
    with server.raw() as r:
        r.set(KEY_VERSION, VERSION_RECORD)
    assert await q.push(id, b"")
    assert client.fences > fences


async def _exists(server: Server, key: str) -> int:
    with server.raw() as r:
        return int(r.exists(key))


async def test_an_unreachable_server_is_a_connection_error() -> None:
    from conftest import free_port

    with pytest.raises(echomq.ConnectionError) as ei:
        await echomq.connect(f"redis://127.0.0.1:{free_port()}/0", socket_connect_timeout=2)
    assert ei.value.retryable and not isinstance(ei.value, FenceError)
