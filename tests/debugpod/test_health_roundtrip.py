"""One nvidia-smi result type (#23): what the debug pod produces is what GT801 reads back from the snapshot's JSON.

`DebugResult.as_json` is how a result travels (store, bundle, scenario); `diagnostics.gpu_health.GpuHealth`
reads it back into the very flag and failure types gputui.debugpod built.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnostics.gpu_health import DebugFailure, GpuHealth, HealthFlag
from gputui.debugpod import failures, health
from gputui.debugpod.capture import debug_log_for
from gputui.debugpod.result import result_from_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia-smi"


def test_debugpod_builds_the_diagnostics_types() -> None:
    assert health.HealthFlag is HealthFlag and failures.DebugFailure is DebugFailure


@pytest.mark.parametrize("text", [
    (FIXTURES / "linux-x86_64__nvidia-h100-80gb-hbm3__545.23.08.q.txt").read_text(),
    (FIXTURES / "linux-x86_64__nvidia-h100-mig__590.48.01.txt").read_text(),
    debug_log_for(None, exit_code=15,
                  output="Unable to determine the device handle for GPU0000:00:09.0: GPU is lost.  Reboot the system"),
    "| 0  NVIDIA H100 80GB HBM3  On | 00000000:00:09.0 Off | ERR! |",
], ids=["q", "mig", "gpu-lost", "unreadable"])
def test_flags_and_failure_read_back_equal(text: str) -> None:
    result = result_from_text(text, node="ip-10-0-1-5.ec2.internal", source="paste")
    read = GpuHealth.from_json("ignored", result.as_json())
    assert read is not None and read.node == "ip-10-0-1-5.ec2.internal"
    assert read.flags == tuple(HealthFlag(f.gpu_index, f.code, f.severity, f.message, f.field or None, f.value or None)
                               for f in result.flags)
    assert read.failure == result.failure
    assert [(g.index, g.uuid, g.bus_id) for g in read.gpus] == [
        (g.index, g.uuid, g.bus_id) for g in (result.report.gpus if result.report else ())]


def test_no_reading_is_nothing_to_judge() -> None:
    """`report` null (the pod never ran nvidia-smi) or JSON that is not a result: no GpuHealth at all."""
    assert GpuHealth.from_json("n", {"kind": "GpuHealth", "report": None, "failure": {"stage": "pod"}}) is None
    assert GpuHealth.from_json("n", ["not", "ours"]) is None


def test_odd_json_is_read_defensively() -> None:
    read = GpuHealth.from_json("n1", {"report": {"gpus": [{"index": "3", "uuid": "GPU-1"}, "junk"]},
                                      "flags": [{"code": "gpu-lost", "severity": "CRITICAL", "gpu_index": 3},
                                                {"code": "x", "severity": "fatal"}, {"severity": "error"}],
                                      "route": {"gpus": 1, "runtime_class": "nvidia"}})
    assert read is not None and read.node == "n1" and read.failure is None and read.stage == ""
    assert [(f.code, f.severity, f.gpu_index) for f in read.flags] == [("gpu-lost", "critical", 3)]
    assert read.gpu(3) is not None and not read.sees_all_gpus and not read.privileged
