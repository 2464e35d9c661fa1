"""An idle GPU node that outlived its NodePool's consolidateAfter, and what stops Karpenter removing it."""

from __future__ import annotations

from collections.abc import Iterator

from diagnostics.carry import Generations
from diagnostics.disruption import (
    DO_NOT_DISRUPT,
    NodeDisruption,
    blockers_for,
    do_not_disrupt_state,
    gather,
    refs_of,
)
from diagnostics.model import Evidence, Finding, Remediation, Severity
from diagnostics.records import Condition, Node, NodeClaim, accelerator_total, accelerators
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
    for node, claim, init, nd in idle:
        idle_since = (claim.last_pod_event if claim else None) or (init.last_transition if init else None) \
            or node.meta.created
        idle_for = snap.age(idle_since)
        if idle_for is None:
            continue
        pool = nd.pool
        consolidatable = claim.condition("Consolidatable") if claim else None
        after = parse_go_duration(pool.consolidate_after) if pool else None
        if consolidatable is not None and consolidatable.status == "True":
            eligible = True
        elif after is not None:
            eligible = idle_for >= after + GRACE_SECONDS
        else:
            eligible = idle_for >= UNKNOWN_POOL_IDLE_SECONDS
        if not eligible:
            continue

        blockers = blockers_for(snap, nd)
        gpus = accelerator_total(node.allocatable) or node_should_have_gpus(node, claim)
        gpu_hours = gpus * idle_for / 3600
        ev: list[Evidence] = [Evidence.field(
            node.ref, "status.allocatable", accelerators(node.allocatable) or f"{gpus:g} GPU(s) expected",
            note=f"{gpus:g} GPU(s) idle for {human_age(idle_for)} (~{gpu_hours:.1f} GPU-hours): "
                 + ("only DaemonSet pods on the node" if nd.empty else
                    f"{len(nd.workload_pods)} non-DaemonSet pod(s), none requests an accelerator"))]
        if claim is not None and claim.last_pod_event is not None:
            ev.append(Evidence.field(claim.ref, "status.lastPodEventTime",
                                     claim.last_pod_event.strftime("%Y-%m-%dT%H:%M:%SZ"),
                                     note=f"last pod scheduled/removed {human_age(idle_for)} ago"))
        if consolidatable is not None:
            ev.append(Evidence.condition(claim.ref if claim else node.ref, consolidatable.as_dict(),
                                         snap.age(consolidatable.last_transition)))
        if pool is not None:
            ev.append(Evidence.field(pool.ref, "spec.disruption",
                                     {"consolidationPolicy": pool.consolidation_policy,
                                      "consolidateAfter": pool.consolidate_after}))
        for p in nd.pods:
            if DO_NOT_DISRUPT in p.meta.annotations:
                blocks, why = do_not_disrupt_state(p, snap.taken_at)
                if not blocks:
                    ev.append(Evidence.field(p.ref, f"metadata.annotations[{DO_NOT_DISRUPT}]",
                                             p.meta.annotations[DO_NOT_DISRUPT], note=f"{why}: no longer blocks"))
        for b in blockers:
            ev.extend(b.evidence)

        desc = f"{node.name} ({node.instance_type or 'GPU node'}, {gpus:g} GPU) idle {human_age(idle_for)}"
        if blockers:
            more = f" (+{len(blockers) - 1} more)" if len(blockers) > 1 else ""
            title = f"{desc} but not consolidated: {blockers[0].summary}{more}"
        else:
            title = f"{desc} but not consolidated: no blocker visible in the snapshot"
        commands = [c for b in blockers for c in b.commands]
        texts = [b.fix for b in blockers]
        if not blockers:
            texts.append("Nothing in the snapshot explains it: read the Karpenter controller log for this node.")
            commands.append(_logs_command(snap, node.name))
        cost = (f"{gpus:g} GPU(s) have been idle for {human_age(idle_for)} (~{gpu_hours:.1f} GPU-hours billed for "
                "nothing).")
        if claim is not None:
            texts.append("To remove the node now, delete its NodeClaim (Karpenter drains it, respecting PDBs).")
            commands.append(f"kubectl delete nodeclaim {claim.name}")
        yield Finding(
            subject=node.ref,
            title=title,
            evidence=tuple(ev),
            remediation=Remediation(" ".join([cost, *dict.fromkeys(texts)]), tuple(dict.fromkeys(commands))),
            related=tuple(r for r in refs_of(blockers) if r != node.ref) + ((claim.ref,) if claim else ()),
        )


def _idle_gpu_nodes(snap: Snapshot) -> tuple[int, list[tuple[Node, NodeClaim | None, Condition | None,
                                                              NodeDisruption]]]:
    """GPU nodes of a NodePool (how many), and those running no GPU pod that nothing else explains.

    Reads records only (no ages), so it is carried across snapshots of an unchanged cache; when some
    records change, only the nodes whose node, NodeClaim, pods or NodePool changed are judged again.
    """
    idx = snap.index
    nominated = {p.nominated_node for p in idx.pending}
    examined = 0
    out = []
    for node, claim in idx.gpu_nodes:
        if not (node.nodepool or claim):
            continue
        examined += 1
        pool = idx.nodepool.get(node.nodepool or (claim.nodepool if claim else ""))
        pods = idx.pods_by_node.get(node.name, ())
        idle = _IDLE.of(idx, node, (claim, pods, pool), lambda: _idle(snap, node, claim))
        if idle is not None and node.name not in nominated:  # else a pending pod is about to land here
            out.append(idle)
    return examined, out


_IDLE: Generations[tuple[Node, NodeClaim | None, Condition | None, NodeDisruption] | None] = Generations()


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


def _logs_command(snap: Snapshot, node: str) -> str:
    """`kubectl logs` for the Karpenter controller, in the namespace it actually runs in."""
    ns = carried(snap, "karpenter-namespace", ("pods",), lambda: next(
        (p.namespace for p in snap.pods if p.meta.labels.get("app.kubernetes.io/name") == "karpenter"), None))
    ns = "kube-system" if ns is None else ns
    return f"kubectl logs -n {ns} -l app.kubernetes.io/name=karpenter --tail=500 | grep {node}"
