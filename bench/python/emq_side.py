"""The EchoMQ Python SDK (sdk/python, package echomq, on redis-py's asyncio
client), run from sdk/python/.venv with sdk/python/src on the path:
queue.push and queue.push_batch to enqueue, from one client shared by the
producers. The worker is an echomq.Worker at the given concurrency (its
other options at their defaults) on a client of its own, as arq's Worker
has its own pool."""

import asyncio
import os

import redis

import echomq

QUEUE = "bench"


class Side:
    name = "emq"
    sync = False
    batched = True

    def version(self):
        return "echomq %s (protocol %s), redis-py %s" % (_sdk_version(), echomq.VERSION, redis.__version__)

    def notes(self, cfg):
        return (
            "Python SDK: Queue.push from %d producers on one connect() client, Queue.push_batch of %d for batched; "
            "an echomq.Worker at concurrency %d (other options at their defaults) on a client of its own"
            % (cfg.producers, cfg.batch, cfg.concurrency)
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
        async def handler(job):
            handle(job.payload)

        worker = echomq.Worker(self.wclient.queue(QUEUE), handler, concurrency=self.concurrency)
        task = asyncio.create_task(worker.run())

        async def stop():
            worker.stop()
            await task

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
