"""The demo's Xid 79 node (incident, ip-10-0-30-117, p5 with 8 H100): the debug pod and GT801 give one verdict.

`gputui debug` (what the TUI's debug screen renders too) and the checklist it feeds must both say that
GPU 7 is gone; neither may call the 7 GPUs it can still see "healthy".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from diagnostics import Severity, run
from diagnostics.snapshot import SourceState
from gputui.cli.program import main
from gputui.sim import SimCluster
from tests.builders import snapshot

XID_NODE = "ip-10-0-30-117.ec2.internal"
REMAP_NODE = "ip-10-0-66-240.ec2.internal"
INCIDENT = Path(__file__).parents[2] / "gputui" / "sim" / "scenarios" / "incident.yaml"


@pytest.fixture(scope="module")
def incident(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SimCluster, str]]:
    sim = SimCluster(INCIDENT, shift_to_now=True, debug_pod_delay=0.05).start()
    try:
        yield sim, str(sim.write_kubeconfig(tmp_path_factory.mktemp("incident") / "kubeconfig"))
    finally:
        sim.stop()


def _debug(capsys: pytest.CaptureFixture[str], kubeconfig: str, node: str, *extra: str) -> tuple[int, str]:
    code = main(["debug", f"node/{node}", "--kubeconfig", kubeconfig, "-q", *extra])
    return code, capsys.readouterr().out


def test_debug_on_the_xid_node_names_the_lost_gpu_and_agrees_with_gt801(
        incident: tuple[SimCluster, str], capsys: pytest.CaptureFixture[str]) -> None:
    sim, kubeconfig = incident
    code, out = _debug(capsys, kubeconfig, XID_NODE)
    assert code == 3
    assert "no GPU health problems found" not in out
    assert "lists 7 of the 8 GPUs this node has" in out and "missing: GPU 7" in out
    assert "GPU 7 [gpu-lost]" in out

    code, out = _debug(capsys, kubeconfig, XID_NODE, "-o", "json")
    result = json.loads(out)
    assert (result["expected_gpus"], len(result["report"]["gpus"])) == (8, 7)
    # The JSON the TUI's debug run stores for the checklist: GT801 must read the same verdict.
    node = next(n for n in sim.objects("Node") if n["metadata"]["name"] == XID_NODE)
    snap = snapshot(node, sources={"nvidia-smi": SourceState.OK}, gpu_reports={XID_NODE: result})
    (check,) = run(snap, only=["gpu-health-nvidia-smi"]).results
    titles = {f.title: f.severity for f in check.findings}
    assert titles == {
        f"{XID_NODE}: GPU 7 fell off the bus (GPU is lost): unusable until the node reboots": Severity.CRITICAL,
        f"{XID_NODE}: nvidia-smi sees 7 of 8 GPUs (missing: GPU 7 (lost)): 1 missing from the PCIe bus or unbound "
        "from the driver": Severity.ERROR,
    }


def test_other_eight_gpu_nodes_list_all_their_gpus(incident: tuple[SimCluster, str],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    _, kubeconfig = incident
    code, out = _debug(capsys, kubeconfig, REMAP_NODE)
    assert code == 4  # a pending remap is applied at the next reset; the GPU keeps working until then
    assert "GPU 3 [row-remap-pending]" in out and "8 GPU(s)" in out
    # The heading is one line where it fits: it used to wrap at the identity table's width, "· CUDA 13.1 · 8 GPU(s)"
    # on a line of its own.
    (heading,) = [line for line in out.splitlines() if line.startswith(f"node {REMAP_NODE} via pod ")]
    assert " · driver " in heading and " · CUDA " in heading and heading.rstrip().endswith(" · 8 GPU(s)")
    assert "gpus-missing" not in out


def test_a_debug_pod_that_read_only_its_table_is_no_all_clear(incident: tuple[SimCluster, str],
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    # The --query-gpu section refused (exit 2, nvidia-smi's words): the verdict the TUI renders and GT801 reads.
    sim, kubeconfig = incident
    node = "ip-10-0-19-203.ec2.internal"  # g5.12xlarge, 4 GPUs
    sim.set_nvidia_smi(node, {"capture": "h100",
                              "queryGpuError": 'Field "reset_status.reset_required" is not a valid field to query.'})
    code, out = _debug(capsys, kubeconfig, node)
    assert code == 4
    assert "no GPU health problems found" not in out
    assert ("✓ no problem in what nvidia-smi's output shows (4 of 4 GPU(s)); not shown: remapped rows, retired "
            "pages, reset required") in out
    code, out = _debug(capsys, kubeconfig, node, "-o", "json")
    result = json.loads(out)
    assert (code, result["worst"], [f["code"] for f in result["flags"]]) == (4, "warning", ["health-not-shown"])
