"""The conformance vectors (conformance/vectors/*.json, generated from protocol.yaml) against the
generated layer: the id canon, key building and queue-name validation, error-reply
classification. No server."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import ROOT

from echomq._gen.errors import classify_reply
from echomq._gen.ids import IdError, new_id, parse_id
from echomq._gen.keys import QueueKeys, QueueNameError, reserve_key
from echomq._gen.protocol import PROTOCOL, VERSION
from echomq.client import judge_version_record

VECTORS = ROOT / "conformance" / "vectors"


def load(name: str) -> list[dict[str, Any]]:
    doc = json.loads((VECTORS / f"{name}.json").read_text())
    assert doc["protocol"] == PROTOCOL
    assert doc["version"] == VERSION
    cases: list[dict[str, Any]] = doc["cases"]
    assert cases, f"{name}.json has no cases"
    return cases


def run(op: str, args: dict[str, Any]) -> dict[str, Any]:
    """One op of the testee contract's server-less table, on the generated layer."""
    if op == "parse_id":
        d = parse_id(args["text"])
        return {"kind": d.kind, "time_ms": d.time_ms, "node": d.node, "sequence": d.sequence}
    if op == "new_id":
        return {"text": new_id(args["kind"], args["time_ms"], args["node"], args["sequence"])}
    if op == "queue_keys":
        k = QueueKeys(args["queue"])
        out: dict[str, Any] = {"keys": {t: k.key(t) for t in args["types"]}}
        if "id" in args:
            out["row"] = k.row(args["id"])
        return out
    if op == "reserve_key":
        return {"key": reserve_key(args["member"], args.get("queue", ""))}
    if op == "judge_version":
        return {"verdict": judge_version_record(args["record"]).value}
    if op == "classify_error":
        word, message = classify_reply(args["reply"])
        return {"class": word, "message": message}
    raise AssertionError(f"unknown op {op}")


def kind_of(err: BaseException) -> str:
    if isinstance(err, IdError):
        return "id"
    if isinstance(err, QueueNameError):
        return "queue_name"
    return "other"


def subset(want: Any, got: Any, where: str) -> None:
    if isinstance(want, dict):
        assert isinstance(got, dict), f"{where}: got {got!r}, want an object"
        for k, v in want.items():
            assert k in got, f"{where}: no {k} in {got!r}"
            subset(v, got[k], f"{where}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {got!r} != {want!r}"
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            subset(w, g, f"{where}[{i}]")
    else:
        assert got == want, f"{where}: got {got!r}, want {want!r}"


CASES = [c for f in ("ids", "keys", "errors", "versions") for c in load(f)]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_vector(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises((IdError, QueueNameError)) as ei:
            run(case["op"], case["args"])
        assert kind_of(ei.value) == case["error"]["kind"]
        return
    subset(case["result"], run(case["op"], case["args"]), case["name"])


def test_every_vector_file_is_read() -> None:
    """Here or elsewhere: schedules.json, the schedules oracle's, is test_schedules.py's."""
    files = sorted(p.stem for p in VECTORS.glob("*.json"))
    assert files == ["errors", "ids", "keys", "schedules", "versions"], (
        f"a new vector file to read: {files}"
    )
    assert len(CASES) > 1000
