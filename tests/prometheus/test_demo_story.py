"""`gputui demo` keeps its story while it runs (issue #22): its Prometheus history goes on past start-up.

The demo's Prometheus answers at the wall clock; its history used to end at start-up, so after a few
minutes the critical Xid finding vanished and the metric checks turned "skipped: not exported".
Here the clock is compressed: the same Prometheus is asked as of 30 minutes and 6 hours later.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import yaml

from diagnostics import run
from diagnostics.model import CheckStatus
from diagnostics.snapshot import SourceState
from gputui.sources.prometheus import PrometheusSettings, collect
from gputui.sources.prometheus_demo import FUTURE, start_demo_prometheus
from tests.builders import snapshot
from tests.prometheus.conftest import require_prometheus
from tests.prometheus.datasets import CLUSTER
from tests.prometheus.test_demo import ICE_EVENT, METRIC_CHECKS


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
