"""One cell of nvidia-smi output: sentinels (`[N/A]`, `ERR!`), numbers with units, bus ids, the field map."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from gputui.debugpod.nvidia_smi.report import GpuRow

_SENTINELS = {
    "n/a",
    "not supported",
    "unknown error",
    "insufficient permissions",
    "requested functionality has been deprecated",
    "gpu requires reset",
    "gpu is lost",
    "err!",
    "not available",
}


def is_sentinel(value: str) -> bool:
    """True for nvidia-smi's "no value" cells: `[N/A]`, `N/A`, `[Not Supported]`, `ERR!`, any `[...]`."""
    v = value.strip()
    if len(v) >= 2 and v.startswith("[") and v.endswith("]"):
        return True
    return v.lower() in _SENTINELS


_NUMBER_RE = re.compile(r"^(?P<num>[-+]?\d+(?:\.\d+)?)\s*(?P<unit>[A-Za-z%/]*)$")


def parse_number(value: str) -> float | None:
    match = _NUMBER_RE.match(value.strip())
    return float(match["num"]) if match else None


def to_int(value: str) -> int | None:
    number = parse_number(value)
    return int(number) if number is not None and number == int(number) else None


def _to_float(value: str) -> float | None:
    return parse_number(value)


def _to_bool(value: str) -> bool | None:
    return {"yes": True, "no": False}.get(value.strip().lower())


def _to_hex(value: str) -> int | None:
    v = value.strip()
    try:
        return int(v, 16) if v.lower().startswith("0x") else int(v)
    except ValueError:
        return None


def _to_str(value: str) -> str | None:
    return value.strip() or None


# canonical --query-gpu field -> (GpuRow attribute, converter)
FIELD_MAP: dict[str, tuple[str, Callable[[str], Any]]] = {
    "index": ("index", to_int),
    "name": ("name", _to_str),
    "uuid": ("uuid", _to_str),
    "pci.bus_id": ("bus_id", _to_str),
    "memory.used": ("memory_used_mib", to_int),
    "memory.total": ("memory_total_mib", to_int),
    "utilization.gpu": ("utilization_pct", to_int),
    "temperature.gpu": ("temperature_c", to_int),
    "power.draw": ("power_w", _to_float),
    "power.limit": ("power_limit_w", _to_float),
    "ecc.mode.current": ("ecc_mode", _to_str),
    "ecc.errors.uncorrected.volatile.total": ("ecc_uncorrected_volatile", to_int),
    "retired_pages.pending": ("retired_pages_pending", _to_bool),
    "remapped_rows.pending": ("remapped_rows_pending", _to_bool),
    "remapped_rows.failure": ("remapped_rows_failure", _to_bool),
    "pcie.link.gen.current": ("pcie_gen_current", to_int),
    "pcie.link.gen.max": ("pcie_gen_max", to_int),
    "pcie.link.width.current": ("pcie_width_current", to_int),
    "pcie.link.width.max": ("pcie_width_max", to_int),
    "mig.mode.current": ("mig_mode", _to_str),
    "clocks_event_reasons.active": ("clocks_event_reasons", _to_hex),
    "gpu_recovery_action": ("recovery_action", _to_str),
    "reset_status.reset_required": ("reset_required", _to_bool),
    "reset_status.drain_and_reset_recommended": ("drain_and_reset", _to_bool),
    # `-q` only (no --query-gpu field on any driver seen): gputui's own names.
    "memory.channel_repair_pending": ("channel_repair_pending", _to_bool),
    "memory.unrepairable": ("unrepairable_memory", _to_bool),
    "fan.speed": ("fan_speed_pct", to_int),
}

NVML_FAULT_CELLS = ("timeout", "corrupted inforom", "insufficient external power", "interrupt request issue",
                    "driver not loaded", "uninitialized", "driver/library version mismatch",
                    "gpu access blocked by the operating system", "insufficient resources")
"""nvmlErrorString texts (NVIDIA/DCGM sdk/nvidia/nvml/nvml_error_strings.h) that nvidia-smi prints as `[...]`
for a field the GPU or driver did not answer: no reading, unlike `[N/A]`, `[Not Supported]` or
`[Function Not Found]` (a field this GPU or library lacks)."""
ERROR_CELLS = ("err!", "unknown error", *NVML_FAULT_CELLS)
"""A value that could not be read because the GPU is failing (one flag for the GPU when several fields say so)."""
FAILED_CELLS = ("gpu is lost", "gpu requires reset", *ERROR_CELLS)
"""Sentinels that say the GPU (not the field) is in trouble: they outrank a number read elsewhere."""


def is_failed_cell(value: str | None) -> bool:
    """`[GPU is lost]`, `[GPU requires reset]`, `ERR!`, `[Unknown Error]`: a failure, not a missing value."""
    return value is not None and value.strip().strip("[]").strip().lower() in FAILED_CELLS


def printed(gpu: GpuRow, canonical: str) -> bool:
    """The input held this field for the GPU: a value, or a cell saying why there is none (`[N/A]`)."""
    return getattr(gpu, FIELD_MAP[canonical][0]) is not None or canonical in gpu.unavailable


def has_value(gpu: GpuRow, canonical: str) -> bool:
    """nvidia-smi read a value for this field (not `[N/A]`, `[Insufficient Permissions]`, ...)."""
    return getattr(gpu, FIELD_MAP[canonical][0]) is not None

_BUS_RE = re.compile(
    r"^(?:(?P<domain>[0-9a-fA-F]{1,8}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})(?:\.(?P<fn>[0-7]))?$"
)


def normalize_bus_id(bus_id: str | None) -> str | None:
    """`00000000:00:09.0`, `0000:00:09.0` and the kernel's `0000:00:09` all become `0000:00:09.0`."""
    if not bus_id:
        return None
    match = _BUS_RE.match(bus_id.strip())
    if match is None:
        return None
    domain = int(match["domain"] or "0", 16)
    return f"{domain:04x}:{match['bus'].lower()}:{match['dev'].lower()}.{match['fn'] or '0'}"
