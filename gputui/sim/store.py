"""In-memory object store with a global resourceVersion, an event history ring and watch fan-out.

Every object is kept as its serialized JSON bytes (written once per change), so a LIST is a join of
bytes and a watch event is serialized once for all watchers. The store is not thread-safe by design:
the simulator calls it only from its event-loop thread (`SimCluster` marshals other threads' calls).
"""

from __future__ import annotations

import asyncio
import base64
import bisect
import gc
import random
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import orjson

from gputui.sim import status as st
from gputui.sim.kinds import KINDS, KindInfo, KindRegistry, field_values
from gputui.sim.selectors import FieldSelector, LabelSelector

Key = tuple[str, str]  # (namespace or "", name)
Hook = Callable[[str, dict[str, Any]], None]

_NO_LABELS: LabelSelector = LabelSelector(())
_NO_FIELDS: FieldSelector = FieldSelector(())
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's utilrand alphabet


def now_rfc3339() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Entry:
    """A stored object: list-item bytes plus what selectors need, so matching never parses JSON."""

    __slots__ = ("key", "rv", "full", "labels", "fields")

    def __init__(self, key: Key, rv: int, full: bytes, labels: dict[str, str], fields: dict[str, str]):
        self.key = key
        self.rv = rv
        self.full = full
        self.labels = labels
        self.fields = fields


class Event:
    """One change in the history ring; its wire line is built on first use and shared by all watchers."""

    __slots__ = ("rv", "type", "kind", "ns", "labels", "fields", "full", "prev_labels", "prev_fields", "_line")

    def __init__(
        self,
        rv: int,
        type_: str,
        kind: str,
        ns: str,
        labels: dict[str, str],
        fields: dict[str, str],
        full: bytes,
        prev_labels: dict[str, str] | None = None,
        prev_fields: dict[str, str] | None = None,
    ):
        self.rv = rv
        self.type = type_
        self.kind = kind
        self.ns = ns
        self.labels = labels
        self.fields = fields
        self.full = full
        self.prev_labels = prev_labels
        self.prev_fields = prev_fields
        self._line: bytes | None = None

    @property
    def line(self) -> bytes:
        if self._line is None:
            self._line = event_line(self.type, self.full)
        return self._line


def event_line(type_: str, full: bytes) -> bytes:
    return b'{"type":"' + type_.encode() + b'","object":' + full + b"}\n"


class Watcher:
    """One open watch: a bounded buffer of ready-to-write lines the HTTP handler drains."""

    __slots__ = ("info", "namespace", "labels", "fields", "maxsize", "buf", "wakeup", "closed", "close_mode")

    def __init__(self, info: KindInfo, namespace: str | None, labels: LabelSelector, fields: FieldSelector, maxsize: int):
        self.info = info
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self.maxsize = maxsize
        self.buf: deque[bytes] = deque()
        self.wakeup = asyncio.Event()
        self.closed = False
        self.close_mode = ""  # "end" (clean end of stream) | "abort" (cut mid-event) | "overflow"

    def _matches(self, labels: dict[str, str], fields: dict[str, str]) -> bool:
        return (not self.labels or self.labels.matches(labels)) and (not self.fields or self.fields.matches(fields))

    def line_for(self, ev: Event) -> bytes | None:
        """The line this watcher should see for `ev`, applying selector enter/leave like the apiserver."""
        if self.namespace is not None and ev.ns != self.namespace:
            return None
        if not self.labels and not self.fields:
            return ev.line
        cur = self._matches(ev.labels, ev.fields)
        if ev.type == "MODIFIED" and ev.prev_labels is not None and ev.prev_fields is not None:
            prev = self._matches(ev.prev_labels, ev.prev_fields)
            if cur and prev:
                return ev.line
            if cur:
                return event_line("ADDED", ev.full)
            if prev:
                return event_line("DELETED", ev.full)
            return None
        return ev.line if cur else None

    def push(self, line: bytes) -> None:
        if self.closed:
            return
        if len(self.buf) >= self.maxsize:
            self.close("overflow")  # a slow consumer: end its stream, it re-watches from its last RV
            return
        self.buf.append(line)
        self.wakeup.set()

    def close(self, mode: str = "end") -> None:
        if not self.closed:
            self.closed = True
            self.close_mode = mode
        self.wakeup.set()


@dataclass
class ListPage:
    items: list[bytes]  # full objects, as stored
    resource_version: int
    continue_token: str | None
    remaining: int | None


def join_items(info: KindInfo, items: list[bytes]) -> bytes:
    """The `items` array content of a LIST: built-in kinds drop kind/apiVersion per item, as the apiserver does."""
    if not info.builtin or not items:
        return b",".join(items)
    prefix = info.type_prefix
    plen = len(prefix)
    views = [memoryview(full)[plen:] if full.startswith(prefix) else memoryview(full)[1:] for full in items]
    return b"{" + b",{".join(views)


class _KindTable:
    """Objects of one kind, with sorted keys (etcd order) and a per-namespace name index."""

    __slots__ = ("info", "entries", "keys", "ns_names")

    def __init__(self, info: KindInfo):
        self.info = info
        self.entries: dict[Key, Entry] = {}
        self.keys: list[Key] = []
        self.ns_names: dict[str, list[str]] = {}

    def insert_key(self, key: Key) -> None:
        bisect.insort(self.keys, key)
        bisect.insort(self.ns_names.setdefault(key[0], []), key[1])

    def remove_key(self, key: Key) -> None:
        i = bisect.bisect_left(self.keys, key)
        if i < len(self.keys) and self.keys[i] == key:
            del self.keys[i]
        names = self.ns_names.get(key[0])
        if names is not None:
            j = bisect.bisect_left(names, key[1])
            if j < len(names) and names[j] == key[1]:
                del names[j]
            if not names:
                del self.ns_names[key[0]]


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch; strategic-merge `$directives` are dropped (treated as merge patch)."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def encode_continue(rv: int, key: Key, namespaced: bool) -> str:
    start = f"{key[0]}/{key[1]}" if namespaced else key[1]
    raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start + "\x00"})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str, namespaced: bool) -> tuple[int, Key]:
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        rv, start = int(data["rv"]), str(data["start"]).rstrip("\x00")
    except Exception as exc:  # noqa: BLE001 - any garbage is a client error
        raise st.bad_request(f"continue key is not valid: {exc}") from None
    if namespaced:
        ns, _, name = start.partition("/")
        return rv, (ns, name)
    return rv, ("", start)


CONTINUE_TOO_OLD = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may show up in the list."
)


class Store:
    """All objects of all kinds, one resourceVersion counter, one bounded history ring."""

    def __init__(self, kinds: KindRegistry = KINDS, *, history_size: int = 10_000, watch_queue_size: int = 20_000):
        self.kinds = kinds
        self.rv = 0
        self.history: deque[Event] = deque(maxlen=history_size)
        self.evicted_upto = 0  # highest RV no longer in the ring (watch from below it -> 410)
        self.compacted_rv = 0  # continue tokens older than this -> 410
        self.watch_queue_size = watch_queue_size
        self._tables: dict[str, _KindTable] = {k.kind: _KindTable(k) for k in kinds.kinds}
        self._watchers: dict[str, set[Watcher]] = {}
        self._hooks: dict[str, list[Hook]] = {}

    # ---- helpers -------------------------------------------------------------------------------

    def table(self, info: KindInfo) -> _KindTable:
        return self._tables[info.kind]

    def add_hook(self, kind: str, hook: Hook) -> None:
        """Call `hook(event_type, object)` after every change to objects of `kind`."""
        self._hooks.setdefault(kind, []).append(hook)

    def _key(self, info: KindInfo, obj: dict[str, Any]) -> Key:
        md = obj["metadata"]
        return (md.get("namespace") or "", md["name"]) if info.namespaced else ("", md["name"])

    def _encode(self, info: KindInfo, obj: dict[str, Any], key: Key, rv: int) -> Entry:
        """Serialize once; `obj` has kind and apiVersion as its first keys (see `_normalize`)."""
        labels = obj["metadata"].get("labels") or {}
        return Entry(key, rv, orjson.dumps(obj), {str(k): str(v) for k, v in labels.items()},
                     field_values(info, obj))

    def _normalize(self, info: KindInfo, obj: dict[str, Any], rv: int, old: dict[str, Any] | None) -> dict[str, Any]:
        """Copy `obj` with kind/apiVersion and server-owned metadata set (uid, RV, creationTimestamp)."""
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
            raise st.bad_request("Object 'metadata' is missing or not an object")
        md = dict(obj["metadata"])
        if not md.get("name"):
            raise st.ApiError(422, f"{info.kind} \"\" is invalid: metadata.name: Required value: name or "
                                   "generateName is required", "Invalid")
        if info.namespaced:
            md["namespace"] = md.get("namespace") or "default"
        else:
            md.pop("namespace", None)
        if old is not None:
            omd = old["metadata"]
            md["uid"] = omd.get("uid")
            md["creationTimestamp"] = omd.get("creationTimestamp")
        md.setdefault("uid", None)
        if not md["uid"]:
            md["uid"] = str(uuid.uuid4())
        if not md.get("creationTimestamp"):
            md["creationTimestamp"] = now_rfc3339()
        md["resourceVersion"] = str(rv)
        out: dict[str, Any] = {"kind": info.kind, "apiVersion": info.api_version}
        for k, v in obj.items():
            if k not in ("kind", "apiVersion", "metadata"):
                out[k] = v
        out["metadata"] = md
        # keep the conventional order: kind, apiVersion, metadata, spec, status...
        return {"kind": out.pop("kind"), "apiVersion": out.pop("apiVersion"), "metadata": out.pop("metadata"), **out}

    def _emit(self, info: KindInfo, type_: str, entry: Entry, obj: dict[str, Any] | None,
              prev: Entry | None = None) -> None:
        ev = Event(entry.rv, type_, info.kind, entry.key[0], entry.labels, entry.fields, entry.full,
                   prev.labels if prev else None, prev.fields if prev else None)
        if len(self.history) == self.history.maxlen and self.history:
            self.evicted_upto = max(self.evicted_upto, self.history[0].rv)
        self.history.append(ev)
        watchers = self._watchers.get(info.kind)
        if watchers:
            for w in list(watchers):
                line = w.line_for(ev)
                if line is not None:
                    w.push(line)
        hooks = self._hooks.get(info.kind)
        if hooks:
            the_obj = obj if obj is not None else orjson.loads(entry.full)
            for hook in hooks:
                hook(type_, the_obj)

    # ---- reads ---------------------------------------------------------------------------------

    def get_entry(self, info: KindInfo, namespace: str | None, name: str) -> Entry | None:
        return self._tables[info.kind].entries.get((namespace or "", name) if info.namespaced else ("", name))

    def get(self, info: KindInfo, namespace: str | None, name: str) -> dict[str, Any] | None:
        entry = self.get_entry(info, namespace, name)
        return orjson.loads(entry.full) if entry else None

    def objects(self, info: KindInfo, namespace: str | None = None) -> list[dict[str, Any]]:
        return [orjson.loads(e.full) for e in self._iter(info, namespace)]

    def count(self, info: KindInfo) -> int:
        return len(self._tables[info.kind].entries)

    def _iter(self, info: KindInfo, namespace: str | None, after: Key | None = None) -> Iterator[Entry]:
        table = self._tables[info.kind]
        entries = table.entries
        if namespace is not None and info.namespaced:
            names = table.ns_names.get(namespace, [])
            start = bisect.bisect_right(names, after[1]) if after else 0
            for i in range(start, len(names)):
                yield entries[(namespace, names[i])]
        else:
            keys = table.keys
            start = bisect.bisect_right(keys, after) if after else 0
            for i in range(start, len(keys)):
                yield entries[keys[i]]

    def list_page(
        self,
        info: KindInfo,
        namespace: str | None = None,
        labels: LabelSelector = _NO_LABELS,
        fields: FieldSelector = _NO_FIELDS,
        limit: int = 0,
        continue_token: str | None = None,
    ) -> ListPage:
        """One page of a LIST, in key order; the continue token carries (rv, last key)."""
        rv = self.rv
        after: Key | None = None
        if continue_token:
            rv, after = decode_continue(continue_token, info.namespaced)
            if rv < self.compacted_rv:
                raise st.ApiError(410, CONTINUE_TOO_OLD, "Expired")
        items: list[bytes] = []
        last: Key | None = None
        more = False
        check_labels, check_fields = bool(labels), bool(fields)
        for entry in self._iter(info, namespace, after):
            if limit and len(items) >= limit:
                more = True
                break
            if check_labels and not labels.matches(entry.labels):
                continue
            if check_fields and not fields.matches(entry.fields):
                continue
            items.append(entry.full)
            last = entry.key
        token = encode_continue(rv, last, info.namespaced) if more and last is not None else None
        remaining = None
        if token and not check_labels and not check_fields:
            remaining = self._remaining_after(info, namespace, last)  # type: ignore[arg-type]
        return ListPage(items, rv, token, remaining)

    def _remaining_after(self, info: KindInfo, namespace: str | None, key: Key) -> int:
        table = self._tables[info.kind]
        if namespace is not None and info.namespaced:
            names = table.ns_names.get(namespace, [])
            return len(names) - bisect.bisect_right(names, key[1])
        return len(table.keys) - bisect.bisect_right(table.keys, key)

    # ---- writes --------------------------------------------------------------------------------

    def create(self, obj: dict[str, Any], info: KindInfo | None = None) -> dict[str, Any]:
        """Create; 409 AlreadyExists if present. Honours metadata.generateName."""
        info = info or self.kinds.resolve(str(obj.get("kind", "")))
        md = obj.get("metadata")
        if isinstance(md, dict) and not md.get("name") and md.get("generateName"):
            obj = {**obj, "metadata": {**md, "name": self._generate_name(info, md)}}
        table = self._tables[info.kind]
        rv = self.rv + 1
        new = self._normalize(info, obj, rv, None)
        key = self._key(info, new)
        if key in table.entries:
            raise st.already_exists(info, key[1])
        self.rv = rv
        entry = self._encode(info, new, key, rv)
        table.entries[key] = entry
        table.insert_key(key)
        self._emit(info, "ADDED", entry, new)
        return new

    def _generate_name(self, info: KindInfo, md: dict[str, Any]) -> str:
        table = self._tables[info.kind]
        ns = (md.get("namespace") or "default") if info.namespaced else ""
        while True:
            name = md["generateName"] + "".join(random.choices(_GENERATE_ALPHABET, k=5))
            if (ns, name) not in table.entries:
                return name

    def update(
        self,
        info: KindInfo,
        namespace: str | None,
        name: str,
        change: Callable[[dict[str, Any]], dict[str, Any]],
        expect_rv: str | None = None,
    ) -> dict[str, Any]:
        """Read-modify-write one object under its key; MODIFIED event; optional RV precondition."""
        table = self._tables[info.kind]
        key: Key = (namespace or "default", name) if info.namespaced else ("", name)
        old_entry = table.entries.get(key)
        if old_entry is None:
            raise st.not_found(info, name)
        if expect_rv and expect_rv != str(old_entry.rv):
            raise st.conflict(info, name)
        old = orjson.loads(old_entry.full)
        candidate = change(orjson.loads(old_entry.full))
        cmd = candidate.setdefault("metadata", {}) if isinstance(candidate, dict) else None
        if cmd is None:
            raise st.bad_request("the object must be a JSON object")
        cmd["name"] = name
        if info.namespaced:
            cmd["namespace"] = key[0]
        rv = self.rv + 1
        new = self._normalize(info, candidate, rv, old)
        self.rv = rv
        entry = self._encode(info, new, key, rv)
        table.entries[key] = entry
        self._emit(info, "MODIFIED", entry, new, old_entry)
        return new

    def replace(self, obj: dict[str, Any], info: KindInfo | None = None, *, keep_status: bool = False) -> dict[str, Any]:
        """PUT semantics: replace the whole object (RV precondition if the body carries one)."""
        info = info or self.kinds.resolve(str(obj.get("kind", "")))
        md = obj.get("metadata") or {}

        def change(old: dict[str, Any]) -> dict[str, Any]:
            new = dict(obj)
            if keep_status:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            return new

        return self.update(info, md.get("namespace"), md.get("name", ""), change, md.get("resourceVersion"))

    def apply(self, obj: dict[str, Any], info: KindInfo | None = None) -> dict[str, Any]:
        """Create, or replace unconditionally if it exists."""
        info = info or self.kinds.resolve(str(obj.get("kind", "")))
        md = obj.get("metadata") or {}
        if self.get_entry(info, md.get("namespace") or "default", md.get("name", "")) is None:
            return self.create(obj, info)
        obj = {**obj, "metadata": {k: v for k, v in md.items() if k != "resourceVersion"}}
        return self.replace(obj, info)

    def patch(
        self,
        info: KindInfo,
        namespace: str | None,
        name: str,
        patch: dict[str, Any],
        scope: str = "all",
    ) -> dict[str, Any]:
        """Merge-patch; scope "main" ignores status (status subresource kinds), "status" patches only status."""
        if not isinstance(patch, dict):
            raise st.bad_request("the patch must be a JSON object")
        expect = (patch.get("metadata") or {}).get("resourceVersion") if isinstance(patch.get("metadata"), dict) else None

        def change(old: dict[str, Any]) -> dict[str, Any]:
            if scope == "status":
                return {**old, "status": merge_patch(old.get("status"), patch.get("status", {}))}
            new = merge_patch(old, patch)
            if scope == "main" and "status" in info.subresources:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            return new

        return self.update(info, namespace, name, change, expect)

    def delete(self, info: KindInfo, namespace: str | None, name: str) -> dict[str, Any]:
        """Delete at once; the DELETED event carries the final object at a new RV, as etcd does."""
        table = self._tables[info.kind]
        key: Key = (namespace or "default", name) if info.namespaced else ("", name)
        old_entry = table.entries.pop(key, None)
        if old_entry is None:
            raise st.not_found(info, name)
        table.remove_key(key)
        self.rv += 1
        obj = orjson.loads(old_entry.full)
        obj["metadata"]["resourceVersion"] = str(self.rv)
        entry = self._encode(info, obj, key, self.rv)
        self._emit(info, "DELETED", entry, obj)
        return obj

    def bulk_load(self, objects: Iterable[dict[str, Any]]) -> int:
        """Fast path for big fixtures: one sort per kind instead of one insert per object.

        The cyclic GC is paused meanwhile: it would rescan every new entry many times over (2x slower).
        """
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return self._bulk_load(objects)
        finally:
            if was_enabled:
                gc.enable()

    def _bulk_load(self, objects: Iterable[dict[str, Any]]) -> int:
        touched: dict[str, list[Key]] = {}
        n = 0
        for obj in objects:
            info = self.kinds.resolve(str(obj.get("kind", "")))
            table = self._tables[info.kind]
            md = obj.get("metadata") or {}
            key: Key = ((md.get("namespace") or "default") if info.namespaced else "", md.get("name", ""))
            if key in table.entries:
                self.apply(obj, info)
                n += 1
                continue
            rv = self.rv + 1
            new = self._normalize(info, obj, rv, None)
            self.rv = rv
            entry = self._encode(info, new, key, rv)
            table.entries[key] = entry
            touched.setdefault(info.kind, []).append(key)
            self._emit(info, "ADDED", entry, new if info.kind in self._hooks else None)
            n += 1
        for kind, keys in touched.items():
            table = self._tables[kind]
            table.keys.extend(keys)
            table.keys.sort()
            for ns, name in keys:
                table.ns_names.setdefault(ns, []).append(name)
            for ns in {k[0] for k in keys}:
                table.ns_names[ns].sort()
        return n

    # ---- watch ---------------------------------------------------------------------------------

    def watch(
        self,
        info: KindInfo,
        namespace: str | None,
        labels: LabelSelector = _NO_LABELS,
        fields: FieldSelector = _NO_FIELDS,
        since: int | None = None,
    ) -> tuple[Watcher, list[bytes]]:
        """Register a watcher; returns it with the lines to send first (ADDED snapshot or replay)."""
        w = Watcher(info, namespace if info.namespaced else None, labels, fields, self.watch_queue_size)
        initial: list[bytes] = []
        if not since:
            for entry in self._iter(info, namespace if info.namespaced else None):
                if (not labels or labels.matches(entry.labels)) and (not fields or fields.matches(entry.fields)):
                    initial.append(event_line("ADDED", entry.full))
        else:
            if since < self.evicted_upto:
                raise st.too_old(since, self.evicted_upto)
            if since > self.rv:
                # Not a version this server issued (the client watched an earlier apiserver whose history is
                # gone, or another cluster behind the same address): never resume silently from it.
                raise st.ApiError(410, f"resource version {since} is not known to this server "
                                       f"(current: {self.rv}): list again", "Expired")
            for ev in self.history:
                if ev.rv > since and ev.kind == info.kind:
                    line = w.line_for(ev)
                    if line is not None:
                        initial.append(line)
        self._watchers.setdefault(info.kind, set()).add(w)
        return w, initial

    def unwatch(self, w: Watcher) -> None:
        self._watchers.get(w.info.kind, set()).discard(w)

    def watchers(self, info: KindInfo | None = None) -> list[Watcher]:
        if info is not None:
            return list(self._watchers.get(info.kind, ()))
        return [w for ws in self._watchers.values() for w in ws]

    def drop_watches(self, mode: str = "end", info: KindInfo | None = None) -> int:
        """End open watch streams (mode "abort" cuts them mid-event); returns how many."""
        dropped = self.watchers(info)
        for w in dropped:
            w.close(mode)
            self.unwatch(w)
        return len(dropped)

    def reset_history(self) -> None:
        """Forget all history, as after an apiserver restart: every older RV is now too old."""
        self.history.clear()
        self.evicted_upto = self.rv
        self.compacted_rv = self.rv



def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise st.bad_request(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str]) -> Any:
    for p in parts:
        doc = doc[int(p)] if isinstance(doc, list) else doc[p]
    return doc


def json_patch(doc: Any, ops: list[dict[str, Any]]) -> Any:
    """RFC 6902 JSON patch (add, remove, replace, move, copy, test) on a copy of `doc`."""
    doc = orjson.loads(orjson.dumps(doc))
    try:
        for op in ops:
            kind, parts = op["op"], _pointer(op["path"])
            if kind == "test":
                if _walk(doc, parts) != op.get("value"):
                    raise st.ApiError(422, f"testing value {op['path']} failed", "Invalid")
                continue
            if kind in ("move", "copy"):
                src = _pointer(op["from"])
                value = orjson.loads(orjson.dumps(_walk(doc, src)))
                if kind == "move":
                    parent = _walk(doc, src[:-1])
                    parent.pop(int(src[-1]) if isinstance(parent, list) else src[-1])
                kind, op = "add", {**op, "value": value}
            if not parts:
                if kind in ("add", "replace"):
                    doc = op["value"]
                    continue
                raise st.bad_request("cannot remove the whole document")
            parent, last = _walk(doc, parts[:-1]), parts[-1]
            if kind == "remove":
                parent.pop(int(last) if isinstance(parent, list) else last)
            elif kind == "replace":
                if isinstance(parent, list):
                    parent[int(last)] = op["value"]
                else:
                    if last not in parent:
                        raise KeyError(last)
                    parent[last] = op["value"]
            elif kind == "add":
                if isinstance(parent, list):
                    parent.insert(len(parent) if last == "-" else int(last), op["value"])
                else:
                    parent[last] = op["value"]
            else:
                raise st.bad_request(f"unknown JSON patch operation {kind!r}")
    except (KeyError, IndexError, ValueError, TypeError) as exc:
        raise st.ApiError(422, f"the server rejected our request due to an error in our request: {exc}",
                          "Invalid") from None
    return doc
