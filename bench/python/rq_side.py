"""The synchronous peer: RQ (its current release from PyPI, locked), on
redis-py. Producers are threads sharing one Redis connection pool and call
Queue.enqueue, or Queue.enqueue_many of prepare_data for the batched
scenario; jobs are enqueued with result_ttl=0 (nothing kept once done).
Workers are processes, as RQ's are: --rq-workers SimpleWorker processes
(no fork per job; the default Worker forks a work horse for every job),
started and connected before the timed window and released into their
work loop at its start. The job (rq_jobs.noop) counts itself with INCR and
pushes its latency, which the driver polls: one more command per job on
RQ's side."""

import asyncio
import os
import signal
import subprocess
import sys

import redis
import redis.asyncio as aioredis
import rq
from redis import Redis
from rq import Queue

import rq_jobs
from common import Sample

HERE = os.path.dirname(os.path.abspath(__file__))


class Side:
    name = "rq"
    sync = True
    batched = True

    def version(self):
        return "rq %s (SimpleWorker processes), redis-py %s" % (rq.__version__, redis.__version__)

    def notes(self, cfg):
        return (
            "RQ: Queue.enqueue from %d producer threads on one connection pool, enqueue_many of %d for batched; %d SimpleWorker processes (RQ runs one job at a time per worker; no fork per job), result_ttl=0"
            % (
                cfg.producers,
                cfg.batch,
                cfg.rq_workers,
            )
        )

    async def open(self, cfg):
        self.addr = cfg.addr
        self.workers = cfg.rq_workers
        host, _, port = cfg.addr.rpartition(":")
        self.conn = Redis(host=host, port=int(port), max_connections=64)
        self.queue = Queue("bench", connection=self.conn)
        self.poll = aioredis.Redis(host=host, port=int(port))
        self.procs = []

    async def close(self):
        self.conn.close()
        await self.poll.aclose()

    def enqueue(self, payload):
        self.queue.enqueue(rq_jobs.noop, payload, result_ttl=0)

    def enqueue_batch(self, payloads):
        self.queue.enqueue_many([Queue.prepare_data(rq_jobs.noop, (p,), result_ttl=0) for p in payloads])

    async def prepare_worker(self):
        env = dict(os.environ, PYTHONPATH=HERE)
        self.procs = [
            subprocess.Popen(
                [sys.executable, os.path.join(HERE, "rq_worker.py"), self.addr],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
                cwd=HERE,
                text=True,
            )
            for _ in range(self.workers)
        ]
        for p in self.procs:
            line = await asyncio.to_thread(p.stdout.readline)
            if line.strip() != "ready":
                raise RuntimeError("an RQ worker process did not start (exit %s)" % p.poll())

    def worker_cpu(self):
        """CPU seconds the worker processes used so far (utime + stime)."""
        total = 0
        for p in self.procs:
            try:
                with open("/proc/%d/stat" % p.pid) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
            except (OSError, IndexError, ValueError):
                pass
        return total / os.sysconf("SC_CLK_TCK")

    async def start_worker(self, handle):
        for p in self.procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        done = asyncio.Event()

        async def watch():
            # Every 2 ms at most: the jobs counted so far, and a latency
            # sample when one was pushed.
            seen = 0
            while not done.is_set():
                n = int(await self.poll.get(rq_jobs.DONE) or 0)
                for _ in range(n - seen):
                    handle(None)
                seen = n
                got = await self.poll.blpop([rq_jobs.LATENCY], timeout=0.002)
                if got:
                    handle(Sample(float(got[1])))

        task = asyncio.create_task(watch())

        async def stop():
            done.set()
            await task
            for p in self.procs:
                p.send_signal(signal.SIGTERM)
            for p in self.procs:
                try:
                    await asyncio.to_thread(p.wait, 30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    raise RuntimeError("an RQ worker did not stop within 30 s of SIGTERM")
            self.procs = []

        return stop
