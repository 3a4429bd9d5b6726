"""run_probes: every probe of the manifest passes on a healthy keyspace, writes nothing that
outlives it, and reports a planted fault as a failed line."""

from __future__ import annotations

from conftest import Server

import echomq
from echomq._gen.keys import KEY_BUNDLE, KEY_LOCKS
from echomq._gen.probes import PROBES
from echomq._gen.protocol import VERSION
from echomq.probe import run_probes


async def test_probes_pass_and_clean_up(server: Server, client: echomq.Client) -> None:
    with server.raw() as r:
        before = sorted(r.keys("*"))
        locks = r.hgetall(KEY_LOCKS)
    t = await run_probes(client)
    assert t.ok, "\n".join(t.lines())
    assert len(t.results) == sum(len(p.steps) for p in PROBES) > 0
    assert all(line.startswith("ok ") for line in t.lines())
    with server.raw() as r:
        assert sorted(r.keys("*")) == before, "the probes left keys behind"
        assert r.hgetall(KEY_LOCKS) == locks


async def test_a_planted_fault_fails_its_check(server: Server, client: echomq.Client) -> None:
    with server.raw() as r:
        r.hset(KEY_BUNDLE, VERSION, "0" * 40)
    t = await run_probes(client)
    assert not t.ok
    failed = [line for line in t.lines() if line.startswith("FAIL ")]
    assert len(failed) == 1 and KEY_BUNDLE in failed[0], failed
    assert t.passed == len(t.results) - 1
