"""Derived data carried from one snapshot to the next while the records it came from are the same objects.

The live cache cuts a new Snapshot every few seconds and the TUI re-runs every check on it. Records
are immutable and replaced only when their object changes, so anything computed from records alone
(an index, a pod's fit against the NodePools, a parsed event) can be reused by the next snapshot as
long as its inputs are *identical* objects. Identity, never equality: a replaced record is a miss.
Values that read `taken_at` (ages, "created less than a minute ago") must not be carried.
"""

from __future__ import annotations

import operator
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def same_items(a: Sequence[object], b: Sequence[object]) -> bool:
    """The two sequences hold the same objects in the same order."""
    return a is b or (len(a) == len(b) and all(map(operator.is_, a, b)))


_canonical: dict[str, tuple[object, ...]] = {}
_canonical_lock = threading.Lock()


def canonical(name: str, items: tuple[object, ...]) -> tuple[object, ...]:
    """The tuple last seen under `name` if it holds the same objects as `items`, else `items` (remembered).

    Lets every later comparison of a snapshot's source tuple be one identity test.
    """
    last = _canonical.get(name)
    if last is not None and same_items(last, items):
        return last
    with _canonical_lock:
        _canonical[name] = items
    return items


class Carried:
    """One value per key, reused while the key's inputs are the same objects (the last computation only)."""

    def __init__(self) -> None:
        self._values: dict[object, tuple[tuple[object, ...], Any]] = {}

    def get(self, key: object, inputs: tuple[object, ...], compute: Callable[[], T]) -> T:
        hit = self._values.get(key)
        if hit is not None and same_items(hit[0], inputs):
            return hit[1]  # type: ignore[no-any-return]
        value = compute()
        self._values[key] = (inputs, value)
        return value

    def previous(self, key: object) -> Any:
        """The value last computed under `key` (None if none): lets a recomputation keep what did not change."""
        hit = self._values.get(key)
        return hit[1] if hit is not None else None

    def forget(self) -> None:
        self._values = {}

    def stable(self, key: object, value: T) -> T:
        """The value last given under `key` when it equals `value` (so identity tests see no change), else `value`.

        Only for values whose equal instances are interchangeable (no identity-keyed data inside).
        """
        hit = self._values.get(key)
        if hit is not None and hit[1] == value:
            return hit[1]  # type: ignore[no-any-return]
        self._values[key] = ((), value)
        return value


CARRIED = Carried()
"""Shared by the index and the checks; keys name what is carried (e.g. `("index", "pods")`)."""

_ALL: weakref.WeakSet[Generations[Any]] = weakref.WeakSet()


def forget() -> None:
    """Drop everything carried, so the next snapshot is computed from scratch (tests compare the two)."""
    with _canonical_lock:
        _canonical.clear()
    CARRIED.forget()
    for g in list(_ALL):
        g.forget()


class Generations(Generic[T]):
    """Values by key, reused while their inputs are the same objects (identity, item by item).

    The first lookup for a new snapshot (`epoch`, its Index) starts a fresh generation; entries
    found there or in the generation before move to it, the rest are dropped. So an entry lives
    as long as the last snapshot that looked anything up used it, and entries of replaced or
    deleted records do not pile up. Inputs are held, so the identity of a record used as input
    (or as `id()` in a key) cannot be reused while its entry exists.
    """

    def __init__(self) -> None:
        self._epoch: weakref.ref[object] | None = None
        self._current: dict[object, tuple[tuple[object, ...], T]] = {}
        self._previous: dict[object, tuple[tuple[object, ...], T]] = {}
        self._lock = threading.Lock()
        _ALL.add(self)

    def forget(self) -> None:
        with self._lock:
            self._epoch = None
            self._current, self._previous = {}, {}

    def lookup(self, epoch: object, key: object, inputs: tuple[object, ...]) -> tuple[bool, T | None]:
        """(True, value) when cached for these inputs, else (False, None)."""
        if self._epoch is None or self._epoch() is not epoch:
            with self._lock:
                if self._epoch is None or self._epoch() is not epoch:
                    self._previous, self._current = self._current, {}
                    self._epoch = weakref.ref(epoch)
        current = self._current
        hit = current.get(key)
        if hit is None:
            hit = self._previous.get(key)
        if hit is not None and same_items(hit[0], inputs):
            current[key] = hit
            return True, hit[1]
        return False, None

    def store(self, key: object, inputs: tuple[object, ...], value: T) -> T:
        self._current[key] = (inputs, value)
        return value

    def get(self, epoch: object, key: object, inputs: tuple[object, ...], compute: Callable[[], T]) -> T:
        found, value = self.lookup(epoch, key, inputs)
        if found:
            return value  # type: ignore[return-value]
        return self.store(key, inputs, compute())

    def of(self, epoch: object, record: object, inputs: tuple[object, ...], compute: Callable[[], T]) -> T:
        """Keyed by the identity of `record` (which is held with the entry)."""
        return self.get(epoch, id(record), (record, *inputs), compute)
