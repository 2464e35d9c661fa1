"""The index's pod and event parts, built in full or patched with what changed since the previous snapshot.

A live cluster at scale replaces a few pods and events every second, so most snapshots differ from
the previous one by a handful of records. Rebuilding 60k pods and 30k events per diagnostics run
would cost more than all the checks; the patch touches only the groups (a node's pods, an object's
events) that hold a changed record. Every other group keeps its list object, so data carried per
group (per node, per pod) is still found by identity. The result is exactly what a full build gives.

The live cache keeps a replaced record's slot, so the usual patch pairs old and new records slot by
slot: a record whose group did not change takes its predecessor's place in the list, and the pod
part remembers which nodes' lists it rebuilt, so per-node data can be patched in turn
(PodsPart.nodes_changed_since). Pods by name are a shared dict plus this snapshot's changes (PodKeys):
copying 60k entries per snapshot touched every pod record and cost more than the rest.
"""

from __future__ import annotations

import itertools
import operator
from collections import defaultdict
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from diagnostics.records import Event, Pod

K = TypeVar("K", bound=Hashable)
PATCH_AT_MOST = 0.05
"""Beyond this share of changed records a full build is as cheap as a patch."""

PodKey = tuple[str, str]
EventKey = tuple[str, str | None, str]


def changes(old: tuple[Any, ...], new: tuple[Any, ...]) -> tuple[list[Any], list[Any]] | None:
    """(removed, added) records between two versions of a source, each in its tuple's order.

    None when too much changed for a patch to pay off, or when a record object appears twice.
    """
    limit = max(16, int(len(new) * PATCH_AT_MOST))
    new_ids = set(map(id, new))
    if len(new_ids) != len(new):
        return None
    # The live cache keeps a replaced object's position: look for the slots that changed (C speed).
    # A record that only moved shows up as removed and added again, which the patch handles.
    by_slot = replaced_slots(old, new)
    if by_slot is not None:
        return by_slot[0], by_slot[1]
    old_ids = set(map(id, old))
    gone, fresh = old_ids - new_ids, new_ids - old_ids
    if len(gone) + len(fresh) > 2 * limit:
        return None
    return [r for r in old if id(r) in gone], [r for r in new if id(r) in fresh]


def replaced_slots(old: tuple[Any, ...], new: tuple[Any, ...]) -> tuple[list[Any], list[Any], list[int]] | None:
    """(removed, added, slots) for two versions of a source of the same length, pairwise by slot: `added[i]`
    took the place of `removed[i]` at `slots[i]`. None when the lengths differ or too much changed.

    The live cache keeps a replaced object's slot, so this is the usual case, and it costs one C-speed pass
    plus what changed. Unlike `changes` it does not look for an object appearing twice: a caller that
    cares must catch that itself (the pod part does, by counting names).
    """
    if len(old) != len(new):
        return None
    limit = max(16, int(len(new) * PATCH_AT_MOST))
    differ = list(map(operator.is_not, old, new))
    removed: list[Any] = []
    added: list[Any] = []
    slots: list[int] = []
    i = -1
    while len(added) <= limit:
        try:
            i = differ.index(True, i + 1)
        except ValueError:
            return removed, added, slots
        removed.append(old[i])
        added.append(new[i])
        slots.append(i)
    return None


def regroup(groups: dict[K, list[Any]], removed: Sequence[Any], added: Sequence[Any], key_of: Callable[[Any], K | None],
            positions: Callable[[], dict[int, int]], paired: bool = False) -> set[K]:
    """Patch `groups` (a copy the caller owns) in place; returns the keys whose lists were rebuilt.

    A rebuilt list holds its records in the new tuple's order, as a full build would; lists that
    end up empty are dropped (a full build has no key for them). `paired`: `added[i]` took the slot
    of `removed[i]` (see replaced_slots); a record replaced by one with the same key then takes its
    place in the list, which keeps the order without looking up any position.
    """
    touched: dict[K, list[Any]] = {}
    if paired:
        removed, added = _replace_in_place(groups, touched, removed, added, key_of)
    gone = {id(r) for r in removed}
    moved: dict[K, list[Any]] = {}
    for r in removed:
        k = key_of(r)
        if k is not None and k not in moved:
            moved[k] = [x for x in touched.get(k, groups.get(k, ())) if id(x) not in gone]
    for r in added:
        k = key_of(r)
        if k is None:
            continue
        if k not in moved:
            moved[k] = [x for x in touched.get(k, groups.get(k, ())) if id(x) not in gone]
        moved[k].append(r)
    if moved:
        pos = positions()
        for items in moved.values():
            items.sort(key=lambda r: pos[id(r)])
        touched.update(moved)
    for k, items in touched.items():
        if items:
            groups[k] = items
        else:
            groups.pop(k, None)
    return set(touched)


def _replace_in_place(groups: dict[K, list[Any]], touched: dict[K, list[Any]], removed: Sequence[Any],
                      added: Sequence[Any], key_of: Callable[[Any], K | None]) -> tuple[list[Any], list[Any]]:
    """Put each added record where the record it replaced was, when both have the same key (into copies kept
    in `touched`); returns the pairs left over (their key changed), for the general patch."""
    left_removed: list[Any] = []
    left_added: list[Any] = []
    slots: dict[K, dict[int, int]] = {}  # positions by record id, for long lists only
    for r, a in zip(removed, added, strict=True):
        k = key_of(r)
        if k is None and key_of(a) is None:
            continue  # in no group, before or after
        if k is not None and k == key_of(a):
            items = touched.get(k)
            if items is None:
                items = touched[k] = list(groups.get(k, ()))
            if _replace(items, r, a, slots, k):
                continue
        left_removed.append(r)
        left_added.append(a)
    return left_removed, left_added


def _replace(items: list[Any], r: Any, a: Any, slots: dict[K, dict[int, int]], k: K) -> bool:
    """Put `a` where `r` (the object itself) is in `items`; False if it is not there. A scan for a node's
    few pods, an index (kept in `slots`) for long lists such as the pending pods."""
    if len(items) <= 64:
        try:
            i = list(map(operator.is_, items, itertools.repeat(r))).index(True)  # by identity, at C speed
        except ValueError:
            return False
        items[i] = a
        return True
    where = slots.get(k)
    if where is None:
        where = slots[k] = {id(x): i for i, x in enumerate(items)}
    at = where.pop(id(r), None)
    if at is None:
        return False
    items[at] = a
    where[id(a)] = at
    return True


def _positions(items: tuple[Any, ...]) -> Callable[[], dict[int, int]]:
    cache: list[dict[int, int]] = []

    def get() -> dict[int, int]:
        if not cache:
            cache.append(dict(zip(map(id, items), range(len(items)))))
        return cache[0]

    return get


# --- pods ---------------------------------------------------------------------------------------------------

_ABSENT = object()


class PodKeys(Mapping[PodKey, Pod]):
    """Pods by (namespace, name): a dict shared between snapshots plus what this snapshot changed.

    Copying 60k entries for every snapshot cost more than the rest of the patch (the copy touches every
    pod record); the changes are folded into a new dict once they are a good share of it. Iteration
    order is not defined (nobody may rely on it).
    """

    __slots__ = ("_base", "_delta", "_len")

    def __init__(self, base: dict[PodKey, Pod], delta: dict[PodKey, Pod | None] | None = None,
                 length: int | None = None) -> None:
        self._base = base
        self._delta: dict[PodKey, Pod | None] = delta or {}
        """Keys whose pod differs from `_base`'s; None: no pod has that key here."""
        self._len = len(base) if length is None else length

    def get(self, key: PodKey, default: Any = None) -> Any:
        v = self._delta.get(key, _ABSENT)
        if v is _ABSENT:
            return self._base.get(key, default)
        return default if v is None else v

    def __getitem__(self, key: PodKey) -> Pod:
        v = self.get(key, _ABSENT)
        if v is _ABSENT:
            raise KeyError(key)
        return v  # type: ignore[no-any-return]

    def __contains__(self, key: object) -> bool:
        return self.get(key, _ABSENT) is not _ABSENT  # type: ignore[arg-type]

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[PodKey]:
        delta = self._delta
        yield from (k for k in self._base if k not in delta)
        yield from (k for k, v in delta.items() if v is not None)

    def patched(self, removed: Iterable[Pod], added: Iterable[Pod]) -> PodKeys:
        """These keys with `removed` taken out (where they are the pod the key names) and `added` put in."""
        delta = dict(self._delta)
        n = self._len
        base = self._base
        for p in removed:
            k = _pod_key(p)
            v = delta.get(k, _ABSENT)
            if (base.get(k) if v is _ABSENT else v) is p:
                delta[k] = None
                n -= 1
        for p in added:
            k = _pod_key(p)
            v = delta.get(k, _ABSENT)
            if (base.get(k) if v is _ABSENT else v) is None:
                n += 1
            delta[k] = p
        if len(delta) <= max(64, len(base) // 8):
            return PodKeys(base, delta, n)
        folded = dict(base)
        for k, v in delta.items():
            if v is None:
                folded.pop(k, None)
            else:
                folded[k] = v
        return PodKeys(folded)


@dataclass(frozen=True, slots=True)
class PodsPart:
    items: tuple[Pod, ...]
    """The source tuple this part describes (a patch starts from it)."""
    by_key: PodKeys
    by_node: dict[str, list[Pod]]
    pending: list[Pod]
    """Unbound Pending pods not being deleted, in source order."""
    unique: bool
    """No two pods share a namespace/name (else only a full build says which one wins)."""
    base_by_node: Mapping[str, list[Pod]] | None = None
    """`by_node` of the part this one was patched from (None after a full build)."""
    touched_nodes: frozenset[str] = frozenset()
    """The nodes whose pod lists differ from `base_by_node`'s."""
    base_items: tuple[Pod, ...] | None = None
    """`items` of the part this one was patched from."""
    changed_slots: tuple[int, ...] | None = None
    """Where `items` holds other records than `base_items` when both have the same length, else None."""

    def nodes_changed_since(self, earlier: Mapping[str, list[Pod]]) -> Collection[str]:
        """Nodes whose pod lists are not the same objects in `earlier` (an earlier part's by_node) and here.

        What lets per-node data be patched: the patch knows what it touched, else the two maps are compared.
        """
        if earlier is self.by_node:
            return ()
        if earlier is self.base_by_node:
            return self.touched_nodes
        now = self.by_node
        return {k for k, v in now.items() if earlier.get(k) is not v} | {k for k in earlier if k not in now}

    def first_match(self, earlier: tuple[tuple[Pod, ...], int | None] | None,
                    predicate: Callable[[Pod], bool]) -> int | None:
        """The position of the first pod in `items` for which `predicate` holds (None: there is none).

        `earlier`: an earlier answer, (items, position), for the same predicate. When this part was
        patched from those items slot by slot, only the changed slots are tested (and, if the earlier
        match itself was replaced, the pods after it).
        """
        items = self.items
        slots = self.changed_slots
        if earlier is None or slots is None or earlier[0] is not self.base_items:
            return next((i for i, p in enumerate(items) if predicate(p)), None)
        hits = [i for i in slots if predicate(items[i])]
        first = hits[0] if hits else None  # slots are in order
        was = earlier[1]
        if was is None or (first is not None and first <= was):
            return first
        if was not in set(slots):
            return was  # still there, and no earlier pod matches now
        # The earlier match was replaced by a pod that does not match: the next one may be anywhere after it.
        return next((i for i in range(was + 1, len(items)) if predicate(items[i])), None)


def _pod_key(p: Pod) -> PodKey:
    return (p.meta.namespace or "", p.meta.name)


def _node_of(p: Pod) -> str | None:
    return p.node_name or None


def _is_pending(p: Pod) -> bool:
    return not p.node_name and p.phase == "Pending" and not p.meta.deleting


def _pending_key(p: Pod) -> bool | None:
    return True if _is_pending(p) else None


def build_pods(items: tuple[Pod, ...], previous: PodsPart | None = None) -> PodsPart:
    """The pod part for `items`, patched from `previous` when only a few pods changed."""
    if previous is not None and previous.unique:
        paired = replaced_slots(previous.items, items)
        if paired is not None:
            removed, added, slots = paired
            return _patch_pods(previous, items, removed, added, tuple(slots))
        diff = changes(previous.items, items)
        if diff is not None:
            return _patch_pods(previous, items, *diff)
    by_key: dict[PodKey, Pod] = {}
    by_node: dict[str, list[Pod]] = defaultdict(list)
    pending: list[Pod] = []
    for p in items:
        meta = p.meta
        by_key[(meta.namespace or "", meta.name)] = p
        if p.node_name:
            by_node[p.node_name].append(p)
        elif p.phase == "Pending" and not meta.deleting:
            pending.append(p)
    return PodsPart(items, PodKeys(by_key), by_node, pending, len(by_key) == len(items))


def _patch_pods(prev: PodsPart, items: tuple[Pod, ...], removed: list[Pod], added: list[Pod],
                slots: tuple[int, ...] | None = None) -> PodsPart:
    """`slots`: where each added pod took the place of the removed one (replaced_slots), if so."""
    # A pod that only moved to another slot (the tuple shifted after a deletion) is removed and added
    # again: putting records in their predecessors' places would then lose it, so regroup in full.
    paired = slots is not None and not set(map(id, removed)).intersection(map(id, added))
    if not removed and not added:
        return PodsPart(items, prev.by_key, prev.by_node, prev.pending, prev.unique, prev.by_node, frozenset(),
                        prev.items, slots)
    by_key = prev.by_key.patched(removed, added)
    if len(by_key) != len(items):
        return build_pods(items)  # a name now appears twice (or a record does): let the full build decide
    positions = _positions(items)
    by_node: dict[str, list[Pod]] = defaultdict(list, prev.by_node)
    touched = regroup(by_node, removed, added, _node_of, positions, paired)
    pending = prev.pending
    if any(_is_pending(p) for p in removed) or any(_is_pending(p) for p in added):
        groups = {True: pending}
        regroup(groups, removed, added, _pending_key, positions, paired)
        pending = groups.get(True, [])
    return PodsPart(items, by_key, by_node, pending, True, prev.by_node, frozenset(touched), prev.items, slots)


# --- events -------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class EventsPart:
    items: tuple[Event, ...]
    by_object: dict[EventKey, list[Event]]
    """Oldest first, except the lists in `untimed`."""
    untimed: dict[EventKey, list[Event]]
    """Lists holding an event without timestamps, in source order: where it sorts depends on `taken_at`."""


def _event_key(e: Event) -> EventKey:
    return (e.involved_kind, e.involved_namespace or None, e.involved_name)


def _timed_order(evs: list[Event], untimed: dict[EventKey, list[Event]], key: EventKey) -> None:
    if any(e.last_seen is None and e.first_seen is None for e in evs):
        untimed[key] = evs
    else:
        untimed.pop(key, None)
        evs.sort(key=lambda e: e.last_seen or e.first_seen)  # type: ignore[arg-type,return-value]


def build_events(items: tuple[Event, ...], previous: EventsPart | None = None) -> EventsPart:
    """The event part for `items`, patched from `previous` when only a few events changed."""
    if previous is not None:
        diff = changes(previous.items, items)
        if diff is not None:
            return _patch_events(previous, items, *diff)
    by_object: dict[EventKey, list[Event]] = defaultdict(list)
    for e in items:
        by_object[(e.involved_kind, e.involved_namespace or None, e.involved_name)].append(e)
    untimed: dict[EventKey, list[Event]] = {}
    for key, evs in by_object.items():
        _timed_order(evs, untimed, key)
    return EventsPart(items, by_object, untimed)


def _patch_events(prev: EventsPart, items: tuple[Event, ...], removed: list[Event],
                  added: list[Event]) -> EventsPart:
    if not removed and not added:
        return EventsPart(items, prev.by_object, prev.untimed)
    by_object: dict[EventKey, list[Event]] = defaultdict(list, prev.by_object)
    # Rebuilt lists come back in source order, which is what a full build sorts (stably) by time.
    touched = regroup(by_object, removed, added, _event_key, _positions(items))
    untimed = dict(prev.untimed)
    for key in touched:
        evs = by_object.get(key)
        if evs is None:
            untimed.pop(key, None)
        else:
            _timed_order(evs, untimed, key)
    return EventsPart(items, by_object, untimed)
