"""The permissions matrix: each resource gputui reads forbidden (403), and each CRD absent (404), in turn.

For every case, `gputui diagnose -o json` and a live session run against the simulator. Expected: no crash,
every check that requires the resource is *skipped* with the exact missing permission (or the missing CRD)
in its reason, and every check whose sources are all readable still runs (passed or failed).
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from diagnostics import run as run_checks
from diagnostics.registry import all_checks
from diagnostics.snapshot import KUBE_SOURCES
from gputui.kube.resources import RESOURCES
from gputui.sim.cluster import SimCluster

FINDINGS_EXIT_CODES = (0, 3, 4)
"""Exit codes of a diagnose that ran: worst severity ok / error / warning."""


@dataclass
class ModeResult:
    """One way of running gputui (diagnose or live) in one permission case."""

    mode: str
    exit_code: int | None = None
    seconds: float = 0.0
    stderr: str = ""
    source_state: str = ""
    source_detail: str = ""
    skipped_right: list[str] = field(default_factory=list)
    """Checks requiring the resource, skipped with the expected reason."""
    skipped_wrong: list[str] = field(default_factory=list)
    """Checks requiring the resource that were not skipped, or skipped without the expected reason."""
    ran: list[str] = field(default_factory=list)
    """Unaffected checks that ran (passed/failed)."""
    did_not_run: list[str] = field(default_factory=list)
    """Unaffected checks that were skipped or errored: a failure of the matrix."""
    errored: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def ok(self) -> bool:
        return (not self.error and not self.skipped_wrong and not self.did_not_run and not self.errored
                and (self.exit_code is None or self.exit_code in FINDINGS_EXIT_CODES))

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "ok": self.ok, "exit_code": self.exit_code, "seconds": round(self.seconds, 2),
                "source": {"state": self.source_state, "detail": self.source_detail},
                "skipped_with_reason": len(self.skipped_right), "skipped_wrong": self.skipped_wrong,
                "unaffected_ran": len(self.ran), "unaffected_did_not_run": self.did_not_run,
                "errored": self.errored, "error": self.error}


@dataclass
class PermissionCase:
    source: str
    denial: str
    """"forbidden" (403 on get/list/watch) or "absent" (CRD not installed: 404, not in discovery)."""
    expected_reason: str
    results: list[ModeResult] = field(default_factory=list)

    @property
    def resource(self) -> str:
        return RESOURCES[self.source].qualified

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "resource": self.resource, "denial": self.denial,
                "expected_reason": self.expected_reason, "ok": self.ok,
                "results": [r.to_json() for r in self.results]}


def cases() -> list[PermissionCase]:
    """Every Kubernetes source forbidden; every CRD source absent."""
    out = [PermissionCase(s, "forbidden", f"list {RESOURCES[s].qualified}") for s in KUBE_SOURCES]
    out += [PermissionCase(s, "absent", f"CRD {RESOURCES[s].qualified} {RESOURCES[s].version} not found")
            for s in KUBE_SOURCES if RESOURCES[s].crd]
    return out


def judge(result: ModeResult, case: PermissionCase, results: list[dict[str, Any]],
          sources: dict[str, dict[str, Any]]) -> None:
    """Sort each check into: skipped for the right reason / ran / wrongly treated."""
    requires = {spec.slug: spec.requires for spec in all_checks()}
    usable = {name for name, st in sources.items() if st.get("state") in ("ok", "stale")}
    st = sources.get(case.source) or {}
    result.source_state, result.source_detail = str(st.get("state", "")), str(st.get("detail", ""))
    for r in results:
        slug, status, reason = r["check"], r["status"], r.get("reason") or ""
        if status == "errored":
            result.errored.append(f"{slug}: {reason}")
        needs = requires.get(slug, ())
        if case.source in needs:
            if status == "skipped" and case.expected_reason in reason:
                result.skipped_right.append(slug)
            else:
                result.skipped_wrong.append(f"{slug}: {status} {reason!r}")
        elif set(needs) <= usable:
            if status in ("passed", "failed"):
                result.ran.append(slug)
            else:
                result.did_not_run.append(f"{slug}: {status} {reason!r}")


def deny(sim: SimCluster, case: PermissionCase, on: bool) -> None:
    res = RESOURCES[case.source]
    if case.denial == "forbidden":
        if on:
            sim.forbid(res.qualified)
        else:
            sim.allow(res.qualified)
    else:
        sim.set_absent(res.qualified, on)


def run_diagnose(kubeconfig: Path, case: PermissionCase, extra: tuple[str, ...] = ()) -> ModeResult:
    """`gputui diagnose -o json` in-process (the same code path as the console script)."""
    from gputui.cli.program import main

    result = ModeResult("diagnose")
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            result.exit_code = main(["diagnose", "-o", "json", "--kubeconfig", str(kubeconfig), *extra])
    except BaseException as exc:  # noqa: BLE001 - a crash is what the matrix looks for
        result.error = f"{type(exc).__name__}: {exc}"
    result.seconds = time.monotonic() - started
    result.stderr = err.getvalue()
    if result.error:
        return result
    try:
        body = orjson.loads(out.getvalue())
    except orjson.JSONDecodeError:
        result.error = f"stdout is not JSON (exit {result.exit_code}): {result.stderr.strip()[:300]}"
        return result
    judge(result, case, body["results"], body["sources"])
    return result


def run_live(kubeconfig: Path, case: PermissionCase, timeout: float = 20.0) -> ModeResult:
    """A LiveSession (what the TUI runs): wait until every informer answered, then run the checks."""
    from gputui.kube.api import Api, load
    from gputui.collect.live import LiveSession

    result = ModeResult("live")
    started = time.monotonic()
    session = None
    try:
        client, info = load(str(kubeconfig))
        session = LiveSession(Api(client), info)
        session.start()
        if not session.wait_synced(timeout):
            result.error = f"not synced within {timeout:g}s: {session.store.status()}"
            return result
        report = run_checks(session.snapshot())
        body = orjson.loads(orjson.dumps(report.to_json(), default=str))
        judge(result, case, body["results"], body["sources"])
    except Exception as exc:  # noqa: BLE001 - a crash is what the matrix looks for
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        if session is not None:
            session.stop()
        result.seconds = time.monotonic() - started
    return result


def permission_matrix(scenario: str = "incident", *, modes: tuple[str, ...] = ("diagnose", "live"),
                      only: tuple[str, ...] = ()) -> list[PermissionCase]:
    """Run every case against one simulator, denying one resource at a time."""
    todo = [c for c in cases() if not only or c.source in only]
    with SimCluster(scenario, shift_to_now=True) as sim, tempfile.TemporaryDirectory(prefix="gputui-perm-") as tmp:
        kubeconfig = sim.write_kubeconfig(Path(tmp) / "kubeconfig")
        for case in todo:
            deny(sim, case, True)
            try:
                if "diagnose" in modes:
                    case.results.append(run_diagnose(kubeconfig, case))
                if "live" in modes:
                    case.results.append(run_live(kubeconfig, case))
            finally:
                deny(sim, case, False)
    return todo
