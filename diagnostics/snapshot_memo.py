"""Per-snapshot memos so several checks share derived data, and data carried across snapshots of one cache."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from diagnostics.carry import CARRIED
from diagnostics.snapshot import Snapshot

T = TypeVar("T")

def memoized(snap: Snapshot, key: object, compute: Callable[[], T]) -> T:
    """`compute()` once per snapshot and key; kept on the snapshot's Index so it dies with the snapshot."""
    memo = snap.index.memo
    if key not in memo:
        memo[key] = compute()
    return memo[key]  # type: ignore[return-value]


def carried(snap: Snapshot, key: object, sources: tuple[str, ...], compute: Callable[[], T]) -> T:
    """`compute()` once for as long as the named sources hold the same records, across snapshots.

    `compute` may read those sources and what the index builds from them, nothing else: not
    `taken_at` (no ages), not source statuses, not other sources. Check those outside.
    """
    index = snap.index
    return CARRIED.get(key, tuple(index.sources[s] for s in sources), compute)
