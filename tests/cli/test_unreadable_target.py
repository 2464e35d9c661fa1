"""A target gputui cannot read is said so, never judged healthy; a passing API blip on its GET is not a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.cli.program import main
from gputui.errors import ExitCode
from gputui.sim.cluster import SimCluster
from gputui.sim.scenario import load_scenario

POD = "pod/serving/sdxl-worker-5d8c7b9f6-mq4tn"


@pytest.fixture
def sim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("GPUTUI_NOW", load_scenario("untolerated-taint").reference_time.isoformat())
    with SimCluster("untolerated-taint") as cluster:
        yield cluster, cluster.write_kubeconfig(tmp_path / "kubeconfig")


def test_a_pod_that_cannot_be_read_is_an_error_not_a_pass(  # type: ignore[no-untyped-def]
        sim, capsys: pytest.CaptureFixture[str]) -> None:
    cluster, kc = sim
    cluster.forbid("pods")
    code = main(["diagnose", POD, "--kubeconfig", str(kc)])
    err = capsys.readouterr()
    assert code == ExitCode.USAGE
    assert "cannot read pod/serving/sdxl-worker-5d8c7b9f6-mq4tn: pods: forbidden" in err.err
    assert "No problems found" not in err.out


@pytest.mark.parametrize("status", [429, 502, 503])
def test_a_blip_on_the_targets_get_falls_back_to_the_lists(sim, status: int,  # type: ignore[no-untyped-def]
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    cluster, kc = sim
    cluster.fail_requests(1, status, path_contains="/pods/sdxl-worker-5d8c7b9f6-mq4tn")
    code = main(["diagnose", POD, "--kubeconfig", str(kc), "-o", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == ExitCode.FINDINGS_ERROR
    assert data["findings"][0]["check"] == "pod-gpu-taint-not-tolerated"


def test_namespaced_rbac_is_not_an_all_clear(sim, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    # A user who may read pods and events in their namespace only: the pod is readable, almost nothing
    # else. GT401 has no taint to compare with, so it is skipped, and the run is not "all clear".
    cluster, kc = sim
    for resource in ("nodes", "nodepools.karpenter.sh", "nodeclaims.karpenter.sh",
                     "ec2nodeclasses.karpenter.k8s.aws", "daemonsets.apps", "poddisruptionbudgets.policy",
                     "runtimeclasses.node.k8s.io", "namespaces"):
        cluster.forbid(resource)
    code = main(["diagnose", POD, "--kubeconfig", str(kc), "-o", "json"])
    out = capsys.readouterr()
    data = json.loads(out.out)
    gt401 = next(r for r in data["results"] if r["check"] == "pod-gpu-taint-not-tolerated")
    assert gt401["status"] == "skipped" and "nodepools: forbidden" in gt401["reason"]
    assert code == ExitCode.FINDINGS_WARNING
    assert data["verdict"] == "pending, cause not determined"
    assert "cause not determined" in out.err and "could not see" in out.err and "nodepools: forbidden" in out.err


def test_karpenter_without_the_v1_api_is_named_as_such(  # type: ignore[no-untyped-def]
        sim, capsys: pytest.CaptureFixture[str]) -> None:
    # Karpenter v0.32-v0.37 serves only karpenter.sh/v1beta1: gputui reads v1 and says so.
    cluster, kc = sim
    cluster.set_absent("nodeclaims.karpenter.sh")
    code = main(["diagnose", "nodeclaim/gpu-x7k2q", "--kubeconfig", str(kc)])
    err = capsys.readouterr().err
    assert code == ExitCode.USAGE
    assert "nodeclaims.karpenter.sh v1 is not installed in this cluster (or Karpenter is older than v1.0" in err
    code = main(["diagnose", "--kubeconfig", str(kc), "-o", "json"])
    data = json.loads(capsys.readouterr().out)
    assert "older than v1.0: only v1beta1 served" in data["sources"]["nodeclaims"]["detail"]


def test_a_cluster_without_karpenter_or_prometheus_can_still_be_all_clear(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # A GKE-style GPU cluster: no Karpenter CRDs, no Prometheus. Those checks skip as "not installed" /
    # "not configured"; that is not a visibility gap, so a healthy cluster still exits 0.
    monkeypatch.setenv("GPUTUI_NOW", load_scenario("healthy").reference_time.isoformat())
    monkeypatch.delenv("GPUTUI_PROMETHEUS_URL", raising=False)
    with SimCluster("healthy") as cluster:
        kc = cluster.write_kubeconfig(tmp_path / "kubeconfig")
        for crd in ("nodeclaims.karpenter.sh", "nodepools.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws"):
            cluster.set_absent(crd)
        code = main(["diagnose", "--kubeconfig", str(kc), "-o", "json"])
    out = capsys.readouterr()
    data = json.loads(out.out)
    skipped = [r for r in data["results"] if r["status"] == "skipped"]
    assert len(skipped) * 2 > len(data["results"]) and not data["findings"]
    assert code == ExitCode.OK and "not an all-clear" not in out.err


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["throttle", "502"])
def test_a_throttled_or_proxied_list_is_retried(sim, fault: str,  # type: ignore[no-untyped-def]
                                                capsys: pytest.CaptureFixture[str]) -> None:
    cluster, kc = sim
    if fault == "throttle":
        cluster.throttle(1, retry_after=1, path_contains="/api/v1/nodes")
    else:
        cluster.fail_requests(1, 502, path_contains="/api/v1/nodes")
    code = main(["diagnose", "--kubeconfig", str(kc), "-o", "json"])
    data = json.loads(capsys.readouterr().out)
    assert data["sources"]["nodes"]["state"] == "ok", data["sources"]["nodes"]
    assert code == ExitCode.FINDINGS_ERROR
