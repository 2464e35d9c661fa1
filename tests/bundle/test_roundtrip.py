"""Export -> reopen -> `diagnose --bundle` gives the findings live `diagnose` gives, for every demo scenario."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.bundle.read import open_bundle
from gputui.sim.scenario import list_scenarios, load_scenario
from tests.bundle.helpers import findings, manifest, members, run, served

pytestmark = pytest.mark.slow  # every scenario written to a bundle and replayed

SCENARIOS = [s.name for s in list_scenarios()]


@pytest.mark.parametrize("name", SCENARIOS)
def test_bundle_replays_the_live_findings(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "b.tar.gz"
    with served(name, tmp_path, monkeypatch) as (_sim, cfg):
        code, stdout, _err = run(capsys, "bundle", "-q", "--kubeconfig", str(cfg), "-o", str(out))
        assert code == 0
        live = findings(capsys, "--kubeconfig", str(cfg))
    # Offline: the simulator is gone; only the file speaks.
    offline = findings(capsys, "--bundle", str(out))
    assert offline == live
    expect = load_scenario(name).expect
    if expect.get("topFinding"):
        assert offline[0][:2] == (expect["topFinding"], expect["subject"])
    # The report written at export time says the same as the replay.
    written = json.loads(members(out)["report.json"])
    assert [(f["check"], f["subject"], f["severity"]) for f in written["findings"]] == live
    assert f"wrote {out}" in stdout


def test_bundle_contents_and_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "incident.tar.gz"
    sc = load_scenario("incident")
    with served(sc, tmp_path, monkeypatch) as (sim, cfg):
        assert run(capsys, "bundle", "-q", "--kubeconfig", str(cfg), "-o", str(out))[0] == 0
        server = sim.url
    files = members(out)
    m = json.loads(files["manifest.json"])
    assert m["format"] == "gputui-bundle" and m["format_version"] == 1
    assert m["taken_at"] == "2026-08-21T10:00:00Z" and m["target"] == "cluster"
    assert m["context"]["name"] == "gputui-sim"
    assert m["context"]["server_sha256"].startswith("sha256:") and "server" not in m["context"]
    # Every file is listed with its size and sha256; the listing is complete.
    import hashlib

    assert set(m["files"]) == set(files) - {"manifest.json"}
    for name, entry in m["files"].items():
        assert entry == {"size": len(files[name]), "sha256": hashlib.sha256(files[name]).hexdigest()}
    # Full objects, not gputui's projected records: pod specs keep volumes, env and probes.
    pods = json.loads(files["resources/pods.json"])["items"]
    assert pods and all(p["kind"] == "Pod" and p["apiVersion"] == "v1" for p in pods)
    assert any(c.get("env") for p in pods for c in p["spec"]["containers"])
    assert not any("managedFields" in p["metadata"] for p in pods)
    nodes = {n["metadata"]["name"] for n in json.loads(files["resources/nodes.json"])["items"]}
    assert len(nodes) == len(sc.objects["Node"])
    # Only GPU-related pods: Karpenter's own pod (on a system node) is not in the bundle, its log is.
    assert not any(p["metadata"]["name"].startswith("karpenter-") for p in pods)
    karpenter_log = next(n for n in files if n.startswith("logs/kube-system/karpenter-") and n.endswith("/controller.log"))
    assert b"nodeclaim" in files[karpenter_log]
    # The crash-looping device plugin's last run is there: that is where the reason is.
    log = files["logs/gpu-operator/nvidia-device-plugin-daemonset-8vctf/nvidia-device-plugin-ctr.log"]
    assert b"Starting Plugins" in log
    assert m["collected"]["resources"]["pods"] == len(pods)
    assert {log["path"] for log in m["collected"]["logs"]} == {n for n in files if n.startswith("logs/")}
    # The API server never appears, hashed or not, anywhere in the archive.
    assert all(server.encode() not in data for data in files.values())
    summary = files["SUMMARY.md"].decode()
    assert summary.startswith("# gputui diagnostic bundle: cluster")
    assert "## What is wrong" in summary and "## Checklist" in summary
    assert "1. **ERROR** [GT102 nodeclass-security-groups-not-found] `ec2nodeclass/gpu-efa`" in summary
    assert "kubectl edit ec2nodeclass gpu-efa" in summary


@pytest.mark.parametrize(("name", "target"), [
    ("incident", "pod/ml/pretrain-llama-8b-1-sxt8f"),
    ("incident", "node/ip-10-0-71-88.ec2.internal"),
    ("spot-shortage", "nodepool/gpu-training-spot"),
    ("subnets-not-found", "ec2nodeclass/gpu"),
])
def test_target_bundle_replays_like_the_cluster_bundle(name: str, target: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # A target bundle holds every object a check compares the target with (all pools, GPU nodes and
    # their pods), so focusing on the target offline gives what the whole-cluster bundle gives.
    whole, narrow = tmp_path / "whole.tar.gz", tmp_path / "narrow.tar.gz"
    with served(name, tmp_path, monkeypatch) as (_sim, cfg):
        assert run(capsys, "bundle", "-q", "--kubeconfig", str(cfg), "-o", str(whole))[0] == 0
        assert run(capsys, "bundle", "-q", target, "--kubeconfig", str(cfg), "-o", str(narrow))[0] == 0
    expected = findings(capsys, "--bundle", str(whole), target)
    assert expected
    assert findings(capsys, "--bundle", str(narrow), target) == expected
    m = manifest(narrow)
    assert m["target"] == target
    written = json.loads(members(narrow)["report.json"])
    assert written["target"] == target
    assert [(f["check"], f["subject"], f["severity"]) for f in written["findings"]] == expected


def test_reopened_bundle_is_a_snapshot_at_bundle_time(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "b.tar.gz"
    with served("gpu-not-advertised", tmp_path, monkeypatch) as (_sim, cfg):
        assert run(capsys, "bundle", "-q", "--kubeconfig", str(cfg), "-o", str(out))[0] == 0
    monkeypatch.delenv("GPUTUI_NOW")  # ages must come from the bundle's time, not today's clock
    b = open_bundle(out)
    snap = b.snapshot()
    assert snap.taken_at == b.taken_at and b.taken_at.isoformat() == "2026-08-21T10:00:00+00:00"
    assert snap.status("nodes").state.value == "ok" and not snap.status("pods").partial
    assert snap.status("prometheus").state.value == "not configured"
    assert b.report_json["findings"][0]["check"] == "gpu-not-advertised"
    assert "SUMMARY.md" in b.files and b.target_ref is None
    assert findings(capsys, "--bundle", str(out))[0][0] == "gpu-not-advertised"
