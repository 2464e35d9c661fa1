"""Pure: what the TUI may claim, given what its sources could see.

"● live" in green, "✓ no problems found" and a green header are claims that every check ran and saw
what it needed. An unreachable API server, a forbidden list or a stale watch turns them into a red
or yellow line that says what could not be seen and why (the CLI's exit code 4 says the same).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from rich.text import Text

from diagnostics.model import CheckStatus, Report
from diagnostics.snapshot import KUBE_SOURCES, Snapshot, SourceState, SourceStatus
from gputui.collect.store import PENDING_ONLY
from gputui.tui.early import WAITING_REASON

OK, WARN, BAD = "ok", "warn", "bad"
LEVEL_STYLE = {OK: "bold green", WARN: "bold yellow", BAD: "bold red"}
CORE = ("nodes", "pods")
"""Without these nothing about GPUs can be said: unreachable or forbidden, the view is blind."""
BLIND_STATES = (SourceState.FORBIDDEN, SourceState.UNREACHABLE, SourceState.LOADING)
"""A source in these states kept checks from looking (absent and not configured are facts, not blindness)."""


@dataclass(frozen=True, slots=True)
class Sight:
    """How much of the cluster the screen can see, as a level, a short mark and reasons."""

    level: str
    mark: str
    """`● live`, `● stale`, `● unreachable`, `● limited`, `● connecting`."""
    reasons: tuple[str, ...] = ()
    """One sentence per problem, for the banner under the header."""


def _clock(dt: datetime | None) -> str:
    return dt.strftime("%H:%M:%S") if dt else "never"


def _names(statuses: Iterable[SourceStatus]) -> str:
    return ", ".join(s.name for s in statuses)


def sight(snap: Snapshot | None, *, namespace: str | None = None) -> Sight:
    """What the header's dot and banner say about the sources behind `snap`."""
    if snap is None:
        return Sight(WARN, "● connecting", ("Connecting to the API server…",))
    kube = [snap.sources[s] for s in KUBE_SOURCES if s in snap.sources]
    other = [s for s in snap.sources.values() if s.name not in KUBE_SOURCES]
    reasons: list[str] = []
    level = OK
    unreachable = [s for s in kube if s.state is SourceState.UNREACHABLE]
    stale = [s for s in kube if s.state is SourceState.STALE]
    forbidden = [s for s in kube if s.state is SourceState.FORBIDDEN]
    loading = [s for s in kube if s.state is SourceState.LOADING]
    core_down = [s for s in unreachable if s.name in CORE]
    if core_down:
        level = BAD
        detail = core_down[0].detail
        reasons.append(f"API server unreachable{f' ({detail})' if detail else ''}: nothing can be seen, "
                       "no check could look.")
    elif unreachable:
        level = BAD
        reasons.append(f"Unreachable: {_names(unreachable)} ({unreachable[0].detail or 'no answer'}).")
    if stale:
        level = max(level, WARN, key=_rank)
        since = min((s.updated_at for s in stale if s.updated_at), default=None)
        reasons.append(f"Stale since {_clock(since)}: {_names(stale)} "
                       f"({stale[0].detail or 'watch lost'}); showing the last data read.")
    if forbidden:
        core = [s for s in forbidden if s.name in CORE]
        level = max(level, BAD if core else WARN, key=_rank)
        perms = "; ".join(s.detail or s.name for s in forbidden)
        who = f" in namespace {namespace}" if namespace else ""
        reasons.append(f"Cannot see{who}: {_names(forbidden)} (forbidden: {perms}); "
                       "checks that need them are skipped.")
    first = [s for s in kube if s.state.usable and s.partial and s.detail == PENDING_ONLY]
    partial = [s for s in kube if s.state.usable and s.partial and s not in first]
    if first:
        level = max(level, WARN, key=_rank)
        more = f"; still loading: {_names(loading)}" if loading else ""
        reasons.append("Loading the full pod list: the pending pods are shown, GPUs in use per node read `?` "
                       f"and checks that need every pod wait for it{more}.")
    if partial:
        level = max(level, WARN, key=_rank)
        scopes = sorted({s.detail for s in partial if s.detail}) or ["one namespace only"]
        reasons.append(f"Seen in {'; '.join(scopes)}: {_names(partial)}. Pods and events in other namespaces "
                       "are out of sight: GPUs they hold and what they say are missing from the checks.")
    if loading and not reasons and not first:
        level = max(level, WARN, key=_rank)
        reasons.append(f"Still loading: {_names(loading)}.")
    other_stale = False
    for s in other:
        if s.state in (SourceState.UNREACHABLE, SourceState.STALE, SourceState.FORBIDDEN):
            other_stale = True
            level = max(level, WARN, key=_rank)
            when = f" since {_clock(s.updated_at)}" if s.state is SourceState.STALE else ""
            reasons.append(f"{s.name} {s.state.value}{when}" + (f" ({s.detail})" if s.detail else "")
                           + ": the checks that need it are skipped or read old data.")
    if core_down or (unreachable and not kube_usable(kube)):
        mark = "● unreachable"
    elif stale or other_stale:
        mark = "● stale"
    elif forbidden or unreachable or partial:
        mark = "● limited"
    elif loading or first:
        mark = "● loading"
    else:
        mark = "● live"
    return Sight(level, mark, tuple(reasons))


def kube_usable(kube: Iterable[SourceStatus]) -> bool:
    return any(s.state.usable for s in kube)


def _rank(level: str) -> int:
    return (OK, WARN, BAD).index(level)


def blind_checks(report: Report) -> list[str]:
    """Checks kept from looking (a source forbidden, unreachable, not loaded yet or read in part, a failed query,
    or the check errored), as `gputui diagnose` judges them (`diagnostics.verdict.kept_from_looking`)."""
    from diagnostics.verdict import kept_from_looking

    return [r.check for r in report.results if kept_from_looking(r)]


def findings_summary(report: Report | None, snap: Snapshot | None = None) -> Text:
    """`3 findings: 2 error · 1 warning`; `✓ no problems found` only when no check was kept from looking
    and no source is stale; otherwise what could not be seen, in yellow or red."""
    from gputui.tui.cells import finding_counts

    if report is None:
        return Text("running diagnostics…", style="dim")
    waiting = [r.check for r in report.results if r.status is CheckStatus.SKIPPED and r.reason == WAITING_REASON]
    blind = [c for c in blind_checks(report) if c not in waiting]
    seen = sight(snap) if snap is not None else Sight(OK, "● live")
    wait = f"{len(waiting)} checks wait for the full pod list" if waiting else ""
    if report.findings:
        t = finding_counts(report)
        if blind:
            t.append(f" · {len(blind)} could not look", style="bold yellow")
        if wait:
            t.append(f" · {wait}", style="bold yellow")
        return t
    if waiting:
        return Text(f"? nothing found so far: {wait} (not an all-clear)", style="bold yellow")
    skipped = sum(1 for r in report.results if r.status is CheckStatus.SKIPPED)
    ran = len(report.results) - skipped
    if blind and ran == 0:
        return Text(f"? nothing checked: all {len(report.results)} checks were kept from looking "
                    "(see the banner above)", style="bold red")
    if blind:
        return Text(f"? no problems in what could be seen: {ran} checks ran, {len(blind)} could not look "
                    "(not an all-clear)", style="bold yellow")
    if seen.level != OK:
        return Text(f"? no problems found by {ran} checks, on data that is not current "
                    "(not an all-clear)", style="bold yellow")
    t = Text(f"✓ no problems found by {ran} checks", style="green")
    if skipped:
        t.append(f" · {skipped} not applicable here (sources not installed or configured)", style="dim")
    return t
