"""Pure: share a screen's height between stacked tables by how many rows each has (water-filling).

A table with 2 rows gets 2 lines; the spare lines go to the tables that have more rows, so 80x24
shows something of every table and a large terminal shows everything that fits.
"""

from __future__ import annotations

from collections.abc import Sequence


def allocate(demands: Sequence[int], total: int, minimum: int = 3) -> list[int]:
    """Heights for tables wanting `demands` lines within `total` (each gets >= min(demand, minimum))."""
    n = len(demands)
    floors = [min(d, minimum) for d in demands]
    out = list(floors)
    remaining = total - sum(floors)
    active = [i for i in range(n) if demands[i] > out[i]]
    while active and remaining > 0:
        share = remaining // len(active)
        if share == 0:
            for i in active[:remaining]:
                out[i] += 1
            break
        satisfied = [i for i in active if demands[i] - out[i] <= share]
        if not satisfied:
            for i in active:
                out[i] += share
            remaining -= share * len(active)
            continue
        for i in satisfied:
            remaining -= demands[i] - out[i]
            out[i] = demands[i]
        active = [i for i in active if i not in satisfied]
    return out
