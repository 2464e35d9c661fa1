"""A real Prometheus (Debian's package) per dataset, started once per session on 127.0.0.1.

Locally the tests skip when the binary is missing; with CI=true that is a failure, because CI
must install it (`apt-get install prometheus`). The check tests in tests/diagnostics/checks import
these fixtures; pytest then holds one fixture instance per importing module, so the Prometheus
processes and query results are cached here, process-wide, and stopped once at session end.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from diagnostics import Report, run
from diagnostics.facts.metric_facts import MetricFacts
from diagnostics.snapshot import SourceState
from gputui.sources.prometheus import PrometheusSettings, collect
from gputui.sim.prometheus_local import LocalPrometheus, find_binaries, start
from tests.builders import snapshot
from tests.prometheus.datasets import CLUSTER, DATASETS

MISSING = "Debian's prometheus/promtool are not installed (apt-get install prometheus)"

_running: dict[str, LocalPrometheus] = {}
_facts: dict[str, MetricFacts] = {}


def require_prometheus() -> None:
    if find_binaries() is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{MISSING}; CI=true requires them")
        pytest.skip(MISSING)


def _get(name: str) -> LocalPrometheus:
    if name not in _running:
        # Each dataset's history ends when it is first used: Prometheus answers an instant query only from
        # samples of the last 5 minutes (its lookback delta), and a dataset first used later in a long run
        # (the week of DCGM history, ~5 minutes into the suite) would otherwise read as "not exported".
        workdir = Path(tempfile.mkdtemp(prefix=f"gputui-test-prom-{name}-"))
        _running[name] = start(DATASETS[name](time.time()), workdir)
    return _running[name]


@pytest.fixture(scope="session")
def prometheus() -> Iterator[Callable[[str], LocalPrometheus]]:
    """prometheus("fleet") -> a running Prometheus loaded with that dataset (started on first use)."""
    require_prometheus()
    yield _get
    for name in list(_running):
        prom = _running.pop(name)
        prom.stop()
        shutil.rmtree(prom.workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def facts(prometheus: Callable[[str], LocalPrometheus]) -> Callable[[str], MetricFacts]:
    """facts("fleet") -> what the Prometheus source read from that dataset (queried once)."""

    def get(name: str) -> MetricFacts:
        if name not in _facts:
            got, status = collect(PrometheusSettings(url=prometheus(name).url))
            assert status.state is SourceState.OK, status
            assert got is not None
            _facts[name] = got
        return _facts[name]

    return get


@pytest.fixture(scope="session")
def diagnose(facts: Callable[[str], MetricFacts]) -> Callable[..., Report]:
    """diagnose("gpu-idle", "fleet") -> the Report for that check over the test cluster and dataset."""

    def go(check: str, dataset: str, objects: str = CLUSTER) -> Report:
        snap = snapshot(objects, sources={"prometheus": SourceState.OK}, metrics=facts(dataset))
        return run(snap, only=[check])

    return go
