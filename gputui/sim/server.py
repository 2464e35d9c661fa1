"""The aiohttp app that speaks the Kubernetes REST protocol over the simulator's store.

One catch-all handler parses the path the way the apiserver does (`/api/v1/namespaces/{ns}/pods/{name}/log`,
`/apis/{group}/{version}/{plural}`), checks faults, authentication, absence and RBAC, then dispatches to
list / watch / get / create / update / patch / delete / log / discovery.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import orjson
import yaml
from aiohttp import web

from gputui.sim import status as st
from gputui.sim.access import AccessPolicy
from gputui.sim.faults import Breakage, Faults, fault_error
from gputui.sim.defaults import pod_defaults
from gputui.sim.discovery import Discovery
from gputui.sim.kinds import KINDS, KindInfo, KindRegistry
from gputui.sim.logs import LogBook
from gputui.sim.params import flag, int_param
from gputui.sim.podlogs import serve_log
from gputui.sim.selectors import SelectorError, parse_field_selector, parse_label_selector
from gputui.sim.store import CONTINUE_TOO_OLD, Store, join_items, json_patch
from gputui.sim.tables import table_for

log = logging.getLogger(__name__)

VERSION_INFO = {
    "major": "1",
    "minor": "31",
    "gitVersion": "v1.31.4-eks-2d5f260",
    "gitCommit": "6f4ba9f5f3c2a1e3c5b4f0e5d6c7b8a9f0e1d2c3",
    "gitTreeState": "clean",
    "buildDate": "2024-12-12T21:29:20Z",
    "goVersion": "go1.22.9",
    "compiler": "gc",
    "platform": "linux/amd64",
}
JSON = "application/json"
_WRITE_CHUNK = 1 << 20


@dataclass
class ServerConfig:
    bookmark_interval: float = 1.0
    default_watch_timeout: float = 1800.0
    token: str | None = None  # when set, requests must carry `Authorization: Bearer <token>`
    version: dict[str, str] = field(default_factory=lambda: dict(VERSION_INFO))
    request_log_size: int = 2000


@dataclass
class Target:
    """A parsed resource request path."""

    info: KindInfo
    namespace: str | None
    name: str | None
    subresource: str
    watch_path: bool


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    return web.Response(body=data, status=status, content_type=JSON, headers=headers)


def _error(err: st.ApiError) -> web.Response:
    return _json(err.to_bytes(), err.code, err.headers)


class SimServer:
    """Request handling; everything runs on the simulator's event loop."""

    def __init__(self, store: Store, logs: LogBook, access: AccessPolicy, faults: Faults,
                 config: ServerConfig | None = None, kinds: KindRegistry = KINDS) -> None:
        self.store = store
        self.logs = logs
        self.access = access
        self.faults = faults
        self.config = config or ServerConfig()
        self.kinds = kinds
        self.requests: deque[tuple[str, str]] = deque(maxlen=self.config.request_log_size)
        self.discovery = Discovery(kinds, access, self.config.version["gitVersion"])

    def make_app(self) -> web.Application:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    # ---- entry point ---------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        self.requests.append((request.method, request.path_qs))
        try:
            delay = self.faults.latency_for(path)
            if delay:
                await asyncio.sleep(delay)
            gate = self.faults.held_by(request.path_qs)
            while gate is not None and not gate.is_set():
                await asyncio.sleep(0.01)
            if self.config.token and request.headers.get("Authorization") != f"Bearer {self.config.token}":
                raise st.ApiError(401, "Unauthorized", "Unauthorized")
            injected = self.faults.take_failure(path)
            if injected is not None:
                raise injected
            breakage = self.faults.take_breakage(request.path_qs)  # the query too: a watch can be broken alone
            if breakage is not None:
                return await self._broken(request, breakage)
            if "continue" in request.query and self.faults.take_continue_expiry():
                raise st.ApiError(410, CONTINUE_TOO_OLD, "Expired")
            return await self._route(request)
        except st.ApiError as err:
            return _error(err)
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as exc:  # noqa: BLE001 - a bug must still answer like an apiserver
            log.exception("simulator error on %s %s", request.method, request.path_qs)
            return _error(fault_error(500, message=f"simulator error: {exc!r}"))

    async def _broken(self, request: web.Request, mode: Breakage) -> web.StreamResponse:
        """The answer a proxy, a load balancer or a dying apiserver gives instead of a Status."""
        if mode == "reset":
            if request.transport is not None:
                request.transport.abort()
            return web.Response()  # never sent: aiohttp finds the transport closed (no error logged)
        if mode == "html":
            return web.Response(status=200, content_type="text/html",
                                text="<!DOCTYPE html><html><body><h1>Sign in</h1><form action=/oauth2/start>"
                                     "</form></body></html>")
        real = await self._route(request)
        body = real.body if isinstance(real, web.Response) and isinstance(real.body, bytes) else b"{}"
        if mode == "malformed":
            return web.Response(status=200, body=body[: len(body) // 2], content_type=JSON)
        if mode == "list-for-get":
            obj = orjson.loads(body)
            kind = str(obj.get("kind") or "")
            listed = {"kind": f"{kind}List", "apiVersion": obj.get("apiVersion", "v1"), "metadata": {},
                      "items": [obj] if kind and not kind.endswith("List") else obj.get("items", [])}
            return _json(listed)
        # truncated: the headers promise the whole body, half of it arrives, then the connection closes
        resp = web.StreamResponse(status=200, headers={"Content-Type": JSON})
        resp.content_length = len(body)
        await resp.prepare(request)
        await resp.write(body[: max(1, len(body) // 2)])
        if request.transport is not None:
            request.transport.abort()
        return resp

    async def _route(self, request: web.Request) -> web.StreamResponse:
        segs = [s for s in request.path.split("/") if s]
        if not segs:
            return _json({"paths": ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version"]})
        head = segs[0]
        if head == "version" and len(segs) == 1:
            return _json(self.config.version)
        if head in ("healthz", "livez", "readyz"):
            return web.Response(text="ok", content_type="text/plain")
        if head == "openapi":
            return _json(self.discovery.openapi(segs[1:]))
        if head == "api":
            if len(segs) == 1:
                host = request.host or "127.0.0.1"
                return _json({"kind": "APIVersions", "versions": ["v1"],
                              "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}]})
            group, version, rest = "", segs[1], segs[2:]
        elif head == "apis":
            if len(segs) == 1:
                return _json(self.discovery.group_list())
            group = segs[1]
            if len(segs) == 2:
                found = self.discovery.group(group)
                if found is None:
                    raise st.resource_not_found()
                return _json(found)
            version, rest = segs[2], segs[3:]
        else:
            raise st.resource_not_found()
        if not rest:
            return _json(self.discovery.resource_list(group, version))
        target = self._target(group, version, rest)
        return await self._dispatch(request, target)

    def _target(self, group: str, version: str, rest: list[str]) -> Target:
        watch_path = False
        if rest and rest[0] == "watch":
            watch_path, rest = True, rest[1:]
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces" and not (len(rest) == 3 and rest[2] in ("status", "finalize")):
            namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise st.resource_not_found()
        info = self.kinds.by_path(group, version, rest[0])
        if info is None or self.access.is_absent(info):
            raise st.resource_not_found()
        if namespace is not None and not info.namespaced:
            raise st.resource_not_found()
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else ""
        if sub and sub not in info.subresources:
            raise st.resource_not_found()
        return Target(info, namespace, name, sub, watch_path)

    def _check(self, t: Target, verb: str) -> None:
        if self.access.is_forbidden(t.info, verb, t.subresource, t.namespace):
            raise st.forbidden(t.info, verb, self.access.user, t.namespace, t.name, t.subresource)

    async def _dispatch(self, request: web.Request, t: Target) -> web.StreamResponse:
        method, q = request.method, request.query
        if t.info.kind == "SelfSubjectAccessReview":
            if method != "POST" or t.name:
                raise st.ApiError(405, "the server does not allow this method on the requested resource",
                                  "MethodNotAllowed")
            return _json(self._access_review(await self._body(request)), 201)
        if method == "GET":
            if t.name is None:
                if t.watch_path or flag(q.get("watch")):
                    self._check(t, "watch")
                    return await self._watch(request, t)
                self._check(t, "list")
                return self._list(request, t)
            if t.subresource == "log":
                self._check(t, "get")
                pod = self.store.get(t.info, t.namespace, t.name)
                if pod is None:
                    raise st.not_found(t.info, t.name)
                return await serve_log(request, pod, self.logs)
            if t.subresource not in ("", "status"):
                raise st.ApiError(405, "the server does not allow this method on the requested resource",
                                  "MethodNotAllowed")
            self._check(t, "get")
            entry = self.store.get_entry(t.info, t.namespace, t.name)
            if entry is None:
                raise st.not_found(t.info, t.name)
            if "as=Table" in request.headers.get("Accept", ""):
                return _json(table_for(t.info, [entry.full], self.store.rv, None, q.get("includeObject") or "Metadata"))
            return _json(entry.full)
        if method == "POST" and t.name is None:
            self._check(t, "create")
            return self._create(t, await self._body(request), q)
        if method == "PUT" and t.name:
            self._check(t, "update")
            return self._replace(t, await self._body(request))
        if method == "PATCH" and t.name:
            self._check(t, "patch")
            return self._patch(request, t, await request.read())
        if method == "DELETE":
            self._check(t, "delete" if t.name else "deletecollection")
            if t.name:
                return _json(self.store.delete(t.info, t.namespace, t.name))
            return self._delete_collection(request, t)
        raise st.ApiError(405, "the server does not allow this method on the requested resource", "MethodNotAllowed")

    async def _body(self, request: web.Request) -> Any:
        raw = await request.read()
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            if "yaml" in request.content_type:
                try:
                    return yaml.safe_load(raw)
                except yaml.YAMLError as exc:
                    raise st.bad_request(f"error decoding YAML: {exc}") from None
            raise st.bad_request("the body of the request was in an unknown format - accepted media types "
                                 "include: application/json, application/yaml") from None

    # ---- list / watch --------------------------------------------------------------------------

    def _selectors(self, t: Target, q: Any) -> tuple[Any, Any]:
        try:
            labels = parse_label_selector(q.get("labelSelector"))
            fields = parse_field_selector(q.get("fieldSelector"), t.info.selectable_fields)
        except SelectorError as exc:
            raise st.bad_request(str(exc)) from None
        return labels, fields

    def _list(self, request: web.Request, t: Target) -> web.Response:
        q = request.query
        labels, fields = self._selectors(t, q)
        limit = int_param(q, "limit") or 0
        page = self.store.list_page(t.info, t.namespace, labels, fields, max(limit, 0), q.get("continue") or None)
        if "as=Table" in request.headers.get("Accept", ""):
            return _json(table_for(t.info, page.items, page.resource_version, page.continue_token,
                                   q.get("includeObject") or "Metadata"))
        meta: dict[str, Any] = {"resourceVersion": str(page.resource_version)}
        if page.continue_token:
            meta["continue"] = page.continue_token
        if page.remaining:
            meta["remainingItemCount"] = page.remaining
        head = (b'{"kind":"' + t.info.list_kind.encode() + b'","apiVersion":"' + t.info.api_version.encode()
                + b'","metadata":' + orjson.dumps(meta) + b',"items":[')
        return web.Response(body=head + join_items(t.info, page.items) + b"]}", content_type=JSON)

    async def _watch(self, request: web.Request, t: Target) -> web.StreamResponse:
        q = request.query
        labels, fields = self._selectors(t, q)
        rv_param = q.get("resourceVersion") or ""
        try:
            since = int(rv_param) if rv_param else 0
        except ValueError:
            raise st.bad_request(f"invalid resource version: {rv_param!r}") from None
        timeout = int_param(q, "timeoutSeconds")
        timeout_s = float(timeout) if timeout and timeout > 0 else self.config.default_watch_timeout
        bookmarks = flag(q.get("allowWatchBookmarks"))
        resp = web.StreamResponse(status=200, headers={"Content-Type": JSON, "Cache-Control": "no-cache, private"})
        resp.enable_chunked_encoding()
        if self.faults.take_expire(t.info.kind):
            await resp.prepare(request)
            await resp.write(b'{"type":"ERROR","object":' + st.too_old(since, self.store.rv).to_bytes() + b"}\n")
            return resp
        try:
            watcher, initial = self.store.watch(t.info, t.namespace, labels, fields, since)
        except st.ApiError as err:
            if err.code != 410:
                raise
            await resp.prepare(request)
            await resp.write(b'{"type":"ERROR","object":' + err.to_bytes() + b"}\n")
            return resp
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        bookmark_prefix = (b'{"type":"BOOKMARK","object":{"kind":"' + t.info.kind.encode() + b'","apiVersion":"'
                           + t.info.api_version.encode() + b'","metadata":{"resourceVersion":"')
        try:
            await resp.prepare(request)
            chunk: list[bytes] = []
            size = 0
            for line in initial:
                chunk.append(line)
                size += len(line)
                if size >= _WRITE_CHUNK:
                    await resp.write(b"".join(chunk))
                    chunk, size = [], 0
            if chunk:
                await resp.write(b"".join(chunk))
            last_write = loop.time()
            while True:
                watcher.wakeup.clear()
                if watcher.buf:
                    lines = list(watcher.buf)
                    watcher.buf.clear()
                    await resp.write(b"".join(lines))
                    last_write = loop.time()
                    continue
                if watcher.closed:
                    if watcher.close_mode == "abort":
                        await resp.write(b'{"type":"MODIFIED","object":{"kind":"' + t.info.kind.encode() + b'","api')
                        if request.transport is not None:
                            request.transport.abort()
                    break
                now = loop.time()
                if now >= deadline:
                    if bookmarks:
                        await resp.write(bookmark_prefix + str(self.store.rv).encode() + b'"}}}\n')
                    break
                wait = deadline - now
                if bookmarks:
                    wait = min(wait, max(0.0, last_write + self.config.bookmark_interval - now))
                try:
                    await asyncio.wait_for(watcher.wakeup.wait(), timeout=wait)
                except TimeoutError:
                    if bookmarks and not watcher.buf and not watcher.closed and loop.time() < deadline:
                        await resp.write(bookmark_prefix + str(self.store.rv).encode() + b'"}}}\n')
                        last_write = loop.time()
        except (ConnectionResetError, ConnectionError):
            pass
        finally:
            self.store.unwatch(watcher)
        return resp

    def _delete_collection(self, request: web.Request, t: Target) -> web.Response:
        labels, fields = self._selectors(t, request.query)
        page = self.store.list_page(t.info, t.namespace, labels, fields)
        deleted = []
        for raw in page.items:
            md = orjson.loads(raw)["metadata"]
            deleted.append(self.store.delete(t.info, md.get("namespace"), md["name"]))
        return _json({"kind": t.info.list_kind, "apiVersion": t.info.api_version,
                      "metadata": {"resourceVersion": str(self.store.rv)}, "items": deleted})

    # ---- writes --------------------------------------------------------------------------------

    def _create(self, t: Target, body: Any, q: Any) -> web.Response:
        if not isinstance(body, dict):
            raise st.bad_request("the body of the request must be a JSON object")
        md = dict(body.get("metadata") or {})
        if t.info.namespaced:
            ns = t.namespace or md.get("namespace") or "default"
            if md.get("namespace") and md["namespace"] != ns:
                raise st.bad_request("the namespace of the provided object does not match the namespace sent on "
                                     "the request")
            md["namespace"] = ns
            if t.info.kind != "Namespace" and self.store.get_entry(self.kinds.resolve("Namespace"), None, ns) is None:
                raise st.ApiError(404, f'namespaces "{ns}" not found', "NotFound", {"name": ns, "kind": "namespaces"})
        for k in ("resourceVersion", "uid", "creationTimestamp", "deletionTimestamp"):
            md.pop(k, None)
        body = {**body, "kind": t.info.kind, "apiVersion": t.info.api_version, "metadata": md}
        if t.info.kind == "Pod":
            body = pod_defaults(body)
        if q.get("dryRun") == "All":
            return _json(body, 201)
        return _json(self.store.create(body, t.info), 201)

    def _replace(self, t: Target, body: Any) -> web.Response:
        assert t.name is not None  # dispatched for a named object only
        if not isinstance(body, dict):
            raise st.bad_request("the body of the request must be a JSON object")
        md = dict(body.get("metadata") or {})
        if md.get("name") and md["name"] != t.name:
            raise st.bad_request(f'the name of the object ({md["name"]}) does not match the name on the URL ({t.name})')
        md["name"] = t.name
        if t.info.namespaced:
            md["namespace"] = t.namespace or "default"
        body = {**body, "metadata": md}
        expect = md.get("resourceVersion")
        if t.subresource == "status":
            new_status = body.get("status")
            return _json(self.store.update(t.info, t.namespace, t.name, lambda o: {**o, "status": new_status}, expect))
        keep = "status" in t.info.subresources

        def change(old: dict[str, Any]) -> dict[str, Any]:
            new = dict(body)
            if keep:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            return new

        return _json(self.store.update(t.info, t.namespace, t.name, change, expect))

    def _patch(self, request: web.Request, t: Target, raw: bytes) -> web.Response:
        ctype = request.content_type
        try:
            patch = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise st.bad_request("the body of the request was not valid JSON") from None
        assert t.name is not None
        if ctype == "application/json-patch+json" or isinstance(patch, list):
            if not isinstance(patch, list):
                raise st.bad_request("a JSON patch must be a list of operations")

            def change(old: dict[str, Any]) -> dict[str, Any]:
                new = json_patch(old, patch)
                if t.subresource == "status":
                    return {**old, "status": new.get("status")}
                return new

            return _json(self.store.update(t.info, t.namespace, t.name, change))
        if ctype not in ("application/merge-patch+json", "application/strategic-merge-patch+json", JSON):
            raise st.ApiError(415, "the body of the request was in an unknown format - accepted media types include: "
                                   "application/json-patch+json, application/merge-patch+json, "
                                   "application/strategic-merge-patch+json", "UnsupportedMediaType")
        scope = "status" if t.subresource == "status" else "main"
        return _json(self.store.patch(t.info, t.namespace, t.name, patch, scope))

    def _access_review(self, body: Any) -> dict[str, Any]:
        spec = (body or {}).get("spec") or {}
        attrs = spec.get("resourceAttributes") or {}
        group, resource = attrs.get("group") or "", attrs.get("resource") or ""
        info = next((k for k in self.kinds.kinds if k.group == group and k.plural == resource), None)
        allowed = info is None or not self.access.is_forbidden(info, attrs.get("verb") or "get",
                                                               attrs.get("subresource") or "")
        status: dict[str, Any] = {"allowed": allowed}
        if allowed:
            status["reason"] = 'RBAC: allowed by ClusterRoleBinding "gputui" of ClusterRole "gputui" to ServiceAccount ' \
                               '"gputui/default"'
        return {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
                "metadata": {"creationTimestamp": None}, "spec": spec, "status": status}

