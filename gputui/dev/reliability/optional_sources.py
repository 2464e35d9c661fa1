"""Prometheus and AWS down, slow or denied: `gputui diagnose` must still answer, with the same exit code.

Each case runs `gputui diagnose -o json` against the simulator with one optional source pointed at a
misbehaving loopback endpoint. Expected: the source's status says what is wrong, every check that needs it is
skipped with that reason, every other check gives the same result as without the source, the exit code is
the same, and the run takes a bounded time.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from diagnostics.registry import all_checks
from gputui.dev.reliability.endpoints import EC2_DENIED, PROMETHEUS_DENIED, closed_port_url, misbehaving_server
from gputui.sim.cluster import SimCluster

CONDITIONS = ("unreachable", "slow", "forbidden")
EXPECTED_STATE = {"unreachable": "unreachable", "slow": "unreachable", "forbidden": "forbidden"}
PROMETHEUS_TIMEOUT = 10.0
"""PrometheusSettings.timeout: a query slower than this is abandoned."""
AWS_WORST_CASE = 3 + 5 * 3
"""aws.client_config(): connect 3 s, read 5 s, 3 attempts (standard retries)."""


@dataclass
class OptionalCase:
    source: str
    condition: str
    exit_code: int | None = None
    baseline_exit_code: int | None = None
    seconds: float = 0.0
    bound: float = 0.0
    state: str = ""
    detail: str = ""
    skipped: dict[str, str] = field(default_factory=dict)
    """Checks needing the source: slug -> reason."""
    not_skipped: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    """Checks not needing the source whose result differs from the baseline run."""
    stderr: str = ""
    error: str = ""

    @property
    def ok(self) -> bool:
        return (not self.error and self.exit_code == self.baseline_exit_code and not self.not_skipped
                and not self.changed and self.state == EXPECTED_STATE[self.condition] and self.seconds <= self.bound
                and all(self.detail and self.detail in r for r in self.skipped.values()))

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "condition": self.condition, "ok": self.ok, "exit_code": self.exit_code,
                "baseline_exit_code": self.baseline_exit_code, "seconds": round(self.seconds, 2),
                "bound_s": self.bound, "status": {"state": self.state, "detail": self.detail},
                "checks_skipped": len(self.skipped), "not_skipped": self.not_skipped, "changed": self.changed,
                "error": self.error}


@contextlib.contextmanager
def _env(**values: str | None) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


_NO_AWS = {"AWS_ACCESS_KEY_ID": None, "AWS_SECRET_ACCESS_KEY": None, "AWS_SESSION_TOKEN": None, "AWS_PROFILE": None,
           "AWS_ENDPOINT_URL": None, "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/dev/null",
           "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "GPUTUI_PROMETHEUS_URL": None}


def _diagnose(kubeconfig: Path, extra: list[str]) -> tuple[int | None, dict[str, Any] | None, str, float, str]:
    from gputui.cli.program import main

    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    code: int | None = None
    crash = ""
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["diagnose", "-o", "json", "--kubeconfig", str(kubeconfig), *extra])
    except BaseException as exc:  # noqa: BLE001 - a crash is what this looks for
        crash = f"{type(exc).__name__}: {exc}"
    seconds = time.monotonic() - started
    body = None
    if not crash:
        try:
            body = orjson.loads(out.getvalue())
        except orjson.JSONDecodeError:
            crash = f"stdout is not JSON: {err.getvalue().strip()[:300]}"
    return code, body, err.getvalue(), seconds, crash


@contextlib.contextmanager
def _endpoint(source: str, condition: str, slow_delay: float) -> Iterator[str]:
    if condition == "unreachable":
        yield closed_port_url()
        return
    if source == "aws":
        body, ctype = EC2_DENIED, "text/xml;charset=UTF-8"
    else:
        body, ctype = PROMETHEUS_DENIED, "text/plain; charset=utf-8"
    with misbehaving_server(condition, delay=slow_delay, body=body, content_type=ctype) as url:
        yield url


def optional_source_matrix(scenario: str = "incident", *, sources: tuple[str, ...] = ("prometheus", "aws"),
                           conditions: tuple[str, ...] = CONDITIONS) -> list[OptionalCase]:
    requires = {spec.slug: spec.requires for spec in all_checks()}
    out: list[OptionalCase] = []
    with SimCluster(scenario, shift_to_now=True) as sim, tempfile.TemporaryDirectory(prefix="gputui-opt-") as tmp, \
            _env(**_NO_AWS):
        kubeconfig = sim.write_kubeconfig(Path(tmp) / "kubeconfig")
        base_code, base, _err, _s, crash = _diagnose(kubeconfig, [])
        if base is None:
            raise RuntimeError(f"baseline diagnose failed: {crash}")
        base_status = {r["check"]: r["status"] for r in base["results"]}
        for source in sources:
            for condition in conditions:
                case = OptionalCase(source, condition, baseline_exit_code=base_code)
                slow = (PROMETHEUS_TIMEOUT if source == "prometheus" else AWS_WORST_CASE) + 20
                case.bound = (PROMETHEUS_TIMEOUT if source == "prometheus" else AWS_WORST_CASE) + 8.0
                with _endpoint(source, condition, slow) as url:
                    if source == "prometheus":
                        extra, env = ["--prometheus-url", url], {}
                    else:
                        extra = []
                        env = {"AWS_ENDPOINT_URL": url, "AWS_ACCESS_KEY_ID": "AKIAGPUTUITESTING",
                               "AWS_SECRET_ACCESS_KEY": "not-a-real-secret", "AWS_REGION": "us-west-2"}
                    with _env(**env):
                        case.exit_code, body, case.stderr, case.seconds, case.error = _diagnose(kubeconfig, extra)
                if body is not None:
                    st = body["sources"].get(source) or {}
                    case.state, case.detail = str(st.get("state", "")), str(st.get("detail", ""))
                    for r in body["results"]:
                        slug = r["check"]
                        if source in requires.get(slug, ()):
                            if r["status"] == "skipped":
                                case.skipped[slug] = r["reason"]
                            else:
                                case.not_skipped.append(f"{slug}: {r['status']}")
                        elif r["status"] != base_status.get(slug):
                            case.changed.append(f"{slug}: {base_status.get(slug)} -> {r['status']}")
                out.append(case)
    return out
