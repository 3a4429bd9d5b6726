"""The README's Python code blocks run as written, each as a script of its own, against a real
redis-server (ECHOMQ_URL names it, as the snippets read it); the worker command the README shows
runs on the README's jobs.py."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import time
from pathlib import Path

from conftest import Server

import echomq

HERE = Path(__file__).resolve().parents[1]
README = HERE / "README.md"
SRC = HERE / "src"

BLOCK = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)


def blocks() -> list[str]:
    """The README's python blocks but those of its Redis Cluster section, which need a cluster
    (test_cluster.py runs that one on a real one)."""
    text = README.read_text()
    head, sep, rest = text.partition("\n## Redis Cluster\n")
    if sep:
        text = head + "\n" + rest[rest.find("\n## ") :]
    return BLOCK.findall(text)


def env(server: Server, *extra: Path) -> dict[str, str]:
    e = dict(os.environ)
    e["ECHOMQ_URL"] = server.url
    e["PYTHONPATH"] = os.pathsep.join(str(p) for p in (SRC, *extra))
    return e


async def run(argv: list[str], cwd: Path, e: dict[str, str]) -> tuple[int, str, str]:
    p = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, env=e, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    async with asyncio.timeout(60):
        out, err = await p.communicate()
    assert p.returncode is not None
    return p.returncode, out.decode(), err.decode()


async def test_the_readme_has_the_blocks_this_test_runs() -> None:
    bs = blocks()
    assert len(bs) == 7, (
        "the quickstart, bytes and errors, why a job failed, results and events, schedulers, "
        "pausing, capping and limiting the rate, and jobs.py"
    )
    assert "asyncio.run(main())" in bs[0] and "JSONCodec" in bs[0]
    assert "info.failures" in bs[2] and "info.died_at" in bs[2]
    assert "keep_results" in bs[3] and "report_progress" in bs[3] and "q.events(" in bs[3]
    assert "upsert_scheduler" in bs[4] and "run_schedulers(on_fire=" in bs[4]
    assert "next_runs" in bs[4]
    assert "q.pause()" in bs[5] and "set_concurrency(2)" in bs[5] and "q.resume()" in bs[5]
    assert "set_rate_limit(5, period=0.1)" in bs[5] and "set_rate_limit(0)" in bs[5]
    assert bs[6].startswith("# jobs.py\n")
    text = README.read_text()
    assert "pip install ./sdk/python" in text
    assert "python -m echomq worker jobs:send_email" in text


async def test_every_readme_python_block_runs(server: Server, tmp_path: Path) -> None:
    for n, code in enumerate(blocks()):
        path = tmp_path / f"block{n}.py"
        path.write_text(code)
        rc, out, err = await run([sys.executable, str(path)], tmp_path, env(server))
        assert rc == 0, f"README block {n} failed:\n{code}\n--- stderr:\n{err}"
        assert "Traceback" not in err, err
        if n == 0:
            assert "shipping 2 x apple (attempt 1)" in out and "shipping 1 x pear" in out, out
            assert "state='dead'" in out and "'dead': 1" in out, out
        if n == 1:
            assert "the payload must be bytes or str" in out, out
            assert out.rstrip().endswith(" 0"), out  # pending_size after the one job completed
        if n == 2:
            lines = out.splitlines()
            assert len(lines) == 3, out
            for i in (1, 2):
                assert lines[i - 1].startswith(f"attempt {i} at "), out
                assert lines[i - 1].endswith(
                    f": error by billing-1: ConnectionRefusedError: the ledger is down "
                    f"(attempt {i})"
                ), out
            assert lines[2].startswith("died at 20") and lines[2].endswith("+00:00"), out
        if n == 3:
            lines = out.splitlines()
            assert lines[:3] == [
                'progress 1 {"percent":50}',
                "completed 1 ",
                "{'report': 'Q3', 'pages': 12} at attempt 1",
            ], out
            # 0 when the minute turned between the completion and the read
            assert lines[3:] in (["completed this minute: 1"], ["completed this minute: 0"]), out
        if n == 4:
            lines = out.splitlines()
            assert lines[:3] == [
                "2027-03-26T09:00:00+01:00",
                "2027-03-29T09:00:00+02:00",
                "2027-03-30T09:00:00+02:00",
            ], out
            # on_fire is called as the runner's round returns, the handler once a worker claimed
            # the run: fired first, but the order is not what this block shows
            assert sorted(lines[3:5]) == ["fired hourly-sync", "ran sync hourly-sync"], out
            assert lines[5:] == ["runs: 1 next in 60 min"], out
        if n == 5:
            none = "rate_limit=0, rate_period_ms=0, admit_in_ms=0"
            assert out.splitlines() == [
                f"QueuePolicy(paused=True, concurrency=0, requires=7, leased=0, {none})",
                f"QueuePolicy(paused=True, concurrency=2, requires=7, leased=0, {none})",
                "pending while paused: 4",
                "never more than 2 at once: True",
                f"QueuePolicy(paused=False, concurrency=0, requires=0, leased=0, {none})",
                "QueuePolicy(paused=False, concurrency=0, requires=8, leased=0, rate_limit=5, "
                "rate_period_ms=100, admit_in_ms=0)",
                "at most 5 in any 100 ms: True",
                f"QueuePolicy(paused=False, concurrency=0, requires=0, leased=0, {none})",
            ], out


async def test_the_readme_worker_command_runs_its_jobs_py(
    server: Server, client: echomq.Client, tmp_path: Path
) -> None:
    jobs_py = next(b for b in blocks() if b.startswith("# jobs.py\n"))
    (tmp_path / "jobs.py").write_text(jobs_py)
    q = client.queue("emails")
    id = client.mint()
    assert await q.push(id, b"hi there")
    p = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "echomq", "worker", "jobs:send_email", "--queue", "emails"],
        *["--concurrency", "20"],
        cwd=tmp_path,
        env=env(server, tmp_path),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while await q.get(id) is not None:  # completed jobs are retired
            assert p.returncode is None and time.monotonic() < deadline, "not processed"
            await asyncio.sleep(0.02)
        p.send_signal(signal.SIGTERM)
        async with asyncio.timeout(30):
            out, err = await p.communicate()
    finally:
        if p.returncode is None:
            p.kill()
            await p.wait()
    assert p.returncode == 0, err.decode()
    assert "sending hi there" in out.decode()
    assert b"Traceback" not in err
