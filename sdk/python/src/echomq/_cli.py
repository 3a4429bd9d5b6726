"""``python -m echomq``: the command line.

``python -m echomq worker module:handler [--url URL] [--queue Q] [--concurrency N] ...`` runs a
Worker with the handler (an ``async def`` or a plain ``def`` of a Job) until SIGTERM or SIGINT:
the first signal stops it gracefully (it stops claiming, lets running handlers finish for up to
--shutdown-timeout seconds, then hands their jobs back), a second hands every running job back at
once. It exits 0 after a graceful stop, with no traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from .client import connect
from .codec import Codec, TypedQueue
from .errors import EmqError
from .queue import Queue
from .worker import Worker

log = logging.getLogger("echomq.cli")

URL_ENV = "ECHOMQ_URL"
"""The environment variable of the default --url."""

DEFAULT_URL = "redis://127.0.0.1:6379/0"


def load(spec: str) -> Any:
    """The object a "module:attribute" (or "module:attr.sub") spec names; the current directory
    is on the import path, as for ``python -m``."""
    mod, sep, attr = spec.partition(":")
    if not sep or not mod or not attr:
        raise SystemExit(f"emq: {spec!r} is not module:attribute (e.g. myapp.jobs:handle)")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(mod)
    except ImportError as err:
        raise SystemExit(f"emq: cannot import {mod!r}: {err}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise SystemExit(f"emq: {mod!r} has no attribute {attr!r}") from None
    return obj


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m echomq", description="EchoMQ for Python.")
    sub = p.add_subparsers(dest="command", required=True)
    w = sub.add_parser(
        "worker",
        help="run a worker over a queue's jobs",
        description="Runs handler (module:function, an async or a plain def of a Job) over the "
        "queue's jobs until SIGTERM or SIGINT; the first signal stops it gracefully, a second "
        "hands running jobs back at once.",
    )
    w.add_argument("handler", help="module:function, e.g. myapp.jobs:handle")
    w.add_argument(
        "--url",
        default=os.environ.get(URL_ENV, DEFAULT_URL),
        help=f"redis:// or rediss:// URL (default ${URL_ENV}, else {DEFAULT_URL})",
    )
    w.add_argument("--queue", "-q", default="default", help="the queue (default: default)")
    w.add_argument("--concurrency", "-c", type=int, default=10, help="handlers at once (10)")
    w.add_argument("--lease", type=float, default=30.0, help="lease in seconds (30)")
    w.add_argument("--max-attempts", type=int, default=25, help="claims a job gets (25)")
    w.add_argument(
        "--shutdown-timeout",
        type=float,
        default=30.0,
        help="seconds a graceful stop waits for running handlers before handing their jobs "
        "back (30)",
    )
    w.add_argument(
        "--codec",
        default=None,
        help="module:object, a codec (e.g. echomq.JSONCodec(Order)) whose decoded value the "
        "handler gets as job.value",
    )
    w.add_argument("--log-level", default="INFO", help="logging level (INFO)")
    return p


async def run_worker(args: argparse.Namespace) -> int:
    handler = load(args.handler)
    if not callable(handler):
        raise SystemExit(f"emq: {args.handler} is not callable")
    codec: Codec[Any] | None = load(args.codec) if args.codec else None
    client = await connect(args.url)
    try:
        q: Queue | TypedQueue[Any] = client.queue(args.queue)
        if codec is not None:
            q = TypedQueue(client.queue(args.queue), codec)
        w = Worker(
            q,
            handler,
            concurrency=args.concurrency,
            lease=args.lease,
            max_attempts=args.max_attempts,
            shutdown_timeout=args.shutdown_timeout,
        )
        task = asyncio.ensure_future(w.run())
        loop = asyncio.get_running_loop()
        signals = 0

        def on_signal(sig: signal.Signals) -> None:
            nonlocal signals
            signals += 1
            if signals == 1:
                log.info(
                    "emq: %s: stopping; running handlers get %.1fs, then their jobs are handed "
                    "back (again to hand them back now)",
                    sig.name,
                    args.shutdown_timeout,
                )
                w.stop()
            else:
                log.info("emq: %s again: handing every running job back now", sig.name)
                task.cancel()

        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, on_signal, sig)
        log.info(
            "emq: worker on queue %s (%s), concurrency %d, handler %s; SIGTERM or Ctrl-C stops it",
            q.name,
            args.url,
            args.concurrency,
            args.handler,
        )
        try:
            await task
        except asyncio.CancelledError:
            if signals < 2:
                raise
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
        log.info("emq: worker stopped")
        return 0
    finally:
        await client.close()


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        return asyncio.run(run_worker(args))
    except EmqError as err:
        print(f"emq: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # a signal before the handlers were installed
        return 130
