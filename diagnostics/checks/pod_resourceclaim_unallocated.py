"""A pending pod waits on a DRA ResourceClaim (GPU) that is not allocated, or not created yet."""

from __future__ import annotations

from collections.abc import Iterator

from diagnostics.facts.dra import PodClaim, claim_state, pod_claims
from diagnostics.model import Evidence, Finding, Remediation, Severity
from diagnostics.facts.pod_events import clip
from diagnostics.facts.provider import facts
from diagnostics.records import Event, Pod
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot

# kube-scheduler's dynamicresources plugin texts (pkg/scheduler/framework/plugins/dynamicresources).
SCHEDULER_TEXTS = {
    "cannot allocate all claims": "no node has enough free devices that match the claim's requests",
    "resourceclaim not available on the node": "the claim is allocated on another node",
    "resourceclaim in use": "the claim is reserved by other pods",
    "ResourceClaim not created yet": "the ResourceClaim of the pod's template does not exist yet",
    "does not exist": "a DeviceClass it asks for does not exist",
    "is being deleted": "the claim is being deleted",
}


def _scheduler_event(snap: Snapshot, pod: Pod) -> Event | None:
    for e in reversed(snap.index.events("Pod", pod.name, pod.namespace)):
        if e.reason in ("FailedScheduling", "FailedPrepareDynamicResources"):
            return e
    return None



@facts(reads=("pending",))
def _claim_pods(snap: Snapshot) -> list[tuple[Pod, list[PodClaim]]]:
    """Pending pods that use DRA, with their claims: a burst of changes to bound pods costs nothing here."""
    return [(p, c) for p in snap.index.pending if (c := pod_claims(p))]


@check(code="GT407", slug="pod-resourceclaim-unallocated", title="GPU pods' DRA ResourceClaims get allocated",
       severity=Severity.ERROR, pending_pods_suffice=True, requires=("pods",), optional=("events",))
def pod_resourceclaim_unallocated(snap: Snapshot) -> Iterator[Finding | int]:
    """A pending pod waits on a DRA ResourceClaim (a GPU from a ResourceSlice) that is not allocated.

    Why it matters:
    With Dynamic Resource Allocation a GPU node advertises no `nvidia.com/gpu`; the scheduler
    allocates devices from the DRA driver's ResourceSlices to the pod's ResourceClaims. Its
    event only says `cannot allocate all claims` - never which claim, class or selector - and
    the pod stays Pending. The claim's status says whether anything was allocated.

    Fix:
    Make a matching device free or available: check the ResourceSlices the driver published
    (`kubectl get resourceslices`), that its kubelet plugin runs on the GPU nodes, the
    DeviceClass and the claim's selectors/count, and which pods hold the devices now.
    """
    waiting = _claim_pods(snap)
    examined = 0
    for pod, claims in waiting:
        examined += 1
        ev: list[Evidence] = []
        bad: list[str] = []
        for c in claims:
            if not c.claim:
                bad.append(f"claim {c.entry} (template {c.template}) not created yet")
                ev.append(Evidence.absence(pod.ref, f"status.resourceClaimStatuses[{c.entry}]",
                                           note="the resourceclaim controller has not created it"))
                continue
            key = f"{pod.namespace}/{c.claim}"
            obj = snap.resource_claims.get(key)
            if obj is None or "error" in obj:
                why = obj.get("error") if obj else "not read here (only `gputui diagnose` reads ResourceClaims)"
                ev.append(Evidence.absence(None, f"resourceclaim/{key}", note=f"its status could not be read: {why}"))
                bad.append(f"claim {c.claim} (status unknown)")
                continue
            st = claim_state(obj)
            ev.append(Evidence.field(None, f"resourceclaim/{key} status.allocation",
                                     list(st.devices) or "none", note="; ".join(st.requests)))
            if st.reserved_for:
                ev.append(Evidence.field(None, f"resourceclaim/{key} status.reservedFor", list(st.reserved_for)))
            if st.deleting:
                bad.append(f"claim {c.claim} is being deleted")
            elif not st.allocated:
                bad.append(f"claim {c.claim} ({', '.join(st.requests) or 'no requests'}) is not allocated")
        e = _scheduler_event(snap, pod)
        meaning = ""
        if e is not None:
            ev.append(Evidence.event(pod.ref, e.reason, clip(e.message), e.count, snap.age(e.last_seen), type_=e.type))
            meaning = next((m for t, m in SCHEDULER_TEXTS.items() if t in e.message), "")
        if not bad:
            continue  # every claim is allocated: the pod waits for something else
        title = f"{pod.namespace}/{pod.name} waits on DRA: {'; '.join(bad)}" + (f" - {meaning}" if meaning else "")
        names = [c.claim for c in claims if c.claim]
        commands = [f"kubectl -n {pod.namespace} get resourceclaim {' '.join(names)} -o yaml"] if names else []
        commands += ["kubectl get resourceslices -o wide",
                     "kubectl get deviceclasses",
                     f"kubectl -n {pod.namespace} describe pod {pod.name}"]
        yield Finding(
            subject=pod.ref, title=title, evidence=tuple(ev),
            remediation=Remediation(
                "The scheduler found no node with free devices matching the claim: check that the DRA driver's "
                "kubelet plugin runs on the GPU nodes and published ResourceSlices, that the DeviceClass and the "
                "claim's selectors/count can match a device, and which claims hold the devices now "
                "(status.reservedFor). Adding nodes helps only if new nodes run the DRA driver.", tuple(commands)))
    yield examined
