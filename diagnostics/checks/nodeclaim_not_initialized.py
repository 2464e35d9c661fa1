"""A NodeClaim's Node joined the cluster but Karpenter never marked it initialized."""

from __future__ import annotations

import re
from collections.abc import Iterator

from diagnostics.model import Evidence, Finding, Remediation, Severity
from diagnostics.facts.node_health import (
    accelerator_resource,
    claim_age_from,
    clip,
    gpu_not_advertised_would_report,
    nominations,
    stamp,
    waiting_pods,
)
from diagnostics.records import Node, NodeClaim, Pod, is_accelerator
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot
from diagnostics.timeutil import human_age

INIT_GRACE_SECONDS = 120.0
"""Startup taints and readiness normally clear within a couple of minutes of registration."""
INIT_ERROR_SECONDS = 600.0
"""Stuck longer than this after registration is an error; before, a warning."""

_TAINT_RE = re.compile(r'(?:StartupTaint|KnownEphemeralTaint) "([^"]+)" still exists')
_DRA_RE = re.compile(r'DRA driver "([^"]+)"')

_EPHEMERAL_WHY = {
    "node.kubernetes.io/not-ready": "the kubelet is not Ready yet (CNI or container runtime not up)",
    "node.kubernetes.io/unreachable": "the kubelet stopped reporting to the API server",
    "node.cloudprovider.kubernetes.io/uninitialized": "the cloud controller manager has not initialised the node",
    "karpenter.sh/unregistered": "Karpenter has not finished registering the node",
}


@check(code="GT303", slug="nodeclaim-not-initialized", title="Registered nodes finish initialization",
       severity=Severity.ERROR, pending_pods_suffice=True, requires=("nodeclaims",), optional=("nodes", "events", "pods", "nodepools"))
def nodeclaim_not_initialized(snap: Snapshot) -> Iterator[Finding | int]:
    """A NodeClaim is `Registered=True` but `Initialized` stays not True.

    Why it matters:
    Karpenter has no initialization timeout: the node stays uninitialized forever. Pending pods
    remain nominated to it, so Karpenter launches nothing else for them, and it is never a
    disruption candidate ("Node isn't initialized"), so consolidation will not remove it either.

    Fix:
    Clear what the reason names: the agent that owns a startup taint (CNI, GPU Operator, a
    readiness gate) must run and remove it; a NotReady kubelet needs its CNI/runtime fixed; a
    DRA driver must publish its ResourceSlices. If it cannot be fixed, delete the NodeClaim.
    """
    nominated = nominations(snap) if snap.status("events").state.usable else {}
    for claim in snap.nodeclaims:
        registered = claim.condition("Registered")
        if registered is None or registered.status != "True":
            continue
        yield 1
        init = claim.condition("Initialized")
        if init is not None and init.status == "True":
            continue
        node = snap.index.node.get(claim.node_name) if claim.node_name else None
        reason = init.reason if init is not None else ""
        if reason == "ResourceNotRegistered":
            resource = accelerator_resource(init.message if init else "")
            # gpu-not-advertised explains this node in depth (device plugin, taints); do not say it twice.
            # Without nodes it is skipped, so this check is then the only one to tell.
            if (not resource or is_accelerator(resource)) and gpu_not_advertised_would_report(node, claim):
                continue
        age, registered_at = claim_age_from(snap, claim, "Registered")
        if age is not None and age < INIT_GRACE_SECONDS:
            continue
        yield _finding(snap, claim, node, init.as_dict() if init else None, age, stamp(registered_at),
                       waiting_pods(snap, claim, nominated))


def _finding(snap: Snapshot, claim: NodeClaim, node: Node | None, init: dict[str, str] | None,
             age: float | None, registered_at: str, waiting: list[Pod]) -> Finding:
    reason = (init or {}).get("reason") or "Initialized missing"
    message = (init or {}).get("message") or ""
    name = claim.node_name or "?"
    ev: list[Evidence] = []
    if init is not None:
        ev.append(Evidence.condition(claim.ref, {**init, "message": clip(message)}, age,
                                     note=f"registered {human_age(age)} ago ({registered_at}); Karpenter has no "
                                          f"initialization timeout and will wait forever"))
    else:
        ev.append(Evidence.absence(claim.ref, "status.conditions[Initialized]",
                                   note="Karpenter has no initialization timeout and will wait forever"))
    commands: list[str] = [f"kubectl describe nodeclaim {claim.name}"]
    cause = ""
    if reason in ("StartupTaintsExist", "KnownEphemeralTaintsExist"):
        m = _TAINT_RE.search(message)
        taint = m.group(1) if m else ""
        key = taint.split(":")[0].split("=")[0]
        if node is not None:
            ev.append(Evidence.field(node.ref, "spec.taints", [str(t) for t in node.taints] or "none"))
        if reason == "StartupTaintsExist":
            cause = f"startup taint {taint or '?'} was never removed by the agent that owns it"
            ev.append(Evidence.field(claim.ref, "spec.startupTaints", [str(t) for t in claim.startup_taints] or "none",
                                     note="Karpenter waits until each of these is gone from the node"))
            text = (f"Startup taint {taint or '(see message)'} is still on {name}. It is removed by the component "
                    f"that owns it (a CNI agent, the GPU Operator validator, a readiness controller): make that "
                    f"DaemonSet run on this node (tolerations, nodeSelector) and look at its logs. As a last resort, "
                    f"remove the taint by hand or drop it from the NodePool's startupTaints.")
            if taint and node is not None:
                commands.append(f"kubectl taint node {name} {taint}-")
        else:
            why = _EPHEMERAL_WHY.get(key, "a readiness gate has not passed" if key.startswith("readiness.k8s.io/")
                                     else "the node is not ready yet")
            cause = f"{taint or 'an ephemeral taint'} still set: {why}"
            text = (f"{taint or 'An ephemeral taint'} is still on {name}: {why}. Find which component is failing "
                    f"from the node's Ready condition and the pods on it.")
        commands.append(f"kubectl get pods -A -o wide --field-selector spec.nodeName={name}")
    elif reason == "NodeNotReady":
        cause = "the node never became Ready"
        if node is not None:
            ready = next((c for c in node.conditions if c.type == "Ready"), None)
            if ready is not None:
                ev.append(Evidence.condition(node.ref, {**ready.as_dict(), "message": clip(ready.message)},
                                             snap.age(ready.last_transition)))
                if ready.message:
                    cause += f" ({clip(ready.message, 120)})"
        text = (f"{name} registered but its kubelet is not Ready: usually the CNI (aws-node / VPC CNI) or the "
                f"container runtime is not up. Check the node's Ready message and the pods on it.")
        commands += [f"kubectl get pods -A -o wide --field-selector spec.nodeName={name}",
                     # This node's aws-node pod, not a tail of every node's.
                     f"kubectl -n kube-system logs -c aws-node --tail=50 $(kubectl -n kube-system get pod "
                     f"-l k8s-app=aws-node --field-selector spec.nodeName={name} -o name)"]
    elif reason == "DRADriverPoolsNotPublished":
        m = _DRA_RE.search(message)
        driver = m.group(1) if m else "?"
        cause = f"DRA driver {driver} has not published its ResourceSlices"
        text = (f"The DRA driver {driver} has not published a complete resource pool for {name}: make its kubelet "
                f"plugin run on this node and check its logs.")
        commands += [f"kubectl get resourceslices --field-selector spec.nodeName={name}",
                     f"kubectl get pods -A -o wide --field-selector spec.nodeName={name}"]
    elif reason == "ResourceNotRegistered":
        resource = accelerator_resource(message) or "?"
        cause = f"{resource} was requested but the node does not advertise it"
        if node is not None:
            ev.append(Evidence.field(node.ref, f"status.allocatable[{resource}]",
                                     node.allocatable.get(resource, "absent")))
        text = (f"Nothing on {name} registers {resource}: install or fix the device plugin for it (e.g. the EFA "
                f"device plugin for vpc.amazonaws.com/efa) so the kubelet advertises it.")
        commands.append(f"kubectl get node {name} -o jsonpath='{{.status.allocatable}}'")
    elif reason == "NodeNotFound":
        cause = "its Node object is gone"
        text = f"The Node {name} no longer exists; delete the NodeClaim so Karpenter replaces it."
    else:
        cause = f"{reason}" + (f": {clip(message, 120)}" if message else "")
        text = "Read the Initialized message and the Karpenter controller log."
    if node is None and claim.node_name and snap.status("nodes").state.usable and reason != "NodeNotFound":
        ev.append(Evidence.absence(None, f"node {claim.node_name}"))
    if node is not None:
        for e in snap.index.events("Node", node.name):
            if e.reason == "DisruptionBlocked" and "isn't initialized" in e.message:
                ev.append(Evidence.event(node.ref, e.reason, e.message, e.count, snap.age(e.last_seen)))
                break
    if waiting:
        ev.append(Evidence.field(claim.ref, "pods waiting for it", [f"{p.namespace}/{p.name}" for p in waiting[:8]],
                                 note=f"{len(waiting)} pending pod(s) stay nominated to it; Karpenter launches "
                                      "nothing else for them"))
        text += f" {len(waiting)} pending pod(s) wait on it."
    text += (" Karpenter has no initialization timeout: if it cannot be fixed, delete the NodeClaim and Karpenter "
             "launches a replacement.")
    commands.append(f"kubectl delete nodeclaim {claim.name}")
    severity = Severity.WARNING if age is not None and age < INIT_ERROR_SECONDS else None
    title = (f"NodeClaim {claim.name}" + (f" (node {claim.node_name})" if claim.node_name else "")
             + f" not initialized {human_age(age)} after registering: {reason} - {cause}")
    return Finding(subject=claim.ref, title=title, evidence=tuple(ev), severity=severity,
                   remediation=Remediation(text, tuple(dict.fromkeys(commands))),
                   related=((node.ref,) if node else ()) + tuple(p.ref for p in waiting))
