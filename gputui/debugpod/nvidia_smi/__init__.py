"""Parse nvidia-smi output (debug pod log, default table, `-q`, `--query-*` CSV, `-L`) into a GpuReport.

Pure: text in, frozen dataclasses out, never raises on odd input. A value nvidia-smi could not give
(`[N/A]`, `[Not Supported]`, `[Unknown Error]`, ...) becomes None with the cell text kept in
`GpuRow.unavailable`, so a view can say *why* it is missing.

One module per format (`table`, `query` for `-q`, `query_csv`, `gpu_list` for `-L`, `debug_log`,
`capture_bundle`), each turning text into `partial.Parsed` cells; `merge` joins what the formats said
about the same GPU and builds the `report` types; `parse` detects the format and runs the rest.
"""

from __future__ import annotations

from gputui.debugpod.nvidia_smi.cells import has_value, is_sentinel, normalize_bus_id, printed
from gputui.debugpod.nvidia_smi.parse import parse
from gputui.debugpod.nvidia_smi.report import GpuProcess, GpuReport, GpuRow, KernelXid, MigDevice, SmiFailure, to_json

__all__ = [
    "GpuProcess",
    "GpuReport",
    "GpuRow",
    "KernelXid",
    "MigDevice",
    "SmiFailure",
    "has_value",
    "is_sentinel",
    "normalize_bus_id",
    "parse",
    "printed",
    "to_json",
]
