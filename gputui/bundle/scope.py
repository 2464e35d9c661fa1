"""What a bundle holds and what it is about, decided from the Snapshot `collect` produced.

The same objects go in whatever the target, so a bundle replays to the findings a cluster-wide
`diagnose` gives (checks judge a pod against every NodePool, every GPU node's free GPUs and every
DaemonSet's overhead): every node, NodeClaim, NodePool, EC2NodeClass, DaemonSet, PDB, RuntimeClass and
namespace; the GPU-related pods (requesting accelerators, on a GPU node or nominated to one, GPU
DaemonSet pods); events about those objects and about any Node/NodeClaim/NodePool/EC2NodeClass (also
deleted ones: a NodeClaim that failed to launch is gone, its events are the proof); the owner chain
(ReplicaSet -> Deployment, Job, StatefulSet) of the target pod and of pending GPU pods.
A target narrows what is *about* the problem: the report is focused on it, and logs and nvidia-smi
cover its nodes (the chain pod -> NodeClaim -> node -> NodePool -> EC2NodeClass) only.
"""

from __future__ import annotations

from dataclasses import dataclass

from diagnostics.facts.dra import pod_claims
from diagnostics.facts.gpu_components import device_plugin_daemonsets, operator_daemonsets
from diagnostics.model import ObjectRef
from diagnostics.records import DaemonSet, Pod
from diagnostics.snapshot import Snapshot, is_gpu_node

Key = tuple[str, str]  # (namespace or "", name)

GPU_HINTS = ("nvidia", "gpu", "dcgm", "neuron", "amdgpu", "habana")
"""Name/namespace/image fragments of GPU DaemonSets beyond the device plugin and GPU Operator ones."""
MAX_OWNER_ROOTS = 50


@dataclass
class Selection:
    """What to keep and what the target is about, decided from the Snapshot `collect` produced."""

    gpu_nodes: list[str]
    affected_nodes: list[str]
    """The nodes whose device-plugin logs and nvidia-smi matter (all GPU nodes for the whole cluster)."""
    pods: set[Key] | None
    """GPU-related pods by key (whole cluster); None for a target, where the pod lists decide."""
    owner_roots: list[Key]
    gpu_daemonsets: set[Key]
    names: dict[str, set[str]]
    """Affected object names by kind (Node, NodeClaim, NodePool, EC2NodeClass, Pod as ns/name), for log filters."""
    scope: dict[str, str]


def gpu_daemonsets(snap: Snapshot) -> list[DaemonSet]:
    """Device plugin, GPU Operator and other accelerator DaemonSets (DCGM exporter, GFD, Neuron...)."""
    known = {ds.ref for ds in (*device_plugin_daemonsets(snap), *operator_daemonsets(snap))}
    out = []
    for ds in snap.daemonsets:
        text = " ".join((ds.meta.name, ds.meta.namespace or "", *ds.images, *ds.meta.labels.values())).lower()
        if ds.ref in known or any(h in text for h in GPU_HINTS):
            out.append(ds)
    return out


def key(ns: str | None, name: str) -> Key:
    return (ns or "", name)


def gpu_related(pod: Pod, gpu_nodes: set[str], dss: set[Key]) -> bool:
    """A pod that asks for accelerators (extended resources or DRA ResourceClaims), runs on or is nominated to a
    GPU node, or belongs to a GPU DaemonSet."""
    return (pod.wants_accelerator or pod.node_name in gpu_nodes or pod.nominated_node in gpu_nodes
            or (pod.pending and bool(pod_claims(pod)))
            or any(o.get("kind") == "DaemonSet" and (pod.namespace, str(o.get("name"))) in dss
                   for o in pod.meta.owners))


def select(snap: Snapshot, target: ObjectRef | None) -> Selection:
    from diagnostics.relations import chain

    idx = snap.index
    gpu_nodes = [n.name for n in snap.nodes if is_gpu_node(n, idx.nodeclaim_by_node.get(n.name))]
    dss = {key(ds.meta.namespace, ds.meta.name) for ds in gpu_daemonsets(snap)}
    names: dict[str, set[str]] = {k: set() for k in ("Node", "NodeClaim", "NodePool", "EC2NodeClass", "Pod")}
    roots = [key(p.namespace, p.name) for p in idx.pending_gpu_pods][:MAX_OWNER_ROOTS]
    scope = {"pods": "GPU-related pods: requesting accelerators, on a GPU node or nominated to one, GPU "
                     "DaemonSet pods",
             "events": "events about the objects kept and about any Node/NodeClaim/NodePool/EC2NodeClass"}
    pods: set[Key] | None
    if target is None:
        affected = gpu_nodes
        pods = {key(p.namespace, p.name) for p in snap.pods if gpu_related(p, set(gpu_nodes), dss)}
        names["Node"] |= set(affected)
        names["NodeClaim"] |= {c.name for c in snap.nodeclaims}
        names["NodePool"] |= {p.name for p in snap.nodepools}
        names["EC2NodeClass"] |= {c.name for c in snap.ec2nodeclasses}
        names["Pod"] |= {f"{ns}/{name}" for ns, name in pods}
    else:
        pods = None
        refs = chain(snap, target)
        affected = [r.name for r in refs if r.kind == "Node"]
        if target.kind == "NodePool":
            affected += [n.name for n in idx.nodes_by_pool.get(target.name, [])]
            names["NodeClaim"] |= {c.name for c in idx.nodeclaims_by_pool.get(target.name, [])}
        if target.kind == "EC2NodeClass":
            for pool in idx.pools_by_class.get(target.name, []):
                names["NodePool"].add(pool.name)
                affected += [n.name for n in idx.nodes_by_pool.get(pool.name, [])]
        affected = list(dict.fromkeys(affected))
        for r in refs:
            names.setdefault(r.kind, set()).add(f"{r.namespace}/{r.name}" if r.kind == "Pod" else r.name)
        names["Node"] |= set(affected)
        for n in affected:
            claim = idx.nodeclaim_by_node.get(n)
            if claim is not None:
                names["NodeClaim"].add(claim.name)
        names["Pod"] |= {f"{p.namespace}/{p.name}" for n in affected for p in idx.pods_by_node.get(n, ())}
        if target.kind == "Pod":
            roots.insert(0, key(target.namespace, target.name))
    return Selection(gpu_nodes, affected, pods, list(dict.fromkeys(roots)), dss, names, scope)
