"""GPU jobs on nodes Karpenter is removing or will remove: drift, expiry, forced termination, spot interruption."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from diagnostics.facts import provider
from diagnostics.facts.aws_facts import region_of_zone
from diagnostics.facts.disruption import (
    DO_NOT_DISRUPT,
    blocking_pdb,
    do_not_disrupt_state,
    nodes_with_all_pods,
    tolerates_disrupted,
    zero_budgets,
)
from diagnostics.model import Evidence, Finding, Remediation, Severity
from diagnostics.records import Condition, Event, Node, NodeClaim, NodePool, Pod
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot
from diagnostics.timeutil import human_age, parse_go_duration, parse_timestamp

EXPIRY_HORIZON_SECONDS = 24 * 3600.0
"""A node that expires within this time is reported with the GPU jobs it will take down."""
EVENT_MAX_AGE = timedelta(hours=1)
"""Disruption events older than this describe a drain that has finished or been abandoned."""
INTERRUPTION_MAX_AGE = timedelta(minutes=15)
"""A spot notice gives 2 minutes; one older than this is about a node that is gone or was spared."""
TERMINATION_TIMESTAMP = "karpenter.sh/nodeclaim-termination-timestamp"
"""Set by Karpenter on a deleting NodeClaim with terminationGracePeriod: when its pods are force-deleted."""
_DISRUPTING_TAINTS = ("karpenter.sh/disrupted", "karpenter.sh/disruption")  # v1, v1beta1
_STATELESS_OWNERS = ("ReplicaSet", "DaemonSet")
# Karpenter event reasons and texts (core pkg/controllers/disruption/events/events.go,
# pkg/controllers/node/termination/terminator/events/events.go; aws pkg/controllers/interruption/events/events.go).
_TWO_MINUTES = ("SpotInterrupted", "CapacityReservationInstanceInterrupted")
"""A 2-minute warning: EC2 reclaims the instance then, whatever the drain has done."""
_GOING = {"InstanceStopping": "stopping", "InstanceTerminating": "terminating"}
"""EC2 state-change notices: the instance is already on its way down."""
_INTERRUPTION = (*_TWO_MINUTES, *_GOING, "InstanceUnhealthy", "TerminatingOnInterruption")
"""InstanceUnhealthy (a scheduled change or a failed status check) and TerminatingOnInterruption alone mean the
NodeClaim was deleted and is drained like any deletion: PDBs and do-not-disrupt hold pods (aws interruption/utils.go
actionForMessage: CordonAndDrain), unless a termination timestamp forces it (ForcefulTermination)."""
_INSTANCE_ID = re.compile(r"^aws:///([^/]*)/(i-[0-9a-f]+)$")
_DISRUPTING = re.compile(r"(?:Disrupting (?:Node|NodeClaim)|Launching NodeClaim): (\w+)")
_DELETED_BY = re.compile(r"All pods will be deleted by (\S+)")
_AMI_VERSION = re.compile(r"-(v\d{8})$")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
"""Where events without a timestamp sort (first: the oldest)."""


@check(code="GT503", slug="gpu-workload-disruption", title="GPU jobs are safe from Karpenter disruption",
       severity=Severity.WARNING, requires=("nodes", "pods", "nodeclaims"),
       optional=("nodepools", "events", "ec2nodeclasses"))
def gpu_workload_disruption(snap: Snapshot) -> Iterator[Finding | int]:
    """A running GPU job is on a node Karpenter is draining or will drain: drift, expiry, terminationGracePeriod, spot.

    Why it matters:
    A GPU job that is evicted or force-deleted loses everything since its last checkpoint: a 31-hour
    training run on 8 GPUs is 248 GPU-hours. Karpenter says so in its own words, which this check
    reads: the NodeClaim condition `Drifted=True` (reason `AMIDrift`, `NodePoolDrifted`, ...) and
    `DisruptionReason`, the node taint `karpenter.sh/disrupted:NoSchedule`, the events
    `DisruptionTerminating` "Disrupting Node: Drifted" / "Disrupting NodeClaim: Drifted" (the
    replacement gets `DisruptionLaunching` "Launching NodeClaim: Drifted"),
    `TerminationGracePeriodExpiring` "All pods will be deleted by <time>" (at that time each pod gets
    `Disrupted` "... This bypasses the PDB of the pod and the do-not-disrupt annotation."), the
    annotation `karpenter.sh/nodeclaim-termination-timestamp`, and the interruption events
    `SpotInterrupted` "Spot interruption warning was triggered" and
    `CapacityReservationInstanceInterrupted` (EC2 reclaims the instance 2 minutes later),
    `InstanceStopping` / `InstanceTerminating` (it is going now), `InstanceUnhealthy` "An unhealthy
    warning was triggered for the instance" (scheduled maintenance or a failed status check: the
    NodeClaim is deleted and drained like any deletion, so PDBs and do-not-disrupt hold pods) and
    `TerminatingOnInterruption` "Interruption triggered termination for the Node". Expiry has no
    condition and no event in Karpenter v1: the NodeClaim is deleted once `spec.expireAfter` has
    passed since its creation, whatever budgets and `karpenter.sh/do-not-disrupt` say; the drain then
    waits for do-not-disrupt pods and PDBs, and with `terminationGracePeriod` its pods are deleted at
    expiry plus that period. Drift honours `karpenter.sh/do-not-disrupt` unless the NodeClaim has a
    `terminationGracePeriod`; a NodePool budget with `nodes: "0"` for `Drifted` holds it off while
    active, as does the node's own `karpenter.sh/do-not-disrupt: "true"`. A drain neither evicts nor
    waits for a job that tolerates `karpenter.sh/disrupted:NoSchedule` (a blanket `operator: Exists`):
    it dies with the instance. Stateless replicas (Deployments) are not reported: they are rescheduled.

    Fix:
    Drift: annotate the job `karpenter.sh/do-not-disrupt: "true"`, add a budget
    `{nodes: "0", reasons: [Drifted]}` with a schedule that leaves a maintenance window, or pin the
    EC2NodeClass AMI (`al2023@v20260805` rather than `al2023@latest`). Expiry: `expireAfter: Never` (or
    longer than the longest job) on training NodePools, and checkpoint. Spot interruption: nothing stops
    it (2-minute notice); run training on on-demand or reserved capacity and checkpoint. Scheduled
    maintenance: annotate jobs that must finish and check the event's date.
    """
    idx = snap.index
    now = snap.taken_at
    complete = nodes_with_all_pods(snap)  # a target's one-shot read has all the pods of its own node(s) only
    for node, claim, facts in _all_facts(snap):
        if complete is not None and node.name not in complete:
            continue
        yield 1
        threat = _threat(snap, node, claim, facts, now)
        if threat is None:
            continue
        jobs = [p for p in idx.pods_by_node.get(node.name, ()) if _is_job(p)]
        if not jobs:
            continue
        finding = _finding(snap, node, claim, facts, threat, jobs)
        if finding is not None:
            yield finding


@dataclass(frozen=True, slots=True)
class _Facts:
    """What Karpenter's objects say about a GPU node's disruption, whatever the time (carried)."""

    pool: NodePool | None
    drifted: Condition | None
    disruption_reason: Condition | None
    tainted: str
    """The disruption taint as Karpenter prints it, '' when absent."""
    deleting: datetime | None
    expire_after: str
    """spec.expireAfter of the NodeClaim (else the pool's template): 'Never' or a Go duration."""
    expire_at: datetime | None
    tgp: str
    """spec.terminationGracePeriod of the NodeClaim (the pool's when no NodeClaim is known), '' when unset."""
    deadline: datetime | None
    """When Karpenter force-deletes the pods (annotation, event, or deletion + terminationGracePeriod)."""
    events: tuple[Event, ...]
    """Disruption, termination and interruption events on the node and its NodeClaim, oldest first."""


@provider.facts(reads=("nodes", "nodeclaims", "nodepools", "events"))
def _all_facts(snap: Snapshot) -> list[tuple[Node, NodeClaim | None, _Facts]]:
    idx = snap.index
    out = []
    for node, claim in idx.gpu_nodes:
        pool = idx.nodepool.get(node.nodepool or (claim.nodepool if claim else ""))
        if claim is None and pool is None:
            continue  # not a Karpenter node
        out.append((node, claim, _facts(snap, node, claim, pool)))
    return out


def _facts(snap: Snapshot, node: Node, claim: NodeClaim | None, pool: NodePool | None) -> _Facts:
    expire_after = (claim.expire_after if claim is not None else "") or (pool.expire_after if pool else "") or "720h"
    # Karpenter reads the NodeClaim's own (core NewCandidate, nodeclaim lifecycle): a pool's later one is not it.
    tgp = (claim.termination_grace_period if claim is not None
           else pool.termination_grace_period if pool is not None else "")
    created = claim.meta.created if claim is not None else node.meta.created
    seconds = parse_go_duration(expire_after)
    expire_at = created + timedelta(seconds=seconds) if created is not None and seconds is not None else None
    idx = snap.index
    events = list(idx.events("Node", node.name))
    if claim is not None:
        events += idx.events("NodeClaim", claim.name)
    wanted = tuple(sorted((e for e in events if e.reason in _INTERRUPTION or e.reason in (
        "DisruptionTerminating", "DisruptionLaunching", "TerminationGracePeriodExpiring")),
        key=lambda e: e.last_seen or e.first_seen or _EPOCH))
    deleting = node.meta.deleting or (claim.meta.deleting if claim is not None else None)
    deadline = parse_timestamp((claim.meta.annotations if claim else {}).get(TERMINATION_TIMESTAMP)
                          or node.meta.annotations.get(TERMINATION_TIMESTAMP))
    for e in reversed(wanted):
        if deadline is None and (m := _DELETED_BY.search(e.message)):
            deadline = parse_timestamp(m.group(1))
    tgp_seconds = parse_go_duration(tgp)
    if deadline is None and deleting is not None and tgp_seconds is not None:
        deadline = deleting + timedelta(seconds=tgp_seconds)
    taint = next((t for t in node.taints if t.key in _DISRUPTING_TAINTS), None)
    drifted = claim.condition("Drifted") if claim else None
    reason = claim.condition("DisruptionReason") if claim else None
    return _Facts(pool, drifted if drifted is not None and drifted.status == "True" else None,
                  reason if reason is not None and reason.status == "True" else None,
                  str(taint) if taint else "", deleting, expire_after, expire_at, tgp, deadline, wanted)


@dataclass(frozen=True, slots=True)
class _Threat:
    """Why and when the node's GPU jobs go."""

    cause: str
    """interruption | health | drift | expiry | consolidation | deletion."""
    now: bool
    """The drain is under way (or certain): the jobs are being lost, not at risk."""
    forced: bool
    """Pods are deleted whatever do-not-disrupt says (interruption, terminationGracePeriod)."""
    when: datetime | None
    """When the jobs go, if known (forced deletion deadline, expiry, interruption + 2 minutes)."""
    evidence: tuple[Evidence, ...]
    what: str
    """Karpenter's action in words, for the title."""


def _recent(snap: Snapshot, e: Event, age: timedelta) -> bool:
    when = e.last_seen or e.first_seen
    return when is not None and snap.taken_at - when <= age


def _event_ev(snap: Snapshot, e: Event) -> Evidence:
    return Evidence.event(e.involved, e.reason, e.message[:300], e.count, snap.age(e.last_seen or e.first_seen),
                          type_=e.type)


def _threat(snap: Snapshot, node: Node, claim: NodeClaim | None, f: _Facts, now: datetime) -> _Threat | None:
    """The most urgent way Karpenter takes this node away, or None while nothing threatens it."""
    if not (f.events or f.drifted or f.disruption_reason or f.tainted or f.deleting or f.deadline) and (
            f.expire_at is None or (f.expire_at - now).total_seconds() > EXPIRY_HORIZON_SECONDS):
        return None  # most nodes on most runs: nothing said, nothing due
    claim_ref = claim.ref if claim is not None else node.ref
    # 1. Spot / reservation interruption (2 minutes) or an instance already stopping: nothing stops it.
    notice = [e for e in f.events if e.reason in _INTERRUPTION and _recent(snap, e, INTERRUPTION_MAX_AGE)]
    reclaim = [e for e in notice if e.reason in _TWO_MINUTES or e.reason in _GOING]
    if reclaim:
        first = reclaim[0]
        when = first.last_seen or first.first_seen
        if first.reason in _GOING:
            return _Threat("interruption", True, True, when, tuple(_event_ev(snap, e) for e in notice[-3:]),
                           f"{first.reason}: the EC2 instance is {_GOING[first.reason]}")
        return _Threat("interruption", True, True, when + timedelta(minutes=2) if when else None,
                       tuple(_event_ev(snap, e) for e in notice[-3:]),
                       f"{first.reason}: EC2 reclaims the instance 2 minutes after the notice")
    said = [e for e in f.events if e.reason in ("DisruptionTerminating", "DisruptionLaunching")
            and _recent(snap, e, EVENT_MAX_AGE)]
    reason = (f.disruption_reason.reason if f.disruption_reason else "") or next(
        (m.group(1) for e in reversed(said) if (m := _DISRUPTING.search(e.message))), "")
    expired = f.expire_at is not None and f.expire_at <= now
    draining = bool(f.deleting or f.tainted or said or f.deadline)
    ev: list[Evidence] = []
    if f.drifted is not None:
        ev.append(Evidence.condition(claim_ref, f.drifted.as_dict(), snap.age(f.drifted.last_transition)))
    if f.disruption_reason is not None:
        ev.append(Evidence.condition(claim_ref, f.disruption_reason.as_dict(),
                                     snap.age(f.disruption_reason.last_transition)))
    if f.tainted:
        ev.append(Evidence.field(node.ref, "spec.taints", f.tainted, note="Karpenter's disruption taint: draining"))
    if f.deleting is not None:
        ev.append(Evidence.field(claim_ref if claim is not None and claim.meta.deleting else node.ref,
                                 "metadata.deletionTimestamp", _stamp(f.deleting),
                                 note=f"deletion requested {human_age(snap.age(f.deleting))} ago"))
    ev += [_event_ev(snap, e) for e in said[-2:]]
    ev += [_event_ev(snap, e) for e in f.events if e.reason == "TerminationGracePeriodExpiring"][-1:]
    if f.expire_at is not None and (expired or (f.expire_at - now).total_seconds() <= EXPIRY_HORIZON_SECONDS):
        ev.append(Evidence.field(claim_ref, "spec.expireAfter", f.expire_after,
                                 note=f"created {_stamp(f.expire_at - _delta(f.expire_after))}: expires "
                                      f"{_stamp(f.expire_at)} ({_relative(snap, f.expire_at)})"))
    if f.tgp:
        ev.append(Evidence.field(claim_ref, "spec.terminationGracePeriod", f.tgp,
                                 note="pods are force-deleted this long after deletion starts, do-not-disrupt "
                                      "and PDBs notwithstanding"))
    if f.deadline is not None:
        ev.append(Evidence.field(claim_ref, f"metadata.annotations[{TERMINATION_TIMESTAMP}]", _stamp(f.deadline),
                                 note=f"every pod is deleted by then ({_relative(snap, f.deadline)})"))

    if notice:  # a health event or an interruption message of a kind not seen: the NodeClaim is deleted, drained
        ev[:0] = [_event_ev(snap, e) for e in notice[-2:]]
        what = ("Karpenter is draining its node after an AWS health event (scheduled maintenance or a failed status "
                "check)" if any(e.reason == "InstanceUnhealthy" for e in notice)
                else "Karpenter is draining its node on an interruption message")
        return _Threat("health", True, f.deadline is not None, f.deadline, tuple(ev), what)
    if draining:
        cause = ({"Drifted": "drift", "Underutilized": "consolidation", "Empty": "consolidation"}.get(reason)
                 or ("expiry" if expired else "drift" if f.drifted else "deletion"))
        what = {"drift": f"Karpenter is draining its node for drift{_why_drift(f)}",
                "consolidation": f"Karpenter is consolidating its node ({reason})",
                "expiry": f"its node's NodeClaim expired (expireAfter {f.expire_after}) and is being deleted",
                "deletion": "its node is being deleted"}[cause]
        return _Threat(cause, True, f.deadline is not None, f.deadline, tuple(ev), what)
    # Drift waits while a budget allows no Drifted disruption now (DisruptionBlocked on the pool) or the node is
    # annotated do-not-disrupt "true" (no candidate for any method, core ValidateNodeDisruptable); expiry does not.
    if (f.drifted is not None and node.meta.annotations.get(DO_NOT_DISRUPT) != "true"
            and not (f.pool is not None and zero_budgets(f.pool, "Drifted", now))):
        return _Threat("drift", False, bool(f.tgp), None, tuple(ev),
                       f"its node has drifted{_why_drift(f)}: Karpenter replaces it as soon as a budget allows")
    if f.expire_at is not None and (f.expire_at - now).total_seconds() <= EXPIRY_HORIZON_SECONDS:
        tgp = parse_go_duration(f.tgp)
        when = f.expire_at + timedelta(seconds=tgp) if tgp is not None else f.expire_at
        return _Threat("expiry", expired, bool(f.tgp), when, tuple(ev),
                       f"its node's NodeClaim {'expired' if expired else 'expires'} {_relative(snap, f.expire_at)} "
                       f"(expireAfter {f.expire_after}): Karpenter deletes it whatever budgets and do-not-disrupt say")
    return None


def _why_drift(f: _Facts) -> str:
    return f" ({f.drifted.reason})" if f.drifted is not None and f.drifted.reason else ""


def _delta(duration: str) -> timedelta:
    return timedelta(seconds=parse_go_duration(duration) or 0.0)


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _relative(snap: Snapshot, when: datetime) -> str:
    delta = (when - snap.taken_at).total_seconds()
    return f"in {human_age(delta)}" if delta >= 0 else f"{human_age(-delta)} ago"


def _is_job(p: Pod) -> bool:
    """A GPU pod whose work is lost when it is killed: not a DaemonSet pod or a stateless Deployment replica."""
    if p.terminal or not p.wants_accelerator:
        return False
    return not any(o.get("kind") in _STATELESS_OWNERS for o in p.meta.owners)


def _finding(snap: Snapshot, node: Node, claim: NodeClaim | None, f: _Facts, t: _Threat,
             jobs: list[Pod]) -> Finding | None:
    now = snap.taken_at
    lost: list[tuple[Pod, float, str]] = []  # (pod, seconds of running time lost, how)
    for p in jobs:
        protected, _why = do_not_disrupt_state(p, now)
        held = protected or blocking_pdb(snap, p) is not None
        # A drain waits for a held pod unless it tolerates the disruption taint; a drift not yet started never
        # picks the node while do-not-disrupt holds (candidacy asks every pod, tolerations aside).
        tolerant = tolerates_disrupted(p)
        if not t.forced and held and (not tolerant or (t.cause == "drift" and not t.now)):
            continue  # Karpenter waits for it (drift, consolidation, expiry without terminationGracePeriod)
        since = p.started or p.meta.created
        ran = snap.age(since) or 0.0
        if p.meta.deleting is not None:  # already evicted: the deletion time is when its grace period runs out
            how = f"killed at {_stamp(p.meta.deleting)} ({_relative(snap, p.meta.deleting)}), already evicted"
            ran += max((p.meta.deleting - now).total_seconds(), 0.0)
        elif t.forced and t.when is not None:
            how = f"deleted at {_stamp(t.when)} ({_relative(snap, t.when)})"
            ran += max((t.when - now).total_seconds(), 0.0)
        elif t.forced and held and f.tgp and not tolerant:  # not evicted: deleted to be gone by the deadline
            how = f"deleted within {f.tgp} of the drain starting"
        elif tolerant:
            how = ("killed when the instance terminates (it tolerates karpenter.sh/disrupted:NoSchedule, so the drain "
                   "neither evicts nor waits for it)")
        elif t.now:
            how = "evicted now"
        else:
            how = "evicted when the drain starts"
        if protected:
            how += f" although {DO_NOT_DISRUPT}={p.meta.annotations[DO_NOT_DISRUPT]}"
        lost.append((p, ran, how))
    if not lost:
        return None
    lost.sort(key=lambda x: -x[1] * max(x[0].gpus, 1.0))
    pod, ran, how = lost[0]
    gpu_hours = sum(r * max(p.gpus, 1.0) for p, r, _ in lost) / 3600
    more = f" (+{len(lost) - 1} more GPU job(s))" if len(lost) > 1 else ""
    running = human_age(snap.age(pod.started or pod.meta.created))
    title = f"GPU job {pod.namespace}/{pod.name} ({pod.gpus:g} GPU, running {running}) will be {how}: {t.what}{more}"
    ev = list(t.evidence)
    for p, r, h in lost[:10]:
        ev.append(Evidence.field(p.ref, "status.startTime", _stamp(p.started) if p.started else None,
                                 note=f"{p.gpus:g} GPU(s); loses {human_age(r)} of running time "
                                      f"(~{r * max(p.gpus, 1.0) / 3600:.0f} GPU-hours) unless checkpointed: {h}"))
        if DO_NOT_DISRUPT in p.meta.annotations:
            ev.append(Evidence.field(p.ref, f"metadata.annotations[{DO_NOT_DISRUPT}]",
                                     p.meta.annotations[DO_NOT_DISRUPT],
                                     note=("not honoured by interruption" if t.cause == "interruption" else
                                           "not honoured by terminationGracePeriod" if f.tgp else
                                           "not honoured past the termination deadline") if t.forced else ""))
        else:
            ev.append(Evidence.absence(p.ref, f"metadata.annotations[{DO_NOT_DISRUPT}]",
                                       note="nothing asks Karpenter to wait for this job"))
    text, commands = _remedy(snap, node, claim, f, t, [p for p, _, _ in lost])
    severity = Severity.ERROR if t.now else None
    return Finding(
        subject=node.ref,
        title=title,
        evidence=tuple(ev),
        remediation=Remediation(f"~{gpu_hours:.0f} GPU-hours of running work at stake. " + text, commands),
        severity=severity,
        related=tuple(p.ref for p, _, _ in lost) + ((claim.ref,) if claim is not None else ())
        + ((f.pool.ref,) if f.pool is not None else ()),
    )


def _remedy(snap: Snapshot, node: Node, claim: NodeClaim | None, f: _Facts, t: _Threat,
            pods: list[Pod]) -> tuple[str, tuple[str, ...]]:
    """The fix for the cause, and for jobs whose tolerations let the drain leave them to die with the instance."""
    text, commands = _remedy_by_cause(snap, node, claim, f, t, pods)
    tolerant = [p for p in pods if tolerates_disrupted(p)]
    if tolerant:
        text += (" " + ", ".join(f"{p.namespace}/{p.name}" for p in tolerant[:3]) + " tolerates "
                 "karpenter.sh/disrupted:NoSchedule (a blanket toleration): the drain neither evicts nor waits for "
                 f"it, so {DO_NOT_DISRUPT} and PDBs cannot keep the node for it; give its pod template tolerations "
                 "with explicit keys.")
    return text, commands


def _remedy_by_cause(snap: Snapshot, node: Node, claim: NodeClaim | None, f: _Facts, t: _Threat,
                     pods: list[Pod]) -> tuple[str, tuple[str, ...]]:
    """The fix for the cause, with commands that fit this node's pool and class."""
    pool = f.pool.name if f.pool is not None else "<nodepool>"
    # An evicted pod is past saving: it has its grace period to checkpoint, then its controller restarts it.
    annotate = tuple(f"kubectl annotate pod -n {p.namespace} {p.name} {DO_NOT_DISRUPT}=true --overwrite"
                     for p in pods[:3] if DO_NOT_DISRUPT not in p.meta.annotations and p.meta.deleting is None)
    evicted = [p for p in pods if p.meta.deleting is not None]
    checkpoint = ("Already evicted: " + ", ".join(f"{p.namespace}/{p.name}" for p in evicted[:3])
                  + " got SIGTERM and is killed when its terminationGracePeriodSeconds run out; a job that saves "
                  "a checkpoint on SIGTERM restarts from it. " if evicted else "")
    checkpoint += "Save a checkpoint now if the job can."
    events = f"kubectl get events -A --field-selector involvedObject.name={node.name}"
    m = _INSTANCE_ID.match(node.provider_id or (claim.provider_id if claim is not None else "") or "")
    instance = m.group(2) if m else ""
    region = f" --region {r}" if m and (r := region_of_zone(m.group(1))) else ""
    if t.cause == "interruption" and t.what.startswith("SpotInterrupted"):
        ct = _capacity_patch(f.pool)
        return (f"{checkpoint} A spot interruption cannot be stopped or delayed (2-minute notice) and ignores "
                f"{DO_NOT_DISRUPT}. Run long GPU jobs on on-demand or reserved capacity, and checkpoint often."
                + (" Requiring on-demand drifts the pool's spot nodes (Karpenter replaces them as budgets and "
                   f"{DO_NOT_DISRUPT} allow)." if ct else ""),
                ((ct,) if ct else ()) + (events,))
    if t.cause == "interruption" and t.what.startswith("CapacityReservationInstanceInterrupted"):
        return (f"{checkpoint} The owner of the interruptible capacity reservation is reclaiming it: EC2 terminates "
                f"the instance 2 minutes after the warning, whatever {DO_NOT_DISRUPT} says. Run long GPU jobs on "
                "capacity that is not interruptible, and checkpoint often.", (events,))
    if t.cause == "interruption":
        return (f"{checkpoint} The EC2 instance itself is stopping or terminating: nothing keeps the running job. "
                "Find out who or what stopped it (CloudTrail) before it happens again.",
                ((f"aws cloudtrail lookup-events{region} --lookup-attributes AttributeKey=ResourceName,AttributeValue="
                  f"{instance}",) if instance else ()) + (events,))
    if t.cause == "health":
        return (f"{checkpoint} Karpenter drains the node as soon as AWS reports a scheduled maintenance event or a "
                "failed status check; the drain waits for PDBs and " + DO_NOT_DISRUPT + " (unless a termination "
                "deadline forces it), but a scheduled retirement or reboot takes the instance on its date. Annotate "
                "jobs that must finish, and check the event's date.",
                annotate + ((f"aws ec2 describe-instance-status{region} --instance-ids {instance} --include-all-instances "
                             "--query 'InstanceStatuses[].Events'",) if instance else ()) + (events,))
    if t.cause == "drift":
        budget = json.dumps([{"op": "add", "path": "/spec/disruption/budgets/-",
                              "value": {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 0 * * 0-5",
                                        "duration": "24h"}}], separators=(",", ":"))
        cmds = list(annotate if not t.forced else ())
        text = []
        if t.forced:
            text.append(f"{checkpoint} The NodeClaim has terminationGracePeriod {f.tgp}, so drift ignores "
                        f"{DO_NOT_DISRUPT} and PDBs; only a budget or a new NodeClaim without it protects jobs.")
        elif annotate:
            text.append(f'Annotate the job {DO_NOT_DISRUPT}: "true" now (Karpenter does not evict it for drift) '
                        "and in its pod template.")
        else:
            text.append(f'{checkpoint} Set {DO_NOT_DISRUPT}: "true" in the job\'s pod template so drift waits for it '
                        "next time.")
        text.append('Then keep drift off training nodes outside a maintenance window: a budget {nodes: "0", '
                    "reasons: [Drifted]} with a schedule (this one allows drift on Saturdays, UTC).")
        cmds.append(f"kubectl patch nodepool {pool} --type json -p '{budget}'")
        pin = _ami_pin(snap, f)
        if pin:
            text.append("Pin the AMI so the next accelerated-AMI release does not drift the pool again (AMIDrift "
                        "comes from the @latest alias).")
            cmds.append(pin)
        return " ".join(text), tuple(cmds)
    if t.cause == "expiry":
        never = json.dumps({"spec": {"template": {"spec": {"expireAfter": "Never"}}}}, separators=(",", ":"))
        text = [checkpoint] if t.forced or t.now else []
        text.append("expireAfter counts from the NodeClaim's creation and ignores budgets and "
                    f"{DO_NOT_DISRUPT}" + (f"; terminationGracePeriod {f.tgp} then force-deletes every pod" if f.tgp
                                           else "") + ". This node's deadline cannot be moved.")
        text.append("For training pools set expireAfter: Never (or longer than the longest job); the change drifts "
                    "existing nodes, so add a Drifted budget first."
                    + (" Without terminationGracePeriod an expired node waits for do-not-disrupt jobs to finish."
                       if f.tgp else ""))
        cmds = [f"kubectl patch nodepool {pool} --type merge -p '{never}'"]
        if not t.forced:
            cmds = list(annotate) + cmds
        if claim is not None:
            cmds.insert(0, f"kubectl get nodeclaim {claim.name} -o jsonpath='{{.metadata.creationTimestamp}} "
                           "{.spec.expireAfter} {.spec.terminationGracePeriod}'")
        return " ".join(text), tuple(cmds)
    if t.cause == "consolidation":
        return (f'Annotate the job {DO_NOT_DISRUPT}: "true" (Karpenter stops evicting it) and in its pod template; '
                "for training pools use consolidationPolicy: WhenEmpty.",
                annotate + (f"kubectl patch nodepool {pool} --type merge -p "
                            "'{\"spec\":{\"disruption\":{\"consolidationPolicy\":\"WhenEmpty\"}}}'",))
    return (f"{checkpoint} Someone or something deleted the node or its NodeClaim; find out who before it "
            "happens again.", annotate + (events,))


def _capacity_patch(pool: NodePool | None) -> str:
    if pool is None:
        return ""
    index = pool.requirement_index("karpenter.sh/capacity-type")
    if index is None:
        return ""
    return (f"kubectl patch nodepool {pool.name} --type json -p '[{{\"op\":\"replace\",\"path\":"
            f"\"/spec/template/spec/requirements/{index}\",\"value\":{{\"key\":\"karpenter.sh/capacity-type\","
            "\"operator\":\"In\",\"values\":[\"on-demand\"]}}]'")


def _ami_pin(snap: Snapshot, f: _Facts) -> str:
    """Pin an `@latest` alias to the release it resolves to now (status.amis), so later releases do not drift
    the pool again; '' unless the drift is an AMIDrift under an `@latest` alias."""
    if f.drifted is None or f.drifted.reason != "AMIDrift" or f.pool is None:
        return ""
    cls = snap.index.nodeclass.get(f.pool.node_class)
    if cls is None:
        return ""
    alias = next((str(t.get("alias")) for t in cls.ami_terms if str(t.get("alias", "")).endswith("@latest")), "")
    m = next((m for a in cls.amis if (m := _AMI_VERSION.search(str(a.get("name", ""))))), None)
    if not alias or m is None:
        return ""
    body = json.dumps({"spec": {"amiSelectorTerms": [{"alias": alias.replace("@latest", f"@{m.group(1)}")}]}},
                      separators=(",", ":"))
    return f"kubectl patch ec2nodeclass {cls.name} --type merge -p '{body}'"

