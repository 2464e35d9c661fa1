"""gpu-temperature (GT708): hot GPUs, with thresholds as parameters.

Runs against a real Prometheus (Debian package) loaded with tests/prometheus/datasets.py.
"""

from __future__ import annotations

from collections.abc import Callable

from diagnostics import CheckStatus, Finding, ObjectRef, Report, Severity
from diagnostics.checks.gpu_temperature import TemperatureThresholds, evaluate
from diagnostics.facts.metric_facts import MetricFacts
from diagnostics.snapshot import SourceState
from tests.builders import snapshot
from tests.prometheus.conftest import diagnose, facts, prometheus  # noqa: F401 - real Prometheus fixtures
from tests.prometheus.datasets import BUSY, CLUSTER, SICK


def test_warns_when_hot_and_is_critical_near_shutdown(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("gpu-temperature", "fleet").results
    found = {f.subject: f for f in result.findings}
    assert set(found) == {ObjectRef("Node", SICK), ObjectRef("Node", BUSY)}
    sick, busy = found[ObjectRef("Node", SICK)], found[ObjectRef("Node", BUSY)]
    assert sick.code == "GT708"
    assert sick.severity is Severity.CRITICAL  # 94 °C >= 92
    assert sick.title == f"{SICK}: GPU 0 at up to 94 °C - near thermal shutdown"
    assert busy.severity is Severity.WARNING  # 87 °C: one warm GPU among 63 °C ones
    assert busy.title == f"{BUSY}: GPU 3 at up to 87 °C - likely thermal throttling"
    (ev,) = [e for e in busy.evidence if e.path == "avg_over_time(DCGM_FI_DEV_GPU_TEMP[5m])"]
    assert ev.value["temperature_c"] == 87.0 and ev.value["gpu"] == "3"


def test_host_labelled_with_the_exporter_pod_name_is_tied_to_its_node(diagnose: Callable[..., Report]) -> None:
    # legacy: dcgm-exporter runs without NODE_NAME, so Hostname is its pod's name; the pod's
    # spec.nodeName says which node that is.
    (result,) = diagnose("gpu-temperature", "legacy").results
    (f,) = result.findings
    assert f.subject == ObjectRef("Node", SICK)
    assert f.severity is Severity.CRITICAL


def test_thresholds_are_parameters(facts: Callable[[str], MetricFacts]) -> None:
    snap = snapshot(CLUSTER, sources={"prometheus": SourceState.OK}, metrics=facts("fleet"))
    stricter = [f for f in evaluate(snap, TemperatureThresholds(warn_c=60, critical_c=95))
                if isinstance(f, Finding)]
    # At 60 °C every busy node warns and nothing is critical any more.
    assert {f.subject.name for f in stricter} >= {BUSY, SICK}
    assert all(f.severity is None for f in stricter)
    laxer = [f for f in evaluate(snap, TemperatureThresholds(warn_c=95, critical_c=99)) if isinstance(f, Finding)]
    assert laxer == []


def test_passes_at_normal_temperatures(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("gpu-temperature", "quiet").results
    assert result.status is CheckStatus.PASSED
    assert result.examined == 3


def test_skipped_without_dcgm_metrics(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("gpu-temperature", "empty").results
    assert result.status is CheckStatus.SKIPPED
    assert result.reason.startswith("DCGM_FI_DEV_GPU_TEMP not exported")
