"""Which parser reads which format, and the order of trust when formats disagree about a GPU."""

from __future__ import annotations

from collections.abc import Iterable

from gputui.debugpod.nvidia_smi.gpu_list import parse_list
from gputui.debugpod.nvidia_smi.partial import Parsed
from gputui.debugpod.nvidia_smi.query import parse_query
from gputui.debugpod.nvidia_smi.query_csv import parse_csv
from gputui.debugpod.nvidia_smi.table import parse_table


def parse_one(kind: str, text: str, fields: tuple[str, ...] | None = None, dropped: Iterable[str] = ()) -> Parsed:
    if kind in ("nvidia-smi", "table"):
        return parse_table(text)
    if kind == "query":
        return parse_query(text)
    if kind == "list":
        return parse_list(text)
    if kind in ("csv", "query-gpu", "query-compute-apps", "compute-apps"):
        out = Parsed()
        out.kind = parse_csv(text, fields, out, dropped)
        return out
    return Parsed()


def guarded(kind: str, text: str, fields: tuple[str, ...] | None = None, dropped: Iterable[str] = ()) -> Parsed:
    try:
        return parse_one(kind, text, fields, dropped)
    except Exception as exc:  # noqa: BLE001 - a parser bug must not take the TUI down
        out = Parsed()
        out.warnings.append(f"internal parser error in {kind}: {type(exc).__name__}: {exc}")
        return out


# Order of trust when formats disagree: the CSV is exact (no rounding, no truncated names).
# Processes: compute-apps names are never truncated, so it goes before the table.
PRIORITY = ("query-gpu", "query", "query-compute-apps", "nvidia-smi", "list")


def rank(name: str) -> int:
    return PRIORITY.index(name) if name in PRIORITY else len(PRIORITY)
