"""gpu-idle (GT702): average DCGM utilisation under 10 % over the hour, per GPU, with the pod holding it.

Runs against a real Prometheus (Debian package) loaded with tests/prometheus/datasets.py.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from diagnostics import CheckStatus, ObjectRef, Report, Severity
from diagnostics.model import EvidenceKind
from tests.prometheus.conftest import diagnose, facts, prometheus  # noqa: F401 - real Prometheus fixtures
from tests.prometheus.datasets import A10G, BUSY, CLUSTER, IDLE


def test_fails_naming_idle_gpus_and_the_pod_holding_them(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("gpu-idle", "fleet").results
    assert result.status is CheckStatus.FAILED
    (f,) = result.findings  # BUSY's 0 % GPU belongs to a pod that started 10 minutes ago: too young
    assert f.code == "GT702"
    assert f.severity is Severity.WARNING
    assert f.subject == ObjectRef("Node", IDLE)
    assert f.title.startswith(f"4 of 4 GPUs on {IDLE} idle for the last hour")
    # Each GPU named once, by its state (the QA pass read "(...: GPU 0, GPU 1, GPU 2, GPU 3): ... GPU 2, GPU 3").
    assert f.title.endswith("(average under 10%): GPU 0, GPU 1 held by ml/notebook-0; "
                            "GPU 2, GPU 3 not allocated to any pod")
    assert f.remediation.text == (
        "Find out whether the pod holding these GPUs still does useful work; delete a hung or finished pod to free "
        "its GPUs. No pod holds GPU 2, GPU 3: the node is bigger than its workload; scale its node group down or use "
        "a smaller instance type.")
    gpu0 = next(e for e in f.evidence if e.kind is EvidenceKind.METRIC and e.value["gpu"] == "0")
    assert gpu0.path.startswith("avg_over_time(DCGM_FI_DEV_GPU_UTIL[1h])")  # the PromQL, re-runnable
    assert gpu0.value["pod"] == "ml/notebook-0"
    assert gpu0.value["modelName"] == A10G
    assert gpu0.value["UUID"].startswith("GPU-")
    assert gpu0.value["avg_util_percent"] == 1.0
    assert ObjectRef("Pod", "notebook-0", "ml") in f.related
    assert "kubectl exec -n ml notebook-0 -- nvidia-smi" in f.remediation.commands
    assert all(e.subject != ObjectRef("Node", BUSY) for e in f.evidence)


def test_gpu_known_only_by_scrape_address_is_tied_to_its_node(diagnose: Callable[..., Report]) -> None:
    # legacy: these series carry no Hostname/hostname label, only instance="10.0.1.12:9400",
    # which is the node's InternalIP.
    (result,) = diagnose("gpu-idle", "legacy").results
    (f,) = result.findings
    assert f.subject == ObjectRef("Node", IDLE)
    assert "2 of 2 GPUs" in f.title and "not allocated to any pod" in f.title  # not "held by the exporter"
    # No pod holds them: the GPUs are listed once and the fix does not speak of "pods holding these GPUs".
    assert f.title.endswith("(average under 10%: GPU 0, GPU 1): not allocated to any pod")
    assert "pod holding" not in f.remediation.text and "pods holding" not in f.remediation.text
    assert f.remediation.text.startswith("No pod holds these GPUs: the node is bigger than its workload")
    assert f.related == ()


def test_passes_when_gpus_are_busy(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("gpu-idle", "quiet").results
    assert result.status is CheckStatus.PASSED
    assert result.examined == 3  # three GPU nodes judged


def test_skipped_without_dcgm_metrics(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("gpu-idle", "empty").results
    assert result.status is CheckStatus.SKIPPED
    assert result.reason.startswith("DCGM_FI_DEV_GPU_UTIL not exported (no dcgm-exporter metrics")


def test_a_node_younger_than_the_hour_is_not_called_idle_for_the_hour(diagnose: Callable[..., Report]) -> None:
    # drift-disrupts-training's replacement p4d, 12 minutes old, was "idle for the last hour": the series an
    # hour back were another instance's (a reused EC2 hostname) or a demo's history.
    from tests.builders import NOW

    young = CLUSTER.replace(f"  name: {IDLE}\n",
                            f"  name: {IDLE}\n  creationTimestamp: '{(NOW - timedelta(minutes=12)).isoformat()}'\n")
    assert young != CLUSTER
    (result,) = diagnose("gpu-idle", "fleet", young).results
    assert all(f.subject != ObjectRef("Node", IDLE) for f in result.findings)
    assert result.status is CheckStatus.PASSED
