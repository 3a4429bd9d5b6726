"""One RQ worker process: a SimpleWorker (no fork per job: RQ's default
Worker forks a work horse for every job) on queue "bench". It connects,
says it is ready on stdout, waits for the driver's go (a line on stdin),
then works until SIGTERM (RQ's warm shutdown)."""

import sys

from redis import Redis
from rq import Queue, SimpleWorker

host, _, port = sys.argv[1].rpartition(":")
conn = Redis(host=host, port=int(port))
worker = SimpleWorker([Queue("bench", connection=conn)], connection=conn)
conn.ping()
sys.stdout.write("ready\n")
sys.stdout.flush()
sys.stdin.readline()
worker.work(logging_level="WARNING", with_scheduler=False)
