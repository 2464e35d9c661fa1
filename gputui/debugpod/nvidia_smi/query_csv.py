"""`--query-gpu=... --format=csv` and `--query-compute-apps=...` CSV (with or without a header)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from gputui.debugpod.capture import APPS_FIELDS, HEALTH_FIELDS, canonical_field
from gputui.debugpod.nvidia_smi.cells import FIELD_MAP, is_sentinel
from gputui.debugpod.nvidia_smi.partial import GpuCells, Parsed

_UNIT_RE = re.compile(r"^(?P<name>.*?)\s*\[(?P<unit>[^\]]*)\]$")
_IDENT_RE = re.compile(r"^[A-Za-z_][\w.]*$")
_KNOWN_GPU_FIELDS = frozenset(FIELD_MAP) | {"timestamp", "driver_version", "count", "serial", "pstate"}
_KNOWN_APPS_FIELDS = frozenset({"pid", "process_name", "used_memory", "gpu_uuid", "gpu_bus_id", "gpu_name"})


def _split_row(line: str, width: int | None, free_text: int | None) -> list[str]:
    cells = [c.strip() for c in line.split(",")]
    if width is not None and len(cells) > width and free_text is not None:
        # nvidia-smi does not quote: a comma inside a process name makes extra cells.
        extra = len(cells) - width
        cells[free_text : free_text + extra + 1] = [", ".join(cells[free_text : free_text + extra + 1])]
    return cells


def csv_header(line: str) -> list[str] | None:
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


def _parse_gpu_csv(lines: list[str], fields: list[str], out: Parsed, dropped: Iterable[str] = ()) -> None:
    canonical = [canonical_field(f) for f in fields]
    free_text = canonical.index("name") if "name" in canonical else None
    present = set(canonical)
    for line in lines:
        cells = _split_row(line, len(fields), free_text)
        if len(cells) != len(fields):
            out.warnings.append(f"query-gpu row has {len(cells)} cells for {len(fields)} fields: {line!r}")
        gpu = GpuCells()
        for name, canon, value in zip(fields, canonical, cells):
            gpu.raw[name] = value
            if canon in FIELD_MAP or canon == "driver_version":
                gpu.cells[canon] = value
        for name in dropped:
            canon = canonical_field(name)
            if canon not in present:
                gpu.reasons[canon] = "not a valid field for this driver"
        out.gpus.append(gpu)
        version = gpu.cells.get("driver_version")
        if version and not is_sentinel(version) and out.driver_version is None:
            out.driver_version = version


def _parse_apps_csv(lines: list[str], fields: list[str], out: Parsed) -> None:
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


def parse_csv(text: str, fields: tuple[str, ...] | None, out: Parsed, dropped: Iterable[str] = ()) -> str:
    """Parse a CSV block, with or without header. Returns the kind read: csv | compute-apps | ''."""
    lines = [line for line in text.splitlines() if line.strip()]
    header = csv_header(lines[0]) if lines else None
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
