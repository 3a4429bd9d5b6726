"""The package as a user gets it: ``pip wheel`` builds the wheel (its LICENSE, project URLs, the
README as its description, the console script), and the wheel installs into a clean virtual
environment (redis-py from the lock's hashes, nothing from this checkout) where it connects to a
real redis-server, pushes a job and processes it, and ``echomq worker --help`` runs."""

from __future__ import annotations

import asyncio
import os
import re
import sys
import textwrap
import zipfile
from pathlib import Path

from conftest import Server

HERE = Path(__file__).resolve().parents[1]

SMOKE = """
import asyncio, os, sys
import echomq

assert "site-packages" in echomq.__file__, echomq.__file__

async def main() -> None:
    async with await echomq.connect(os.environ["ECHOMQ_URL"]) as c:
        q = c.queue("smoke")
        id = c.mint()
        assert await q.push(id, b"ping")
        got = asyncio.get_running_loop().create_future()

        async def handle(job: echomq.Job) -> None:
            got.set_result(job.payload)

        w = echomq.Worker(q, handle)
        t = asyncio.create_task(w.run())
        async with asyncio.timeout(10):
            assert await got == b"ping"
        w.stop()
        await t
        assert await q.get(id) is None
    print("smoke ok", echomq.__version__)

asyncio.run(main())
"""


async def sh(*argv: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    p = await asyncio.create_subprocess_exec(
        *map(str, argv),
        cwd=cwd,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    async with asyncio.timeout(240):
        out, _ = await p.communicate()
    text = out.decode(errors="replace")
    assert p.returncode == 0, f"{' '.join(map(str, argv))} failed:\n{text}"
    return text


RUNTIME = ("redis", "tzdata")
"""The package's dependencies (pyproject.toml's)."""


def runtime_requirements(lock: str) -> str:
    """The lock's entries (with their hashes) of the package's dependencies and what redis
    needs."""
    entries = re.split(r"\n(?=\S)", lock)
    keep = [
        e
        for e in entries
        if any(e.startswith(f"{d}==") for d in RUNTIME)
        or re.search(r"^\s+# via redis$", e, re.M) is not None
    ]
    for d in RUNTIME:
        assert any(e.startswith(f"{d}==") for e in keep), f"{d} is in the lock"
    return "\n".join(keep) + "\n"


async def test_the_wheel_installs_into_a_clean_venv_and_runs(
    server: Server, tmp_path: Path
) -> None:
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    dist = tmp_path / "dist"
    await sh(*pip, "wheel", "-q", "--no-deps", "-w", dist, HERE, cwd=tmp_path)
    wheels = list(dist.glob("echomq-*.whl"))
    assert len(wheels) == 1, wheels
    with zipfile.ZipFile(wheels[0]) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        entry = z.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt")))
        lic = next(n for n in names if n.endswith("licenses/LICENSE"))
        assert z.read(lic) == (HERE / "LICENSE").read_bytes()
    assert "echomq/py.typed" in names and "echomq/_gen/scripts.py" in names
    assert not any(n.startswith(("tests/", "conformance/", "chaos/")) for n in names), names
    assert "License-Expression: MIT" in meta and "License-File: LICENSE" in meta
    for label in ("Homepage", "Source", "Issues", "Documentation"):
        assert f"Project-URL: {label}, https://" in meta, label
    assert "Requires-Dist: redis>=" in meta and "Requires-Dist: tzdata>=" in meta
    assert "Description-Content-Type: text/markdown" in meta and "## Quickstart" in meta
    assert b"echomq = echomq._cli:main" in entry

    venv = tmp_path / "venv"
    await sh(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    py = venv / "bin" / "python"
    reqs = tmp_path / "runtime.txt"
    reqs.write_text(runtime_requirements((HERE / "requirements-dev.lock").read_text()))
    into = [*pip, "--python", str(py), "install", "-q", "--no-deps"]
    await sh(*into, "--require-hashes", "-r", reqs, cwd=tmp_path)
    await sh(*into, wheels[0], cwd=tmp_path)

    clean = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    clean["ECHOMQ_URL"] = server.url
    (tmp_path / "smoke.py").write_text(textwrap.dedent(SMOKE))
    out = await sh(py, "-I", tmp_path / "smoke.py", cwd=tmp_path, env=clean)
    assert "smoke ok" in out, out
    help_text = await sh(venv / "bin" / "echomq", "worker", "--help", cwd=tmp_path, env=clean)
    assert "module:function" in help_text and "--shutdown-timeout" in help_text
