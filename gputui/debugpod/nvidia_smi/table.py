"""The default `nvidia-smi` table (GPU boxes, MIG devices, the Processes box)."""

from __future__ import annotations

import re
from typing import Any

from gputui.debugpod.nvidia_smi.cells import is_sentinel, to_int
from gputui.debugpod.nvidia_smi.partial import GpuCells, Parsed

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


def parse_table(text: str) -> Parsed:
    out = Parsed()
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


def _table_gpu(block: list[str], warnings: list[str]) -> GpuCells | None:
    rows = [_cells(line) for line in block]
    if not rows or len(rows[0]) < 3:
        return None
    gpu = GpuCells()
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
    if to_int(ecc_cell) is not None or is_sentinel(ecc_cell):
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


def _table_mig(block: list[str], out: Parsed) -> None:
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
        mig["memory_used_mib"] = to_int(match["used"])
        mig["memory_total_mib"] = to_int(match["total"])
    sm_ecc = rows[0][2].split()
    if sm_ecc:
        mig["sm_count"] = to_int(sm_ecc[0])
    if len(sm_ecc) > 1:
        mig["ecc_uncorrected_volatile"] = to_int(sm_ecc[1])
    gpu = next((g for g in out.gpus if g.cells.get("index") == str(gpu_index)), None)
    if gpu is not None:
        gpu.mig[dev] = mig
