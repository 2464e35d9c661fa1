"""nodepool-near-gpu-limit (GT701): GPU usage over 90 % of the NodePool limit, both metric generations.

Runs against a real Prometheus (Debian package) loaded with tests/prometheus/datasets.py.
"""

from __future__ import annotations

from collections.abc import Callable

from diagnostics import CheckStatus, ObjectRef, Report, Severity
from tests.prometheus.conftest import diagnose, facts, prometheus  # noqa: F401 - real Prometheus fixtures
from tests.prometheus.datasets import CLUSTER


def test_fails_near_the_limit_with_current_metric_names(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("nodepool-near-gpu-limit", "fleet").results
    (f,) = result.findings  # gpu-spot is at 5/32; cpu at 99 % is not a GPU resource
    assert f.code == "GT701"
    assert f.severity is Severity.WARNING
    assert f.subject == ObjectRef("NodePool", "gpu-ondemand")
    assert f.title == "NodePool gpu-ondemand is near its nvidia.com/gpu limit: 20 of 21 (95%)"
    usage, limit = f.evidence
    assert usage.path.startswith('{__name__=~"karpenter_nodepools?_usage"')
    assert (usage.value, limit.value) == (20, 21)
    assert ("kubectl patch nodepool gpu-ondemand --type merge -p "
            """'{"spec":{"limits":{"nvidia.com/gpu":"32"}}}'""") in f.remediation.commands


def test_fails_at_the_limit_with_older_metric_names(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("nodepool-near-gpu-limit", "legacy").results
    (f,) = result.findings
    assert f.title == "NodePool gpu-ondemand has reached its nvidia.com/gpu limit: 21 of 21 (100%); 1 GPU pod pending"
    assert ObjectRef("Pod", "finetune-big-0", "ml") in f.related


def test_pending_pods_of_other_pools_are_not_counted(diagnose: Callable[..., Report]) -> None:
    # A spot-only pod waits for gpu-spot (with room): it is not gpu-ondemand's limit's doing.
    spot_pod = """
---
apiVersion: v1
kind: Pod
metadata: {name: spot-infer-0, namespace: ml}
spec:
  nodeSelector: {karpenter.sh/capacity-type: spot}
  containers: [{name: main, image: x, resources: {limits: {nvidia.com/gpu: "1"}}}]
status: {phase: Pending}
"""
    (result,) = diagnose("nodepool-near-gpu-limit", "legacy", CLUSTER + spot_pod).results
    (f,) = result.findings
    assert f.title.endswith("(100%); 1 GPU pod pending")
    assert ObjectRef("Pod", "spot-infer-0", "ml") not in f.related


def test_passes_with_headroom(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("nodepool-near-gpu-limit", "quiet").results  # older names, 16/64 and 4/32
    assert result.status is CheckStatus.PASSED
    assert result.examined == 2


def test_skipped_without_karpenter_metrics(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("nodepool-near-gpu-limit", "empty").results
    assert result.status is CheckStatus.SKIPPED
    assert result.reason.startswith("karpenter_nodepools_usage not exported (nor karpenter_nodepool_usage")
