"""The Prometheus source: where it looks, what it records, and the statuses users see when it cannot."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from diagnostics import CheckStatus, run
from diagnostics.facts.metric_facts import QUERIES, MetricFacts
from diagnostics.snapshot import SourceState
from gputui.kube.api import Api, load
from gputui.sim.cluster import SimCluster
from gputui.sources.prometheus import (
    Endpoint,
    PrometheusPoller,
    PrometheusSettings,
    collect,
    discover,
    pick_service,
    proxy_endpoint,
    query_facts,
)
from gputui.sim.prometheus_local import LocalPrometheus, free_port, start
from gputui.collect.store import Store
from tests.builders import snapshot
from tests.prometheus.conftest import require_prometheus
from tests.prometheus.datasets import CLUSTER, empty

# bcrypt("s3cret", cost 4), made once with Python's crypt module: Prometheus' web config wants a hash.
S3CRET_HASH = "$2b$04$Nt9D9GHoMchaUUpQ40oyOuzixInt.M1XwVAPFVNQRUGYfxW9qYEFu"


def test_facts_carry_the_promql_behind_every_sample(facts: Callable[[str], MetricFacts],
                                                     prometheus: Callable[[str], LocalPrometheus]) -> None:
    got = facts("fleet")
    assert got.url == prometheus("fleet").url
    assert set(got.queries) == set(QUERIES) - {"xid_count", "rma_retired_pages"}  # metric absent: not even queried
    for purpose, samples in got.samples.items():
        for s in samples:
            assert s.query in QUERIES[purpose]
    assert got.absent == {"DCGM_EXP_XID_ERRORS_COUNT": "off in dcgm-exporter's default counters",
                          "DCGM_FI_DEV_RETIRED_DBE": "off in dcgm-exporter's default counters"}
    assert got.errors == {}
    assert dataclasses.fields(MetricFacts)[1].metadata["sensitive"] is True  # url: redacted in bundles


def test_facts_survive_a_bundle_round_trip(facts: Callable[[str], MetricFacts]) -> None:
    original = facts("fleet")
    replayed = MetricFacts.from_json(json.loads(json.dumps(original.to_json())))

    def findings(m: MetricFacts) -> list[dict[str, object]]:
        snap = snapshot(CLUSTER, sources={"prometheus": SourceState.OK}, metrics=m)
        return [f.to_json() for f in run(snap, only=[f"GT70{i}" for i in range(1, 9)]).findings]

    assert findings(replayed) == findings(original)


def test_no_url_and_nothing_discovered_is_not_configured() -> None:
    got, status = collect(PrometheusSettings.from_env(env={}))
    assert got is None
    assert status.state is SourceState.NOT_CONFIGURED
    # What a skipped check shows:
    reason = status.reason()
    assert reason.startswith("prometheus: not configured (no --prometheus-url / $GPUTUI_PROMETHEUS_URL")
    (result,) = run(snapshot(CLUSTER, sources={"prometheus": status.state}), only=["gpu-idle"]).results
    assert result.status is CheckStatus.SKIPPED and result.reason.startswith("prometheus: not configured")


def test_flag_wins_over_environment_and_credentials_come_from_it() -> None:
    env = {"GPUTUI_PROMETHEUS_URL": "http://env:9090", "GPUTUI_PROMETHEUS_TOKEN": "t0ken"}
    assert PrometheusSettings.from_env(env=env).url == "http://env:9090"
    s = PrometheusSettings.from_env("http://flag:9090", env=env)
    assert (s.url, s.token) == ("http://flag:9090", "t0ken")
    assert "t0ken" not in repr(s)


def test_connection_refused_is_unreachable_and_fast() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    t0 = time.monotonic()
    got, status = collect(PrometheusSettings(url=url, timeout=2))
    assert time.monotonic() - t0 < 2  # no urllib3 retry backoff
    assert got is None
    assert status.state is SourceState.UNREACHABLE
    assert status.detail == f"{url}: connection refused"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalPrometheus]:
    """A real Prometheus that wants basic auth (web config), like one behind an auth proxy."""
    require_prometheus()
    prom = start(empty(time.time()), Path(tmp_path_factory.mktemp("prom-guarded")),
                 web_config=f"basic_auth_users:\n  gputui: {S3CRET_HASH}\n")
    yield prom
    prom.stop()


def test_401_is_forbidden_with_the_hint(guarded: LocalPrometheus) -> None:
    got, status = collect(PrometheusSettings(url=guarded.url, user="gputui", password="wrong"))
    assert got is None
    assert status.state is SourceState.FORBIDDEN
    assert status.detail == (f"HTTP 401 from {guarded.url}: set $GPUTUI_PROMETHEUS_TOKEN or "
                             "$GPUTUI_PROMETHEUS_USER/$GPUTUI_PROMETHEUS_PASSWORD")


def test_basic_auth_from_the_environment(guarded: LocalPrometheus) -> None:
    env = {"GPUTUI_PROMETHEUS_USER": "gputui", "GPUTUI_PROMETHEUS_PASSWORD": "s3cret"}
    got, status = collect(PrometheusSettings.from_env(guarded.url, env=env))
    assert status.state is SourceState.OK
    assert got is not None and "karpenter" in got.absent


class _Forbidding(BaseHTTPRequestHandler):
    """Answers like an API server whose RBAC denies services/proxy, and remembers the auth header."""

    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        type(self).seen.append(self.headers.get("Authorization", ""))
        body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden",
                           "code": 403, "message": 'services "prometheus-operated:web" is forbidden: User "alice" '
                           'cannot get resource "services/proxy" in API group "" in the namespace "monitoring"'})
        self.send_response(403)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def forbidding() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Forbidding)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_403_from_the_api_server_proxy_names_the_permission(forbidding: str) -> None:
    ep = Endpoint(f"{forbidding}/api/v1/namespaces/monitoring/services/prometheus-operated:web/proxy",
                  {"Authorization": "Bearer kube-token"}, service=("monitoring", "prometheus-operated", "web"),
                  found_by="service monitoring/prometheus-operated:web via the API server proxy")
    with pytest.raises(Exception) as err:
        query_facts(ep, timeout=2)
    status = err.value.status  # type: ignore[attr-defined]
    assert status.state is SourceState.FORBIDDEN
    assert status.detail == ("HTTP 403 from service monitoring/prometheus-operated:web via the API server proxy: "
                             "needs get services/proxy on prometheus-operated in namespace monitoring")
    assert _Forbidding.seen[-1] == "Bearer kube-token"


def test_bearer_token_is_sent(forbidding: str) -> None:
    _got, status = collect(PrometheusSettings(url=forbidding, token="t0ken"))
    assert status.state is SourceState.FORBIDDEN
    assert _Forbidding.seen[-1] == "Bearer t0ken"


SERVICES = [
    {"metadata": {"name": n, "namespace": "monitoring"}, "spec": {"ports": p}} for n, p in (
        ("alertmanager-operated", [{"name": "http-web", "port": 9093}]),
        ("kube-prometheus-stack-operator", [{"name": "https", "port": 443}]),
        ("kube-prometheus-stack-prometheus", [{"name": "http-web", "port": 9090},
                                              {"name": "reloader-web", "port": 8080}]),
        ("prometheus-operated", [{"name": "web", "port": 9090}]),
        ("kube-prometheus-stack-prometheus-node-exporter", [{"name": "http-metrics", "port": 9100}]),
    )
]


def test_picks_the_prometheus_among_a_stacks_services() -> None:
    assert pick_service(SERVICES) == ("monitoring", "prometheus-operated", "web")
    assert pick_service(SERVICES[:3]) == ("monitoring", "kube-prometheus-stack-prometheus", "http-web")
    chart = [{"metadata": {"name": "prometheus-server", "namespace": "prometheus"},
              "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 9090}]}}]
    assert pick_service(chart) == ("prometheus", "prometheus-server", "http")
    assert pick_service(SERVICES[:2]) is None


def test_discovers_through_the_kubernetes_api(tmp_path: Path) -> None:
    with SimCluster() as sim:
        for svc in SERVICES:
            sim.apply({"apiVersion": "v1", "kind": "Service", **svc})
        cfg = sim.write_kubeconfig(tmp_path / "kubeconfig")
        api = Api(load(str(cfg))[0])
        found = discover(api)
        assert found == ("monitoring", "prometheus-operated", "web")
        ep = proxy_endpoint(api, found)
        assert ep.url == f"{sim.url}/api/v1/namespaces/monitoring/services/prometheus-operated:web/proxy"
        assert ep.headers["Authorization"] == f"Bearer {sim.token or 'gputui-sim-token'}"
        sim.forbid("services")
        # Kept from looking is not "no Prometheus": the metric checks say which permission is missing.
        _got, status = collect(PrometheusSettings(), api)
        assert status.state is SourceState.FORBIDDEN
        assert status.detail == ("list services in monitoring, prometheus, kube-prometheus-stack, observability "
                                 "(to find Prometheus; or pass --prometheus-url)")


def test_the_service_proxy_honours_no_proxy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # HTTPS_PROXY for the internet, NO_PROXY for the cluster: the API server is reached directly,
    # so must its service proxy be.
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with SimCluster() as sim:
        cfg = sim.write_kubeconfig(tmp_path / "kubeconfig")
        api = Api(load(str(cfg))[0])
        ep = proxy_endpoint(api, ("monitoring", "prometheus-operated", "web"))
    assert ep.proxies == {}


def test_poller_stores_facts_on_an_interval_and_keeps_them_when_prometheus_goes(
        prometheus: Callable[[str], LocalPrometheus]) -> None:
    store = Store()
    poller = PrometheusPoller(store, PrometheusSettings(url=prometheus("quiet").url, interval=0.1))
    poller.start()
    try:
        deadline = time.monotonic() + 10
        while poller.rounds < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        snap = store.snapshot()
        assert snap.status("prometheus").state is SourceState.OK
        assert isinstance(snap.metrics, MetricFacts) and snap.metrics.get("gpu_util")
        good = snap.metrics
        poller.settings = dataclasses.replace(poller.settings, url=f"http://127.0.0.1:{free_port()}")
        while store.status()["prometheus"].state is SourceState.OK and time.monotonic() < deadline:
            time.sleep(0.02)
        snap = store.snapshot()
        assert snap.status("prometheus").state is SourceState.STALE  # last good data stays on screen
        assert "connection refused" in snap.status("prometheus").detail
        assert snap.metrics is good
    finally:
        poller.stop()
    assert poller._thread is not None and not poller._thread.is_alive()


def test_a_reset_connection_is_not_called_a_timeout() -> None:
    # The old text check found "timeout" in the URL of the nodeclaim_failures query (launch_timeout).
    import requests
    import urllib3

    from gputui.sources.prometheus import _status_for

    reset = urllib3.exceptions.ProtocolError("Connection aborted.",
                                             ConnectionResetError(104, "Connection reset by peer"))
    url = "/api/v1/query?query=increase(karpenter_nodeclaims_disrupted_total%7Breason%3D~%22launch_timeout%22"
    exc = requests.ConnectionError(urllib3.exceptions.MaxRetryError(None, url, reset))
    status = _status_for(exc, Endpoint("http://prom:9090", {}, None, True), 10.0)
    assert status.state is SourceState.UNREACHABLE
    assert "no answer within" not in status.detail and "Connection aborted" in status.detail


def test_a_discovered_prometheus_under_a_route_prefix_is_found() -> None:
    # kube-prometheus-stack with routePrefix=/prometheus: the Service's root answers 404.
    import json as _json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from gputui.sources.prometheus import PrometheusUnavailable, query_any_prefix

    class Prefixed(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            ok = self.path.startswith("/prometheus/api/v1/query")
            body = (_json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}) if ok
                    else "404 page not found").encode()
            self.send_response(200 if ok else 404)
            self.send_header("Content-Type", "application/json" if ok else "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_GET  # noqa: N815

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Prefixed)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        ep = Endpoint(f"http://127.0.0.1:{server.server_port}", service=("monitoring", "prometheus-operated", "web"),
                      found_by="service monitoring/prometheus-operated:web via the API server proxy")
        used, facts = query_any_prefix(ep, timeout=5.0)
        assert used.url.endswith("/prometheus") and "route prefix /prometheus" in used.found_by
        assert facts.url == used.url
        # An explicit --prometheus-url is taken as given.
        with pytest.raises(PrometheusUnavailable):
            query_any_prefix(Endpoint(f"http://127.0.0.1:{server.server_port}"), timeout=5.0)
    finally:
        server.shutdown()
