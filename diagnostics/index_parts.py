"""The index's pod and event parts, built in full or patched with what changed since the previous snapshot.

A live cluster at scale replaces a few pods and events every second, so most snapshots differ from
the previous one by a handful of records. Rebuilding 60k pods and 30k events per diagnostics run
would cost more than all the checks; the patch touches only the groups (a node's pods, an object's
events) that hold a changed record. Every other group keeps its list object, so data carried per
group (per node, per pod) is still found by identity. The result is exactly what a full build gives.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
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
    if len(old) == len(new):
        # The live cache keeps a replaced object's position: look for the slots that changed (C speed).
        # A record that only moved shows up as removed and added again, which the patch handles.
        differ = list(map(operator.is_not, old, new))
        removed: list[Any] = []
        added: list[Any] = []
        i = -1
        while len(added) <= limit:
            try:
                i = differ.index(True, i + 1)
            except ValueError:
                return removed, added
            removed.append(old[i])
            added.append(new[i])
    old_ids = set(map(id, old))
    gone, fresh = old_ids - new_ids, new_ids - old_ids
    if len(gone) + len(fresh) > 2 * limit:
        return None
    return [r for r in old if id(r) in gone], [r for r in new if id(r) in fresh]


def regroup(groups: dict[K, list[Any]], removed: Iterable[Any], added: Iterable[Any], key_of: Callable[[Any], K | None],
            positions: Callable[[], dict[int, int]]) -> set[K]:
    """Patch `groups` (a copy the caller owns) in place; returns the keys whose lists were rebuilt.

    A rebuilt list holds its records in the new tuple's order, as a full build would; lists that
    end up empty are dropped (a full build has no key for them).
    """
    gone = {id(r) for r in removed}
    touched: dict[K, list[Any]] = {}
    for r in removed:
        k = key_of(r)
        if k is not None and k not in touched:
            touched[k] = [x for x in groups.get(k, ()) if id(x) not in gone]
    for r in added:
        k = key_of(r)
        if k is None:
            continue
        if k not in touched:
            touched[k] = [x for x in groups.get(k, ()) if id(x) not in gone]
        touched[k].append(r)
    if touched:
        pos = positions()
        for k, items in touched.items():
            if items:
                items.sort(key=lambda r: pos[id(r)])
                groups[k] = items
            else:
                groups.pop(k, None)
    return set(touched)


def _positions(items: tuple[Any, ...]) -> Callable[[], dict[int, int]]:
    cache: list[dict[int, int]] = []

    def get() -> dict[int, int]:
        if not cache:
            cache.append(dict(zip(map(id, items), range(len(items)))))
        return cache[0]

    return get


# --- pods ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class PodsPart:
    items: tuple[Pod, ...]
    """The source tuple this part describes (a patch starts from it)."""
    by_key: dict[PodKey, Pod]
    by_node: dict[str, list[Pod]]
    pending: list[Pod]
    """Unbound Pending pods not being deleted, in source order."""
    unique: bool
    """No two pods share a namespace/name (else only a full build says which one wins)."""


def _pod_key(p: Pod) -> PodKey:
    return (p.meta.namespace or "", p.meta.name)


def _node_of(p: Pod) -> str | None:
    return p.node_name or None


def _is_pending(p: Pod) -> bool:
    return not p.node_name and p.phase == "Pending" and not p.meta.deleting


def build_pods(items: tuple[Pod, ...], previous: PodsPart | None = None) -> PodsPart:
    """The pod part for `items`, patched from `previous` when only a few pods changed."""
    if previous is not None and previous.unique:
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
    return PodsPart(items, by_key, by_node, pending, len(by_key) == len(items))


def _patch_pods(prev: PodsPart, items: tuple[Pod, ...], removed: list[Pod], added: list[Pod]) -> PodsPart:
    if not removed and not added:
        return PodsPart(items, prev.by_key, prev.by_node, prev.pending, prev.unique)
    by_key = dict(prev.by_key)
    for p in removed:
        k = _pod_key(p)
        if by_key.get(k) is p:
            del by_key[k]
    for p in added:
        by_key[_pod_key(p)] = p
    if len(by_key) != len(items):
        return build_pods(items)  # a name now appears twice: let the full build decide
    positions = _positions(items)
    by_node: dict[str, list[Pod]] = defaultdict(list, prev.by_node)
    regroup(by_node, removed, added, _node_of, positions)
    pending = prev.pending
    if any(_is_pending(p) for p in removed) or any(_is_pending(p) for p in added):
        groups = {True: pending}
        regroup(groups, removed, added, lambda p: True if _is_pending(p) else None, positions)
        pending = groups.get(True, [])
    return PodsPart(items, by_key, by_node, pending, True)


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
