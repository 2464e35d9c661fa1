"""gpu-xid-errors (GT704): Xids seen in the last hour, with NVIDIA's action; fatal ones are critical.

Runs against a real Prometheus (Debian package) loaded with tests/prometheus/datasets.py.
"""

from __future__ import annotations

from collections.abc import Callable

from diagnostics import CheckStatus, ObjectRef, Report, Severity
from tests.prometheus.conftest import diagnose, facts, prometheus  # noqa: F401 - real Prometheus fixtures
from tests.prometheus.datasets import BROKEN, BUSY, IDLE


def _by_node(report: Report) -> dict[str, object]:
    (result,) = report.results
    return {f.subject.name: f for f in result.findings}


def test_xid_79_is_critical_and_says_to_drain_and_replace(diagnose: Callable[..., Report]) -> None:
    found = _by_node(diagnose("gpu-xid-errors", "fleet"))
    f = found[BROKEN]
    assert f.code == "GT704"
    assert f.severity is Severity.CRITICAL
    assert f.subject == ObjectRef("Node", BROKEN)
    # GPU 3's Xid 119 lives in a series born 10 minutes ago (newer exporter, err_code label):
    # changes() cannot see it, the "born in the window" rule does.
    assert f.title == (f"Xid 119 on GPU 3, Xid 79 on GPU 7 of {BROKEN} in the last hour: "
                       "GPU has fallen off the bus - drain the node")
    xid79 = next(e for e in f.evidence if e.path == "Xid 79")
    assert xid79.value == "GPU has fallen off the bus [RESTART_BM]"
    assert "reboot" in xid79.note
    gpu7 = next(e for e in f.evidence if isinstance(e.value, dict) and e.value.get("gpu") == "7")
    assert gpu7.path == "changes(DCGM_FI_DEV_XID_ERRORS[1h]) > 0"
    assert gpu7.value["xids"] == [79]
    assert f"kubectl drain {BROKEN} --ignore-daemonsets --delete-emptydir-data" in f.remediation.commands
    assert "kubectl delete nodeclaim gpu-ondemand-x7k2q" in f.remediation.commands  # Karpenter replaces it
    assert ObjectRef("NodeClaim", "gpu-ondemand-x7k2q") in f.related
    # The optional per-Xid counter is off (dcgm-exporter's default): the finding says what that hides.
    (absent,) = [e for e in f.evidence if e.path == "DCGM_EXP_XID_ERRORS_COUNT"]
    assert absent.note.startswith("not exported (off in dcgm-exporter's default counters): codes come from")


def test_application_xid_is_only_a_warning(diagnose: Callable[..., Report]) -> None:
    f = _by_node(diagnose("gpu-xid-errors", "fleet"))[IDLE]
    assert f.severity is Severity.WARNING  # Xid 13: the job's own bug, the GPU stays healthy
    assert f.title.startswith(f"Xid 13 on GPU 0 of {IDLE}")


def test_old_xid_held_by_the_gauge_is_not_reported(diagnose: Callable[..., Report]) -> None:
    # BUSY's GPU 5 has shown 13 for over two hours: the gauge keeps the last Xid forever.
    assert BUSY not in _by_node(diagnose("gpu-xid-errors", "fleet"))


def test_older_hostname_label_and_gpu_reset_for_xid_48(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("gpu-xid-errors", "legacy").results
    (f,) = result.findings
    assert f.subject == ObjectRef("Node", BROKEN)  # from the `Hostname` spelling
    assert f.severity is Severity.CRITICAL
    assert "Xid 48 on GPU 2" in f.title
    # Only the optional windowed counter saw GPU 5's Xid 94, 15-20 minutes ago.
    assert "Xid 94 on GPU 5" in f.title
    # A pre-4.5.2 exporter's blank-value series (xid="9223372036854775792") is no Xid on GPU 6.
    assert "GPU 6" not in f.title and "9223372036854775792" not in f.title
    assert any(c.endswith("chroot /host nvidia-smi -r -i 2") for c in f.remediation.commands)
    # The workload from exported_pod, not the dcgm-exporter pod the scrape labelled `pod`.
    assert ObjectRef("Pod", "job-0", "ml") in f.related
    assert all(r.namespace != "gpu-operator" for r in f.related)


def test_passes_without_recent_xids(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("gpu-xid-errors", "quiet").results
    assert result.status is CheckStatus.PASSED
    assert result.examined == 3


def test_skipped_without_dcgm_metrics(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("gpu-xid-errors", "empty").results
    assert result.status is CheckStatus.SKIPPED
    assert result.reason.startswith("DCGM_FI_DEV_XID_ERRORS not exported")
