"""After an API server restart with a new history, the live cache shows no object that is gone (#24, item 6).

The informers resumed their watches from a resourceVersion the new server never issued and kept
showing objects that no longer exist as live. The simulator now answers such a watch with 410, as an
apiserver does for a version it does not have, and the informers relist; a bookmark older than the
version held (the history went back) also makes them relist.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from diagnostics.snapshot import SourceState
from gputui.kube.api import Api, load
from gputui.collect.live import LiveSession
from gputui.sim.cluster import SimCluster
from gputui.kube.informer import _went_back


def wait_for(pred: Callable[[], bool], timeout: float = 20.0) -> float:
    started = time.monotonic()
    while not pred():
        if time.monotonic() - started > timeout:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)
    return time.monotonic() - started


def node(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def test_objects_gone_after_a_restart_are_gone_from_the_cache(tmp_path: Path) -> None:
    first = SimCluster("spot-shortage", shift_to_now=True, bookmark_interval=0.3).start()
    port = first.port or int(first.url.rsplit(":", 1)[1])
    client, info = load(str(first.write_kubeconfig(tmp_path / "kubeconfig")))
    session = LiveSession(Api(client), info, watch_timeout=5)
    session.start()
    second: SimCluster | None = None
    try:
        assert session.wait_synced(15)
        for i in range(5):  # churn: the first server's resourceVersion moves past the second's
            first.apply(node(f"ghost-{i}"))
        wait_for(lambda: session.store.get("nodes", "ghost-4") is not None)
        relists = sum(i.relists for i in session.informers)
        first.stop()
        second = SimCluster("spot-shortage", shift_to_now=True, bookmark_interval=0.3, port=port).start()
        assert second.store.rv < first.store.rv
        wait_for(lambda: all(session.store.get("nodes", f"ghost-{i}") is None for i in range(5)))
        assert sum(i.relists for i in session.informers) > relists
        # what the cache holds is what the new server holds, and every source says it is ok
        live = {n["metadata"]["name"] for n in second.objects("Node")}
        wait_for(lambda: {r.name for r in session.store.snapshot().nodes} == live)
        wait_for(lambda: all(st.state is SourceState.OK
                             for name, st in session.store.snapshot().sources.items()
                             if name in ("nodes", "pods", "events", "nodeclaims")))
    finally:
        session.stop()
        if second is not None:
            second.stop()
        first.stop()


def test_a_watch_from_an_unknown_version_is_410(tmp_path: Path) -> None:
    with SimCluster("healthy") as sim:
        client, _info = load(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
        api = Api(client)
        lines = list(api.stream("/api/v1/nodes", [("watch", "true"), ("resourceVersion", str(sim.store.rv + 1000)),
                                                  ("timeoutSeconds", 1)], read_timeout=5))
    assert len(lines) == 1 and b'"code":410' in lines[0] and b"not known to this server" in lines[0]


def test_a_bookmark_older_than_the_version_held_means_relist() -> None:
    assert _went_back("5000", "300") and not _went_back("300", "5000")
    assert not _went_back("", "300") and not _went_back("abc", "12") and not _went_back("5", None)


@pytest.mark.slow
def test_a_source_answering_html_is_unreachable_in_the_live_cache_not_live(tmp_path: Path) -> None:
    """A proxy's login page on every nodes request (list and watch): the source says so, backs off, and
    the other sources stay ok; never "ok" with nothing behind it, never a hot loop of requests."""
    with SimCluster("spot-shortage", shift_to_now=True, bookmark_interval=0.3) as sim:
        sim.break_answers(1_000_000, "html", path_contains="/api/v1/nodes")
        client, info = load(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
        session = LiveSession(Api(client), info, watch_timeout=5)
        session.start()
        try:
            wait_for(lambda: session.store.snapshot().sources["nodes"].state is SourceState.UNREACHABLE)
            wait_for(lambda: session.store.snapshot().sources["pods"].state is SourceState.OK)
            before = sim.faults.broken.get("html", 0)
            time.sleep(1.0)
            assert sim.faults.broken.get("html", 0) - before < 15  # backing off, not spinning
            assert "not JSON" in session.store.snapshot().sources["nodes"].detail
        finally:
            session.stop()


@pytest.mark.slow
def test_a_watch_answering_html_is_not_live(tmp_path: Path) -> None:
    """The list works, every watch gets a login page: the cache keeps the listed nodes but says they are
    stale, and the informer backs off instead of re-watching in a loop."""
    with SimCluster("spot-shortage", shift_to_now=True, bookmark_interval=0.3) as sim:
        sim.break_answers(1_000_000, "html", path_contains="/api/v1/nodes?watch=true")
        client, info = load(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
        session = LiveSession(Api(client), info, watch_timeout=5)
        session.start()
        try:
            wait_for(lambda: session.store.snapshot().sources["nodes"].state is SourceState.STALE)
            assert session.store.snapshot().nodes  # the last good list is kept, marked stale
            before = sim.faults.broken.get("html", 0)
            time.sleep(1.0)
            assert sim.faults.broken.get("html", 0) - before < 15
        finally:
            session.stop()
