"""SUMMARY.md says "no problems found" only when the verdict does (issue #18)."""

from __future__ import annotations

from dataclasses import replace

from diagnostics.model import CheckResult, CheckStatus, Report
from diagnostics.verdict import judge
from gputui.bundle.summary import render
from gputui.output.json import report_json
from tests.builders import NOW


def _summary(*results: CheckResult) -> str:
    report = Report(results, NOW)
    return render(report_json(replace(report, verdict=judge(report))), {}, filename="b.tar.gz")


def test_a_bundle_whose_checks_were_kept_from_looking_is_not_an_all_clear() -> None:
    text = _summary(CheckResult("gpu-not-advertised", "GT201", "t", CheckStatus.PASSED),
                    CheckResult("spot-capacity-shortage", "GT104", "t", CheckStatus.SKIPPED,
                                reason="events: forbidden (list events)", blind=True))
    assert "no problems found" not in text.lower()
    assert "not an all-clear" in text and "events: forbidden (list events) - cannot rule out: spot-capacity-shortage" in text


def test_a_clean_bundle_says_so() -> None:
    text = _summary(CheckResult("gpu-not-advertised", "GT201", "t", CheckStatus.PASSED))
    assert "no problems found" in text and "Could not see" not in text
