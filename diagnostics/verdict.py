"""The verdict of a diagnosis, and whether it may claim an all-clear: one function for every view.

"No problems found", "✓" and exit 0 are claims that every check the verdict needs ran and saw all it
needed. A check kept from looking (its source forbidden, unreachable, still loading or read only in
part, or the check errored) turns them into "could not see ...", with the causes it cannot rule out,
and an exit code of at least 4. A check skipped because a component is simply not there (no
Karpenter CRDs, no Prometheus configured, a metric nobody exports) does not: that is a fact, not
blindness. A pending GPU pod that no finding explains is never "no problems": it is "pending, cause
not determined", with what the schedulers last said and what was checked.

`judge` is used by `gputui diagnose` (text, JSON and exit code), bundle reopening and the TUI; its
wording is a contract (`VERDICTS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from diagnostics.model import CheckResult, CheckStatus, Finding, ObjectRef, Report, Severity
from diagnostics.records import Pod
from diagnostics.snapshot import Snapshot
from diagnostics.wording import counted, noun

EXPLAINED = "explained"
UNDETERMINED = "pending, cause not determined"
PROBLEMS = "problems found"
NO_PROBLEMS = "no problems found"
INCOMPLETE = "nothing found, not an all-clear"
GATED = "pending, scheduling gated"
"""A pending pod with spec.schedulingGates: no scheduler looks at it until the controller that set them removes them."""
VERDICTS = (EXPLAINED, UNDETERMINED, GATED, PROBLEMS, NO_PROBLEMS, INCOMPLETE, "pending", "running", "succeeded",
            "failed", "unknown")
"""Every value `Verdict.verdict` takes (a pod target not waiting for a scheduler gets its phase, lower-cased:
`pending` for one already bound - spec.nodeName set by the scheduler or by hand - whose kubelet has not started it)."""

@dataclass(frozen=True, slots=True)
class Verdict:
    """What a diagnosis may say, first, in one line."""

    verdict: str
    """One of VERDICTS."""
    headline: str
    """The line a paged engineer acts on: verdict, top root cause with its blast radius, what was not seen."""
    floor: Severity = Severity.OK
    """The exit code is at least this bad (WARNING: exit 4) whatever the findings say."""
    blind: tuple[str, ...] = ()
    """What could not be seen, one `reason - checks it kept from looking` line per reason."""
    root_cause: Finding | None = None
    messages: tuple[str, ...] = ()
    """A pending pod: what kube-scheduler and Karpenter last said about it."""
    checked: tuple[str, ...] = ()
    """A pending pod nothing explains: what was looked at."""

    @property
    def all_clear(self) -> bool:
        return self.verdict == NO_PROBLEMS

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"verdict": self.verdict, "headline": self.headline, "cannot_see": list(self.blind)}
        if self.root_cause is not None:
            f = self.root_cause
            out["root_cause"] = {"check": f.check, "code": f.code, "subject": str(f.subject)}
        if self.messages:
            out["messages"] = list(self.messages)
        if self.checked:
            out["checked"] = list(self.checked)
        return out


def kept_from_looking(r: CheckResult) -> bool:
    """The check could not judge for lack of access or data (not because a component is absent)."""
    if r.status is CheckStatus.ERRORED:
        return True
    return r.status is CheckStatus.SKIPPED and r.blind


def blind_spots(report: Report) -> tuple[str, ...]:
    """`events: forbidden (...) - cannot rule out: spot-capacity-shortage, node-remediation-loop`, per reason."""
    by_reason: dict[str, list[str]] = {}
    for r in report.results:
        if kept_from_looking(r):
            reason = r.reason if r.status is CheckStatus.SKIPPED else f"{r.check} errored ({r.reason})"
            by_reason.setdefault(reason, []).append(r.check)
    out = [f"{reason} - cannot rule out: {', '.join(checks)}" for reason, checks in by_reason.items()]
    out += [f"{reason} - passed without it: {', '.join(checks)}" for reason, checks in _unseen_optional(report).items()]
    return tuple(out)


def _unseen_optional(report: Report) -> dict[str, list[str]]:
    """Passed checks that ran without a source they use when present (`optional`), because it was
    forbidden or unreachable: e.g. PDBs forbidden, consolidation-blocked passed without its blockers.
    A pass judged without part of its evidence is no all-clear."""
    from diagnostics.registry import find
    from diagnostics.snapshot import SourceState

    blind_states = {SourceState.FORBIDDEN.value, SourceState.UNREACHABLE.value}
    out: dict[str, list[str]] = {}
    for r in report.results:
        spec = find(r.check) if r.status is CheckStatus.PASSED else None
        for name in spec.optional if spec is not None else ():
            st = report.sources.get(name) or {}
            if st.get("state") in blind_states:
                detail = f" ({st['detail']})" if st.get("detail") else ""
                out.setdefault(f"{name}: {st['state']}{detail}", []).append(r.check)
    return out


def _counts(findings: list[Finding]) -> str:
    by: dict[Severity, int] = {}
    for f in findings:
        sev = f.severity or Severity.OK
        by[sev] = by.get(sev, 0) + 1
    return ", ".join(f"{n} {noun(n, sev.label, sev.label if sev is Severity.INFO else '')}"
                     for sev, n in sorted(by.items(), reverse=True))


def describe(f: Finding) -> str:
    """`GT201 gpu-not-advertised node/x (8 GPUs stalled, 1 pod blocked)`: the finding's block follows."""
    radius = f.impact.text() if f.impact is not None else ""
    return f"{f.code} {f.check} {f.subject}" + (f" ({radius})" if radius else "")


def _unseen(blind: tuple[str, ...]) -> str:
    if not blind:
        return ""
    n = len(blind)
    return f"; could not see {counted(n, 'source')} (" + "; ".join(b.split(" - ")[0] for b in blind) + ")"


def judge(report: Report, snap: Snapshot | None = None, target: ObjectRef | None = None) -> Verdict:
    """The verdict of `report` (focused on `target` when given; `snap` is what it was computed from)."""
    from diagnostics.facts.pod_fit import held_by, scheduling_gates
    from diagnostics.relations import all_candidates, root_cause

    blind = blind_spots(report)
    floor = Severity.WARNING if blind else Severity.OK
    findings = report.findings
    pod = None
    if target is not None and target.kind == "Pod" and snap is not None:
        pod = snap.index.pod.get((target.namespace or "", target.name))
    if pod is not None and pod.pending:
        assert target is not None  # a pod is looked up only for a pod target
        rc = root_cause(report, target)
        gates = scheduling_gates(pod)
        held = f"; {held_by(gates)}" if gates is not None else ""
        if rc is not None:
            head = f"{target} is pending - root cause: {describe(rc)}{held}{_unseen(blind)}"
            return Verdict(EXPLAINED, head, floor, blind, rc,
                           _messages(snap, pod))
        if gates is not None:
            head = (f"{target} is pending, {held_by(gates)}: kube-scheduler and Karpenter do not look at it until "
                    f"the controller that set them removes them{_unseen(blind)}")
            return Verdict(GATED, head, Severity.WARNING, blind, None, _messages(snap, pod))
        cand = all_candidates(snap).get(pod.ref) if snap is not None else None
        checked = _checklist_lines(report)
        if cand is not None:
            c = cand[1]
            checked.insert(0, "candidates: " + ", ".join(
                f"{counted(len(names), kind, kinds)}"
                + (f" ({', '.join(sorted(names)[:5])})" if names else "")
                for kind, kinds, names in (("node", "nodes", c.nodes), ("NodePool", "NodePools", c.pools),
                                           ("EC2NodeClass", "EC2NodeClasses", c.classes),
                                           ("NodeClaim", "NodeClaims", c.claims))))
            if cand[0].ignored:
                # pkg/utils/pod IsProvisionable: why no NodePool is among the candidates.
                checked.insert(1, f"Karpenter does not launch for it: {cand[0].ignored}")
        return Verdict(UNDETERMINED, f"{target} is pending, cause not determined: no finding explains it"
                       f"{_unseen(blind)}", Severity.WARNING, blind, None, _messages(snap, pod), tuple(checked))
    if pod is not None:
        phase = (pod.phase or "unknown").lower()
        top = findings[0] if findings else None
        head = f"{target} is {phase}"
        if pod.phase == "Pending" and pod.node_name:
            # Bound (by the scheduler or spec.nodeName) but not started: not running is no all-clear.
            head += f" on node {pod.node_name}, not started ({_not_started(pod)})"
            floor = max(floor, Severity.WARNING)
        head += f" - {_counts(findings)}; top: {describe(top)}" if top is not None else (
            ", no problems found about it" if floor < Severity.WARNING
            else ", nothing found about it, not an all-clear")
        return Verdict(phase, head + _unseen(blind), floor, blind, top)
    what = str(target) if target is not None else "cluster"
    if findings:
        # A node (claim, pool) target also shows its chain's findings (its NodePool's spot shortage, its
        # pool's practices); the verdict names the target's own worst finding, or says it has none.
        own = [f for f in findings if target is not None and f.subject == target]
        top = own[0] if own else findings[0]
        label = "top root cause" if target is None or own else f"none about the {target.kind.lower()} itself; top"
        return Verdict(PROBLEMS, f"{what}: {_counts(findings)} - {label}: {describe(top)}{_unseen(blind)}",
                       floor, blind, top)
    if blind:
        return Verdict(INCOMPLETE, f"{what}: nothing found, but not an all-clear{_unseen(blind)}", floor, blind)
    return Verdict(NO_PROBLEMS, f"{what}: no problems found", floor, blind)


def _not_started(pod: Pod) -> str:
    """`trainer: ImagePullBackOff` per waiting container, as kubectl's STATUS column would say it."""
    waiting = [f"{c.name}: {c.reason or c.state}" for c in pod.containers if c.state != "running" and not c.ready]
    return ", ".join(waiting[:3]) or "no container status yet"


def _checklist_lines(report: Report) -> list[str]:
    """What was checked: what found nothing, what failed on other objects only, what could not look (the
    checklist below lists what was not applicable)."""
    passed = [r.code for r in report.results if r.status is CheckStatus.PASSED]
    elsewhere = [r.code for r in report.results if r.status is CheckStatus.FAILED and not r.findings]
    other = [f"{r.code} ({r.reason})" for r in report.results if kept_from_looking(r)]
    out = []
    if passed:
        out.append(f"{len(passed)} checks found nothing about it: {' '.join(passed)}")
    if elsewhere:
        out.append(f"{len(elsewhere)} found problems on other objects only: {' '.join(elsewhere)}")
    if other:
        out.append(f"{len(other)} could not look: " + "; ".join(other))
    return out


def _messages(snap: Snapshot | None, pod: Pod) -> tuple[str, ...]:
    """What kube-scheduler and Karpenter last said about the pod (and its PodScheduled condition)."""
    if snap is None:
        return ()
    from diagnostics.facts.pod_events import scheduling

    s = scheduling(snap, pod)
    out = []
    for who, e in (("kube-scheduler", s.scheduler), ("Karpenter", s.karpenter), ("Karpenter", s.nominated)):
        if e is not None:
            age = snap.age(e.last_seen or e.first_seen)
            when = f" ({int(age // 60)}m ago)" if age is not None else ""
            out.append(f"{who} {e.reason}{when}: {e.message[:300]}")
    cond = pod.condition("PodScheduled")
    if cond is not None and cond.message and not out:
        out.append(f"PodScheduled={cond.status} {cond.reason}: {cond.message[:300]}")
    if not snap.status("events").state.usable:
        out.append(f"pod events not read: {snap.status('events').reason()}")
    return tuple(out)
