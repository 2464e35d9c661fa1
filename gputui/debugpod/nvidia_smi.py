"""Parse nvidia-smi output (debug pod log, default table, `-q`, `--query-*` CSV, `-L`) into a GpuReport.

Pure: text in, frozen dataclasses out, never raises on odd input. A value nvidia-smi could not give
(`[N/A]`, `[Not Supported]`, `[Unknown Error]`, ...) becomes None with the cell text kept in
`GpuRow.unavailable`, so a view can say *why* it is missing.
"""

from __future__ import annotations

import dataclasses
import re
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from gputui.debugpod.capture import (
    APPS_FIELDS,
    HEALTH_FIELDS,
    EXIT_MEANINGS,
    Section,
    canonical_field,
    capture_sections,
    read_log,
)

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


# --------------------------------------------------------------------------------------------
# Result types


@dataclass(frozen=True, slots=True)
class GpuProcess:
    """A process holding GPU memory (compute-apps CSV, the table's Processes box, or `-q`)."""

    pid: int | None
    name: str | None
    used_memory_mib: int | None
    gpu_index: int | None = None
    gpu_uuid: str | None = None
    gpu_bus_id: str | None = None
    type: str | None = None
    """`C` compute, `G` graphics, `C+G`, `M` (MPS)."""
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None


@dataclass(frozen=True, slots=True)
class MigDevice:
    """One MIG instance of a GPU; `profile`/`uuid` come from `nvidia-smi -L`."""

    gpu_index: int | None
    index: int | None
    gpu_instance_id: int | None
    compute_instance_id: int | None
    memory_used_mib: int | None = None
    memory_total_mib: int | None = None
    sm_count: int | None = None
    ecc_uncorrected_volatile: int | None = None
    profile: str | None = None
    uuid: str | None = None


@dataclass(frozen=True, slots=True)
class GpuRow:
    """One physical GPU. None means "not reported"; `unavailable[field]` says why when nvidia-smi did.

    Keys of `unavailable` are `--query-gpu` field names (e.g. `utilization.gpu` -> `[N/A]`). `raw` holds
    every value as read, keyed by CSV field name, `-q` path (`FB Memory Usage/Total`) or `table.<column>`.
    """

    index: int | None
    name: str | None = None
    uuid: str | None = None
    bus_id: str | None = None
    memory_used_mib: int | None = None
    memory_total_mib: int | None = None
    utilization_pct: int | None = None
    temperature_c: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    ecc_mode: str | None = None
    ecc_uncorrected_volatile: int | None = None
    retired_pages_pending: bool | None = None
    remapped_rows_pending: bool | None = None
    remapped_rows_failure: bool | None = None
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    mig_mode: str | None = None
    clocks_event_reasons: int | None = None
    """Bitmask of `clocks_event_reasons.active` (1 idle, 4 SW power cap, 8 HW slowdown, ...)."""
    recovery_action: str | None = None
    """`gpu_recovery_action` (new drivers): `None` when healthy, else reset/reboot/drain advice."""
    reset_required: bool | None = None
    """`reset_status.reset_required` / `-q` GPU Reset Status (drivers before `gpu_recovery_action`)."""
    drain_and_reset: bool | None = None
    """`reset_status.drain_and_reset_recommended` / `-q` Drain and Reset Recommended."""
    channel_repair_pending: bool | None = None
    """`-q` ECC Errors/Channel Repair Pending (590+ drivers): memory repair waits for a reset."""
    unrepairable_memory: bool | None = None
    """`-q` ECC Errors/Unrepairable Memory (590+ drivers): memory the GPU can no longer repair."""
    fan_speed_pct: int | None = None
    processes: tuple[GpuProcess, ...] = ()
    mig_devices: tuple[MigDevice, ...] = ()
    raw: dict[str, str] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class KernelXid:
    """An `NVRM: Xid (PCI:BUS): CODE, ...` kernel log line (dmesg / journalctl -k) pasted with the output."""

    bus_id: str
    code: int
    message: str
    """The whole line from `NVRM:` on, verbatim."""


@dataclass(frozen=True, slots=True)
class SmiFailure:
    """nvidia-smi said it failed: a stable `code`, its exact message, and the GPU when it named one."""

    code: str
    message: str
    bus_id: str | None = None
    section: str | None = None
    exit_code: int | None = None
    verbatim: bool = True
    """False when nvidia-smi printed nothing recognisable and `message` describes the exit code."""
    gpu_index: int | None = None
    """The index newer drivers print (`for GPU7: 0000:CA:00.0: ...`)."""


@dataclass(frozen=True, slots=True)
class GpuReport:
    """Everything read from one node's nvidia-smi output."""

    source_format: str
    """debug-pod | table | query | csv | compute-apps | list | capture | text | empty"""
    gpus: tuple[GpuRow, ...] = ()
    driver_version: str | None = None
    cuda_version: str | None = None
    processes: tuple[GpuProcess, ...] = ()
    errors: tuple[str, ...] = ()
    """nvidia-smi's own failure messages, verbatim (e.g. `No devices were found`)."""
    failures: tuple[SmiFailure, ...] = ()
    exit_codes: dict[str, int | None] = field(default_factory=dict)
    """Debug pod log: exit code per section (None: the log stopped inside that section)."""
    warnings: tuple[str, ...] = ()
    """Problems reading the input itself (unknown CSV field list, truncated log, odd cells)."""
    complete: bool = True
    """False when a debug pod log has no end marker (pod killed, or still running)."""
    attached_gpus: int | None = None
    """`Attached GPUs : N` of `-q`: how many GPUs the input should cover (None when it does not say)."""
    xids: tuple[KernelXid, ...] = ()
    """Kernel `NVRM: Xid` lines found in the input (pasted dmesg)."""

    def gpu(self, index: int) -> GpuRow | None:
        return next((g for g in self.gpus if g.index == index), None)


# --------------------------------------------------------------------------------------------
# Cells

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


def _number(value: str) -> float | None:
    match = _NUMBER_RE.match(value.strip())
    return float(match["num"]) if match else None


def _to_int(value: str) -> int | None:
    number = _number(value)
    return int(number) if number is not None and number == int(number) else None


def _to_float(value: str) -> float | None:
    return _number(value)


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
_FIELD_MAP: dict[str, tuple[str, Callable[[str], Any]]] = {
    "index": ("index", _to_int),
    "name": ("name", _to_str),
    "uuid": ("uuid", _to_str),
    "pci.bus_id": ("bus_id", _to_str),
    "memory.used": ("memory_used_mib", _to_int),
    "memory.total": ("memory_total_mib", _to_int),
    "utilization.gpu": ("utilization_pct", _to_int),
    "temperature.gpu": ("temperature_c", _to_int),
    "power.draw": ("power_w", _to_float),
    "power.limit": ("power_limit_w", _to_float),
    "ecc.mode.current": ("ecc_mode", _to_str),
    "ecc.errors.uncorrected.volatile.total": ("ecc_uncorrected_volatile", _to_int),
    "retired_pages.pending": ("retired_pages_pending", _to_bool),
    "remapped_rows.pending": ("remapped_rows_pending", _to_bool),
    "remapped_rows.failure": ("remapped_rows_failure", _to_bool),
    "pcie.link.gen.current": ("pcie_gen_current", _to_int),
    "pcie.link.gen.max": ("pcie_gen_max", _to_int),
    "pcie.link.width.current": ("pcie_width_current", _to_int),
    "pcie.link.width.max": ("pcie_width_max", _to_int),
    "mig.mode.current": ("mig_mode", _to_str),
    "clocks_event_reasons.active": ("clocks_event_reasons", _to_hex),
    "gpu_recovery_action": ("recovery_action", _to_str),
    "reset_status.reset_required": ("reset_required", _to_bool),
    "reset_status.drain_and_reset_recommended": ("drain_and_reset", _to_bool),
    # `-q` only (no --query-gpu field on any driver seen): gputui's own names.
    "memory.channel_repair_pending": ("channel_repair_pending", _to_bool),
    "memory.unrepairable": ("unrepairable_memory", _to_bool),
    "fan.speed": ("fan_speed_pct", _to_int),
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
    return getattr(gpu, _FIELD_MAP[canonical][0]) is not None or canonical in gpu.unavailable


def has_value(gpu: GpuRow, canonical: str) -> bool:
    """nvidia-smi read a value for this field (not `[N/A]`, `[Insufficient Permissions]`, ...)."""
    return getattr(gpu, _FIELD_MAP[canonical][0]) is not None

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


# --------------------------------------------------------------------------------------------
# Partial results: what one format said, as cell text, before the merge


@dataclass
class _Gpu:
    cells: dict[str, str] = field(default_factory=dict)
    raw: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    mig: dict[int, dict[str, Any]] = field(default_factory=dict)

    def key(self) -> tuple[str | None, str | None, str | None]:
        uuid = self.cells.get("uuid")
        return (
            normalize_bus_id(self.cells.get("pci.bus_id")),
            uuid if uuid and not is_sentinel(uuid) else None,
            self.cells.get("index"),
        )


@dataclass
class _Parsed:
    gpus: list[_Gpu] = field(default_factory=list)
    processes: list[dict[str, Any]] = field(default_factory=list)
    driver_version: str | None = None
    cuda_version: str | None = None
    warnings: list[str] = field(default_factory=list)
    kind: str = ""
    attached: int | None = None
    """`-q`'s `Attached GPUs`: how many GPU sections a complete output has."""


# --------------------------------------------------------------------------------------------
# Failure messages (gpu-health.md 1.3)

_HANDLE_RE = re.compile(  # older drivers: "for GPU 0000:02:00.0: ..."; newer: "for GPU1: 0000:34:00.0: ..."
    r"Unable to determine the device handle for GPU\s*(?:(?P<index>\d+):\s*)?"
    r"(?P<bus>[0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+(?:\.[0-9A-Fa-f])?):\s*(?P<why>.*)"
)
_FAILURE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("driver-not-loaded", re.compile(r"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.*")),
    ("driver-library-mismatch", re.compile(r"Failed to initialize NVML: Driver/library version mismatch.*")),
    ("nvml-unknown-error", re.compile(r"Failed to initialize NVML: Unknown Error.*")),
    ("nvml-insufficient-permissions", re.compile(r"Failed to initialize NVML: Insufficient Permissions.*")),
    ("nvml-init-failed", re.compile(r"Failed to initialize NVML: .*")),
    ("nvml-library-missing", re.compile(r"NVIDIA-SMI couldn't find libnvidia-ml\.so.*|NVML Shared Library Not Found.*")),
    ("no-devices", re.compile(r"No devices were found.*")),
    ("invalid-field", re.compile(r"Field \S+ is not a valid field to query.*")),
    ("nvidia-smi-not-found", re.compile(r".*nvidia-smi: (?:command )?not found.*|.*nvidia-smi: No such file or directory.*")),
)
# Printed after the table (or before CSV rows) by every nvidia-smi call on a GPU with a bad infoROM.
_INFOROM_RE = re.compile(r"WARNING: infoROM is corrupted at gpu (?P<bus>[0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+(?:\.[0-7])?)")
# gpu-health.md 3: `NVRM: Xid (PCI:0000:01:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.`
_XID_RE = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<bus>[0-9a-fA-F:.]+)\): (?P<xid>\d+),?.*")
_EXIT_CODES = {
    9: "driver-not-loaded",
    12: "nvml-library-missing",
    14: "inforom-corrupted",
    15: "gpu-lost",
    18: "driver-library-mismatch",
    124: "timeout",
    126: "nvidia-smi-not-found",
    127: "nvidia-smi-not-found",
    255: "internal-error",
}


def _scan_failures(text: str, section: str | None, exit_code: int | None) -> list[SmiFailure]:
    found: list[SmiFailure] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("|"):
            continue
        handle = _HANDLE_RE.search(line)
        if handle is not None:
            why = handle["why"]
            code = "gpu-lost" if "gpu is lost" in why.lower() else "device-handle-error"
            index = int(handle["index"]) if handle["index"] is not None else None
            found.append(SmiFailure(code, handle.group(0), handle["bus"], section, exit_code, gpu_index=index))
            continue
        inforom = _INFOROM_RE.search(line)
        if inforom is not None:
            found.append(SmiFailure("inforom-corrupted", inforom.group(0), inforom["bus"], section, exit_code))
            continue
        for code, pattern in _FAILURE_PATTERNS:
            match = pattern.match(line)
            if match is not None:
                found.append(SmiFailure(code, match.group(0).strip(), None, section, exit_code))
                break
    if exit_code not in (None, 0) and not found:
        code = _EXIT_CODES.get(exit_code, "nvidia-smi-failed")
        meaning = EXIT_MEANINGS.get(exit_code, "unknown exit code")
        found.append(SmiFailure(code, f"nvidia-smi exited {exit_code}: {meaning}", None, section, exit_code, False))
    return found


# --------------------------------------------------------------------------------------------
# Default table


# 610+ prints `KMD Version:` and `CUDA UMD Version:` where older drivers print `Driver Version:` / `CUDA Version:`.
_TABLE_VERSION_RE = re.compile(
    r"(?:Driver|KMD) Version:\s*(?P<driver>\S+)(?:.*?CUDA(?: UMD)? Version:\s*(?P<cuda>[^\s|]+))?")
_PROC_RE = re.compile(
    r"^\|\s*(?P<gpu>\d+|N/A)\s+(?:(?P<gi>\d+|N/A)\s+(?P<ci>\d+|N/A)\s+)?(?P<pid>\d+)\s+"
    r"(?P<type>[CGM](?:\+[CGM])?)\s+(?P<name>.*?)\s+(?P<mem>\S+)\s*\|$"
)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _blocks(lines: list[str], start: int) -> tuple[list[list[str]], int]:
    """`|` line groups separated by `+---+` rules, from `start` to the end of that box."""
    blocks: list[list[str]] = []
    current: list[str] = []
    i = start
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("|"):
            current.append(line)
        elif line.startswith("+"):
            if current:
                blocks.append(current)
            current = []
        else:
            break
        i += 1
    if current:
        blocks.append(current)
    return blocks, i


def _after_rule(lines: list[str], start: int) -> int | None:
    """Index after the next `|===|` header rule, or None."""
    for i in range(start, len(lines)):
        if re.match(r"^\|=+", lines[i].strip()):
            return i + 1
    return None


def _parse_table(text: str) -> _Parsed:
    out = _Parsed()
    version = _TABLE_VERSION_RE.search(text)
    if version is not None:
        out.driver_version = version["driver"]
        out.cuda_version = version["cuda"]
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if re.search(r"\|\s*GPU\s+Name\b", line):
            start = _after_rule(lines, i)
            if start is None:
                break
            blocks, i = _blocks(lines, start)
            for block in blocks:
                gpu = _table_gpu(block, out.warnings)
                if gpu is not None:
                    out.gpus.append(gpu)
            continue
        if "MIG devices:" in line:
            start = _after_rule(lines, i)
            if start is None:
                break
            blocks, i = _blocks(lines, start)
            for block in blocks:
                _table_mig(block, out)
            continue
        if "Processes:" in line:
            start = _after_rule(lines, i)
            if start is None:
                break
            blocks, i = _blocks(lines, start)
            for row in (r for block in blocks for r in block):
                match = _PROC_RE.match(row)
                if match is None:
                    continue
                out.processes.append(
                    {
                        "gpu_index": match["gpu"],
                        "gpu_instance_id": match["gi"],
                        "compute_instance_id": match["ci"],
                        "pid": match["pid"],
                        "type": match["type"],
                        "name": match["name"],
                        "used_memory": match["mem"],
                    }
                )
            continue
        i += 1
    return out


def _table_gpu(block: list[str], warnings: list[str]) -> _Gpu | None:
    rows = [_cells(line) for line in block]
    if not rows or len(rows[0]) < 3:
        return None
    gpu = _Gpu()
    name_cell, bus_cell, ecc_cell = rows[0][:3]
    tokens = name_cell.split()
    if not tokens or not tokens[0].isdigit():
        return None
    gpu.cells["index"] = gpu.raw["table.GPU"] = tokens[0]
    if len(tokens) > 1 and tokens[-1] in ("On", "Off", "N/A", "WDDM", "TCC", "MCDM"):
        # Linux prints persistence mode there; Windows the driver model (`NVIDIA GeForce RTX 2080 ...  WDDM`).
        gpu.raw["table.Persistence-M" if tokens[-1] in ("On", "Off", "N/A") else "table.TCC/WDDM"] = tokens[-1]
        tokens = tokens[:-1]
    if len(tokens) > 1:
        gpu.cells["name"] = gpu.raw["table.Name"] = " ".join(tokens[1:])
    bus_tokens = bus_cell.split()
    if bus_tokens:
        gpu.cells["pci.bus_id"] = bus_tokens[0]
        gpu.raw["table.Bus-Id"] = bus_tokens[0]
    if len(bus_tokens) > 1:
        gpu.raw["table.Disp.A"] = bus_tokens[1]
    gpu.raw["table.Volatile Uncorr. ECC"] = ecc_cell
    if _to_int(ecc_cell) is not None or is_sentinel(ecc_cell):
        gpu.cells["ecc.errors.uncorrected.volatile.total"] = ecc_cell
    elif ecc_cell:
        # MIG mode prints On/Off here and counts errors per MIG device instead.
        gpu.reasons["ecc.errors.uncorrected.volatile.total"] = ecc_cell
    if len(rows) > 1 and len(rows[1]) >= 3:
        perf, memory, util = rows[1][:3]
        match = re.match(r"^(?P<fan>\S+)\s+(?P<temp>\S+)\s+(?P<perf>\S+)\s+(?P<pwr>\S+)\s*/\s*(?P<cap>\S+)$", perf)
        if match is not None:
            gpu.raw.update({"table.Fan": match["fan"], "table.Temp": match["temp"], "table.Perf": match["perf"]})
            gpu.cells["fan.speed"] = match["fan"]
            gpu.cells["temperature.gpu"] = match["temp"]
            gpu.cells["power.draw"] = match["pwr"]
            gpu.cells["power.limit"] = match["cap"]
            gpu.raw["table.Pwr:Usage/Cap"] = f"{match['pwr']} / {match['cap']}"
        elif perf:
            gpu.raw["table.Fan Temp Perf Pwr:Usage/Cap"] = perf
            warnings.append(f"GPU {tokens[0]}: cannot read table cell {perf!r}")
        match = re.match(r"^(?P<used>\S+)\s*/\s*(?P<total>\S+)$", memory)
        if match is not None:
            gpu.cells["memory.used"] = match["used"]
            gpu.cells["memory.total"] = match["total"]
        gpu.raw["table.Memory-Usage"] = memory
        util_tokens = util.split()
        if util_tokens:
            gpu.cells["utilization.gpu"] = util_tokens[0]
            gpu.raw["table.GPU-Util"] = util_tokens[0]
            gpu.raw["table.Compute M."] = " ".join(util_tokens[1:])
    if len(rows) > 2 and len(rows[2]) >= 3 and rows[2][2]:
        gpu.cells["mig.mode.current"] = rows[2][2]
        gpu.raw["table.MIG M."] = rows[2][2]
    return gpu


def _table_mig(block: list[str], out: _Parsed) -> None:
    rows = [_cells(line) for line in block]
    if not rows or len(rows[0]) < 3:
        return
    ids = rows[0][0].split()
    if len(ids) != 4 or not all(t.isdigit() for t in ids):
        return
    gpu_index, gi, ci, dev = (int(t) for t in ids)
    mig: dict[str, Any] = {"gpu_index": gpu_index, "index": dev, "gpu_instance_id": gi, "compute_instance_id": ci}
    match = re.match(r"^(?P<used>\S+)\s*/\s*(?P<total>\S+)$", rows[0][1])
    if match is not None:
        mig["memory_used_mib"] = _to_int(match["used"])
        mig["memory_total_mib"] = _to_int(match["total"])
    sm_ecc = rows[0][2].split()
    if sm_ecc:
        mig["sm_count"] = _to_int(sm_ecc[0])
    if len(sm_ecc) > 1:
        mig["ecc_uncorrected_volatile"] = _to_int(sm_ecc[1])
    gpu = next((g for g in out.gpus if g.cells.get("index") == str(gpu_index)), None)
    if gpu is not None:
        gpu.mig[dev] = mig


# --------------------------------------------------------------------------------------------
# nvidia-smi -q


@dataclass
class _Node:
    key: str
    value: str | None
    children: list[_Node] = field(default_factory=list)

    def child(self, name: str) -> _Node | None:
        wanted = name.lower()
        return next((c for c in self.children if c.key.lower() == wanted), None)

    def find(self, path: str) -> _Node | None:
        node: _Node | None = self
        for part in path.split("/"):
            node = node.child(part) if node is not None else None
        return node

    def get(self, path: str) -> str | None:
        node = self.find(path)
        return node.value if node is not None else None

    def flat(self, prefix: str = "") -> Iterable[tuple[str, str]]:
        for c in self.children:
            path = f"{prefix}{c.key}"
            if c.value is not None:
                yield path, c.value
            yield from c.flat(path + "/")


_Q_LINE_RE = re.compile(r"^(?P<indent>\s*)(?P<key>\S.*?)\s+:(?P<value>.*)$")
_Q_GPU_RE = re.compile(r"^GPU (?P<bus>[0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9A-Fa-f])$")


def _q_tree(text: str) -> _Node:
    root = _Node("", None)
    stack: list[tuple[int, _Node]] = []
    for line in text.splitlines():
        if not line.strip() or line.strip().startswith("==="):
            continue
        match = _Q_LINE_RE.match(line)
        if match is not None:
            indent = len(match["indent"].expandtabs())
            node = _Node(match["key"].strip(), match["value"].strip())
        else:
            indent = len(line) - len(line.lstrip())
            node = _Node(line.strip(), None)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        (stack[-1][1] if stack else root).children.append(node)
        stack.append((indent, node))
    return root


_Q_PATHS: dict[str, tuple[str, ...]] = {
    "name": ("Product Name",),
    "uuid": ("GPU UUID",),
    "pci.bus_id": ("PCI/Bus Id",),
    "memory.used": ("FB Memory Usage/Used",),
    "memory.total": ("FB Memory Usage/Total",),
    "utilization.gpu": ("Utilization/GPU",),
    "temperature.gpu": ("Temperature/GPU Current Temp",),
    # 595+ print `Average Power Draw : N/A` beside a real instantaneous reading: the first path
    # with a value wins, a sentinel only when no path has one.
    "power.draw": (
        "GPU Power Readings/Power Draw",
        "GPU Power Readings/Average Power Draw",
        "GPU Power Readings/Instantaneous Power Draw",
        "Power Readings/Power Draw",
    ),
    "power.limit": (
        "GPU Power Readings/Current Power Limit",
        "GPU Power Readings/GPU Ceiling Power Limit/Current Power Limit",  # 610+
        "GPU Power Readings/Power Limit",
        "Power Readings/Power Limit",
        "Power Readings/Current Power Limit",
    ),
    "ecc.mode.current": ("ECC Mode/Current",),
    "retired_pages.pending": (
        "Retired Pages/Pending Page Blacklist",
        "Retired Pages/Pending Page Retirement",
        "Retired Pages/Pending",
    ),
    "remapped_rows.pending": ("Remapped Rows/Pending",),
    "remapped_rows.failure": ("Remapped Rows/Remapping Failure Occurred",),
    "pcie.link.gen.current": ("PCI/GPU Link Info/PCIe Generation/Current",),
    "pcie.link.gen.max": ("PCI/GPU Link Info/PCIe Generation/Max",),
    "pcie.link.width.current": ("PCI/GPU Link Info/Link Width/Current",),
    "pcie.link.width.max": ("PCI/GPU Link Info/Link Width/Max",),
    "mig.mode.current": ("MIG Mode/Current",),
    "gpu_recovery_action": ("GPU Recovery Action",),
    "reset_status.reset_required": ("GPU Reset Status/Reset Required",),
    "reset_status.drain_and_reset_recommended": ("GPU Reset Status/Drain and Reset Recommended",),
    "memory.channel_repair_pending": ("ECC Errors/Channel Repair Pending",),
    "memory.unrepairable": ("ECC Errors/Unrepairable Memory",),
    "fan.speed": ("Fan Speed",),
}
_DEPRECATED_RE = re.compile(r"\s*\[Deprecated;[^\]]*\]\s*$")
"""610+ append `[Deprecated; will be removed in CUDA 14.0. Use KMD Version instead]` to `Driver Version`."""


def _version(root: _Node, *keys: str) -> str | None:
    for key in keys:
        value = root.get(key)
        if value and not is_sentinel(value):
            return _DEPRECATED_RE.sub("", value).strip() or None
    return None

# nvml.h nvmlClocksEventReason* bits, keyed by the `-q` labels.
_CLOCK_BITS = {
    "idle": 0x1,
    "applications clocks setting": 0x2,
    "sw power cap": 0x4,
    "hw slowdown": 0x8,
    "sync boost": 0x10,
    "sw thermal slowdown": 0x20,
    "hw thermal slowdown": 0x40,
    "hw power brake slowdown": 0x80,
    "display clock setting": 0x100,
}


def _parse_query(text: str) -> _Parsed:
    out = _Parsed()
    root = _q_tree(text)
    out.driver_version = _version(root, "KMD Version", "Driver Version")
    out.cuda_version = _version(root, "CUDA UMD Version", "CUDA Version")
    attached = _to_int(root.get("Attached GPUs") or "")
    out.attached = attached
    position = 0
    for node in root.children:
        match = _Q_GPU_RE.match(node.key)
        if match is None or node.value is not None:
            continue
        gpu = _Gpu()
        gpu.cells["index"] = str(position)  # -q lists GPUs in index order
        gpu.cells["pci.bus_id"] = match["bus"]
        position += 1
        gpu.raw.update(dict(_dedup(node.flat())))
        for canonical, paths in _Q_PATHS.items():
            values = [v for v in (node.get(path) for path in paths) if v is not None]
            if values:
                gpu.cells[canonical] = next((v for v in values if not is_sentinel(v)), values[0])
            else:
                # A section printed as one value ("Remapped Rows : N/A") covers all its fields.
                parent = node.find(paths[0].rsplit("/", 1)[0]) if "/" in paths[0] else None
                if parent is not None and parent.value:
                    gpu.cells[canonical] = parent.value
        _q_ecc(node, gpu)
        _q_clocks(node, gpu)
        _q_mig(node, gpu)
        bus_id = gpu.cells.get("pci.bus_id")
        for proc in _q_processes(node):
            proc.setdefault("gpu_bus_id", bus_id)
            proc.setdefault("gpu_uuid", gpu.cells.get("uuid"))
            proc.setdefault("gpu_index", gpu.cells["index"])
            out.processes.append(proc)
        out.gpus.append(gpu)
    return out


def _dedup(pairs: Iterable[tuple[str, str]]) -> Iterable[tuple[str, str]]:
    seen: set[str] = set()
    for key, value in pairs:
        if key not in seen:
            seen.add(key)
            yield key, value


def _q_ecc(node: _Node, gpu: _Gpu) -> None:
    volatile = node.find("ECC Errors/Volatile")
    if volatile is None:
        ecc = node.find("ECC Errors")
        if ecc is not None and ecc.value:
            gpu.cells["ecc.errors.uncorrected.volatile.total"] = ecc.value
        return
    # New schema: SRAM/DRAM "Uncorrectable" counters; old: "Double Bit/Total".
    values = [c.value for c in volatile.children if "uncorrectable" in c.key.lower() and c.value is not None]
    double_bit = volatile.get("Double Bit/Total")
    if double_bit is not None:
        values.append(double_bit)
    if not values:
        return
    numbers = [n for n in (_to_int(v) for v in values) if n is not None]
    # Sum what could be read; when nothing could, keep the first sentinel as the reason.
    gpu.cells["ecc.errors.uncorrected.volatile.total"] = str(sum(numbers)) if numbers else values[0]


def _q_clocks(node: _Node, gpu: _Gpu) -> None:
    reasons = node.child("Clocks Event Reasons") or node.child("Clocks Throttle Reasons")
    if reasons is None:
        return
    mask = 0
    seen = False

    def walk(n: _Node) -> None:
        nonlocal mask, seen
        for c in n.children:
            bit = _CLOCK_BITS.get(c.key.lower())
            if bit is not None and c.value in ("Active", "Not Active"):
                seen = True
                if c.value == "Active":
                    mask |= bit
            walk(c)

    walk(reasons)
    if seen:
        gpu.cells["clocks_event_reasons.active"] = f"0x{mask:016X}"


def _q_mig(node: _Node, gpu: _Gpu) -> None:
    for child in node.children:
        if child.key.lower() != "mig device":
            continue
        index = _to_int(child.get("Index") or "")
        if index is None:
            continue
        memory = child.child("Shared FB Memory Usage") or child.child("FB Memory Usage")
        gpu.mig[index] = {
            "gpu_index": _to_int(gpu.cells.get("index", "")),
            "index": index,
            "gpu_instance_id": _to_int(child.get("GPU Instance ID") or ""),
            "compute_instance_id": _to_int(child.get("Compute Instance ID") or ""),
            "memory_used_mib": _to_int(memory.get("Used") or "") if memory else None,
            "memory_total_mib": _to_int(memory.get("Total") or "") if memory else None,
            "sm_count": _to_int(child.get("Device Attributes/Shared/Multiprocessor count") or ""),
            "ecc_uncorrected_volatile": _to_int(child.get("ECC Errors/Volatile/SRAM Uncorrectable") or ""),
        }


def _q_processes(node: _Node) -> list[dict[str, Any]]:
    procs = node.child("Processes")
    if procs is None:
        return []
    out: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    keys = {
        "gpu instance id": "gpu_instance_id",
        "compute instance id": "compute_instance_id",
        "process id": "pid",
        "type": "type",
        "name": "name",
        "used gpu memory": "used_memory",
    }

    def visit(n: _Node) -> None:
        nonlocal current
        for c in n.children:
            key = keys.get(c.key.lower())
            if key is not None and c.value is not None:
                if key in current:
                    out.append(current)
                    current = {}
                current[key] = c.value
            visit(c)

    visit(procs)
    if current:
        out.append(current)
    return [p for p in out if "pid" in p]


# --------------------------------------------------------------------------------------------
# CSV (--query-gpu / --query-compute-apps) and -L

_UNIT_RE = re.compile(r"^(?P<name>.*?)\s*\[(?P<unit>[^\]]*)\]$")
_IDENT_RE = re.compile(r"^[A-Za-z_][\w.]*$")
_KNOWN_GPU_FIELDS = frozenset(_FIELD_MAP) | {"timestamp", "driver_version", "count", "serial", "pstate"}
_KNOWN_APPS_FIELDS = frozenset({"pid", "process_name", "used_memory", "gpu_uuid", "gpu_bus_id", "gpu_name"})


def _split_row(line: str, width: int | None, free_text: int | None) -> list[str]:
    cells = [c.strip() for c in line.split(",")]
    if width is not None and len(cells) > width and free_text is not None:
        # nvidia-smi does not quote: a comma inside a process name makes extra cells.
        extra = len(cells) - width
        cells[free_text : free_text + extra + 1] = [", ".join(cells[free_text : free_text + extra + 1])]
    return cells


def _csv_header(line: str) -> list[str] | None:
    """Field names of a CSV header line (units dropped), or None when it is a data row."""
    names = []
    for cell in line.split(","):
        cell = cell.strip()
        match = _UNIT_RE.match(cell)
        name = match["name"] if match else cell
        if not _IDENT_RE.match(name):
            return None
        names.append(name)
    known = _KNOWN_GPU_FIELDS | _KNOWN_APPS_FIELDS
    if not any(canonical_field(n) in known or canonical_field(n, apps=True) in known for n in names):
        return None
    return names


def _is_apps(fields: Iterable[str]) -> bool:
    return "pid" in {canonical_field(f, apps=True) for f in fields}


def _parse_gpu_csv(lines: list[str], fields: list[str], out: _Parsed, dropped: Iterable[str] = ()) -> None:
    canonical = [canonical_field(f) for f in fields]
    free_text = canonical.index("name") if "name" in canonical else None
    present = set(canonical)
    for line in lines:
        cells = _split_row(line, len(fields), free_text)
        if len(cells) != len(fields):
            out.warnings.append(f"query-gpu row has {len(cells)} cells for {len(fields)} fields: {line!r}")
        gpu = _Gpu()
        for name, canon, value in zip(fields, canonical, cells):
            gpu.raw[name] = value
            if canon in _FIELD_MAP or canon == "driver_version":
                gpu.cells[canon] = value
        for name in dropped:
            canon = canonical_field(name)
            if canon not in present:
                gpu.reasons[canon] = "not a valid field for this driver"
        out.gpus.append(gpu)
        version = gpu.cells.get("driver_version")
        if version and not is_sentinel(version) and out.driver_version is None:
            out.driver_version = version


def _parse_apps_csv(lines: list[str], fields: list[str], out: _Parsed) -> None:
    canonical = [canonical_field(f, apps=True) for f in fields]
    free_text = canonical.index("process_name") if "process_name" in canonical else None
    for line in lines:
        cells = _split_row(line, len(fields), free_text)
        row = dict(zip(canonical, cells))
        out.processes.append(
            {
                "pid": row.get("pid"),
                "name": row.get("process_name"),
                "used_memory": row.get("used_memory"),
                "gpu_uuid": row.get("gpu_uuid"),
                "gpu_bus_id": row.get("gpu_bus_id"),
            }
        )


def _parse_csv(text: str, fields: tuple[str, ...] | None, out: _Parsed, dropped: Iterable[str] = ()) -> str:
    """Parse a CSV block, with or without header. Returns the kind read: csv | compute-apps | ''."""
    lines = [line for line in text.splitlines() if line.strip()]
    header = _csv_header(lines[0]) if lines else None
    if header is not None:
        field_list, lines = header, lines[1:]
    elif fields:
        field_list = list(fields)
    else:
        guessed = _guess_fields(lines)
        if guessed is None:
            if lines:
                out.warnings.append(
                    "CSV without a header row: its field list is unknown, so its columns cannot be read. "
                    "Re-run nvidia-smi with --format=csv (keeping the header), or paste the whole gputui "
                    "debug pod log, which names its fields."
                )
            return ""
        field_list = guessed
        out.warnings.append(
            "CSV without a header row: assumed gputui's debug pod field list "
            f"({','.join(guessed)}) because the column count and values match it."
        )
    if _is_apps(field_list):
        _parse_apps_csv(lines, field_list, out)
        return "compute-apps"
    _parse_gpu_csv(lines, field_list, out, dropped)
    return "csv"


def _guess_fields(lines: list[str]) -> list[str] | None:
    if not lines:
        return None
    for candidate, uuid_at in ((HEALTH_FIELDS, HEALTH_FIELDS.index("uuid")), (APPS_FIELDS, 0)):
        rows = [[c.strip() for c in line.split(",")] for line in lines]
        if all(len(r) == len(candidate) and r[uuid_at].startswith("GPU-") for r in rows):
            return list(candidate)
    return None


_LIST_GPU_RE = re.compile(r"^GPU (?P<index>\d+): (?P<name>.*?) \(UUID: (?P<uuid>[^)\s]+)\)")
_LIST_MIG_RE = re.compile(r"^\s+MIG (?P<profile>\S+)\s+Device\s+(?P<index>\d+): \(UUID: (?P<uuid>[^)\s]+)\)")


def _parse_list(text: str) -> _Parsed:
    out = _Parsed()
    current: _Gpu | None = None
    for line in text.splitlines():
        match = _LIST_GPU_RE.match(line)
        if match is not None:
            current = _Gpu(cells={"index": match["index"], "name": match["name"], "uuid": match["uuid"]})
            out.gpus.append(current)
            continue
        match = _LIST_MIG_RE.match(line)
        if match is not None and current is not None:
            index = int(match["index"])
            current.mig[index] = {
                "gpu_index": int(current.cells["index"]),
                "index": index,
                "profile": match["profile"],
                "uuid": match["uuid"],
            }
    return out


# --------------------------------------------------------------------------------------------
# Merge and build


def _same(a: _Gpu, b: _Gpu) -> bool:
    bus_a, uuid_a, index_a = a.key()
    bus_b, uuid_b, index_b = b.key()
    if bus_a and bus_b:
        return bus_a == bus_b
    if uuid_a and uuid_b:
        return uuid_a == uuid_b
    return index_a is not None and index_a == index_b


def _merge(sources: list[_Parsed]) -> _Parsed:
    """Combine formats, earlier sources first: a real value beats a "no value" sentinel, which beats
    nothing; but a failure sentinel (`[GPU is lost]`, `[GPU requires reset]`, `ERR!`, `[Unknown Error]`)
    beats any number another format printed for the same GPU and field, so a reading taken while the
    GPU still answered never hides that it stopped answering."""
    merged = _Parsed()
    for source in sources:
        merged.driver_version = merged.driver_version or source.driver_version
        merged.cuda_version = merged.cuda_version or source.cuda_version
        if source.attached is not None:
            merged.attached = max(merged.attached or 0, source.attached)
        merged.warnings.extend(source.warnings)
        merged.processes.extend(source.processes)
        for gpu in source.gpus:
            target = next((g for g in merged.gpus if _same(g, gpu)), None)
            if target is None:
                merged.gpus.append(
                    _Gpu(dict(gpu.cells), dict(gpu.raw), dict(gpu.reasons), {k: dict(v) for k, v in gpu.mig.items()})
                )
                continue
            for key, value in gpu.cells.items():
                old = target.cells.get(key)
                if is_failed_cell(old):
                    continue
                if old is None or is_failed_cell(value) or (is_sentinel(old) and not is_sentinel(value)):
                    target.cells[key] = value
            for key, value in gpu.raw.items():
                target.raw.setdefault(key, value)
            for key, value in gpu.reasons.items():
                target.reasons.setdefault(key, value)
            for index, mig in gpu.mig.items():
                slot = target.mig.setdefault(index, {})
                for key, value in mig.items():
                    if slot.get(key) is None:
                        slot[key] = value
    return merged


def _opt_int(value: Any) -> int | None:
    if value is None or isinstance(value, int):
        return value
    return _to_int(str(value))


def _build_process(proc: dict[str, Any]) -> GpuProcess:
    def text(key: str) -> str | None:
        value = proc.get(key)
        return None if value is None or is_sentinel(str(value)) or not str(value).strip() else str(value).strip()

    return GpuProcess(
        pid=_opt_int(text("pid")),
        name=text("name"),
        used_memory_mib=_opt_int(text("used_memory")),
        gpu_index=_opt_int(text("gpu_index")),
        gpu_uuid=text("gpu_uuid"),
        gpu_bus_id=text("gpu_bus_id"),
        type=text("type"),
        gpu_instance_id=_opt_int(text("gpu_instance_id")),
        compute_instance_id=_opt_int(text("compute_instance_id")),
    )


def _merge_processes(raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per pid and GPU: compute-apps gives the uuid, the table gives GI/CI and type."""
    out: list[dict[str, Any]] = []
    for proc in raw:
        twin = next(
            (
                p
                for p in out
                if p.get("pid") == proc.get("pid")
                and (p.get("gpu_uuid") is None or proc.get("gpu_uuid") is None or p["gpu_uuid"] == proc["gpu_uuid"])
            ),
            None,
        )
        if twin is None:
            out.append(dict(proc))
        else:
            for key, value in proc.items():
                if twin.get(key) is None:
                    twin[key] = value
    return out


def _build(parsed: _Parsed, warnings: list[str]) -> tuple[list[GpuRow], list[GpuProcess]]:
    rows: list[GpuRow] = []
    for gpu in parsed.gpus:
        values: dict[str, Any] = {}
        unavailable: dict[str, str] = dict(gpu.reasons)
        for canonical, (attr, convert) in _FIELD_MAP.items():
            cell = gpu.cells.get(canonical)
            if cell is None:
                continue
            if not cell.strip():
                unavailable[canonical] = "(empty)"
                continue
            if is_sentinel(cell):
                unavailable[canonical] = cell.strip()
                continue
            value = convert(cell)
            if value is None:
                unavailable[canonical] = cell.strip()
                warnings.append(f"GPU {gpu.cells.get('index', '?')}: cannot read {canonical} value {cell!r}")
                continue
            values[attr] = value
            unavailable.pop(canonical, None)
        values.setdefault("index", None)
        rows.append(
            GpuRow(
                **values,
                mig_devices=tuple(MigDevice(**_mig_fields(m)) for _, m in sorted(gpu.mig.items())),
                raw=dict(gpu.raw),
                unavailable=unavailable,
            )
        )
    processes = []
    for proc in _merge_processes(parsed.processes):
        built = _build_process(proc)
        owner = _owner(rows, built)
        if owner is not None:
            built = dataclasses.replace(
                built,
                gpu_index=built.gpu_index if built.gpu_index is not None else owner.index,
                gpu_uuid=built.gpu_uuid or owner.uuid,
                gpu_bus_id=built.gpu_bus_id or owner.bus_id,
            )
        processes.append(built)
    rows = [
        dataclasses.replace(row, processes=tuple(p for p in processes if _owner([row], p) is row))
        for row in sorted(rows, key=lambda r: (r.index is None, r.index or 0))
    ]
    return rows, processes


def _mig_fields(mig: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(MigDevice)}
    values = {k: v for k, v in mig.items() if k in names}
    for name in ("gpu_index", "index", "gpu_instance_id", "compute_instance_id"):
        values.setdefault(name, None)
    return values


def _owner(rows: list[GpuRow], proc: GpuProcess) -> GpuRow | None:
    for row in rows:
        if proc.gpu_uuid and row.uuid:
            if proc.gpu_uuid == row.uuid:
                return row
            continue
        if proc.gpu_bus_id and row.bus_id:
            if normalize_bus_id(proc.gpu_bus_id) == normalize_bus_id(row.bus_id):
                return row
            continue
        if proc.gpu_index is not None and proc.gpu_index == row.index:
            return row
    return None


# --------------------------------------------------------------------------------------------
# Entry point

_DEBUG_MARKER_RE = re.compile(r"^=== gputui:[a-z-]+.* ===\s*$", re.MULTILINE)


_LINE_PREFIXES = (
    re.compile(r"^\[pod/[^\]\s]+\] ?"),
    re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}) ?"),
    re.compile(r"^\([^()]*\bpid=\d+[^()]*\) ?"),
)
"""What log tools put before every line: `kubectl logs --prefix` (`[pod/NAME/CONTAINER] `), `kubectl logs
--timestamps` (RFC 3339, blank lines too), and Ray's `(task, pid=N) `, in the order they nest."""


def _unquote(text: str) -> str:
    """Text pasted into a ticket or chat: `> `-quoted (e-mail, Markdown), prefixed by the log tool that
    printed it, or indented as a block."""
    lines = text.splitlines()
    body = [line for line in lines if line.strip()]
    if body and all(line.lstrip().startswith(">") for line in body):
        lines = [re.sub(r"^\s*>+ ?", "", line) for line in lines]
    for prefix in _LINE_PREFIXES:
        body = [line for line in lines if line.strip()]
        if body and all(prefix.match(line) for line in body):
            lines = [prefix.sub("", line, count=1) for line in lines]
    return textwrap.dedent("\n".join(lines)) + ("\n" if text.endswith("\n") else "")


def _detect(text: str) -> str:
    if _DEBUG_MARKER_RE.search(text):
        return "debug-pod"
    commands = [s for s in capture_sections(text) if s.command and s.command.startswith("nvidia-smi")]
    if commands:
        return "capture"
    if "NVSMI LOG" in text or re.search(r"^Attached GPUs\s+:", text, re.MULTILINE):
        return "query"
    if re.search(r"\|\s*GPU\s+Name\b|NVIDIA-SMI \d|^\|\s*Processes:", text, re.MULTILINE):
        return "table"
    if _LIST_GPU_RE.search(text) or re.search(r"^GPU \d+: .*\(UUID:", text, re.MULTILINE):
        return "list"
    lines = [line for line in text.splitlines() if line.strip()]
    if lines and any(_XID_RE.search(line) for line in lines):
        return "kernel-log"  # dmesg lines have commas, but they are no CSV
    if lines and (_csv_header(lines[0]) is not None or _looks_like_rows(lines)):
        return "csv"
    return "text" if text.strip() else "empty"


def _looks_like_rows(lines: list[str]) -> bool:
    """nvidia-smi CSV rows, not prose with commas: every line has the same number of cells, and some
    cell is a number, a sentinel or a GPU UUID."""
    widths = {line.count(",") for line in lines}
    if len(widths) != 1 or 0 in widths:
        return False
    cells = [c.strip() for line in lines for c in line.split(",")]
    return any(_number(c) is not None or is_sentinel(c) or c.startswith("GPU-") for c in cells)


def _parse_one(kind: str, text: str, fields: tuple[str, ...] | None = None, dropped: Iterable[str] = ()) -> _Parsed:
    if kind in ("nvidia-smi", "table"):
        return _parse_table(text)
    if kind == "query":
        return _parse_query(text)
    if kind == "list":
        return _parse_list(text)
    if kind in ("csv", "query-gpu", "query-compute-apps", "compute-apps"):
        out = _Parsed()
        out.kind = _parse_csv(text, fields, out, dropped)
        return out
    return _Parsed()


def _guarded(kind: str, text: str, fields: tuple[str, ...] | None = None, dropped: Iterable[str] = ()) -> _Parsed:
    try:
        return _parse_one(kind, text, fields, dropped)
    except Exception as exc:  # noqa: BLE001 - a parser bug must not take the TUI down
        out = _Parsed()
        out.warnings.append(f"internal parser error in {kind}: {type(exc).__name__}: {exc}")
        return out


# Order of trust when formats disagree: the CSV is exact (no rounding, no truncated names).
# Processes: compute-apps names are never truncated, so it goes before the table.
_PRIORITY = ("query-gpu", "query", "query-compute-apps", "nvidia-smi", "list")


def parse(text: str) -> GpuReport:
    """Read any nvidia-smi output gputui meets; never raises."""
    text = _unquote(text if isinstance(text, str) else str(text))
    kind = _detect(text)
    failures: list[SmiFailure] = []
    exit_codes: dict[str, int | None] = {}
    warnings: list[str] = []
    complete = True

    if kind == "debug-pod":
        log = read_log(text)
        complete = log.complete
        if not complete:
            warnings.append("debug pod log has no end marker: the pod was killed or is still running")
        if log.preamble:
            failures.extend(_scan_failures(log.preamble, None, None))
        exit_codes = {name: section.exit_code for name, section in log.sections.items()}
        parts: list[_Parsed] = []
        for section in sorted(log.sections.values(), key=lambda s: _rank(s.name)):
            failures.extend(_scan_failures(section.text, section.name, section.exit_code))
            body = section.text
            if section.name in ("query-gpu", "query-compute-apps"):
                # A failing query prints its error instead of (or between) the CSV rows.
                body = _csv_lines_only(body, len(section.fields) if section.exit_code not in (None, 0) else None)
            parts.append(_guarded(section.name, body, section.fields or None, section.dropped))
        parsed = _merge(parts)
    elif kind == "capture":
        parsed = _merge(_parse_capture(text))
        failures.extend(_scan_failures(text, None, None))
    else:
        single = _guarded(kind, text)
        parsed = _merge([single])
        failures.extend(_scan_failures(text, None, None))
        if kind == "csv":
            kind = single.kind or "csv"
        elif kind in ("text", "kernel-log") and not failures:
            warnings.append("no nvidia-smi output recognised in the input")

    warnings.extend(parsed.warnings)
    gpus, processes = _build(parsed, warnings)
    failures = _dedup_failures(failures)
    xids = tuple(dict.fromkeys(
        KernelXid(m["bus"], int(m["xid"]), m.group(0).strip()) for m in map(_XID_RE.search, text.splitlines()) if m))
    return GpuReport(
        source_format=kind,
        gpus=tuple(gpus),
        driver_version=parsed.driver_version,
        cuda_version=parsed.cuda_version,
        processes=tuple(processes),
        errors=tuple(dict.fromkeys(f.message for f in failures)),
        failures=tuple(failures),
        exit_codes=exit_codes,
        warnings=tuple(dict.fromkeys(warnings)),
        complete=complete,
        attached_gpus=parsed.attached,
        xids=xids,
    )


def _csv_lines_only(text: str, width: int | None) -> str:
    """Drop nvidia-smi failure messages; with `width`, also lines that are not rows of that width."""
    keep = []
    for line in text.splitlines():
        if _scan_failures(line, None, None):
            continue
        if width is not None and (width == 0 or len(line.split(",")) != width):
            continue
        keep.append(line)
    return "\n".join(keep)


def _rank(name: str) -> int:
    return _PRIORITY.index(name) if name in _PRIORITY else len(_PRIORITY)


def _parse_capture(text: str) -> list[_Parsed]:
    """A capture bundle (`# $ nvidia-smi ...` headed blocks): the last block of each format."""
    latest: dict[str, Section] = {}
    for section in capture_sections(text):
        command = (section.command or "").split()
        if command[:1] != ["nvidia-smi"]:
            continue
        args = command[1:]
        if not args:
            latest["nvidia-smi"] = Section("nvidia-smi", section.body, 0)
        elif args == ["-q"]:
            latest["query"] = Section("query", section.body, 0)
        elif args == ["-L"]:
            latest["list"] = Section("list", section.body, 0)
        elif args[0].startswith("--query-gpu="):
            latest["query-gpu"] = Section("query-gpu", section.body, 0)
        elif args[0].startswith("--query-compute-apps="):
            latest["query-compute-apps"] = Section("query-compute-apps", section.body, 0)
    return [_guarded(s.name, s.text) for s in sorted(latest.values(), key=lambda s: _rank(s.name))]


def _dedup_failures(failures: list[SmiFailure]) -> list[SmiFailure]:
    """The same failure printed by every section counts once (first section wins)."""
    seen: set[tuple[str, str | None]] = set()
    out = []
    for failure in failures:
        key = (failure.code, normalize_bus_id(failure.bus_id) or failure.bus_id)
        if key not in seen:
            seen.add(key)
            out.append(failure)
    return out


def to_json(report: GpuReport) -> dict[str, Any]:
    """Plain JSON-ready dict (lists, not tuples) of a report."""

    def convert(value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: convert(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, (list, tuple)):
            return [convert(v) for v in value]
        if isinstance(value, dict):
            return {str(k): convert(v) for k, v in value.items()}
        return value

    result: dict[str, Any] = convert(report)
    return result
