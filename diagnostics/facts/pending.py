"""The pending GPU pods, triaged once per cache state: what schedulers said, where each is headed, its shape.

Four checks walk every pending GPU pod (GT105, GT401, GT402, GT404). What they ask about each pod
reads records only, so it is carried across snapshots of an unchanged cache and rebuilt per pod
when the pod, its events, the nodes or the NodeClaims change. Only the age rule of
not_considered and the fits (whose evidence carries ages) are worked out per snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass

from diagnostics.model import ObjectRef
from diagnostics.facts.pod_events import PodScheduling, Waiting, scheduling, waiting_on
from diagnostics.facts.pod_fit import YOUNG_SECONDS, PodFit, fit, ignored_whenever, spec_rejected
from diagnostics.facts.pod_shape import Shape, pod_shape
from diagnostics.facts.provider import derived, per_snapshot
from diagnostics.records import Pod
from diagnostics.snapshot import Snapshot
from diagnostics.facts.workloads import Workload, owner_workload


@dataclass(frozen=True, slots=True)
class Triage:
    pod: Pod
    sched: PodScheduling
    waiting: Waiting | None
    """The live NodeClaim/node the pod is headed to (pod_events.waiting_on)."""
    shape: Shape
    daemonset: bool
    ignored: str | None
    """pod_fit.ignored_whenever: why Karpenter ignores the pod at any time, '' if it does not, None if age decides."""
    ref: ObjectRef
    workload: Workload
    """owner_workload(pod): what to edit (checks group pending pods by it)."""
    rejected: str
    """pod_fit.spec_rejected: why Karpenter's validation rejects the pod's own spec, '' if it does not."""


def triage(snap: Snapshot) -> list[Triage]:
    """Every pending GPU pod, in the index's order."""
    src = snap.index.sources
    events_ok = snap.status("events").state.usable
    return _triaged(snap, snap.index.pending_gpu_pods, src["events"], src["nodes"], src["nodeclaims"], events_ok,
                    within=snap)


@derived
def _triaged(pods: list[Pod], events: object, nodes: object, claims: object, events_ok: bool, *,
             within: Snapshot) -> list[Triage]:
    """triage, carried while the pending GPU pods and `within` the events, nodes and NodeClaims are the same
    objects (and the events source as usable); else each pod is triaged again only if what it reads changed."""
    snap = within
    idx = snap.index
    return [_triaged_pod(snap, p, idx.events("Pod", p.name, p.namespace), nodes, claims, events_ok, within=snap)
            for p in pods]


@derived
def _triaged_pod(pod: Pod, events: object, nodes: object, claims: object, events_ok: bool, *,
                 within: Snapshot) -> Triage:
    sched = scheduling(within, pod)
    return Triage(pod, sched, waiting_on(within, pod, sched), pod_shape(within, pod), pod.is_daemonset,
                  ignored_whenever(pod), pod.ref, owner_workload(pod), spec_rejected(pod))


KARPENTER_VALIDATION = (
    "persistentvolumeclaim is being deleted", "persistentvolumeclaim bound to non-existent persistentvolume",
    "failed to validate pvc", "pvc is considered unbound", "unbound pvc must define a storage class",
    "node selector term with matchFields is not supported", "might interfere with the internal provisioning logic",
    "configured to not run on a karpenter provisioned node", "has an unsupported operator", "is not a qualified name")
"""Errors of Karpenter's Provisioner.Validate (provisioner.go, volumetopology.go ValidatePersistentVolumeClaims,
apis/v1 ValidateRequirement), lower-cased: a pod that fails it is ignored, whatever the NodePools."""


def karpenter_rejected(sched: PodScheduling) -> bool:
    """Karpenter's latest word on the pod is a Validate error: it launches nothing for it."""
    msg = sched.karpenter_msg
    if msg is None or not sched.karpenter_current:
        return False
    raw = msg.raw.lower()
    return any(v in raw for v in KARPENTER_VALIDATION)


def karpenter_ignores(t: Triage) -> str:
    """Why Karpenter launches nothing for the pending pod whatever the NodePools say ('' when it would launch).

    IsProvisionable (`t.ignored`: gated, preempting, not marked Unschedulable, a DaemonSet's) and
    Provisioner.Validate: `karpenter.sh/nodepool DoesNotExist`, a restricted label or matchFields in its
    requirements, or the Validate error Karpenter put in its FailedScheduling event (PVCs, requirements).
    """
    if t.ignored or t.rejected:
        return t.ignored or t.rejected
    if karpenter_rejected(t.sched) and t.sched.karpenter_msg is not None:
        raw = t.sched.karpenter_msg.raw
        for prefix in ("Failed to schedule pod, ", "Could not schedule pod, "):
            raw = raw.removeprefix(prefix)
        return raw
    return ""


def considered(snap: Snapshot, t: Triage) -> bool:
    """pod_fit.not_considered(snap, t.pod) == ''."""
    if t.ignored is not None:
        return not t.ignored
    age = snap.age(t.pod.meta.created)
    return age is None or age >= YOUNG_SECONDS


@per_snapshot
def placeable(snap: Snapshot) -> tuple[int, list[tuple[Triage, PodFit]]]:
    """Pending GPU pods Karpenter considers (how many), and those not already headed to a node, with their fit.

    What GT105, GT401 and GT402 each go through; computed once per snapshot for the three.
    """
    n = 0
    out = []
    for t in triage(snap):
        if not considered(snap, t):
            continue
        n += 1
        if t.waiting is None:
            out.append((t, fit(snap, t.pod, t.shape)))
    return n, out
