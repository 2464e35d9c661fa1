"""Run the checks on a snapshot: deterministic order, skipped on missing sources, errors isolated."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from diagnostics.model import CheckResult, CheckStatus, Finding, Report, Severity
from diagnostics.registry import LOAD_ERRORS, CheckSpec, iter_checks
from diagnostics.relations import attribute
from diagnostics.snapshot import Snapshot


def run(snapshot: Snapshot, only: Iterable[str] = (), ignore: Iterable[str] = (), *,
        between: Callable[[], None] | None = None) -> Report:
    """Run the selected checks. Raises RegistryError for an unknown check name.

    `between` is called before each check: a caller that shares the process with an interactive
    screen uses it to step aside (the checks run under the GIL) while the screen has work to do.
    """
    specs = list(iter_checks(only, ignore))
    snapshot.index  # noqa: B018 - build the shared index once, outside any check's error handling
    ran: list[CheckResult] = []
    for spec in specs:
        if between is not None:
            between()
        ran.append(run_one(spec, snapshot))
    results = tuple(ran) + tuple(
        CheckResult(slug, "GT000", slug, CheckStatus.ERRORED, reason=f"check failed to load: {err}")
        for slug, err in sorted(LOAD_ERRORS.items()) if not list(only))
    try:
        results = attribute(snapshot, results)  # which pending pods each finding explains, same causes merged
    except Exception as exc:  # never a crash: the findings stand, and the run says what it could not work out
        results += (CheckResult("pending-pod-relation", "GT000", "Which finding explains each pending pod",
                                CheckStatus.ERRORED, reason=f"{type(exc).__name__}: {exc}"),)
    return Report(
        results=results,
        taken_at=snapshot.taken_at,
        target=snapshot.target,
        cluster=dict(snapshot.cluster),
        sources={name: st.to_json() for name, st in sorted(snapshot.sources.items())},
    )


def run_one(spec: CheckSpec, snapshot: Snapshot) -> CheckResult:
    missing = [snapshot.status(s) for s in spec.requires if not snapshot.status(s).state.usable]
    if missing:
        return CheckResult(spec.slug, spec.code, spec.title, CheckStatus.SKIPPED,
                           reason="; ".join(m.reason() for m in missing),
                           blind=any(not m.state.absent for m in missing))
    try:
        raw = list(spec.fn(snapshot))
    except Exception as exc:  # a broken check must never hide the others
        if getattr(exc, "skips_check", False):
            return CheckResult(spec.slug, spec.code, spec.title, CheckStatus.SKIPPED, reason=str(exc),
                               blind=bool(getattr(exc, "blind", False)))
        return CheckResult(spec.slug, spec.code, spec.title, CheckStatus.ERRORED,
                           reason=f"{type(exc).__name__}: {exc}")
    examined = 0
    findings: list[Finding] = []
    for f in raw:
        if isinstance(f, int):  # a check may yield the number of subjects it examined
            examined += f
            continue
        findings.append(_stamp(f, spec))
    findings.sort(key=lambda f: (-(f.severity or Severity.OK), str(f.subject)))
    status = CheckStatus.FAILED if findings else CheckStatus.PASSED
    return CheckResult(spec.slug, spec.code, spec.title, status, tuple(findings), examined=examined)


def _stamp(f: Finding, spec: CheckSpec) -> Finding:
    from dataclasses import replace

    return replace(f, check=spec.slug, code=spec.code, severity=f.severity or spec.severity)
