"""Prometheus source: DCGM GPU health and Karpenter metrics, queried on an interval into MetricFacts.

Where Prometheus is: `--prometheus-url` / GPUTUI_PROMETHEUS_URL (with GPUTUI_PROMETHEUS_TOKEN or
GPUTUI_PROMETHEUS_USER/_PASSWORD), else a Service found in the usual monitoring namespaces, reached
through the API server's service proxy with the kubeconfig's own credentials. No Prometheus is a
status ("not configured"), never an error: the metric checks are skipped with that reason.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

import requests
import urllib3
from kubernetes.client.rest import should_bypass_proxies
from prometheus_api_client import PrometheusApiClientException, PrometheusConnect
from urllib3.util.retry import Retry

from diagnostics.facts.metric_facts import NEEDS, QUERIES, MetricFacts, Sample, absent_metrics
from diagnostics.snapshot import SourceState, SourceStatus, utcnow
from gputui import clock
from gputui.sources.poller import PollerThread
from gputui.kube.api import Api, KubeError, innermost, reason_of

log = logging.getLogger(__name__)

SOURCE = "prometheus"
ENV_URL = "GPUTUI_PROMETHEUS_URL"
ENV_TOKEN = "GPUTUI_PROMETHEUS_TOKEN"
ENV_SELECTOR = "GPUTUI_PROMETHEUS_SELECTOR"
CLUSTER_LABELS = ("cluster", "k8s_cluster", "cluster_name", "kubernetes_cluster")
"""External labels a central Prometheus (Thanos, Mimir, AMP) puts on each cluster's series."""
ENV_USER = "GPUTUI_PROMETHEUS_USER"
ENV_PASSWORD = "GPUTUI_PROMETHEUS_PASSWORD"
ENV_CA = "GPUTUI_PROMETHEUS_CA"
"""A CA bundle for an explicit https URL with a private CA (or `false` to skip verification)."""

DISCOVERY_NAMESPACES = ("monitoring", "prometheus", "kube-prometheus-stack", "observability")
SERVICE_NAMES = ("prometheus-operated", "kube-prometheus-stack-prometheus", "prometheus-k8s", "prometheus-server",
                 "prometheus")
"""Preferred Service names, best first: operator-managed, kube-prometheus-stack, kube-prometheus, the
prometheus-community chart, plain."""
_NOT_PROMETHEUS = re.compile(r"alertmanager|operator|node-exporter|pushgateway|adapter|blackbox|kube-state|"
                             r"grafana|thanos|config-reloader|webhook|agent")
"""`prometheus-agent-operated` (agent mode) scrapes and forwards but answers no queries."""
_WEB_PORT_NAMES = ("web", "http-web", "http", "http-prometheus")


@dataclass(frozen=True)
class PrometheusSettings:
    """How to reach Prometheus; `url=None` means "discover it through the Kubernetes API"."""

    url: str | None = None
    token: str | None = field(default=None, repr=False)
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    timeout: float = 10.0
    """Per query, seconds."""
    interval: float = 60.0
    """Seconds between query rounds in a live session (metrics move slowly; never per watch event)."""
    verify: bool | str = True
    """TLS verification for an explicit URL: False, True or a CA bundle path."""
    selector: tuple[tuple[str, str], ...] = ()
    """label=value pairs every sample must carry (`cluster=prod`): this cluster's series in a Prometheus
    holding several."""

    @classmethod
    def from_env(cls, url: str | None = None, env: Mapping[str, str] | None = None, selector: str | None = None,
                 **kw: Any) -> PrometheusSettings:
        """--prometheus-url wins over GPUTUI_PROMETHEUS_URL, --prometheus-selector over
        GPUTUI_PROMETHEUS_SELECTOR; credentials only come from the environment."""
        e = os.environ if env is None else env
        ca = e.get(ENV_CA) or ""
        if ca and "verify" not in kw:
            kw["verify"] = False if ca.lower() in ("false", "0", "no") else ca
        return cls(url=url or e.get(ENV_URL) or None, token=e.get(ENV_TOKEN) or None,
                   user=e.get(ENV_USER) or None, password=e.get(ENV_PASSWORD) or None,
                   selector=parse_selector(selector or e.get(ENV_SELECTOR) or ""), **kw)


class SelectorError(ValueError):
    """A --prometheus-selector that is not label=value[,label=value]."""


def parse_selector(text: str) -> tuple[tuple[str, str], ...]:
    out = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        key, eq, value = part.partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key.strip()) or not value.strip():
            raise SelectorError(f"--prometheus-selector {text!r}: use label=value[,label=value], e.g. cluster=prod")
        out.append((key.strip(), value.strip().strip('"')))
    return tuple(out)


def for_this_cluster(samples: Mapping[str, tuple[Sample, ...]],
                     selector: tuple[tuple[str, str], ...]) -> dict[str, tuple[Sample, ...]]:
    """Keep the samples carrying every selector label; with no selector, refuse a Prometheus whose series
    come from several clusters (their nodes, pools and GPUs would be judged as this cluster's)."""
    if selector:
        return {p: tuple(s for s in ss if all(s.labels.get(k) == v for k, v in selector)) for p, ss in samples.items()}
    for label in CLUSTER_LABELS:
        values = sorted({s.labels[label] for ss in samples.values() for s in ss if s.labels.get(label)})
        if len(values) > 1:
            shown = ", ".join(values[:5]) + (", ..." if len(values) > 5 else "")
            raise PrometheusUnavailable(SourceStatus(
                SOURCE, SourceState.NOT_CONFIGURED,
                f"its series come from several clusters ({label}={shown}): pass --prometheus-selector "
                f"{label}=<this cluster> (or ${ENV_SELECTOR})"))
    return dict(samples)


@dataclass(frozen=True)
class Endpoint:
    """A resolved Prometheus: where, how to authenticate, and how it was found (for the status line)."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    auth: tuple[str, str] | None = field(default=None, repr=False)
    verify: bool | str = True
    cert: tuple[str, str] | None = None
    proxies: Mapping[str, str] = field(default_factory=dict)
    found_by: str = "--prometheus-url"
    service: tuple[str, str, str] | None = None
    """(namespace, name, port) when reached through the API server's service proxy."""


class PrometheusUnavailable(Exception):
    """Prometheus could not be used at all; carries the SourceStatus to record."""

    def __init__(self, status: SourceStatus) -> None:
        super().__init__(status.detail)
        self.status = status


# --- discovery -----------------------------------------------------------------------------------
def pick_service(services: Sequence[Mapping[str, Any]]) -> tuple[str, str, str] | None:
    """(namespace, name, port) of the most likely Prometheus among Service objects, or None."""
    best: tuple[int, str, str, str] | None = None
    for svc in services:
        meta = svc.get("metadata") or {}
        name, ns = str(meta.get("name") or ""), str(meta.get("namespace") or "")
        if not name or "prometheus" not in name or _NOT_PROMETHEUS.search(name):
            continue
        rank = SERVICE_NAMES.index(name) if name in SERVICE_NAMES else len(SERVICE_NAMES)
        port = _web_port((svc.get("spec") or {}).get("ports") or [])
        if port is None:
            continue
        if best is None or (rank, ns, name) < best[:3]:
            best = (rank, ns, name, port)
    return None if best is None else (best[1], best[2], best[3])


def _web_port(ports: Sequence[Mapping[str, Any]]) -> str | None:
    for p in ports:
        if p.get("name") in _WEB_PORT_NAMES:
            return str(p["name"])
    for p in ports:
        if p.get("port") == 9090 or p.get("targetPort") in (9090, "web", "http-web"):
            return str(p.get("name") or p["port"])
    if ports:
        return str(ports[0].get("name") or ports[0].get("port"))
    return None


def discover(api: Api, namespaces: Sequence[str] = DISCOVERY_NAMESPACES,
             forbidden: list[str] | None = None) -> tuple[str, str, str] | None:
    """Look for a Prometheus Service in the usual namespaces (namespaced lists: works with narrow RBAC).
    Namespaces whose services may not be listed are added to `forbidden`."""
    found: list[Mapping[str, Any]] = []
    for ns in namespaces:
        try:
            body = api.get(f"/api/v1/namespaces/{ns}/services", timeout=5)
        except KubeError as exc:
            log.debug("prometheus discovery: services in %s: %s", ns, exc)
            if exc.status == 403 and forbidden is not None:
                forbidden.append(ns)
            continue
        for item in body.get("items") or [] if isinstance(body, dict) else []:
            item.setdefault("metadata", {}).setdefault("namespace", ns)
            found.append(item)
    return pick_service(found)


def proxy_endpoint(api: Api, service: tuple[str, str, str]) -> Endpoint:
    """The service-proxy URL with the kubeconfig's auth (token, client cert, CA), fresh per call.

    Fresh because exec-plugin tokens (EKS `aws eks get-token`) expire after ~15 minutes and the
    official client's refresh hook runs when the auth settings are read.
    """
    ns, name, port = service
    cfg = api.client.configuration
    headers: dict[str, str] = {}
    bearer = cfg.auth_settings().get("BearerToken")
    if bearer and bearer.get("value"):
        headers["Authorization"] = str(bearer["value"])
    auth = (cfg.username, cfg.password) if cfg.username and cfg.password and not headers else None
    verify: bool | str = (cfg.ssl_ca_cert or True) if cfg.verify_ssl else False
    cert = (cfg.cert_file, cfg.key_file) if cfg.cert_file and cfg.key_file else None
    url = f"{cfg.host.rstrip('/')}/api/v1/namespaces/{ns}/services/{name}:{port}/proxy"
    # As the client does for the API server itself: NO_PROXY hosts bypass the proxy.
    bypass = bool(cfg.proxy) and should_bypass_proxies(cfg.host, cfg.no_proxy or "")
    proxies = {"http": cfg.proxy, "https": cfg.proxy} if cfg.proxy and not bypass else {}
    return Endpoint(url, headers, auth, verify, cert, proxies,
                    found_by=f"service {ns}/{name}:{port} via the API server proxy", service=service)


def explicit_endpoint(settings: PrometheusSettings) -> Endpoint:
    assert settings.url
    headers = {"Authorization": f"Bearer {settings.token}"} if settings.token else {}
    auth = (settings.user, settings.password or "") if settings.user and not settings.token else None
    return Endpoint(settings.url.rstrip("/"), headers, auth, settings.verify)


def resolve(settings: PrometheusSettings, api: Api | None) -> Endpoint:
    """Where to query, or PrometheusUnavailable(not configured) when nothing was given or found."""
    if settings.url:
        return explicit_endpoint(settings)
    forbidden: list[str] = []
    service = discover(api, forbidden=forbidden) if api is not None else None
    if service is None and forbidden:
        # Not "not configured": gputui was kept from looking (it may be right there).
        raise PrometheusUnavailable(SourceStatus(
            SOURCE, SourceState.FORBIDDEN,
            f"list services in {', '.join(forbidden)} (to find Prometheus; or pass --prometheus-url)"))
    if service is None:
        where = ", ".join(DISCOVERY_NAMESPACES)
        raise PrometheusUnavailable(SourceStatus(
            SOURCE, SourceState.NOT_CONFIGURED,
            f"no --prometheus-url / ${ENV_URL}, and no Prometheus service found in namespaces {where}"))
    assert api is not None
    return proxy_endpoint(api, service)


# --- querying ------------------------------------------------------------------------------------
_HTTP_STATUS = re.compile(r"HTTP Status Code (\d+)")


def _client(ep: Endpoint, timeout: float) -> PrometheusConnect:
    session = requests.Session()
    session.verify = ep.verify
    if ep.cert:
        session.cert = ep.cert
    if ep.proxies:
        session.proxies.update(ep.proxies)
    # No retries: a round that fails is reported now and retried on the next interval, instead of
    # stalling in urllib3's backoff.
    return PrometheusConnect(url=ep.url, headers=dict(ep.headers) or None, auth=ep.auth, session=session,
                             retry=Retry(total=0, connect=0, read=0, redirect=2, status=0),
                             timeout=timeout)


def _status_for(exc: Exception, ep: Endpoint, timeout: float) -> SourceStatus:
    """A failed query as a source status: 401/403 forbidden, everything else unreachable."""
    where = ep.found_by if ep.service else ep.url
    if isinstance(exc, PrometheusApiClientException):
        m = _HTTP_STATUS.search(str(exc))
        code = int(m.group(1)) if m else 0
        if code in (401, 403):
            if ep.service:
                ns, name, _port = ep.service
                hint = f"needs get services/proxy on {name} in namespace {ns}"
            else:
                hint = f"set ${ENV_TOKEN} or ${ENV_USER}/${ENV_PASSWORD}"
            return SourceStatus(SOURCE, SourceState.FORBIDDEN, f"HTTP {code} from {where}: {hint}")
        body = str(exc)[m.end():].strip(" ()")[:200] if m else str(exc)[:200]
        return SourceStatus(SOURCE, SourceState.UNREACHABLE, f"HTTP {code or '?'} from {where} {body}".strip())
    if isinstance(exc, requests.Timeout):
        return SourceStatus(SOURCE, SourceState.UNREACHABLE, f"{where}: no answer within {timeout:g}s")
    if isinstance(exc, requests.ConnectionError):
        # urllib3 with read retries off wraps a read timeout as a ConnectionError(MaxRetryError); the
        # URL (with launch_timeout in a query) is no clue, the innermost error is.
        inner = innermost(exc)
        if isinstance(inner, (TimeoutError, urllib3.exceptions.TimeoutError)) and not isinstance(
                inner, urllib3.exceptions.NewConnectionError):  # NewConnectionError subclasses ConnectTimeoutError
            return SourceStatus(SOURCE, SourceState.UNREACHABLE, f"{where}: no answer within {timeout:g}s")
        why = reason_of(exc)
        return SourceStatus(SOURCE, SourceState.UNREACHABLE,
                            f"{where}: {'connection refused' if 'refused' in why.lower() else why}")
    return SourceStatus(SOURCE, SourceState.UNREACHABLE, f"{where}: {type(exc).__name__}: {_short(str(exc))}")


def _short(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:200]


def _samples(query: str, result: Any) -> tuple[Sample, ...]:
    out: list[Sample] = []
    for item in result or []:
        try:
            ts, raw = item["value"]
            value = float(raw)
        except (KeyError, TypeError, ValueError):
            continue
        labels = {str(k): str(v) for k, v in (item.get("metric") or {}).items()}
        out.append(Sample(query, labels, value, datetime.fromtimestamp(float(ts), timezone.utc)))
    return tuple(out)


def query_facts(ep: Endpoint, *, timeout: float = 10.0, at: datetime | None = None,
                now: Callable[[], datetime] = utcnow, workers: int = 4,
                selector: tuple[tuple[str, str], ...] = ()) -> MetricFacts:
    """One round: which metrics exist, then every query they allow (concurrently, each with a timeout).

    Raises PrometheusUnavailable when the first query fails (unreachable, 401/403); a later query
    that fails is recorded in `MetricFacts.errors` and only skips the checks that need it.
    """
    params = {"time": f"{at.timestamp():.3f}"} if at is not None else None
    prom = _client(ep, timeout)
    try:
        (present_q,) = QUERIES["present"]
        try:
            present = prom.custom_query(present_q, params=params)
        except (PrometheusApiClientException, requests.RequestException) as exc:
            raise PrometheusUnavailable(_status_for(exc, ep, timeout)) from None
        names = {str((s.get("metric") or {}).get("__name__", "")) for s in present or []}
        absent = absent_metrics(names)
        jobs = [(p, q) for p, qs in QUERIES.items() if p != "present" and NEEDS.get(p) not in absent for q in qs]

        def run(job: tuple[str, str]) -> tuple[str, str, tuple[Sample, ...] | None, str]:
            purpose, q = job
            try:
                return purpose, q, _samples(q, prom.custom_query(q, params=params)), ""
            except (PrometheusApiClientException, requests.RequestException) as exc:
                return purpose, q, None, _status_for(exc, ep, timeout).detail

        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            results = list(pool.map(run, jobs))
    finally:
        prom.close()
    samples: dict[str, tuple[Sample, ...]] = {}
    queries: dict[str, tuple[str, ...]] = {"present": (present_q,)}
    errors: dict[str, str] = {}
    for purpose, q, got, err in results:
        queries[purpose] = queries.get(purpose, ()) + (q,)
        if err:
            errors[purpose] = err
        else:
            samples[purpose] = samples.get(purpose, ()) + (got or ())
    return MetricFacts(queried_at=at or now(), url=ep.url, samples=for_this_cluster(samples, selector),
                       queries=queries, absent=absent, errors=errors)


ROUTE_PREFIX = "/prometheus"
"""The sub-path charts and operators serve Prometheus under when asked to (`routePrefix`, `--web.route-prefix`)."""


def query_any_prefix(ep: Endpoint, **kw: Any) -> tuple[Endpoint, MetricFacts]:
    """`query_facts`, trying a discovered Service under /prometheus when its root answers 404 (a route prefix
    the Service does not say)."""
    try:
        return ep, query_facts(ep, **kw)
    except PrometheusUnavailable as exc:
        if ep.service is None or not exc.status.detail.startswith("HTTP 404"):
            raise
        prefixed = replace(ep, url=ep.url + ROUTE_PREFIX, found_by=f"{ep.found_by}, route prefix {ROUTE_PREFIX}")
        try:
            return prefixed, query_facts(prefixed, **kw)
        except PrometheusUnavailable:
            raise exc from None


def ok_status(ep: Endpoint, facts: MetricFacts) -> SourceStatus:
    detail = ep.found_by
    if facts.errors:
        detail += f"; {len(facts.errors)} queries failed"
    return SourceStatus(SOURCE, SourceState.OK, detail, updated_at=facts.queried_at)


def collect(settings: PrometheusSettings, api: Api | None = None, *, at: datetime | None = None,
            now: Callable[[], datetime] = utcnow) -> tuple[MetricFacts | None, SourceStatus]:
    """One-shot (diagnose, bundle): the facts and the status to put in the Snapshot / Store."""
    try:
        ep, facts = query_any_prefix(resolve(settings, api), timeout=settings.timeout, at=at, now=now,
                                     selector=settings.selector)
    except PrometheusUnavailable as exc:
        return None, exc.status
    return facts, ok_status(ep, facts)


class PrometheusPoller(PollerThread):
    """Queries Prometheus every `settings.interval` seconds in one worker thread and stores the facts.

    Rounds never overlap (one thread, sequential). A failed round keeps the last good facts and
    marks them stale; a discovered Service is looked up again after a failure.
    """

    SOURCE_NAME = SOURCE

    def __init__(self, store: Any, settings: PrometheusSettings, api: Api | None = None, *,
                 now: Callable[[], datetime] = utcnow) -> None:
        super().__init__(store)
        self.settings = settings
        self.api = api
        self.now = now
        self._service: tuple[str, str, str] | None = None
        self.last: MetricFacts | None = None

    def poll_once(self) -> SourceStatus:
        """One round, synchronously: resolve, query, store. Returns the status it recorded."""
        try:
            # A frozen clock (screenshots, replays): Prometheus answers as of then too, not as of its wall clock.
            ep, facts = query_any_prefix(self._endpoint(), timeout=self.settings.timeout, now=self.now,
                                         selector=self.settings.selector, at=self.now() if clock.frozen() else None)
        except PrometheusUnavailable as exc:
            status = exc.status
            if status.state is not SourceState.NOT_CONFIGURED:
                self._service = None  # rediscover next time: the Service may have moved
            if self.last is not None and status.state is SourceState.UNREACHABLE:
                status = SourceStatus(SOURCE, SourceState.STALE, status.detail, updated_at=self.last.queried_at)
            self.store.set_extra(SOURCE, self.last, status)
            return status
        finally:
            self.rounds += 1
        self.last = facts
        status = ok_status(ep, facts)
        self.store.set_extra(SOURCE, facts, status)
        return status

    def _endpoint(self) -> Endpoint:
        if self.settings.url:
            return explicit_endpoint(self.settings)
        if self._service is None:
            self._service = discover(self.api) if self.api is not None else None
        if self._service is None or self.api is None:
            return resolve(self.settings, None)  # raises "not configured"
        return proxy_endpoint(self.api, self._service)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll_once()
            except Exception as exc:  # never let the worker die silently
                log.exception("prometheus poll failed")
                self.store.set_extra(SOURCE, self.last, SourceStatus(SOURCE, SourceState.UNREACHABLE,
                                                                     f"{type(exc).__name__}: {_short(str(exc))}"))
            self._wake.wait(self.settings.interval)
            self._wake.clear()
