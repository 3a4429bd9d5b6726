"""``python -m echomq worker module:handler``, run as a subprocess against a real redis-server:
SIGTERM (or SIGINT, Ctrl-C) stops it gracefully with exit code 0 and no traceback, completing
what finished and handing back what did not; no job is lost."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import Server

import echomq
from echomq._gen.protocol import STATE_PENDING, STATE_SCHEDULED

SRC = Path(__file__).resolve().parents[1] / "src"

HANDLERS = """
import asyncio, os, time

DONE = os.environ["EMQ_TEST_DONE"]

async def handle(job):
    if job.payload == b"slow":
        with open(DONE + ".started", "a") as f:
            f.write(job.id + "\\n")
        await asyncio.sleep(60)  # outlives the shutdown timeout: handed back
    with open(DONE, "a") as f:
        f.write(job.id + "\\n")

def handle_sync(job):
    if job.payload == b"slow":
        with open(DONE + ".started", "a") as f:
            f.write(job.id + "\\n")
        time.sleep(1.5)  # a thread cannot be cancelled: its job is handed back all the same
        return
    with open(DONE, "a") as f:
        f.write(job.id + "\\n")
"""


def lines(p: Path) -> list[str]:
    return p.read_text().split() if p.exists() else []


@pytest.mark.parametrize(
    ("sig", "handler"),
    [(signal.SIGTERM, "handle"), (signal.SIGINT, "handle"), (signal.SIGTERM, "handle_sync")],
)
async def test_worker_cli_stops_on_a_signal_and_loses_no_job(
    server: Server, client: echomq.Client, tmp_path: Path, sig: signal.Signals, handler: str
) -> None:
    (tmp_path / "jobs_mod.py").write_text(textwrap.dedent(HANDLERS))
    done = tmp_path / "done.txt"
    q = client.queue("cli")
    fast = [client.mint() for _ in range(20)]
    slow = [client.mint() for _ in range(2)]
    for i in fast:
        assert await q.push(i, b"fast")
    for i in slow:
        assert await q.push(i, b"slow")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(tmp_path)])
    env["EMQ_TEST_DONE"] = str(done)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "echomq",
        "worker",
        f"jobs_mod:{handler}",
        "--url",
        server.url,
        "--queue",
        "cli",
        "--concurrency",
        "4",
        "--shutdown-timeout",
        "0.3",
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        # both slow jobs running and every fast one done: the signal lands mid-handler
        while len(lines(Path(str(done) + ".started"))) < 2 or len(lines(done)) < len(fast):
            assert proc.returncode is None, "the worker exited early"
            assert time.monotonic() < deadline, "the worker did not get going"
            await asyncio.sleep(0.02)
        proc.send_signal(sig)
        async with asyncio.timeout(30):
            _, err = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    text = err.decode()
    assert proc.returncode == 0, text
    assert "Traceback" not in text, text
    assert f"{sig.name}: stopping" in text and "worker stopped" in text, text
    assert sorted(lines(done)) == sorted(fast)
    for i in fast:
        assert await q.get(i) is None, "a completed job is retired"
    for i in slow:
        info = await q.get(i)
        # handed back: to run again elsewhere at once, not left to sit out its lease
        assert info is not None and info.state in (STATE_PENDING, STATE_SCHEDULED), info
    assert await q.size("active") == 0


async def test_worker_cli_refuses_a_bad_handler_spec_without_a_traceback(
    server: Server, tmp_path: Path
) -> None:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    for spec, want in (("nocolon", "module:attribute"), ("no_such_mod:x", "cannot import")):
        r = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "echomq", "worker", spec, "--url", server.url],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            timeout=30,
        )
        assert r.returncode != 0 and want in r.stderr.decode(), r
        assert b"Traceback" not in r.stderr


TYPED = """
import os
import echomq

CODEC = echomq.JSONCodec(dict[str, int])

def handle(job: echomq.TypedJob[dict[str, int]]) -> None:
    with open(os.environ["EMQ_TEST_DONE"], "a") as f:
        f.write(f"{job.id}={job.value['n']}\\n")
"""


async def test_worker_cli_with_a_codec_hands_the_decoded_value(
    server: Server, client: echomq.Client, tmp_path: Path
) -> None:
    (tmp_path / "typed_mod.py").write_text(textwrap.dedent(TYPED))
    done = tmp_path / "done.txt"
    q = client.queue("typedcli", codec=echomq.JSONCodec(dict[str, int]))
    want = {}
    for n in range(5):
        i = client.mint()
        assert await q.push(i, {"n": n})
        want[i] = n
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), str(tmp_path)]))
    env["EMQ_TEST_DONE"] = str(done)
    proc = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "echomq", "worker", "typed_mod:handle", "--url", server.url],
        *["--queue", "typedcli", "--codec", "typed_mod:CODEC"],
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while len(lines(done)) < len(want):
            assert proc.returncode is None and time.monotonic() < deadline, "not processed"
            await asyncio.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(30):
            _, err = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()
    got = dict(line.split("=") for line in lines(done))
    assert {k: int(v) for k, v in got.items()} == want
