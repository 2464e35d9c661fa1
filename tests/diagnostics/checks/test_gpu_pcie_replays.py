"""gpu-pcie-replays (GT707): a steady PCIe replay rate.

Runs against a real Prometheus (Debian package) loaded with tests/prometheus/datasets.py.
"""

from __future__ import annotations

from collections.abc import Callable

from diagnostics import CheckStatus, ObjectRef, Report, Severity
from diagnostics.checks.gpu_pcie_replays import REPLAYS_PER_MINUTE
from tests.prometheus.conftest import diagnose, facts, prometheus  # noqa: F401 - real Prometheus fixtures
from tests.prometheus.datasets import SICK


def test_fails_on_thirty_replays_a_minute(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("gpu-pcie-replays", "fleet").results
    (f,) = result.findings  # every other GPU's counter is flat (3 replays long ago)
    assert f.code == "GT707"
    assert f.severity is Severity.WARNING
    assert f.subject == ObjectRef("Node", SICK)
    assert f.title == f"{SICK}: PCIe replays on GPU 0 at up to 30/min: the GPU's PCIe link is failing"
    (ev,) = [e for e in f.evidence if e.path == "rate(DCGM_FI_DEV_PCIE_REPLAY_COUNTER[15m])"]
    assert ev.value["replays_per_minute"] == 30.0
    assert f"threshold {REPLAYS_PER_MINUTE:g}/min" in ev.note


def test_passes_on_flat_counters(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("gpu-pcie-replays", "quiet").results
    assert result.status is CheckStatus.PASSED
    assert result.examined == 3


def test_skipped_without_dcgm_metrics(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("gpu-pcie-replays", "empty").results
    assert result.status is CheckStatus.SKIPPED
    assert result.reason.startswith("DCGM_FI_DEV_PCIE_REPLAY_COUNTER not exported")
