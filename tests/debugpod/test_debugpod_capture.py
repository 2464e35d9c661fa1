"""The debug pod script under a real /bin/sh with a fake nvidia-smi, the marker protocol, and debug_log_for."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from gputui.debugpod.capture import (
    APPS_FIELDS,
    CAPTURES_DIR,
    DEBUG_SCRIPT,
    HEALTH_FIELDS,
    SECTION_ORDER,
    Section,
    debug_log_for,
    read_log,
    render_log,
    split_sections,
)
from gputui.debugpod.health import health_flags
from gputui.debugpod.nvidia_smi import GpuRow, parse

REPO = Path(__file__).parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "nvidia-smi"
DRIVER_GONE = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running."
)

# A stand-in nvidia-smi that answers from a real capture, like a driver would:
# an unknown --query-gpu field fails the whole query with exit 2 and nvidia-smi's message.
FAKE_SMI = """#!{python}
import os, sys, time
sys.path.insert(0, {repo!r})
from gputui.debugpod.capture import capture_query, capture_sections, load_capture

args = sys.argv[1:]
with open(os.environ["FAKE_SMI_CALLS"], "a") as calls:
    calls.write(" ".join(args) + "\\n")
if os.environ.get("FAKE_SMI_EXIT"):
    print(os.environ.get("FAKE_SMI_OUTPUT", ""))
    sys.exit(int(os.environ["FAKE_SMI_EXIT"]))
capture = os.environ.get("FAKE_SMI_CAPTURE", "h100")
sections = capture_sections(load_capture(capture))
if not args:
    time.sleep(float(os.environ.get("FAKE_SMI_SLEEP", "0")))
    print([s.body for s in sections if s.command == "nvidia-smi" and s.phase == "load"][0])
    sys.exit(0)
if args == ["-L"]:
    print([s.body for s in sections if s.command == "nvidia-smi -L"][0])
    sys.exit(0)
switch, _, fields = args[0].partition("=")
unknown = set(filter(None, os.environ.get("FAKE_SMI_UNKNOWN", "").split(",")))
for name in fields.split(","):
    if name in unknown:
        print('Field "%s" is not a valid field to query.' % name)
        print()
        sys.exit(2)
print(capture_query(capture, switch[2:], tuple(fields.split(",")), phase="load"))
"""

SHELLS = [pytest.param(["/bin/sh", "-c"], id="sh")]
if shutil.which("busybox"):
    SHELLS.append(pytest.param(["busybox", "sh", "-c"], id="busybox-ash"))


@pytest.fixture
def run_script(tmp_path: Path) -> Callable[..., tuple[str, list[str]]]:
    """Run DEBUG_SCRIPT with the fake nvidia-smi first on PATH; returns (log, nvidia-smi calls)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nvidia-smi"
    fake.write_text(FAKE_SMI.format(python=sys.executable, repo=str(REPO)))
    fake.chmod(0o755)
    calls = tmp_path / "calls"
    calls.touch()

    def run(shell: list[str] | None = None, **env: str) -> tuple[str, list[str]]:
        environ = {"PATH": f"{bin_dir}:/usr/bin:/bin", "FAKE_SMI_CALLS": str(calls), **env}
        done = subprocess.run(
            [*(shell or ["/bin/sh", "-c"]), DEBUG_SCRIPT],
            env=environ,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
        return done.stdout, calls.read_text().splitlines()

    return run


def _health_values(gpu: GpuRow) -> dict[str, object]:
    """Every typed value of a row (raw cells differ between formats by design)."""
    return {f.name: getattr(gpu, f.name) for f in dataclasses.fields(gpu) if f.name not in ("raw", "unavailable")}


@pytest.mark.parametrize("shell", SHELLS)
def test_script_runs_every_section_and_matches_the_simulated_log(
    run_script: Callable[..., tuple[str, list[str]]], shell: list[str]
) -> None:
    log, calls = run_script(shell)

    sections = split_sections(log)
    assert list(sections) == list(SECTION_ORDER)
    assert {name: s.exit_code for name, s in sections.items()} == dict.fromkeys(SECTION_ORDER, 0)
    assert sections["query-gpu"].fields == HEALTH_FIELDS
    assert sections["query-compute-apps"].fields == APPS_FIELDS
    assert calls == [
        "",
        f"--query-gpu={','.join(HEALTH_FIELDS)} --format=csv,noheader,nounits",
        f"--query-compute-apps={','.join(APPS_FIELDS)} --format=csv,noheader,nounits",
        "-L",
    ]
    real = parse(log)
    simulated = parse(debug_log_for("h100", phase="load"))
    assert real.complete and real.warnings == () and real.errors == ()
    assert [_health_values(g) for g in real.gpus] == [_health_values(g) for g in simulated.gpus]


def test_script_falls_back_when_the_driver_does_not_know_a_field(
    run_script: Callable[..., tuple[str, list[str]]],
) -> None:
    log, calls = run_script(FAKE_SMI_UNKNOWN="clocks_event_reasons.active,gpu_recovery_action")

    query = split_sections(log)["query-gpu"]
    assert query.exit_code == 0
    assert query.dropped == ("clocks_event_reasons.active", "gpu_recovery_action")
    assert "clocks_throttle_reasons.active" in query.fields  # the older name of the same field
    assert "gpu_recovery_action" not in query.fields
    assert len([c for c in calls if c.startswith("--query-gpu=")]) == 3
    gpu = parse(log).gpus[0]
    assert gpu.clocks_event_reasons == 0  # read through the old name
    assert gpu.recovery_action is None
    assert gpu.unavailable["gpu_recovery_action"] == "not a valid field for this driver"
    assert (gpu.memory_used_mib, gpu.utilization_pct) == (19818, 100)


def test_script_keeps_going_when_the_driver_is_gone(run_script: Callable[..., tuple[str, list[str]]]) -> None:
    log, calls = run_script(FAKE_SMI_EXIT="9", FAKE_SMI_OUTPUT=DRIVER_GONE)

    sections = split_sections(log)
    assert list(sections) == list(SECTION_ORDER)
    assert all(s.exit_code == 9 and s.text == DRIVER_GONE for s in sections.values())
    assert len(calls) == 4  # no field-dropping retries for a driver failure
    report = parse(log)
    assert report.errors == (DRIVER_GONE,)
    assert [f.code for f in health_flags(report)] == ["driver-not-loaded"]


def test_script_without_nvidia_smi_reports_exit_127(run_script: Callable[..., tuple[str, list[str]]]) -> None:
    log, _ = run_script(GPUTUI_NVIDIA_SMI="/nonexistent/nvidia-smi")

    assert {s.exit_code for s in split_sections(log).values()} == {127}
    flags = health_flags(parse(log))
    assert [(f.code, f.severity) for f in flags] == [("nvidia-smi-not-found", "warning")]


def test_script_bounds_a_hanging_nvidia_smi(run_script: Callable[..., tuple[str, list[str]]]) -> None:
    log, _ = run_script(FAKE_SMI_SLEEP="30", GPUTUI_TIMEOUT="1")

    sections = split_sections(log)
    assert sections["nvidia-smi"].exit_code == 124
    assert sections["query-gpu"].exit_code == 0  # the next command still runs
    assert "nvidia-smi-timeout" in {f.code for f in health_flags(parse(log))}


def test_read_log_keeps_a_cut_off_section() -> None:
    log = render_log([Section("nvidia-smi", "partial table", None)], complete=False)

    parsed = read_log(log)
    assert parsed.complete is False
    assert parsed.sections["nvidia-smi"] == Section("nvidia-smi", "partial table", None)
    assert parse(log).warnings[0].startswith("debug pod log has no end marker")


def test_render_and_read_round_trip() -> None:
    sections = [
        Section("nvidia-smi", "table text\nline 2", 0),
        Section("query-gpu", "0, x", 2, fields=("index", "name"), dropped=("gpu_recovery_action",)),
    ]
    assert list(split_sections(render_log(sections)).values()) == sections


@pytest.mark.parametrize("capture", ["h100", "h100-mig"])
def test_debug_log_for_round_trips_the_capture(section: Callable[[str, str, str], str], capture: str) -> None:
    from_log = parse(debug_log_for(capture))
    own_csv = parse(section(capture, "load", "nvidia-smi --query-gpu"))
    own_table = parse(section(capture, "load", "nvidia-smi"))
    own_apps = parse(section(capture, "load", "nvidia-smi --query-compute-apps"))

    assert from_log.source_format == "debug-pod"
    assert (from_log.warnings, from_log.errors) == ((), ())
    assert len(from_log.gpus) == len(own_csv.gpus) == 1
    gpu, csv_gpu = from_log.gpus[0], own_csv.gpus[0]
    assert _health_values(gpu) | {"processes": (), "mig_devices": ()} == _health_values(csv_gpu)
    # 590 has no reset_status.* (gpu_recovery_action replaced it): the debug log says the driver refused them.
    refused = dict.fromkeys(("reset_status.reset_required", "reset_status.drain_and_reset_recommended"),
                            "not a valid field for this driver")
    assert gpu.unavailable == csv_gpu.unavailable | refused
    assert [(p.pid, p.name, p.used_memory_mib, p.gpu_uuid) for p in gpu.processes] == [
        (p.pid, p.name, p.used_memory_mib, p.gpu_uuid) for p in own_apps.processes
    ]
    assert [(m.index, m.memory_used_mib) for m in gpu.mig_devices] == [
        (m.index, m.memory_used_mib) for m in own_table.gpus[0].mig_devices
    ]
    assert from_log.driver_version == own_table.driver_version == "590.48.01"


def test_debug_log_for_idle_phase() -> None:
    gpu = parse(debug_log_for("h100", phase="idle")).gpus[0]
    assert (gpu.temperature_c, gpu.memory_used_mib, gpu.processes) == (41, 0, ())


def test_debug_log_for_a_failure_prints_it_from_every_section() -> None:
    lost = "Unable to determine the device handle for GPU0000:00:09.0: GPU is lost.  Reboot the system to recover this GPU"
    log = debug_log_for("h100", exit_code=15, output=lost + "\n")

    sections = split_sections(log)
    assert list(sections) == list(SECTION_ORDER)
    assert {s.exit_code for s in sections.values()} == {15}
    assert parse(log).failures[0].code == "gpu-lost"


def test_debug_log_for_exit_9_uses_the_drivers_own_message() -> None:
    report = parse(debug_log_for(None, exit_code=9))
    assert report.errors == (DRIVER_GONE,)
    assert report.exit_codes == dict.fromkeys(SECTION_ORDER, 9)


def test_debug_log_for_unknown_capture_names_the_shipped_ones() -> None:
    with pytest.raises(FileNotFoundError, match="h100, h100-mig"):
        debug_log_for("a100")
    with pytest.raises(ValueError):
        debug_log_for(None)


def test_shipped_captures_are_the_unmodified_real_ones() -> None:
    pairs = {
        "h100.txt": "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt",
        "h100-mig.txt": "linux-x86_64__nvidia-h100-mig__590.48.01.txt",
        "LICENSE": "LICENSE.nvidia_gpu_exporter",
    }
    for shipped, original in pairs.items():
        assert (CAPTURES_DIR / shipped).read_bytes() == (FIXTURES / original).read_bytes(), shipped
    readme = (CAPTURES_DIR / "README.md").read_text()
    assert "utkuozdemir/nvidia_gpu_exporter" in readme.splitlines()[1]
    # The multi-GPU logs the simulator serves are derived from these one-GPU captures, and it says so.
    assert "derives an N-GPU log from them programmatically" in readme


def test_script_is_plain_posix_sh() -> None:
    assert "[[" not in DEBUG_SCRIPT and "local " not in DEBUG_SCRIPT and "pipefail" not in DEBUG_SCRIPT
    checked = subprocess.run(["/bin/sh", "-n", "-c", DEBUG_SCRIPT], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stderr
