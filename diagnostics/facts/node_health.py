"""Node facts the node/NodeClaim health checks share: blast radius, device-plugin pod, GPU health conditions."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from diagnostics.facts.gpu_components import (
    DEVICE_PLUGIN_HINTS,
    device_plugin_daemonsets,
    network_plugin,
    pod_of,
)
from diagnostics.facts.messages import parse_nominated
from diagnostics.facts.provider import facts
from diagnostics.model import ObjectRef
from diagnostics.records import (
    Condition,
    DaemonSet,
    Event,
    Node,
    NodeClaim,
    Pod,
    accelerator_total,
    accelerators,
)
from diagnostics.snapshot import Snapshot, node_should_have_gpus
from diagnostics.timeutil import human_age
from diagnostics.wording import counted, noun

MESSAGE_LIMIT = 300
"""Evidence carries at most this many characters of a message (Karpenter itself truncates to 300)."""

# Karpenter AWS repair policies (karpenter-facts 1.9): condition type -> (bad status, toleration seconds).
REPAIR_POLICIES: Mapping[str, tuple[str, float]] = {
    "Ready": ("False", 1800.0),
    "AcceleratedHardwareReady": ("False", 600.0),
    "StorageReady": ("False", 1800.0),
    "NetworkingReady": ("False", 1800.0),
    "KernelReady": ("False", 1800.0),
    "ContainerRuntimeReady": ("False", 1800.0),
}
READY_UNKNOWN_TOLERATION = 1800.0
"""Karpenter also repairs `Ready=Unknown` after 30 minutes."""

_KUBELET_CONDITIONS = frozenset({"Ready", "MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"})
_GPU_WORDS = ("gpu", "xid", "nvidia", "nvlink", "accelerat", "pcie", "neuron", "dcgm")


def clip(text: str | None, limit: int = MESSAGE_LIMIT) -> str:
    """A message cut to `limit` characters, marked when cut."""
    s = (text or "").strip()
    return s if len(s) <= limit else s[:limit].rstrip() + "..."


def instance_id(provider_id: str) -> str:
    """EC2 instance ID from `aws:///us-east-1b/i-0abc...`; '' for other providers."""
    last = provider_id.rstrip("/").rsplit("/", 1)[-1] if provider_id else ""
    return last if last.startswith("i-") else ""


def since(snap: Snapshot, when: datetime | None) -> str:
    """'12m' for a past instant, '?' when unknown."""
    return human_age(snap.age(when))


def stamp(when: datetime | None) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ") if when else "?"


# --- GPU trouble conditions -----------------------------------------------------------------

def is_gpu_condition(type_: str) -> bool:
    low = type_.lower()
    return type_ not in _KUBELET_CONDITIONS and any(w in low for w in _GPU_WORDS)


def condition_is_bad(c: Condition) -> bool:
    """NPD semantics: problem conditions (`XidCriticalError`, `GPUMissing`) are bad when True;
    health conditions (`AcceleratedHardwareReady`, `GPUHealthy`) are bad when False."""
    if c.type.endswith(("Ready", "Healthy", "Available", "OK")):
        return c.status == "False"
    return c.status == "True"


def gpu_trouble_conditions(node: Node) -> list[Condition]:
    """GPU health conditions in a bad state: EKS node monitoring agent, GKE device plugin, AKS NPD, custom NPD rules."""
    return [c for c in node.conditions if is_gpu_condition(c.type) and condition_is_bad(c)]


def repair_deadline(c: Condition) -> datetime | None:
    """When Karpenter NodeRepair (feature gate NodeRepair=true) deletes a node for this condition, if it would."""
    policy = REPAIR_POLICIES.get(c.type)
    if c.last_transition is None or policy is None:
        return None
    bad, toleration = policy
    if c.type == "Ready" and c.status == "Unknown":
        toleration = READY_UNKNOWN_TOLERATION
    elif c.status != bad:
        return None
    return c.last_transition + timedelta(seconds=toleration)


_XID_RE = re.compile(r"(?<!s)xid(?:\s*\([^)]*\)\s*:\s*|[^0-9(]{0,12})(\d{1,3})(?!\d)", re.IGNORECASE)
"""An Xid code after `Xid`: the kernel's `NVRM: Xid (PCI:0000:3b:00): 79, pid=...` (its PCI address
is not the code), `NvidiaXID79Error`, `XID=48`, `detected XID-79`. Not NVSwitch `SXid` lines."""


def xids_in(*texts: str) -> list[int]:
    """Xid codes named in reasons/messages (`NVRM: Xid (PCI:...): 79`, `NvidiaXID79Error`, `Caught XID
    error, XID=48`, `{"79":true}`)."""
    found: list[int] = []
    for t in texts:
        for m in _XID_RE.finditer(t or ""):
            found.append(int(m.group(1)))
        if t and t.lstrip().startswith("{"):  # GKE XidCriticalError reason is a JSON map of Xids
            found.extend(int(x) for x in re.findall(r'"(\d{1,3})"\s*:\s*true', t))
    return sorted(set(found))


def gpu_events(snap: Snapshot, node: str, limit: int = 3) -> list[Event]:
    """Newest events on the node that talk about GPU faults (GKE `XIDError`, NMA `NvidiaXID..` and
    `DCGMHealthCode..`, NPD rules)."""
    evs = [e for e in snap.index.events("Node", node)
           if any(w in (e.reason + " " + e.message[:400]).lower() for w in _GPU_WORDS)]
    return evs[-limit:]


# --- what a node carries --------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class BlastRadius:
    """What draining, rebooting or replacing a node takes down (DaemonSet pods come back by themselves)."""

    node: str
    pods: tuple[Pod, ...]
    gpu_pods: tuple[Pod, ...]
    gpus_in_use: float
    gpus_total: float
    known: bool = True
    """False when pods could not be read: the counts are then unknown, not zero."""

    def describe(self) -> str:
        if not self.known:
            return "unknown workload (pods not readable)"
        total = f" of {self.gpus_total:g}" if self.gpus_total else ""
        idle = f" ({counted(self.gpus_total, 'GPU')} idle)" if self.gpus_total else ""
        if not self.pods:
            return "no workload pods" + idle
        held = noun(self.gpus_total or self.gpus_in_use, "GPU")
        gpu = (f", {counted(len(self.gpu_pods), 'GPU pod')} holding {self.gpus_in_use:g}{total} {held}"
               if self.gpu_pods else f", no GPU pods{idle}")
        return f"{counted(len(self.pods), 'pod')}{gpu}"

    @property
    def refs(self) -> tuple[ObjectRef, ...]:
        return tuple(p.ref for p in self.gpu_pods) + tuple(p.ref for p in self.pods if p not in self.gpu_pods)

    def names(self, limit: int = 8) -> list[str]:
        shown = [f"{p.namespace}/{p.name}" + (f" ({counted(p.gpus, 'GPU')})" if p.gpus else "")
                 for p in (list(self.gpu_pods) + [p for p in self.pods if p not in self.gpu_pods])]
        return shown[:limit] + ([f"... {len(shown) - limit} more"] if len(shown) > limit else [])


def node_gpu_total(node: Node, claim: NodeClaim | None = None) -> float:
    return max(accelerator_total(node.capacity), node_should_have_gpus(node, claim))


def blast_radius(snap: Snapshot, node: Node, claim: NodeClaim | None = None) -> BlastRadius:
    """Workload pods (not DaemonSet, not finished) on the node and the GPUs they hold."""
    known = snap.status("pods").state.usable
    pods = tuple(p for p in snap.index.pods_by_node.get(node.name, ())
                 if not p.terminal and not p.is_daemonset) if known else ()
    gpu_pods = tuple(p for p in pods if p.gpus > 0)
    return BlastRadius(node.name, pods, gpu_pods, sum(p.gpus for p in gpu_pods), node_gpu_total(node, claim), known)


def unhealthy_accelerators(node: Node) -> dict[str, float]:
    """Per accelerator resource: devices in capacity but not allocatable (kubelet keeps unhealthy ones in capacity)."""
    cap, alloc = accelerators(node.capacity), node.allocatable
    return {k: v - alloc.get(k, 0.0) for k, v in cap.items() if v - alloc.get(k, 0.0) > 0}


# --- device plugin --------------------------------------------------------------------------

_VENDOR_WORDS = {"nvidia.com/": ("nvidia", "gpu"), "amd.com/": ("amd",), "aws.amazon.com/neuron": ("neuron",),
                 "habana.ai/": ("habana", "gaudi"), "gpu.intel.com/": ("intel",)}


def _vendor_words(node: Node) -> tuple[str, ...]:
    for key in list(node.capacity) + list(node.allocatable):
        for prefix, words in _VENDOR_WORDS.items():
            if key.startswith(prefix):
                return words
    return ("nvidia", "gpu")


def _is_accelerator_plugin(name: str, words: tuple[str, ...]) -> bool:
    low = name.lower()
    # EFA / SR-IOV / RDMA plugins are device plugins too, but not the ones that own GPUs.
    return "mps-control" not in low and not network_plugin(low) and \
        any(w in low for w in words)


def device_plugin_pod(snap: Snapshot, node: Node) -> tuple[Pod | None, DaemonSet | None]:
    """The accelerator device-plugin pod on the node (and its DaemonSet when known).

    Falls back to a DaemonSet-owned pod named like a device plugin when DaemonSets cannot be read.
    """
    if not snap.status("pods").state.usable:
        return None, None
    words = _vendor_words(node)
    plugins = device_plugin_daemonsets(snap) if snap.status("daemonsets").state.usable else []
    plugins = [ds for ds in plugins if _is_accelerator_plugin(ds.meta.name + " " + " ".join(ds.images), words)]
    for ds in plugins:
        pod = pod_of(snap, ds, node)
        if pod is not None:
            return pod, ds
    for p in snap.index.pods_by_node.get(node.name, ()):
        owner = next((o for o in p.meta.owners if o.get("kind") == "DaemonSet"), None)
        name = str(owner.get("name", "")) if owner else ""
        if name and any(h in name.lower() for h in DEVICE_PLUGIN_HINTS) and _is_accelerator_plugin(name, words):
            return p, next((ds for ds in plugins if ds.meta.name == name), None)
    return None, (plugins[0] if plugins else None)


def restart_info(snap: Snapshot, pod: Pod) -> dict[str, Any]:
    """Restarts and how long the plugin has been running: it only re-registers healthy GPUs when it restarts."""
    out: dict[str, Any] = {"phase": pod.phase, "restarts": sum(c.restart_count for c in pod.containers)}
    started = pod.started
    for c in pod.containers:
        if c.started_at is not None:
            started = c.started_at
    if started is not None:
        out["running_since"] = stamp(started)
        out["age"] = since(snap, started)
    bad = [c for c in pod.containers if not c.ready]
    if bad:
        out["not_ready"] = f"{bad[0].name}: {bad[0].reason or bad[0].state}"
    return out


# --- NodeClaim helpers ----------------------------------------------------------------------

_GENERATED_SUFFIX = re.compile(r"^(?P<pool>.+)-[a-z0-9]{5}$")


@facts(reads=("events", "pending"))
def nominations(snap: Snapshot) -> dict[str, list[Pod]]:
    """Pending pods per NodeClaim name, from Karpenter `Nominated` events ("Pod should schedule on: nodeclaim/X").

    Carried across snapshots while events and the pending pods are unchanged: callers must not modify it.
    """
    out: dict[str, list[Pod]] = defaultdict(list)
    pending = {(p.namespace, p.name): p for p in snap.index.pending}
    for e in snap.events:
        if e.involved_kind != "Pod" or e.reason != "Nominated":
            continue
        pod = pending.get((e.involved_namespace or "", e.involved_name))
        nom = parse_nominated(e.message)
        if pod is not None and nom is not None and nom.nodeclaim and pod not in out[nom.nodeclaim]:
            out[nom.nodeclaim].append(pod)
    return out


def waiting_pods(snap: Snapshot, claim: NodeClaim, nominated: Mapping[str, list[Pod]]) -> list[Pod]:
    """Pending pods that Karpenter or the scheduler expects to land on this claim's node."""
    pods = list(nominated.get(claim.name, ()))
    if claim.node_name:
        pods += [p for p in pending_nominated_to(snap, claim.node_name) if p not in pods]
    return pods


def pending_nominated_to(snap: Snapshot, node: str) -> list[Pod]:
    """Pending pods whose status.nominatedNodeName is `node`, in the index's order (do not modify)."""
    return _by_nominated_node(snap).get(node, [])


@facts(reads=("pending",))
def _by_nominated_node(snap: Snapshot) -> dict[str, list[Pod]]:
    """Pending pods grouped by status.nominatedNodeName, in order."""
    out: dict[str, list[Pod]] = {}
    for p in snap.index.pending:
        out.setdefault(p.nominated_node, []).append(p)
    return out


def pool_of_claim_name(snap: Snapshot, name: str) -> str:
    """NodePool of a NodeClaim that may be gone: Karpenter names claims `<nodepool>-<5 chars>`."""
    live = snap.index.nodeclaim.get(name)
    if live is not None and live.nodepool:
        return live.nodepool
    for pool in sorted(snap.index.nodepool, key=len, reverse=True):
        if name.startswith(pool + "-") and len(name) == len(pool) + 6:
            return pool
    m = _GENERATED_SUFFIX.match(name)
    return m.group("pool") if m else ""


def claim_age_from(snap: Snapshot, claim: NodeClaim, *types: str) -> tuple[float | None, datetime | None]:
    """Age since the first of the given conditions' lastTransitionTime, else since creation."""
    for t in types:
        c = claim.condition(t)
        if c is not None and c.last_transition is not None:
            return snap.age(c.last_transition), c.last_transition
    return snap.age(claim.meta.created), claim.meta.created


def accelerator_resource(message: str) -> str:
    """`nvidia.com/gpu` from 'Resource "nvidia.com/gpu" was requested but not registered'; '' when absent."""
    m = re.search(r'resource "([^"]+)"', message or "", re.IGNORECASE)
    return m.group(1) if m else ""


def gpu_not_advertised_would_report(node: Node | None, claim: NodeClaim | None) -> bool:
    """Mirror of gpu-not-advertised's firing rule, so other checks do not report the same node twice."""
    if node is None or node.meta.deleting:
        return False
    return node_should_have_gpus(node, claim) > 0 and accelerator_total(node.allocatable) <= 0
