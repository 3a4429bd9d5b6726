"""The schedules oracle's vectors (conformance/vectors/schedules.json, written by the lead's
conformance/vectors/schedules.py) against echomq.cron and echomq.schedulers.plan: cron next slots
in time zones across DST, interval slots, refused expressions and zones, plans under every missed
policy. No server. A missing vectors file fails."""

from __future__ import annotations

import datetime
import json
import time
from dataclasses import dataclass
from typing import Any

import pytest
from conftest import ROOT

import echomq
from echomq import ArgumentError, Cron, Interval, PlanEntry, next_runs, plan
from echomq.cron import SEARCH_MS

VECTORS = ROOT / "conformance" / "vectors" / "schedules.json"


def load() -> dict[str, Any]:
    assert VECTORS.is_file(), f"{VECTORS} is missing (conformance/vectors/schedules.py writes it)"
    doc: dict[str, Any] = json.loads(VECTORS.read_text())
    for part in ("cron", "interval", "invalid_cron", "invalid_tz", "plans"):
        assert doc.get(part), f"schedules.json has no {part}"
    return doc


DOC = load()


def chain(next_after: Any, after: int, n: int) -> list[int]:
    """n1 = next_after(after), n2 = next_after(n1), ...: n values, or up to and with a 0."""
    out: list[int] = []
    x = after
    while len(out) < n:
        x = next_after(x)
        out.append(x)
        if x == 0:
            break
    return out


@pytest.mark.parametrize("case", DOC["cron"], ids=[c["name"] for c in DOC["cron"]])
def test_cron_next(case: dict[str, Any]) -> None:
    c = Cron(case["expr"], case["tz"])
    want: list[int] = case["next_ms"]
    assert chain(c.next_after, case["after_ms"], len(want)) == want


@pytest.mark.parametrize("case", DOC["interval"], ids=[c["name"] for c in DOC["interval"]])
def test_interval_next(case: dict[str, Any]) -> None:
    i = Interval(case["every_ms"], case["start_ms"])
    want: list[int] = case["next_ms"]
    assert chain(i.next_after, case["after_ms"], len(want)) == want


@pytest.mark.parametrize("case", DOC["invalid_cron"], ids=[c["why"] for c in DOC["invalid_cron"]])
def test_invalid_cron_is_refused(case: dict[str, Any]) -> None:
    with pytest.raises(ArgumentError):
        Cron(case["expr"], "")


@pytest.mark.parametrize("tz", DOC["invalid_tz"])
def test_invalid_tz_is_refused(tz: str) -> None:
    with pytest.raises(ArgumentError):
        Cron("0 0 * * *", tz)


@dataclass(frozen=True)
class Record:
    cron: str
    tz: str
    every_ms: int
    start_ms: int
    missed: str
    backfill: int
    grace_ms: int
    next_ms: int
    paused: bool


@pytest.mark.parametrize("case", DOC["plans"], ids=[c["name"] for c in DOC["plans"]])
def test_plan(case: dict[str, Any]) -> None:
    r = Record(**case["record"])
    want = [PlanEntry(**e) for e in case["entries"]]
    assert plan(r, case["now_ms"], case["horizon_ms"]) == want


def test_the_vectors_cover_dst_and_the_day_rule() -> None:
    zones = {c["tz"] for c in DOC["cron"]}
    assert "America/New_York" in zones and len(zones) >= 3, zones
    missed = {c["record"]["missed"] for c in DOC["plans"]}
    assert {echomq.MISSED_SKIP, echomq.MISSED_RUN_ONCE, echomq.MISSED_BACKFILL} <= missed


# ---------------------------------------------------------------- beyond the vectors


def ms(iso: str) -> int:
    return int(datetime.datetime.fromisoformat(iso).timestamp() * 1000)


def test_fall_back_runs_once_and_spring_forward_skips() -> None:
    c = Cron("30 1 * * *", "America/New_York")
    assert next_runs(c, ms("2027-11-06T12:00:00+00:00"), 2) == [
        ms("2027-11-07T05:30:00+00:00"),  # 01:30 EDT, the first pass; the EST one is no slot
        ms("2027-11-08T06:30:00+00:00"),
    ]
    c = Cron("30 2 * * *", "America/New_York")
    assert c.next_after(ms("2027-03-13T12:00:00+00:00")) == ms("2027-03-15T06:30:00+00:00")


def test_last_slots_from_inside_a_repeated_hour() -> None:
    c = Cron("*/20 1 * * *", "America/New_York")
    # 06:25Z is 01:25 EST, the repeated hour's second pass: its slots are the first pass's
    got = c.last_slots(ms("2027-11-07T06:25:00+00:00"), ms("2027-11-07T00:00:00+00:00"), 10)
    assert got == [ms(f"2027-11-07T05:{m}:00+00:00") for m in ("00", "20", "40")]
    assert Interval(10, 5).last_slots(46, 0, 2) == [35, 45]
    assert Interval(10, 5).last_slots(46, 30, 9) == [35, 45]
    assert Interval(10, 5).last_slots(5, 0, 2) == []


def test_names_macros_steps_and_the_day_rule() -> None:
    jan1 = ms("2027-01-01T00:00:00+00:00")  # a Friday
    assert Cron("@yearly").next_after(jan1) == ms("2028-01-01T00:00:00+00:00")
    assert Cron("@WEEKLY").next_after(jan1) == ms("2027-01-03T00:00:00+00:00")
    assert Cron(" 0 0 * * 5-7 ").next_after(jan1) == ms("2027-01-02T00:00:00+00:00")  # Sat
    # both restricted: the 13th or a Friday
    assert next_runs(Cron("0 0 13 * FRI"), jan1, 2) == [
        ms("2027-01-08T00:00:00+00:00"),
        ms("2027-01-13T00:00:00+00:00"),
    ]
    # a dom of */2 starts with *: both must match (odd days that are Mondays)
    assert Cron("0 0 */2 * MON").next_after(jan1) == ms("2027-01-11T00:00:00+00:00")
    assert next_runs(Cron("*/61 * * * *"), jan1, 2) == [jan1 + 3_600_000, jan1 + 7_200_000]
    # a dow of sun-sat does not start with *: the 1st or any day (of January)
    assert Cron("0\t0\t1\tjan\tsun-sat", "UTC").next_after(jan1) == ms("2027-01-02T00:00:00Z")
    assert Cron("0 0 1 jan *", "UTC").next_after(jan1) == ms("2028-01-01T00:00:00Z")
    assert Cron("*/20 * * * * *").next_after(jan1 + 1) == jan1 + 20_000
    assert Cron("0 0 29 2 *").next_after(ms("2097-03-01T00:00:00Z")) == ms("2104-02-29T00:00:00Z")
    assert Cron("0 0 30 2 *").next_after(jan1) == 0
    c = Cron("0 9 * * *", "Europe/Paris")
    got = c.next(datetime.datetime(2027, 6, 1, tzinfo=datetime.UTC))
    assert got is not None and got.isoformat() == "2027-06-01T09:00:00+02:00"
    assert Cron("0 0 30 2 *").next(datetime.datetime(2027, 6, 1, tzinfo=datetime.UTC)) is None


def test_the_search_is_field_wise_not_a_scan() -> None:
    """An ended expression searches SEARCH_DAYS in well under a second; a scan of its seconds
    would take minutes."""
    t = time.monotonic()
    for expr in ("0 0 30 2 *", "0 0 31 4,6,9,11 *", "59 59 23 31 2 *"):
        assert Cron(expr, "Europe/Paris").next_after(0) == 0
    assert time.monotonic() - t < 2.0
    assert SEARCH_MS == 8 * 366 * 86_400_000


def test_zones() -> None:
    assert Cron("0 0 * * *").tz == "UTC" and Cron("0 0 * * *", "UTC").tz == "UTC"
    for bad in ("Local", "localtime", "Mars/Olympus", "x" * 65):
        with pytest.raises(ArgumentError):
            Cron("0 0 * * *", bad)
    with pytest.raises(TypeError):
        Cron("0 0 * * *", None)  # type: ignore[arg-type]


def test_next_runs_of_a_record_and_bad_arguments() -> None:
    assert next_runs(Interval(1000, 500), 0, 3) == [500, 1500, 2500]
    assert next_runs(Cron("0 0 30 2 *"), 0, 3) == []
    with pytest.raises(ArgumentError):
        next_runs(Interval(1000), 0, -1)
    with pytest.raises(ArgumentError):
        Interval(0)
    with pytest.raises(TypeError):
        next_runs(Interval(1000), datetime.datetime(2027, 1, 1), 1)  # naive
