"""The Python SDK's conformance testee.

It reads the requests of the conformance runner from stdin, one JSON object a line, performs each
with the public API of package ``echomq``, and writes one JSON response a line to stdout, in order
(conformance/README.md is the contract). It logs to stderr and exits when stdin closes.

Run it from the repository root with the SDK's virtual environment (./test.sh creates it):
``sdk/python/.venv/bin/python sdk/python/conformance/testee.py``. It puts ``sdk/python/src`` on the
module path itself, so the package need not be installed.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import datetime
import json
import logging
import sys
import warnings
from pathlib import Path
from typing import Any, NoReturn, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import echomq
from echomq._gen import scripts as wire

Obj = dict[str, Any]

# The 2.0 calls the 2.2.0 calls replaced (claim, promote, reap, complete_claim) are deprecated;
# this program calls them deliberately (the frozen 2.0 behaviour is what it exercises).
warnings.filterwarnings("ignore", message=r"emq: .* is deprecated", category=DeprecationWarning)

TWINS = {
    "claim_rate_ids": "claim_ids",
    "complete_rate_ids": "complete_result_claim_ids",
    "fail_policy": "fail",
    "reap_policy_ids": "reap_recorded_ids",
    "extend_policy": "extend",
    "cancel_policy_ids": "cancel_ids",
    "add_dedup_policy": "add_dedup",
    "replace_dedup_policy": "replace_dedup",
    "dedup_policy_entries": "dedup_entries",
    "sweep_dedup_policy": "sweep_dedup",
}
"""The op of each 2.7 twin (echomq 2.7.0) and the op of its 2.6 script, whose args and result it
takes: the SDK's call of that op runs the twin (the SDK calls the twins only), so both ops are the
one call. From 2.8.0 the SDK claims with claim_rate_ids and completes with complete_rate_ids, the
twins of claim_policy_ids and complete_policy_ids: those two 2.7 ops run their scripts' generated
calls (the SDK no longer calls them), after the checks of the SDK call they twin."""

OP_TIMEOUT_S = 30.0
"""How long one op may take before the testee answers it with an error."""

NODE_LEASE_MS = 10 * 60 * 1000
"""The node lease of a scenario's client: no renewal within a scenario, as the runner counts the
commands the client sends."""


class OpError(Exception):
    """An error the testee raises itself, with its contract kind."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def kind_of(err: BaseException) -> Obj:
    """Maps an SDK error to the contract's kinds, checked in the contract's order."""
    message = str(err)
    if isinstance(err, OpError):
        return {"kind": err.kind, "message": message}
    if isinstance(err, echomq.WireError):
        return {"kind": "wire", "class": err.word, "message": err.detail}
    if isinstance(err, echomq.IdError):
        return {"kind": "id", "message": message}
    if isinstance(err, echomq.QueueNameError):
        return {"kind": "queue_name", "message": message}
    if isinstance(err, echomq.PayloadTooLargeError):
        return {"kind": "payload_too_large", "message": message}
    if isinstance(err, echomq.ArgumentError):
        return {"kind": "argument", "message": message}
    if isinstance(err, echomq.FenceError):
        return {"kind": "fence", "message": message}
    if isinstance(err, echomq.BundleError):
        return {"kind": "bundle", "message": message}
    if isinstance(err, echomq.ConnectionError):
        return {"kind": "connection", "message": message}
    return {"kind": "other", "message": f"{type(err).__name__}: {message}"}


def bad_request(why: str) -> NoReturn:
    raise OpError("other", "bad request: " + why)


def text(a: Obj, name: str) -> str:
    v = a.get(name)
    if v is None:
        return ""
    return v if isinstance(v, str) else str(v)


def num(a: Obj, name: str) -> int:
    v = a.get(name)
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, int | float):
        bad_request(f"{name} is not a number")
    if isinstance(v, float):
        if not v.is_integer():
            bad_request(f"{name} is not an integer")
        return int(v)
    return v


def items(a: Obj, name: str) -> list[Any]:
    v = a.get(name)
    if v is None:
        return []
    if not isinstance(v, list):
        bad_request(f"{name} is not an array")
    return v


def bytes_in(a: Obj, name: str) -> bytes:
    """A request's bytes field name: UTF-8 text, or base64 bytes (name + "_b64")."""
    b64 = a.get(name + "_b64")
    if isinstance(b64, str):
        try:
            return base64.b64decode(b64, validate=True)
        except binascii.Error as err:
            bad_request(f"{name}_b64: {err}")
    p = a.get(name)
    return p.encode() if isinstance(p, str) else b""


def bytes_out(m: Obj, name: str, b: bytes) -> Obj:
    """Adds the contract's fields name (when UTF-8) and name + "_b64" for bytes b to m."""
    try:
        m[name] = b.decode("utf-8")
    except UnicodeDecodeError:
        pass
    m[name + "_b64"] = base64.b64encode(b).decode("ascii")
    return m


def payload_in(a: Obj) -> bytes:
    """A request's payload: UTF-8 text, or base64 bytes."""
    return bytes_in(a, "payload")


def payload_out(m: Obj, b: bytes) -> Obj:
    """Adds the contract's payload fields for bytes b to m."""
    return bytes_out(m, "payload", b)


def counts_out(c: echomq.SettleCounts) -> Obj:
    return {"completed": c.completed, "failed": c.failed, "retried": c.retried, "dead": c.dead}


def completion_out(c: echomq.Completion | None) -> Obj:
    """The contract's completed_at_ms, attempt and result of a completion record (zeros and
    empty when none was kept)."""
    if c is None:
        return bytes_out({"completed_at_ms": 0, "attempt": 0}, "result", b"")
    return bytes_out({"completed_at_ms": c.at_ms, "attempt": c.attempt}, "result", c.result)


def event_out(e: echomq.QueueEvent) -> Obj:
    return bytes_out(
        {
            "stream_id": e.stream_id,
            "event": e.event,
            "id": e.id,
            "attempt": e.attempt,
            "class": e.failure_class,
            "error": e.error,
            "run_at_ms": e.run_at_ms or 0,
        },
        "progress",
        e.progress,
    )


def dedup_out(r: echomq.DedupResult) -> Obj:
    return {"outcome": r.outcome, "id": r.id, "run_at_ms": r.run_at_ms or 0}


def scheduler_out(r: echomq.SchedulerInfo | None) -> Obj:
    """The contract's scheduler record; the empty record for a scheduler that does not exist."""
    if r is None:
        r = echomq.SchedulerInfo(
            id="",
            cron="",
            tz="",
            every_ms=0,
            start_ms=0,
            missed="",
            backfill=0,
            grace_ms=0,
            template=b"",
            paused=False,
            next_ms=0,
            last_slot_ms=0,
            last_id="",
            runs=0,
            now_ms=0,
        )
    return bytes_out(
        {
            "scheduler": r.id,
            "cron": r.cron,
            "every_ms": r.every_ms,
            "start_ms": r.start_ms,
            "tz": r.tz,
            "missed": r.missed,
            "backfill": r.backfill,
            "grace_ms": r.grace_ms,
            "paused": r.paused,
            "next_ms": r.next_ms,
            "last_slot_ms": r.last_slot_ms,
            "last_id": r.last_id,
            "runs": r.runs,
            "now_ms": r.now_ms,
        },
        "template",
        r.template,
    )


def policy_out(p: echomq.QueuePolicy) -> Obj:
    """The contract's policy record of the SDK's QueuePolicy (echomq 2.8.0: with the rate
    limit), paused 1 or 0 as conformance/scenarios/policy.yaml has it."""
    return {
        "paused": 1 if p.paused else 0,
        "concurrency": p.concurrency,
        "requires": p.requires,
        "leased": p.leased,
        "rate_limit": p.rate_limit,
        "rate_period_ms": p.rate_period_ms,
        "admit_in_ms": p.admit_in_ms,
    }


def job_out(j: echomq.Job) -> Obj:
    return payload_out({"id": j.id, "token": j.token, "deadline_ms": j.deadline_ms}, j.payload)


class Testee:
    """The client of the current scenario, and the ops."""

    def __init__(self, log: logging.Logger) -> None:
        self.log = log
        self.client: echomq.Client | None = None

    async def close(self) -> None:
        c, self.client = self.client, None
        if c is not None:
            await c.close()

    def connected(self) -> echomq.Client:
        if self.client is None:
            raise OpError("connection", "not connected")
        return self.client

    def queue(self, a: Obj) -> echomq.Queue:
        return self.connected().queue(text(a, "queue"))

    def queue_id(self, a: Obj) -> tuple[echomq.Queue, str]:
        """The queue and the checked id of a request: the queue first."""
        q = self.queue(a)
        id = text(a, "id")
        echomq.parse_id(id)
        return q, id

    def ids(self, a: Obj) -> list[str]:
        """The checked ids of a request's ids array."""
        out = [text({"id": v}, "id") for v in items(a, "ids")]
        for id in out:
            echomq.parse_id(id)
        return out

    def new_jobs(self, a: Obj) -> list[echomq.NewJob]:
        """The checked jobs of a request's jobs array."""
        out = []
        for j in items(a, "jobs"):
            if not isinstance(j, dict):
                bad_request("a job is not an object")
            id = text(j, "id")
            echomq.parse_id(id)
            out.append(echomq.NewJob(id=id, payload=payload_in(j)))
        return out

    def policy(self, a: Obj, *, inherit: bool) -> echomq.BackoffPolicy | None:
        """The request's backoff, backoff_ms and backoff_max_ms as a BackoffPolicy; None for an
        omitted backoff or inherit where the op takes it (add_many)."""
        word = a.get("backoff")
        if inherit and (word is None or word == echomq.BACKOFF_INHERIT):
            return None
        return echomq.BackoffPolicy(
            kind=cast(echomq.Backoff, text(a, "backoff")),
            delay_ms=num(a, "backoff_ms"),
            max_ms=num(a, "backoff_max_ms"),
        )

    def scheduler_ids(self, a: Obj) -> list[str]:
        """A request's schedulers array (the SDK checks each id)."""
        return [v if isinstance(v, str) else str(v) for v in items(a, "schedulers")]

    def fire_entries(self, a: Obj) -> list[echomq.FireEntry]:
        """A request's fire_schedulers entries; each id checked with the SDK's parser."""
        out = []
        for e in items(a, "entries"):
            if not isinstance(e, dict):
                bad_request("an entry is not an object")
            id = text(e, "id")
            echomq.parse_id(id)
            out.append(
                echomq.FireEntry(
                    id=id,
                    scheduler=text(e, "scheduler"),
                    expect_ms=num(e, "expect_ms"),
                    next_ms=num(e, "next_ms"),
                    slot_ms=num(e, "slot_ms"),
                    until_ms=num(e, "until_ms"),
                )
            )
        return out

    def mode(self, a: Obj) -> echomq.Dedup:
        """The request's dedup mode, as given (the SDK checks it)."""
        return cast(echomq.Dedup, text(a, "mode"))

    async def do(self, op: str, a: Obj) -> Obj:
        op = TWINS.get(op, op)
        if op == "hello":
            return {
                "language": "python",
                "sdk_version": echomq.__version__,
                "protocol": echomq.PROTOCOL,
                "version": echomq.VERSION,
                "bundle_digest": echomq.BUNDLE_DIGEST,
            }
        if op == "parse_id":
            d = echomq.parse_id(text(a, "text"))
            return {"kind": d.kind, "time_ms": d.time_ms, "node": d.node, "sequence": d.sequence}
        if op == "new_id":
            t = echomq.new_id(
                text(a, "kind"), num(a, "time_ms"), num(a, "node"), num(a, "sequence")
            )
            return {"text": t}
        if op == "queue_keys":
            k = echomq.QueueKeys(text(a, "queue"))
            keys = {str(t): k.key(str(t)) for t in items(a, "types")}
            out: Obj = {"keys": keys}
            if isinstance(a.get("id"), str):
                out["row"] = k.row(a["id"])
            return out
        if op == "reserve_key":
            return {"key": echomq.reserve_key(text(a, "member"), text(a, "queue"))}
        if op == "judge_version":
            return {"verdict": echomq.judge_version_record(text(a, "record")).value}
        if op == "classify_error":
            cls, message = echomq.classify_reply(text(a, "reply"))
            return {"class": cls, "message": message}
        if op == "connect":
            await self.close()
            self.client = await echomq.connect(
                "redis://" + text(a, "addr"),
                node_lease_ms=NODE_LEASE_MS,
                max_payload=num(a, "max_payload"),
                logger=self.log,
            )
            return {"version_found": self.client.version_found}
        if op == "close":
            await self.close()
            return {}
        if op == "mint":
            kind = text(a, "kind")
            c = self.connected()
            if not echomq.is_kind(kind):
                raise echomq.IdError(kind, "the kind is not registered")
            return {"id": c.mint(kind)}
        if op in ("push", "enqueue", "enqueue_at"):
            q, id = self.queue_id(a)
            p = payload_in(a)
            if op == "push":
                ok = await q.push(id, p)
            elif op == "enqueue":
                ok = await q.enqueue(id, p)
            else:
                ok = await q.enqueue_at(id, p, num(a, "run_at_ms"))
            return {"enqueued": ok}
        if op == "push_batch":
            q = self.queue(a)
            res = await q.push_batch(self.new_jobs(a))
            return {
                "results": [
                    {"error": kind_of(r.error)} if r.error is not None else {"enqueued": r.enqueued}
                    for r in res
                ]
            }
        if op == "push_many":
            q = self.queue(a)
            return {"results": [{"enqueued": ok} for ok in await q.push_many(self.new_jobs(a))]}
        if op == "claim_ids":
            q = self.queue(a)
            js = await q.claim_ids(num(a, "lease_ms"), self.ids(a))
            return {"jobs": [job_out(j) for j in js]}
        if op == "complete_claim_ids":
            q, id = self.queue_id(a)
            ids = self.ids(a)
            js = await q.complete_claim_ids(id, num(a, "token"), num(a, "lease_ms"), ids)
            return {"jobs": [job_out(j) for j in js]}
        if op == "promote_ids":
            q = self.queue(a)
            return {"moved": await q.promote_ids(self.ids(a))}
        if op == "reap_ids":
            q = self.queue(a)
            return {"moved": await q.reap_ids(num(a, "max_attempts"), self.ids(a))}
        if op == "claim":
            j = await self.queue(a).claim(num(a, "lease_ms"))
            return {"job": job_out(j) if j is not None else None}
        if op == "claim_many":
            js = await self.queue(a).claim_many(num(a, "lease_ms"), num(a, "count"))
            return {"jobs": [job_out(j) for j in js]}
        if op == "complete":
            q, id = self.queue_id(a)
            await q.complete(id, num(a, "token"))
            return {}
        if op == "complete_claim":
            q, id = self.queue_id(a)
            js = await q.complete_claim(id, num(a, "token"), num(a, "lease_ms"), num(a, "count"))
            return {"jobs": [job_out(j) for j in js]}
        if op == "extend":
            q, id = self.queue_id(a)
            return {"deadline_ms": await q.extend(id, num(a, "token"), num(a, "lease_ms"))}
        if op in ("retry", "retry_policy"):
            q, id = self.queue_id(a)
            return {"run_at_ms": await q.retry(id, num(a, "token"), num(a, "delay_ms"))}
        if op in ("bury", "bury_policy"):
            q, id = self.queue_id(a)
            await q.bury(id, num(a, "token"))
            return {}
        if op in ("retry_failed", "bury_failed"):
            q, id = self.queue_id(a)
            f = echomq.Failure(
                failure_class=cast(echomq.FailureClass, text(a, "class")),
                message=text(a, "error"),
                worker=text(a, "worker"),
            )
            if op == "bury_failed":
                await q.bury_failed(id, num(a, "token"), f)
                return {}
            at = await q.retry_failed(id, num(a, "token"), f, delay_ms=num(a, "delay_ms"))
            return {"run_at_ms": at}
        if op == "failures":
            q, id = self.queue_id(a)
            return {
                "attempts": [
                    {
                        "attempt": x.attempt,
                        "at_ms": x.at_ms,
                        "class": x.failure_class,
                        "worker": x.worker,
                        "error": x.message,
                    }
                    for x in await q.failures(id)
                ]
            }
        if op == "forget_failures":
            q = self.queue(a)
            return {"forgotten": await q.forget_failures(self.ids(a))}
        if op == "reap_failed_ids":
            q = self.queue(a)
            return {"moved": await q.reap_failed_ids(self.ids(a), num(a, "max_attempts"))}
        if op in ("revive", "revive_recorded"):
            q, id = self.queue_id(a)
            # revive is the 2.2 op, which writes no event: events_max 0
            return {"revived": await q.revive(id, events_max=num(a, "events_max"))}
        if op == "add_many":
            q = self.queue(a)
            jobs = self.new_jobs(a)
            added = await q.add_many(
                jobs,
                delay_ms=num(a, "delay_ms"),
                attempts=num(a, "attempts"),
                backoff=self.policy(a, inherit=True),
            )
            return {
                "results": [{"enqueued": r.enqueued, "run_at_ms": r.run_at_ms or 0} for r in added]
            }
        if op == "add_dedup":
            q = self.queue(a)
            jobs = self.new_jobs(a)
            dkeys = [bytes_in(j, "key") for j in items(a, "jobs") if isinstance(j, dict)]
            got = await q.add_dedup(
                jobs,
                dkeys,
                self.mode(a),
                ttl_ms=num(a, "ttl_ms"),
                hold_dead=a.get("hold_dead") is True,
                hold_result=a.get("hold_result") is True,
                delay_ms=num(a, "delay_ms"),
                attempts=num(a, "attempts"),
                backoff=self.policy(a, inherit=True),
            )
            return {"results": [dedup_out(r) for r in got]}
        if op == "replace_dedup":
            q, id = self.queue_id(a)
            target = text(a, "target")
            echomq.parse_id(target)
            r = await q.replace_dedup(
                id,
                payload_in(a),
                bytes_in(a, "key"),
                target,
                self.mode(a),
                ttl_ms=num(a, "ttl_ms"),
                hold_dead=a.get("hold_dead") is True,
                hold_result=a.get("hold_result") is True,
                delay_ms=num(a, "delay_ms"),
                attempts=num(a, "attempts"),
                backoff=self.policy(a, inherit=True),
                events_max=num(a, "events_max"),
            )
            return dedup_out(r)
        if op == "push_dedup":
            q, id = self.queue_id(a)
            key = echomq.DedupKey(
                bytes_in(a, "key"),
                self.mode(a),
                ttl_ms=num(a, "ttl_ms"),
                hold_dead=a.get("hold_dead") is True,
                hold_result=a.get("hold_result") is True,
            )
            delay = num(a, "delay_ms")
            r = await q.push(
                id,
                payload_in(a),
                # a timedelta keeps the milliseconds exact (a float of seconds may not)
                delay=datetime.timedelta(milliseconds=delay) if delay else None,
                dedup=key,
                events_max=num(a, "events_max"),
            )
            return dedup_out(r)
        if op == "dedup_entries":
            q = self.queue(a)
            es = await q.dedup_entries([bytes_in({"k": k}, "k") for k in items(a, "keys")])
            return {
                "entries": [
                    {
                        "holder": e.holder,
                        "mode": e.mode,
                        "expires_ms": e.expires_ms,
                        "held": e.held,
                        "state": e.state,
                        "parked": e.parked,
                    }
                    for e in es
                ]
            }
        if op == "sweep_dedup":
            q = self.queue(a)
            sw = await q.sweep_dedup(text(a, "cursor") or "0", num(a, "count"))
            return {"cursor": sw.cursor, "dropped": sw.dropped, "released": sw.released}
        if op == "cancel_ids":
            q = self.queue(a)
            states = await q.cancel_ids(self.ids(a), events_max=num(a, "events_max"))
            return {"results": [{"state": s or ""} for s in states]}
        if op == "cancel_key":
            q = self.queue(a)
            done = await q.cancel_key(bytes_in(a, "key"), events_max=num(a, "events_max"))
            return {"cancelled": [{"id": x.id, "state": x.state} for x in done]}
        if op == "upsert_scheduler":
            q = self.queue(a)
            u = await q.upsert_scheduler(
                text(a, "scheduler"),
                cron=text(a, "cron"),
                tz=text(a, "tz"),
                every_ms=num(a, "every_ms"),
                start_ms=num(a, "start_ms"),
                missed=cast(
                    echomq.Missed, a["missed"] if "missed" in a else echomq.MISSED_RUN_ONCE
                ),
                backfill=num(a, "backfill"),
                grace_ms=num(a, "grace_ms") if "grace_ms" in a else echomq.DEFAULT_GRACE_MS,
                template=bytes_in(a, "template"),
            )
            return {"created": u.created, "changed": u.changed, "next_ms": u.next_ms}
        if op == "scheduler_entries":
            q = self.queue(a)
            recs = await q.schedulers(self.scheduler_ids(a))
            entries = [scheduler_out(x) for x in recs]
            if any(x is None for x in recs):
                # The SDK answers None for a scheduler that does not exist; the contract's empty
                # record carries the read's server time still: a found record's of the same
                # read, else the server's clock read right after.
                now = next((x.now_ms for x in recs if x is not None), 0)
                if not now:
                    sec, usec = await self.connected().redis.time()
                    now = int(sec) * 1000 + int(usec) // 1000
                for entry, x in zip(entries, recs, strict=True):
                    if x is None:
                        entry["now_ms"] = now
            return {"entries": entries}
        if op == "list_schedulers":
            q = self.queue(a)
            page = await q.list_schedulers(num(a, "offset"), num(a, "count"))
            return {"schedulers": [scheduler_out(r) for r in page]}
        if op == "due_schedulers":
            q = self.queue(a)
            page = await q.due_schedulers(
                horizon_ms=num(a, "horizon_ms"), count=num(a, "count"), spread=num(a, "spread")
            )
            return {"schedulers": [scheduler_out(r) for r in page]}
        if op == "pause_schedulers":
            q = self.queue(a)
            ids = self.scheduler_ids(a)
            if a.get("paused") is True:
                return {"changed": await q.pause_schedulers(ids)}
            return {"changed": await q.resume_schedulers(ids)}
        if op == "remove_schedulers":
            q = self.queue(a)
            return {"removed": await q.remove_schedulers(self.scheduler_ids(a))}
        if op == "fire_schedulers":
            q = self.queue(a)
            return {"outcomes": await q.fire_schedulers(self.fire_entries(a))}
        if op == "fire_due":
            q = self.queue(a)
            fired = await q.fire_due(horizon_ms=num(a, "horizon_ms"))
            fired.sort(key=lambda f: (f.scheduler, f.slot_ms))
            return {
                "fired": [
                    {"scheduler": f.scheduler, "slot_ms": f.slot_ms, "until_ms": f.until_ms}
                    for f in fired
                ]
            }
        if op == "complete_result_claim_ids":
            q, id = self.queue_id(a)
            ids = self.ids(a)
            js = await q.complete_result_claim_ids(
                id,
                num(a, "token"),
                num(a, "lease_ms"),
                ids,
                result=bytes_in(a, "result"),
                keep=echomq.Retention(count=num(a, "keep"), age_ms=num(a, "keep_age_ms")),
                events_max=num(a, "events_max"),
            )
            return {"jobs": [job_out(j) for j in js]}
        if op == "fail":
            q, id = self.queue_id(a)
            f = echomq.Failure(
                failure_class=cast(echomq.FailureClass, text(a, "class")),
                message=text(a, "error"),
                worker=text(a, "worker"),
            )
            settled = await q.fail(
                id,
                num(a, "token"),
                f,
                max_attempts=num(a, "max_attempts"),
                backoff=self.policy(a, inherit=False),
                jitter=num(a, "jitter"),
                bury=a.get("bury") is True,
                events_max=num(a, "events_max"),
            )
            return {"outcome": settled.outcome, "run_at_ms": settled.run_at_ms or 0}
        if op == "reap_recorded_ids":
            q = self.queue(a)
            moved = await q.reap_recorded_ids(
                self.ids(a), num(a, "max_attempts"), events_max=num(a, "events_max")
            )
            return {"moved": moved}
        if op == "progress":
            q, id = self.queue_id(a)
            await q.report_progress(
                id, num(a, "token"), bytes_in(a, "progress"), events_max=num(a, "events_max")
            )
            return {}
        if op == "output":
            q, id = self.queue_id(a)
            o = await q.output(id)
            return bytes_out(completion_out(o.completed), "progress", o.progress)
        if op == "counters":
            cs = await self.queue(a).counters(num(a, "minutes"))
            return {
                "totals": counts_out(cs.totals),
                "minutes": [{"minute_ms": m.minute_ms, **counts_out(m)} for m in cs.minutes],
            }
        if op == "events":
            q = self.queue(a)
            evs = await q.read_events(text(a, "after"), num(a, "count"))
            return {"events": [event_out(e) for e in evs]}
        if op == "forget_ids":
            q = self.queue(a)
            return {"forgotten": await q.forget_ids(self.ids(a))}
        if op == "purge":
            q, id = self.queue_id(a)
            # The op is the purge script's (conformance/README.md): the record it leaves reads as
            # not recorded and forget_failures deletes it, as the scenarios check.
            return {"purged": await q.purge(id, forget=False)}
        if op == "promote":
            return {"moved": await self.queue(a).promote(num(a, "limit"))}
        if op == "reap":
            return {"moved": await self.queue(a).reap(num(a, "limit"), num(a, "max_attempts"))}
        if op == "set_policy":
            # set_policy and queue_policy are script ops: their generated calls, as the Go
            # testee's (the SDK's policy calls are the ops pause, resume, set_concurrency, policy)
            q = self.queue(a)
            paused, cap = num(a, "paused"), num(a, "concurrency")
            if not -1 <= paused <= 1 or cap < -1:
                raise OpError("argument", f"paused {paused}, concurrency {cap}")
            k = q.keys
            sp = await wire.SetPolicyCall(
                pending=k.pending,
                active=k.active,
                running=k.running,
                policy=k.policy,
                wake=k.wake,
                paused=paused,
                concurrency=cap,
            ).run(self.connected().redis)
            # the script's reply as it is (paused 1 or 0), as conformance/scenarios/policy.yaml says
            return {
                "paused": sp.paused,
                "concurrency": sp.concurrency,
                "requires": sp.requires,
            }
        if op == "queue_policy":
            k = self.queue(a).keys
            qp = await wire.QueuePolicyCall(
                active=k.active, running=k.running, policy=k.policy
            ).run(self.connected().redis)
            return {
                "paused": qp.paused,
                "concurrency": qp.concurrency,
                "requires": qp.requires,
                "leased": qp.leased,
            }
        if op == "claim_policy_ids":
            # the 2.7 claim (echomq 2.8.0: the SDK claims with claim_rate_ids), after claim_ids'
            # checks: its generated call
            q = self.queue(a)
            ids, lease = self.ids(a), num(a, "lease_ms")
            if lease < 1:
                raise OpError("argument", f"lease {lease} is not a positive integer")
            if not ids:
                return {"jobs": []}
            k = q.keys
            cp = await wire.ClaimPolicyIdsCall(
                pending=k.pending,
                active=k.active,
                running=k.running,
                policy=k.policy,
                wake=k.wake,
                rows=[k.row(i) for i in ids],
                lease_ms=lease,
                ids=ids,
            ).run(self.connected().redis)
            return {
                "jobs": [job_out(echomq.Job(r.id, r.token, r.payload, r.deadline_ms)) for r in cp]
            }
        if op == "complete_policy_ids":
            # the 2.7 completion (echomq 2.8.0: the SDK completes with complete_rate_ids), after
            # complete_result_claim_ids' checks: its generated call
            q, id = self.queue_id(a)
            ids, lease = self.ids(a), num(a, "lease_ms")
            keep, age, em = num(a, "keep"), num(a, "keep_age_ms"), num(a, "events_max")
            result = bytes_in(a, "result")
            if lease < 1 or keep < 0 or age < 0 or em < 0:
                raise OpError(
                    "argument", f"lease {lease}, keep {keep}, keep_age_ms {age}, events_max {em}"
                )
            if len(result) > echomq.RESULT_MAX_BYTES:
                raise OpError("argument", f"the result's {len(result)} bytes are over the cap")
            k = q.keys
            cc = await wire.CompletePolicyIdsCall(
                row=k.row(id),
                active=k.active,
                running=k.running,
                policy=k.policy,
                pending=k.pending,
                wake=k.wake,
                results=k.results,
                result_times=k.result_times,
                progress=k.progress,
                failures=k.failures,
                options=k.options,
                events=k.events,
                counters=k.counters,
                rows=[k.row(i) for i in ids],
                id=id,
                token=num(a, "token"),
                lease_ms=lease,
                result=result,
                keep=keep,
                keep_age_ms=age,
                events_max=em,
                ids=ids,
            ).run(self.connected().redis)
            return {
                "jobs": [job_out(echomq.Job(r.id, r.token, r.payload, r.deadline_ms)) for r in cc]
            }
        if op == "configure_policy":
            # configure_policy and read_policy (echomq 2.8.0) are script ops, as set_policy and
            # queue_policy: their generated calls; the script's reply as it is (ints)
            q = self.queue(a)
            paused, cap = num(a, "paused"), num(a, "concurrency")
            rate, per = num(a, "rate_limit"), num(a, "rate_period_ms")
            # the script's bounds, as the generated constants state them
            if (
                not wire.CONFIGURE_POLICY_PAUSED_MIN <= paused <= wire.CONFIGURE_POLICY_PAUSED_MAX
                or cap < wire.CONFIGURE_POLICY_CONCURRENCY_MIN
                or not wire.CONFIGURE_POLICY_RATE_LIMIT_MIN
                <= rate
                <= wire.CONFIGURE_POLICY_RATE_LIMIT_MAX
                or not wire.CONFIGURE_POLICY_RATE_PERIOD_MS_MIN
                <= per
                <= wire.CONFIGURE_POLICY_RATE_PERIOD_MS_MAX
                or (rate > 0 and per < 1)
            ):
                raise OpError(
                    "argument",
                    f"paused {paused}, concurrency {cap}, rate_limit {rate}, rate_period_ms {per}",
                )
            k = q.keys
            cp2 = await wire.ConfigurePolicyCall(
                pending=k.pending,
                active=k.active,
                running=k.running,
                policy=k.policy,
                starts=k.starts,
                wake=k.wake,
                paused=paused,
                concurrency=cap,
                rate_limit=rate,
                rate_period_ms=per,
            ).run(self.connected().redis)
            return {
                "paused": cp2.paused,
                "concurrency": cp2.concurrency,
                "rate_limit": cp2.rate_limit,
                "rate_period_ms": cp2.rate_period_ms,
                "requires": cp2.requires,
            }
        if op == "read_policy":
            k = self.queue(a).keys
            rp = await wire.ReadPolicyCall(
                active=k.active, running=k.running, policy=k.policy, starts=k.starts
            ).run(self.connected().redis)
            return {
                "paused": rp.paused,
                "concurrency": rp.concurrency,
                "requires": rp.requires,
                "leased": rp.leased,
                "rate_limit": rp.rate_limit,
                "rate_period_ms": rp.rate_period_ms,
                "admit_in_ms": rp.admit_in_ms,
            }
        if op == "set_rate_limit":
            q = self.queue(a)
            force = a.get("force") is True
            limit, per = num(a, "rate_limit"), num(a, "rate_period_ms")
            if limit == 0 and per == 0:  # removes the limit: no period
                return policy_out(await q.set_rate_limit(0, force=force))
            return policy_out(await q.set_rate_limit(limit, per, force=force))
        if op == "policy":
            return policy_out(await self.queue(a).policy())
        if op == "pause":
            return policy_out(await self.queue(a).pause(force=a.get("force") is True))
        if op == "resume":
            return policy_out(await self.queue(a).resume())
        if op == "set_concurrency":
            q = self.queue(a)
            force = a.get("force") is True
            return policy_out(await q.set_concurrency(num(a, "concurrency"), force=force))
        if op == "ring":
            return {"rung": await self.queue(a).ring()}
        if op == "sizes":
            return {"sizes": dict(await self.queue(a).sizes())}
        if op == "browse":
            q = self.queue(a)
            return {"ids": await q.browse(cast(echomq.SetName, text(a, "set")), num(a, "n"))}
        if op == "page":
            q = self.queue(a)
            pg = await q.page(cast(echomq.SetName, text(a, "set")), text(a, "after"), num(a, "n"))
            return {"ids": pg.ids, "next": pg.next}
        if op == "get":
            q, id = self.queue_id(a)
            found = await q.lookup(id)
            info = found.job
            if info is None:
                gone: Obj = {"found": False}
                if found.completed is not None:
                    rec = completion_out(found.completed)
                    rec["at_ms"] = rec.pop("completed_at_ms")
                    gone["completed"] = rec
                return gone
            return bytes_out(
                payload_out(
                    {
                        "found": True,
                        "state": info.state,
                        "attempts": info.attempts,
                        "at_ms": info.at_ms or 0,
                    },
                    info.payload,
                ),
                "progress",
                info.progress,
            )
        if op == "run_probes":
            tr = await echomq.run_probes(self.connected())
            return {"passed": tr.passed, "total": len(tr.results), "lines": tr.lines()}
        raise OpError("unsupported", f"op {op!r} is not implemented by the Python testee")

    async def answer(self, line: str) -> Obj:
        """The response to one request line."""
        seq: Any = 0
        try:
            try:
                req = json.loads(line)
            except ValueError as err:
                bad_request(str(err))
            if not isinstance(req, dict):
                bad_request("the request is not an object")
            seq = req.get("seq", 0)
            args = req.get("args") or {}
            if not isinstance(args, dict):
                bad_request("args is not an object")
            op = text(req, "op")
            try:
                result = await asyncio.wait_for(self.do(op, args), OP_TIMEOUT_S)
            except TimeoutError:
                raise OpError("other", f"op {op!r} took longer than {OP_TIMEOUT_S}s") from None
            return {"seq": seq, "ok": True, "result": result}
        except Exception as err:
            return {"seq": seq, "ok": False, "error": kind_of(err)}


async def main() -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    t = Testee(logging.getLogger("echomq.testee"))
    loop = asyncio.get_running_loop()
    try:
        while True:
            # The loop keeps running (the client's background work with it) while a line is read.
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                break
            if not line.strip():
                continue
            resp = await t.answer(line)
            sys.stdout.write(json.dumps(resp, separators=(",", ":")) + "\n")
            sys.stdout.flush()
    finally:
        await t.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
