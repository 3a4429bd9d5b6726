"""The Python half of the benchmark: one side (the EchoMQ Python SDK, arq or
RQ) against the redis-server the Go benchmark (bench/) started, with the
scenarios the Go half runs against asynq and the Node half against BullMQ:

  1. enqueue, one job per call (N concurrent producers)
  2. enqueue, batched (push_batch / RQ enqueue_many; arq has none)
  3. drain a pre-filled queue (processing only)
  4. enqueue and process at once
  5. enqueue -> handler start on an idle worker (p50, p99)
  6. Redis CPU per job (INFO cpu) over scenario 4

It runs one side per process, since each side runs in a virtualenv of its
own (the SDK in sdk/python's, the peers in bench/python/.venv), and prints
one JSON document on stdout; bench/ (python.go) runs it once per scenario
and side (--scenarios) and turns the results into rows. Alone:

  .venv/bin/python bench.py --side arq --addr 127.0.0.1:6379 [--jobs 10000]
"""

import argparse
import asyncio
import importlib
import json
import platform
import random
import signal
import sys
import threading
import time

import redis.asyncio as aioredis
from common import Sample

SIDES = {"emq": "emq_side", "arq": "arq_side", "rq": "rq_side"}

p = argparse.ArgumentParser()
p.add_argument("--side", required=True, choices=sorted(SIDES))
p.add_argument("--addr", required=True)
p.add_argument("--jobs", type=int, default=10000)
p.add_argument("--producers", type=int, default=8)
p.add_argument("--concurrency", type=int, default=50)
p.add_argument("--batch", type=int, default=100)
p.add_argument("--runs", type=int, default=3)
p.add_argument("--latency-samples", type=int, default=500)
p.add_argument("--latency-budget-ms", type=int, default=20000)
p.add_argument("--rq-workers", type=int, default=4)
p.add_argument(
    "--scenarios",
    default="enqueue_one,enqueue_batched,drain,enqueue_process,latency",
    help="the scenarios to run, comma-separated (bench/ runs one at a time, side after side)",
)
cfg = p.parse_args()

PAYLOAD = "x" * 64
host, _, port = cfg.addr.rpartition(":")


def log(msg):
    sys.stderr.write("bench.py: %s %s\n" % (cfg.side, msg))
    sys.stderr.flush()


class Counter:
    """Counts handled jobs; wait() returns when target were handled."""

    def __init__(self, target):
        self.target = target
        self.seen = 0
        self.done = asyncio.Event()

    def handle(self, _payload=None):
        self.seen += 1
        if self.seen >= self.target:
            self.done.set()

    async def wait(self, seconds):
        try:
            await asyncio.wait_for(self.done.wait(), seconds)
        except asyncio.TimeoutError:
            raise RuntimeError(
                "only %d of %d jobs processed within %.0f s" % (self.seen, self.target, seconds)
            ) from None


async def produce(side, n, producers, batched, chunk):
    """Enqueues n jobs from `producers` concurrent loops (asyncio tasks on one
    client, or threads on one connection pool for a synchronous side), taking
    `chunk` jobs at a time: one call per job, or one batch per chunk."""
    state = {"next": 0}
    lock = threading.Lock()

    def take():
        with lock:
            start = state["next"]
            count = min(chunk, n - start)
            state["next"] += max(count, 0)
            return count

    if side.sync:

        def loop():
            while (count := take()) > 0:
                if batched:
                    side.enqueue_batch([PAYLOAD] * count)
                else:
                    for _ in range(count):
                        side.enqueue(PAYLOAD)

        await asyncio.gather(*(asyncio.to_thread(loop) for _ in range(producers)))
        return

    async def aloop():
        while (count := take()) > 0:
            if batched:
                await side.enqueue_batch([PAYLOAD] * count)
            else:
                for _ in range(count):
                    await side.enqueue(PAYLOAD)

    await asyncio.gather(*(aloop() for _ in range(producers)))


async def server_cpu(admin):
    info = await admin.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def client_cpu(side):
    """CPU seconds this process and the side's worker processes (RQ's) used."""
    return time.process_time() + (side.worker_cpu() if hasattr(side, "worker_cpu") else 0.0)


async def window(admin, side, fn, jobs):
    cpu0, client0 = await server_cpu(admin), client_cpu(side)
    t0 = time.perf_counter()
    await fn()
    secs = time.perf_counter() - t0
    client = client_cpu(side) - client0
    cpu = await server_cpu(admin) - cpu0
    return {
        "jobs": jobs,
        "seconds": secs,
        "jobs_per_s": jobs / secs,
        "server_cpu_us_per_job": cpu * 1e6 / jobs,
        "client_cpu_us_per_job": client * 1e6 / jobs,
    }


def timeout(jobs):
    return 60 + jobs * 0.01


async def session(admin, side, fn):
    await admin.flushall()
    await side.open(cfg)
    try:
        return await fn()
    finally:
        await side.close()


async def enqueue_one(admin, side):
    return await session(
        admin, side, lambda: window(admin, side, lambda: produce(side, cfg.jobs, cfg.producers, False, 64), cfg.jobs)
    )


async def enqueue_batched(admin, side):
    return await session(
        admin,
        side,
        lambda: window(admin, side, lambda: produce(side, cfg.jobs, cfg.producers, side.batched, cfg.batch), cfg.jobs),
    )


async def drain(admin, side):
    async def fn():
        await produce(side, cfg.jobs, cfg.producers, side.batched, cfg.batch)
        c = Counter(cfg.jobs)
        await side.prepare_worker()
        stop = None

        async def timed():
            nonlocal stop
            stop = await side.start_worker(c.handle)
            await c.wait(timeout(cfg.jobs))

        try:
            return await window(admin, side, timed, cfg.jobs)
        finally:
            if stop:
                await stop()

    return await session(admin, side, fn)


async def enqueue_process(admin, side):
    async def fn():
        c = Counter(cfg.jobs)
        await side.prepare_worker()
        stop = None

        async def timed():
            nonlocal stop
            stop = await side.start_worker(c.handle)
            await asyncio.gather(produce(side, cfg.jobs, cfg.producers, False, 64), c.wait(timeout(cfg.jobs)))

        try:
            return await window(admin, side, timed, cfg.jobs)
        finally:
            if stop:
                await stop()

    return await session(admin, side, fn)


async def latency(admin, side):
    async def fn():
        got = {"future": None}

        def handle(payload):
            if isinstance(payload, Sample):
                ms = payload.ms
            else:
                if isinstance(payload, bytes):
                    payload = payload.decode()
                try:
                    ms = (time.time() - float(payload)) * 1000
                except (TypeError, ValueError):
                    return
            f = got["future"]
            if f is not None and not f.done():
                f.set_result(ms)

        await side.prepare_worker()
        stop = await side.start_worker(handle)
        try:
            await asyncio.sleep(0.3)
            ds = []
            start = time.monotonic()
            loop = asyncio.get_running_loop()
            while len(ds) < cfg.latency_samples and (time.monotonic() - start) * 1000 < cfg.latency_budget_ms:
                await asyncio.sleep((2 + random.random() * 6) / 1000)
                got["future"] = loop.create_future()
                if side.sync:
                    await asyncio.to_thread(side.enqueue, repr(time.time()))
                else:
                    await side.enqueue(repr(time.time()))
                try:
                    ds.append(await asyncio.wait_for(got["future"], 30))
                except asyncio.TimeoutError:
                    raise RuntimeError("a latency sample was not handled within 30 s") from None
                got["future"] = None
        finally:
            await stop()
        ds.sort()
        q = lambda f: ds[min(len(ds) - 1, int(f * len(ds)))]  # noqa: E731
        return {
            "samples": len(ds),
            "p50_ms": q(0.5),
            "p99_ms": q(0.99),
            "max_ms": ds[-1],
            "budget": "%d samples or %d ms" % (cfg.latency_samples, cfg.latency_budget_ms),
        }

    return await session(admin, side, fn)


SCENARIOS = [
    ("enqueue_one", enqueue_one),
    ("enqueue_batched", enqueue_batched),
    ("drain", drain),
    ("enqueue_process", enqueue_process),
]


async def bounded(name, coro):
    """Runs one scenario within a generous bound; past it, every task's stack
    goes to stderr and the run fails (a stuck side never holds up the run)."""
    limit = 120 + cfg.jobs * 0.05 + cfg.latency_budget_ms / 1000
    task = asyncio.ensure_future(coro)
    done, _ = await asyncio.wait([task], timeout=limit)
    if not done:
        log("%s did not finish within %.0f s; the tasks:" % (name, limit))
        dump_tasks()
        task.cancel()
        raise RuntimeError("%s: %s did not finish within %.0f s" % (cfg.side, name, limit))
    return task.result()


def dump_tasks():
    """SIGUSR1: every task's stack on stderr (a run that seems stuck)."""
    for t in asyncio.all_tasks():
        t.print_stack(file=sys.stderr)


async def main():
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, dump_tasks)
    side = importlib.import_module(SIDES[cfg.side]).Side()
    admin = aioredis.Redis(host=host, port=int(port))
    out = {
        "python": platform.python_version(),
        "side": cfg.side,
        "version": side.version(),
        "notes": side.notes(cfg),
        "results": {},
    }
    try:
        wanted = cfg.scenarios.split(",")
        unknown = set(wanted) - {n for n, _ in SCENARIOS} - {"latency"}
        if unknown:
            raise SystemExit("bench.py: unknown scenarios %s" % ", ".join(sorted(unknown)))
        for name, run in SCENARIOS:
            if name not in wanted:
                continue
            runs = [await bounded(name, run(admin, side)) for _ in range(cfg.runs)]
            m = dict(sorted(runs, key=lambda r: r["jobs_per_s"])[len(runs) // 2])
            m["runs"] = [round(r["jobs_per_s"]) for r in runs]
            out["results"][name] = m
            log("%s: %.0f jobs/s (runs %s)" % (name, m["jobs_per_s"], m["runs"]))
        if "latency" in wanted:
            out["results"]["latency"] = await bounded("latency", latency(admin, side))
            lat = out["results"]["latency"]
            log("latency: p50 %.2f ms, p99 %.2f ms over %d samples" % (lat["p50_ms"], lat["p99_ms"], lat["samples"]))
    finally:
        await admin.flushall()
        await admin.aclose()
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")


asyncio.run(main())
