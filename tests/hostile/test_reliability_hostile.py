"""The hostile-input part of `python -m gputui.dev.reliability`: every trial it runs holds, and the report says so.

The API-fault trials are the slow part (each fault class on each source, for the whole cluster and a
pod); retries wait milliseconds here (their real bounded wait is tested in test_api_faults.py).
"""

from __future__ import annotations

import pytest

import gputui.collect.reads
from gputui.dev.reliability.__main__ import ok, run_parts
from gputui.dev.reliability.report import render

pytestmark = pytest.mark.slow  # every hostile trial of the reliability suite, end to end


def test_every_hostile_trial_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gputui.collect.reads, "RETRY_WAITS", (0.01, 0.02))
    data = run_parts(["hostile"], faults=0, seed=1, examples=0, tui=False)
    summary = data["hostile"]["summary"]
    failed = [t for t in data["hostile"]["trials"] if not t["ok"]]
    assert not failed, failed
    assert summary["api-faults"]["tried"] >= 70 and summary["escapes"]["tried"] >= 8
    assert summary["secrets"]["tried"] >= 15 and summary["output-files"]["tried"] == 3
    assert ok(data)
    text = render(data)
    assert "## Hostile and broken input (ok  )" in text and "| api-faults | " in text
