"""`gputui diagnose pod/X` over the simulator for a pod a NodePool's limit blocks by instance size, not by its request.

A p4d-only NodePool (8 GPUs per instance) has 4 GPUs left under its limit; a 1-GPU pod selects it. Karpenter's
filterByRemainingResources (kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling/scheduler.go) drops
p4d.24xlarge and says "all available instance types exceed limits for nodepool (NodePool=gpu-finetune)". The unit
cases are in tests/diagnostics/checks/test_nodepool_gpu_limit_reached.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gputui.cli.program import main
from gputui.errors import ExitCode
from gputui.sim.cluster import SimCluster
from gputui.sim.scenario import load_scenario

SCENARIO = load_scenario("healthy")
NOW = SCENARIO.reference_time.isoformat()
POOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
    "metadata": {"name": "gpu-finetune", "uid": "np-gpu-finetune", "creationTimestamp": "2026-06-21T10:00:00Z"},
    "spec": {"limits": {"nvidia.com/gpu": "20"},
             "template": {"spec": {
                 "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
                 "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                                  {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["p4d"]}],
                 "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]}}},
    "status": {"resources": {"cpu": "192", "nodes": "2", "nvidia.com/gpu": "16"},
               "conditions": [{"type": t, "status": "True", "reason": t, "lastTransitionTime": "2026-06-21T10:00:08Z"}
                              for t in ("ValidationSucceeded", "NodeClassReady", "Ready")]},
}
POD: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "finetune-0", "namespace": "default", "uid": "uid-finetune-0",
                 "creationTimestamp": "2026-08-21T09:30:00Z"},
    "spec": {"schedulerName": "default-scheduler", "nodeSelector": {"karpenter.sh/nodepool": "gpu-finetune"},
             "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
             "containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                             "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
    "status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "lastTransitionTime": "2026-08-21T09:30:01Z",
         "message": "0/6 nodes are available: 6 node(s) didn't match Pod's node affinity/selector. preemption: 0/6 "
                    "nodes are available: 6 Preemption is not helpful for scheduling."}]},
}
EVENT: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Event", "metadata": {"name": "finetune-0.karp", "namespace": "default"},
    "involvedObject": {"kind": "Pod", "name": "finetune-0", "namespace": "default", "uid": "uid-finetune-0"},
    "reason": "FailedScheduling", "type": "Warning", "count": 6, "source": {"component": "karpenter"},
    "message": "Failed to schedule pod, all available instance types exceed limits for nodepool (NodePool=gpu-finetune)",
    "firstTimestamp": "2026-08-21T09:30:05Z", "lastTimestamp": "2026-08-21T09:58:00Z"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with SimCluster(SCENARIO) as sim:
        for obj in (POOL, POD, EVENT):
            sim.apply(obj)
        cfg = tmp_path_factory.mktemp("limit-instance-size") / "kubeconfig"
        sim.write_kubeconfig(cfg)
        yield cfg


def _diagnose(cfg: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
              *extra: str) -> tuple[int, str]:
    monkeypatch.setenv("GPUTUI_NOW", NOW)
    code = main(["diagnose", "pod/default/finetune-0", "--kubeconfig", str(cfg), *extra])
    return code, capsys.readouterr().out


def test_the_pool_whose_smallest_instance_exceeds_the_room_left_is_the_root_cause(
        cluster: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = _diagnose(cluster, capsys, monkeypatch, "-o", "json")
    data = json.loads(out)
    assert code == ExitCode.FINDINGS_ERROR and data["verdict"] == "explained"
    assert data["summary"]["root_cause"]["code"] == "GT105"
    assert data["summary"]["root_cause"]["subject"] == "nodepool/gpu-finetune"
    (f,) = [f for f in data["findings"] if f["code"] == "GT105"]
    assert "4 nvidia.com/gpu left under its limit (16/20)" in f["title"] and "p4d.24xlarge: 8" in f["title"]
    patch = next(c for c in f["remediation"]["commands"] if c.startswith("kubectl patch nodepool gpu-finetune"))
    assert json.loads(patch.split("-p '", 1)[1].rstrip("'")) == {"spec": {"limits": {"nvidia.com/gpu": "24"}}}
    _code, text = _diagnose(cluster, capsys, monkeypatch)
    assert "GT105" in text.splitlines()[0]
