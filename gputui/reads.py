"""List reads merged per source, and the Snapshot frozen from them (whole-list and pod-scoped collection)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from diagnostics.model import ObjectRef
from diagnostics.snapshot import KUBE_SOURCES, Snapshot, SourceState, SourceStatus
from gputui.kubeapi import Api, KubeError, Unreachable
from gputui.resources import RESOURCES
from gputui.sources.kube import list_objects, status_for_error
from gputui.store import Key, Store, key_of

Merged = dict[str, dict[Key, Any]]
Result = tuple[str, list[Any] | None, SourceStatus | None]


def read(api: Api, source: str, namespace: str | None = None, field: str | None = None,
         label: str | None = None) -> Result:
    """One (paged) list as records, or the status its failure means; never raises KubeError."""
    res = RESOURCES[source]
    try:
        recs, _rv = list_objects(api, res, namespace=namespace, field_selector=field, label_selector=label)
        return source, recs, None
    except KubeError as exc:
        return source, None, status_for_error(res, exc)


def merge(results: Iterable[Result], merged: Merged, failed: dict[str, SourceStatus]) -> None:
    """Records by key per source (the first read keeps the position, the last the value); a source's
    first failure is its status."""
    for source, recs, st in results:
        if st is not None:
            failed.setdefault(source, st)
            continue
        bucket = merged.setdefault(source, {})
        for r in recs or ():
            bucket[key_of(source, r)] = r


def raise_if_unreachable(results: list[Result]) -> None:
    unreachable = [st for _s, _r, st in results if st is not None and st.state is SourceState.UNREACHABLE]
    if unreachable and len(unreachable) == len(results):
        raise Unreachable(unreachable[0].detail)


def freeze(store: Store, merged: Merged, failed: dict[str, SourceStatus], target: ObjectRef | None,
           partial: tuple[str, ...] = ()) -> Snapshot:
    """The snapshot of what was read; for a target, pods, events and `partial` are marked partial."""
    for source in KUBE_SOURCES:
        if source in failed:
            store.set_status(failed[source])
        else:
            store.replace(source, merged.get(source, {}).values())
    snap = store.snapshot(target=str(target) if target else "cluster")
    if target is not None:
        # Pods and events were read for this target only: checks must not conclude "absent" from them.
        sources = dict(snap.sources)
        for s in ("pods", "events", *partial):
            st = sources[s]
            if st.state.usable:
                sources[s] = SourceStatus(st.name, st.state, st.detail, st.updated_at, partial=True)
        snap = replace(snap, sources=sources)
    return snap
