"""The EchoMQ Python SDK (sdk/python, package echomq, on redis-py's asyncio
client), run from sdk/python/.venv with sdk/python/src on the path:
queue.push and queue.push_batch to enqueue, from one client shared by the
producers. The worker has a client of its own, as arq's does. When the
package has a Worker it is used at the given concurrency; until then the
worker is `concurrency` tasks that lease with Queue.claim_many, retire each
job and lease the next in one call with Queue.complete_claim, and block on
the queue's doorbell (BLPOP of its wake key, on the client's redis-py
connection) when nothing is pending — what a Worker does, without its
maintenance (promote, reap) and retries."""

import asyncio
import os

import redis

import echomq

QUEUE = "bench"
LEASE_MS = 30_000
IDLE_BLOCK_S = 1.0


class Side:
    name = "emq"
    sync = False
    batched = True

    def version(self):
        return "echomq %s (protocol %s), redis-py %s" % (_sdk_version(), echomq.VERSION, redis.__version__)

    def notes(self, cfg):
        if hasattr(echomq, "Worker"):
            how = "an echomq.Worker at concurrency %d on a client of its own" % cfg.concurrency
        else:
            how = (
                "no echomq.Worker on main yet: %d tasks on a client of their own looping Queue.claim_many / "
                "Queue.complete_claim (retire and lease the next in one call), blocking on the doorbell when idle"
                % cfg.concurrency
            )
        return (
            "Python SDK: Queue.push from %d producers on one connect() client, Queue.push_batch of %d for batched; %s"
            % (
                cfg.producers,
                cfg.batch,
                how,
            )
        )

    async def open(self, cfg):
        self.url = "redis://" + cfg.addr
        self.concurrency = cfg.concurrency
        self.client = await echomq.connect(self.url)
        self.queue = self.client.queue(QUEUE)
        self.wclient = None

    async def close(self):
        await self.client.close()
        if self.wclient is not None:
            await self.wclient.close()
            self.wclient = None

    async def enqueue(self, payload):
        if not await self.queue.push(self.client.mint(), payload):
            raise RuntimeError("push: duplicate id")

    async def enqueue_batch(self, payloads):
        results = await self.queue.push_batch([echomq.NewJob(id=self.client.mint(), payload=p) for p in payloads])
        for r in results:
            if r.error is not None:
                raise r.error
            if not r.enqueued:
                raise RuntimeError("push_batch: duplicate id")

    async def prepare_worker(self):
        self.wclient = await echomq.connect(self.url)

    async def start_worker(self, handle):
        if hasattr(echomq, "Worker"):
            return await self._sdk_worker(handle)
        return await self._claim_loop(handle)

    async def _sdk_worker(self, handle):
        async def handler(job):
            handle(job.payload)

        worker = echomq.Worker(self.wclient.queue(QUEUE), handler, concurrency=self.concurrency)
        task = asyncio.create_task(worker.run())

        async def stop():
            await worker.close()
            await task

        return stop

    async def _claim_loop(self, handle):
        q = self.wclient.queue(QUEUE)
        r = self.wclient.redis
        done = asyncio.Event()

        async def loop():
            jobs = []
            while not done.is_set():
                if not jobs:
                    jobs = await q.claim_many(LEASE_MS, 1)
                    if not jobs:
                        await r.blpop([q.keys.wake], timeout=IDLE_BLOCK_S)
                        continue
                job = jobs.pop()
                handle(job.payload)
                jobs = await q.complete_claim(job.id, job.token, LEASE_MS, 1) + jobs

        tasks = [asyncio.create_task(loop()) for _ in range(self.concurrency)]

        async def stop():
            done.set()
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        return stop


def _sdk_version():
    # the package's version from its pyproject.toml (it is run from its
    # source tree, not installed)
    path = os.path.join(os.path.dirname(echomq.__file__), "..", "..", "pyproject.toml")
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("version = "):
                    return line.split('"')[1]
    except OSError:
        pass
    return "unknown"
