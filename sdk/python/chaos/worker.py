"""The fault harness's Python worker process (internal/chaos).

The harness starts it with the SDK's virtual environment
(``sdk/python/.venv/bin/python sdk/python/chaos/worker.py``), configured by the environment
variable EMQCHAOS_WORKER (the Go harness's WorkerConfig as JSON: durations in nanoseconds), and it
works the queue with the Python SDK until SIGTERM or SIGINT, then drains.

It writes the Go worker process's record format to its record file, one write(2) per line on a
file opened for appending, so that a SIGKILL loses nothing recorded: H at start, S and E around
every handler, and the settle outcome of every transition as the server answered it (C, Z, Y, T,
B, F; P for reaped leases; Q with the totals at a clean exit).

The worker runs Concurrency handler loops on the SDK's Queue: each claims a job (Queue.claim, or
Queue.complete_claim chaining the next claim onto a completion), runs the handler, and settles it
with the Queue call whose answer it records; a maintenance loop promotes due retries and reaps
expired leases (Queue.promote, Queue.reap) every Maintenance.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import signal
import sys
from collections import Counter
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
            maintenance_ms=ms(d.get("Maintenance") or 0) or 1000,
            wait_ms=ms(d.get("Wait") or 0) or 50,
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


class ChaosWorker:
    """Concurrency handler loops and a maintenance loop on one queue."""

    def __init__(self, q: echomq.Queue, cfg: Config, rec: Recorder) -> None:
        self.q = q
        self.cfg = cfg
        self.rec = rec
        self.rng = random.Random(cfg.seed ^ os.getpid())
        self.tally: Counter[str] = Counter()
        self.stop = asyncio.Event()

    async def handle(self, job: echomq.Job) -> bool:
        """The handler: records its start, sleeps a random time, records its end. It ignores the
        lease on purpose: it finishes its work even after the lease is lost, so that the protocol,
        not the handler, must refuse the stale completion. Returns False for a planned failure."""
        self.rec.line("S", job.id, job.token)
        span = max(0, self.cfg.handler_max_ms - self.cfg.handler_min_ms)
        d = self.cfg.handler_min_ms + self.rng.randint(0, span)
        fail = job.token == 1 and self.rng.random() < self.cfg.fail_rate
        await asyncio.sleep(d / 1000)
        self.rec.line("E", job.id, job.token, "err" if fail else "ok")
        return not fail

    async def settle(self, job: echomq.Job, ok: bool) -> echomq.Job | None:
        """Settles job after its handler: a completion chained with the next claim (complete_claim)
        unless the worker is stopping, or a retry after the backoff. Records the outcome; returns
        the job the completion leased, if any."""
        if ok:
            try:
                if self.stop.is_set():
                    await self.q.complete(job.id, job.token)
                    nxt: list[echomq.Job] = []
                else:
                    nxt = await self.q.complete_claim(job.id, job.token, self.cfg.lease_ms, 1)
            except echomq.StaleError:
                self.rec.line("Z", job.id, job.token)
                self.tally["stale"] += 1
                return None
            except Exception as err:
                log.error("complete %s token %d: %s", job.id, job.token, err)
                self.rec.line("F", job.id, job.token)
                self.tally["failed"] += 1
                return None
            self.rec.line("C", job.id, job.token)
            self.tally["completed"] += 1
            return nxt[0] if nxt else None
        try:
            await self.q.retry(job.id, job.token, self.cfg.backoff_ms)
        except echomq.StaleError:
            self.rec.line("Y", job.id, job.token)
            self.tally["stale"] += 1
            return None
        except Exception as err:
            log.error("retry %s token %d: %s", job.id, job.token, err)
            self.rec.line("F", job.id, job.token)
            self.tally["failed"] += 1
            return None
        self.rec.line("T", job.id, job.token)
        self.tally["retried"] += 1
        return None

    async def pause(self, seconds: float) -> None:
        """Sleeps for seconds, or until the worker stops."""
        try:
            await asyncio.wait_for(self.stop.wait(), seconds)
        except TimeoutError:
            pass

    async def loop(self) -> None:
        """One handler loop: claim, run, settle, until the worker stops."""
        job: echomq.Job | None = None
        while not self.stop.is_set():
            if job is None:
                try:
                    job = await self.q.claim(self.cfg.lease_ms)
                except Exception as err:
                    log.warning("claim: %s", err)
                    await self.pause(0.05)
                    continue
                if job is None:
                    await self.pause(self.cfg.wait_ms / 1000)
                    continue
                self.tally["claimed"] += 1
            ok = await self.handle(job)
            job = await self.settle(job, ok)
            if job is not None:
                self.tally["claimed"] += 1
        # A job leased by the last completion, once stopping: run it out.
        if job is not None:
            await self.settle(job, await self.handle(job))

    async def maintain(self) -> None:
        """Promotes due retries and reaps expired leases every maintenance interval."""
        while not self.stop.is_set():
            await self.pause(self.cfg.maintenance_ms / 1000)
            try:
                self.tally["promoted"] += await self.q.promote()
                n = await self.q.reap()
            except Exception as err:
                log.warning("maintenance: %s", err)
                continue
            if n > 0:
                self.rec.line("P", n)
                self.tally["reaped"] += n

    async def run(self) -> None:
        loops = [asyncio.create_task(self.loop()) for _ in range(self.cfg.concurrency)]
        maint = asyncio.create_task(self.maintain())
        await self.stop.wait()
        _, late = await asyncio.wait(loops, timeout=self.cfg.shutdown_ms / 1000)
        for t in late:
            t.cancel()
        maint.cancel()
        await asyncio.gather(*loops, maint, return_exceptions=True)


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
    try:
        w = ChaosWorker(client.queue(cfg.queue), cfg, rec)
        stopper = asyncio.create_task(stopping.wait())
        stopper.add_done_callback(lambda _: w.stop.set())
        await w.run()
        rec.line("Q", *(f"{k}={v}" for k, v in sorted(w.tally.items())))
    finally:
        await client.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
