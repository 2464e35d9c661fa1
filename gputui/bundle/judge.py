"""What a bundle says: the Snapshot rebuilt from the objects it holds (plus nvidia-smi), and its report.

The report is computed from the very objects written, through the same ingest a reader uses, so the
`report.json` in a bundle is what `gputui diagnose --bundle` prints for it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from diagnostics import run as run_checks
from diagnostics.model import ObjectRef, Report
from diagnostics.snapshot import Snapshot, SourceState, SourceStatus
from gputui.bundle.gather import Gathered
from gputui.bundle.scope import Selection
from gputui.kube.api import Api


def statuses(snap: Snapshot, got: Gathered) -> dict[str, SourceStatus]:
    """Source statuses for what the bundle holds: collect's, with the bundle's own completeness."""
    out: dict[str, SourceStatus] = {}
    for name, st in snap.sources.items():
        st = got.statuses.get(name, st)
        if name in ("pods", "events") and st.state.usable:
            # Whatever the target, the bundle holds every GPU-related pod and its events (see gather.py).
            st = SourceStatus(st.name, st.state, st.detail, st.updated_at, partial=name in got.partial)
        out[name] = st
    return out


def rebuild(snap: Snapshot, got: Gathered, sources: dict[str, SourceStatus]) -> Snapshot:
    from gputui.collect.one_shot import snapshot_from_objects

    rebuilt = snapshot_from_objects(got.objects, taken_at=snap.taken_at, statuses=sources,
                                    cluster=dict(snap.cluster), target=snap.target)
    merged = dict(rebuilt.sources)
    merged.update({k: v for k, v in sources.items() if k not in merged or not v.state.usable})
    # The log tails and ResourceClaims the one-shot collection read are evidence too (GT201's NVML cause, GT407).
    return replace(rebuilt, sources=merged, metrics=snap.metrics, aws=snap.aws, gpu_reports=dict(snap.gpu_reports),
                   pod_logs=dict(snap.pod_logs), resource_claims=dict(snap.resource_claims))


def report_for(snap: Snapshot, target: ObjectRef | None) -> Report:
    """The checks over the bundle's snapshot, focused on the target as `gputui diagnose TARGET` does, with
    the verdict attached either way."""
    return judged(run_checks(snap), snap, target)


def judged(report: Report, snap: Snapshot, target: ObjectRef | None) -> Report:
    """`report` focused on the target (its verdict with it), or the whole cluster's with its verdict: the one
    step `gputui diagnose` and a bundle's report.json share, so both print the same verdict."""
    from diagnostics.relations import focus
    from diagnostics.verdict import judge

    return focus(report, snap, target) if target is not None else replace(report, verdict=judge(report))


def with_nvidia_smi(api: Api, snap: Snapshot, sel: Selection, *, max_nodes: int, namespace: str | None,
                    context_namespace: str | None, timeout: int, on_status: Any) -> tuple[Snapshot, Any]:
    """Run the debug pod on the affected GPU nodes (those with findings first); add what it saw."""
    from gputui.bundle.smi import run_on_nodes

    flagged = {f.subject.name for f in run_checks(snap).findings if f.subject.kind == "Node"}
    gpu = set(sel.gpu_nodes)
    nodes = sorted((n for n in sel.affected_nodes if n in gpu), key=lambda n: (n not in flagged, n))
    runs = run_on_nodes(api, nodes, max_nodes=max_nodes, namespace=namespace, context_namespace=context_namespace,
                        timeout=timeout, on_status=on_status)
    reports = dict(snap.gpu_reports)
    for node, result in runs.results.items():
        if result.report is not None:
            reports[node] = result.as_json()
    sources = dict(snap.sources)
    if reports:
        sources["nvidia-smi"] = SourceStatus("nvidia-smi", SourceState.OK, updated_at=snap.taken_at)
    elif runs.results or runs.errors:
        sources["nvidia-smi"] = SourceStatus("nvidia-smi", SourceState.UNREACHABLE,
                                             "the debug pod produced no nvidia-smi output")
    return replace(snap, gpu_reports=reports, sources=sources), runs
