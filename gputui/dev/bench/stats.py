"""Medians and percentiles over small and large samples, and the lag-trend summary of a burst."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any


def median(values: Sequence[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile (p in 0..100): a value that actually occurred, never an interpolation."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def summary_ms(values_s: Sequence[float]) -> dict[str, Any]:
    """n, p50, p99, max of durations given in seconds, reported in milliseconds."""
    ms = [v * 1000 for v in values_s]
    return {"n": len(ms), "p50_ms": _r(percentile(ms, 50)), "p99_ms": _r(percentile(ms, 99)),
            "max_ms": _r(max(ms) if ms else None)}


def quarters(pairs: Sequence[tuple[float, float]]) -> list[float | None]:
    """Median value in each quarter of a run, `pairs` being (time, value): a growing lag shows as a ramp."""
    if not pairs:
        return []
    ordered = sorted(pairs)
    t0, t1 = ordered[0][0], ordered[-1][0]
    span = (t1 - t0) or 1.0
    buckets: list[list[float]] = [[], [], [], []]
    for t, v in ordered:
        buckets[min(3, int((t - t0) / span * 4))].append(v)
    return [_r(statistics.median(b) * 1000) if b else None for b in buckets]


def growing(quarter_ms: Sequence[float | None], *, floor_ms: float = 50.0) -> bool:
    """True for a ramp: quarter medians never fall (10 % slack) and the last is over twice the first and `floor_ms`.

    A cache that keeps up shows flat quarters, perhaps with one stall; one that falls behind
    shows a lag that rises quarter after quarter.
    """
    vals = [q for q in quarter_ms if q is not None]
    if len(vals) < 2:
        return False
    rising = all(b >= 0.9 * a for a, b in zip(vals, vals[1:]))
    return rising and vals[-1] > max(2 * vals[0], floor_ms)


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return round(a / b, 3)


def _r(v: float | None, nd: int = 1) -> float | None:
    return None if v is None else round(v, nd)


MIN_PAIRS = 5
"""Fewer runs than this decide nothing: one slow run on a shared machine would flip the verdict."""


CONFIDENCE = 0.90


def spread(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """A distribution-free confidence interval of the median: the k-th smallest and k-th largest value,
    with the largest k whose interval holds the true median with at least `confidence`.

    For 5 pairs that is the whole range (94 %): the middle half of five pairs let two runs of the
    same benchmark, at L, say 1.7-2.4x and then 3.5-3.9x for one ratio, a verdict flipped by noise.
    """
    vals = sorted(values)
    n = len(vals)
    if not n:
        return None
    k = 1
    while k + 1 <= n // 2 and 1 - 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n >= confidence:
        k += 1
    return vals[k - 1], vals[n - k]


def paired_ratios(a: Sequence[float | None], b: Sequence[float | None]) -> list[float]:
    """a[i] / b[i] for every pair measured back to back where both sides have a value."""
    return [x / y for x, y in zip(a, b) if x is not None and y is not None and y > 0]


def verdict(values: Sequence[float], limit: float, *, min_runs: int = MIN_PAIRS) -> dict[str, Any]:
    """Median, spread and the verdict on `median <= limit`.

    "undecided (noise)" when the spread (the median's confidence interval) straddles the limit, and
    "undecided (N runs, need M)" when there are too few runs to say; "met"/"missed" otherwise.
    """
    vals = [v for v in values if v is not None]
    mid = statistics.median(vals) if vals else None
    lo_hi = spread(vals)
    if mid is None or lo_hi is None:
        state = "not measured"
    elif len(vals) < min_runs:
        state = f"undecided ({len(vals)} run{'s' if len(vals) != 1 else ''}, need {min_runs})"
    elif lo_hi[0] <= limit < lo_hi[1]:
        state = "undecided (noise)"
    else:
        state = "met" if mid <= limit else "missed"
    return {"median": None if mid is None else round(mid, 4), "n": len(vals),
            "spread": None if lo_hi is None else [round(lo_hi[0], 4), round(lo_hi[1], 4)],
            "limit": limit, "verdict": state}
