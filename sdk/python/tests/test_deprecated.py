"""One generation of calls: the 2.0 calls the 2.2.0 calls replaced are kept, work as before and
warn (DeprecationWarning at the caller's line, naming the replacement); the plumbing of the
client is private. pyproject.toml ignores these warnings for the rest of the suite, whose tests
call the deprecated calls deliberately (their frozen 2.0 behaviour); pytest.warns records them
here whatever the filters say."""

from __future__ import annotations

import pytest

import echomq
from echomq._gen.protocol import SET_DEAD, SET_PENDING


async def test_each_deprecated_call_warns_at_the_callers_line_and_still_works(
    client: echomq.Client,
) -> None:
    q = client.queue("deprecated")
    first, second = client.mint(), client.mint()
    assert await q.push(first, b"a")
    assert await q.push(second, b"b")
    with pytest.warns(DeprecationWarning, match=r"Queue\.claim is deprecated: use claim_many") as w:
        job = await q.claim(60_000)
    assert w[0].filename == __file__
    assert job is not None and job.id == first
    with pytest.warns(
        DeprecationWarning, match=r"Queue\.complete_claim is deprecated: use complete_claim_ids"
    ) as w:
        jobs = await q.complete_claim(job.id, job.token, 60_000, 1)
    assert w[0].filename == __file__
    assert [j.id for j in jobs] == [second]
    with pytest.warns(DeprecationWarning, match=r"Queue\.promote is deprecated: use promote_due"):
        assert await q.promote() == 0
    with pytest.warns(DeprecationWarning, match=r"Queue\.reap is deprecated: use reap_expired"):
        assert await q.reap() == 0
    assert await q.size(SET_PENDING) == 0
    assert await q.size(SET_DEAD) == 0

    typed = client.queue("deprecated-typed", codec=echomq.JSONCodec(dict))
    assert await typed.push(client.mint(), {"n": 1})
    with pytest.warns(DeprecationWarning, match=r"TypedQueue\.claim is deprecated: use raw\.claim"):
        tj = await typed.claim(60_000)
    assert tj is not None and tj.value == {"n": 1}


async def test_the_replacements_do_not_warn(client: echomq.Client) -> None:
    import warnings

    q = client.queue("replacements")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert await q.push(client.mint(), b"x")
        jobs = await q.claim_many(60_000, 1)
        assert len(jobs) == 1
        assert await q.complete_claim_ids(jobs[0].id, jobs[0].token, 60_000, []) == []
        assert await q.promote_due() == 0
        assert await q.reap_expired() == 0


def test_the_client_plumbing_is_private() -> None:
    for name in ("resend", "once", "check_payload"):
        assert not hasattr(echomq.Client, name), name
        assert hasattr(echomq.Client, "_" + name), name
    for name in ("refence", "ensure", "fenced"):
        assert not hasattr(echomq.ClusterRedis, name), name
