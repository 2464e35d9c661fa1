"""Compare the live cache (a LiveSession's Store) with the simulator's objects, kind by kind."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from diagnostics.snapshot import KUBE_SOURCES
from gputui.kube import ingest
from gputui.sim.cluster import SimCluster
from gputui.sim.kinds import KINDS
from gputui.collect.store import Store, key_of

Key = tuple[str | None, str]

_KIND = {s: KINDS.resolve(k) for s, k in ingest.KIND_OF_SOURCE.items()}


@dataclass
class Divergence:
    """Objects whose cached copy is missing, extra, or not the server's version (by source)."""

    missing: dict[str, list[Key]] = field(default_factory=dict)
    """On the server, not in the cache."""
    extra: dict[str, list[Key]] = field(default_factory=dict)
    """In the cache, gone from the server."""
    stale: dict[str, list[Key]] = field(default_factory=dict)
    """In both, but a different resourceVersion, uid or content."""

    @property
    def count(self) -> int:
        return sum(len(v) for d in (self.missing, self.extra, self.stale) for v in d.values())

    def sources(self) -> set[str]:
        return {s for d in (self.missing, self.extra, self.stale) for s, v in d.items() if v}

    def to_json(self) -> dict[str, Any]:
        def keys(d: dict[str, list[Key]]) -> dict[str, list[str]]:
            return {s: ["/".join(p for p in k if p) for k in v] for s, v in sorted(d.items()) if v}

        return {"count": self.count, "missing": keys(self.missing), "extra": keys(self.extra),
                "stale": keys(self.stale)}


def _server_raw(sim: SimCluster, sources: tuple[str, ...]) -> dict[str, dict[Key, bytes]]:
    """Every object's stored bytes, read atomically on the simulator's loop."""
    def read() -> dict[str, dict[Key, bytes]]:
        out: dict[str, dict[Key, bytes]] = {}
        for s in sources:
            info = _KIND[s]
            entries = sim.store.table(info).entries
            out[s] = {((k[0] or None) if info.namespaced else None, k[1]): e.full for k, e in entries.items()}
        return out

    return sim.call(read)


def _versions(rec: Any) -> tuple[str, str]:
    """(resourceVersion, uid) of a cached record; records without the raw object give only the uid."""
    obj = getattr(rec, "obj", None)
    md = obj.get("metadata") if isinstance(obj, dict) else None
    rv = str(md.get("resourceVersion") or "") if isinstance(md, dict) else ""
    return rv, rec.meta.uid


_TYPE_KEYS = ("kind", "apiVersion")


def same_record(a: Any, b: Any) -> bool:
    """Records equal, except that a raw object from a LIST lacks kind/apiVersion (the apiserver drops them from
    built-in kinds' list items) while one from a watch event has them."""
    if a == b:
        return True
    if type(a) is not type(b) or not hasattr(a, "obj"):
        return False
    for f in a.__dataclass_fields__:
        x, y = getattr(a, f), getattr(b, f)
        if f == "obj" and isinstance(x, dict) and isinstance(y, dict):
            x = {k: v for k, v in x.items() if k not in _TYPE_KEYS}
            y = {k: v for k, v in y.items() if k not in _TYPE_KEYS}
        if x != y:
            return False
    return True


def compare(sim: SimCluster, store: Store, sources: tuple[str, ...] = KUBE_SOURCES) -> Divergence:
    """Key by key: same resourceVersion and uid, and the record the cache holds equals the one the server's
    object gives through the same ingest (so kinds whose records keep no resourceVersion are compared too)."""
    server = _server_raw(sim, sources)
    snap = store.snapshot()
    div = Divergence()
    for s in sources:
        cached: dict[Key, Any] = {key_of(s, r): r for r in getattr(snap, s)}
        theirs = server[s]
        missing = [k for k in theirs if k not in cached]
        extra = [k for k in cached if k not in theirs]
        stale: list[Key] = []
        for k, raw in theirs.items():
            rec = cached.get(k)
            if rec is None:
                continue
            obj = orjson.loads(raw)
            fresh = ingest.record(s, obj)
            if s == "namespaces":
                continue  # the cache keeps only the name
            md = obj.get("metadata") or {}
            rv, uid = _versions(rec)
            if uid != md.get("uid") or (rv and rv != md.get("resourceVersion")) or not same_record(rec, fresh):
                stale.append(k)
        for name, keys in (("missing", missing), ("extra", extra), ("stale", stale)):
            if keys:
                getattr(div, name)[s] = sorted(keys, key=lambda k: (k[0] or "", k[1]))
    return div


_NO_RV = frozenset(s for s in KUBE_SOURCES if s in ("events", "runtimeclasses", "namespaces"))
"""Sources whose records keep no raw object (so no resourceVersion): compared by the record itself."""


def fingerprint_server(sim: SimCluster, sources: tuple[str, ...] = KUBE_SOURCES) -> dict[str, dict[Key, Any]]:
    """Cheap per-object identity for polling: the resourceVersion (unique per write) of every object,
    or the ingested record for the few sources whose records keep no resourceVersion."""
    def read() -> dict[str, dict[Key, Any]]:
        out: dict[str, dict[Key, Any]] = {}
        for s in sources:
            info = _KIND[s]
            entries = sim.store.table(info).entries
            out[s] = {((k[0] or None) if info.namespaced else None, k[1]): (e.full if s in _NO_RV else str(e.rv))
                      for k, e in entries.items()}
        return out

    raw = sim.call(read)
    for s in _NO_RV & set(sources):
        raw[s] = {k: ingest.record(s, orjson.loads(v)) for k, v in raw[s].items()}
    return raw


def fingerprint_cache(store: Store, sources: tuple[str, ...] = KUBE_SOURCES) -> dict[str, dict[Key, Any]]:
    """The same identity from the cache."""
    snap = store.snapshot()
    out: dict[str, dict[Key, Any]] = {}
    for s in sources:
        out[s] = {key_of(s, r): (r if s in _NO_RV else _versions(r)[0]) for r in getattr(snap, s)}
    return out
