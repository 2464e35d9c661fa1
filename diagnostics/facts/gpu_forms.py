"""Which form of NVIDIA GPU a pending pod asks for (whole, MIG profile, shared) against what its nodes offer.

pod-gpu-resource-mismatch reports the pods whose request no candidate node offers while the nodes offer
another form of the same GPUs; pod-no-nodepool-fits leaves those pods to it. Both read `mismatches`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from diagnostics.facts.gpu_units import MIG_PREFIX, SHARED
from diagnostics.facts.matching import node_matches
from diagnostics.facts.provider import facts
from diagnostics.model import ObjectRef
from diagnostics.records import Node, Pod
from diagnostics.snapshot import Snapshot

GPU = "nvidia.com/gpu"


def wanted(pod: Pod) -> list[tuple[str, float]]:
    """The pod's requests of a form of NVIDIA GPU."""
    return [(k, v) for k, v in pod.requests.items() if v > 0 and (k in (GPU, SHARED) or k.startswith(MIG_PREFIX))]


def offered(node: Node) -> dict[str, float]:
    """The forms of NVIDIA GPU the node has in capacity."""
    return {k: v for k, v in node.capacity.items() if v > 0 and (k in (GPU, SHARED) or k.startswith(MIG_PREFIX))}


@dataclass(frozen=True, slots=True)
class Mismatch:
    resource: str
    want: float
    nodes: tuple[Node, ...]
    offered: Mapping[str, float]


def _mismatch(pod: Pod, gpu_nodes: list[Node], cache: dict[object, Mismatch | None]) -> Mismatch | None:
    """The first request no candidate node offers while they offer another form of NVIDIA GPUs (by pod shape)."""
    for res, want in wanted(pod):
        key = (res, tuple(sorted(pod.node_selector.items())), pod.required_affinity)
        if key not in cache:
            cands = [n for n in gpu_nodes if node_matches(pod.node_selector, pod.required_affinity, n.labels)]
            total: dict[str, float] = {}
            for n in cands:
                for k, v in offered(n).items():
                    total[k] = total.get(k, 0.0) + v
            cache[key] = (Mismatch(res, want, tuple(n for n in cands if offered(n)), total)
                          if total and res not in total else None)
        found = cache[key]
        if found is not None:
            return Mismatch(res, want, found.nodes, found.offered)
    return None


def mismatches(snap: Snapshot) -> tuple[int, dict[ObjectRef, tuple[Pod, Mismatch]]]:
    """Pending NVIDIA GPU pods (how many), and those asking for a form of GPU their nodes do not offer."""
    if not snap.status("nodes").state.usable:
        return 0, {}
    return _mismatches(snap)


@facts(reads=("pending", "nodes", "nodeclaims"))
def _mismatches(snap: Snapshot) -> tuple[int, dict[ObjectRef, tuple[Pod, Mismatch]]]:
    """Keyed on the pending pods (not every pod): a burst of changes to bound pods costs nothing here."""
    pending = snap.index.pending_gpu_pods
    out: dict[ObjectRef, tuple[Pod, Mismatch]] = {}
    if not pending:
        return 0, out
    gpu_nodes = [n for n, _ in snap.index.gpu_nodes if not n.meta.deleting]
    cache: dict[object, Mismatch | None] = {}
    examined = 0
    for pod in pending:
        if not wanted(pod):
            continue
        examined += 1
        m = _mismatch(pod, gpu_nodes, cache)
        if m is not None:
            out[pod.ref] = (pod, m)
    return examined, out
