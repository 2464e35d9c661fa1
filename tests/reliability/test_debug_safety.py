"""No debug pod is left behind, whatever stops `gputui debug` (tests/debugpod covers Ctrl-C while the pod starts
and SIGTERM while nvidia-smi runs; these are the other ways)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gputui.dev.reliability import debug_safety as ds

pytestmark = pytest.mark.slow  # the reliability suite: faults injected end to end (README "Reliability")

COVERED_ELSEWHERE = {("sigint", "Pending"), ("sigterm", "Running")}
CASES = [c for c in ds.CASES if (c[1], c[2]) not in COVERED_ELSEWHERE]


@pytest.fixture(scope="module")
def world() -> Iterator[ds.DebugWorld]:
    with ds.DebugWorld() as w:
        yield w


@pytest.mark.parametrize("name, disturbance, phase", CASES, ids=[c[0] for c in CASES])
def test_no_debug_pod_is_left(world: ds.DebugWorld, name: str, disturbance: str, phase: str) -> None:
    case = ds.run_case(world, name, disturbance, phase)
    facts = case.to_json()
    assert case.error == "" and not case.traceback, facts
    if disturbance == "lost-connection":
        # gputui cannot delete what it cannot reach: it exits at once, says so, and `--cleanup` removes the pod.
        assert case.exit_code == 5 and case.seconds < 10, facts
        assert case.pods_left == 1 and case.pods_after_cleanup == 0, facts
        return
    assert case.pods_left == 0, facts
    if disturbance == "sigint-twice":
        # The second Ctrl-C may land after the pod is deleted: the process then dies of SIGINT (a shell's 130).
        assert case.exit_code == 130, facts
    elif disturbance == "sigint":
        assert case.exit_code == 130 and case.last_line == "gputui: interrupted", facts
    elif disturbance == "sigterm":
        assert case.exit_code == 143 and case.last_line == "gputui: terminated", facts
    elif disturbance == "exception":
        assert case.last_line == "RuntimeError: the output widget crashed", facts
