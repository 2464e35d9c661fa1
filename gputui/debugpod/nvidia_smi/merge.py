"""Merge what several formats said about the same GPUs and build the report's rows."""

from __future__ import annotations

import dataclasses
from typing import Any

from gputui.debugpod.nvidia_smi.cells import FIELD_MAP, is_failed_cell, is_sentinel, normalize_bus_id, to_int
from gputui.debugpod.nvidia_smi.partial import GpuCells, Parsed
from gputui.debugpod.nvidia_smi.report import GpuProcess, GpuRow, MigDevice

def _same(a: GpuCells, b: GpuCells) -> bool:
    bus_a, uuid_a, index_a = a.key()
    bus_b, uuid_b, index_b = b.key()
    if bus_a and bus_b:
        return bus_a == bus_b
    if uuid_a and uuid_b:
        return uuid_a == uuid_b
    return index_a is not None and index_a == index_b


def merge(sources: list[Parsed]) -> Parsed:
    """Combine formats, earlier sources first: a real value beats a "no value" sentinel, which beats
    nothing; but a failure sentinel (`[GPU is lost]`, `[GPU requires reset]`, `ERR!`, `[Unknown Error]`)
    beats any number another format printed for the same GPU and field, so a reading taken while the
    GPU still answered never hides that it stopped answering."""
    merged = Parsed()
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
                    GpuCells(dict(gpu.cells), dict(gpu.raw), dict(gpu.reasons), {k: dict(v) for k, v in gpu.mig.items()})
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
    return to_int(str(value))


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


def build(parsed: Parsed, warnings: list[str]) -> tuple[list[GpuRow], list[GpuProcess]]:
    rows: list[GpuRow] = []
    for gpu in parsed.gpus:
        values: dict[str, Any] = {}
        unavailable: dict[str, str] = dict(gpu.reasons)
        for canonical, (attr, convert) in FIELD_MAP.items():
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
