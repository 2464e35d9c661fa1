"""Health flags: healthy real captures raise none; real captures with faults flipped in, and nvidia-smi's
own failure outputs, raise the right flag with the right severity."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gputui.debugpod.capture import debug_log_for
from gputui.debugpod.health import health_flags
from gputui.debugpod.nvidia_smi import parse

Sectioner = Callable[[str, str, str], str]

GPU_LOST = (
    "Unable to determine the device handle for GPU0000:00:09.0: GPU is lost.  Reboot the system to recover this GPU"
)


def _csv_with(section: Sectioner, capture: str = "h100", **cells: str) -> str:
    """The real query-gpu CSV (header + row) of a capture with faults flipped into some cells."""
    header, row = section(capture, "load", "nvidia-smi --query-gpu").splitlines()[:2]
    names = [h.strip().split(" [")[0] for h in header.split(",")]
    values = [v.strip() for v in row.split(",")]
    for name, value in cells.items():
        values[names.index(name)] = value
    return header + "\n" + ", ".join(values) + "\n"


@pytest.mark.parametrize("capture", ["h100", "h100-mig"])
def test_healthy_captures_raise_no_flag(capture: str) -> None:
    for phase in ("idle", "load"):
        assert health_flags(parse(debug_log_for(capture, phase=phase))) == []


@pytest.mark.parametrize(
    ("cells", "code", "severity", "field", "value"),
    [
        ({"ecc.errors.uncorrected.volatile.total": "3"}, "ecc-uncorrected", "error", "ecc.errors.uncorrected.volatile.total", "3"),
        ({"remapped_rows.failure": "Yes"}, "row-remap-failure", "critical", "remapped_rows.failure", "Yes"),
        # NVIDIA: a pending remap happens at the next reset; meanwhile error containment and dynamic page
        # offlining keep the row out of use and new workloads can start (NVML nvmlDeviceGetRemappedRows,
        # "A100 GPU memory error management": Row-remapping pending flag). Schedule a reset, not an emergency.
        ({"remapped_rows.pending": "Yes"}, "row-remap-pending", "warning", "remapped_rows.pending", "Yes"),
        ({"retired_pages.pending": "Yes"}, "retired-pages-pending", "error", "retired_pages.pending", "Yes"),
        ({"pcie.link.width.current": "8"}, "pcie-link-degraded", "warning", "pcie.link.width.current", "8"),
        ({"clocks_event_reasons.active": "0x0000000000000048"}, "clocks-slowdown", "warning", "clocks_event_reasons.active", "0x0000000000000048"),
        ({"gpu_recovery_action": "GPU Reset"}, "recovery-action", "error", "gpu_recovery_action", "GPU Reset"),
        ({"temperature.gpu": "[Unknown Error]"}, "unreadable-field", "warning", "temperature.gpu", "[Unknown Error]"),
        ({"memory.used": "[GPU requires reset]"}, "gpu-requires-reset", "error", "memory.used", "[GPU requires reset]"),
    ],
)
def test_gpu_faults_in_a_real_row(
    section: Sectioner, cells: dict[str, str], code: str, severity: str, field: str, value: str
) -> None:
    flags = health_flags(parse(_csv_with(section, **cells)))

    assert [(f.gpu_index, f.code, f.severity, f.field, f.value) for f in flags] == [(0, code, severity, field, value)]
    assert flags[0].message.startswith("GPU 0")


def test_pcie_generation_below_max_is_flagged_only_under_load(section: Sectioner) -> None:
    # The link trains down to Gen1 at idle to save power (not a fault); stuck at Gen1 while busy is.
    idle = _csv_with(section, **{"pcie.link.gen.current": "1", "utilization.gpu": "0"})
    assert health_flags(parse(idle)) == []
    busy = health_flags(parse(_csv_with(section, **{"pcie.link.gen.current": "1", "utilization.gpu": "100"})))
    assert [(f.gpu_index, f.code, f.severity, f.field, f.value) for f in busy] == [
        (0, "pcie-gen-downgraded", "warning", "pcie.link.gen.current", "1")]
    assert "Gen1 of Gen5 while 100 % busy" in busy[0].message


def test_flags_are_worst_first(section: Sectioner) -> None:
    text = _csv_with(
        section,
        **{"pcie.link.width.current": "8", "ecc.errors.uncorrected.volatile.total": "1", "remapped_rows.failure": "Yes"},
    )
    assert [f.severity for f in health_flags(parse(text))] == ["critical", "error", "warning"]


def test_mig_device_ecc_errors_are_flagged(section: Sectioner) -> None:
    table = section("h100-mig", "load", "nvidia-smi").replace(
        "|  0    3   0   1  |              17MiB / 20096MiB    | 32      0 |",
        "|  0    3   0   1  |              17MiB / 20096MiB    | 32      2 |",
    )
    flags = health_flags(parse(table))

    # A table shows no remapped rows, retired pages or reset state: said, never taken for "fine".
    assert [(f.code, f.gpu_index, f.value) for f in flags] == [
        ("ecc-uncorrected", 0, "2"), ("health-not-shown", None, "remapped rows, retired pages, reset required")]
    assert "MIG device 1" in flags[0].message


def test_err_cells_in_the_table_are_flagged(section: Sectioner) -> None:
    table = section("h100", "load", "nvidia-smi").replace("| N/A   59C    P0            629W /  700W |", "| ERR!  ERR!   P0            ERR! /  700W |")
    report = parse(table)
    flags = health_flags(report)

    assert report.gpus[0].temperature_c is None and report.gpus[0].unavailable["temperature.gpu"] == "ERR!"
    # A row of ERR! cells is one failed GPU (fan included), not a warning per cell.
    assert [(f.gpu_index, f.code, f.severity) for f in flags] == [(0, "gpu-error-state", "error"),
                                                                   (None, "health-not-shown", "warning")]
    assert all(name in flags[0].message for name in ("fan.speed", "temperature.gpu", "power.draw"))
    assert "(ERR!)" in flags[0].message


def test_driver_not_loaded_exit_9() -> None:
    flags = health_flags(parse(debug_log_for(None, exit_code=9)))

    assert [(f.code, f.severity, f.gpu_index) for f in flags] == [("driver-not-loaded", "critical", None)]
    assert "couldn't communicate with the NVIDIA driver" in flags[0].message


def test_gpu_lost_exit_15_maps_to_the_gpu_by_bus_id(section: Sectioner) -> None:
    log = debug_log_for(None, exit_code=15, output=GPU_LOST)
    flags = health_flags(parse(log))
    assert [(f.code, f.severity) for f in flags] == [("gpu-lost", "critical")]
    assert "0000:00:09.0" in flags[0].message and "reboot" in flags[0].message.lower()

    # When the other output still lists that bus id, the flag names the GPU index.
    mixed = parse(GPU_LOST + "\n" + section("h100", "load", "nvidia-smi"))
    assert [(f.code, f.gpu_index) for f in health_flags(mixed)] == [("gpu-lost", 0), ("health-not-shown", None)]


def test_gpu_lost_from_exit_code_alone() -> None:
    flags = health_flags(parse(debug_log_for(None, exit_code=15, output="")))
    assert [(f.code, f.severity) for f in flags] == [("gpu-lost", "critical")]


def test_nvml_unknown_error_explains_the_blocked_device_route() -> None:
    log = debug_log_for(None, exit_code=255, output="Failed to initialize NVML: Unknown Error\n")
    flags = health_flags(parse(log))

    assert [(f.code, f.severity, f.value) for f in flags] == [
        ("nvml-init-failure", "error", "Failed to initialize NVML: Unknown Error")
    ]
    message = flags[0].message
    for words in ("device cgroup", "NVIDIA_VISIBLE_DEVICES", "runtimeClassName: nvidia", "privileged"):
        assert words in message


def test_no_devices_found() -> None:
    flags = health_flags(parse(debug_log_for(None, exit_code=6, output="No devices were found\n")))
    assert [(f.code, f.severity, f.value) for f in flags] == [("no-devices", "error", "No devices were found")]


def test_exit_255_without_a_known_message() -> None:
    flags = health_flags(parse(debug_log_for(None, exit_code=255, output="")))
    assert [(f.code, f.severity) for f in flags] == [("nvidia-smi-internal-error", "error")]
    assert "exit 255" in flags[0].message


def test_driver_library_mismatch_is_critical() -> None:
    flags = health_flags(parse("Failed to initialize NVML: Driver/library version mismatch\n"))
    assert [(f.code, f.severity) for f in flags] == [("driver-library-mismatch", "critical")]


def test_unknown_exit_code_is_still_reported() -> None:
    flags = health_flags(parse(debug_log_for(None, exit_code=10, output="")))
    assert [(f.code, f.severity) for f in flags] == [("nvidia-smi-failed", "error")]
    assert "interrupt" in flags[0].message
