"""`gputui demo` keeps its story while it runs (issue #22): its Prometheus history goes on past start-up.

The demo's Prometheus answers at the wall clock; its history used to end at start-up, so after a few
minutes the critical Xid finding vanished and the metric checks turned "skipped: not exported".
Here the clock is compressed: the same Prometheus is asked as of 30 minutes and 6 hours later.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from diagnostics import run
from diagnostics.model import CheckStatus
from diagnostics.snapshot import SourceState
from gputui.sources.prometheus import PrometheusSettings, collect
from gputui.sim.prometheus import FUTURE, start_demo_prometheus
from tests.builders import snapshot
from tests.prometheus.conftest import require_prometheus
from tests.prometheus.datasets import CLUSTER
from tests.prometheus.test_demo import ICE_EVENT, METRIC_CHECKS

pytestmark = pytest.mark.slow  # a real Prometheus with the demo's history, asked hours apart


def test_the_demo_tells_the_same_story_hours_after_it_started(tmp_path: Path) -> None:
    require_prometheus()
    objects = [d for d in yaml.safe_load_all(CLUSTER + "---" + ICE_EVENT) if d]
    start = datetime.fromtimestamp(int(time.time()), timezone.utc)
    started = start_demo_prometheus(objects, now=start, workdir=tmp_path)
    assert started is not None
    url, stop = started
    try:
        stories = {}
        for later in (timedelta(0), timedelta(minutes=30), timedelta(minutes=47), timedelta(hours=6),
                      timedelta(seconds=FUTURE - 600)):
            facts, status = collect(PrometheusSettings(url=url), at=start + later)
            assert status.state is SourceState.OK
            report = run(snapshot(objects, sources={"prometheus": SourceState.OK}, metrics=facts), only=METRIC_CHECKS)
            assert not [r for r in report.results if r.status is CheckStatus.SKIPPED], later
            # The same findings: check, subject, severity (counts in titles may grow: the GPU keeps failing).
            stories[later] = sorted((f.check, str(f.subject), f.severity.label if f.severity else "")
                                    for f in report.findings)
            xid = next(f for f in report.findings if f.check == "gpu-xid-errors")
            assert "Xid 79 on GPU 7" in xid.title and "fallen off the bus" in xid.title, later
    finally:
        stop()
    first = stories[timedelta(0)]
    assert {c for c, *_ in first} >= {"gpu-xid-errors", "gpu-rma-candidate", "gpu-idle",
                                      "karpenter-provisioning-failures"}
    for later, story in stories.items():
        assert story == first, f"the story changed {later} after start-up"


def test_the_incident_demo_keeps_its_findings_for_an_hour(tmp_path: Path) -> None:
    """The whole demo (simulated cluster shifted to now, its Prometheus and AWS, the event pulse), run
    through the checklist at start-up, 30 and 60 minutes later: the same findings each time."""
    import argparse
    import dataclasses

    from gputui import clock
    from gputui.collect.one_shot import collect as collect_cluster
    from gputui.cli.demo import DemoExtras
    from gputui.cli.config import aws_config, prometheus_settings
    from gputui.kube.api import Api, load
    from gputui.sim.cluster import SimCluster
    from gputui.sim.pulse import EventPulse

    require_prometheus()
    args = argparse.Namespace(prometheus_url=None, prometheus_selector=None, aws_profile=None, aws_region=None)
    with SimCluster("incident", shift_to_now=True) as sim:
        start = clock.now()
        extras = DemoExtras.start(sim, now=start)
        extras.apply(args)
        try:
            client, info = load(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
            api = Api(client)
            pulse = EventPulse(sim, start)
            stories = {}
            for later in (timedelta(0), timedelta(minutes=30), timedelta(minutes=60)):
                at = start + later
                pulse.beat(at)  # what the demo's pulse thread does once a minute
                snap = collect_cluster(api, info, None, now=lambda at=at: at, aws=aws_config(args))
                facts, status = collect(prometheus_settings(args), at=at, now=lambda at=at: at)
                snap = dataclasses.replace(snap, metrics=facts, sources={**snap.sources, "prometheus": status})
                report = run(snap)
                stories[later] = sorted((f.check, str(f.subject), f.severity.label if f.severity else "")
                                        for f in report.findings)
        finally:
            extras.stop()
    checks = {c for c, *_ in stories[timedelta(0)]}
    assert {"gpu-xid-errors", "spot-capacity-shortage", "gpu-not-advertised"} <= checks
    for later, story in stories.items():
        assert story == stories[timedelta(0)], f"the demo's findings changed {later} after start-up"
