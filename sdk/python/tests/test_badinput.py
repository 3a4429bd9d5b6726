"""Bad input is refused before any command is sent (INFO commandstats does not move), and every
refusal of a script surfaces as the exception of its wire class."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from conftest import Server

import echomq
from echomq import ArgumentError, IdError, NewJob, QueueNameError, WireError
from echomq._gen.errors import CLASSES, WIRE_ERRORS, KindError, StaleError
from echomq._gen.ids import new_id
from echomq._gen.keys import QueueKeys, key_migration
from echomq._gen.protocol import KINDS, SET_PENDING, WORK_KIND
from echomq._gen.scripts import SCRIPTS

BAD_IDS = [
    "",
    "JOB0NgWEfAEJf",
    "JOB0NgWEfAEJfsX",
    "job0NgWEfAEJfs",
    "JOB0NgWEfAEJf!",
    "JOBzzzzzzzzzzz",
]
BAD_QUEUES = ["", "Orders", "a{b}", "a:b", "a b", "-orders", "a\nb", "a" * 65]
GOOD = "JOB0NgWEfAEJfs"


def calls(c: echomq.Client, id: str) -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
    q = c.queue("orders")
    return [
        ("push", lambda: q.push(id, b"p")),
        ("enqueue", lambda: q.enqueue(id, b"p")),
        ("enqueue_at", lambda: q.enqueue_at(id, b"p", 0)),
        ("push_batch", lambda: q.push_batch([NewJob(GOOD, b""), NewJob(id, b"")])),
        ("complete", lambda: q.complete(id, 1)),
        ("complete_claim", lambda: q.complete_claim(id, 1, 1000, 1)),
        ("extend", lambda: q.extend(id, 1, 1000)),
        ("retry", lambda: q.retry(id, 1, 0)),
        ("bury", lambda: q.bury(id, 1)),
        ("revive", lambda: q.revive(id)),
        ("purge", lambda: q.purge(id)),
        ("get", lambda: q.get(id)),
    ]


@pytest.mark.parametrize("bad", BAD_IDS)
async def test_bad_ids_send_nothing(server: Server, client: echomq.Client, bad: str) -> None:
    before = server.commandstats()
    for name, call in calls(client, bad):
        with pytest.raises(IdError) as ei:
            await call()
        assert repr(bad) in str(ei.value) or bad == "", f"{name}: {ei.value}"
    assert server.commandstats() == before, "a malformed id sent a command"


@pytest.mark.parametrize("bad", BAD_QUEUES)
async def test_bad_queue_names_send_nothing(
    server: Server, client: echomq.Client, bad: str
) -> None:
    before = server.commandstats()
    with pytest.raises(QueueNameError):
        client.queue(bad)
    with pytest.raises(QueueNameError):
        QueueKeys(bad)
    with pytest.raises(QueueNameError):
        key_migration(bad)
    assert server.commandstats() == before


async def test_bad_arguments_send_nothing(server: Server, client: echomq.Client) -> None:
    q = client.queue("orders")
    before = server.commandstats()
    bad: list[Callable[[], Awaitable[Any]]] = [
        lambda: q.claim(0),
        lambda: q.claim_many(1000, 0),
        lambda: q.claim_many(0, 1),
        lambda: q.complete_claim(GOOD, 1, 1000, -1),
        lambda: q.extend(GOOD, 1, 0),
        lambda: q.retry(GOOD, 1, -1),
        lambda: q.promote(0),
        lambda: q.reap(0),
        lambda: q.reap(1, -1),
        lambda: q.enqueue_at(GOOD, b"", -1),
        lambda: q.page(SET_PENDING, "not a cursor", 10),
        lambda: q.page(SET_PENDING, "", 0),
        lambda: q.page("nope", "", 1),  # type: ignore[arg-type]
        lambda: q.size("nope"),  # type: ignore[arg-type]
    ]
    for call in bad:
        with pytest.raises(ArgumentError):
            await call()
    assert server.commandstats() == before


async def test_each_refusal_is_its_wire_class(server: Server, client: echomq.Client) -> None:
    """Every class word maps to its own exception class; the scripts' refusals raise them."""
    assert set(WIRE_ERRORS) == set(CLASSES)
    for word, cls in WIRE_ERRORS.items():
        assert issubclass(cls, WireError) and cls.WORD == word
    q = client.queue("orders")
    other = next(k for k in KINDS if k != WORK_KIND)
    foreign = new_id(other, 1780512970164, 0, 0)
    kind_calls: list[Callable[[], Awaitable[Any]]] = [
        lambda: q.push(foreign, b""),
        lambda: q.enqueue(foreign, b""),
        lambda: q.enqueue_at(foreign, b"", 0),
    ]
    for kcall in kind_calls:
        with pytest.raises(KindError) as ki:
            await kcall()
        assert ki.value.word == ki.value.WORD and ki.value.detail
    res = await q.push_batch([NewJob(foreign, b"")])
    assert isinstance(res[0].error, KindError)
    # Stale tokens and jobs no longer active.
    id = client.mint()
    assert await q.push(id, b"")
    job = await q.claim(30_000)
    assert job is not None
    stale: list[Callable[[], Awaitable[Any]]] = [
        lambda: q.complete(id, job.token + 1),
        lambda: q.extend(id, job.token + 1, 1000),
        lambda: q.retry(id, job.token + 1, 0),
        lambda: q.bury(id, job.token + 1),
        lambda: q.complete_claim(id, job.token + 1, 1000, 1),
    ]
    for scall in stale:
        with pytest.raises(StaleError) as si:
            await scall()
        assert si.value.script and si.value.detail
    await q.complete(id, job.token)
    for scall in stale:
        with pytest.raises(StaleError):
            await scall()
    issued = {w for s in SCRIPTS for w in CLASSES if w in s.source}
    assert issued == set(CLASSES), "every class is issued by some script and tested here"
