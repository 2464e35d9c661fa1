"""NVIDIA Xid codes: meaning, NVIDIA's resolution bucket and the on-call action gputui suggests.

Buckets come from NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html)
as encoded in NVIDIA/NVSentinel's xiderrorsmapping.csv; `drain` marks the Xids NVIDIA classes as
fatal (the GPU needs a reset or the node a reboot), which is what raises a finding to critical.
"""

from __future__ import annotations

from dataclasses import dataclass

APP_XIDS = frozenset({13, 31, 43, 45, 68, 109})
"""Xids NVIDIA's k8s-device-plugin always ignores as application errors (the GPU stays healthy)."""


@dataclass(frozen=True, slots=True)
class Xid:
    code: int
    meaning: str
    bucket: str
    """NVIDIA's resolution bucket: RESTART_APP, RESET_GPU, RESTART_BM, IGNORE, WORKFLOW_*, ..."""
    drain: bool
    """True when the GPU must be taken out of service (drain, then reset the GPU or reboot the node)."""
    action: str

    @property
    def is_app_error(self) -> bool:
        return self.code in APP_XIDS

    @property
    def rank(self) -> int:
        """Worse is higher: node reboot > GPU reset > other > application error."""
        if self.drain:
            return 3 if self.bucket == "RESTART_BM" else 2
        return 0 if self.is_app_error else 1


def _x(code: int, meaning: str, bucket: str, drain: bool, action: str) -> Xid:
    return Xid(code, meaning, bucket, drain, action)


_DRAIN_RESET = "drain the node, reset the GPU (reboot the node if the reset fails)"
_NVLINK5 = "NVLink5 error (Blackwell SAW/RLW/TLW/TREX/NVLPW/NETIR/MSE)"

XIDS: dict[int, Xid] = {x.code: x for x in (
    _x(8, "FIFO idle timeout: the GPU stopped processing", "RESTART_APP", False,
       "restart the job; if it repeats on this GPU, investigate the GPU"),
    _x(13, "graphics engine exception (illegal instruction or out-of-bounds access in a kernel)", "RESTART_APP",
       False, "usually a bug in the job's code: restart it; escalate only if many jobs fail on this GPU"),
    _x(31, "MMU fault (GPU memory page fault)", "RESTART_APP", False,
       "restart the job (user or driver bug); escalate if it recurs on this GPU"),
    _x(32, "PBDMA error (corrupted push buffer or bad DMA)", "RESTART_APP", False, "restart the job"),
    _x(43, "channel reset after the GPU stopped processing", "IGNORE", False,
       "informational: look at the Xid 13/31 that preceded it"),
    _x(45, "channel torn down after an earlier error or a killed process", "WORKFLOW_XID_45", False,
       "look at the Xid that preceded it"),
    _x(46, "GPU timeout error", "RESET_GPU", True, _DRAIN_RESET),
    _x(48, "double-bit (uncorrectable) ECC error", "WORKFLOW_XID_48", True,
       "drain the node, check retired pages / remapped rows, reset the GPU; if it repeats, RMA the GPU"),
    _x(61, "internal micro-controller breakpoint (PMU)", "UNEXPECTED_ERR_REPORT_ISSUE", True,
       "drain the node, reset the GPU and collect an nvidia-bug-report"),
    _x(62, "internal micro-controller halt (PMU)", "RESET_GPU", True, _DRAIN_RESET),
    _x(63, "row remapping / page retirement recorded", "IGNORE", False,
       "schedule a GPU reset or node reboot to activate the remap; watch remapped_rows.pending"),
    _x(64, "row remapping / page retirement failed", "RESET_GPU", True,
       "drain the node and reset the GPU; if remapped_rows.failure=Yes, RMA the GPU"),
    _x(74, "NVLink error", "WORKFLOW_NVLINK_ERR", True,
       "drain the node, check NVLink status and the fabric manager, reset; if it repeats, RMA the GPU/baseboard"),
    _x(79, "GPU has fallen off the bus", "RESTART_BM", True,
       "cordon and drain the node, then reboot it (or let Karpenter replace it); if it repeats, it is "
       "hardware (PCIe, riser, power): RMA"),
    _x(92, "excessive single-bit ECC interrupts", "IGNORE", False, "monitor: trend the corrected ECC counts"),
    _x(94, "contained ECC error (only the affected application)", "RESTART_APP", False,
       "restart the job; the GPU stays usable, reset it later if a row remap is pending"),
    _x(95, "uncontained ECC error (every application on the GPU)", "RESET_GPU", True, _DRAIN_RESET),
    _x(109, "context-switch timeout", "RESET_GPU", False,
       "restart the job; if it repeats, drain the node and reset the GPU"),
    _x(119, "GSP RPC timeout (GSP firmware not responding)", "RESET_GPU", True, _DRAIN_RESET),
    _x(120, "GSP error", "RESET_GPU", True, _DRAIN_RESET),
    _x(123, "SPI PMU RPC write failure", "UNEXPECTED_ERR_REPORT_ISSUE", True,
       "drain the node, reset the GPU and report the issue to NVIDIA"),
    _x(136, "NVLink link training failed", "RESET_GPU", True, _DRAIN_RESET),
    _x(140, "unrecoverable ECC error escaped containment", "RESET_GPU", True, _DRAIN_RESET),
    _x(143, "GPU initialisation error", "RESET_GPU", True, _DRAIN_RESET),
    *(_x(c, _NVLINK5, "WORKFLOW_NVLINK5_ERR", True, "drain the node and follow NVIDIA's NVLink5 workflow")
      for c in range(144, 151)),
    _x(154, "GPU recovery action changed", "WORKFLOW", False,
       "read gpu_recovery_action in nvidia-smi and follow the Xid it refers to"),
    _x(155, "NVLink software-defined error", "RESET_GPU", True, _DRAIN_RESET),
    _x(156, "resource retirement event", "RESET_GPU", True, _DRAIN_RESET),
    _x(158, "fatal timeout", "RESET_GPU", True, _DRAIN_RESET),
)}


def lookup(code: int) -> Xid:
    """The table row, or a generic one that sends the reader to NVIDIA's catalog."""
    known = XIDS.get(code)
    if known is not None:
        return known
    return Xid(code, "not in gputui's table", "UNKNOWN", False,
               f"look up Xid {code} in NVIDIA's Xid catalog "
               "(https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html)")
