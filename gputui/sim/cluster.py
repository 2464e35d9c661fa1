"""`SimCluster`: a scenario served over HTTP on its own event-loop thread, with thread-safe mutators."""

from __future__ import annotations

import asyncio
import concurrent.futures
import re
import threading
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import web

from gputui.sim.access import DEFAULT_USER, AccessPolicy
from gputui.sim.debugpods import DebugPods
from gputui.sim.faults import Breakage, Faults
from gputui.sim.kinds import KINDS, KindInfo
from gputui.sim.kubeconfig import DEFAULT_TOKEN, write_kubeconfig
from gputui.sim.logs import LogBook
from gputui.sim.scenario import Scenario, implied_namespaces, load_scenario
from gputui.sim.server import VERSION_INFO, ServerConfig, SimServer
from gputui.sim.store import Store

T = TypeVar("T")
POD = KINDS.resolve("Pod")
_KUBELET_VERSION = re.compile(r"^v(\d+)\.(\d+)\.(\d+)")


def server_version(scenario: Scenario | None) -> dict[str, str]:
    """/version for the scenario: the control plane runs the newest kubelet's minor (as EKS would)."""
    info = dict(VERSION_INFO)
    found = []
    for node in scenario.objects.get("Node", []) if scenario else []:
        m = _KUBELET_VERSION.match(str(((node.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", "")))
        if m:
            found.append(tuple(int(x) for x in m.groups()))
    if found:
        major, minor, patch = max(found)
        info.update(major=str(major), minor=str(minor), gitVersion=f"v{major}.{minor}.{patch}-eks-2d5f260")
    return info


class SimCluster:
    """A fake Kubernetes API server for one scenario.

    Start it, point a client at `.url` (or `.write_kubeconfig(path)`), and change the cluster from any
    thread with `apply` / `patch` / `delete` or the fault switches; watchers see the changes as events.
    """

    def __init__(
        self,
        scenario: Scenario | str | Path | None = None,
        *,
        shift_to_now: bool = False,
        host: str = "127.0.0.1",
        port: int = 0,
        debug_pod_delay: float = 0.3,
        history_size: int = 10_000,
        watch_queue_size: int = 20_000,
        bookmark_interval: float = 1.0,
        user: str = DEFAULT_USER,
        token: str | None = None,
        now: datetime | None = None,
    ) -> None:
        if isinstance(scenario, (str, Path)):
            scenario = load_scenario(scenario)
        if scenario is not None and shift_to_now:
            scenario = scenario.shifted(now)
        self.scenario = scenario
        self.host = host
        self.port = port
        self.token = token
        self.store = Store(history_size=history_size, watch_queue_size=watch_queue_size)
        self.logs = LogBook()
        self.access = AccessPolicy(user)
        self.faults = Faults()
        self.debugpods = DebugPods(self.store, self.logs, scenario.nvidia_smi if scenario else None,
                                   delay=debug_pod_delay)
        self.server = SimServer(self.store, self.logs, self.access, self.faults,
                                ServerConfig(bookmark_interval=bookmark_interval, token=token,
                                             version=server_version(scenario)))
        self.store.add_hook("Pod", self._on_pod)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self._stopped = threading.Event()
        self.url = ""
        self._load(scenario)

    # ---- scenario ------------------------------------------------------------------------------

    def _load(self, scenario: Scenario | None) -> None:
        objects = scenario.all_objects() if scenario else []
        creation = None
        if scenario and scenario.reference_time:
            creation = scenario.reference_time.strftime("%Y-%m-%dT%H:%M:%SZ")
        self.store.bulk_load([*implied_namespaces(objects, creation), *objects])
        if scenario is None:
            return
        for resource in scenario.forbidden:
            self.access.forbid(resource)
        for resource in scenario.absent:
            self.access.set_absent(resource)
        for key, text in scenario.logs.items():
            ns, pod, *rest = key.split("/")  # "ns/pod", "ns/pod/container" or "ns/pod/container/previous"
            self.logs.set(ns, pod, text, "/".join(rest) or None, default_ts=self._pod_started(ns, pod))

    def _pod_started(self, ns: str, name: str) -> datetime | None:
        pod = self.store.get(POD, ns, name)
        started = ((pod or {}).get("status") or {}).get("startTime")
        if not started:
            return None
        return datetime.strptime(started[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)

    def _on_pod(self, type_: str, pod: dict[str, Any]) -> None:
        """Follow streams end when the pod stops or goes away, as the kubelet's do."""
        md = pod.get("metadata") or {}
        if type_ == "DELETED":
            self.logs.forget(md.get("namespace", ""), md.get("name", ""))
        elif (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            self.logs.end(md.get("namespace", ""), md.get("name", ""))

    # ---- lifecycle -----------------------------------------------------------------------------

    def start(self) -> SimCluster:
        """Serve on a daemon thread; returns once the socket is listening."""
        if self._thread is not None:
            return self
        self._ready.clear()
        self._stopped.clear()
        self._thread = threading.Thread(target=self._thread_main, name="gputui-sim", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._startup_error is not None:
            err, self._startup_error = self._startup_error, None
            self._thread.join()
            self._thread = None
            raise err
        return self

    def _thread_main(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._astart(loop))
        except BaseException as exc:  # noqa: BLE001 - handed to start()'s caller
            self._startup_error = exc
            self._ready.set()
            loop.close()
            return
        self._loop = loop
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            self._loop = None
            loop.run_until_complete(self._astop())
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
            self._stopped.set()

    async def _astart(self, loop: asyncio.AbstractEventLoop) -> None:
        self._runner = web.AppRunner(self.server.make_app(), access_log=None, handler_cancellation=True,
                                     shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, reuse_address=True)
        await site.start()
        # aiohttp types it as AbstractServer; it is the loop's asyncio.Server, which has `sockets`.
        sockets = site._server.sockets if site._server else []  # type: ignore[attr-defined]
        self.port = sockets[0].getsockname()[1]
        self.url = f"http://{self.host}:{self.port}"
        self._loop_thread = threading.get_ident()
        self.debugpods.attach(loop)

    async def _astop(self) -> None:
        self.debugpods.detach()
        self.store.drop_watches("end")
        self.logs.close_all()
        await asyncio.sleep(0)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def stop(self) -> None:
        """Close every stream and the listening socket; the thread exits."""
        loop, thread = self._loop, self._thread
        if thread is None:
            return
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        self._thread = None

    def serve_forever(self) -> None:
        """Run in the foreground until Ctrl-C (for `gputui demo`-style commands)."""
        self.start()
        try:
            while not self._stopped.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()

    def __enter__(self) -> SimCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> SimCluster:
        return await asyncio.to_thread(self.start)

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)

    def write_kubeconfig(self, path: str | Path, context: str = "gputui-sim", namespace: str = "default") -> Path:
        if not self.url:
            raise RuntimeError("start() the simulator before writing a kubeconfig for it")
        return write_kubeconfig(path, self.url, context=context, token=self.token or DEFAULT_TOKEN,
                                namespace=namespace)

    # ---- running code on the loop --------------------------------------------------------------

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn` on the simulator's loop thread (directly if not started or already there)."""
        loop = self._loop
        if loop is None or threading.get_ident() == getattr(self, "_loop_thread", None):
            return fn(*args, **kwargs)
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                fut.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                fut.set_exception(exc)

        loop.call_soon_threadsafe(run)
        return fut.result(timeout=60)

    # ---- objects -------------------------------------------------------------------------------

    @staticmethod
    def _info(kind: str | KindInfo) -> KindInfo:
        return kind if isinstance(kind, KindInfo) else KINDS.resolve(kind)

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create, or replace if it exists (MODIFIED); returns the stored object."""
        return self.call(self.store.apply, obj)

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.call(self.store.create, obj)

    def patch(self, kind: str, name: str, patch: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        """JSON merge patch, status included."""
        return self.call(self.store.patch, self._info(kind), namespace, name, patch, "all")

    def delete(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        return self.call(self.store.delete, self._info(kind), namespace, name)

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return self.call(self.store.get, self._info(kind), namespace, name)

    def objects(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        return self.call(self.store.objects, self._info(kind), namespace)

    def bulk_load(self, objects: Iterable[dict[str, Any]]) -> int:
        """Load many objects fast (benchmarks); each still gets its own RV and ADDED event."""
        objs = objects if isinstance(objects, list) else list(objects)
        return self.call(self.store.bulk_load, objs)

    @property
    def resource_version(self) -> int:
        return self.store.rv

    def watch_count(self, kind: str | None = None) -> int:
        """Open watch streams (of `kind`), e.g. to wait until a client's watch is established."""
        info = self._info(kind) if kind else None
        return self.call(lambda: len(self.store.watchers(info)))

    def requests(self) -> list[tuple[str, str]]:
        """(method, path?query) of recent requests, oldest first."""
        return self.call(lambda: list(self.server.requests))

    # ---- logs & debug pods ---------------------------------------------------------------------

    def set_log(self, namespace: str, pod: str, text: str, container: str | None = None) -> None:
        self.call(self.logs.set, namespace, pod, text, container)

    def append_log(self, namespace: str, pod: str, text: str, container: str | None = None) -> None:
        """Add log lines; `follow=true` readers receive them at once."""
        self.call(self.logs.append, namespace, pod, text, container)

    def set_nvidia_smi(self, node: str, entry: dict[str, Any]) -> None:
        """What a debug pod on `node` ("default" for any) sees: capture/exitCode/output/state/message."""
        self.call(self.debugpods.nvidia_smi.__setitem__, node, dict(entry))

    # ---- access --------------------------------------------------------------------------------

    def forbid(self, resource: str, verbs: Iterable[str] | None = None) -> None:
        """403 for `resource` (`nodeclaims.karpenter.sh`, `pods`, `pods/log`); default verbs get/list/watch.

        Like RBAC, this is checked per request: open watches go on until they end or are dropped.
        """
        self.access.forbid(resource, set(verbs) if verbs else None)

    def allow(self, resource: str) -> None:
        self.access.allow(resource)

    def set_absent(self, resource: str, absent: bool = True) -> None:
        """Uninstall (or reinstall) a CRD: 404 on its paths and missing from discovery."""
        self.access.set_absent(resource, absent)
        if absent:
            self.call(self.store.drop_watches, "end", self._info(resource))

    # ---- faults --------------------------------------------------------------------------------

    def drop_watches(self, *, mid_event: bool = False, kind: str | None = None) -> int:
        """End every open watch stream (cleanly, or cut in the middle of an event line)."""
        info = self._info(kind) if kind else None
        return self.call(self.store.drop_watches, "abort" if mid_event else "end", info)

    def expire_next_watch(self, kind: str) -> None:
        """The next watch of `kind` gets a 410 Expired ERROR event whatever its resourceVersion."""
        self.faults.expire_next_watch(self._info(kind).kind)

    def fail_requests(self, n: int, status: int = 500, *, path_contains: str | None = None,
                      message: str | None = None) -> None:
        self.faults.fail_requests(n, status, path_contains=path_contains, message=message)

    def throttle(self, n: int, retry_after: int = 1, *, path_contains: str | None = None) -> None:
        self.faults.throttle(n, retry_after, path_contains=path_contains)

    def break_answers(self, n: int, mode: Breakage, *, path_contains: str | None = None) -> None:
        """Broken answers instead of Statuses (reset, truncated, html, malformed, list-for-get)."""
        self.faults.break_answers(n, mode, path_contains=path_contains)

    def expire_continue(self, n: int = 1) -> None:
        """The next `n` paged-list requests with a `continue` token answer 410 Expired."""
        self.faults.expire_continue(n)

    def set_latency(self, seconds: float, *, path_contains: str | None = None) -> None:
        self.faults.set_latency(seconds, path_contains=path_contains)

    def hold(self, path_contains: str, *, unless: str | None = None) -> threading.Event:
        """Hold matching requests (path and query) until the returned event is set (see Faults.hold)."""
        return self.faults.hold(path_contains, unless=unless)

    def restart(self, new_history: bool = True) -> None:
        """Simulate an apiserver restart: all watches end; with new_history, older RVs answer 410."""
        def run() -> None:
            self.store.drop_watches("end")
            if new_history:
                self.store.reset_history()

        self.call(run)

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 5.0, interval: float = 0.01) -> bool:
        """Poll `predicate` until true (e.g. a debug pod reaching Succeeded); False on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(interval)
        return predicate()
