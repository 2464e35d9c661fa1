"""gpu-row-remap-failure (GT706): a GPU that can no longer remap bad memory rows.

Runs against a real Prometheus (Debian package) loaded with tests/prometheus/datasets.py.
"""

from __future__ import annotations

from collections.abc import Callable

from diagnostics import CheckStatus, ObjectRef, Report, Severity
from tests.prometheus.conftest import diagnose, facts, prometheus  # noqa: F401 - real Prometheus fixtures
from tests.prometheus.datasets import SICK


def test_fails_and_says_to_replace_the_node(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("gpu-row-remap-failure", "fleet").results
    (f,) = result.findings
    assert f.code == "GT706"
    assert f.severity is Severity.ERROR
    assert f.subject == ObjectRef("Node", SICK)
    assert "row remapping failed on GPU 0 (NVIDIA A10G)" in f.title and "replace the node" in f.title
    rows = next(e for e in f.evidence if "UNCORRECTABLE_REMAPPED_ROWS" in e.path)
    assert rows.value == 3
    # Not a Karpenter node in this cluster (no NodeClaim): replace it by hand.
    assert f"kubectl delete node {SICK}" in f.remediation.commands
    assert "aws ec2 terminate-instances --instance-ids i-0aaa000000000013" in f.remediation.commands


def test_passes_when_no_gpu_reports_a_failure(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("gpu-row-remap-failure", "quiet").results
    assert result.status is CheckStatus.PASSED
    assert result.examined == 3


def test_skipped_without_dcgm_metrics(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("gpu-row-remap-failure", "empty").results
    assert result.status is CheckStatus.SKIPPED
    assert result.reason.startswith("DCGM_FI_DEV_ROW_REMAP_FAILURE not exported")
