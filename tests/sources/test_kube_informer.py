"""The live cache against the simulator: list+watch, relist on 410, statuses, convergence under faults."""

from __future__ import annotations

import platform
import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from diagnostics.snapshot import SourceState
from gputui.kube.api import Api, load
from gputui.collect.live import LiveSession, settle_heap
from gputui.sim.cluster import SimCluster

DATA = Path(__file__).resolve().parents[1] / "sim" / "data"

NODE = {
    "apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "gpu-new-1", "labels": {"node.kubernetes.io/instance-type": "g5.xlarge",
                                                  "karpenter.k8s.aws/instance-gpu-count": "1"}},
    "status": {"capacity": {"nvidia.com/gpu": "1"}, "allocatable": {"nvidia.com/gpu": "1"},
               "conditions": [{"type": "Ready", "status": "True"}]},
}


def wait_for(pred: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError("condition not met in time")


@pytest.fixture()
def sim(tmp_path: Path) -> Iterator[SimCluster]:
    with SimCluster(DATA / "small.yaml") as cluster:
        yield cluster


def session_for(sim: SimCluster, tmp_path: Path, **kw: object) -> LiveSession:
    cfg = tmp_path / "kubeconfig"
    sim.write_kubeconfig(str(cfg))
    client, info = load(str(cfg))
    s = LiveSession(Api(client), info, **kw)  # type: ignore[arg-type]
    s.start()
    assert s.wait_synced(15)
    return s


def test_list_then_watch_sees_create_update_delete(sim: SimCluster, tmp_path: Path) -> None:
    s = session_for(sim, tmp_path)
    try:
        n0 = len(s.snapshot().nodes)
        assert n0 == len(sim.objects("Node"))
        sim.apply(NODE)
        wait_for(lambda: s.store.get("nodes", "gpu-new-1") is not None)
        sim.patch("Node", "gpu-new-1", {"status": {"allocatable": {"nvidia.com/gpu": "0"}}})
        wait_for(lambda: s.store.get("nodes", "gpu-new-1").allocatable.get("nvidia.com/gpu") == 0)
        sim.delete("Node", "gpu-new-1")
        wait_for(lambda: s.store.get("nodes", "gpu-new-1") is None)
        assert len(s.snapshot().nodes) == n0
    finally:
        s.stop()


def test_managed_fields_are_dropped_at_ingest(sim: SimCluster, tmp_path: Path) -> None:
    node = dict(NODE, metadata=dict(NODE["metadata"], managedFields=[{"manager": "kubelet"}]))
    sim.apply(node)
    s = session_for(sim, tmp_path)
    try:
        rec = s.store.get("nodes", "gpu-new-1")
        assert "managedFields" not in rec.obj["metadata"]
    finally:
        s.stop()


def test_a_record_the_watch_replaced_is_freed(sim: SimCluster, tmp_path: Path) -> None:
    # The informer must not keep its first list: every record a watch event replaced would stay
    # alive for as long as the watch runs (a third of a 60k-pod cache after a burst).
    sim.apply(NODE)
    s = session_for(sim, tmp_path)
    try:
        old = s.store.get("nodes", "gpu-new-1")
        sim.patch("Node", "gpu-new-1", {"metadata": {"labels": {"changed": "yes"}}})
        wait_for(lambda: s.store.get("nodes", "gpu-new-1") is not old)
        assert sys.getrefcount(old) == 2  # `old` and getrefcount's own argument
    finally:
        s.stop()


def test_the_heap_is_settled_on_glibc_only() -> None:
    assert settle_heap() is (platform.system() == "Linux" and platform.libc_ver()[0] == "glibc")


def test_relist_after_forced_410(sim: SimCluster, tmp_path: Path) -> None:
    s = session_for(sim, tmp_path)
    try:
        inf = next(i for i in s.informers if i.res.source == "nodes")
        before = inf.relists
        sim.expire_next_watch("Node")
        sim.drop_watches(kind="Node")
        sim.apply(NODE)
        wait_for(lambda: inf.relists > before and s.store.get("nodes", "gpu-new-1") is not None)
    finally:
        s.stop()


def test_forbidden_and_absent_become_statuses(sim: SimCluster, tmp_path: Path) -> None:
    sim.forbid("nodeclaims.karpenter.sh")
    sim.set_absent("ec2nodeclasses.karpenter.k8s.aws")
    s = session_for(sim, tmp_path)
    try:
        st = s.store.status()
        assert st["nodeclaims"].state is SourceState.FORBIDDEN
        assert st["nodeclaims"].detail == "list nodeclaims.karpenter.sh"
        assert st["ec2nodeclasses"].state is SourceState.ABSENT
        assert st["nodes"].state is SourceState.OK
    finally:
        s.stop()


def test_cache_converges_after_random_mutations_and_stream_drops(sim: SimCluster, tmp_path: Path) -> None:
    rng = random.Random(7)
    s = session_for(sim, tmp_path)
    try:
        for i in range(120):
            name = f"rnd-{rng.randrange(15)}"
            op = rng.random()
            if op < 0.5:
                sim.apply({**NODE, "metadata": {"name": name, "labels": {"i": str(i)}}})
            elif op < 0.8 and any(n["metadata"]["name"] == name for n in sim.objects("Node")):
                sim.delete("Node", name)
            if i % 17 == 0:
                sim.drop_watches(mid_event=bool(i % 2))

        def same() -> bool:
            server = {n["metadata"]["name"]: dict(n["metadata"].get("labels") or {}) for n in sim.objects("Node")}
            cache = {n.name: dict(n.labels) for n in s.snapshot().nodes}
            return server == cache

        wait_for(same, timeout=20)
    finally:
        s.stop()


def test_starting_a_session_twice_starts_it_once(sim: SimCluster, tmp_path: Path) -> None:
    """`gputui` starts the session before Textual loads and the app starts it again on mount."""
    s = session_for(sim, tmp_path)
    try:
        s.start()
        wait_for(lambda: sim.watch_count("Node") >= 1)
        time.sleep(0.2)
        assert sim.watch_count("Node") == 1
        lists = [path for method, path in sim.requests()
                 if method == "GET" and path.startswith("/api/v1/nodes?") and "watch=" not in path]
        assert len(lists) == 1, lists
    finally:
        s.stop()
