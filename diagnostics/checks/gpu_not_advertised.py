"""A node that should have GPUs advertises none in allocatable."""

from __future__ import annotations

from collections.abc import Iterator

from diagnostics.facts.accelerator_stack import Diagnosis, diagnose_node, startup_note
from diagnostics.facts.node_health import nominations, pending_nominated_to, waiting_pods
from diagnostics.facts.provider import facts
from diagnostics.model import Evidence, Finding, Remediation, Severity
from diagnostics.records import Node, NodeClaim, accelerator_total, accelerators
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot, node_should_have_gpus
from diagnostics.timeutil import human_age


@check(code="GT201", slug="gpu-not-advertised", title="GPU nodes advertise their GPUs",
       severity=Severity.ERROR, pending_pods_suffice=True, requires=("nodes",), optional=("nodeclaims", "daemonsets", "pods", "events"))
def gpu_not_advertised(snap: Snapshot) -> Iterator[Finding | int]:
    """A node that should have GPUs advertises none in `status.allocatable`.

    Why it matters:
    Pods requesting `nvidia.com/gpu` can never land there; Karpenter keeps the NodeClaim
    `Initialized=Unknown` (`ResourceNotRegistered`) forever - there is no initialization
    timeout - and pending pods stay nominated to it, so nothing replaces it.

    The finding names the first broken layer of the node's own stack (GPU Operator driver ->
    container toolkit -> validator -> device plugin; standalone NVIDIA plugin; GKE driver
    installer and plugin; Neuron or AMD plugin; a plugin built into Bottlerocket), with its pod,
    state and last log lines; later layers only wait on it. A node younger than its stack's
    start-up allowance (15 minutes; ~21 for the GPU Operator's driver) whose layer is still
    starting is reported as info. A DRA node publishes its GPUs as ResourceSlices and is not
    reported.

    Fix:
    Fix that layer on that node: make the DaemonSet of the node's vendor tolerate its taints (the
    GPU Operator's through ClusterPolicy `spec.daemonsets.tolerations`: it undoes a patch to its
    DaemonSets) and match its labels, fix the crash its log names (kernel headers, containerd config, NVML:
    `ERROR_LIBRARY_NOT_FOUND` means a node image without the driver), or install the vendor's
    device plugin. Replace the node only when the fault is the node's own.
    """
    idx = snap.index
    examined, silent = _silent(snap)
    yield examined
    nominated = nominations(snap) if silent else {}
    for node, claim, expected in silent:
        diag = diagnose_node(snap, node)
        if diag.elsewhere:
            continue  # a DRA node: its GPUs are ResourceSlice devices, never in allocatable
        young, age_text = startup_note(snap, node, diag.stack)
        ev: list[Evidence] = [
            Evidence.field(node.ref, "status.allocatable", accelerators(node.allocatable) or "no accelerator resources",
                           note=f"expected {expected:g} {diag.stack.resource} from {_why_expected(node, claim)}; "
                                f"stack: {diag.stack.describe}"),
        ]
        if claim is not None:
            init = claim.condition("Initialized")
            if init is not None and init.status != "True":
                ev.append(Evidence.condition(claim.ref, init.as_dict(), snap.age(init.last_transition),
                                             note=f"stuck for {human_age(snap.age(init.last_transition))}"))
        ev.extend(diag.evidence)
        for e in idx.events("Node", node.name):
            if e.reason == "DisruptionBlocked" and "isn't initialized" in e.message:
                ev.append(Evidence.event(node.ref, e.reason, e.message, e.count, snap.age(e.last_seen)))
                break
        waiting = [p.ref for p in (waiting_pods(snap, claim, nominated) if claim else
                                   pending_nominated_to(snap, node.name))]
        severity = None
        title = f"{node.name} ({node.instance_type or 'GPU node'}) advertises 0 {_unit(diag)}: {diag.cause}"
        if diag.maintenance or (young and diag.progressing):
            # Still inside the time its stack may take to come up (or paused on purpose): say so, no alarm.
            severity = Severity.INFO
            title = (f"{node.name} ({node.instance_type or 'GPU node'}) is still starting its {diag.stack.vendor_name} "
                     f"{diag.layer} ({age_text}): {diag.cause}") if not diag.maintenance else title
        elif age_text:
            ev.append(Evidence.field(node.ref, "metadata.creationTimestamp", age_text,
                                     note="past the start-up allowance of its stack" if not young else
                                     "young, but the layer is failing, not starting"))
        yield Finding(
            subject=node.ref,
            title=title,
            severity=severity,
            evidence=tuple(ev),
            remediation=_remediation(snap, node, claim, diag),
            related=tuple(waiting) + ((claim.ref,) if claim else ()),
        )


def _unit(diag: Diagnosis) -> str:
    return "Neuron devices" if diag.stack.vendor == "neuron" else "GPUs"


def _remediation(snap: Snapshot, node: Node, claim: NodeClaim | None, diag: Diagnosis) -> Remediation:
    """The fix for the broken layer; replacing the node only where a fresh node would not have the same fault."""
    text = f"{diag.fix} Until then no pod can use this node's {diag.stack.resource}."
    commands = diag.commands + (f"kubectl describe node {node.name}",)
    node_local = diag.stack.provider == "host" or "registered no" in diag.cause or (
        "Driver/library version mismatch" in diag.cause or "Driver Not Loaded" in diag.cause)
    karpenter = claim is not None and snap.status("nodeclaims").state.usable
    if node_local and diag.stack.provider != "dra":
        if karpenter:
            text += " If it cannot be fixed quickly, cordon and delete the node so Karpenter launches a fresh one."
            commands += (f"kubectl cordon {node.name} && kubectl delete node {node.name}",)
        elif diag.stack.platform == "gke":
            text += (" If it cannot be fixed quickly, drain the node and delete its VM; the node pool's managed "
                     "instance group recreates it.")
            commands += (f"kubectl drain {node.name} --ignore-daemonsets --delete-emptydir-data",)
    return Remediation(text, commands)


@facts(reads=("nodes", "nodeclaims"))
def _silent(snap: Snapshot) -> tuple[int, list[tuple[Node, NodeClaim | None, float]]]:
    """Nodes that should have GPUs (how many), and those advertising none at all. Reads records only."""
    idx = snap.index
    examined = 0
    out = []
    for node, claim in idx.gpu_nodes:  # a superset of the nodes that should have GPUs
        expected = node_should_have_gpus(node, claim)
        if expected <= 0:
            continue
        examined += 1
        if accelerator_total(node.allocatable) > 0 or accelerator_total(node.capacity) > 0:
            # Registered but marked unhealthy (capacity > allocatable) is gpu-allocatable-below-capacity.
            continue
        if node.meta.deleting:
            continue
        out.append((node, claim, expected))
    return examined, out


def _why_expected(node: Node, claim: NodeClaim | None) -> str:
    for key in ("karpenter.k8s.aws/instance-gpu-count", "nvidia.com/gpu.count", "cloud.google.com/gke-accelerator-count",
                "karpenter.k8s.aws/instance-accelerator-count"):
        if node.labels.get(key):
            return f"label {key}={node.labels[key]}"
    if claim is not None and (claim.capacity or claim.requests):
        return f"NodeClaim {claim.name}"
    if node.instance_type:
        return f"instance type {node.instance_type}"
    return "its GPU taint"
