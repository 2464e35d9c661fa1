"""A pending GPU pod lacks the toleration for the taint of the only NodePools / GPU nodes that could serve it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from diagnostics.facts.messages import TAINT as K_TAINT
from diagnostics.model import CheckSkipped, Evidence, Finding, ObjectRef, Remediation, Severity
from diagnostics.facts.pending import karpenter_ignores, placeable
from diagnostics.facts.pod_events import PodScheduling, event_evidence, events_note
from diagnostics.facts.pod_fit import NodeFit, PodFit, PoolFit, accel_text
from diagnostics.facts.provider import derived
from diagnostics.records import Pod, Taint
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot
from diagnostics.facts.workloads import (
    Workload,
    owner_workload,
    template_tolerations,
    toleration_commands,
    toleration_str,
    toleration_yaml,
)


@dataclass
class _Group:
    pods: list[Pod] = field(default_factory=list)
    pools: list[PoolFit] = field(default_factory=list)
    nodes: list[NodeFit] = field(default_factory=list)
    taints: list[Taint] = field(default_factory=list)
    sched: PodScheduling = field(default_factory=PodScheduling)
    workload: Workload | None = None
    node_refs: tuple[ObjectRef, ...] = ()
    refs: list[ObjectRef] = field(default_factory=list)
    """The refs of `pods`."""


@check(code="GT401", slug="pod-gpu-taint-not-tolerated",
       title="Pending GPU pods tolerate the taints of their GPU capacity", severity=Severity.ERROR,
       pending_pods_suffice=True, requires=("pods",), optional=("nodepools", "nodes", "events", "nodeclaims"))
def pod_gpu_taint_not_tolerated(snap: Snapshot) -> Iterator[Finding | int]:
    """A pending GPU pod does not tolerate the taint of the NodePool (or GPU node) that could otherwise serve it.

    Why it matters:
    GPU NodePools are usually tainted (`nvidia.com/gpu=true:NoSchedule`) so that only GPU pods
    land there. A pod without the matching toleration is skipped by Karpenter for that NodePool
    (`did not tolerate taint`) and by kube-scheduler for the existing GPU nodes, so it stays
    Pending forever while the GPU capacity sits idle or is never launched.

    Fix:
    Add the toleration to the pod template of the owning workload (Deployment, StatefulSet,
    CronJob; a Job must be re-created). Only `spec.template.spec.taints` need tolerating:
    `startupTaints` are removed before pods are placed.
    """
    pools, nodes = snap.status("nodepools"), snap.status("nodes")
    if not pools.state.usable and not nodes.state.usable:  # no taint to compare with: not a pass
        raise CheckSkipped(f"{pools.reason()}; {nodes.reason()}", blind=not (pools.state.absent and nodes.state.absent))
    groups: dict[tuple[object, ...], _Group] = {}
    considered, todo = placeable(snap)
    yield considered
    for t, pf in todo:
        if pf.servable:
            continue
        only = _taint_only(snap, pf)
        if only is not None and only.pools and karpenter_ignores(t):
            only = _nodes_only(only)  # Karpenter launches nothing for it: a pool's taint is not why it waits
        if only is None:
            continue
        wl = t.workload
        g = groups.get((wl.ref, only.key))
        if g is None:
            g = groups[(wl.ref, only.key)] = _Group(pools=only.pools, nodes=only.nodes, taints=only.taints,
                                                     sched=t.sched, workload=wl, node_refs=only.node_refs)
        g.pods.append(t.pod)
        g.refs.append(t.ref)
    for g in groups.values():
        yield _finding(snap, g)


@dataclass(frozen=True, slots=True)
class _TaintOnly:
    """What a PodFit says a toleration alone would open up, and what groups pods that share it."""

    pools: list[PoolFit]
    nodes: list[NodeFit]
    taints: list[Taint]
    key: tuple[object, ...]
    """The taints, NodePool names and node names: pods of one workload with the same key share a finding."""
    node_refs: tuple[ObjectRef, ...]


@derived
def _taint_only(pf: PodFit) -> _TaintOnly | None:
    """pf.taint_only() and what follows from it, once per PodFit (replicas share theirs): it walks every
    candidate node, and there may be hundreds."""
    pools, nodes = pf.taint_only()
    if not pools and not nodes:
        return None
    fits: list[PoolFit | NodeFit] = [*pools, *nodes]
    taints = list(dict.fromkeys(t for f in fits for r in f.reasons for t in r.taints))
    key = (tuple(str(t) for t in taints), tuple(p.pool.name for p in pools), tuple(n.node.name for n in nodes))
    return _TaintOnly(pools, nodes, taints, key, tuple(n.node.ref for n in nodes))


def _nodes_only(only: _TaintOnly) -> _TaintOnly | None:
    """`only` without its NodePools (None when no node is left)."""
    if not only.nodes:
        return None
    taints = list(dict.fromkeys(t for n in only.nodes for r in n.reasons for t in r.taints))
    return _TaintOnly([], only.nodes, taints, (tuple(str(t) for t in taints), (), only.key[2]), only.node_refs)


def _finding(snap: Snapshot, g: _Group) -> Finding:
    pod = g.pods[0]
    wl = g.workload or owner_workload(pod)
    taint_text = ", ".join(str(t) for t in g.taints)
    where = []
    if g.pools:
        where.append("NodePool " + ", ".join(p.pool.name for p in g.pools))
    if g.nodes:
        names = [n.node.name for n in g.nodes]
        where.append(f"GPU node {names[0]}" + (f" (+{len(names) - 1} more)" if len(names) > 1 else ""))
    more = f" (+{len(g.pods) - 1} more pods of {wl})" if len(g.pods) > 1 else ""
    title = (f"{pod.namespace}/{pod.name} ({accel_text(pod.requests)}) does not tolerate taint {taint_text} "
             f"of {' and '.join(where)}{more}")
    ev: list[Evidence] = []
    for p in g.pools:
        ev.append(Evidence.field(p.pool.ref, "spec.template.spec.taints", [str(t) for r in p.reasons for t in r.taints],
                                 note="the only obstacle: otherwise this NodePool can launch a node for the pod"))
    for n in g.nodes[:3]:
        kind = n.node.instance_type or "GPU node"
        # Free only if every pod on it was read (`diagnose pod/X` reads few nodes' pods): never claim it blindly.
        free = (f"{kind} has free {accel_text(pod.requests)}" if snap.all_pods_read_on(n.node.name) else
                f"{kind} advertises {accel_text(n.node.allocatable)}; its pods were not read, so how much is free "
                "is not known")
        ev.append(Evidence.field(n.node.ref, "spec.taints", [str(t) for r in n.reasons for t in r.taints], note=free))
    own = template_tolerations(pod)
    shown = [toleration_str(t) for t in pod.tolerations
             if any(o.get("key", "") == t.key and o.get("effect", "") == t.effect for o in own)]
    ev.append(Evidence.field(pod.ref, "spec.tolerations", shown or "none",
                             note="besides the default not-ready/unreachable ones" if len(own) < len(pod.tolerations)
                             else ""))
    km = g.sched.karpenter_msg
    if g.sched.karpenter is not None and km is not None:
        said = [f.taint for f in km.of(K_TAINT) if f.taint is not None]
        agree = any(str(t) in {str(x) for x in g.taints} for t in said)
        note = ("Karpenter reports the same taint" if agree else
                f"Karpenter ({km.generation} wording) says: " + ", ".join(sorted(km.kinds())))
        ev.extend(event_evidence(snap, pod, g.sched.karpenter, note=note))
    ev.extend(event_evidence(snap, pod, g.sched.scheduler))
    ev.extend(events_note(snap))
    commands = toleration_commands(pod, g.taints) + (f"kubectl -n {pod.namespace} describe pod {pod.name}",)
    target = "the pod" if wl.kind == "Pod" else f"the pod template of {wl.kind} {wl.namespace}/{wl.name}"
    text = (f"Add to {target}:\n{toleration_yaml(g.taints)}\n"
            "If the taint is not meant to keep this workload off, remove it from the NodePool instead.")
    if wl.immutable:
        text += " A Job's pod template is immutable: re-create the Job with the toleration."
    related: list[ObjectRef] = g.refs[1:] + [p.pool.ref for p in g.pools] + list(g.node_refs)
    if wl.kind != "Pod":
        related.append(wl.ref)
    return Finding(subject=pod.ref, title=title, evidence=tuple(ev),
                   remediation=Remediation(text, commands), related=tuple(related))

