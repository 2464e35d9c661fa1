"""The chain an on-call engineer follows: pod -> NodeClaim -> node -> NodePool -> EC2NodeClass."""

from __future__ import annotations

from diagnostics.messages import parse_nominated
from diagnostics.model import ObjectRef
from diagnostics.snapshot import Snapshot


def nominated_claim(snap: Snapshot, ns: str, name: str) -> str:
    """NodeClaim a pending pod waits for, from Karpenter's latest `Nominated` event."""
    for e in reversed(snap.index.events("Pod", name, ns)):
        nom = parse_nominated(e.message) if e.reason == "Nominated" else None
        if nom is not None and nom.nodeclaim:
            return nom.nodeclaim
    return ""


def chain(snap: Snapshot, ref: ObjectRef) -> list[ObjectRef]:
    """Objects related to `ref`, in drill-down order, including `ref` itself."""
    idx = snap.index
    out: list[ObjectRef] = [ref]
    claim = None
    node = None
    pool = None
    if ref.kind == "Pod":
        pod = idx.pod.get((ref.namespace or "", ref.name))
        if pod is not None:
            node = idx.node.get(pod.node_name or pod.nominated_node)
            claim_name = nominated_claim(snap, pod.namespace, pod.name)
            claim = idx.nodeclaim.get(claim_name) or (idx.nodeclaim_by_node.get(node.name) if node else None)
            if node is None and claim is not None:
                node = idx.node.get(claim.node_name)
    elif ref.kind == "NodeClaim":
        claim = idx.nodeclaim.get(ref.name)
        node = idx.node.get(claim.node_name) if claim else None
    elif ref.kind == "Node":
        node = idx.node.get(ref.name)
        claim = idx.nodeclaim_by_node.get(ref.name)
    elif ref.kind == "NodePool":
        pool = idx.nodepool.get(ref.name)
    if claim is not None:
        out.append(claim.ref)
    if node is not None:
        out.append(node.ref)
    if pool is None:
        pool_name = (claim.nodepool if claim else "") or (node.nodepool if node else "")
        pool = idx.nodepool.get(pool_name)
    if pool is not None:
        out.append(pool.ref)
        if pool.node_class:
            out.append(ObjectRef("EC2NodeClass", pool.node_class))
    return list(dict.fromkeys(out))
