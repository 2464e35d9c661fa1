"""How the informers come back from one fault, measured where the soak found them slow or wrong.

These tests pin fixes in gputui/kube/informer.py found by the reliability soak: a cut stream
resumes at once, Retry-After is honoured, and a quiet source is "ok" again once its watch is back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from diagnostics.snapshot import SourceState
from gputui.kube.api import Api, load
from gputui.collect.live import LiveSession
from gputui.dev.reliability.injector import RecordingFaults, install
from gputui.sim.cluster import SimCluster

pytestmark = pytest.mark.slow  # the reliability suite: faults injected end to end (README "Reliability")

Session = tuple[SimCluster, LiveSession, RecordingFaults]


def wait_for(pred: Callable[[], bool], timeout: float = 20.0) -> float:
    """Seconds until `pred()` held."""
    started = time.monotonic()
    while not pred():
        if time.monotonic() - started > timeout:
            raise AssertionError("condition not met in time")
        time.sleep(0.01)
    return time.monotonic() - started


@pytest.fixture()
def session(tmp_path: Path) -> Iterator[Session]:
    sim = SimCluster("spot-shortage", shift_to_now=True, bookmark_interval=0.5)
    faults, _lists = install(sim)
    with sim:
        client, info = load(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
        s = LiveSession(Api(client), info)
        s.start()
        assert s.wait_synced(15)
        try:
            yield sim, s, faults
        finally:
            s.stop()


def node(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def test_a_relist_after_410_is_immediate(session: Session) -> None:
    sim, s, _ = session
    sim.expire_next_watch("Node")
    sim.drop_watches(kind="Node")
    sim.apply(node("after-410"))
    assert wait_for(lambda: s.store.get("nodes", "after-410") is not None) < 1.0


def test_a_cut_stream_resumes_at_once_even_after_earlier_cuts(session: Session) -> None:
    sim, s, _ = session
    for _ in range(4):
        wait_for(lambda: sim.watch_count("Node") == 1)
        sim.drop_watches(mid_event=True, kind="Node")
    sim.apply(node("after-cuts"))
    assert wait_for(lambda: s.store.get("nodes", "after-cuts") is not None) < 1.0


def test_retry_after_is_honoured(session: Session) -> None:
    sim, _, faults = session
    path = "/api/v1/nodes"
    sim.throttle(1, retry_after=3, path_contains=path)
    sim.drop_watches(kind="Node")
    wait_for(lambda: _retried(faults, path))
    throttled = next(r.at for r in faults.log if r.path == path and r.failed == 429)
    retried = next(r.at for r in faults.log if r.path == path and r.at > throttled)
    assert retried - throttled >= 2.9


def _retried(faults: RecordingFaults, path: str) -> bool:
    hits = [r for r in faults.log if r.path == path]
    i = next((n for n, r in enumerate(hits) if r.failed == 429), None)
    return i is not None and len(hits) > i + 1


def test_a_quiet_source_is_ok_again_once_its_watch_is_back(session: Session) -> None:
    sim, s, _ = session
    path = "/apis/node.k8s.io/v1/runtimeclasses"
    sim.fail_requests(1, 500, path_contains=path)
    sim.drop_watches(kind="RuntimeClass")
    wait_for(lambda: sim.faults.pending_failures() == 0)  # the informer met the 500 ...
    wait_for(lambda: sim.watch_count("RuntimeClass") == 1)  # ... and is watching again
    time.sleep(1.5)  # three bookmarks later: the data is current
    assert s.store.status()["runtimeclasses"].state is SourceState.OK
