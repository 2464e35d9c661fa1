"""gpu-ecc-errors (GT705): uncorrectable volatile ECC errors; skipped (not "healthy") when not exported.

Runs against a real Prometheus (Debian package) loaded with tests/prometheus/datasets.py.
"""

from __future__ import annotations

from collections.abc import Callable

from diagnostics import CheckStatus, ObjectRef, Report, Severity
from tests.prometheus.conftest import diagnose, facts, prometheus  # noqa: F401 - real Prometheus fixtures
from tests.prometheus.datasets import SICK


def test_fails_with_counts_since_driver_load_and_in_the_hour(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("gpu-ecc-errors", "fleet").results
    (f,) = result.findings
    assert f.code == "GT705"
    assert f.severity is Severity.ERROR
    assert f.subject == ObjectRef("Node", SICK)
    assert f.title == (f"{SICK}: GPU 0 had 2 uncorrectable ECC errors since the driver loaded (1 in the last hour): "
                       "reset the GPU to remap the bad memory")
    total = next(e for e in f.evidence if e.path == "max_over_time(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m])")
    assert total.value["dbe_volatile"] == 2
    assert total.value["pod"] == "serving/inference-0"
    assert any("increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[1h])" in e.path for e in f.evidence)
    assert ObjectRef("Pod", "inference-0", "serving") in f.related


def test_passes_when_counters_are_zero(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("gpu-ecc-errors", "quiet").results
    assert result.status is CheckStatus.PASSED
    assert result.examined == 3


def test_skipped_with_the_reason_when_ecc_counters_are_off(diagnose: Callable[..., Report]) -> None:
    # legacy runs dcgm-exporter's default counters: GPU metrics exist, ECC ones do not.
    (result,) = diagnose("gpu-ecc-errors", "legacy").results
    assert result.status is CheckStatus.SKIPPED
    assert result.reason == "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL not exported (off in dcgm-exporter's default counters)"
