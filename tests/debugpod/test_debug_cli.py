"""`gputui debug`: output, exit codes, --read-only, --cleanup, --parse, and no pod left after SIGINT/SIGTERM."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gputui.cli.program import main
from gputui.debugpod.capture import HEALTH_FIELDS, capture_query
from gputui.sim import SimCluster
from tests.debugpod import sim_helpers as sh
from tests.debugpod.conftest import FIXTURE_FILES, FIXTURES, section_body

REPO = Path(__file__).resolve().parents[2]


Sim = tuple[SimCluster, str]
"""A simulator and the path of a kubeconfig for it."""
Capsys = pytest.CaptureFixture[str]


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    sim, path = sh.start(tmp_path_factory.mktemp("cli"))
    try:
        yield sim, str(path)
    finally:
        sim.stop()


def gputui(capsys: Capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- against a cluster --------------------------------------------------------------------------


def test_streams_then_prints_the_gpu_table(kubeconfig: Sim, capsys: Capsys) -> None:
    sim, kc = kubeconfig
    code, out, err = gputui(capsys, "debug", f"node/{sh.H100}", "--kubeconfig", kc)
    assert code == 0, err
    assert out.index("$ nvidia-smi -L") < out.index("GPU-00000000-0000-0000-0000-000000000000   00000000:00:09.0")
    for column in ("Name", "UUID", "Bus id", "MIG", "Memory", "Util", "Temp", "Power", "ECC", "Retired",
                   "Remapped", "PCIe link", "Process"):
        assert column in out
    assert "NVIDIA H100 80GB HBM3" in out and "19818/81559 MiB" in out and "Gen5 x16 = max" in out
    assert "./gpu_burn" in out
    assert "no GPU health problems found (1 of 1 GPU(s) checked)" in out  # the node has 1 (its labels)
    assert "gputui: deleted pod default/gputui-debug-ip-10-0-1-11-" in err
    assert sh.gputui_pods(sim) == []


def test_json_output_has_no_streaming_noise(kubeconfig: Sim, capsys: Capsys) -> None:
    _, kc = kubeconfig
    code, out, err = gputui(capsys, "debug", sh.MIG, "--kubeconfig", kc, "-o", "json")
    assert code == 0
    data = json.loads(out)
    assert data["kind"] == "GpuHealth" and data["node"] == sh.MIG and data["exit_code"] == 0
    assert data["report"]["gpus"][0]["mig_mode"] == "Enabled"
    assert data["pod"]["deleted"] is True and data["failure"] is None and data["flags"] == []
    assert "running nvidia-smi" in err


@pytest.mark.parametrize("node, flags, code", [(sh.H100, [], 0), (sh.GPU_LOST, ["-q"], 3)])
def test_piped_into_head_keeps_its_exit_code_and_deletes_the_pod(kubeconfig: Sim, node: str, flags: list[str],
                                                                code: int) -> None:
    sim, kc = kubeconfig
    proc = subprocess.Popen([sys.executable, "-m", "gputui", "debug", f"node/{node}", "--kubeconfig", kc, *flags],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(1)
    proc.stdout.close()  # `| head -c 1` read and left
    err = proc.stderr.read()
    proc.wait(timeout=60)
    assert proc.returncode == code, err  # the GPUs' health, not a write error (was 1)
    assert "Traceback" not in err and "gputui: deleted pod" in err
    assert sh.gputui_pods(sim) == []


@pytest.mark.parametrize("node, code, words", [
    (sh.NO_DRIVER, 3, ["NVIDIA driver is not loaded", "exit 9"]),
    (sh.GPU_LOST, 3, ["fell off the bus"]),
    (sh.NVML_UNKNOWN, 6, ["Failed to initialize NVML: Unknown Error", "--privileged"]),
    (sh.IMAGE_PULL_BACKOFF, 6, ["cannot be pulled", "--image"]),
    (sh.CREATE_CONTAINER_ERROR, 6, ["CreateContainerError"]),
    (sh.UNSCHEDULABLE, 6, ["cannot be scheduled", "0/12 nodes are available"]),
])
def test_failures_explained_with_their_exit_code(kubeconfig: Sim, capsys: Capsys, node: str, code: int,
                                                 words: list[str]) -> None:
    sim, kc = kubeconfig
    got, out, err = gputui(capsys, "debug", f"node/{node}", "--kubeconfig", kc)
    assert got == code
    for word in words:
        assert word in out
    assert "Traceback" not in err
    assert sh.gputui_pods(sim) == []


@pytest.mark.parametrize("argv, message", [
    (["debug", "node/nope"], 'node "nope" not found'),
    (["debug", "pod/x"], "bad target 'pod/x': gputui debug takes node/NAME"),
    (["debug", "-n", "nope", f"node/{sh.H100}"], 'namespace "nope" not found'),
    (["--read-only", "debug", f"node/{sh.H100}"], "--read-only: gputui changes nothing in the cluster, "
                                                  "so it will not start a debug pod"),
    (["debug", "--read-only", "--cleanup"], "so it will not delete debug pods"),
    (["debug"], "give one of node/NAME, --cleanup or --parse FILE"),
    (["debug", "--cleanup", f"node/{sh.H100}"], "node/NAME and --cleanup cannot be combined"),
])
def test_usage_errors_are_one_line(kubeconfig: Sim, capsys: Capsys, argv: list[str], message: str) -> None:
    sim, kc = kubeconfig
    code, out, err = gputui(capsys, *argv, "--kubeconfig", kc)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert sh.gputui_pods(sim) == [] and out == ""


def test_cleanup_says_how_many(kubeconfig: Sim, capsys: Capsys) -> None:
    sim, kc = kubeconfig
    labels = {"app.kubernetes.io/managed-by": "gputui", "gputui.dev/debug-node": sh.H100}
    for ns, name in (("default", "gputui-debug-ip-10-0-1-11-zzzzz"),
                     ("gpu-operator", "gputui-debug-ip-10-0-1-12-yyyyy")):
        sim.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels},
                    "spec": {"nodeName": sh.H100, "containers": [{"name": "nvidia-smi", "image": "busybox:1.36"}]}})
    code, out, _ = gputui(capsys, "debug", "--cleanup", "--kubeconfig", kc)
    assert code == 0
    assert out.startswith("deleted 2 gputui debug pod(s) (all namespaces): ")
    assert "gpu-operator/gputui-debug-ip-10-0-1-12-yyyyy" in out
    assert sh.gputui_pods(sim) == []
    code, out, _ = gputui(capsys, "debug", "--cleanup", "--kubeconfig", kc)
    assert (code, out.strip()) == (0, "no gputui debug pods found (all namespaces)")


# --- --parse --------------------------------------------------------------------------------------


@pytest.mark.parametrize("capture, mig", [("h100", "Disabled"), ("h100-mig", "Enabled")])
def test_parse_whole_capture_files(capsys: Capsys, capture: str, mig: str) -> None:
    path = str(FIXTURES / FIXTURE_FILES[capture])
    code, out, _ = gputui(capsys, "debug", "--parse", path, "-o", "json")
    assert code == 0
    data = json.loads(out)
    (gpu,) = data["report"]["gpus"]
    assert gpu["name"] == "NVIDIA H100 80GB HBM3" and gpu["mig_mode"] == mig
    assert data["source"] == path and data["pod"] is None
    code, out, _ = gputui(capsys, "debug", "--parse", path)
    assert code == 0 and "NVIDIA H100 80GB HBM3" in out and "no GPU health problems found" in out


def _headed_nounits() -> str:
    return ", ".join(HEALTH_FIELDS) + "\n" + capture_query("h100", "query-gpu", HEALTH_FIELDS) + "\n"


@pytest.mark.parametrize("kind, text", [
    ("table", lambda: section_body("h100", "load", "nvidia-smi")),
    ("query", lambda: section_body("h100", "load", "nvidia-smi -q")),
    ("csv with header and units", lambda: section_body("h100", "load", "nvidia-smi --query-gpu")),
    ("csv with header, no units", _headed_nounits),
    ("csv without header or units", lambda: capture_query("h100", "query-gpu", HEALTH_FIELDS) + "\n"),
])
def test_parse_each_format_from_a_file(tmp_path: Path, capsys: Capsys, kind: str, text: Callable[[], str]) -> None:
    saved = tmp_path / "smi.txt"
    saved.write_text(text())
    code, out, _ = gputui(capsys, "debug", "--parse", str(saved), "-o", "json")
    # The table alone shows no remapped rows, retired pages or reset state: read, but no all-clear (exit 4).
    assert code == (4 if kind == "table" else 0), kind
    (gpu,) = json.loads(out)["report"]["gpus"]
    assert gpu["name"] == "NVIDIA H100 80GB HBM3", kind
    assert gpu["memory_total_mib"] == 81559, kind


def test_parse_stdin_and_failure_exit_code(monkeypatch: pytest.MonkeyPatch, capsys: Capsys) -> None:
    text = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
            "Make sure that the latest NVIDIA driver is installed and running.\n")
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    code, out, _ = gputui(capsys, "debug", "--parse", "-")
    assert code == 3
    assert "the NVIDIA driver is not loaded" in out


def test_parse_missing_file_is_one_line(capsys: Capsys, tmp_path: Path) -> None:
    code, _, err = gputui(capsys, "debug", "--parse", str(tmp_path / "nope.txt"))
    assert code == 2 and "cannot read" in err and len(err.strip().splitlines()) == 1


# --- signals --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    """Debug pods that take ~1 s per phase and then hang while running nvidia-smi."""
    sim, path = sh.start(tmp_path_factory.mktemp("slow"), delay=3.0)
    sh.hang_after_first_section(sim)
    try:
        yield sim, str(path)
    finally:
        sim.stop()


@pytest.mark.slow
@pytest.mark.parametrize("signum, phase, exit_code", [
    (signal.SIGINT, None, 130),          # while waiting for the pod to start
    (signal.SIGTERM, "Running", 143),    # while streaming the log of a hung nvidia-smi
    (signal.SIGHUP, "Running", 143),     # the ssh session dropped: still no pod left behind
])
def test_signal_mid_run_leaves_no_pod(slow: Sim, signum: int, phase: str | None, exit_code: int) -> None:
    sim, kc = slow
    # settle 0.3 s when Running: let the client open the log stream
    returncode, err = sh.signal_debug_mid_run(sim, kc, signum, phase, settle=0.3 if phase is not None else 0.0)
    assert returncode == exit_code, err
    assert "gputui: deleted pod default/gputui-debug-ip-10-0-3-35-" in err
    assert "Traceback" not in err
    assert sh.gputui_pods(sim) == []


def test_a_node_whose_gpu_count_nothing_states_is_no_all_clear(kubeconfig: Sim, capsys: Capsys) -> None:
    """On-prem or an instance type gputui does not know, without GPU Feature Discovery: nvidia-smi's list
    cannot be held to anything, so a GPU that fell off the bus would go unnoticed. Not a green ✓, exit 4."""
    sim, kc = kubeconfig
    name = "gpu-box-7"
    sim.create({"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                                      "node.kubernetes.io/instance-type": "dell-xe9680"}},
                "status": {"capacity": {"nvidia.com/gpu": "1"}, "allocatable": {"nvidia.com/gpu": "1"},
                           "conditions": [{"type": "Ready", "status": "True"}]}})
    try:
        code, out, err = gputui(capsys, "debug", f"node/{name}", "--kubeconfig", kc)
        assert code == 4, err
        assert "no GPU health problems found" not in out
        assert "[gpu-count-unknown]" in out and "nothing on gpu-box-7 says how many GPUs it has" in out
        code, out, err = gputui(capsys, "debug", f"node/{name}", "--kubeconfig", kc, "-o", "json")
        flags = [f["code"] for f in json.loads(out)["flags"]]
        assert code == 4 and flags == ["gpu-count-unknown"]
        # The labelled H100 next to it still gets its plain verdict.
        assert gputui(capsys, "debug", f"node/{sh.H100}", "--kubeconfig", kc)[0] == 0
    finally:
        sim.delete("Node", name)
