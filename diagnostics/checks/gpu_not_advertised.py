"""A node that should have GPUs advertises none in allocatable."""

from __future__ import annotations

from collections.abc import Iterator

from diagnostics.gpu_components import device_plugin_diagnosis
from diagnostics.node_health import nominations, pending_nominated_to, waiting_pods
from diagnostics.model import Evidence, Finding, Remediation, Severity
from diagnostics.records import Node, NodeClaim, accelerator_total, accelerators
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot, node_should_have_gpus
from diagnostics.snapshot_memo import carried
from diagnostics.timeutil import human_age


@check(code="GT201", slug="gpu-not-advertised", title="GPU nodes advertise their GPUs",
       severity=Severity.ERROR, requires=("nodes",), optional=("nodeclaims", "daemonsets", "pods", "events"))
def gpu_not_advertised(snap: Snapshot) -> Iterator[Finding | int]:
    """A node that should have GPUs advertises none in `status.allocatable`.

    Why it matters:
    Pods requesting `nvidia.com/gpu` can never land there; Karpenter keeps the NodeClaim
    `Initialized=Unknown` (`ResourceNotRegistered`) forever - there is no initialization
    timeout - and pending pods stay nominated to it, so nothing replaces it.

    Fix:
    Get the NVIDIA device plugin (or GPU Operator) running on the node: make its DaemonSet
    tolerate the node's taints and match its labels, fix a crash-looping plugin (driver,
    NVML), or use a GPU AMI that ships the NVIDIA driver. Then the node advertises GPUs.
    """
    idx = snap.index
    examined, silent = carried(snap, "gt201-silent-nodes", ("nodes", "nodeclaims"), lambda: _silent(snap))
    yield examined
    nominated = nominations(snap) if silent else {}
    for node, claim, expected in silent:
        ev: list[Evidence] = [
            Evidence.field(node.ref, "status.allocatable", accelerators(node.allocatable) or "no accelerator resources",
                           note=f"expected {expected:g} GPU(s) from {_why_expected(node, claim)}"),
        ]
        if claim is not None:
            init = claim.condition("Initialized")
            if init is not None and init.status != "True":
                ev.append(Evidence.condition(claim.ref, init.as_dict(), snap.age(init.last_transition),
                                             note=f"stuck for {human_age(snap.age(init.last_transition))}"))
        cause, cause_ev, commands = device_plugin_diagnosis(snap, node)
        ev.extend(cause_ev)
        stuck = idx.events("Node", node.name)
        for e in stuck:
            if e.reason == "DisruptionBlocked" and "isn't initialized" in e.message:
                ev.append(Evidence.event(node.ref, e.reason, e.message, e.count, snap.age(e.last_seen)))
                break
        waiting = [p.ref for p in (waiting_pods(snap, claim, nominated) if claim else
                                   pending_nominated_to(snap, node.name))]
        yield Finding(
            subject=node.ref,
            title=f"{node.name} ({node.instance_type or 'GPU node'}) advertises 0 GPUs: {cause}",
            evidence=tuple(ev),
            remediation=Remediation(
                "Get the NVIDIA device plugin running on this node; until then no GPU pod can use it. "
                "If it cannot be fixed quickly, cordon and delete the node so Karpenter launches a fresh one.",
                commands + (f"kubectl describe node {node.name}",
                            f"kubectl cordon {node.name} && kubectl delete node {node.name}"),
            ),
            related=tuple(waiting) + ((claim.ref,) if claim else ()),
        )


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


def _why_expected(node, claim) -> str:  # type: ignore[no-untyped-def]
    for key in ("karpenter.k8s.aws/instance-gpu-count", "nvidia.com/gpu.count", "cloud.google.com/gke-accelerator-count",
                "karpenter.k8s.aws/instance-accelerator-count"):
        if node.labels.get(key):
            return f"label {key}={node.labels[key]}"
    if claim is not None and (claim.capacity or claim.requests):
        return f"NodeClaim {claim.name}"
    if node.instance_type:
        return f"instance type {node.instance_type}"
    return "its GPU taint"
