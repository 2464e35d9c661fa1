"""Health flags from a parsed nvidia-smi report: broken driver/NVML, lost GPUs, ECC and memory repair, PCIe."""

from __future__ import annotations

from diagnostics.facts.gpu_count import COUNT_LABELS
from diagnostics.facts.xid import lookup as xid_lookup
from diagnostics.gpu_health import FlagSeverity as Severity
from diagnostics.gpu_health import HealthFlag
from gputui.debugpod.capture import EXIT_MEANINGS
from gputui.debugpod.nvidia_smi.cells import ERROR_CELLS, has_value, is_failed_cell, normalize_bus_id, printed
from gputui.debugpod.nvidia_smi.report import GpuReport, GpuRow, KernelXid, SmiFailure

__all__ = ["ASPECTS", "HealthFlag", "Severity", "coverage_flags", "health_flags", "not_shown"]

_RANK = {"critical": 0, "error": 1, "warning": 2}


_NVML_ROUTE = (
    "the container's device cgroup does not let the debug pod open /dev/nvidiactl, so the "
    "NVIDIA_VISIBLE_DEVICES route (runtime injection without a GPU request) is blocked on this node. "
    "Re-run the debug pod with `runtimeClassName: nvidia` (GPU Operator) or as a privileged pod "
    "running `chroot /host nvidia-smi`. If workload pods print the same after running fine, a "
    "`systemctl daemon-reload` reset their device cgroups (NVIDIA/nvidia-docker#1730): restart them."
)

# failure code -> (flag code, severity, explanation); the exact nvidia-smi text is prepended.
_FAILURES: dict[str, tuple[str, Severity, str]] = {
    "driver-not-loaded": (
        "driver-not-loaded",
        "critical",
        "nvidia-smi cannot talk to the NVIDIA kernel driver (exit 9: driver not loaded). The module is "
        "missing or failed to load: a kernel upgraded without a DKMS rebuild, a bad AMI, or the GPU "
        "Operator's nvidia-driver-daemonset pod not ready on this node. No GPU pod can start here: "
        "cordon and drain the node, then fix the driver or replace the node.",
    ),
    "driver-library-mismatch": (
        "driver-library-mismatch",
        "critical",
        "The loaded kernel module and the user-space NVML library are different versions (the driver "
        "was upgraded without a reboot). Drain and reboot the node.",
    ),
    "nvml-unknown-error": ("nvml-init-failure", "error", "NVML could not initialise: " + _NVML_ROUTE),
    "nvml-insufficient-permissions": ("nvml-init-failure", "error", "NVML was refused access: " + _NVML_ROUTE),
    "nvml-init-failed": (
        "nvml-init-failure",
        "error",
        "NVML could not initialise on this node; the driver or its device files are not usable.",
    ),
    "gpu-lost": (
        "gpu-lost",
        "critical",
        "The GPU fell off the bus (nvidia-smi exit 15, kernel Xid 79): it is unusable until the node "
        "reboots. Drain the node and reboot it; if it happens again, replace the instance.",
    ),
    "device-handle-error": (
        "gpu-inaccessible",
        "error",
        "nvidia-smi cannot open this GPU. Check the kernel log for Xid errors; a reset or reboot is "
        "usually needed.",
    ),
    "no-devices": (
        "no-devices",
        "error",
        "nvidia-smi sees no GPU: the container got no /dev/nvidia* device nodes (runtime injection "
        "refused or not configured), or on the host every GPU is unbound from the driver. Compare "
        "with the node's nvidia.com/gpu capacity.",
    ),
    "nvml-library-missing": (
        "nvml-library-missing",
        "error",
        "libnvidia-ml.so is missing in the debug pod (exit 12): the NVIDIA container runtime did not "
        "inject the driver libraries. Use `runtimeClassName: nvidia` or the privileged `chroot /host` route.",
    ),
    "inforom-corrupted": (
        "inforom-corrupted",
        "error",
        "The GPU's infoROM is corrupted (nvidia-smi warns so, or exits 14): its ECC and page-retirement "
        "records cannot be trusted; NVIDIA's GPU Operator guidance is to replace the GPU.",
    ),
    "internal-error": (
        "nvidia-smi-internal-error",
        "error",
        "nvidia-smi hit an internal driver error (exit 255). Check the kernel log for Xid errors; "
        "a GPU reset or node reboot is usually needed.",
    ),
    "timeout": (
        "nvidia-smi-timeout",
        "error",
        "nvidia-smi did not answer in time. A hung nvidia-smi usually means a GPU fell off the bus or "
        "the driver is wedged: check the kernel log for Xid 79 and reboot the node.",
    ),
    "nvidia-smi-not-found": (
        "nvidia-smi-not-found",
        "warning",
        "The debug pod has no nvidia-smi: the NVIDIA runtime did not inject it and none was found "
        "under /host. This says nothing about the GPUs; use the privileged debug pod route.",
    ),
}

_HW_SLOWDOWN = 0x8 | 0x40 | 0x80
_SW_THERMAL = 0x20
BUSY_PCT = 50
"""Utilisation at or above which a PCIe generation below the maximum is a fault: an idle GPU's link
trains down to save power (Gen1 at idle is normal), a busy one's must not."""


def health_flags(report: GpuReport, expected: int | None = None, expected_from: str = "") -> list[HealthFlag]:
    """Every health problem the report shows, worst first.

    `expected`: how many GPUs the node has (diagnostics.facts.gpu_count); fewer listed is a flag
    naming the missing ones, so a node that lost GPUs is never "healthy" for the ones still there.
    """
    flags: list[HealthFlag] = []
    by_bus = {normalize_bus_id(g.bus_id): g.index for g in report.gpus if g.bus_id}
    for failure in report.failures:
        flag = _failure_flag(failure, by_bus)
        if flag is not None:
            flags.append(flag)
    for gpu in report.gpus:
        flags.extend(_gpu_flags(gpu))
    for xid in report.xids:
        flags.append(_xid_flag(xid, by_bus))
    if expected:
        flag = count_flag(report, expected, expected_from)
        if flag is not None:
            flags.append(flag)
    flags.extend(coverage_flags(report, flags))
    unique = list(dict.fromkeys(flags))
    unique.sort(key=lambda f: (_RANK[f.severity], f.gpu_index is not None, f.gpu_index or 0))
    return unique


ASPECTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("uncorrectable ECC errors", ("ecc.errors.uncorrected.volatile.total",)),
    ("remapped rows", ("remapped_rows.pending", "remapped_rows.failure")),
    ("retired pages", ("retired_pages.pending",)),
    ("reset required", ("reset_status.reset_required", "reset_status.drain_and_reset_recommended",
                        "gpu_recovery_action")),
)
"""What a health verdict must have seen for every GPU, each with the fields that show it. `nvidia-smi -q` and the
debug pod's CSV print them all (`[N/A]` where a GPU has none: an A100 retires no pages); the default table
prints only the ECC count. Xids are in the kernel log, never in nvidia-smi's output: what an unrecovered Xid
leaves behind is `Reset Required` / `gpu_recovery_action`, a `[GPU requires reset]` or `ERR!` cell, or a GPU
missing from the list."""
HEALTH_VALUES: tuple[str, ...] = (
    "temperature.gpu", "power.draw", "clocks_event_reasons.active", "memory.channel_repair_pending",
    "memory.unrepairable", *(f for _name, fields in ASPECTS for f in fields))
"""Fields a GPU's health is read from: a GPU with none of them read has an unknown health."""
_INPUT_NAMES = {"table": "the default nvidia-smi table", "query": "this nvidia-smi -q",
                "debug-pod": "this debug pod's output", "capture": "this capture"}


def not_shown(report: GpuReport) -> list[str]:
    """ASPECTS the input did not print for every GPU it lists (the default table: all but the ECC count)."""
    return [name for name, fields in ASPECTS
            if report.gpus and not all(any(printed(g, f) for f in fields) for g in report.gpus)]


def coverage_flags(report: GpuReport, flags: list[HealthFlag]) -> list[HealthFlag]:
    """Warnings for what the reading could not see, so it is never taken for an all-clear: a GPU none of whose
    health values nvidia-smi could read (every one `[N/A]` or `[Insufficient Permissions]`), and ASPECTS the
    input does not show at all. A GPU already flagged for a failed cell (ERR!, lost) needs no second word."""
    out: list[HealthFlag] = []
    failing = {f.gpu_index for f in flags if f.code in ("gpu-error-state", "gpu-lost", "gpu-requires-reset")}
    for gpu in report.gpus:
        if gpu.index in failing or any(has_value(gpu, f) for f in HEALTH_VALUES):
            continue
        cells = {f: gpu.unavailable[f] for f in HEALTH_VALUES if f in gpu.unavailable}
        if not cells or any(is_failed_cell(v) for v in cells.values()):
            continue  # nothing printed at all (a list, not a reading), or a failure flagged elsewhere
        label = f"GPU {gpu.index}" if gpu.index is not None else f"GPU {gpu.bus_id or gpu.uuid or '?'}"
        said = ", ".join(dict.fromkeys(cells.values()))
        out.append(HealthFlag(
            gpu.index, "health-unreadable", "warning",
            f"{label}: nvidia-smi could not read its health: every health value is {said} ({', '.join(cells)}). "
            "Its state is unknown, not healthy: run nvidia-smi as root on the node (`gputui debug node/NAME "
            "--privileged`), where NVML may read what this run could not.",
            next(iter(cells)), next(iter(cells.values()))))
    missing = not_shown(report)
    if missing:
        what = _INPUT_NAMES.get(report.source_format, f"this nvidia-smi output ({report.source_format})")
        how = ("its --query-gpu section did not give them (it failed, or this driver does not know the fields): "
               "look at the section's exit above" if report.source_format == "debug-pod" else
               "attach `nvidia-smi -q` of the node, or run `gputui debug node/NAME`, which reads them all")
        out.append(HealthFlag(
            None, "health-not-shown", "warning",
            f"{what} does not show {', '.join(missing)}: no verdict on them; {how}.",
            "not shown", ", ".join(missing)))
    return out


def missing_gpus(report: GpuReport, expected: int) -> tuple[list[int], list[str]]:
    """(indexes, bus ids) of the GPUs nvidia-smi did not list: indexes it never printed a row for, and
    the bus ids of GPUs it named only in a failure (`Unable to determine the device handle ...`)."""
    listed = {g.index for g in report.gpus if g.index is not None}
    buses = {normalize_bus_id(g.bus_id) for g in report.gpus if g.bus_id}
    failed = [f for f in report.failures if f.bus_id and normalize_bus_id(f.bus_id) not in buses
              and f.code in ("gpu-lost", "device-handle-error")]
    indexes = sorted(set(range(expected)) - listed) if len(listed) == len(report.gpus) else []
    return indexes, list(dict.fromkeys(str(normalize_bus_id(f.bus_id)) for f in failed))


def count_flag(report: GpuReport, expected: int, expected_from: str = "") -> HealthFlag | None:
    """A flag when nvidia-smi lists fewer GPUs than the node has, naming the missing ones."""
    seen = len(report.gpus)
    if seen >= expected or not seen:
        return None  # none at all is a failure of its own (nothing was read), not a count
    indexes, buses = missing_gpus(report, expected)
    which = []
    if indexes:
        which.append(("GPU " if len(indexes) == 1 else "GPUs ") + ", ".join(str(i) for i in indexes))
    if buses:
        which.append("bus id " + ", ".join(buses))
    named = f" (missing: {'; '.join(which)})" if which else ""
    where = f" ({expected_from})" if expected_from else ""
    return HealthFlag(
        indexes[0] if len(indexes) == 1 else None,
        "gpus-missing",
        "error",
        f"nvidia-smi lists {seen} of the {expected} GPUs this node has{where}{named}: a GPU that fell off the "
        "bus or was unbound from the driver is invisible to nvidia-smi, and every health reading above is "
        "only for the GPUs it could see. Drain the node and replace it (or reboot it once to confirm).",
        "gpus",
        f"{seen}/{expected}",
    )



def count_unknown_flag(report: GpuReport, node: str) -> HealthFlag:
    """A warning when nothing says how many GPUs the node has: a GPU that fell off the bus is simply absent
    from nvidia-smi's list, so the listed ones being fine cannot clear the node (exit 4, never a bare ✓)."""
    seen = len(report.gpus)
    return HealthFlag(
        None,
        "gpu-count-unknown",
        "warning",
        f"nothing on {node} says how many GPUs it has (no {', '.join(COUNT_LABELS)} label, and its instance "
        f"type is not one gputui knows), so a GPU missing from nvidia-smi's list of {seen} could not be "
        "noticed: the health above covers only the GPUs listed. Count the NVIDIA devices on its PCIe bus "
        "(`lspci -d 10de:` on the host) or label the node with GPU Feature Discovery (nvidia.com/gpu.count).",
        "gpus",
        f"{seen}/?",
    )

def _xid_flag(xid: KernelXid, by_bus: dict[str | None, int | None]) -> HealthFlag:
    known = xid_lookup(xid.code)
    severity: Severity = ("critical" if known.bucket == "RESTART_BM" else "error") if known.drain else "warning"
    return HealthFlag(
        by_bus.get(normalize_bus_id(xid.bus_id)),
        "kernel-xid",
        severity,
        f"kernel log: Xid {xid.code} on {xid.bus_id} ({known.meaning}): {known.action}.",
        "dmesg",
        xid.message,
    )


def _failure_flag(failure: SmiFailure, by_bus: dict[str | None, int | None]) -> HealthFlag | None:
    spec = _FAILURES.get(failure.code)
    gpu_index = by_bus.get(normalize_bus_id(failure.bus_id)) if failure.bus_id else None
    if gpu_index is None:
        gpu_index = failure.gpu_index
    where = f" ({failure.bus_id})" if failure.bus_id else ""
    if spec is None:
        if failure.code == "invalid-field" or failure.exit_code in (None, 0):
            return None  # gputui's own query problem, not the GPU's
        meaning = EXIT_MEANINGS.get(failure.exit_code, "unknown exit code")
        return HealthFlag(
            gpu_index,
            "nvidia-smi-failed",
            "error",
            f"nvidia-smi exited {failure.exit_code} ({meaning}): {failure.message}",
            failure.section or "nvidia-smi",
            failure.message,
        )
    code, severity, explanation = spec
    said = f"`{failure.message}`{where}. " if failure.verbatim else ""
    return HealthFlag(
        gpu_index,
        code,
        severity,
        f"{said}{explanation}",
        failure.section or "nvidia-smi",
        failure.message,
    )


def _gpu_flags(gpu: GpuRow) -> list[HealthFlag]:
    i = gpu.index
    label = f"GPU {i}" if i is not None else f"GPU {gpu.bus_id or gpu.uuid or '?'}"
    out: list[HealthFlag] = []
    if gpu.ecc_uncorrected_volatile:
        out.append(
            HealthFlag(
                i,
                "ecc-uncorrected",
                "error",
                f"{label} has {gpu.ecc_uncorrected_volatile} uncorrectable ECC error(s) since the driver "
                "loaded: jobs on it can crash or compute wrong results. Drain the node and reset the GPU; "
                "replace it if errors come back.",
                "ecc.errors.uncorrected.volatile.total",
                str(gpu.ecc_uncorrected_volatile),
            )
        )
    for mig in gpu.mig_devices:
        if mig.ecc_uncorrected_volatile:
            out.append(
                HealthFlag(
                    i,
                    "ecc-uncorrected",
                    "error",
                    f"{label} MIG device {mig.index} ({mig.profile or 'GI ' + str(mig.gpu_instance_id)}) has "
                    f"{mig.ecc_uncorrected_volatile} uncorrectable ECC error(s). Drain the node and reset the GPU.",
                    f"mig[{mig.index}].ecc.errors.uncorrected.volatile",
                    str(mig.ecc_uncorrected_volatile),
                )
            )
    if gpu.remapped_rows_failure:
        out.append(
            HealthFlag(
                i,
                "row-remap-failure",
                "critical",
                f"{label}: row remapping failed, its memory can no longer be repaired. Replace the GPU "
                "(RMA candidate); drain the node now.",
                "remapped_rows.failure",
                "Yes",
            )
        )
    if gpu.remapped_rows_pending:
        out.append(
            HealthFlag(
                i,
                "row-remap-pending",
                "warning",
                f"{label} has a row remap pending: it is applied at the next GPU reset (or node reboot). Until "
                "then error containment and dynamic page offlining keep the bad row out of use, so running and "
                "new jobs are not affected: reset the GPU when it is next free.",
                "remapped_rows.pending",
                "Yes",
            )
        )
    if gpu.retired_pages_pending:
        out.append(
            HealthFlag(
                i,
                "retired-pages-pending",
                "error",
                f"{label} has memory pages waiting to be retired: reset the GPU (or reboot the node) to "
                "retire them.",
                "retired_pages.pending",
                "Yes",
            )
        )
    if gpu.pcie_width_current is not None and gpu.pcie_width_max is not None:
        if gpu.pcie_width_current < gpu.pcie_width_max:
            out.append(
                HealthFlag(
                    i,
                    "pcie-link-degraded",
                    "warning",
                    f"{label} PCIe link runs at x{gpu.pcie_width_current} of x{gpu.pcie_width_max}: a degraded "
                    "link (slot, riser or GPU) cuts host<->GPU bandwidth. Replace the instance if it persists.",
                    "pcie.link.width.current",
                    str(gpu.pcie_width_current),
                )
            )
    if (gpu.pcie_gen_current is not None and gpu.pcie_gen_max is not None and gpu.pcie_gen_current < gpu.pcie_gen_max
            and gpu.utilization_pct is not None and gpu.utilization_pct >= BUSY_PCT):
        out.append(
            HealthFlag(
                i,
                "pcie-gen-downgraded",
                "warning",
                f"{label} PCIe link runs at Gen{gpu.pcie_gen_current} of Gen{gpu.pcie_gen_max} while {gpu.utilization_pct} % "
                "busy: at idle the link trains down to save power, under load it should not. A link stuck at a "
                "lower generation (riser, slot, retimer) starves the GPU of host bandwidth; replace the instance "
                "if it persists.",
                "pcie.link.gen.current",
                str(gpu.pcie_gen_current),
            )
        )
    if gpu.unrepairable_memory:
        out.append(
            HealthFlag(
                i,
                "memory-unrepairable",
                "critical",
                f"{label}: the driver reports memory it can no longer repair (Unrepairable Memory: Yes). Replace "
                "the GPU (RMA candidate); drain the node now.",
                "memory.unrepairable",
                "Yes",
            )
        )
    if gpu.channel_repair_pending:
        out.append(
            HealthFlag(
                i,
                "memory-repair-pending",
                "error",
                f"{label} has a memory channel repair pending: reset the GPU (or reboot the node) to apply it; "
                "until then the faulty memory stays in use.",
                "memory.channel_repair_pending",
                "Yes",
            )
        )
    reset_field = next((f for f, v in (("reset_status.reset_required", gpu.reset_required),
                                       ("reset_status.drain_and_reset_recommended", gpu.drain_and_reset)) if v), None)
    if reset_field is not None:
        out.append(
            HealthFlag(
                i,
                "gpu-requires-reset",
                "error",
                f"{label} needs a GPU reset before it can be trusted again (nvidia-smi: "
                f"{'Reset Required' if reset_field.endswith('required') else 'Drain and Reset Recommended'}: Yes): an "
                "unrecoverable error occurred. Drain the node, then reset the GPU or reboot the node.",
                reset_field,
                "Yes",
            )
        )
    if gpu.recovery_action and gpu.recovery_action.lower() != "none":
        out.append(
            HealthFlag(
                i,
                "recovery-action",
                "error",
                f"{label}: the driver asks for recovery action '{gpu.recovery_action}' (pairs with Xid 154).",
                "gpu_recovery_action",
                gpu.recovery_action,
            )
        )
    mask = gpu.clocks_event_reasons
    if mask is not None and mask & (_HW_SLOWDOWN | _SW_THERMAL):
        kinds = [
            name
            for bit, name in ((0x8, "HW slowdown"), (0x40, "HW thermal"), (0x80, "HW power brake"), (0x20, "SW thermal"))
            if mask & bit
        ]
        out.append(
            HealthFlag(
                i,
                "clocks-slowdown",
                "warning",
                f"{label} clocks are being cut ({', '.join(kinds)}): check cooling and power.",
                "clocks_event_reasons.active",
                f"0x{mask:016X}",
            )
        )
    seen: set[str] = set()
    if reset_field is not None:
        seen.add("gpu requires reset")
    failed = {f: r for f, r in gpu.unavailable.items() if r.strip("[]").lower() in ERROR_CELLS}
    if failed and (len(failed) > 1 or "fan.speed" in failed or any(r.upper() == "ERR!" for r in failed.values())):
        # ERR! (the table) or several unreadable values: the GPU itself is failing, one flag for it.
        names = ", ".join(failed)
        out.append(
            HealthFlag(
                i,
                "gpu-error-state",
                "error",
                f"{label}: nvidia-smi cannot read {names} ({', '.join(dict.fromkeys(failed.values()))}): the GPU is in "
                "an error state (usually after an Xid: fallen off the bus, a fan or power fault). Check the kernel "
                "log for Xid errors, drain the node and reset the GPU or reboot the node.",
                next(iter(failed)),
                next(iter(failed.values())),
            )
        )
        failed = {}
    for field_name, reason in gpu.unavailable.items():
        text = reason.strip("[]").lower()
        if text in ERROR_CELLS:
            if field_name in failed:
                out.append(
                    HealthFlag(
                        i,
                        "unreadable-field",
                        "warning",
                        f"{label}: nvidia-smi could not read {field_name} ({reason}).",
                        field_name,
                        reason,
                    )
                )
            continue
        if text in seen:
            continue  # one reset/lost flag per GPU, however many cells say so
        seen.add(text)
        if text == "gpu requires reset":
            out.append(
                HealthFlag(
                    i,
                    "gpu-requires-reset",
                    "error",
                    f"{label} needs a GPU reset before it can be used (nvidia-smi printed {reason}).",
                    field_name,
                    reason,
                )
            )
        elif text == "gpu is lost":
            out.append(
                HealthFlag(
                    i,
                    "gpu-lost",
                    "critical",
                    f"{label} is lost ({reason} in {field_name}): drain the node and reboot it.",
                    field_name,
                    reason,
                )
            )
    return out
