"""gpu-xid-errors (GT704): Xids seen in the last hour, with NVIDIA's action; fatal ones are critical.

Runs against a real Prometheus (Debian package) loaded with tests/prometheus/datasets.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from diagnostics import CheckStatus, ObjectRef, Report, Severity, run
from diagnostics.snapshot import SourceState
from diagnostics.facts.metric_facts import QUERIES, MetricFacts
from tests.builders import snapshot
from tests.prometheus.conftest import diagnose, facts, prometheus  # noqa: F401 - real Prometheus fixtures
from tests.prometheus.datasets import BROKEN, BUSY, IDLE
from tests.prometheus.datasets import CLUSTER as DATASET_CLUSTER
from tests.prometheus.hour import AGAIN, CHURN, CLUSTER, GAP, LATER, MIG_HELD, MIG_NEW


def _by_node(report: Report) -> dict[str, object]:
    (result,) = report.results
    return {f.subject.name: f for f in result.findings}


def test_xid_79_is_critical_and_says_to_drain_and_replace(diagnose: Callable[..., Report]) -> None:
    found = _by_node(diagnose("gpu-xid-errors", "fleet"))
    f = found[BROKEN]
    assert f.code == "GT704"
    assert f.severity is Severity.CRITICAL
    assert f.subject == ObjectRef("Node", BROKEN)
    # GPU 3's Xid 119 lives in a series born 10 minutes ago (newer exporter, err_code label) beside the
    # GPU's series reading 0: per GPU, the gauge turned from 0 to 119.
    assert f.title == (f"Xid 119 on GPU 3, Xid 79 on GPU 7 of {BROKEN} in the last hour: "
                       "GPU has fallen off the bus - drain the node")
    xid79 = next(e for e in f.evidence if e.path == "Xid 79")
    assert xid79.value == "GPU has fallen off the bus [RESTART_BM]"
    assert "reboot" in xid79.note
    gpu7 = next(e for e in f.evidence if isinstance(e.value, dict) and e.value.get("gpu") == "7")
    assert gpu7.path == QUERIES["xid_recent"][0]  # the PromQL, to re-run in Prometheus
    assert gpu7.value["xids"] == [79]
    # When the gauge turned (at the first minute step after the scrape), to match against the kernel log.
    assert re.search(r"turned to Xid 79 at \d\d:\d\d UTC, (19|20) min ago$", gpu7.note), gpu7.note
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


def test_a_held_xid_is_not_new_under_a_new_job_a_scrape_gap_or_another_mig_instance(
        diagnose: Callable[..., Report]) -> None:
    # dcgm-exporter labels the Xid gauge with the pod holding the GPU: jobs landing on a GPU whose gauge
    # holds an Xid from days ago, a 40-minute scrape gap, a pod on one MIG instance are no new Xid.
    found = _by_node(diagnose("gpu-xid-errors", "hour", CLUSTER))
    assert not {CHURN, GAP, MIG_HELD} & set(found)


def test_mig_instances_of_one_gpu_are_one_xid(diagnose: Callable[..., Report]) -> None:
    f = _by_node(diagnose("gpu-xid-errors", "hour", CLUSTER))[MIG_NEW]
    assert f.title == (f"Xid 79 on GPU 0 of {MIG_NEW} in the last hour: GPU has fallen off the bus - drain the node")
    assert len([e for e in f.evidence if e.path == QUERIES["xid_recent"][0]]) == 1


def test_an_xid_that_comes_back_after_a_reset_is_new(diagnose: Callable[..., Report]) -> None:
    report = diagnose("gpu-xid-errors", "hour", CLUSTER)
    f = _by_node(report)[AGAIN]
    assert f.severity is Severity.CRITICAL
    assert f.title.startswith(f"Xid 79 on GPU 2 of {AGAIN} in the last hour")
    (gpu2,) = [e for e in f.evidence if e.path == QUERIES["xid_recent"][0]]
    assert re.search(r"Xid 79 at .*, 1[45] min ago$", gpu2.note), gpu2.note  # the recurrence, not the held Xid
    assert ObjectRef("Pod", "train-b", "ml") in f.related  # the job on the GPU when it fell off again
    # A different Xid under a new job is new too, though the GPU's gauge read one before.
    later = _by_node(report)[LATER]
    assert later.title.startswith(f"Xid 31 on GPU 1 of {LATER} in the last hour")
    assert later.severity is Severity.WARNING


def test_a_prometheus_that_just_started_calls_no_held_xid_new(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("gpu-xid-errors", "xid-fresh", CLUSTER).results
    assert result.status is CheckStatus.PASSED and result.examined == 1


def test_skipped_on_facts_from_before_per_gpu_xids(facts: Callable[[str], MetricFacts]) -> None:
    # A bundle whose facts hold only the per-series queries of older gputui: no all-clear from them.
    got = facts("fleet")
    old = MetricFacts(got.queried_at, got.url, {p: s for p, s in got.samples.items() if p != "xid_recent"},
                      {p: q for p, q in got.queries.items() if p != "xid_recent"}, got.absent, got.errors)
    report = run(snapshot(DATASET_CLUSTER, sources={"prometheus": SourceState.OK}, metrics=old), only=["gpu-xid-errors"])
    (result,) = report.results
    assert result.status is CheckStatus.SKIPPED
    assert "not queried" in result.reason
