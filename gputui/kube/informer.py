"""Informer-like Kubernetes sources: paged raw list, then watch from its resourceVersion.

Relists on 410 Gone, reconnects with capped exponential backoff, records forbidden / not
installed / unreachable as the source's status (keeping the last good data), and parses with
orjson while the cyclic GC is paused (the GC, not JSON, dominates parsing many small objects).
"""

from __future__ import annotations

import contextlib
import gc
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from diagnostics.snapshot import SourceState, SourceStatus
from gputui.kube import ingest, shapes
from gputui.kube.api import Api, BrokenAnswer, KubeError, Unreachable
from gputui.kube.resources import RESOURCES, Resource
from gputui.collect.store import Store

_gc_lock = threading.Lock()
_gc_depth = 0


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while any thread parses a large list (re-entrant across threads)."""
    global _gc_depth
    with _gc_lock:
        _gc_depth += 1
        if _gc_depth == 1:
            gc.disable()
    try:
        yield
    finally:
        with _gc_lock:
            _gc_depth -= 1
            if _gc_depth == 0:
                gc.enable()


class Gone(Exception):
    """The watch's resourceVersion fell out of the server's history: relist."""


class StreamBroken(Exception):
    """An accepted watch stream broke (not a refused request): resume from `rv` without backoff."""

    def __init__(self, rv: str) -> None:
        super().__init__(rv)
        self.rv = rv


class ContinueExpired(KubeError):
    """410 on a paged list's `continue`: etcd compacted the revision the list started at. The list
    starts again from the first page (client-go's pager does the same), never stitches two versions."""


def _decode_page(decode: shapes.Decode, raw: bytes, path: str, kind: str) -> dict[str, Any]:
    """A list page, or BrokenAnswer: not JSON (an HTML page, a body cut short), or not a list at all."""
    try:
        with gc_paused():
            body = decode(raw)
    except (ValueError, TypeError) as exc:  # orjson.JSONDecodeError and msgspec errors are ValueErrors
        what = "an HTML page (a proxy's login or error page?)" if raw.lstrip()[:1] == b"<" else (
            f"not valid JSON ({str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__})")
        raise BrokenAnswer(f"{path}: the answer is {what}") from None
    if not isinstance(body, dict) or not isinstance(body.get("items") or [], list) or (
            body.get("kind") and body.get("kind") != f"{kind}List"):
        got = body.get("kind") if isinstance(body, dict) else type(body).__name__
        raise BrokenAnswer(f"{path}: the answer is not a {kind}List (got {str(got)[:60]})")
    return body


def forbidden_detail(res: Resource, verb: str = "list") -> str:
    return f"{verb} {res.qualified}"


def status_for_error(res: Resource, exc: KubeError, verb: str = "list") -> SourceStatus:
    if exc.status == 403:
        return SourceStatus(res.source, SourceState.FORBIDDEN, forbidden_detail(res, verb))
    if exc.status == 404 and res.crd:
        older = " (Karpenter not installed, or older than v1.0: only v1beta1 served)" if res.karpenter_v1 else ""
        return SourceStatus(res.source, SourceState.ABSENT, f"CRD {res.qualified} {res.version} not found{older}")
    if isinstance(exc, Unreachable):
        return SourceStatus(res.source, SourceState.UNREACHABLE, exc.message)
    return SourceStatus(res.source, SourceState.UNREACHABLE, f"HTTP {exc.status} {exc.reason}: {exc.message}"[:300])


class _Fetch:
    """One GET running on its own thread, so the server makes the next page while we build this one."""

    def __init__(self, api: Api, path: str, query: list[tuple[str, Any]], timeout: float) -> None:
        self._result: bytes = b""
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(api, path, query, timeout),
                                        name="list-prefetch", daemon=True)
        self._thread.start()

    def _run(self, api: Api, path: str, query: list[tuple[str, Any]], timeout: float) -> None:
        try:
            self._result = api.get_bytes(path, query, timeout=timeout)
        except BaseException as exc:  # noqa: BLE001 - raised on the caller's thread by result()
            self._error = exc

    def result(self) -> bytes:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._result


def iter_pages(api: Api, res: Resource, *, namespace: str | None = None, field_selector: str | None = None,
               label_selector: str | None = None, page_size: int = 500, timeout: float = 30.0,
               decode: shapes.Decode = orjson.loads) -> Iterator[tuple[list[Any], dict[str, Any]]]:
    """(items, list metadata) per page of a paged list, parsed (whole, unless `decode` says
    otherwise) while the GC is paused.

    The next page is requested before this one is yielded: the server (another process, another
    core) renders it while the caller builds records from this one.
    """
    path = res.path(namespace)

    def query(cont: str | None) -> list[tuple[str, Any]]:
        q: list[tuple[str, Any]] = [("limit", page_size)]
        if cont:
            q.append(("continue", cont))
        if field_selector:
            q.append(("fieldSelector", field_selector))
        if label_selector:
            q.append(("labelSelector", label_selector))
        return q

    raw = api.get_bytes(path, query(None), timeout=timeout)
    while True:
        body = _decode_page(decode, raw, path, res.kind)
        del raw
        meta = body.get("metadata") or {}
        cont = meta.get("continue")
        ahead = _Fetch(api, path, query(cont), timeout) if cont else None
        yield [o for o in body.get("items") or [] if isinstance(o, dict)], meta
        if ahead is None:
            return
        try:
            raw = ahead.result()
        except KubeError as exc:
            if exc.status == 410:
                raise ContinueExpired(410, exc.reason, exc.message) from None
            raise


def list_objects(api: Api, res: Resource, *, namespace: str | None = None, field_selector: str | None = None,
                 label_selector: str | None = None, page_size: int = 500,
                 timeout: float = 30.0, pause: Callable[[], bool] | None = None) -> tuple[list[Any], str]:
    """All records of a resource (paged), and the list's resourceVersion to watch from.

    A 410 on a later page's `continue` starts the list over (twice at most): the pages of one list
    must come from one resourceVersion. `pause`: between pages, wait while it says so (at most
    PAUSE_MAX seconds per list), so more urgent work in the process gets the GIL.
    """
    paused_until = time.monotonic() + PAUSE_MAX
    build = ingest.RECORD_BUILDERS[res.source]
    for attempt in range(3):
        records: list[Any] = []
        rv = ""
        try:
            for items, meta in iter_pages(api, res, namespace=namespace, field_selector=field_selector,
                                          label_selector=label_selector, page_size=page_size, timeout=timeout,
                                          decode=shapes.list_decoder(res.source)):
                with gc_paused():
                    records.extend(build(o) for o in items)
                rv = meta.get("resourceVersion") or rv
                while pause is not None and pause() and time.monotonic() < paused_until:
                    time.sleep(0.005)
        except ContinueExpired:
            if attempt == 2:
                raise
            continue
        return records, rv
    raise AssertionError("unreachable")


PAUSE_MAX = 3.0
"""Seconds a list may be held between its pages in total (see `list_objects`'s `pause`)."""


class Informer:
    """One resource kept current in the Store by a daemon thread."""

    def __init__(self, api: Api, source: str, store: Store, *, watch_timeout: int = 55,
                 page_size: int = 500, max_backoff: float = 10.0,
                 on_event: Callable[[str], None] | None = None, fallback_namespace: str | None = None,
                 preload: str | None = None, pause: Callable[[], bool] | None = None) -> None:
        self.api = api
        self.res = RESOURCES[source]
        self.preload = preload
        self.pause = pause
        """Asked between the pages of a list: wait while it says so (see `list_objects`)."""
        """A fieldSelector (`status.phase=Pending`): read that part of the source ahead of the full
        list (`Store.preload`), watch it until the full list is in, then stop. Best effort: any error
        ends it quietly (the full informer reports the source's status)."""
        self.fallback_namespace = fallback_namespace if self.res.namespaced else None
        """A namespace-limited user (`-n NS`): when the cluster-wide list is forbidden, list and watch
        this namespace instead (what kubectl -n does), and say so in the source's status."""
        self.namespace: str | None = None
        """The namespace listed and watched; None: cluster-wide."""
        self.store = store
        self.watch_timeout = watch_timeout
        self.page_size = page_size
        self.max_backoff = max_backoff
        self.on_event = on_event
        self.stop_event = threading.Event()
        self.relists = 0
        self.reconnects = 0
        self._thread = threading.Thread(target=self._run, name=f"informer-{source}", daemon=True)
        self._build = ingest.RECORD_BUILDERS[source]
        self._decode_event = shapes.event_decoder(source)

    def start(self) -> Informer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stop_event.set()

    @property
    def running(self) -> bool:
        """Its thread was started and has not ended (a preloader ends once superseded or on any error)."""
        return self._thread.is_alive()

    def _run(self) -> None:
        if self.preload:
            self._run_preload()
            return
        failures = 0
        rv = ""
        while not self.stop_event.is_set():
            try:
                if not rv:
                    rv = self._relist()
                    failures = 0
                rv = self._watch(rv)
                failures = 0
            except Gone:
                rv = ""
                continue
            except StreamBroken as exc:
                # The server accepted the watch and the connection broke later (a proxy or apiserver
                # restart, a cut mid-event): not a failure to back off from; go on from the last event.
                rv = exc.rv
                failures = 0
                self.reconnects += 1
                self.stop_event.wait(random.random() * 0.1)
            except KubeError as exc:
                if exc.status == 403 and self.fallback_namespace and self.namespace is None:
                    self.namespace = self.fallback_namespace  # forbidden cluster-wide: read what -n allows
                    rv = ""
                    continue
                st = status_for_error(self.res, exc, "watch" if rv else "list")
                if self.namespace and st.state is SourceState.FORBIDDEN:
                    st = SourceStatus(st.name, st.state, f"{st.detail} in namespace {self.namespace}")
                self.store.set_status(st)
                failures += 1
                self.reconnects += 1
                if exc.status == 429 or (exc.retry_after and exc.status >= 500):
                    delay = (exc.retry_after or 1.0) * (1.0 + 0.2 * random.random())
                elif st.state in (SourceState.FORBIDDEN, SourceState.ABSENT):
                    # Permissions and CRDs change rarely; look again later, from a fresh list.
                    rv = ""
                    delay = 30.0
                else:
                    delay = min(self.max_backoff, 0.2 * 2 ** min(failures, 8)) * (0.5 + random.random())
                self.stop_event.wait(delay)
            except Exception as exc:  # a malformed answer must not kill the informer
                self.store.set_status(SourceStatus(self.res.source, SourceState.UNREACHABLE,
                                                   f"{type(exc).__name__}: {exc}"[:300]))
                failures += 1
                rv = ""
                self.stop_event.wait(min(self.max_backoff, 0.2 * 2 ** min(failures, 8)))

    def _run_preload(self) -> None:
        try:
            rv = ""
            while not self.stop_event.is_set() and not self.store.listed(self.res.source):
                if not rv:
                    records, rv = list_objects(self.api, self.res, field_selector=self.preload,
                                               page_size=self.page_size)
                    if not self.store.preload(self.res.source, records):
                        return
                    self.relists += 1
                    del records
                try:
                    rv = self._watch(rv)
                except Gone:
                    rv = ""
        except Exception:  # noqa: BLE001 - a shortcut that failed: the full list comes anyway
            return

    def _relist(self) -> str:
        """List into the store; returns the resourceVersion to watch from.

        A method of its own so the list dies with this frame: a local of `_run` would outlive it for
        as long as the watch runs and keep every record the watch replaces alive (at 60k pods, a
        burst touching a third of them grew the heap by ~70 MB).
        """
        records, rv = list_objects(self.api, self.res, namespace=self.namespace, page_size=self.page_size,
                                   pause=self.pause)
        scope = f"namespace {self.namespace} only (cluster-wide list forbidden)" if self.namespace else ""
        self.store.replace(self.res.source, records, scope=scope)
        self.relists += 1
        return rv

    def _watch(self, rv: str) -> str:
        query: list[tuple[str, Any]] = [("watch", "true"), ("resourceVersion", rv),
                                        ("allowWatchBookmarks", "true"),
                                        ("timeoutSeconds", self.watch_timeout)]
        if self.preload:
            query.append(("fieldSelector", self.preload))
        opened = False
        seen = False

        def on_open() -> None:
            nonlocal opened
            opened = True
            if not self.preload:
                self.store.touch(self.res.source, recovered=True)

        try:
            for line in self.api.stream(self.res.path(self.namespace), query, read_timeout=self.watch_timeout + 15,
                                        on_open=on_open):
                if self.stop_event.is_set():
                    break
                try:
                    ev = self._decode_event(line)
                except orjson.JSONDecodeError:
                    if not seen:  # not one event: not a watch stream at all (a proxy's page), back off
                        raise BrokenAnswer(f"watch {self.res.path()}: the answer is not a watch stream") from None
                    break  # a torn line: the stream dropped mid-event; re-watch from the last good rv
                seen = True
                etype = ev.get("type")
                obj = ev.get("object") or {}
                if etype == "ERROR":
                    if obj.get("code") == 410 or "Too large resource version" in str(obj.get("message") or ""):
                        raise Gone()  # 410, or the watch cache's 504 for a version from another history
                    raise KubeError(int(obj.get("code") or 500), str(obj.get("reason") or "Error"),
                                    str(obj.get("message") or ""))
                new_rv = (obj.get("metadata") or {}).get("resourceVersion")
                if etype == "BOOKMARK":
                    if _went_back(rv, new_rv):
                        raise Gone()  # the server's history restarted below what we hold: relist, trust nothing
                    rv = new_rv or rv
                    if self.preload:
                        if self.store.listed(self.res.source):
                            break  # the full list is in: this part's watch has nothing left to add
                        continue
                    self.store.touch(self.res.source)
                    continue
                if etype in ("ADDED", "MODIFIED", "DELETED") and self.preload:
                    if not self.store.apply_preloaded(self.res.source, etype, self._build(obj)):
                        break
                    rv = new_rv or rv
                elif etype in ("ADDED", "MODIFIED", "DELETED"):
                    self.store.apply(self.res.source, etype, self._build(obj))
                    rv = new_rv or rv
                    if self.on_event is not None:
                        self.on_event(self.res.source)
        except BrokenAnswer:
            raise  # a failure to back off from, not a stream that broke after working
        except Unreachable:
            if opened:
                raise StreamBroken(rv) from None
            raise
        return rv


def _went_back(held: str, told: str | None) -> bool:
    """A bookmark older than the version we already hold: the apiserver's history was reset (a restored
    etcd, another cluster behind the same address). resourceVersions are opaque, but every apiserver's
    are etcd revisions (integers); anything else is never compared."""
    return bool(told and held and told.isdigit() and held.isdigit() and int(told) < int(held))


def start_informers(api: Api, store: Store, sources: tuple[str, ...] | None = None,
                    **kwargs: Any) -> list[Informer]:
    return [Informer(api, s, store, **kwargs).start() for s in (sources or tuple(RESOURCES))]
