"""What the DCGM metric checks share: GPUs grouped by node, node context, and drain/reset commands."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from diagnostics.facts.metric_facts import GpuLabels, NodeResolver, Sample, usable
from diagnostics.model import Evidence, ObjectRef
from diagnostics.snapshot import Snapshot

DEBUG_IMAGE = "ubuntu:22.04"


def gpus_by_node(samples: Iterable[Sample], resolver: NodeResolver, *,
                 skip_mig: bool = False) -> dict[str, list[tuple[GpuLabels, Sample]]]:
    """Usable samples per node name, GPUs in index order; one entry per GPU (the first sample wins)."""
    out: dict[str, list[tuple[GpuLabels, Sample]]] = defaultdict(list)
    seen: set[tuple[str, str, str, str]] = set()
    for s in samples:
        if not usable(s.value):
            continue
        gpu = GpuLabels.of(s.labels)
        if skip_mig and gpu.mig:
            continue
        node = resolver.node(gpu) or "unknown"
        key = (node, *gpu.key)
        if key in seen:
            continue
        seen.add(key)
        out[node].append((gpu, s))
    for gpus in out.values():
        gpus.sort(key=lambda g: (_index(g[0].index), g[0].uuid, g[0].mig))
    return dict(out)


def _index(text: str) -> int:
    return int(text) if text.isdigit() else 10**6


def node_context(snap: Snapshot, node: str) -> tuple[list[Evidence], tuple[ObjectRef, ...]]:
    """Evidence that the node is unknown to the cluster (if so) and the node's NodeClaim as related."""
    ref = ObjectRef("Node", node)
    ev: list[Evidence] = []
    if snap.nodes and node not in snap.index.node:
        ev.append(Evidence.absence(ref, f"node {node}",
                                   note="no Node by this name in the cluster: it is gone, or dcgm-exporter names "
                                        "hosts differently (set NODE_NAME from spec.nodeName)"))
    claim = snap.index.nodeclaim_by_node.get(node)
    return ev, ((claim.ref,) if claim is not None else ())


def gpu_names(gpus: Iterable[GpuLabels], limit: int = 6) -> str:
    names = [g.describe().split(" (")[0] for g in gpus]
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def pods_of(gpus: Iterable[GpuLabels]) -> tuple[ObjectRef, ...]:
    refs = {g.pod_ref for g in gpus if g.pod_ref is not None}
    return tuple(sorted(r for r in refs if r is not None))


def debug_command(node: str, command: str) -> str:
    """A privileged debug pod on the node running `command` against the host (needs PSA privileged)."""
    return f"kubectl debug node/{node} -it --profile=sysadmin --image={DEBUG_IMAGE} -- chroot /host {command}"


def drain_commands(snap: Snapshot, node: str) -> tuple[str, ...]:
    return (f"kubectl cordon {node}",
            f"kubectl drain {node} --ignore-daemonsets --delete-emptydir-data")


def _instance_id(snap: Snapshot, node: str) -> str:
    n = snap.index.node.get(node)
    if n is None or not n.provider_id.startswith("aws://"):
        return ""
    return n.provider_id.rsplit("/", 1)[-1]


def replace_commands(snap: Snapshot, node: str) -> tuple[str, ...]:
    """Put the workload on other hardware: Karpenter replaces a deleted NodeClaim (draining it first)."""
    claim = snap.index.nodeclaim_by_node.get(node)
    if claim is not None:
        return (f"kubectl delete nodeclaim {claim.name}",)
    iid = _instance_id(snap, node)
    return (f"kubectl delete node {node}",) + ((f"aws ec2 terminate-instances --instance-ids {iid}",) if iid else ())


def reboot_commands(snap: Snapshot, node: str) -> tuple[str, ...]:
    """Reboot in place when the node is not Karpenter's; otherwise replacing it is as quick and cleaner."""
    claim = snap.index.nodeclaim_by_node.get(node)
    iid = _instance_id(snap, node)
    if claim is None and iid:
        return (f"aws ec2 reboot-instances --instance-ids {iid}",)
    return replace_commands(snap, node)
