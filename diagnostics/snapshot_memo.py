"""A per-snapshot memo so several checks can share derived data without recomputing it."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TypeVar

from diagnostics.snapshot import Index, Snapshot

T = TypeVar("T")

_MEMOS: weakref.WeakKeyDictionary[Index, dict[object, object]] = weakref.WeakKeyDictionary()


def memoized(snap: Snapshot, key: object, compute: Callable[[], T]) -> T:
    """`compute()` once per snapshot and key; keyed by the snapshot's Index so it dies with the snapshot."""
    memo = _MEMOS.get(snap.index)
    if memo is None:
        memo = {}
        _MEMOS[snap.index] = memo
    if key not in memo:
        memo[key] = compute()
    return memo[key]  # type: ignore[return-value]
