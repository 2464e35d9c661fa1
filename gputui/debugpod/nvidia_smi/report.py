"""What a parse of nvidia-smi output gives: the GPUs, their processes, failures and kernel Xids."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

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
