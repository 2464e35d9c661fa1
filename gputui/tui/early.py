"""What the TUI may judge while only the pending pods are read (before the full pod list arrives).

The live session reads pending pods first (`LiveSession(pending_first=True)`): a few per cent of all
pods, on screen seconds earlier. Checks about pending pods and what provisions them judge from
those alone (they look at a node's free room only where all its pods were read:
`Snapshot.all_pods_read_on`, false for every node then), and each says so in its own
`@check(pending_pods_suffice=True)`. A check that reads the pods running on nodes (blast radius,
disruption, idle GPUs) would see empty nodes: it waits, as a skipped result whose reason says so,
which counts as "kept from looking" everywhere an all-clear is decided.
"""

from __future__ import annotations

from dataclasses import replace

from diagnostics.model import CheckResult, CheckStatus, Report
from diagnostics.registry import all_checks
from diagnostics.snapshot import Snapshot
from gputui.collect.store import PENDING_ONLY

WAITING_REASON = "pods: not loaded yet (only the pending pods so far; this check needs every pod)"
"""A waiting check's skip reason ("not loaded yet": kept from looking, never part of an all-clear)."""


def pending_only(snap: Snapshot) -> bool:
    """Only the pending pods are read: the full pod list is still loading."""
    st = snap.sources.get("pods")
    return st is not None and st.partial and st.detail == PENDING_ONLY


def waiting_checks(snap: Snapshot) -> frozenset[str]:
    """Slugs of the checks that must wait for the full pod list (none once it is in)."""
    if not pending_only(snap):
        return frozenset()
    return frozenset(s.slug for s in all_checks()
                     if ("pods" in s.requires or "pods" in s.optional) and not s.pending_pods_suffice)


def with_waiting(report: Report, waiting: frozenset[str]) -> Report:
    """`report` (run without the `waiting` checks) with each of them as skipped, in the checklist's order."""
    if not waiting:
        return report
    ran = {r.check: r for r in report.results}
    results: list[CheckResult] = []
    for spec in all_checks():
        if spec.slug in waiting:
            results.append(CheckResult(spec.slug, spec.code, spec.title, CheckStatus.SKIPPED, reason=WAITING_REASON,
                                       blind=True))
        elif spec.slug in ran:
            results.append(ran.pop(spec.slug))
    results.extend(ran.values())  # load errors, relation errors: after the checks, as the engine puts them
    return replace(report, results=tuple(results))
