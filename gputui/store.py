"""The live cache: records per source, each source's status, and cheap frozen Snapshots of it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from diagnostics.snapshot import KUBE_SOURCES, Snapshot, SourceState, SourceStatus, utcnow

Key = tuple[str | None, str]


def key_of(source: str, rec: Any) -> Key:
    if source == "namespaces":
        return (None, rec)
    m = rec.meta
    return (m.namespace, m.name)


class Store:
    """Thread-safe: informers write from their threads, views read snapshots from anywhere.

    `version` increases on every change so a view can coalesce bursts: it polls the version on a
    timer and re-renders only when it moved (no per-event callbacks into the UI thread).
    """

    def __init__(self, clock: Callable[[], datetime] = utcnow) -> None:
        self._lock = threading.Lock()
        self._objects: dict[str, dict[Key, Any]] = {s: {} for s in KUBE_SOURCES}
        self._status: dict[str, SourceStatus] = {}
        self._synced: dict[str, threading.Event] = {s: threading.Event() for s in KUBE_SOURCES}
        self.clock = clock
        self.version = 0
        self.cluster: dict[str, Any] = {}
        self.aws: Any = None
        self.metrics: Any = None
        self.gpu_reports: dict[str, Any] = {}

    # --- writers (informers) ---
    def replace(self, source: str, records: Iterable[Any]) -> None:
        fresh = {key_of(source, r): r for r in records}
        with self._lock:
            self._objects[source] = fresh
            self._status[source] = SourceStatus(source, SourceState.OK, updated_at=self.clock())
            self.version += 1
        self._synced[source].set()

    def apply(self, source: str, event_type: str, rec: Any) -> None:
        k = key_of(source, rec)
        with self._lock:
            if event_type == "DELETED":
                self._objects[source].pop(k, None)
            else:
                self._objects[source][k] = rec
            st = self._status.get(source)
            if st is None or st.state is not SourceState.OK or st.updated_at is None:
                self._status[source] = SourceStatus(source, SourceState.OK, updated_at=self.clock())
            self.version += 1

    def touch(self, source: str, recovered: bool = False) -> None:
        """A bookmark or a quiet watch: the data is current as of now. `recovered`: a watch was just
        re-established from the cache's resourceVersion, so stale data is current again."""
        with self._lock:
            st = self._status.get(source)
            if st is not None and (st.state is SourceState.OK or (recovered and st.state is SourceState.STALE)):
                self._status[source] = SourceStatus(source, SourceState.OK, updated_at=self.clock())
                self.version += st.state is not SourceState.OK

    def set_status(self, status: SourceStatus) -> None:
        """Failures keep the last good data: a failing source with data turns STALE, not empty."""
        with self._lock:
            prev = self._status.get(status.name)
            if (status.state is SourceState.UNREACHABLE and prev is not None and prev.state.usable
                    and self._synced.get(status.name, threading.Event()).is_set()):
                status = SourceStatus(status.name, SourceState.STALE, status.detail,
                                      updated_at=prev.updated_at)
            elif status.state in (SourceState.FORBIDDEN, SourceState.ABSENT) and status.name in self._objects:
                self._objects[status.name] = {}
            self._status[status.name] = status
            self.version += 1
        if status.state in (SourceState.FORBIDDEN, SourceState.ABSENT, SourceState.NOT_CONFIGURED):
            ev = self._synced.get(status.name)
            if ev is not None:
                ev.set()  # nothing more will come; don't make callers wait for it

    def set_extra(self, name: str, value: Any, status: SourceStatus) -> None:
        with self._lock:
            setattr(self, {"aws": "aws", "prometheus": "metrics"}.get(name, name), value)
            self._status[name] = status
            self.version += 1

    def set_gpu_report(self, node: str, report: Any) -> None:
        with self._lock:
            self.gpu_reports[node] = report
            self._status["nvidia-smi"] = SourceStatus("nvidia-smi", SourceState.OK, updated_at=self.clock())
            self.version += 1

    # --- readers ---
    def wait_synced(self, sources: Iterable[str], timeout: float) -> bool:
        deadline = self.clock().timestamp() + timeout
        for s in sources:
            left = max(0.0, deadline - self.clock().timestamp())
            if not self._synced[s].wait(left):
                return False
        return True

    def status(self) -> dict[str, SourceStatus]:
        with self._lock:
            return dict(self._status)

    def count(self, source: str) -> int:
        return len(self._objects[source])

    def get(self, source: str, name: str, namespace: str | None = None) -> Any:
        return self._objects[source].get((namespace, name))

    def snapshot(self, taken_at: datetime | None = None, target: str = "cluster") -> Snapshot:
        """O(objects) tuple copies under the lock; records are immutable so nothing is deep-copied."""
        with self._lock:
            objs = {s: tuple(d.values()) for s, d in self._objects.items()}
            sources = dict(self._status)
            for s in KUBE_SOURCES:
                sources.setdefault(s, SourceStatus(s, SourceState.LOADING))
            return Snapshot(
                taken_at=taken_at or self.clock(),
                sources=sources,
                cluster=dict(self.cluster),
                aws=self.aws,
                metrics=self.metrics,
                gpu_reports=dict(self.gpu_reports),
                target=target,
                **objs,
            )
