"""Watch semantics through the official clients: events, resourceVersions, 410, bookmarks, faults."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from gputui.sim import SimCluster

from .conftest import SMALL


def _pod(name: str, ns: str = "ml", **labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}


def _collect(w: watch.Watch, func: Callable, n: int, **kwargs: Any) -> list[tuple[str, str, str]]:
    """(type, name, resourceVersion) of the first `n` events."""
    out = []
    for ev in w.stream(func, **kwargs):
        md = ev["raw_object"].get("metadata", {})
        out.append((ev["type"], md.get("name", ""), md.get("resourceVersion", "")))
        if len(out) >= n:
            w.stop()
    return out


def _start(pool: ThreadPoolExecutor, sim: SimCluster, kind: str, fn: Callable, *args: Any, **kwargs: Any) -> Future:
    """Run `fn` in a thread and wait until its watch is open on the server."""
    before = sim.watch_count(kind)
    fut = pool.submit(fn, *args, **kwargs)
    assert sim.wait_for(lambda: sim.watch_count(kind) > before or fut.done(), 5)
    return fut


def test_watch_sees_added_modified_deleted(sim: SimCluster, core: client.CoreV1Api) -> None:
    rv = core.list_namespaced_pod("ml").metadata.resource_version
    w = watch.Watch()
    with ThreadPoolExecutor(1) as pool:
        fut = _start(pool, sim, "pods", _collect, w, core.list_namespaced_pod, 3,
                     namespace="ml", resource_version=rv, timeout_seconds=10)
        sim.apply(_pod("fresh"))
        sim.patch("pods", "fresh", {"metadata": {"labels": {"x": "y"}}}, namespace="ml")
        sim.delete("pods", "fresh", namespace="ml")
        events = fut.result(10)
    assert [(t, n) for t, n, _ in events] == [("ADDED", "fresh"), ("MODIFIED", "fresh"), ("DELETED", "fresh")]
    rvs = [int(r) for _, _, r in events]
    assert rvs == sorted(rvs) and rvs[0] > int(rv) and len(set(rvs)) == 3


def test_watch_without_resource_version_starts_with_current_objects(sim: SimCluster, core: client.CoreV1Api) -> None:
    w = watch.Watch()
    events = _collect(w, core.list_node, 5, timeout_seconds=5)
    assert {t for t, _, _ in events} == {"ADDED"}
    assert sorted(n for _, n, _ in events) == sorted(n["metadata"]["name"] for n in sim.objects("nodes"))


def test_watch_resumes_from_resource_version_replaying_history(sim: SimCluster, core: client.CoreV1Api) -> None:
    rv = core.list_node().metadata.resource_version
    sim.patch("nodes", "ip-10-0-40-2.ec2.internal", {"spec": {"unschedulable": True}})
    sim.apply(_pod("unrelated"))  # another kind: not replayed on a node watch
    events = _collect(watch.Watch(), core.list_node, 1, resource_version=rv, timeout_seconds=3)
    assert [(t, n) for t, n, _ in events] == [("MODIFIED", "ip-10-0-40-2.ec2.internal")]


def test_selector_watch_sees_objects_enter_and_leave(sim: SimCluster, core: client.CoreV1Api) -> None:
    rv = core.list_pod_for_all_namespaces().metadata.resource_version
    w = watch.Watch()
    with ThreadPoolExecutor(1) as pool:
        fut = _start(pool, sim, "pods", _collect, w, core.list_pod_for_all_namespaces, 2,
                     label_selector="team=infra", resource_version=rv, timeout_seconds=10)
        sim.patch("pods", "trainer-0", {"metadata": {"labels": {"team": "infra"}}}, namespace="ml")
        sim.patch("pods", "karpenter-7d9f8b6c5-abcde", {"metadata": {"labels": {"x": "1"}}}, namespace="kube-system")
        sim.patch("pods", "trainer-1", {"metadata": {"labels": {"team": "other"}}}, namespace="ml")
        events = fut.result(10)
    assert [(t, n) for t, n, _ in events] == [("ADDED", "trainer-0"), ("DELETED", "trainer-1")]


def test_phase_selector_list_and_watch(sim: SimCluster, core: client.CoreV1Api) -> None:
    """`fieldSelector=status.phase=Pending` (what the TUI reads first): the list holds the pending pods
    only, and the watch says DELETED for a pod that starts running and ADDED for one that turns Pending."""
    listed = core.list_pod_for_all_namespaces(field_selector="status.phase=Pending")
    assert _names(listed.items) == ["trainer-0"]
    w = watch.Watch()
    with ThreadPoolExecutor(1) as pool:
        fut = _start(pool, sim, "pods", _collect, w, core.list_pod_for_all_namespaces, 3,
                     field_selector="status.phase=Pending", resource_version=listed.metadata.resource_version,
                     timeout_seconds=10)
        sim.patch("pods", "trainer-0", {"status": {"phase": "Running"}}, namespace="ml")
        sim.patch("pods", "karpenter-7d9f8b6c5-abcde", {"metadata": {"labels": {"x": "1"}}}, namespace="kube-system")
        core.create_namespaced_pod("ml", _pod("fresh"))  # created through the API: it starts Pending
        sim.patch("pods", "fresh", {"metadata": {"labels": {"x": "y"}}}, namespace="ml")
        events = fut.result(10)
    assert [(t, n) for t, n, _ in events] == [("DELETED", "trainer-0"), ("ADDED", "fresh"), ("MODIFIED", "fresh")]


def _names(items: list[Any]) -> list[str]:
    return sorted(i.metadata.name for i in items)


@pytest.mark.slow
def test_too_old_resource_version_raises_410(tmp_path: Path) -> None:
    with SimCluster(SMALL, history_size=5) as sim:
        core = client.CoreV1Api(config.new_client_from_config(str(sim.write_kubeconfig(tmp_path / "kc"))))
        old = core.list_node().metadata.resource_version
        for i in range(8):
            sim.patch("nodes", "ip-10-0-40-2.ec2.internal", {"metadata": {"labels": {"i": str(i)}}})
        with pytest.raises(ApiException) as err:
            list(watch.Watch().stream(core.list_node, resource_version=old))
        assert err.value.status == 410 and "too old resource version" in err.value.reason
        # the sync client retried once with the same RV, then gave up: both attempts reached the server
        assert sum("watch=true" in path and f"resourceVersion={old}" in path for _, path in sim.requests()) == 2
        raw = urllib.request.urlopen(f"{sim.url}/api/v1/nodes?watch=1&resourceVersion={old}").read()
        event = json.loads(raw)
        assert event["type"] == "ERROR"
        assert event["object"] == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                   "message": f"too old resource version: {old} ({sim.resource_version - 5})",
                                   "reason": "Expired", "code": 410}
        # a current RV still works
        rv = core.list_node().metadata.resource_version
        assert _collect(watch.Watch(), core.list_node, 1, resource_version=rv, timeout_seconds=1) == []


@pytest.mark.slow
def test_bookmarks_and_timeout(sim: SimCluster, core: client.CoreV1Api) -> None:
    w = watch.Watch()
    rv = core.list_node().metadata.resource_version
    sim.apply(_pod("moves-the-rv"))
    start = time.monotonic()
    types = [ev["type"] for ev in w.stream(core.list_node, resource_version=rv, allow_watch_bookmarks=True,
                                           timeout_seconds=1)]
    assert 0.9 < time.monotonic() - start < 3
    assert types.count("BOOKMARK") >= 3 and set(types) == {"BOOKMARK"}
    assert w.resource_version == str(sim.resource_version)  # bookmarks carry the global RV


def test_async_client_watch(sim: SimCluster, kubeconfig: Path) -> None:
    import asyncio

    from kubernetes.aio import client as aclient
    from kubernetes.aio import config as aconfig
    from kubernetes.aio import watch as awatch

    async def run() -> list[tuple[str, str]]:
        api = await aconfig.new_client_from_config(config_file=str(kubeconfig))
        async with api:
            v1 = aclient.CoreV1Api(api)
            rv = json.loads(await (await v1.list_namespaced_pod_without_preload_content("ml")).read())[
                "metadata"]["resourceVersion"]
            seen = []
            async with awatch.Watch() as w:
                stream = w.stream(v1.list_namespaced_pod, "ml", resource_version=rv, timeout_seconds=5)
                await asyncio.to_thread(sim.apply, _pod("async-one"))
                async for ev in stream:
                    seen.append((ev["type"], ev["object"].metadata.name))
                    break
            return seen

    assert asyncio.run(run()) == [("ADDED", "async-one")]


def test_dropped_watch_is_resumed_by_the_client(sim: SimCluster, core: client.CoreV1Api) -> None:
    rv = core.list_namespaced_pod("ml").metadata.resource_version
    w = watch.Watch()
    with ThreadPoolExecutor(1) as pool:
        fut = _start(pool, sim, "pods", _collect, w, core.list_namespaced_pod, 2, namespace="ml",
                     resource_version=rv)
        sim.apply(_pod("before-drop"))
        assert sim.wait_for(lambda: w.resource_version != rv, 5)
        assert sim.drop_watches() == 1
        assert sim.wait_for(lambda: sim.watch_count("pods") == 1, 5)  # the client re-watched by itself
        sim.apply(_pod("after-drop"))
        events = fut.result(10)
    assert [(t, n) for t, n, _ in events] == [("ADDED", "before-drop"), ("ADDED", "after-drop")]


def test_watch_cut_mid_event_surfaces_as_an_error(sim: SimCluster, core: client.CoreV1Api) -> None:
    w = watch.Watch()
    with ThreadPoolExecutor(1) as pool:
        fut = _start(pool, sim, "nodes", lambda: list(w.stream(core.list_node, resource_version="1")))
        sim.drop_watches(mid_event=True)
        with pytest.raises(Exception) as err:
            fut.result(10)
    assert not isinstance(err.value, ApiException)  # a broken connection (urllib3 ProtocolError), not a Status


@pytest.mark.slow
def test_forced_expiry_and_restart(sim: SimCluster, core: client.CoreV1Api) -> None:
    rv = core.list_node().metadata.resource_version
    sim.expire_next_watch("nodes")
    with pytest.raises(ApiException) as err:
        list(watch.Watch().stream(core.list_node, resource_version=rv, timeout_seconds=1))
    assert err.value.status == 410
    assert _collect(watch.Watch(), core.list_node, 1, resource_version=rv, timeout_seconds=1) == []  # one-shot
    sim.apply(_pod("bump"))
    sim.restart(new_history=True)
    with pytest.raises(ApiException) as err:
        list(watch.Watch().stream(core.list_node, resource_version=rv, timeout_seconds=1))
    assert err.value.status == 410


def test_slow_watcher_is_closed_when_its_queue_overflows(tmp_path: Path) -> None:
    with SimCluster(SMALL, watch_queue_size=10) as sim:
        rv = sim.resource_version
        resp = urllib.request.urlopen(f"{sim.url}/api/v1/nodes?watch=true&resourceVersion={rv}")
        assert sim.wait_for(lambda: sim.watch_count("nodes") == 1)

        def burst() -> None:  # 30 changes in one loop turn: the writer cannot drain in between
            for i in range(30):
                sim.store.patch(sim.store.kinds.resolve("Node"), None, "ip-10-0-40-2.ec2.internal",
                                {"metadata": {"labels": {"i": str(i)}}})

        sim.call(burst)
        lines = resp.read().splitlines()  # the stream ends: the client would re-watch from its last RV
        assert len(lines) < 30 and sim.watch_count("nodes") == 0
