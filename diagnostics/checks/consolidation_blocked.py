"""An idle or under-used GPU node past its NodePool's consolidateAfter, and what stops Karpenter removing it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from diagnostics.facts.disruption import (
    DO_NOT_DISRUPT,
    Blocker,
    NodeDisruption,
    blockers_for,
    do_not_disrupt_state,
    gather,
    nodes_with_all_pods,
    refs_of,
    tolerates_disrupted,
)
from diagnostics.facts.karpenter_controller import controller_namespace, logs_command
from diagnostics.facts.provider import derived, facts, per_node
from diagnostics.model import Evidence, Finding, ObjectRef, Remediation, Severity
from diagnostics.records import Condition, Node, NodeClaim, Pod, accelerator_total, accelerators
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot, node_should_have_gpus
from diagnostics.timeutil import human_age, parse_go_duration
from diagnostics.wording import counted

GRACE_SECONDS = 300.0
"""Time Karpenter may take after consolidateAfter (polling, simulation, validation) before we call it stuck."""
UNKNOWN_POOL_IDLE_SECONDS = 1800.0
"""Idle threshold when the NodePool (and so consolidateAfter) is unknown or consolidation is off."""
UNDERUSED_FRACTION = 0.5
"""A GPU node whose pods request at most this share of its GPUs is under-used (reported only with a blocker)."""
_DISRUPTING_TAINTS = ("karpenter.sh/disrupted", "karpenter.sh/disruption")


@check(code="GT501", slug="consolidation-blocked", title="Idle and under-used GPU nodes get consolidated",
       severity=Severity.WARNING, requires=("nodes", "pods"),
       optional=("nodeclaims", "nodepools", "pdbs", "events"))
def consolidation_blocked(snap: Snapshot) -> Iterator[Finding | int]:
    """A GPU node runs no GPU pod (or uses at most half its GPUs) past `consolidateAfter`, and Karpenter keeps it.

    Why it matters:
    Idle GPUs are the most expensive idle capacity in a cluster: an 8-GPU node running one
    notebook on 1 GPU bills 7 GPUs for nothing. Karpenter skips a node when a pod carries
    `karpenter.sh/do-not-disrupt`, the node itself is annotated, a PDB allows no eviction (or two
    PDBs select one pod), a NodePool budget allows 0 disruptions right now (a schedule it cannot
    parse allows 0 for every reason; NotReady and deleting nodes of the pool use the budget up),
    `consolidateAfter: Never`, or a `WhenEmpty` pool still has non-DaemonSet pods on the node.
    It says so in `DisruptionBlocked` events
    (`Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=<ns>/<name>)`,
    `Pdb prevents pod evictions (PodDisruptionBudget=[<ns>/<name>])`, and on the NodePool
    `No allowed disruptions for disruption reason Underutilized due to blocking budget`) and
    `Unconsolidatable` events (`Can't replace with a cheaper node`,
    `NodePool "<np>" has consolidation disabled`,
    `SpotToSpotConsolidation requires 15 cheaper instance type options than the current candidate to consolidate, got <n>`).
    A NodeClaim becomes `Consolidatable=True` once `consolidateAfter` has passed since
    `status.lastPodEventTime`.
    An under-used node (GPUs requested against allocatable) is reported only when such a blocker
    is visible: with none, Karpenter may simply have no cheaper node for its pods.

    Fix:
    Remove the blocker the finding names (annotation, PDB, budget window, policy), or delete
    the NodeClaim to remove the node now (its pods are evicted and rescheduled; the drain waits
    for do-not-disrupt pods to end).
    """
    complete = nodes_with_all_pods(snap)  # a target's one-shot read has all the pods of its own node(s) only
    examined, idle = _idle_gpu_nodes(snap)
    if complete is not None:
        idle = [v for v in idle if v[0].name in complete]
        examined = len(complete)
    yield examined
    logs_namespace: list[str] = []  # looked up once per run, if a finding needs it
    busy: list[Finding] = []  # under-used nodes come after the idle ones: an idle node wastes more
    for node, claim, init, nd in idle:
        facts = _facts(snap, node, claim, init, nd)
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
        if facts.requested and not blockers:
            continue  # under-used with nothing in the way: Karpenter may have no cheaper node for these pods
        expired = tuple((p, why) for p in nd.annotated_pods
                        for blocks, why in (do_not_disrupt_state(p, snap.taken_at),) if not blocks)
        if not blockers and not logs_namespace:
            logs_namespace.append(controller_namespace(snap))
        said = _Said(human_age(idle_for), f"{facts.gpus * idle_for / 3600:.1f}",
                     snap.age(consolidatable.last_transition) if consolidatable is not None else None,
                     expired, tuple(blockers), "" if blockers else logs_namespace[0])
        finding = _finding(node, claim, nd, facts, said)
        if facts.requested:
            busy.append(finding)
        else:
            yield finding
    yield from busy


@dataclass(frozen=True, slots=True)
class _Said:
    """The time-dependent values an idle node's finding shows (see _finding)."""

    idle: str
    """human_age of the idle time."""
    gpu_hours: str
    """Unrequested GPUs times the time since the last pod change."""
    consolidatable_age: float | None
    expired: tuple[tuple[Pod, str], ...]
    """Annotated pods whose do-not-disrupt no longer blocks, with why."""
    blockers: tuple[Blocker, ...]
    logs_namespace: str
    """Where the Karpenter controller runs ('' when there are blockers: the command is not shown)."""


def _finding(node: Node, claim: NodeClaim | None, nd: NodeDisruption, facts: _Facts, said: _Said) -> Finding:
    """The finding on an idle node: a function of its records and `said` alone."""
    blockers = said.blockers
    consolidatable = facts.consolidatable
    gpus = facts.gpus
    node_ref, claim_ref = facts.node_ref, facts.claim_ref
    what = "idle" if not facts.requested else "unrequested"
    ev: list[Evidence] = [Evidence.field(
        node_ref, "status.allocatable", facts.allocatable,
        note=f"{counted(gpus, 'GPU')} {what} for {said.idle} (~{said.gpu_hours} GPU-hours): " + facts.pods_text)]
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

    desc = (f"{facts.desc} idle {said.idle}" if not facts.requested else
            f"{facts.desc} with {facts.requested:g} of {facts.total:g} GPUs requested for {said.idle}")
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
    cost = (f"{counted(gpus, 'GPU')} {'has' if gpus == 1 else 'have'} been {what} for {said.idle} (~{said.gpu_hours} GPU-hours billed for "
            "nothing).")
    if claim is not None:
        # An annotated pod is drained but never evicted, so the drain waits for it, unless it tolerates the
        # disruption taint: then the drain ignores it and it dies with the node (core IsEvictable, IsDrainable).
        annotated = {r for b in blockers if b.kind == "pod-annotation" for r in b.refs}
        tolerant = [p for p in nd.pods if p.ref in annotated and tolerates_disrupted(p)]
        held = len(annotated) > len(tolerant)
        texts.append("To remove the node now, delete its NodeClaim (Karpenter drains it, respecting PDBs"
                     + (f"; the drain waits for pods annotated {DO_NOT_DISRUPT} to end, so remove the annotation "
                        "or the pod first" if held else "")
                     + ("; " + ", ".join(f"{p.namespace}/{p.name}" for p in tolerant[:3]) + " tolerates "
                        "karpenter.sh/disrupted:NoSchedule, so the drain does not wait for it: it dies with the node"
                        if tolerant else "")
                     + ("; its GPU pods are evicted and rescheduled, so let running work finish first)."
                        if facts.requested else ")."))
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
    """GPUs no pod requests: all of them on an idle node."""
    total: float
    """The node's GPUs (allocatable, or what it should have)."""
    requested: float
    """GPUs requested by the node's pods (0: idle)."""
    node_ref: ObjectRef
    claim_ref: ObjectRef | None
    allocatable: object
    """status.allocatable's accelerators, or what the node should have."""
    pods_text: str
    last_pod_event: str | None
    pool_evidence: Evidence | None
    desc: str


@derived
def _facts(node: Node, claim: NodeClaim | None, init: Condition | None, nd: NodeDisruption) -> _Facts:
    """The time-independent part of the node's finding (idle nodes stay idle for many runs)."""
    pool = nd.pool
    total = accelerator_total(node.allocatable) or node_should_have_gpus(node, claim)
    gpu_pods = [p for p in nd.workload_pods if p.wants_accelerator]
    requested = sum(_gpus_of(p) for p in gpu_pods)
    gpus = max(total - requested, 0.0)
    if gpu_pods:
        names = ", ".join(f"{p.namespace}/{p.name}" for p in gpu_pods[:3]) + (" ..." if len(gpu_pods) > 3 else "")
        pods_text = (f"{counted(len(gpu_pods), 'GPU pod')} request{'s' if len(gpu_pods) == 1 else ''} "
                     f"{requested:g} of {counted(total, 'GPU')} ({names})")
    else:
        pods_text = ("only DaemonSet pods on the node" if nd.empty else
                     f"{counted(len(nd.workload_pods), 'non-DaemonSet pod')} requesting no accelerator")
    return _Facts(
        idle_since=(claim.last_pod_event if claim else None) or (init.last_transition if init else None)
        or node.meta.created,
        consolidatable=claim.condition("Consolidatable") if claim else None,
        after=parse_go_duration(pool.consolidate_after) if pool else None,
        gpus=gpus,
        total=total,
        requested=requested,
        node_ref=node.ref,
        claim_ref=claim.ref if claim is not None else None,
        allocatable=accelerators(node.allocatable) or f"{counted(total, 'GPU')} expected",
        pods_text=pods_text,
        last_pod_event=claim.last_pod_event.strftime("%Y-%m-%dT%H:%M:%SZ")
        if claim is not None and claim.last_pod_event is not None else None,
        pool_evidence=Evidence.field(pool.ref, "spec.disruption", {"consolidationPolicy": pool.consolidation_policy,
                                                                   "consolidateAfter": pool.consolidate_after})
        if pool is not None else None,
        desc=f"{node.name} ({node.instance_type or 'GPU node'}, {counted(total, 'GPU')})",
    )


def _gpus_of(pod: Pod) -> float:
    """Accelerators a pod holds: its requests, or its limits when only those are set (the API defaults the
    request of an extended resource to its limit)."""
    return max(accelerator_total(pod.requests), accelerator_total(pod.limits))


@facts(reads=("nodes", "nodeclaims", "pods", "nodepools"))
def _idle_gpu_nodes(snap: Snapshot) -> tuple[int, list[tuple[Node, NodeClaim | None, Condition | None,
                                                              NodeDisruption]]]:
    """GPU nodes of a NodePool (how many), and those running no GPU pod, or using at most UNDERUSED_FRACTION of
    their GPUs, that nothing else explains.

    When some records change, only the nodes whose node, NodeClaim, pods or NodePool changed are judged
    again, and when only pods changed, only the nodes those pods are on are looked at.
    """
    nodes = _pool_gpu_nodes(snap)
    verdicts = _idle(snap, None, nodes)
    # A node a pending pod is nominated to is not idle: the pod is about to land there.
    nominated = _nominated(snap)
    return len(nodes), [v for v in verdicts if v is not None and v[0].name not in nominated]


@facts(reads=("gpu_nodes",))
def _pool_gpu_nodes(snap: Snapshot) -> list[tuple[Node, NodeClaim | None]]:
    return [(n, c) for n, c in snap.index.gpu_nodes if n.nodepool or c]


@facts(reads=("pending",))
def _nominated(snap: Snapshot) -> set[str]:
    return {p.nominated_node for p in snap.index.pending}


def _pool_of(snap: Snapshot, nc: tuple[Node, NodeClaim | None]) -> tuple[object, ...]:
    node, claim = nc
    return (snap.index.nodepool.get(node.nodepool or (claim.nodepool if claim else "")),)


@per_node(reads=("nodes", "nodeclaims", "pods", "nodepools"), extra=_pool_of)
def _idle(snap: Snapshot, nc: tuple[Node, NodeClaim | None], pods: Sequence[Pod]) -> tuple[
        Node, NodeClaim | None, Condition | None, NodeDisruption] | None:
    node, claim = nc
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
    requested = sum(_gpus_of(p) for p in nd.workload_pods if p.wants_accelerator)
    if requested > accelerator_total(node.allocatable) * UNDERUSED_FRACTION:
        return None
    if requested and (nd.pool is None or nd.pool.consolidation_policy == "WhenEmpty"):
        return None  # Karpenter never consolidates an occupied node of a WhenEmpty pool: by design (training pools)
    return node, claim, init, nd


