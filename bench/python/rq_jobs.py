"""The job RQ's workers run (an importable function, as RQ requires): it
counts itself on the worker's connection and, when its payload is an
enqueue time, pushes the enqueue-to-start latency for the driver."""

import time

from rq import get_current_job

DONE = "bench:done"
LATENCY = "bench:latency"


def noop(payload):
    started = time.time()
    conn = get_current_job().connection
    try:
        ms = (started - float(payload)) * 1000
    except ValueError:
        conn.incr(DONE)
        return
    conn.rpush(LATENCY, repr(ms))
    conn.incr(DONE)
