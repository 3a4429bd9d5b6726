"""A real Redis Cluster for the tests: three primaries, each a redis-server process with
--cluster-enabled yes on free loopback ports (client and cluster bus), without persistence, in a
temporary directory, formed with redis-cli --cluster create and killed at the end (like the Go
SDK's redistest.StartCluster and the TypeScript suite's test/cluster.ts). A machine without
redis-server or redis-cli fails with the install hint; nothing is skipped."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio
from conftest import free_port

CLUSTER_INSTALL_HINT = (
    "a Redis Cluster needs redis-server and redis-cli on PATH: install them (Debian: apt-get "
    "install redis-server, which brings redis-tools and so redis-cli; ./test.sh does it) and run "
    "the tests again"
)

CLUSTER_SLOTS = 16384
"""The number of hash slots of a Redis Cluster."""


class ClusterNode:
    """One redis-server of the cluster."""

    def __init__(self, exe: str, dir: Path, port: int, bus_port: int) -> None:
        self.exe = exe
        self.dir = dir
        self.port = port
        self.bus_port = bus_port
        self.id = ""
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"redis://{self.addr}"

    def __repr__(self) -> str:
        return f"ClusterNode({self.addr})"

    def launch(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        args = [
            self.exe,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.dir),
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-port",
            str(self.bus_port),
            "--cluster-node-timeout",
            "2000",
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            "--logfile",
            str(self.dir / "redis.log"),
        ]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def await_up(self, limit: float = 10.0) -> None:
        """Waits until this very process answers on the port (INFO's process_id is its pid)."""
        assert self.proc is not None
        deadline = time.monotonic() + limit
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server on {self.addr} exited:\n{self.log()}")
            try:
                with redis.Redis(port=self.port, socket_timeout=1) as r:
                    if int(r.info("server")["process_id"]) == self.proc.pid:
                        return
            except (redis.ConnectionError, redis.BusyLoadingError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis-server on {self.addr} did not answer:\n{self.log()}")
            time.sleep(0.01)

    def log(self) -> str:
        try:
            return (self.dir / "redis.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def restart(self) -> None:
        """Starts the node again on its ports and directory (it rejoins from its nodes.conf, its
        dataset empty: nodes save nothing)."""
        self.kill()
        self.launch()
        self.await_up()

    def kill(self) -> None:
        """SIGKILL: the node dies without a word."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
            self.proc = None

    def sync_cmd(self, *args: str | int) -> Any:
        """One command on a fresh connection, its reply raw (text)."""
        with redis.Redis(port=self.port, socket_timeout=10, decode_responses=True) as r:
            conn = r.connection_pool.get_connection()
            try:
                conn.send_command(*args)
                return conn.read_response()
            finally:
                r.connection_pool.release(conn)

    async def cmd(self, *args: str | int | bytes) -> Any:
        """One command on a fresh connection of its own (no fence, no cluster routing), its
        reply raw (text); for planting and inspecting."""
        conn = redis.asyncio.Connection(
            host="127.0.0.1", port=self.port, decode_responses=True, socket_timeout=10
        )
        try:
            await conn.connect()  # type: ignore[no-untyped-call]
            await conn.send_command(*args)
            return await conn.read_response()
        finally:
            await conn.disconnect()

    async def error_count(self, word: str) -> int:
        """How many error replies of kind word (INFO errorstats) this node has sent."""
        info = str(await self.cmd("INFO", "errorstats"))
        m = re.search(rf"errorstat_{word}:count=(\d+)", info)
        return int(m.group(1)) if m else 0


class RedisCluster:
    """Three primaries serving all 16384 slots."""

    def __init__(self, root: Path) -> None:
        server = shutil.which("redis-server")
        cli = shutil.which("redis-cli")
        if server is None or cli is None:
            pytest.fail(CLUSTER_INSTALL_HINT, pytrace=False)
        self.cli = cli
        taken: set[int] = set()

        def port() -> int:
            while True:
                p = free_port()
                if p not in taken:
                    taken.add(p)
                    return p

        self.nodes = [ClusterNode(server, root / f"node{i}", port(), port()) for i in range(3)]

    @property
    def urls(self) -> list[str]:
        return [n.url for n in self.nodes]

    def start(self) -> None:
        for n in self.nodes:
            n.launch()
        for n in self.nodes:
            n.await_up()
        args = [self.cli, "--cluster", "create", *(n.addr for n in self.nodes)]
        args += ["--cluster-replicas", "0", "--cluster-yes"]
        out = subprocess.run(args, capture_output=True, timeout=60, check=False)
        if out.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed:\n{out.stdout!r}{out.stderr!r}")
        for n in self.nodes:
            n.id = str(n.sync_cmd("CLUSTER", "MYID"))
        deadline = time.monotonic() + 30
        while not self._agreed_sync():
            if time.monotonic() > deadline:
                raise RuntimeError("the cluster's nodes do not agree after 30 s")
            time.sleep(0.05)

    def stop(self) -> None:
        for n in self.nodes:
            n.kill()

    def node(self, port: int) -> ClusterNode:
        for n in self.nodes:
            if n.port == port:
                return n
        raise LookupError(f"no node on port {port}")

    @staticmethod
    def _view(info: str, nodes: str) -> str | None:
        """A node's view of who serves which slots, or None while it is not settled."""
        if "cluster_state:ok" not in info:
            return None
        lines = []
        for line in nodes.strip().splitlines():
            f = line.split(" ")
            if any(s.startswith("[") for s in f[8:]):
                return None  # a slot migrating or importing
            if "fail" in f[2] or "handshake" in f[2]:
                return None
            lines.append(f[0] + " " + ",".join(sorted(f[8:])))
        return "\n".join(sorted(lines))

    def _agreed_sync(self) -> bool:
        views = set()
        for n in self.nodes:
            v = self._view(str(n.sync_cmd("CLUSTER", "INFO")), str(n.sync_cmd("CLUSTER", "NODES")))
            if v is None:
                return False
            views.add(v)
        return len(views) == 1

    async def agreed(self) -> bool:
        views = set()
        for n in self.nodes:
            v = self._view(
                str(await n.cmd("CLUSTER", "INFO")), str(await n.cmd("CLUSTER", "NODES"))
            )
            if v is None:
                return False
            views.add(v)
        return len(views) == 1

    async def wait_agreed(self, limit: float = 30.0) -> None:
        """Waits until every node reports cluster_state:ok and all agree on each slot's owner, no
        slot migrating."""
        deadline = time.monotonic() + limit
        while not await self.agreed():
            if time.monotonic() > deadline:
                raise AssertionError(f"the cluster's nodes do not agree after {limit} s")
            await asyncio.sleep(0.02)

    async def key_slot(self, key: str) -> int:
        return int(await self.nodes[0].cmd("CLUSTER", "KEYSLOT", key))

    async def owner(self, slot: int) -> ClusterNode:
        """The primary serving slot, as the first node sees it."""
        for lo, hi, primary, *_ in await self.nodes[0].cmd("CLUSTER", "SLOTS"):
            if int(lo) <= slot <= int(hi):
                return self.node(int(primary[1]))
        raise LookupError(f"slot {slot} is not served")

    async def migrate_slot(
        self,
        slot: int,
        to: ClusterNode,
        batch: int = 10,
        after_batch: Callable[[int], Awaitable[None]] | None = None,
    ) -> int:
        """Moves slot from its owner to to as redis-cli's resharding does: SETSLOT IMPORTING on
        to, SETSLOT MIGRATING on the owner, MIGRATE ... KEYS in batches of what GETKEYSINSLOT
        lists until nothing is left (after_batch called after each with the keys moved so far,
        the slot split meanwhile), then SETSLOT NODE on every node. Returns the keys moved, once
        every node agrees."""
        src = await self.owner(slot)
        assert src is not to, f"slot {slot} is already on {to}"
        await to.cmd("CLUSTER", "SETSLOT", slot, "IMPORTING", src.id)
        await src.cmd("CLUSTER", "SETSLOT", slot, "MIGRATING", to.id)
        moved = 0
        while True:
            keys = await src.cmd("CLUSTER", "GETKEYSINSLOT", slot, batch)
            if not keys:
                break
            r = await src.cmd("MIGRATE", "127.0.0.1", to.port, "", 0, 5000, "KEYS", *keys)
            assert r in ("OK", "NOKEY"), r
            moved += len(keys)
            if after_batch is not None:
                await after_batch(moved)
        await to.cmd("CLUSTER", "SETSLOT", slot, "NODE", to.id)
        await src.cmd("CLUSTER", "SETSLOT", slot, "NODE", to.id)
        for n in self.nodes:
            if n is not src and n is not to:
                await n.cmd("CLUSTER", "SETSLOT", slot, "NODE", to.id)
        await self.wait_agreed()
        return moved
