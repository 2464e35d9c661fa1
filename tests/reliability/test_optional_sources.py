"""Prometheus and AWS unreachable, slow or denied: diagnose answers in bounded time with the same exit code,
and only the checks that need the source are skipped, each with the reason.

The slow AWS case (boto3's standard retries: ~20 s) runs in `python -m gputui.dev.reliability` only.
"""

from __future__ import annotations

import pytest

from gputui.dev.reliability.optional_sources import OptionalCase, optional_source_matrix

pytestmark = pytest.mark.slow  # the reliability suite: faults injected end to end (README "Reliability")

PROMETHEUS_CHECKS = {"nodepool-near-gpu-limit", "gpu-idle", "karpenter-provisioning-failures", "gpu-xid-errors",
                     "gpu-ecc-errors", "gpu-row-remap-failure", "gpu-pcie-replays", "gpu-temperature",
                     "gpu-rma-candidate"}


@pytest.fixture(scope="module")
def prometheus() -> dict[str, OptionalCase]:
    return {c.condition: c for c in optional_source_matrix(sources=("prometheus",))}


@pytest.fixture(scope="module")
def aws() -> dict[str, OptionalCase]:
    return {c.condition: c for c in optional_source_matrix(sources=("aws",), conditions=("unreachable", "forbidden"))}


@pytest.mark.parametrize("condition, state, words", [
    ("unreachable", "unreachable", "connection refused"),
    ("slow", "unreachable", "127.0.0.1"),
    ("forbidden", "forbidden", "HTTP 403"),
])
def test_prometheus(prometheus: dict[str, OptionalCase], condition: str, state: str, words: str) -> None:
    case = prometheus[condition]
    assert case.error == "" and case.ok, case.to_json()
    assert case.state == state and words in case.detail
    assert set(case.skipped) >= PROMETHEUS_CHECKS
    assert all(r == f"prometheus: {state} ({case.detail})" for r in case.skipped.values())
    assert case.exit_code == case.baseline_exit_code and case.changed == []
    assert case.seconds < (13 if condition == "slow" else 5)


def test_slow_prometheus_says_it_timed_out(prometheus: dict[str, OptionalCase]) -> None:
    assert "no answer within" in prometheus["slow"].detail


@pytest.mark.parametrize("condition, state, words", [
    ("unreachable", "unreachable", "Could not connect to the endpoint URL"),
    ("forbidden", "forbidden", "ec2:DescribeSubnets"),
])
def test_aws(aws: dict[str, OptionalCase], condition: str, state: str, words: str) -> None:
    case = aws[condition]
    assert case.error == "" and case.ok, case.to_json()
    assert case.state == state and words in case.detail
    assert case.skipped and all(r.startswith(f"aws: {state} (") for r in case.skipped.values())
    assert case.exit_code == case.baseline_exit_code and case.changed == []
    assert case.seconds < 8
