"""The live cache: records per source, each source's status, and cheap frozen Snapshots of it."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from diagnostics.snapshot import KUBE_SOURCES, Snapshot, SourceState, SourceStatus, utcnow

Key = tuple[str | None, str]

JOURNAL_MAX = 50_000
"""Changes kept between two `Store.changes` reads; a reader further behind rebuilds from the snapshot."""
PENDING_ONLY = "pending pods only, the full pod list is loading"
"""The pods source's status detail while only the pending pods are read (see `Store.preload`)."""


@dataclass(frozen=True, slots=True)
class Changes:
    """What changed since a reader's last version, cut atomically with a snapshot at `version`."""

    version: int
    snapshot: Snapshot
    records: Mapping[str, Mapping[Key, Any]]
    """Per source: each changed key's record now, or None when it was deleted."""
    full: frozenset[str]
    """Sources relisted or cleared since then (or all of them on a first or too-late read): read
    their whole content from `snapshot` instead."""


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
        self._journal: deque[tuple[int, str, Key | None]] | None = None
        """(version, source, key) per change, oldest first; None until someone reads `changes`."""
        self._journal_floor = 0
        """The journal covers every change after this version."""
        self._scope: dict[str, str] = {}
        """Sources read in one namespace only (a namespace-limited user): what their status says."""
        self._listed: set[str] = set()
        """Sources whose full list is in: a preloaded part of them is no longer written."""
        self._preloaded: set[str] = set()
        """Sources holding only a preloaded part (pending pods) until their full list arrives."""

    # --- writers (informers) ---
    def replace(self, source: str, records: Iterable[Any], scope: str = "") -> None:
        """A full list. `scope`: it covers only part of the cluster (`namespace ml only`): the
        source's status is then OK but partial, with that as its detail."""
        fresh = {key_of(source, r): r for r in records}
        with self._lock:
            self._objects[source] = fresh
            self._listed.add(source)
            self._preloaded.discard(source)
            self._scope[source] = scope
            self._status[source] = self._ok(source)
            self.version += 1
            self._log(source, None)
        self._synced[source].set()

    def preload(self, source: str, records: Iterable[Any], detail: str = PENDING_ONLY) -> bool:
        """A part of a source read ahead of its full list (the pending pods, a few per cent of all
        pods), so the screen has them seconds earlier. Its status is OK but partial with `detail`
        until `replace` brings the full list, which supersedes the part wholesale (a pod that left
        Pending meanwhile is not kept). False, and nothing written, once the full list is in."""
        fresh = {key_of(source, r): r for r in records}
        with self._lock:
            if source in self._listed:
                return False
            self._objects[source] = fresh
            self._preloaded.add(source)
            self._status[source] = SourceStatus(source, SourceState.OK, detail, updated_at=self.clock(), partial=True)
            self.version += 1
            self._log(source, None)
        return True

    def apply_preloaded(self, source: str, event_type: str, rec: Any) -> bool:
        """A watch event of the preloaded part (DELETED also when an object left its selector: a pod
        that started running). A deletion removes only the same object (uid), an update never goes
        back to an older resourceVersion. False, and nothing written, once the full list is in."""
        k = key_of(source, rec)
        with self._lock:
            if source in self._listed or source not in self._preloaded:
                return False
            held = self._objects[source].get(k)
            if event_type == "DELETED":
                if held is None or not rec.meta.uid or held.meta.uid == rec.meta.uid:
                    self._objects[source].pop(k, None)
            elif held is None or held.meta.uid != rec.meta.uid or not _older(rec, held):
                self._objects[source][k] = rec
            else:
                return True
            self.version += 1
            if self._journal is not None:
                self._log(source, k)
        return True

    def listed(self, source: str) -> bool:
        """The source's full list is in (a preloaded part is then superseded)."""
        return source in self._listed

    def apply(self, source: str, event_type: str, rec: Any) -> None:
        k = key_of(source, rec)
        with self._lock:
            if event_type == "DELETED":
                self._objects[source].pop(k, None)
            else:
                self._objects[source][k] = rec
            st = self._status.get(source)
            if st is None or st.state is not SourceState.OK or st.updated_at is None:
                self._status[source] = self._ok(source)
            self.version += 1
            if self._journal is not None:
                self._log(source, k)

    def touch(self, source: str, recovered: bool = False) -> None:
        """A bookmark or a quiet watch: the data is current as of now. `recovered`: a watch was just
        re-established from the cache's resourceVersion, so stale data is current again."""
        with self._lock:
            st = self._status.get(source)
            if st is not None and (st.state is SourceState.OK or (recovered and st.state is SourceState.STALE)):
                self._status[source] = self._ok(source)
                self.version += st.state is not SourceState.OK

    def _ok(self, source: str) -> SourceStatus:
        """An OK status as of now, partial when the source is read in one namespace only (lock held)."""
        scope = self._scope.get(source, "")
        return SourceStatus(source, SourceState.OK, scope, updated_at=self.clock(), partial=bool(scope))

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
                self._log(status.name, None, bump=True)
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

    def _log(self, source: str, key: Key | None, bump: bool = False) -> None:
        """Journal one change (key None: the whole source) at the current version (caller holds the lock)."""
        journal = self._journal
        if journal is None:
            return
        journal.append((self.version + bump, source, key))
        if len(journal) > JOURNAL_MAX:
            self._journal_floor = journal.popleft()[0]

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
            return self._snapshot(taken_at, target)

    def changes(self, since: int, taken_at: datetime | None = None) -> Changes:
        """A snapshot and every record changed after version `since`, in one atomic cut.

        Lets a view update only the rows whose objects changed (O(changes), not O(objects)) while
        knowing exactly which store version it shows. Made for one reader (the TUI's frame
        worker), so the journal is emptied on each read: another reader, a first call, or a reader
        more than JOURNAL_MAX changes behind gets every source as `full` (still correct, slower).
        """
        with self._lock:
            snap = self._snapshot(taken_at, "cluster")
            journal = self._journal
            if journal is None or since < self._journal_floor:
                out = Changes(self.version, snap, {}, frozenset(self._objects))
            else:
                full: set[str] = set()
                keys: dict[str, set[Key]] = {}
                for version, source, key in reversed(journal):
                    if version <= since:
                        break
                    if key is None:
                        full.add(source)
                    else:
                        keys.setdefault(source, set()).add(key)
                records = {s: {k: self._objects[s].get(k) for k in ks} for s, ks in keys.items() if s not in full}
                out = Changes(self.version, snap, records, frozenset(full))
            self._journal = deque()
            self._journal_floor = self.version
            return out

    def _snapshot(self, taken_at: datetime | None, target: str) -> Snapshot:
        objs: dict[str, Any] = {s: tuple(d.values()) for s, d in self._objects.items()}
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
            # Only pending pods read: no node's pods are all known (checks judge no node's free room).
            pods_read_on=frozenset() if "pods" in self._preloaded else None,
            **objs,
        )


def _older(rec: Any, held: Any) -> bool:
    """`rec` is an older version of `held` (resourceVersions compare as integers only: etcd revisions)."""
    a, b = _rv(rec), _rv(held)
    return bool(a and b and a.isdigit() and b.isdigit() and int(a) < int(b))


def _rv(rec: Any) -> str:
    obj = getattr(rec, "obj", None)
    md = obj.get("metadata") if isinstance(obj, Mapping) else None
    return str(md.get("resourceVersion") or "") if isinstance(md, Mapping) else ""
