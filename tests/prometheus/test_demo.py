"""The demo Prometheus: roles come from the scenario's objects, and the metric checks find what it shows."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from diagnostics import ObjectRef, Report, Severity, run
from diagnostics.snapshot import SourceState
from gputui.sim.scenario import load_scenario
from gputui.sources.prometheus import PrometheusSettings, collect
from gputui.sim.prometheus import start_demo_prometheus
from tests.builders import snapshot
from tests.prometheus.conftest import require_prometheus
from tests.prometheus.datasets import BROKEN, CLUSTER, SICK

pytestmark = pytest.mark.slow  # the demo's real Prometheus end to end

METRIC_CHECKS = ["gpu-xid-errors", "gpu-idle", "karpenter-provisioning-failures", "nodepool-near-gpu-limit",
                 "gpu-rma-candidate"]

ICE_EVENT = """
apiVersion: v1
kind: Event
metadata: {name: gpu-spot-k2x9q.1829f, namespace: default}
involvedObject: {apiVersion: karpenter.sh/v1, kind: NodeClaim, name: gpu-spot-k2x9q}
reason: InsufficientCapacityError
type: Warning
count: 3
message: "NodeClaim gpu-spot-k2x9q event: creating instance, insufficient capacity, with fleet error(s),
  InsufficientInstanceCapacity: There is no Spot capacity available that matches your request."
"""


def _demo_report(objects: list[Mapping[str, Any]], tmp_path: Path) -> Report:
    require_prometheus()
    started = start_demo_prometheus(objects, workdir=tmp_path)
    assert started is not None
    url, stop = started
    try:
        facts, status = collect(PrometheusSettings(url=url))
        assert status.state is SourceState.OK
        return run(snapshot(objects, sources={"prometheus": SourceState.OK}, metrics=facts), only=METRIC_CHECKS)
    finally:
        stop()
        try:
            urllib.request.urlopen(f"{url}/-/ready", timeout=1)  # noqa: S310 - loopback
            raise AssertionError("Prometheus still answers after stop()")
        except (urllib.error.URLError, ConnectionError):
            pass


def test_demo_history_follows_the_objects(tmp_path: Path) -> None:
    objects = [d for d in yaml.safe_load_all(CLUSTER + "---" + ICE_EVENT) if d]
    by_check = {r.check: r for r in _demo_report(objects, tmp_path).results}
    # BROKEN advertises 7 of its 8 GPUs: its GPU 7 fell off the bus.
    (xid,) = by_check["gpu-xid-errors"].findings
    assert xid.subject == ObjectRef("Node", BROKEN) and xid.severity is Severity.CRITICAL
    assert "Xid 79 on GPU 7" in xid.title
    # ... and it fell off the bus five and two days ago too: a GPU that keeps failing.
    (rma,) = by_check["gpu-rma-candidate"].findings
    assert rma.subject == ObjectRef("Node", BROKEN)
    assert "GPU 7" in rma.title and "Xid 79 (GPU has fallen off the bus) 3 times over 5 days" in rma.title
    # SICK holds no GPU pod: idle. IDLE's notebook pod holds two of its GPUs: busy in the demo.
    (idle,) = by_check["gpu-idle"].findings
    assert idle.subject == ObjectRef("Node", SICK)
    # The InsufficientCapacityError event names a gpu-spot NodeClaim (count 3).
    (ice,) = by_check["karpenter-provisioning-failures"].findings
    assert ice.subject == ObjectRef("NodePool", "gpu-spot") and "(insufficient_capacity x3)" in ice.title
    assert by_check["nodepool-near-gpu-limit"].findings == ()  # 16 of 21, 5 of 32


def test_incident_scenario(tmp_path: Path) -> None:
    # The default demo: expectations derived from its objects the way the demo derives its history.
    objects = [o for objs in load_scenario("incident").objects.values() for o in objs]
    report = _demo_report(objects, tmp_path)
    snap = snapshot(objects)
    short = [n.name for n in snap.nodes
             if 0 < n.allocatable.get("nvidia.com/gpu", 0) < n.capacity.get("nvidia.com/gpu", 0)]
    by_check = {r.check: r for r in report.results}
    assert [f.subject.name for f in by_check["gpu-xid-errors"].findings] == short
    ice_pools = {e.involved_name.rsplit("-", 1)[0] for e in snap.events if e.reason == "InsufficientCapacityError"}
    assert {f.subject.name for f in by_check["karpenter-provisioning-failures"].findings} == ice_pools
    assert all(r.status.value != "errored" for r in report.results)
