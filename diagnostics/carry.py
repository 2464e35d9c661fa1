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
from collections.abc import Callable, Collection, Mapping, Sequence
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

    def put(self, key: object, value: object) -> None:
        """Remember `value` under `key` (for `previous`), whatever was there."""
        self._values[key] = ((), value)

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

_ALL: weakref.WeakSet[Generations[Any] | PerItem[Any, Any, Any]] = weakref.WeakSet()


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

    def latest(self, key: object) -> T | None:
        """The value last stored under `key` in this generation or the one before, whatever its inputs (None if
        none): lets a recomputation start from what it was. Call after `lookup` for this snapshot."""
        hit = self._current.get(key)
        if hit is None:
            hit = self._previous.get(key)
        return None if hit is None else hit[1]

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


Item = TypeVar("Item")
G = TypeVar("G")


class _ItemState(Generic[Item, G, T]):
    """What PerItem keeps for one key: the list it mapped, what it was told is fixed, the groups it read."""

    __slots__ = ("items", "fixed", "groups", "entries", "values", "_where", "group_of")

    def __init__(self, items: Sequence[Item], fixed: tuple[object, ...], groups: Mapping[G, Any],
                 entries: list[tuple[tuple[object, ...], T]], values: list[T], group_of: Callable[[Item], G],
                 where: dict[G, list[int]] | None = None) -> None:
        self.items, self.fixed, self.groups = items, fixed, groups
        self.entries, self.values, self.group_of, self._where = entries, values, group_of, where

    def where(self) -> dict[G, list[int]]:
        """The items' positions per group (built once per items list)."""
        if self._where is None:
            where: dict[G, list[int]] = {}
            for i, item in enumerate(self.items):
                where.setdefault(self.group_of(item), []).append(i)
            self._where = where
        return self._where


class PerItem(Generic[Item, G, T]):
    """One value per item of a list (the GPU nodes, a pool's nodes), each kept with the inputs it came from.

    For maps over thousands of nodes of which a snapshot changes the pods of a few. Each item belongs to
    a group (its node name) in `groups` (pods by node). While the items list and `fixed` (everything
    `inputs_of` reads besides the item and its group) are the same objects as last time, only the
    items of the groups `changed` names are looked at again: a run costs what changed, not how many
    nodes there are. Otherwise every item's inputs are compared with what the last list held for it
    (the first input names the item, e.g. its node record) and only those that differ are computed.
    One state per `key` (e.g. a NodePool name), for the last list only.
    """

    def __init__(self) -> None:
        self._states: dict[object, _ItemState[Item, G, T]] = {}
        _ALL.add(self)

    def forget(self) -> None:
        self._states = {}

    def values(self, key: object, items: Sequence[Item], fixed: tuple[object, ...], groups: Mapping[G, Any],
               group_of: Callable[[Item], G], changed: Callable[[Any], Collection[G]],
               inputs_of: Callable[[Item], tuple[object, ...]], compute: Callable[[Item], T],
               patch: Callable[[Item, tuple[object, ...], T], T] | None = None) -> list[T]:
        """compute(item) for each item, in order (callers must not modify the list).

        `changed(earlier)`: the groups whose members are not the same objects in `earlier` and `groups`
        (a collection that answers `in` quickly).
        `patch(item, earlier inputs, earlier value)`: what compute(item) gives, worked out from the value
        the same item (first input) had with other inputs, e.g. reusing what it derived from pods that stayed.
        """
        st = self._states.get(key)
        if st is not None and st.items is items and same_items(st.fixed, fixed):
            if st.groups is groups:
                return st.values
            entries, values = st.entries, st.values
            where = st.where()
            copied = False
            moved = changed(st.groups)
            if len(where) < len(moved):
                moved = [g for g in where if g in moved]
            for g in moved:
                for i in where.get(g, ()):
                    inputs = inputs_of(items[i])
                    if same_items(entries[i][0], inputs):
                        continue
                    if not copied:
                        entries, values, copied = list(entries), list(values), True
                    earlier = entries[i]
                    value = compute(items[i]) if patch is None else patch(items[i], earlier[0], earlier[1])
                    entries[i] = (inputs, value)
                    values[i] = value
            self._states[key] = _ItemState(items, fixed, groups, entries, values, group_of, where)
            return values
        before = {id(e[0][0]): e for e in st.entries if e[0]} if st is not None else {}
        entries = []
        for item in items:
            inputs = inputs_of(item)
            hit = before.get(id(inputs[0])) if inputs else None
            if hit is not None and same_items(hit[0], inputs):
                entries.append(hit)
            elif hit is not None and patch is not None:
                entries.append((inputs, patch(item, hit[0], hit[1])))
            else:
                entries.append((inputs, compute(item)))
        values = [e[1] for e in entries]
        self._states[key] = _ItemState(items, fixed, groups, entries, values, group_of)
        return values
