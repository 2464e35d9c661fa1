"""nvidia-smi's own failure messages (gpu-health.md 1.3), kernel Xid lines and infoROM warnings."""

from __future__ import annotations

import re

from gputui.debugpod.capture import EXIT_MEANINGS
from gputui.debugpod.nvidia_smi.report import SmiFailure

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
XID_RE = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<bus>[0-9a-fA-F:.]+)\): (?P<xid>\d+),?.*")
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


def scan_failures(text: str, section: str | None, exit_code: int | None) -> list[SmiFailure]:
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
