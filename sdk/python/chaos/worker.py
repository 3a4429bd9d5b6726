"""The fault harness's Python worker process (internal/chaos).

The harness starts it with the SDK's virtual environment
(``sdk/python/.venv/bin/python sdk/python/chaos/worker.py``), configured by the environment
variable EMQCHAOS_WORKER (the Go harness's WorkerConfig as JSON: durations in nanoseconds), and it
works the queue with the SDK's ``echomq.Worker`` until SIGTERM or SIGINT, then drains.

It writes the Go worker process's record format to its record file, one write(2) per line on a
file opened for appending, so that a SIGKILL loses nothing recorded: H at start, S and E around
every handler, and the settle outcome of every transition as the worker counted it (C, Z, Y, T,
B, F; L for a refused lease extension; P for reaped leases; U for a count no job can be named
for; Q with the totals at a clean exit).

The outcomes are attributed as the Go worker process attributes them: echomq.Worker calls the
handler, and later settles its job and counts the outcome (its metrics hook) or logs a failure,
in one runner task; the handler here is a plain function that runs in that task when it is
called, and keeps the job it was called for in a context variable of the runner task, so each
count and each error logged is recorded against the job its runner last ran.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
import random
import signal
import sys
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import echomq

WORKER_ENV = "EMQCHAOS_WORKER"
"""The variable the harness passes the configuration in."""

log = logging.getLogger("emqchaos.worker")


def ms(ns: int | float) -> int:
    """Nanoseconds to whole milliseconds (0 stays 0)."""
    return max(1, round(ns / 1e6)) if ns > 0 else 0


@dataclass
class Config:
    """The Go harness's WorkerConfig, as encoding/json writes it."""

    addrs: list[str]
    queue: str
    concurrency: int
    lease_ms: int
    maintenance_ms: int
    wait_ms: int
    handler_min_ms: int
    handler_max_ms: int
    fail_rate: float
    backoff_ms: int
    shutdown_ms: int
    records: str
    seed: int

    @classmethod
    def from_json(cls, raw: str) -> Config:
        d: dict[str, Any] = json.loads(raw)
        return cls(
            addrs=list(d.get("Addrs") or []),
            queue=str(d["Queue"]),
            concurrency=int(d.get("Concurrency") or 1),
            lease_ms=ms(d.get("Lease") or 0) or 30_000,
            maintenance_ms=ms(d.get("Maintenance") or 0),
            wait_ms=ms(d.get("Wait") or 0),
            handler_min_ms=ms(d.get("HandlerMin") or 0),
            handler_max_ms=ms(d.get("HandlerMax") or 0),
            fail_rate=float(d.get("FailRate") or 0),
            backoff_ms=ms(d.get("Backoff") or 0),
            shutdown_ms=ms(d.get("ShutdownTimeout") or 0) or 5000,
            records=str(d["Records"]),
            seed=int(d.get("Seed") or 0),
        )


class Recorder:
    """Appends records to a file, one write(2) per record."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def line(self, *words: str | int) -> None:
        """Writes one line of words."""
        os.write(self.fd, (" ".join(str(w) for w in words) + "\n").encode())


@dataclass
class Current:
    """The job a runner task's handler last ran."""

    id: str = ""
    token: int = 0
    ended: bool = False
    """The handler returned."""
    ok: bool = False
    """... without raising: the worker then completes the job."""
    settled: bool = True


_current: contextvars.ContextVar[Current | None] = contextvars.ContextVar(
    "emqchaos_current", default=None
)


class Attribution:
    """The handler, the metrics hook and the error log of the worker process: it records every
    handler's start and end, and each settle outcome against the job of the runner task that
    counted it."""

    def __init__(self, cfg: Config, rec: Recorder) -> None:
        self.cfg = cfg
        self.rec = rec
        self.rng = random.Random(cfg.seed ^ os.getpid())
        self.tally = echomq.Tally()

    def handler(self, job: echomq.Job) -> Awaitable[None]:
        """Called by the worker's runner task: notes the job in that task's context, then returns
        the work."""
        cur = _current.get()
        if cur is None:
            cur = Current()
            _current.set(cur)
        cur.id, cur.token, cur.ended, cur.ok, cur.settled = job.id, job.token, False, False, False
        return self.work(job, cur)

    async def work(self, job: echomq.Job, cur: Current) -> None:
        """Sleeps a random time. It ignores cancellation on purpose (a lost lease, the shutdown
        deadline): it finishes its work even after the lease is lost, so that the protocol, not
        the handler, must refuse the stale completion."""
        self.rec.line("S", job.id, job.token)
        span = max(0, self.cfg.handler_max_ms - self.cfg.handler_min_ms)
        d = (self.cfg.handler_min_ms + self.rng.randint(0, span)) / 1000
        fail = job.token == 1 and self.rng.random() < self.cfg.fail_rate
        loop = asyncio.get_running_loop()
        end = loop.time() + d
        while (left := end - loop.time()) > 0:
            try:
                await asyncio.sleep(left)
            except asyncio.CancelledError:
                continue
        cur.ended, cur.ok = True, not fail
        self.rec.line("E", job.id, job.token, "err" if fail else "ok")
        if fail:
            raise RuntimeError("emqchaos: a planned failure")

    def settle(self, kind: str) -> bool:
        """Records kind against the job the current runner task's handler last ran, when it
        returned and is not settled yet; reports whether it did."""
        cur = _current.get()
        if cur is None or not cur.ended or cur.settled:
            return False
        cur.settled = True
        if kind == "Z" and not cur.ok:
            kind = "Y"  # the handler failed: the refused transition was a retry or a bury
        self.rec.line(kind, cur.id, cur.token)
        return True

    def add(self, counter: echomq.Counter, queue: str, n: int) -> None:
        """The metrics hook: counts for the totals and records the settle outcomes."""
        self.tally.add(counter, queue, n)
        kinds = {
            echomq.Counter.COMPLETED: "C",
            echomq.Counter.STALE: "Z",
            echomq.Counter.RETRIED: "T",
            echomq.Counter.BURIED: "B",
        }
        if counter is echomq.Counter.REAPED:
            self.rec.line("P", n)
            return
        kind = kinds.get(counter)
        if kind is None:
            return
        if n == 1 and self.settle(kind):
            return
        if counter is echomq.Counter.STALE:
            self.rec.line("L")  # the extender's refusals count in its own task
            return
        self.rec.line("U", counter.value, n)


class AttribHandler(logging.Handler):
    """Records an error logged by a runner task whose handler returned and whose job is not
    settled: the settle failed, and the worker does not know whether it took effect."""

    def __init__(self, att: Attribution) -> None:
        super().__init__(logging.ERROR)
        self.att = att

    def emit(self, record: logging.LogRecord) -> None:
        self.att.settle("F")


async def connect(cfg: Config, stop: asyncio.Event) -> echomq.Client:
    """Connects, retrying every 100 ms until it succeeds or the worker is stopped."""
    url = "redis://" + (cfg.addrs[0] if cfg.addrs else "127.0.0.1:6379")
    while True:
        try:
            return await echomq.connect(url, logger=log)
        except Exception as err:
            if stop.is_set():
                raise
            log.warning("connect failed; retrying: %s", err)
            await asyncio.sleep(0.1)


async def main() -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    try:
        cfg = Config.from_json(os.environ.get(WORKER_ENV, ""))
    except (ValueError, KeyError) as err:
        print(f"emqchaos python worker: bad {WORKER_ENV}: {err}", file=sys.stderr)
        return 2
    rec = Recorder(cfg.records)
    rec.line("H", os.getpid())
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    client = await connect(cfg, stopping)
    att = Attribution(cfg, rec)
    sdk_log = logging.getLogger("emqchaos.worker.sdk")
    sdk_log.addHandler(AttribHandler(att))
    opts: dict[str, Any] = {}
    if cfg.maintenance_ms > 0:
        opts["maintenance_ms"] = cfg.maintenance_ms
    if cfg.wait_ms > 0:
        opts["wait_ms"] = cfg.wait_ms
    backoff = cfg.backoff_ms
    try:
        w = echomq.Worker(
            client.queue(cfg.queue),
            att.handler,
            concurrency=cfg.concurrency,
            lease_ms=cfg.lease_ms,
            backoff=lambda _attempt: backoff,
            shutdown_timeout_ms=cfg.shutdown_ms,
            logger=sdk_log,
            metrics=att,
            **opts,
        )
        stopper = asyncio.create_task(stopping.wait())
        stopper.add_done_callback(lambda _: w.stop())
        await w.run()
        totals = att.tally.snapshot()
        rec.line("Q", *(f"{k}={v}" for k, v in sorted(totals.items())))
    finally:
        await client.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
