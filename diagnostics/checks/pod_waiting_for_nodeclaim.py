"""A pending GPU pod nominated to a NodeClaim that is still launching, registering or initializing."""

from __future__ import annotations

from collections.abc import Iterator

from diagnostics.model import Evidence, Finding, Remediation, Severity
from diagnostics.pending import triage
from diagnostics.pod_events import event_evidence
from diagnostics.pod_fit import accel_text
from diagnostics.records import NodeClaim
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
       severity=Severity.INFO, requires=("pods", "nodeclaims"), optional=("events", "nodes"))
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
        pod, w = t.pod, t.waiting
        if w is None or not w.in_progress or w.claim is None:
            continue
        claim = w.claim
        stage, verb, since_cond = stage_of(claim)
        started = claim.meta.created
        if since_cond:
            c = claim.condition(since_cond)
            started = (c.last_transition if c is not None and c.last_transition else started)
        claim_age = snap.age(claim.meta.created)
        stage_age = snap.age(started)
        stuck = claim_age is not None and claim_age > STUCK_AFTER
        blocking = claim.condition(stage)
        what = ", ".join(x for x in (claim.instance_type, claim.zone, claim.capacity_type) if x)
        detail = ""
        if blocking is not None and (blocking.reason or blocking.message):
            detail = f": {stage}={blocking.status} {blocking.reason}".rstrip()
        title = (f"{pod.namespace}/{pod.name} ({accel_text(pod.requests)}) waits for NodeClaim {claim.name}"
                 + (f" ({what})" if what else "")
                 + f", {verb} for {human_age(stage_age)}{detail}"
                 + (f" - claim is {human_age(claim_age)} old" if stuck else ""))
        ev: list[Evidence] = []
        if w.via == "event":
            ev.extend(event_evidence(snap, pod, w.event, note="Karpenter's nomination"))
        else:
            ev.append(Evidence.field(pod.ref, "status.nominatedNodeName", pod.nominated_node))
        ev.append(Evidence.field(claim.ref, "metadata.creationTimestamp",
                                 claim.meta.created.isoformat().replace("+00:00", "Z") if claim.meta.created else None,
                                 note=f"age {human_age(claim_age)}"))
        if blocking is not None:
            ev.append(Evidence.condition(claim.ref, blocking.as_dict(), snap.age(blocking.last_transition),
                                         note=f"{verb} for {human_age(stage_age)}"))
        else:
            ev.append(Evidence.absence(claim.ref, f"status.conditions[{stage}]", note="not reported yet"))
        if claim.node_name:
            ev.append(Evidence.field(claim.ref, "status.nodeName", claim.node_name))
        yield Finding(
            subject=pod.ref,
            title=title,
            evidence=tuple(ev),
            remediation=_remedy(claim, stage, stuck),
            severity=Severity.WARNING if stuck else None,
            related=(claim.ref,) + ((w.node.ref,) if w.node is not None else ()),
        )


def _remedy(claim: NodeClaim, stage: str, stuck: bool) -> Remediation:
    describe = f"kubectl describe nodeclaim {claim.name}"
    logs = f"kubectl -n karpenter logs -l app.kubernetes.io/name=karpenter --tail=500 | grep {claim.name}"
    if not stuck:
        return Remediation("Karpenter is bringing up a node for this pod; nothing to do yet.", (describe,))
    if stage == "Launched":
        return Remediation("The instance has not launched: the Launched condition and Karpenter's log say why "
                           "(capacity, quota, permissions, NodeClass). Karpenter deletes a claim that has not "
                           "launched after 5 minutes and tries again.", (describe, logs))
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
                       (describe,) + ((f"kubectl describe node {node}", f"gputui debug node/{node}") if node else ()))
