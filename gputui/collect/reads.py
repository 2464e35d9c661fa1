"""List reads merged per source, and the Snapshot frozen from them (whole-list and pod-scoped collection)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, TypeVar

from diagnostics.model import ObjectRef
from diagnostics.snapshot import KUBE_SOURCES, Snapshot, SourceState, SourceStatus
from gputui.kube.api import Api, BrokenAnswer, KubeError, Unreachable
from gputui.kube.resources import RESOURCES
from gputui.kube.informer import list_objects, status_for_error
from gputui.collect.store import Key, Store, key_of

Merged = dict[str, dict[Key, Any]]
Result = tuple[str, list[Any] | None, SourceStatus | None]
T = TypeVar("T")


RETRY_WAITS = (0.5, 1.5)
"""Pauses before retrying a read the API server throttled (429) or failed (5xx), or whose answer broke
(a reset, a truncated body, not JSON): three tries, at most ~2 s of waiting (or Retry-After up to 5 s)."""
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_MAX_RETRY_AFTER = 5.0
"""A longer Retry-After is not waited for: a one-shot answers now, with the source marked."""


def read(api: Api, source: str, namespace: str | None = None, field: str | None = None,
         label: str | None = None) -> Result:
    """One (paged) list as records, or the status its failure means; never raises KubeError."""
    res = RESOURCES[source]
    try:
        recs, _rv = retrying(lambda: list_objects(api, res, namespace=namespace, field_selector=field,
                                                  label_selector=label))
    except KubeError as exc:
        return source, None, status_for_error(res, exc)
    return source, recs, None


def retrying(fn: Callable[[], T]) -> T:
    """`fn()` (an idempotent GET), tried again after a passing failure; the last KubeError is raised."""
    attempt = 0
    while True:
        try:
            return fn()
        except KubeError as exc:
            wait = _retry_wait(exc, attempt)
            if wait is None:
                raise
            time.sleep(wait)
            attempt += 1


def _retry_wait(exc: KubeError, attempt: int) -> float | None:
    """How long to wait before trying a passing failure again (429, 5xx, a broken answer), or None to give up.

    A server that cannot be reached at all (refused, no route) is not retried: a one-shot says so now.
    """
    if attempt >= len(RETRY_WAITS):
        return None
    if isinstance(exc, Unreachable):
        return RETRY_WAITS[attempt] if isinstance(exc, BrokenAnswer) else None
    if exc.status not in RETRY_STATUSES:
        return None
    wait = exc.retry_after if exc.retry_after is not None else RETRY_WAITS[attempt]
    return wait if wait <= _MAX_RETRY_AFTER else None


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
