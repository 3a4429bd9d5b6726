"""The fault harness's Python scheduler process (internal/chaos, scenario schedulers).

The harness starts it with the SDK's virtual environment
(``sdk/python/.venv/bin/python sdk/python/chaos/scheduler.py``), configured by the environment
variable EMQCHAOS_SCHEDULER (the Go harness's SchedulerConfig as JSON: durations in
nanoseconds). It upserts every scheduler of the configuration (the same schedule at every start,
so the next slot is kept), then runs the SDK's scheduler loop (``Queue.fire_due`` every poll, an
error logged and the round tried again after a growing pause) until SIGTERM or SIGINT.

It writes the Go scheduler process's record format to its record file, one write(2) per line on
a file opened for appending, so that a SIGKILL loses nothing recorded: H with its pid once the
schedulers are upserted, then F with the run id, slot, until and scheduler of every run it fired.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import echomq

SCHEDULER_ENV = "EMQCHAOS_SCHEDULER"
"""The variable the harness passes the configuration in."""

log = logging.getLogger("emqchaos.scheduler")


def ms(ns: int | float) -> int:
    """Nanoseconds to whole milliseconds."""
    return round(ns / 1e6)


def missed_of(word: object) -> echomq.Missed:
    """A word of the missed vocabulary (ValueError for another)."""
    if word not in echomq.MISSEDS:
        raise ValueError(f"missed {word!r} is not one of {', '.join(echomq.MISSEDS)}")
    return word


@dataclass
class Spec:
    """One scheduler: an interval from a fixed anchor."""

    id: str
    every_ms: int
    start_ms: int
    missed: echomq.Missed
    backfill: int
    grace_ms: int


@dataclass
class Config:
    """The Go harness's SchedulerConfig, as encoding/json writes it."""

    addrs: list[str]
    queue: str
    specs: list[Spec]
    template: str
    poll_ms: int
    horizon_ms: int
    records: str

    @classmethod
    def from_json(cls, raw: str) -> Config:
        d: dict[str, Any] = json.loads(raw)
        return cls(
            addrs=list(d.get("Addrs") or []),
            queue=str(d["Queue"]),
            specs=[
                Spec(
                    id=str(s["ID"]),
                    every_ms=ms(s["Every"]),
                    start_ms=int(s["StartMS"]),
                    missed=missed_of(s["Missed"]),
                    backfill=int(s.get("Backfill") or 0),
                    grace_ms=ms(s.get("Grace") or 0),
                )
                for s in d.get("Specs") or []
            ],
            template=str(d.get("Template") or ""),
            poll_ms=ms(d.get("Poll") or 0) or 250,
            horizon_ms=ms(d.get("Horizon") or 0),
            records=str(d["Records"]),
        )


class Recorder:
    """Appends records to a file, one write(2) per record."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def line(self, *words: str | int) -> None:
        """Writes one line of words."""
        os.write(self.fd, (" ".join(str(w) for w in words) + "\n").encode())


async def connect(cfg: Config, stop: asyncio.Event) -> echomq.Client:
    """Connects, retrying every 100 ms until it succeeds or the process is stopped."""
    url = "redis://" + (cfg.addrs[0] if cfg.addrs else "127.0.0.1:6379")
    while True:
        try:
            return await echomq.connect(url, logger=log)
        except Exception as err:
            if stop.is_set():
                raise
            log.warning("connect failed; retrying: %s", err)
            await asyncio.sleep(0.1)


async def upsert(q: echomq.Queue, cfg: Config, stop: asyncio.Event) -> None:
    """Upserts every scheduler, each retried until the server answers."""
    for s in cfg.specs:
        while True:
            try:
                await q.upsert_scheduler(
                    s.id,
                    every_ms=s.every_ms,
                    start_ms=s.start_ms,
                    missed=s.missed,
                    backfill=s.backfill,
                    grace_ms=s.grace_ms,
                    template=cfg.template.encode(),
                )
                break
            except echomq.ArgumentError:
                raise
            except Exception as err:
                if stop.is_set():
                    raise
                log.warning("upsert of %s failed; retrying: %s", s.id, err)
                await asyncio.sleep(0.05)


async def loop(q: echomq.Queue, cfg: Config, rec: Recorder, stop: asyncio.Event) -> None:
    """The scheduler loop: fire_due, record what it fired, wait poll; after an error, a growing
    pause (up to 5 s)."""
    failures = 0
    while not stop.is_set():
        wait = cfg.poll_ms / 1000
        try:
            for r in await q.fire_due(horizon_ms=cfg.horizon_ms):
                rec.line("F", r.id, r.slot_ms, r.until_ms, r.scheduler)
            failures = 0
        except Exception as err:
            failures += 1
            wait = min(0.1 * 2 ** min(failures - 1, 6), 5.0)
            log.warning("a scheduler round failed; trying again in %.2fs: %s", wait, err)
        try:
            await asyncio.wait_for(stop.wait(), wait)
        except TimeoutError:
            pass


async def main() -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    try:
        cfg = Config.from_json(os.environ.get(SCHEDULER_ENV, ""))
    except (ValueError, KeyError) as err:
        print(f"emqchaos python scheduler: bad {SCHEDULER_ENV}: {err}", file=sys.stderr)
        return 2
    rec = Recorder(cfg.records)
    ev = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        ev.add_signal_handler(sig, stopping.set)
    client = await connect(cfg, stopping)
    try:
        q = client.queue(cfg.queue)
        await upsert(q, cfg, stopping)
        rec.line("H", os.getpid())
        await loop(q, cfg, rec, stopping)
    finally:
        await client.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
