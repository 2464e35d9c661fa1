"""A GPU node offers fewer GPUs than it has: devices marked unhealthy, or GPUs missing from the node."""

from __future__ import annotations

import re
from collections.abc import Iterator

from diagnostics.facts.accelerator_stack import health_command, health_tool
from diagnostics.facts.gpu_units import gpu_units
from diagnostics.facts.provider import facts
from diagnostics.facts.gpu_components import host_evidence, plugin_on_host
from diagnostics.model import Evidence, Finding, Remediation, Severity
from diagnostics.facts.node_health import (
    blast_radius,
    clip,
    device_plugin_pod,
    gpu_events,
    gpu_trouble_conditions,
    restart_info,
    since,
    unhealthy_accelerators,
    xids_in,
)
from diagnostics.records import Node, NodeClaim, accelerator_total, accelerators
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot, node_should_have_gpus
from diagnostics.facts.xid import lookup

# Karpenter consistency controller (core nodeclaim/consistency/nodeshape.go), Warning on the NodeClaim.
_CONSISTENCY_RE = re.compile(r"expected (?P<want>\S+) of resource (?P<res>\S+), but found (?P<got>\S+) "
                             r"\((?P<pct>[\d.]+)% of expected\)")


@check(code="GT202", slug="gpu-allocatable-below-capacity", title="GPU nodes offer all their GPUs",
       severity=Severity.ERROR, requires=("nodes",), optional=("nodeclaims", "events", "pods", "daemonsets"))
def gpu_allocatable_below_capacity(snap: Snapshot) -> Iterator[Finding | int]:
    """A GPU node's `status.allocatable` has fewer accelerators than its capacity or its instance type.

    Why it matters:
    When a GPU faults (usually an Xid such as 79 "fallen off the bus" or 48 double-bit ECC), the
    NVIDIA device plugin reports it Unhealthy and the kubelet drops it from allocatable while
    keeping it in capacity. The plugin never marks it healthy again until its pod restarts, so
    the node silently runs short: 8-GPU pods stay Pending and Karpenter, seeing a "full" node,
    may launch another expensive one. A GPU missing from capacity too is gone from the PCIe bus.

    Fix:
    Run `gputui debug node/NAME` to see which GPU is faulty and its Xid. If the GPU is healthy
    again, restart the device-plugin pod on that node (running GPU pods are not touched). If it
    is gone or keeps faulting, cordon and drain the node and let Karpenter replace it.
    """
    examined, short = _short_nodes(snap)
    yield examined
    for args in short:
        yield _finding(snap, *args)


@facts(reads=("nodes", "nodeclaims"))
def _short_nodes(snap: Snapshot) -> tuple[int, list[tuple[Node, NodeClaim | None, float, float, float,
                                                          dict[str, float], float]]]:
    """GPU nodes (how many), and those offering fewer accelerators than they have. Reads records only."""
    idx = snap.index
    examined = 0
    out = []
    for node, claim in idx.gpu_nodes:  # expected > 0 or capacity > 0
        expected = node_should_have_gpus(node, claim)
        cap_total = accelerator_total(node.capacity)
        examined += 1
        if node.meta.deleting:
            continue
        alloc_total = accelerator_total(node.allocatable)
        unhealthy = unhealthy_accelerators(node)
        missing = expected - cap_total if expected > cap_total and cap_total > 0 else 0.0
        if not unhealthy and not missing:
            continue
        out.append((node, claim, expected, cap_total, alloc_total, unhealthy, missing))
    return examined, out


def _finding(snap: Snapshot, node: Node, claim: NodeClaim | None, expected: float, cap_total: float,
             alloc_total: float, unhealthy: dict[str, float], missing: float) -> Finding:
    usable = alloc_total
    should = max(expected, cap_total)
    ev: list[Evidence] = [
        Evidence.field(node.ref, "status.capacity", accelerators(node.capacity) or "no accelerator resources",
                       note="devices the device plugin registered (unhealthy ones stay here)"),
        Evidence.field(node.ref, "status.allocatable", accelerators(node.allocatable) or "no accelerator resources",
                       note=(f"{sum(unhealthy.values()):g} device(s) withheld as unhealthy" if unhealthy
                             else "matches capacity")),
    ]
    if missing:
        ev.append(Evidence.field(node.ref, _expected_path(node, claim), f"{expected:g}",
                                 note=f"the instance should have {expected:g} GPUs; only {cap_total:g} are registered"))
    causes: list[str] = []
    units = gpu_units(node)
    if unhealthy:
        n = sum(unhealthy.values())
        causes.append(f"{n:g} {_unit_of(unhealthy, node)} marked unhealthy by the device plugin")
    if missing:
        causes.append(f"{missing:g} GPU(s) missing from the node")

    # Karpenter's consistency check compares node capacity with the NodeClaim's (every 10 min, <90% -> Warning).
    if claim is not None:
        for e in reversed(snap.index.events("NodeClaim", claim.name)):
            if e.reason == "FailedConsistencyCheck":
                m = _CONSISTENCY_RE.search(e.message)
                ev.append(Evidence.event(claim.ref, e.reason, clip(e.message), e.count, snap.age(e.last_seen),
                                         type_=e.type,
                                         note=(f"Karpenter expected {m['want']} {m['res']}, node has {m['got']}"
                                               if m else "")))
                break
        consistent = claim.condition("ConsistentStateFound")
        if consistent is not None and consistent.status == "False":
            ev.append(Evidence.condition(claim.ref, consistent.as_dict(), snap.age(consistent.last_transition)))

    xids: list[int] = []
    for c in gpu_trouble_conditions(node):
        ev.append(Evidence.condition(node.ref, c.as_dict(), snap.age(c.last_transition),
                                     note=f"since {since(snap, c.last_transition)}"))
        xids += xids_in(c.reason, c.message)
    for e in gpu_events(snap, node.name):
        ev.append(Evidence.event(node.ref, e.reason, clip(e.message), e.count, snap.age(e.last_seen), type_=e.type))
        xids += xids_in(e.reason, e.message)

    debug, tool = health_command(node), health_tool(node)
    commands: list[str] = [debug]
    plugin, ds = device_plugin_pod(snap, node)
    if plugin is not None:
        info = restart_info(snap, plugin)
        ev.append(Evidence.field(plugin.ref, "status.containerStatuses", info,
                                 note="the plugin re-registers GPUs as healthy only when this pod restarts"))
        restart = f"kubectl -n {plugin.namespace} delete pod {plugin.name}"
        plugin_text = f"restart the device-plugin pod {plugin.namespace}/{plugin.name}"
    elif ds is not None and ds.selector:
        sel = ",".join(f"{k}={v}" for k, v in ds.selector.items())
        restart = (f"kubectl -n {ds.meta.namespace} delete pod -l {sel} "
                   f"--field-selector spec.nodeName={node.name}")
        plugin_text = f"restart the {ds.meta.name} pod on this node"
    elif host := plugin_on_host(node):
        restart = ""
        plugin_text = f"the device plugin runs as a host service on {host}: reboot or replace the node"
        ev.append(host_evidence(node, host, "no device-plugin pod to restart"))
    else:
        restart = f"kubectl get pods -A -o wide --field-selector spec.nodeName={node.name} | grep -i device-plugin"
        plugin_text = "restart the device-plugin pod on this node"
    if restart:
        commands.append(restart)

    radius = blast_radius(snap, node, claim)
    drain = [f"kubectl cordon {node.name}",
             f"kubectl drain {node.name} --ignore-daemonsets --delete-emptydir-data"]
    if claim is not None:
        drain.append(f"kubectl delete nodeclaim {claim.name}")
    commands += drain
    replace = "let Karpenter replace it" if claim is not None else "replace it"
    if missing and not unhealthy:
        text = (f"{missing:g} GPU(s) are not visible to the driver at all: restarting the device plugin will not "
                f"bring them back. Confirm with `{debug}`, then cordon, drain and replace the "
                f"node. Blast radius of draining: {radius.describe()}.")
    elif fatal := sorted({x for x in xids if lookup(x).drain}):
        # A GPU that fell off the bus or lost memory is not healthy because it answers again: restarting the
        # plugin would hand it back to the scheduler.
        worst = lookup(max(fatal, key=lambda x: lookup(x).rank))
        text = (f"Xid {', '.join(str(x) for x in fatal)} ({worst.meaning}) takes the GPU out of service until "
                f"it is reset or the node rebooted; do not restart the device plugin to re-register it. Cordon and "
                f"drain the node and {replace}; `{debug}` shows which GPUs are still listed. Blast radius "
                f"of draining: {radius.describe()}.")
        if restart in commands:
            commands.remove(restart)
    else:
        what = "the faulty GPU and its Xid" if tool == "nvidia-smi" else "the faulty device"
        every = (f"lists all {should:g} of the node's GPUs and flags none" if tool == "nvidia-smi"
                 else "shows every device healthy")
        text = (f"Confirm {what} with `{debug}`. Only if {tool} {every}, "
                f"{plugin_text} (running GPU pods keep their GPUs; nothing is evicted). If a GPU "
                f"is missing or faults again, cordon and drain the node and {replace}. Blast radius "
                f"of draining: {radius.describe()}.")
    xid_note = f" after Xid {', '.join(str(x) for x in sorted(set(xids)))}" if xids else ""
    kind = node.instance_type or "GPU node"
    unit = "GPUs" if set(accelerators(node.capacity)) <= {"nvidia.com/gpu", "amd.com/gpu"} else "accelerator devices"
    if units.split:  # slices or replicas are not GPUs: say what they are and how many GPUs are behind them
        unit = f"{_unit_of(accelerators(node.capacity), node)} ({units.text()})"
    title = (f"{node.name} ({kind}) offers {usable:g} of {should:g} {unit}: "
             + " and ".join(causes) + xid_note)
    return Finding(
        subject=node.ref,
        title=title,
        evidence=tuple(ev),
        remediation=Remediation(text, tuple(dict.fromkeys(commands))),
        related=((claim.ref,) if claim else ()) + ((plugin.ref,) if plugin else ()) + radius.refs,
    )


def _expected_path(node: Node, claim: NodeClaim | None) -> str:
    for key in ("karpenter.k8s.aws/instance-gpu-count", "nvidia.com/gpu.count",
                "cloud.google.com/gke-accelerator-count", "karpenter.k8s.aws/instance-accelerator-count"):
        if node.labels.get(key):
            return f"metadata.labels[{key}]"
    if claim is not None:
        return f"nodeclaim/{claim.name} status.capacity"
    return "expected GPU count"


def _unit_of(resources: dict[str, float], node: Node) -> str:
    """What these resources count on this node: MIG slices, shared GPU replicas or GPUs."""
    units = gpu_units(node, resources)
    if units.slices and not units.shared and not units.whole:
        return "MIG slice(s)"
    if units.shared and not units.slices and not units.whole:
        return "shared GPU replica(s)"
    if units.split:
        return "GPU device(s) and slice(s)"
    return "GPU(s)"
