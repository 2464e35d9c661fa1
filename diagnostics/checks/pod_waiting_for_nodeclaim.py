"""A pending GPU pod nominated to a NodeClaim that is still launching, registering or initializing."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from diagnostics.facts.karpenter_controller import controller_namespace, logs_command
from diagnostics.model import Evidence, EvidenceKind, Finding, ObjectRef, Remediation, Severity
from diagnostics.facts.pending import Triage, triage
from diagnostics.facts.pod_events import clip
from diagnostics.facts.pod_fit import accel_text
from diagnostics.facts.provider import derived
from diagnostics.facts.accelerator_stack import health_command
from diagnostics.records import Node, NodeClaim
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot
from diagnostics.timeutil import human_age

STUCK_AFTER = 600.0
"""A claim older than this is no longer "on its way": launch takes ~1-3 min, a GPU node ~5-8 min to initialize."""

_STAGE = {
    "Launched": ("launching", "Launched"),
    "Registered": ("registering", "Registered"),
    "Initialized": ("initializing", "Initialized"),
}


def stage_of(claim: NodeClaim) -> tuple[str, str, str]:
    """(condition type not yet True, verb, the condition whose transition started this stage)."""
    previous = ""
    for t in ("Launched", "Registered", "Initialized"):
        c = claim.condition(t)
        if c is None or c.status != "True":
            return t, _STAGE[t][0], previous
        previous = t
    return "", "ready", previous


@check(code="GT404", slug="pod-waiting-for-nodeclaim", title="GPU pods nominated to a NodeClaim get their node",
       severity=Severity.INFO, pending_pods_suffice=True, requires=("pods", "nodeclaims"), optional=("events", "nodes"))
def pod_waiting_for_nodeclaim(snap: Snapshot) -> Iterator[Finding | int]:
    """A pending GPU pod is waiting for the NodeClaim Karpenter launched for it; says which stage and for how long.

    Why it matters:
    While its NodeClaim comes up the pod is fine to wait (info). When the claim is older than
    10 minutes something is wrong with it: the instance did not launch, the node never joined
    (Karpenter gives up after 15 min) or it never initialized - a GPU node without a running
    device plugin stays uninitialized forever and the pod stays nominated to it (warning).

    Fix:
    Follow the stage: a claim stuck launching has a Launched condition/event saying why; one
    stuck registering has a node that cannot join (bootstrap, AMI, networking); one stuck
    initializing has startup taints left or GPUs not registered (device plugin / driver).
    """
    for t in triage(snap):
        if t.daemonset:
            continue
        yield 1
        w = t.waiting
        if w is None or not w.in_progress or w.claim is None:
            continue
        # What the finding says whatever the time, worked out once per triaged pod (its records).
        st = _static(snap, t)
        claim_age = snap.age(st.created)
        stage_age = snap.age(st.started)
        stuck = claim_age is not None and claim_age > STUCK_AFTER
        title = (f"{st.head}, {st.verb} for {human_age(stage_age)}{st.detail}"
                 + (f" - claim is {human_age(claim_age)} old" if stuck else ""))
        ev: list[Evidence] = []
        if st.nomination is not None:
            e = st.nomination
            ev.append(Evidence(e.kind, e.subject, e.path, e.value, e.note, count=e.count,
                               age_seconds=snap.age(st.nominated_seen)))
        elif st.nominated_field is not None:
            ev.append(st.nominated_field)
        ev.append(Evidence.field(st.claim_ref, "metadata.creationTimestamp", st.created_text,
                                 note=f"age {human_age(claim_age)}"))
        if st.blocking is not None:
            ev.append(Evidence(EvidenceKind.CONDITION, st.claim_ref, st.blocking.path, st.blocking.value,
                               f"{st.verb} for {human_age(stage_age)}",
                               age_seconds=snap.age(st.blocking_since)))
        else:
            ev.append(st.absent)  # type: ignore[arg-type]
        if st.node_field is not None:
            ev.append(st.node_field)
        remedy = st.stuck_remedy if stuck else st.remedy
        if stuck and st.launching:
            remedy = Remediation(remedy.text, remedy.commands + (
                logs_command(controller_namespace(snap), st.claim_ref.name),))
        yield Finding(
            subject=st.subject,
            title=title,
            evidence=tuple(ev),
            remediation=remedy,
            severity=Severity.WARNING if stuck else None,
            related=st.related,
        )


@dataclass(frozen=True, slots=True)
class _Static:
    """The time-independent parts of a waiting pod's finding (ages are filled in per snapshot)."""

    subject: ObjectRef
    head: str
    """`ns/pod (GPUs) waits for NodeClaim X (type, zone, capacity)`."""
    verb: str
    detail: str
    created: datetime | None
    created_text: str | None
    started: datetime | None
    """When the current stage began: the age shown."""
    claim_ref: ObjectRef
    nomination: Evidence | None
    """Karpenter's Nominated event as evidence, without its age (nominated_seen)."""
    nominated_seen: datetime | None
    nominated_field: Evidence | None
    blocking: Evidence | None
    """The condition not yet True, as evidence without its note and age (blocking_since)."""
    blocking_since: datetime | None
    absent: Evidence | None
    node_field: Evidence | None
    remedy: Remediation
    stuck_remedy: Remediation
    related: tuple[ObjectRef, ...]
    launching: bool
    """Stuck at Launched: the controller's log says why."""


@derived
def _static(t: Triage) -> _Static:
    pod, w = t.pod, t.waiting
    assert w is not None and w.claim is not None
    claim = w.claim
    stage, verb, since_cond = stage_of(claim)
    started = claim.meta.created
    if since_cond:
        c = claim.condition(since_cond)
        started = (c.last_transition if c is not None and c.last_transition else started)
    blocking = claim.condition(stage)
    what = ", ".join(x for x in (claim.instance_type, claim.zone, claim.capacity_type) if x)
    detail = ""
    if blocking is not None and (blocking.reason or blocking.message):
        detail = f": {stage}={blocking.status} {blocking.reason}".rstrip()
    head = (f"{pod.namespace}/{pod.name} ({accel_text(pod.requests)}) waits for NodeClaim {claim.name}"
            + (f" ({what})" if what else ""))
    nomination = nominated_field = None
    nominated_seen = None
    if w.via == "event":
        e = w.event
        if e is not None:  # event_evidence(snap, pod, e, note=...) less the age
            nomination = Evidence.event(pod.ref, e.reason, clip(e.message), e.count, None,
                                        note="Karpenter's nomination", type_=e.type)
            nominated_seen = e.last_seen
    else:
        nominated_field = Evidence.field(pod.ref, "status.nominatedNodeName", pod.nominated_node)
    created = claim.meta.created
    return _Static(
        subject=pod.ref, head=head, verb=verb, detail=detail, created=created,
        created_text=created.isoformat().replace("+00:00", "Z") if created else None,
        started=started, claim_ref=claim.ref, nomination=nomination, nominated_seen=nominated_seen,
        nominated_field=nominated_field,
        blocking=Evidence.condition(claim.ref, blocking.as_dict()) if blocking is not None else None,
        blocking_since=blocking.last_transition if blocking is not None else None,
        absent=None if blocking is not None else Evidence.absence(claim.ref, f"status.conditions[{stage}]",
                                                                  note="not reported yet"),
        node_field=Evidence.field(claim.ref, "status.nodeName", claim.node_name) if claim.node_name else None,
        remedy=_remedy(claim, stage, False, w.node),
        stuck_remedy=_remedy(claim, stage, True, w.node),
        launching=stage == "Launched",
        related=(claim.ref,) + ((w.node.ref,) if w.node is not None else ()),
    )


def _remedy(claim: NodeClaim, stage: str, stuck: bool, node_record: Node | None = None) -> Remediation:
    describe = f"kubectl describe nodeclaim {claim.name}"
    if not stuck:
        return Remediation("Karpenter is bringing up a node for this pod; nothing to do yet.", (describe,))
    if stage == "Launched":  # the controller's log follows (its namespace is per snapshot)
        return Remediation("The instance has not launched: the Launched condition and Karpenter's log say why "
                           "(capacity, quota, permissions, NodeClass). Karpenter deletes a claim that has not "
                           "launched after 5 minutes and tries again.", (describe,))
    instance = claim.provider_id.rsplit("/", 1)[-1] if claim.provider_id else ""
    if stage == "Registered":
        cmds = [describe]
        if instance.startswith("i-"):
            cmds.append(f"aws ec2 get-console-output --instance-id {instance} --latest --output text | tail -50")
        return Remediation("The instance is running but its node never joined the cluster (bootstrap/user data, "
                           "AMI, networking or IAM); Karpenter deletes it after 15 minutes and launches another.",
                           tuple(cmds))
    node = claim.node_name
    return Remediation("The node joined but never initialized: startup taints are still on it or the GPUs are not "
                       "registered (device plugin / driver). Karpenter has no initialization timeout, so it stays "
                       "like this until fixed or deleted.",
                       (describe,) + ((f"kubectl describe node {node}",
                                     health_command(node_record) if node_record is not None
                                     else f"gputui debug node/{node}") if node else ()))
