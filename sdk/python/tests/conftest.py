"""Real redis-server processes for the tests: each on a free loopback port in a temp dir, started
and stopped by the tests themselves. A missing redis-server fails the test with an install hint;
nothing is skipped."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio

import echomq

ROOT = Path(__file__).resolve().parents[3]
"""The repository root."""

INSTALL_HINT = (
    "redis-server is not installed: install it (Debian: apt-get install redis-server; "
    "./test.sh does it) and run the tests again"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Server:
    """One redis-server on 127.0.0.1, in its own directory; restartable on the same port and
    data (append-only file) so that a SIGKILL and a restart keep what was fsynced."""

    def __init__(self, dir: Path, aof: bool = False) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            pytest.fail(INSTALL_HINT, pytrace=False)
        self.exe = exe
        self.dir = dir
        self.aof = aof
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        args = [
            self.exe,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.dir),
            "--save",
            "",
            "--daemonize",
            "no",
            "--logfile",
            str(self.dir / "redis.log"),
        ]
        if self.aof:
            args += ["--appendonly", "yes", "--appendfsync", "always"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                with redis.Redis(port=self.port, socket_timeout=1) as r:
                    if r.ping():
                        return
            except (redis.ConnectionError, redis.BusyLoadingError, OSError):
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                log = (self.dir / "redis.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"redis-server on port {self.port} did not start:\n{log}")
            time.sleep(0.02)

    def kill(self) -> None:
        """SIGKILL: the server dies without a word, as in a crash."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
            self.proc = None

    def raw(self) -> redis.Redis:
        """A plain client of the server's (no fence), for planting and inspecting."""
        return redis.Redis(port=self.port, socket_timeout=5)

    def commandstats(self) -> dict[str, int]:
        """Calls per command, from INFO commandstats, without info, ping and the handshake of the
        test's own connection (hello, client)."""
        with self.raw() as r:
            stats = r.info("commandstats")
        out: dict[str, int] = {}
        for k, v in stats.items():
            name = k.removeprefix("cmdstat_")
            if name not in ("info", "ping", "hello", "client"):
                out[name] = int(v["calls"])
        return out


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = Server(tmp_path)
    s.start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def aof_server(tmp_path: Path) -> Iterator[Server]:
    s = Server(tmp_path, aof=True)
    s.start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
async def client(server: Server) -> AsyncIterator[echomq.Client]:
    c = await echomq.connect(server.url, node_lease_ms=120_000, socket_timeout=5)
    try:
        yield c
    finally:
        await c.close()
