"""EchoMQ for Python: an asyncio SDK on redis-py for the EchoMQ job-queue protocol.

``await echomq.connect(url)`` opens a fenced client; ``client.queue(name)`` is a queue's handle
(push, push_batch, enqueue, enqueue_at, claim, complete, retry, bury, revive, purge, sizes, page,
get, ...); ``run_probes(client)`` checks a live server against the manifest. Protocol facts (key
grammar, states, wire classes, the script bundle) come from the generated layer,
``echomq._gen``, which ``go run ./cmd/emqgen gen`` writes from protocol.yaml.
"""

from ._gen import errors as _wire
from ._gen.errors import *  # noqa: F403 - one exception class per wire class
from ._gen.ids import IdError, IdGenerator, new_id, parse_id
from ._gen.keys import QueueKeys, QueueNameError, reserve_key
from ._gen.protocol import PROTOCOL, VERSION, VERSION_RECORD, Kind, SetName, State, is_kind
from ._gen.scripts import BUNDLE_DIGEST
from .client import Client, Verdict, check_version_record, connect, judge_version_record
from .errors import (
    ArgumentError,
    BundleError,
    ConnectionError,
    EmqError,
    FenceError,
    NoNodeError,
    PayloadTooLargeError,
)
from .probe import ProbeResult, ProbeTranscript, run_probes
from .queue import BatchResult, Job, JobInfo, NewJob, Page, Payload, Queue

__version__ = "0.1.0"
"""The SDK's own version (pyproject.toml's), apart from the wire VERSION it speaks."""

__all__ = [
    "BUNDLE_DIGEST",
    "PROTOCOL",
    "VERSION",
    "VERSION_RECORD",
    "ArgumentError",
    "BatchResult",
    "BundleError",
    "Client",
    "ConnectionError",
    "EmqError",
    "FenceError",
    "IdError",
    "IdGenerator",
    "Job",
    "JobInfo",
    "Kind",
    "NewJob",
    "NoNodeError",
    "Page",
    "Payload",
    "PayloadTooLargeError",
    "ProbeResult",
    "ProbeTranscript",
    "Queue",
    "QueueKeys",
    "QueueNameError",
    "SetName",
    "State",
    "Verdict",
    "check_version_record",
    "connect",
    "is_kind",
    "judge_version_record",
    "new_id",
    "parse_id",
    "reserve_key",
    "run_probes",
]
__all__ += _wire.__all__
