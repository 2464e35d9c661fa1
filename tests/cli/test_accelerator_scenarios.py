"""`gputui diagnose` on the accelerator-stack scenarios: the first broken layer, its pod and its fix, whole cluster
and for the waiting pod (the official client against the simulator, as a user would run it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gputui.cli.program import main
from gputui.errors import ExitCode
from gputui.sim.cluster import SimCluster
from gputui.sim.scenario import load_scenario


@dataclass(frozen=True)
class Case:
    scenario: str
    pod: str
    """The pending pod that waits on the broken node."""
    title: tuple[str, ...]
    """What the root-cause finding's title must say (layer, pod, state, log line)."""
    command: str
    """A command of the fix that must be offered."""
    check: str = "gpu-not-advertised"


CASES = {c.scenario: c for c in (
    Case("operator-driver-crash", "pod/ml/llama3-lora-sft-0-h7x2k",
         ("nvidia-driver-daemonset pod nvidia-driver-daemonset-", "nvidia-driver-ctr: CrashLoopBackOff, 9 restarts",
          "Could not resolve Linux kernel version"),
         "-c nvidia-driver-ctr --previous --tail=50"),
    Case("operator-toolkit-crash", "pod/ml/llama3-lora-sft-0-h7x2k",
         ("nvidia-container-toolkit-daemonset pod nvidia-container-toolkit-daemonset-",
          "nvidia-container-toolkit-ctr: CrashLoopBackOff, 11 restarts", "unable to dial"),
         "-c nvidia-container-toolkit-ctr --previous --tail=50"),
    Case("operator-validator-stuck", "pod/ml/llama3-lora-sft-0-h7x2k",
         ("nvidia-operator-validator pod nvidia-operator-validator-", "'nvidia'",
          "handler"),
         "jsonpath='{.status.runtimeHandlers[*].name}'"),
    Case("neuron-plugin-missing", "pod/ml/llama3-neuronx-0-h7x2k",
         ("advertises 0 Neuron devices", "no AWS Neuron device plugin DaemonSet", "aws.amazon.com/neuron"),
         "helm upgrade --install neuron-helm-chart oci://public.ecr.aws/neuron/neuron-helm-chart"),
    Case("gke-plugin-crash", "pod/ml/llm-l4-6f9c8d7b5-t4wq9",
         ("nvidia-gpu-device-plugin-small-cos pod nvidia-gpu-device-plugin-small-cos-", "CrashLoopBackOff, 12 restarts",
          "Failed to initialize NVML: Driver/library version mismatch"),
         "-c nvidia-gpu-device-plugin --previous --tail=50"),
    Case("mig-profile-mismatch", "pod/ml/llama3-lora-sft-0-h7x2k",
         ("asks for MIG profile nvidia.com/mig-1g.10gb", "nvidia.com/mig-1g.5gb x16", "nvidia.com/mig-2g.10gb x8",
          "nvidia.com/mig-3g.20gb x8"),
         "kubectl label node ip-10-0-45-211.ec2.internal nvidia.com/mig.config=all-1g.10gb --overwrite",
         check="pod-gpu-resource-mismatch"),
    Case("timeslice-renamed", "pod/ml/llama3-lora-sft-0-h7x2k",
         ("asks for nvidia.com/gpu", "nvidia.com/gpu.shared (renameByDefault: true)", "nvidia.com/gpu.shared x16"),
         "nvidia.com/gpu.replicas", check="pod-gpu-resource-mismatch"),
    Case("gke-no-accelerator-pool", "pod/ml/llama-70b-h100-7b9c5d4f8-k2x8p",
         ("cluster-autoscaler adds no node", "no node pool offers accelerator nvidia-h100-80gb", "l4-pool=nvidia-l4"),
         "--accelerator type=nvidia-h100-80gb,count=8,gpu-driver-version=default", check="pod-autoscaler-no-scale-up"),
    Case("dra-node", "pod/ml/asr-dra-7c8d9f6b5-r2m4x",
         ("waits on DRA: claim asr-dra-7c8d9f6b5-r2m4x-gpu-", "(gpu: gpu.nvidia.com x1) is not allocated",
          "no node has enough free devices"),
         "kubectl get resourceslices -o wide", check="pod-resourceclaim-unallocated"),
)}


@pytest.fixture(scope="module", params=sorted(CASES))
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Case, Path]]:
    case = CASES[request.param]
    with SimCluster(case.scenario) as sim:
        cfg = tmp_path_factory.mktemp(case.scenario) / "kubeconfig"
        sim.write_kubeconfig(cfg)
        yield case, cfg


def diagnose(cfg: Path, case: Case, *target: str, capsys: pytest.CaptureFixture[str],
             monkeypatch: pytest.MonkeyPatch) -> tuple[int, dict]:
    sc = load_scenario(case.scenario)
    assert sc.reference_time is not None
    monkeypatch.setenv("GPUTUI_NOW", sc.reference_time.isoformat())
    code = main(["diagnose", *target, "--kubeconfig", str(cfg), "-o", "json"])
    return code, json.loads(capsys.readouterr().out)


def _root(data: dict, case: Case) -> dict:
    sc = load_scenario(case.scenario)
    found = [f for f in data["findings"] if f["check"] == case.check and f["subject"] == sc.expect["subject"]]
    assert found, [(f["check"], f["subject"], f["title"]) for f in data["findings"]]
    return found[0]


def _assert_names_the_layer(f: dict, case: Case) -> None:
    for text in case.title:
        assert text in f["title"], f["title"]
    assert f["severity"] == "error"
    assert any(case.command in c for c in f["remediation"]["commands"]), f["remediation"]["commands"]
    # Later layers only wait: their waiting states are never offered as the cause.
    assert "PodInitializing)" not in f["title"].split(":")[0]
    assert "nodeSelector" not in f["title"]
    if case.check == "pod-gpu-resource-mismatch":  # never "request whole GPUs" for a pod the nodes cannot give them
        assert "request whole gpus" not in f["remediation"]["text"].lower()


def test_whole_cluster_names_the_first_broken_layer(cluster: tuple[Case, Path], capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    case, cfg = cluster
    code, data = diagnose(cfg, case, capsys=capsys, monkeypatch=monkeypatch)
    assert code == ExitCode.FINDINGS_ERROR
    top = data["findings"][0]
    assert (top["check"], top["subject"]) == (case.check, load_scenario(case.scenario).expect["subject"])
    _assert_names_the_layer(top, case)


def test_the_waiting_pod_is_told_the_same_layer(cluster: tuple[Case, Path], capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    case, cfg = cluster
    code, data = diagnose(cfg, case, case.pod, capsys=capsys, monkeypatch=monkeypatch)
    assert code == ExitCode.FINDINGS_ERROR
    _assert_names_the_layer(_root(data, case), case)


def test_a_dra_node_is_not_reported_for_advertising_no_gpus(capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Its GPU is a ResourceSlice device: "0 GPUs advertised" and "delete the node" would be false."""
    case = CASES["dra-node"]
    with SimCluster(case.scenario) as sim:
        cfg = tmp_path / "kubeconfig"
        sim.write_kubeconfig(cfg)
        _, data = diagnose(cfg, case, "node/gke-ml-prod-l4-dra-5e1a9c3d-b7n4", capsys=capsys, monkeypatch=monkeypatch)
    assert not [f for f in data["findings"] if f["subject"] == "node/gke-ml-prod-l4-dra-5e1a9c3d-b7n4"]
    examined = {r["check"]: r for r in data["results"]}
    assert examined["gpu-not-advertised"]["status"] == "passed"
