"""The asyncio peer: arq (its current release from PyPI, locked), on
redis-py's asyncio client. Producers share one ArqRedis pool and call
enqueue_job; the worker is an arq Worker in this process and event loop
with max_jobs = the concurrency, its own pool (as arq's Worker makes when
given redis_settings), keep_result=0 (nothing stored for a finished job,
as BullMQ's removeOnComplete and the SDK's retirement) and a 10 ms
poll_delay: arq polls its queue and never blocks on it, and with its
default poll_delay (0.5 s) and queue_read_limit (= max_jobs) a worker of
no-op jobs takes at most max_jobs per half second, so the benchmark tunes
it for throughput (and for idle latency). arq has no batched enqueue: the
batched scenario is one enqueue_job per job, measured again."""

import asyncio
import logging

import arq
from arq import create_pool
from arq.connections import RedisSettings
from arq.worker import Worker, func

POLL_DELAY = 0.01
logging.getLogger("arq").setLevel(logging.WARNING)


class Side:
    name = "arq"
    sync = False
    batched = False

    def version(self):
        import redis

        return "arq %s, redis-py %s" % (arq.VERSION, redis.__version__)

    def notes(self, cfg):
        return (
            "arq: enqueue_job from %d producers on one ArqRedis pool; Worker(max_jobs=%d, keep_result=0, poll_delay=%g s) in the same event loop on its own pool; no batched enqueue (the batched figure is one enqueue_job per job again)"
            % (
                cfg.producers,
                cfg.concurrency,
                POLL_DELAY,
            )
        )

    async def open(self, cfg):
        host, _, port = cfg.addr.rpartition(":")
        self.settings = RedisSettings(host=host, port=int(port))
        self.concurrency = cfg.concurrency
        self.pool = await create_pool(self.settings)

    async def close(self):
        await self.pool.aclose()

    async def enqueue(self, payload):
        job = await self.pool.enqueue_job("noop", payload)
        if job is None:
            raise RuntimeError("enqueue_job: a job with that id exists")

    async def enqueue_batch(self, payloads):
        for p in payloads:
            await self.enqueue(p)

    async def prepare_worker(self):
        pass

    async def start_worker(self, handle):
        async def noop(ctx, payload):
            handle(payload)

        worker = Worker(
            functions=[func(noop, name="noop")],
            redis_settings=self.settings,
            max_jobs=self.concurrency,
            keep_result=0,
            poll_delay=POLL_DELAY,
            handle_signals=False,
        )
        task = asyncio.create_task(worker.async_run())

        async def stop():
            # Stop polling, let the jobs in hand finish their bookkeeping,
            # close the worker's pool (Worker.close without its signal
            # handlers cancels the jobs in hand).
            if worker.main_task is not None:
                worker.main_task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            await asyncio.gather(*worker.tasks.values(), return_exceptions=True)
            if worker._pool is not None:
                await worker.pool.aclose()

        return stop
