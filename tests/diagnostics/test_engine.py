"""engine.run: `between` lets an interactive caller step aside before each check, without changing the report."""

from __future__ import annotations

from pathlib import Path

from diagnostics import all_checks, run
from tests.builders import snapshot

SMALL = (Path(__file__).resolve().parents[1] / "sim" / "data" / "small.yaml").read_text()


def test_between_runs_before_every_check_and_the_report_is_the_same() -> None:
    snap = snapshot(SMALL)
    calls: list[int] = []
    report = run(snap, between=lambda: calls.append(len(calls)))
    assert len(calls) == len(all_checks()) == len(report.results)
    assert report.findings and report.findings == run(snapshot(SMALL)).findings
