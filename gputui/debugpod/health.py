"""Health flags from a parsed nvidia-smi report: broken driver/NVML, lost GPUs, ECC and memory repair, PCIe."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gputui.debugpod.capture import EXIT_MEANINGS
from gputui.debugpod.nvidia_smi import GpuReport, GpuRow, SmiFailure, normalize_bus_id

__all__ = ["HealthFlag", "Severity", "health_flags"]

Severity = Literal["warning", "error", "critical"]
_RANK = {"critical": 0, "error": 1, "warning": 2}


@dataclass(frozen=True, slots=True)
class HealthFlag:
    """One problem on one GPU (or the node's driver when `gpu_index` is None), with what to do."""

    gpu_index: int | None
    code: str
    severity: Severity
    message: str
    field: str | None = None
    """The nvidia-smi field (or `nvidia-smi`/section name for failures) the flag was read from."""
    value: str | None = None
    """The value as nvidia-smi printed it (or its failure message)."""


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
        "The GPU's infoROM is corrupted (exit 14); NVIDIA's GPU Operator guidance is to replace the GPU.",
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


def health_flags(report: GpuReport) -> list[HealthFlag]:
    """Every health problem the report shows, worst first."""
    flags: list[HealthFlag] = []
    by_bus = {normalize_bus_id(g.bus_id): g.index for g in report.gpus if g.bus_id}
    for failure in report.failures:
        flag = _failure_flag(failure, by_bus)
        if flag is not None:
            flags.append(flag)
    for gpu in report.gpus:
        flags.extend(_gpu_flags(gpu))
    unique = list(dict.fromkeys(flags))
    unique.sort(key=lambda f: (_RANK[f.severity], f.gpu_index is not None, f.gpu_index or 0))
    return unique


def _failure_flag(failure: SmiFailure, by_bus: dict[str | None, int | None]) -> HealthFlag | None:
    spec = _FAILURES.get(failure.code)
    gpu_index = by_bus.get(normalize_bus_id(failure.bus_id)) if failure.bus_id else None
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
                "error",
                f"{label} has a row remap pending: reset the GPU (or reboot the node) to apply it; until "
                "then the faulty memory row stays in use.",
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
    for field_name, reason in gpu.unavailable.items():
        text = reason.strip("[]").lower()
        if text in seen and text not in ("unknown error", "err!"):
            continue  # one reset/lost flag per GPU, however many cells say so
        seen.add(text)
        if text in ("unknown error", "err!"):
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
        elif text == "gpu requires reset":
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
