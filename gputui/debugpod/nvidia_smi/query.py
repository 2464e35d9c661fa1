"""`nvidia-smi -q`: the indented key : value report."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gputui.debugpod.nvidia_smi.cells import is_sentinel, to_int
from gputui.debugpod.nvidia_smi.partial import GpuCells, Parsed

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


def parse_query(text: str) -> Parsed:
    out = Parsed()
    root = _q_tree(text)
    out.driver_version = _version(root, "KMD Version", "Driver Version")
    out.cuda_version = _version(root, "CUDA UMD Version", "CUDA Version")
    attached = to_int(root.get("Attached GPUs") or "")
    out.attached = attached
    position = 0
    for node in root.children:
        match = _Q_GPU_RE.match(node.key)
        if match is None or node.value is not None:
            continue
        gpu = GpuCells()
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


def _q_ecc(node: _Node, gpu: GpuCells) -> None:
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
    numbers = [n for n in (to_int(v) for v in values) if n is not None]
    # Sum what could be read; when nothing could, keep the first sentinel as the reason.
    gpu.cells["ecc.errors.uncorrected.volatile.total"] = str(sum(numbers)) if numbers else values[0]


def _q_clocks(node: _Node, gpu: GpuCells) -> None:
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


def _q_mig(node: _Node, gpu: GpuCells) -> None:
    for child in node.children:
        if child.key.lower() != "mig device":
            continue
        index = to_int(child.get("Index") or "")
        if index is None:
            continue
        memory = child.child("Shared FB Memory Usage") or child.child("FB Memory Usage")
        gpu.mig[index] = {
            "gpu_index": to_int(gpu.cells.get("index", "")),
            "index": index,
            "gpu_instance_id": to_int(child.get("GPU Instance ID") or ""),
            "compute_instance_id": to_int(child.get("Compute Instance ID") or ""),
            "memory_used_mib": to_int(memory.get("Used") or "") if memory else None,
            "memory_total_mib": to_int(memory.get("Total") or "") if memory else None,
            "sm_count": to_int(child.get("Device Attributes/Shared/Multiprocessor count") or ""),
            "ecc_uncorrected_volatile": to_int(child.get("ECC Errors/Volatile/SRAM Uncorrectable") or ""),
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
