"""The Python SDK's scheduler runner for the bench's scheduler scenario
(bench/schedulers.go): Queue.run_schedulers with its defaults (poll 0.25 s,
horizon 0, pages of 100), stopped by an asyncio.Event. The Go benchmark
starts it with sdk/python/.venv's python and sdk/python/src on the path:

  python scheduler_side.py --addr HOST:PORT --queue NAME

It prints one JSON line when its runner is started ({"ready": true, the
client's snowflake node, the SDK's version}), runs until its stdin ends,
then stops the runner, waits for it, and prints one JSON line of what it
fired ({"fired": n, "ticks": ticks that fired runs}).

run_schedulers has no on-fire callback (the Go runner's OnFire, the
TypeScript runner's onFired) and drops what each tick's fire_due returns,
so the side counts through the queue's fire_due, the one call each tick of
the runner makes: it wraps it on the queue object, returning what it
returns. The loop is the SDK's, unchanged."""

import argparse
import asyncio
import json
import platform
import sys

import echomq
from emq_side import _sdk_version

p = argparse.ArgumentParser()
p.add_argument("--addr", required=True)
p.add_argument("--queue", required=True)
cfg = p.parse_args()


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def main():
    client = await echomq.connect("redis://" + cfg.addr)
    queue = client.queue(cfg.queue)
    counts = {"fired": 0, "ticks": 0}
    fire_due = queue.fire_due

    async def counting_fire_due(*args, **kwargs):
        runs = await fire_due(*args, **kwargs)
        if runs:
            counts["fired"] += len(runs)
            counts["ticks"] += 1
        return runs

    queue.fire_due = counting_fire_due
    stop = asyncio.Event()
    runner = asyncio.create_task(queue.run_schedulers(stop=stop))
    loop = asyncio.get_running_loop()
    emit(
        {
            "ready": True,
            "node": client.node,
            "version": f"echomq {_sdk_version()} (protocol {echomq.VERSION}), "
            f"Python {platform.python_version()}",
        }
    )
    # stdin's end (the benchmark closes it) stops the runner
    await loop.run_in_executor(None, sys.stdin.buffer.read)
    stop.set()
    await runner
    await client.close()
    emit(counts)


asyncio.run(main())
