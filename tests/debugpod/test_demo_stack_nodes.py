"""`gputui debug` on the node whose accelerator stack a demo scenario breaks agrees with GT201.

Read as the on-call engineer would: GT201 says the GPU Operator's driver (or toolkit, or validator) never made the
node's GPUs usable, so a debug pod there cannot print a healthy H100 with a check mark; it meets what the operator's
own pods meet (no `nvidia` handler in containerd). On GKE, the plugin's NVML error is the node's: nvidia-smi fails
the same way.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gputui.cli.program import main
from gputui.sim import SimCluster

pytestmark = pytest.mark.slow  # debug pods on the demo's accelerator-stack nodes, end to end

STACK_NODE = "ip-10-0-45-211.ec2.internal"


@pytest.mark.parametrize("scenario", ["operator-driver-crash", "operator-toolkit-crash", "operator-validator-stuck"])
def test_debug_on_a_gpu_operator_node_without_its_runtime_fails_with_the_kubelets_reason(
        scenario: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with SimCluster(scenario, shift_to_now=True, debug_pod_delay=0.05) as sim:
        cfg = sim.write_kubeconfig(tmp_path / "kubeconfig")
        code = main(["debug", f"node/{STACK_NODE}", "--kubeconfig", str(cfg), "-q"])
    out = capsys.readouterr().out
    assert code == 6, out
    assert "no GPU health problems found" not in out and "✓" not in out
    assert f"node {STACK_NODE} has no container runtime handler for RuntimeClass nvidia" in out
    assert 'no runtime for "nvidia" is configured' in out
    assert f"gputui diagnose node/{STACK_NODE}" in out  # where the cause is named, not only "retry"


def test_debug_on_the_gke_node_with_a_driver_mismatch_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    node = "gke-ml-prod-l4-pool-8c2f1e7a-q8w2"
    with SimCluster("gke-plugin-crash", shift_to_now=True, debug_pod_delay=0.05) as sim:
        cfg = sim.write_kubeconfig(tmp_path / "kubeconfig")
        code = main(["debug", f"node/{node}", "--kubeconfig", str(cfg), "-q"])
    out = capsys.readouterr().out
    assert code == 3, out
    assert "no GPU health problems found" not in out
    assert "Failed to initialize NVML: Driver/library version mismatch" in out


def test_debug_on_a_neuron_node_refuses_instead_of_reading_some_gpu(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # neuron-plugin-missing's inf2.xlarge: the debug pod printed an H100 and "✓ no GPU health problems found".
    with SimCluster("neuron-plugin-missing", shift_to_now=True, debug_pod_delay=0.05) as sim:
        cfg = sim.write_kubeconfig(tmp_path / "kubeconfig")
        code = main(["debug", f"node/{STACK_NODE}", "--kubeconfig", str(cfg), "-q"])
        created = [p for p in sim.objects("Pod") if p["metadata"]["name"].startswith("gputui-debug-")]
    captured = capsys.readouterr()
    assert code == 2
    assert "✓" not in captured.out
    assert (f"node {STACK_NODE} (inf2.xlarge) has AWS Neuron devices, not NVIDIA GPUs: nvidia-smi does not apply"
            in captured.err)
    assert created == []
