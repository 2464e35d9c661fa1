"""`gputui diagnose` on the disruption scenarios, whole cluster and for the node and the pod: who blocks (or who
loses), why, and the fix (the official client against the simulator, as a user would run it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputui.cli.program import main
from gputui.errors import ExitCode
from gputui.sim.cluster import SimCluster
from gputui.sim.scenario import load_scenario

NODE = "ip-10-0-60-33.ec2.internal"
SCENARIOS = ("underutilized-blocked", "drift-disrupts-training", "expiry-kills-training")


@pytest.fixture(scope="module", params=SCENARIOS)
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    with SimCluster(request.param) as sim:
        cfg = tmp_path_factory.mktemp(request.param) / "kubeconfig"
        sim.write_kubeconfig(cfg)
        yield request.param, cfg


def diagnose(name: str, cfg: Path, *target: str, capsys: pytest.CaptureFixture[str],
             monkeypatch: pytest.MonkeyPatch) -> tuple[int, dict]:
    sc = load_scenario(name)
    assert sc.reference_time is not None
    monkeypatch.setenv("GPUTUI_NOW", sc.reference_time.isoformat())
    code = main(["diagnose", *target, "--kubeconfig", str(cfg), "-o", "json"])
    return code, json.loads(capsys.readouterr().out)


# What the finding must say in each scenario, whichever target it is seen from.
POD = {"underutilized-blocked": "pod/ml/jupyter-bob-0",
       "drift-disrupts-training": "pod/ml/pretrain-llama-70b-0-x7k2m",
       "expiry-kills-training": "pod/ml/pretrain-llama-8b-0-jcmcd"}


def check_finding(name: str, f: dict) -> None:
    assert f["subject"] == f"node/{NODE}"
    assert POD[name] in f["related"]
    commands = f["remediation"]["commands"]
    evidence = {(e["path"], e.get("subject")): e for e in f["evidence"]}
    if name == "underutilized-blocked":
        assert (f["check"], f["code"], f["severity"]) == ("consolidation-blocked", "GT501", "warning")
        assert f["title"].startswith(f"{NODE} (p4d.24xlarge, 8 GPUs) with 1 of 8 GPUs requested for 3h47m but not "
                                     "consolidated: pod ml/jupyter-bob-0 has karpenter.sh/do-not-disrupt=true")
        alloc = evidence[("status.allocatable", f"node/{NODE}")]
        assert "7 GPUs unrequested for 3h47m (~26.6 GPU-hours)" in alloc["note"]
        assert evidence[("spec.disruption", "nodepool/gpu-research")]["value"]["consolidationPolicy"] == \
            "WhenEmptyOrUnderutilized"
        assert "kubectl annotate pod -n ml jupyter-bob-0 karpenter.sh/do-not-disrupt- --overwrite" in commands
        assert "kubectl delete nodeclaim gpu-research-b9w4s" in commands
    elif name == "drift-disrupts-training":
        assert (f["check"], f["code"], f["severity"]) == ("gpu-workload-disruption", "GT503", "error")
        assert "GPU job ml/pretrain-llama-70b-0-x7k2m (8 GPU, running 1d7h)" in f["title"]
        assert "Karpenter is draining its node for drift (AMIDrift)" in f["title"]
        assert evidence[("status.conditions[Drifted]", "nodeclaim/gpu-training-b9w4s")]["value"]["reason"] == "AMIDrift"
        assert evidence[("event Normal/DisruptionTerminating", f"node/{NODE}")]["value"] == "Disrupting Node: Drifted"
        start = evidence[("status.startTime", POD[name])]
        assert "loses 1d7h of running time (~252 GPU-hours)" in start["note"]
        assert any('"reasons":["Drifted"]' in c for c in commands)
        assert ("kubectl patch ec2nodeclass gpu --type merge -p "
                '\'{"spec":{"amiSelectorTerms":[{"alias":"al2023@v20260818"}]}}\'') in commands
        assert "Already evicted" in f["remediation"]["text"]
    else:
        assert (f["check"], f["code"], f["severity"]) == ("gpu-workload-disruption", "GT503", "error")
        assert ("will be deleted at 2026-08-21T11:58:41Z (in 1h58m) although karpenter.sh/do-not-disrupt=true: "
                "its node's NodeClaim expired (expireAfter 336h)") in f["title"]
        assert evidence[("event Warning/TerminationGracePeriodExpiring", "nodeclaim/gpu-training-b9w4s")]["value"] \
            == "All pods will be deleted by 2026-08-21T11:58:41Z"
        assert evidence[("spec.terminationGracePeriod", "nodeclaim/gpu-training-b9w4s")]["value"] == "4h"
        assert ("kubectl patch nodepool gpu-training --type merge -p "
                '\'{"spec":{"template":{"spec":{"expireAfter":"Never"}}}}\'') in commands


def test_whole_cluster(cluster: tuple[str, Path], capsys: pytest.CaptureFixture[str],
                       monkeypatch: pytest.MonkeyPatch) -> None:
    name, cfg = cluster
    code, data = diagnose(name, cfg, capsys=capsys, monkeypatch=monkeypatch)
    top = data["findings"][0]
    check_finding(name, top)
    assert code == (ExitCode.FINDINGS_WARNING if top["severity"] == "warning" else ExitCode.FINDINGS_ERROR)
    ours = [f for f in data["findings"] if f["check"] in ("consolidation-blocked", "gpu-workload-disruption")]
    # One finding, on the node that has the problem. In underutilized-blocked, the g5.12xlarge whose only replica
    # started 8 minutes ago is inside its pool's consolidateAfter (10m): Karpenter is still waiting, as it should.
    assert [f["subject"] for f in ours] == [f"node/{NODE}"]


def test_node_target(cluster: tuple[str, Path], capsys: pytest.CaptureFixture[str],
                     monkeypatch: pytest.MonkeyPatch) -> None:
    name, cfg = cluster
    _code, data = diagnose(name, cfg, f"node/{NODE}", capsys=capsys, monkeypatch=monkeypatch)
    assert data["target"] == f"node/{NODE}"
    check_finding(name, data["findings"][0])


def test_pod_target(cluster: tuple[str, Path], capsys: pytest.CaptureFixture[str],
                    monkeypatch: pytest.MonkeyPatch) -> None:
    name, cfg = cluster
    _code, data = diagnose(name, cfg, POD[name], capsys=capsys, monkeypatch=monkeypatch)
    assert data["target"] == POD[name]
    check_finding(name, data["findings"][0])


def test_a_node_inside_consolidate_after_is_not_reported(capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with SimCluster("underutilized-blocked") as sim:
        cfg = tmp_path / "kubeconfig"
        sim.write_kubeconfig(cfg)
        code, data = diagnose("underutilized-blocked", cfg, "node/ip-10-0-22-190.ec2.internal", capsys=capsys,
                              monkeypatch=monkeypatch)
    (result,) = [r for r in data["results"] if r["check"] == "consolidation-blocked"]
    assert result["status"] == "passed" and result["examined"] == 1
    assert not [f for f in data["findings"] if f["check"] == "consolidation-blocked"]


def test_explain_documents_the_check_with_karpenters_texts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "GT503"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert out.startswith("GT503 gpu-workload-disruption (warning)")
    for text in ('"Disrupting Node: Drifted"', '"All pods will be deleted by <time>"', "`AMIDrift`",
                 '"Spot interruption warning was triggered"', "karpenter.sh/nodeclaim-termination-timestamp",
                 'reasons: [Drifted]}', "expireAfter: Never"):
        assert text in out, text
    assert main(["explain", "consolidation-blocked"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert 'Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=<ns>/<name>)' in out
    assert "`Consolidatable=True`" in out and "Can't replace with a cheaper node" in out
