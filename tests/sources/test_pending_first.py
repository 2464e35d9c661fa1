"""The live session reads pending pods first: they are in the cache (marked partial) while the full
pod list is still on its way, follow their watch, and give way to the full list without leftovers."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from diagnostics.snapshot import SourceState
from gputui.collect.live import LiveSession
from gputui.collect.store import PENDING_ONLY
from gputui.kube.api import Api, load
from gputui.sim.cluster import SimCluster


def wait_for(pred: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def test_pending_pods_come_first_and_the_full_list_replaces_them(tmp_path: Path) -> None:
    with SimCluster("incident", shift_to_now=True, bookmark_interval=0.2) as sim:
        pending = sorted((p["metadata"]["namespace"], p["metadata"]["name"]) for p in sim.objects("pods")
                         if (p.get("status") or {}).get("phase") == "Pending")
        everything = len(sim.objects("pods"))
        assert pending and everything > len(pending)
        held = sim.hold("/api/v1/pods?", unless="fieldSelector")  # the full pod list (and its watch) waits
        client, info = load(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
        s = LiveSession(Api(client), info, pending_first=True)
        s.start()
        try:
            wait_for(lambda: s.store.status().get("pods") is not None)
            st = s.store.status()["pods"]
            assert st.state is SourceState.OK and st.partial and st.detail == PENDING_ONLY
            snap = s.snapshot()
            assert sorted((p.namespace, p.name) for p in snap.pods) == pending
            assert not s.wait_synced(0)

            # One starts running before the full list arrives: the pending watch drops it.
            ns, name = pending[0]
            sim.patch("pods", name, {"status": {"phase": "Running"}}, namespace=ns)
            wait_for(lambda: s.store.get("pods", name, ns) is None)

            held.set()
            assert s.wait_synced(15)
            snap = s.snapshot()
            assert not snap.status("pods").partial and snap.pods_read_on is None
            keys = [(p.namespace, p.name) for p in snap.pods]
            assert len(keys) == len(set(keys)) == everything
            assert s.store.get("pods", name, ns).phase == "Running"
            assert s.preloader is not None
            wait_for(lambda: not s.preloader.running)
        finally:
            held.set()
            s.stop()


def test_a_user_who_may_not_list_pods_cluster_wide_is_not_kept_waiting(tmp_path: Path) -> None:
    """The pending pods' list is forbidden like the full one: the preloader gives up at once and the
    full pod informer (which falls back to the namespace) starts without waiting for it."""
    with SimCluster("incident", shift_to_now=True, bookmark_interval=0.2) as sim:
        sim.forbid("pods")
        client, info = load(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
        s = LiveSession(Api(client), info, pending_first=True)
        started = time.monotonic()
        s.start()
        try:
            wait_for(lambda: "pods" in s.store.status())
            assert time.monotonic() - started < 2.5  # not FULL_PODS_WAIT (3 s) behind
            assert s.store.status()["pods"].state is SourceState.FORBIDDEN
            assert s.preloader is not None and not s.preloader.running
        finally:
            s.stop()
