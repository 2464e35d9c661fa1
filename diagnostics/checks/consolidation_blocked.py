"""An idle GPU node that outlived its NodePool's consolidateAfter, and what stops Karpenter removing it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from diagnostics.carry import CARRIED, Generations, PerItem
from diagnostics.disruption import (
    DO_NOT_DISRUPT,
    Blocker,
    NodeDisruption,
    blockers_for,
    do_not_disrupt_state,
    gather,
    refs_of,
)
from diagnostics.karpenter_controller import controller_namespace, logs_command
from diagnostics.model import Evidence, Finding, ObjectRef, Remediation, Severity
from diagnostics.records import Condition, Node, NodeClaim, Pod, accelerator_total, accelerators
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot, node_should_have_gpus
from diagnostics.snapshot_memo import carried
from diagnostics.timeutil import human_age, parse_go_duration

GRACE_SECONDS = 300.0
"""Time Karpenter may take after consolidateAfter (polling, simulation, validation) before we call it stuck."""
UNKNOWN_POOL_IDLE_SECONDS = 1800.0
"""Idle threshold when the NodePool (and so consolidateAfter) is unknown or consolidation is off."""
_DISRUPTING_TAINTS = ("karpenter.sh/disrupted", "karpenter.sh/disruption")


@check(code="GT501", slug="consolidation-blocked", title="Idle GPU nodes get consolidated",
       severity=Severity.WARNING, requires=("nodes", "pods"),
       optional=("nodeclaims", "nodepools", "pdbs", "events"))
def consolidation_blocked(snap: Snapshot) -> Iterator[Finding | int]:
    """A GPU node runs no GPU pod, has outlived `consolidateAfter`, and Karpenter still keeps it.

    Why it matters:
    Idle GPUs are the most expensive idle capacity in a cluster. Karpenter skips a node when a
    pod carries `karpenter.sh/do-not-disrupt`, the node itself is annotated, a PDB allows no
    eviction, a NodePool budget allows 0 disruptions right now, `consolidateAfter: Never`,
    or a `WhenEmpty` pool still has non-DaemonSet pods on the node.

    Fix:
    Remove the blocker the finding names (annotation, PDB, budget window, policy), or delete
    the NodeClaim to remove the node now.
    """
    if snap.status("pods").partial:
        return  # only some pods were read: an "idle" node may simply have unread pods
    examined, idle = carried(snap, "gt501-idle-gpu-nodes", ("nodes", "nodeclaims", "pods", "nodepools"),
                             lambda: _idle_gpu_nodes(snap))
    yield examined
    idx = snap.index
    logs_namespace: list[str] = []  # looked up once per run, if a finding needs it
    for node, claim, init, nd in idle:
        found, state = _NODES.lookup(idx, id(nd), (nd,))
        if not found or state is None:
            state = _NODES.store(id(nd), (nd,), (_facts(node, claim, init, nd), None, None))
        facts = state[0]
        idle_for = snap.age(facts.idle_since)
        if idle_for is None:
            continue
        consolidatable = facts.consolidatable
        if consolidatable is not None and consolidatable.status == "True":
            eligible = True
        elif facts.after is not None:
            eligible = idle_for >= facts.after + GRACE_SECONDS
        else:
            eligible = idle_for >= UNKNOWN_POOL_IDLE_SECONDS
        if not eligible:
            continue

        blockers = blockers_for(snap, nd)
        expired = tuple((p, why) for p in nd.annotated_pods
                        for blocks, why in (do_not_disrupt_state(p, snap.taken_at),) if not blocks)
        # Everything the finding reads besides the node's records: equal values give an equal finding,
        # so the last one is reused (an idle node's text changes about once a minute).
        if not blockers and not logs_namespace:
            logs_namespace.append(controller_namespace(snap))
        said = _Said(human_age(idle_for), f"{facts.gpus * idle_for / 3600:.1f}",
                     snap.age(consolidatable.last_transition) if consolidatable is not None else None,
                     expired, tuple(blockers), "" if blockers else logs_namespace[0])
        if state[1] == said:
            yield state[2]  # type: ignore[misc]
            continue
        finding = _finding(node, claim, nd, facts, said)
        _NODES.store(id(nd), (nd,), (facts, said, finding))
        yield finding


@dataclass(frozen=True, slots=True)
class _Said:
    """The time-dependent values an idle node's finding shows (see _finding)."""

    idle: str
    """human_age of the idle time."""
    gpu_hours: str
    consolidatable_age: float | None
    expired: tuple[tuple[Pod, str], ...]
    """Annotated pods whose do-not-disrupt no longer blocks, with why."""
    blockers: tuple[Blocker, ...]
    logs_namespace: str
    """Where the Karpenter controller runs ('' when there are blockers: the command is not shown)."""


_NODES: Generations[tuple[_Facts, _Said | None, Finding | None]] = Generations()
"""Per idle node (its NodeDisruption): the time-independent facts, and the last finding with what it said."""


def _finding(node: Node, claim: NodeClaim | None, nd: NodeDisruption, facts: _Facts, said: _Said) -> Finding:
    """The finding on an idle node: a function of its records and `said` alone (so it can be reused)."""
    blockers = said.blockers
    consolidatable = facts.consolidatable
    gpus = facts.gpus
    node_ref, claim_ref = facts.node_ref, facts.claim_ref
    ev: list[Evidence] = [Evidence.field(
        node_ref, "status.allocatable", facts.allocatable,
        note=f"{gpus:g} GPU(s) idle for {said.idle} (~{said.gpu_hours} GPU-hours): " + facts.pods_text)]
    if facts.last_pod_event is not None:
        ev.append(Evidence.field(claim_ref, "status.lastPodEventTime", facts.last_pod_event,
                                 note=f"last pod scheduled/removed {said.idle} ago"))
    if consolidatable is not None:
        ev.append(Evidence.condition(claim_ref or node_ref, consolidatable.as_dict(), said.consolidatable_age))
    if facts.pool_evidence is not None:
        ev.append(facts.pool_evidence)
    for p, why in said.expired:
        ev.append(Evidence.field(p.ref, f"metadata.annotations[{DO_NOT_DISRUPT}]",
                                 p.meta.annotations[DO_NOT_DISRUPT], note=f"{why}: no longer blocks"))
    for b in blockers:
        ev.extend(b.evidence)

    desc = f"{facts.desc} idle {said.idle}"
    if blockers:
        more = f" (+{len(blockers) - 1} more)" if len(blockers) > 1 else ""
        title = f"{desc} but not consolidated: {blockers[0].summary}{more}"
    else:
        title = f"{desc} but not consolidated: no blocker visible in the snapshot"
    commands = [c for b in blockers for c in b.commands]
    texts = [b.fix for b in blockers]
    if not blockers:
        texts.append("Nothing in the snapshot explains it: read the Karpenter controller log for this node.")
        commands.append(logs_command(said.logs_namespace, node.name))
    cost = (f"{gpus:g} GPU(s) have been idle for {said.idle} (~{said.gpu_hours} GPU-hours billed for "
            "nothing).")
    if claim is not None:
        texts.append("To remove the node now, delete its NodeClaim (Karpenter drains it, respecting PDBs).")
        commands.append(f"kubectl delete nodeclaim {claim.name}")
    return Finding(
        subject=node_ref,
        title=title,
        evidence=tuple(ev),
        remediation=Remediation(" ".join([cost, *dict.fromkeys(texts)]), tuple(dict.fromkeys(commands))),
        related=tuple(r for r in refs_of(blockers) if r != node_ref) + ((claim_ref,) if claim_ref else ()),
    )


@dataclass(frozen=True, slots=True)
class _Facts:
    """What a finding on an idle node says whatever the time: worked out once per idle node (its records)."""

    idle_since: datetime | None
    consolidatable: Condition | None
    after: float | None
    """The pool's consolidateAfter in seconds (None: unknown pool or Never)."""
    gpus: float
    node_ref: ObjectRef
    claim_ref: ObjectRef | None
    allocatable: object
    """status.allocatable's accelerators, or what the node should have."""
    pods_text: str
    last_pod_event: str | None
    pool_evidence: Evidence | None
    desc: str


def _facts(node: Node, claim: NodeClaim | None, init: Condition | None, nd: NodeDisruption) -> _Facts:
    """The time-independent part of the node's finding (idle nodes stay idle for many runs)."""
    pool = nd.pool
    gpus = accelerator_total(node.allocatable) or node_should_have_gpus(node, claim)
    return _Facts(
        idle_since=(claim.last_pod_event if claim else None) or (init.last_transition if init else None)
        or node.meta.created,
        consolidatable=claim.condition("Consolidatable") if claim else None,
        after=parse_go_duration(pool.consolidate_after) if pool else None,
        gpus=gpus,
        node_ref=node.ref,
        claim_ref=claim.ref if claim is not None else None,
        allocatable=accelerators(node.allocatable) or f"{gpus:g} GPU(s) expected",
        pods_text=("only DaemonSet pods on the node" if nd.empty else
                   f"{len(nd.workload_pods)} non-DaemonSet pod(s), none requests an accelerator"),
        last_pod_event=claim.last_pod_event.strftime("%Y-%m-%dT%H:%M:%SZ")
        if claim is not None and claim.last_pod_event is not None else None,
        pool_evidence=Evidence.field(pool.ref, "spec.disruption", {"consolidationPolicy": pool.consolidation_policy,
                                                                   "consolidateAfter": pool.consolidate_after})
        if pool is not None else None,
        desc=f"{node.name} ({node.instance_type or 'GPU node'}, {gpus:g} GPU)",
    )


def _idle_gpu_nodes(snap: Snapshot) -> tuple[int, list[tuple[Node, NodeClaim | None, Condition | None,
                                                              NodeDisruption]]]:
    """GPU nodes of a NodePool (how many), and those running no GPU pod that nothing else explains.

    Reads records only (no ages), so it is carried across snapshots of an unchanged cache; when some
    records change, only the nodes whose node, NodeClaim, pods or NodePool changed are judged again,
    and when only pods changed, only the nodes those pods are on are looked at.
    """
    idx = snap.index
    nodes = CARRIED.get(("gt501", "pool-gpu-nodes"), (idx.gpu_nodes,),
                        lambda: [(n, c) for n, c in idx.gpu_nodes if n.nodepool or c])
    by_node = idx.pods_by_node

    def inputs(nc: tuple[Node, NodeClaim | None]) -> tuple[object, ...]:
        node, claim = nc
        pool = idx.nodepool.get(node.nodepool or (claim.nodepool if claim else ""))
        return node, claim, by_node.get(node.name, ()), pool

    verdicts = _IDLE.values(None, nodes, (idx.nodepool,), by_node, _name_of, idx.nodes_with_changed_pods, inputs,
                            lambda nc: _idle(snap, *nc))
    # A node a pending pod is nominated to is not idle: the pod is about to land there.
    nominated = CARRIED.get(("gt501", "nominated"), (idx.pending,), lambda: {p.nominated_node for p in idx.pending})
    return len(nodes), [v for v in verdicts if v is not None and v[0].name not in nominated]


def _name_of(nc: tuple[Node, NodeClaim | None]) -> str:
    return nc[0].name


_IDLE: PerItem[tuple[Node, NodeClaim | None], str,
               tuple[Node, NodeClaim | None, Condition | None, NodeDisruption] | None] = PerItem()


def _idle(snap: Snapshot, node: Node, claim: NodeClaim | None) -> tuple[
        Node, NodeClaim | None, Condition | None, NodeDisruption] | None:
    if node.meta.deleting or any(t.key in _DISRUPTING_TAINTS for t in node.taints):
        return None  # already being disrupted
    init = claim.condition("Initialized") if claim else None
    if init is not None and init.status != "True":
        return None  # never initialized: gpu-not-advertised / nodeclaim-not-initialized territory
    if node.ready is False:
        return None  # NotReady: a health problem (gpu-node-not-ready), not an idle node
    if accelerator_total(node.allocatable) <= 0:
        return None  # no usable GPUs to be idle: gpu-not-advertised / gpu-allocatable-below-capacity
    nd = gather(snap, node)
    if any(p.wants_accelerator for p in nd.workload_pods):
        return None
    return node, claim, init, nd


