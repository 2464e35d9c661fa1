"""A Prometheus holding several clusters' series (Thanos, Mimir, AMP): only this cluster's are judged."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from diagnostics.facts.metric_facts import Sample
from diagnostics.snapshot import SourceState
from gputui.sources.prometheus import PrometheusSettings, PrometheusUnavailable, SelectorError, for_this_cluster

AT = datetime(2026, 8, 21, 10, tzinfo=timezone.utc)


def _xid(cluster: str, value: float) -> Sample:
    return Sample("changes(DCGM_FI_DEV_XID_ERRORS[1h]) > 0",
                  {"Hostname": "ip-10-0-1-11.ec2.internal", "gpu": "7", "cluster": cluster}, value, AT)


SAMPLES = {"xid_changed": (_xid("prod", 1), _xid("staging", 1)), "gpu_temp": ()}


def test_series_of_several_clusters_are_refused_without_a_selector() -> None:
    # The same node name in prod and staging (one VPC CIDR): staging's Xid would land on prod's node.
    with pytest.raises(PrometheusUnavailable) as exc:
        for_this_cluster(SAMPLES, ())
    status = exc.value.status
    assert status.state is SourceState.NOT_CONFIGURED
    assert "several clusters (cluster=prod, staging)" in status.detail
    assert "--prometheus-selector cluster=<this cluster>" in status.detail


def test_the_selector_keeps_this_clusters_series() -> None:
    kept = for_this_cluster(SAMPLES, (("cluster", "prod"),))
    assert [s.labels["cluster"] for s in kept["xid_changed"]] == ["prod"]
    # One cluster's Prometheus (no cluster label, or a single value) needs no selector.
    assert for_this_cluster({"xid_changed": (_xid("prod", 1),)}, ()) == {"xid_changed": (_xid("prod", 1),)}


def test_selector_from_the_environment_and_bad_ones() -> None:
    settings = PrometheusSettings.from_env(env={"GPUTUI_PROMETHEUS_SELECTOR": "cluster=prod, region=us-east-1"})
    assert settings.selector == (("cluster", "prod"), ("region", "us-east-1"))
    assert PrometheusSettings.from_env(env={}, selector="cluster=a").selector == (("cluster", "a"),)
    for bad in ("prod", "=x", "cluster=", "bad-label=x"):
        with pytest.raises(SelectorError):
            PrometheusSettings.from_env(env={}, selector=bad)


def test_a_private_ca_or_no_verification_from_the_environment() -> None:
    corp = PrometheusSettings.from_env(env={"GPUTUI_PROMETHEUS_CA": "/etc/ssl/corp-ca.pem"})
    assert corp.verify == "/etc/ssl/corp-ca.pem"
    assert PrometheusSettings.from_env(env={"GPUTUI_PROMETHEUS_CA": "false"}).verify is False
    assert PrometheusSettings.from_env(env={}).verify is True


def test_an_agent_mode_prometheus_is_not_picked() -> None:
    # Agent mode scrapes and forwards; its Service answers no queries (HTTP 422).
    from gputui.sources.prometheus import pick_service

    agent = {"metadata": {"name": "prometheus-agent-operated", "namespace": "monitoring"},
             "spec": {"ports": [{"name": "web", "port": 9090}]}}
    assert pick_service([agent]) is None  # nothing to query: "not configured", not 422 on every query
