"""EchoMQ for Python: an asyncio SDK on redis-py for the EchoMQ job-queue protocol.

``await echomq.connect(url)`` opens a fenced client (``connect_cluster(nodes)`` on a Redis
Cluster); ``client.queue(name)`` is a queue's handle
(``client.queue(name, codec=JSONCodec(T))`` one whose payloads are values of T)
(push, push_batch, enqueue, enqueue_at, claim, complete, retry, bury, revive, purge, sizes, page,
get, ...; retry_failed, bury_failed and failures record and read why a job's attempts failed);
``Worker(queue, handler).run()`` runs a handler over a queue's jobs; echomq 2.4.0 adds push options
(``push(id, p, delay=..., attempts=..., backoff=BackoffPolicy...)``: add_many), handler results
kept under a ``Retention`` (``lookup``, ``output``), ``job.report_progress``, the events listener
(``async for ev in queue.events()``), ``counters`` and ``fail`` with UnrecoverableError;
echomq 2.5.0 adds deduplication by a caller's key (``push(id, p, dedup=DedupKey(key, mode))``,
``dedup_entries``) and cancellation (``cancel_ids``, ``cancel_key``; a worker cancels the handler
of a job cancelled while it runs); echomq 2.6.0 adds job schedulers (``upsert_scheduler`` with a
cron expression in a time zone, ``Cron``, or an interval; ``run_schedulers`` fires them from any
number of processes, each slot once; ``schedulers``, ``list_schedulers``, ``next_runs``);
echomq 2.7.0 adds queue policies (``pause``, ``resume``, ``set_concurrency``, ``policy``: a
pause and a concurrency cap across every worker, behind a tripwire older clients fail on);
echomq 2.8.0 adds rate limits (``set_rate_limit``: at most so many starts in any window of a
period, across every worker, paced; a held-back job stays pending); ``run_probes(client)``
checks a live server against the manifest. Protocol facts (key grammar, states, wire classes,
the script bundle) come from the generated layer, ``echomq._gen``, which
``go run ./cmd/emqgen gen`` writes from protocol.yaml.
"""

from ._cluster import DEFAULT_TRY_AGAIN_MS, ClusterRedis
from ._duration import Duration
from ._gen import errors as _wire
from ._gen import vocabularies as _vocabularies
from ._gen.errors import *  # noqa: F403 - one exception class per wire class
from ._gen.ids import IdError, IdGenerator, new_id, parse_id
from ._gen.keys import QueueKeys, QueueNameError, reserve_key
from ._gen.protocol import PROTOCOL, VERSION, VERSION_RECORD, Kind, SetName, State, is_kind
from ._gen.scripts import BUNDLE_DIGEST
from ._gen.vocabularies import *  # noqa: F403 - every vocabulary's type, words, list and guard
from .client import (
    Client,
    Verdict,
    check_version_record,
    connect,
    connect_cluster,
    judge_version_record,
)
from .codec import Codec, CodecError, JSONCodec, TypedJob, TypedJobInfo, TypedQueue
from .cron import Cron, Interval, Schedule
from .dedup import (
    HOLD_DEAD,
    HOLD_RESULT,
    REPLACE_ATTEMPTS,
    Cancelled,
    DedupContentionError,
    DedupEntry,
    DedupKey,
    DedupResult,
    DedupSweep,
)
from .errors import (
    ArgumentError,
    ArgumentTypeError,
    BundleError,
    ConnectionError,
    ConnectionWaitError,
    EmqConnectionError,
    EmqError,
    FenceError,
    NoNodeError,
    PayloadTooLargeError,
)
from .failures import FailedAttempt, Failure
from .metrics import Counter, Metrics, NoMetrics, Tally
from .outputs import (
    DEFAULT_EVENTS_MAX,
    PROGRESS_MAX_BYTES,
    RESULT_MAX_BYTES,
    AddResult,
    BackoffPolicy,
    Completion,
    Counters,
    FailOutcome,
    JobOutput,
    MinuteCounts,
    QueueEvent,
    Retention,
    SettleCounts,
)
from .policy import (
    ACTIVE_TRIPWIRE_FLOOR,
    RATE_LIMIT_MAX,
    RATE_PERIOD_MAX_MS,
    PolicyFloorError,
    QueuePolicy,
)
from .probe import ProbeResult, ProbeTranscript, run_probes
from .queue import (
    PEEK_ATTEMPTS,
    BatchResult,
    Job,
    JobInfo,
    JobLookup,
    NewJob,
    Page,
    Payload,
    Queue,
)
from .schedulers import (
    BACKFILL_MAX,
    DEFAULT_GRACE_MS,
    PLAN_CAP,
    FiredRun,
    FireEntry,
    PlanEntry,
    PlanRecord,
    SchedulerInfo,
    UpsertResult,
    next_runs,
    plan,
)
from .worker import (
    CANCELLED,
    JOB_TIMEOUT,
    LEASE_LOST,
    SHUTDOWN,
    Handler,
    PermanentError,
    SyncHandler,
    UnrecoverableError,
    Worker,
    exponential_backoff,
    permanent,
)

__version__ = "0.1.0"
"""The SDK's own version (pyproject.toml's), apart from the wire VERSION it speaks."""

__all__ = [
    "ACTIVE_TRIPWIRE_FLOOR",
    "BACKFILL_MAX",
    "BUNDLE_DIGEST",
    "CANCELLED",
    "DEFAULT_EVENTS_MAX",
    "DEFAULT_GRACE_MS",
    "DEFAULT_TRY_AGAIN_MS",
    "HOLD_DEAD",
    "HOLD_RESULT",
    "JOB_TIMEOUT",
    "LEASE_LOST",
    "PEEK_ATTEMPTS",
    "PLAN_CAP",
    "PROGRESS_MAX_BYTES",
    "PROTOCOL",
    "RATE_LIMIT_MAX",
    "RATE_PERIOD_MAX_MS",
    "REPLACE_ATTEMPTS",
    "RESULT_MAX_BYTES",
    "SHUTDOWN",
    "VERSION",
    "VERSION_RECORD",
    "AddResult",
    "ArgumentError",
    "ArgumentTypeError",
    "BackoffPolicy",
    "BatchResult",
    "BundleError",
    "Cancelled",
    "Client",
    "ClusterRedis",
    "Codec",
    "CodecError",
    "Completion",
    "ConnectionError",
    "ConnectionWaitError",
    "Counter",
    "Counters",
    "Cron",
    "DedupContentionError",
    "DedupEntry",
    "DedupKey",
    "DedupResult",
    "DedupSweep",
    "Duration",
    "EmqConnectionError",
    "EmqError",
    "FailOutcome",
    "FailedAttempt",
    "Failure",
    "FenceError",
    "FireEntry",
    "FiredRun",
    "Handler",
    "IdError",
    "IdGenerator",
    "Interval",
    "JSONCodec",
    "Job",
    "JobInfo",
    "JobLookup",
    "JobOutput",
    "Kind",
    "Metrics",
    "MinuteCounts",
    "NewJob",
    "NoMetrics",
    "NoNodeError",
    "Page",
    "Payload",
    "PayloadTooLargeError",
    "PermanentError",
    "PlanEntry",
    "PlanRecord",
    "PolicyFloorError",
    "ProbeResult",
    "ProbeTranscript",
    "Queue",
    "QueueEvent",
    "QueueKeys",
    "QueueNameError",
    "QueuePolicy",
    "Retention",
    "Schedule",
    "SchedulerInfo",
    "SetName",
    "SettleCounts",
    "State",
    "SyncHandler",
    "Tally",
    "TypedJob",
    "TypedJobInfo",
    "TypedQueue",
    "UnrecoverableError",
    "UpsertResult",
    "Verdict",
    "Worker",
    "check_version_record",
    "connect",
    "connect_cluster",
    "exponential_backoff",
    "is_kind",
    "judge_version_record",
    "new_id",
    "next_runs",
    "parse_id",
    "permanent",
    "plan",
    "reserve_key",
    "run_probes",
]
__all__ += _wire.__all__
__all__ += _vocabularies.__all__
