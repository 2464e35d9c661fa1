"""karpenter-provisioning-failures (GT703): NodeClaims that never became nodes in the last 15 minutes.

Runs against a real Prometheus (Debian package) loaded with tests/prometheus/datasets.py.
"""

from __future__ import annotations

from collections.abc import Callable

from diagnostics import CheckStatus, ObjectRef, Report, Severity
from tests.prometheus.conftest import diagnose, facts, prometheus  # noqa: F401 - real Prometheus fixtures


def _by_pool(report: Report) -> dict[str, object]:
    (result,) = report.results
    assert result.status is CheckStatus.FAILED
    return {f.subject.name: f for f in result.findings}


def test_spot_ice_counts_the_failures_and_shows_launch_errors(diagnose: Callable[..., Report]) -> None:
    f = _by_pool(diagnose("karpenter-provisioning-failures", "fleet"))["gpu-spot"]
    assert f.code == "GT703"
    assert f.severity is Severity.ERROR
    assert f.subject == ObjectRef("NodePool", "gpu-spot")
    # A counter born 12 minutes ago at 1, now 13: its value is the exact count.
    assert f.title == ("NodePool gpu-spot: 13 NodeClaims failed in the last 15 minutes (insufficient_capacity x13): "
                       "EC2 had no capacity for any allowed instance type/zone (ICE)")
    claims = f.evidence[0]
    assert "karpenter_nodeclaims_disrupted_total" in claims.path
    assert claims.value == {"nodepool": "gpu-spot", "reason": "insufficient_capacity", "capacity_type": "spot",
                            "count": 13}
    launches = [e for e in f.evidence if "instance_launch_failures_total" in e.path]
    assert launches and launches[0].value["reason"] == "LaunchFailed"
    assert "kubectl get events -A --field-selector reason=InsufficientCapacityError" in f.remediation.commands
    assert ObjectRef("Pod", "finetune-big-0", "ml") in f.related


def test_single_sample_failure_counts_and_old_ones_do_not(diagnose: Callable[..., Report]) -> None:
    # gpu-ondemand: one registration_timeout sampled once (increase() alone misses it); its old
    # insufficient_capacity counter has been flat for hours and must not count.
    f = _by_pool(diagnose("karpenter-provisioning-failures", "fleet"))["gpu-ondemand"]
    assert "1 NodeClaim failed in the last 15 minutes (registration_timeout x1)" in f.title
    assert "kubectl describe nodeclaims -l karpenter.sh/nodepool=gpu-ondemand" in f.remediation.commands


def test_older_karpenter_terminated_counter(diagnose: Callable[..., Report]) -> None:
    f = _by_pool(diagnose("karpenter-provisioning-failures", "legacy"))["gpu-ondemand"]
    # Karpenter v0.3x: the counter has no `_total` and carries the reason.
    assert "karpenter_nodeclaims_terminated{" in f.evidence[0].path
    assert "6 NodeClaims failed in the last 15 minutes (liveness x6)" in f.title


def test_passes_without_recent_failures(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("karpenter-provisioning-failures", "quiet").results
    assert result.status is CheckStatus.PASSED
    assert result.examined == 2


def test_skipped_without_karpenter_metrics(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("karpenter-provisioning-failures", "empty").results
    assert result.status is CheckStatus.SKIPPED
    assert result.reason.startswith("no Karpenter metrics")
