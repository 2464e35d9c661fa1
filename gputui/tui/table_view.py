"""Pure: column sort (k9s's Shift-letter keys) and column widths that fit the screen (Ctrl+W: all of them).

Sorting: Shift+N by NAME, Shift+A by AGE, Shift+S by status (HEALTH / STAGE / READY / SEVERITY);
pressing the same key again reverses, a third time returns to gputui's own order (worst first).
Widths: without wide mode, the long free-text columns (a finding's title, a NodeClaim's REASON,
the GPU model, the NodePool) give way so that the short columns to their right (ZONE, NODE, AGE) stay on
screen; the cut text ends in `…` and Ctrl+W shows it whole.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gputui.tui.cells import TableRow

SORT_KEYS = {"N": "name", "A": "age", "S": "status"}
"""Shift+letter -> what it sorts by (k9s: Shift-N name, Shift-A age, Shift-S status)."""
STATUS_COLUMNS = ("HEALTH", "STATUS", "STAGE", "SEVERITY", "READY", "RESULT")
NAME_COLUMNS = ("NAME", "NAMESPACE/NAME", "FINDING", "CHECK")
SHRINKABLE: Mapping[str, int] = {"FINDING": 30, "REASON": 24, "WHY": 30, "MESSAGE": 30, "GPU": 10,
                                 "CONSOLIDATION": 14, "NODEPOOL": 12, "SUBJECT": 20}
"""Columns that may be cut, and how narrow they may get, in the order they give way (never HEALTH or
a name: what a row is about and what is wrong with it stay whole)."""
_AGE = re.compile(r"(\d+)([smhdy])")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "y": 31536000}


@dataclass(frozen=True, slots=True)
class Sort:
    by: str = ""
    """"" (gputui's order), "name", "age" or "status"."""
    reverse: bool = False

    def next(self, by: str) -> Sort:
        """Same key again: reverse; a third time: back to gputui's order."""
        if self.by != by:
            return Sort(by)
        return Sort(by, True) if not self.reverse else Sort()

    def label(self) -> str:
        return f" · sorted by {self.by} {'↓' if self.reverse else '↑'}" if self.by else ""


def age_seconds(text: str) -> float:
    """`2d5h` -> seconds; `-` or unknown -> infinity-like (sorts last)."""
    parts = _AGE.findall(text)
    return sum(int(n) * _UNIT[u] for n, u in parts) if parts else float("inf")


def column_for(columns: Sequence[str], by: str) -> int | None:
    wanted = {"name": NAME_COLUMNS, "age": ("AGE",), "status": STATUS_COLUMNS}.get(by, ())
    return next((columns.index(c) for c in wanted if c in columns), None)


def sort_rows(rows: Sequence[TableRow], columns: Sequence[str], sort: Sort) -> list[TableRow]:
    """`rows` in the order `sort` asks for (stable, so ties keep gputui's worst-first order)."""
    col = column_for(columns, sort.by) if sort.by else None
    if col is None:
        return list(rows)

    def key(r: TableRow) -> tuple[float, str]:
        text = r.cells[col].plain
        return (age_seconds(text), "") if sort.by == "age" else (0.0, text.lower())

    return sorted(rows, key=key, reverse=sort.reverse)


def fit_widths(columns: Sequence[str], natural: Sequence[int], available: int, padding: int = 2) -> list[int | None]:
    """A width per column (None: its natural width) so the row fits `available` cells if cutting
    the shrinkable columns, in SHRINKABLE's order down to their minimum, can make it fit."""
    widths = list(natural)
    over = sum(w + padding for w in widths) - available
    for name, floor in SHRINKABLE.items():
        if over <= 0:
            break
        if name not in columns:
            continue
        i = columns.index(name)
        give = min(over, max(0, widths[i] - floor))
        widths[i] -= give
        over -= give
    return [None if w == n else w for w, n in zip(widths, natural)]
