"""A Python client the Go fault harness drives (internal/chaos).

One JSON request per line on stdin, one JSON reply per line on stdout, matched by seq; requests
run concurrently. It is how the harness pushes jobs through the Python SDK (the Python producer of
the interop scenario) and how the cross-language stale tests claim and complete from Python. It
speaks the protocol of the TypeScript driver (sdk/ts/chaos/driver.ts):

    connect  {url}                        -> {node}
    mint     {n}                          -> {ids}
    push     {queue, jobs: [{id, data}]}  -> {pushed: [{enqueued} | {error}]}
    claim    {queue, leaseMs}             -> {job: {id, token} | null}
    complete {queue, id, token}           -> {}
    reap     {queue}                      -> {n}
    close                                 -> {} (then the process exits)

A failed request answers {seq, error: {name, message, code, stale}}: code is the wire class of a
refusal, stale whether the error is the SDK's StaleError.

Run it with the SDK's virtual environment:
``sdk/python/.venv/bin/python sdk/python/chaos/driver.py`` (it puts sdk/python/src on the module
path itself).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import echomq

Obj = dict[str, Any]

# The 2.0 calls the 2.2.0 calls replaced (claim, promote, reap, complete_claim) are deprecated;
# this program calls them deliberately (the frozen 2.0 behaviour is what it exercises).
warnings.filterwarnings("ignore", message=r"emq: .* is deprecated", category=DeprecationWarning)


def report(err: BaseException) -> Obj:
    """Describes err for the harness."""
    return {
        "name": type(err).__name__,
        "message": str(err),
        "code": err.word if isinstance(err, echomq.WireError) else "",
        "stale": isinstance(err, echomq.StaleError),
    }


class Driver:
    def __init__(self) -> None:
        self.client: echomq.Client | None = None
        self.log = logging.getLogger("emqchaos.driver")

    def need(self) -> echomq.Client:
        if self.client is None:
            raise RuntimeError("emqchaos driver: connect first")
        return self.client

    async def handle(self, r: Obj) -> Obj:
        op = r.get("op")
        if op == "connect":
            self.client = await echomq.connect(str(r.get("url", "")), logger=self.log)
            return {"node": self.client.node}
        if op == "mint":
            c = self.need()
            return {"ids": [c.mint() for _ in range(int(r.get("n") or 1))]}
        if op == "push":
            q = self.need().queue(str(r.get("queue", "")))
            jobs = [
                echomq.NewJob(id=str(j.get("id", "")), payload=str(j.get("data", "")))
                for j in r.get("jobs") or []
            ]
            res = await q.push_batch(jobs)
            return {
                "pushed": [
                    {"error": report(x.error)} if x.error is not None else {"enqueued": x.enqueued}
                    for x in res
                ]
            }
        if op == "claim":
            q = self.need().queue(str(r.get("queue", "")))
            j = await q.claim(int(r.get("leaseMs") or 0))
            return {"job": {"id": j.id, "token": j.token} if j is not None else None}
        if op == "complete":
            q = self.need().queue(str(r.get("queue", "")))
            await q.complete(str(r.get("id", "")), int(r.get("token") or 0))
            return {}
        if op == "reap":
            q = self.need().queue(str(r.get("queue", "")))
            return {"n": await q.reap()}
        if op == "close":
            await self.close()
            return {}
        raise ValueError(f"emqchaos driver: unknown op {op!r}")

    async def close(self) -> None:
        c, self.client = self.client, None
        if c is not None:
            await c.close()


async def stdin_lines() -> AsyncIterator[str]:
    """The lines of stdin, read by a daemon thread (which never holds up the exit)."""
    loop = asyncio.get_running_loop()
    q: asyncio.Queue[str] = asyncio.Queue()

    def read() -> None:
        for line in sys.stdin:
            loop.call_soon_threadsafe(q.put_nowait, line)
        loop.call_soon_threadsafe(q.put_nowait, "")

    threading.Thread(target=read, daemon=True).start()
    while line := await q.get():
        yield line


def reply(v: Obj) -> None:
    sys.stdout.write(json.dumps(v, separators=(",", ":")) + "\n")
    sys.stdout.flush()


async def main() -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    d = Driver()
    tasks: set[asyncio.Task[None]] = set()
    closed = asyncio.Event()

    async def serve(r: Obj) -> None:
        seq = r.get("seq", -1)
        try:
            v = await d.handle(r)
        except Exception as err:
            reply({"seq": seq, "error": report(err)})
            return
        reply({"seq": seq, **v})
        if r.get("op") == "close":
            closed.set()

    async for line in stdin_lines():
        if closed.is_set():
            break
        if not line.strip():
            continue
        try:
            r = json.loads(line)
            if not isinstance(r, dict):
                raise ValueError("the request is not an object")
        except ValueError as err:
            reply({"seq": -1, "error": report(err)})
            continue
        t = asyncio.create_task(serve(r))
        tasks.add(t)
        t.add_done_callback(tasks.discard)
        if r.get("op") == "close":
            await t
            break
    if tasks:
        await asyncio.wait(tasks, timeout=5)
    await d.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
