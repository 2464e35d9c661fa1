"""`nvidia-smi -L`: one line per GPU and MIG device."""

from __future__ import annotations

import re

from gputui.debugpod.nvidia_smi.partial import GpuCells, Parsed

LIST_GPU_RE = re.compile(r"^GPU (?P<index>\d+): (?P<name>.*?) \(UUID: (?P<uuid>[^)\s]+)\)")
_LIST_MIG_RE = re.compile(r"^\s+MIG (?P<profile>\S+)\s+Device\s+(?P<index>\d+): \(UUID: (?P<uuid>[^)\s]+)\)")


def parse_list(text: str) -> Parsed:
    out = Parsed()
    current: GpuCells | None = None
    for line in text.splitlines():
        match = LIST_GPU_RE.match(line)
        if match is not None:
            current = GpuCells(cells={"index": match["index"], "name": match["name"], "uuid": match["uuid"]})
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
