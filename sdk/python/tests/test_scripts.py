"""The generated calls on a real server, below the Queue: repeated KEYS/ARGV groups (one list, or
entries sent interleaved), pipelines, the EVAL fallback, and the refusals before anything is
sent."""

from __future__ import annotations

import pytest
from conftest import Server

import echomq
from echomq._gen import scripts
from echomq._gen.ids import IdError
from echomq._gen.scripts import SCRIPTS, ScriptExec, run_script, run_scripts


def with_repeated(kind: str) -> list[scripts.Script]:
    return [s for s in SCRIPTS if getattr(s, kind)]


def test_bundle_identity() -> None:
    import hashlib

    for s in SCRIPTS:
        assert hashlib.sha1(s.source.encode()).hexdigest() == s.sha1, s.name
        assert scripts.script_named(s.name) is s
    digest = hashlib.sha1("".join(s.sha1 + "\n" for s in SCRIPTS).encode()).hexdigest()
    assert digest == scripts.BUNDLE_DIGEST
    assert scripts.script_named("no such script") is None


async def test_repeated_groups_live(server: Server, client: echomq.Client) -> None:
    """Every script with a repeated KEYS group exists as a typed call; the entry-group and
    id-group calls run on a real server."""
    assert with_repeated("repeated_keys"), "the manifest has scripts with repeated KEYS groups"
    for s in with_repeated("repeated_keys"):
        call = getattr(scripts, "".join(w.title() for w in s.name.split("_")) + "Call")
        assert call.SCRIPT is s
    if not hasattr(scripts, "PushManyCall"):
        pytest.fail("the 2.2.0 scripts are missing from the generated layer")
    q = client.queue("grouped")
    ids = [client.mint() for _ in range(3)]
    pm = scripts.PushManyCall(
        pending=q.keys.pending,
        wake=q.keys.wake,
        rows=[q.keys.row(i) for i in ids],
        entries=[scripts.PushManyEntry(id=i, payload=f"p{n}") for n, i in enumerate(ids)],
    )
    x = pm.exec()
    assert x.argv == (ids[0], b"p0", ids[1], b"p1", ids[2], b"p2"), "entries are interleaved"
    assert [r.enqueued for r in await pm.run(client.redis)] == [1, 1, 1]
    assert [r.enqueued for r in await pm.run(client.redis)] == [0, 0, 0]
    claim = scripts.ClaimIdsCall(
        pending=q.keys.pending,
        active=q.keys.active,
        wake=q.keys.wake,
        rows=[q.keys.row(i) for i in ids[:2]],
        lease_ms=30_000,
        ids=ids[:2],
    )
    got = await claim.run(client.redis)
    assert [(j.id, j.token, j.payload) for j in got] == [(ids[0], 1, b"p0"), (ids[1], 1, b"p1")]
    with pytest.raises(ValueError, match="keys for"):
        scripts.ClaimIdsCall(
            pending=q.keys.pending,
            active=q.keys.active,
            wake=q.keys.wake,
            rows=[],
            lease_ms=1,
            ids=ids[:1],
        ).exec()
    with pytest.raises(IdError):
        scripts.PushManyCall(
            pending=q.keys.pending,
            wake=q.keys.wake,
            rows=["x"],
            entries=[scripts.PushManyEntry(id="bad", payload=b"")],
        ).exec()


async def test_run_scripts_settles_each_call(server: Server, client: echomq.Client) -> None:
    q = client.queue("piped")
    id = client.mint()
    push = scripts.PushCall(
        row=q.keys.row(id), pending=q.keys.pending, wake=q.keys.wake, id=id, payload=b""
    ).exec()
    stale = scripts.CompleteCall(active=q.keys.active, row=q.keys.row(id), id=id, token=9).exec()
    with server.raw() as r:
        r.script_flush()
    res = await run_scripts(client.redis, [push, stale, push])
    assert res[0] == 1 and res[2] == 0
    assert isinstance(res[1], echomq.WireError) and res[1].script == "complete"
    with server.raw() as r:
        r.script_flush()
    with pytest.raises(echomq.WireError):
        await run_script(client.redis, stale)
    assert await run_scripts(client.redis, []) == []
    assert isinstance(push, ScriptExec)


def test_sdk_version_is_the_package_version() -> None:
    import tomllib
    from pathlib import Path

    meta = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert echomq.__version__ == meta["project"]["version"]
