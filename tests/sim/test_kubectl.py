"""Debian's kubectl against the simulator: discovery, tables, describe, logs, create/delete."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from gputui.sim import SimCluster

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

DEBUG_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: gputui-debug-abcde
  namespace: default
  labels: {app.kubernetes.io/managed-by: gputui}
spec:
  nodeName: ip-10-0-40-2.ec2.internal
  restartPolicy: Never
  containers:
  - {name: smi, image: "nvidia/cuda:12.4.1-base-ubuntu22.04"}
"""


@pytest.fixture
def kubectl(sim: SimCluster, kubeconfig: Path, tmp_path: Path) -> Callable[..., str]:
    def run(*args: str) -> str:
        proc = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "cache"),
                               *args], capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stderr}"
        return proc.stdout
    return run


def test_get_tables(kubectl: Callable[..., str]) -> None:
    nodes = kubectl("get", "nodes")
    assert nodes.split()[:5] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert "ip-10-0-12-34.ec2.internal   Ready" in nodes and "v1.31.4-eks-aeac579" in nodes
    pods = kubectl("get", "pods", "-A")
    assert "NAMESPACE" in pods and "trainer-0" in pods and "karpenter-7d9f8b6c5-abcde" in pods
    assert any(line.split()[1:4] == ["trainer-1", "1/1", "Running"] for line in pods.splitlines())
    claims = kubectl("get", "nodeclaims")
    assert claims.split()[:7] == ["NAME", "TYPE", "CAPACITY", "ZONE", "NODE", "READY", "AGE"]
    assert "gpu-x7k2p   p5.48xlarge   on-demand   us-west-2a   ip-10-0-12-34.ec2.internal   True" in claims
    assert "gpu" in kubectl("get", "nodepools.karpenter.sh") and "gpu" in kubectl("get", "ec2nc")


def test_describe_pod_shows_its_events(kubectl: Callable[..., str]) -> None:
    out = kubectl("describe", "pod", "trainer-0", "-n", "ml")
    assert "Name:         trainer-0" in out and "Status:       Pending" in out
    assert "FailedScheduling" in out and "Insufficient nvidia.com/gpu" in out


def test_logs_and_debug_pod_round_trip(kubectl: Callable[..., str], sim: SimCluster, tmp_path: Path) -> None:
    assert "failed launching nodeclaim" in kubectl("logs", "-n", "kube-system", "karpenter-7d9f8b6c5-abcde")
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(DEBUG_POD)
    assert "created" in kubectl("create", "-f", str(manifest))
    assert sim.wait_for(lambda: sim.get("pods", "gputui-debug-abcde", "default")["status"]["phase"] == "Succeeded")
    assert "Completed" in kubectl("get", "pod", "gputui-debug-abcde")
    assert "nvidia-smi" in kubectl("logs", "gputui-debug-abcde")
    assert "Started container smi" in kubectl("describe", "pod", "gputui-debug-abcde")
    assert "deleted" in kubectl("delete", "pod", "gputui-debug-abcde")
    assert sim.get("pods", "gputui-debug-abcde", "default") is None


def test_forbidden_reads_like_a_real_cluster(kubectl: Callable[..., str], sim: SimCluster, kubeconfig: Path,
                                             tmp_path: Path) -> None:
    sim.forbid("nodeclaims.karpenter.sh")
    proc = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "c2"),
                           "get", "nodeclaims"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    assert ('Error from server (Forbidden): nodeclaims.karpenter.sh is forbidden: User '
            '"system:serviceaccount:default:gputui" cannot list resource "nodeclaims" in API group "karpenter.sh" '
            'at the cluster scope') in proc.stderr
