"""Why is this pod pending: the findings that explain each pending GPU pod, the drill-down chain, and focus.

A pending GPU pod is explained by a finding about the pod itself, or by an error on one of its
*candidates*: the objects that would take it if they were healthy. Karpenter's nomination narrows
them to the nominated NodeClaim / node and its NodePool; otherwise they are the GPU nodes its
nodeSelector, required affinity and tolerations admit that offer its accelerator and have room for
it, and the NodePools that could launch for it now - or, when none can, those that could but for
their readiness or their limits (with their EC2NodeClasses and NodeClaims). A finding lists in
`related` the pending pods it explains, and only those; its `explains` says the same.

`diagnose pod/X`, `node/X` and the TUI's WHY column read this relation (`root_cause`, `focus`), so
a targeted diagnosis reports what the whole-cluster one reports about that object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from diagnostics.facts.matching import node_matches
from diagnostics.facts.messages import parse_nominated
from diagnostics.model import CheckResult, CheckStatus, Finding, Impact, ObjectRef, Report, Severity
from diagnostics.facts.node_health import node_gpu_total
from diagnostics.facts.pending import Triage, karpenter_rejected, triage
from diagnostics.facts.pod_events import PodScheduling
from diagnostics.facts.pod_fit import BLOCKING_EFFECTS, LIMIT, NOT_READY, fit, is_lifecycle_taint, scheduling_gates
from diagnostics.facts.pool_accelerators import FAMILIES, accelerators_for, base_resource
from diagnostics.facts.pod_shape import Shape
from diagnostics.facts.provider import facts, per_snapshot
from diagnostics.records import Node, NodeClaim, Pod, accelerator_total, accelerators, tolerates_all
from diagnostics.snapshot import Snapshot
from diagnostics.wording import counted

SAME_CAUSE: Mapping[str, str] = {
    "karpenter-provisioning-failures": "spot-capacity-shortage",
    "nodepool-near-gpu-limit": "nodepool-gpu-limit-reached",
    "gpu-idle": "consolidation-blocked",
}
"""Check whose finding repeats, from another source, what a second check says about the same subject
(metrics beside events; "near the limit" beside "at the limit"; DCGM's idle GPUs beside the node Karpenter
does not consolidate): reported once, with both evidences."""

NOT_A_CAUSE = frozenset({"consolidation-blocked", "gpu-idle", "gpu-nodepool-practices"})
"""Checks about idle capacity or practices: never why a pod waits, even on one of its candidates."""

IDLE_CHECKS = frozenset({"consolidation-blocked", "gpu-idle"})
"""Checks whose blast radius is idle GPUs rather than stalled ones."""

NODE_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
"""Requests kube-scheduler's NodeResourcesFit holds against the node's allocatable that no accelerator stack
changes: a node whose allocatable is below the pod's request never takes it (accelerators and other extended
resources are what a broken plugin leaves out, so they are judged by what the node should offer)."""

_POOL_BLOCKERS = frozenset({NOT_READY, LIMIT})
"""A NodePool blocked only by these would launch for the pod once fixed: it is a candidate."""


# --- the chain (pod -> NodeClaim -> node -> NodePool -> EC2NodeClass) --------------------------------

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


# --- candidates ------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Candidates:
    """What would take a pending pod if it were healthy; a cause of its waiting is an error on one of these."""

    nodes: frozenset[str] = frozenset()
    pools: frozenset[str] = frozenset()
    classes: frozenset[str] = frozenset()
    claims: frozenset[str] = frozenset()
    nominated: bool = False
    """Narrowed to a live nomination (Karpenter's `Nominated` event or status.nominatedNodeName)."""

    def __contains__(self, ref: object) -> bool:
        if not isinstance(ref, ObjectRef):
            return False
        names = {"Node": self.nodes, "NodePool": self.pools, "EC2NodeClass": self.classes,
                 "NodeClaim": self.claims}.get(ref.kind)
        return names is not None and ref.name in names


def offered(node: Node, claim: NodeClaim | None) -> set[str]:
    """Accelerator resources (by base name) the node advertises or should advertise once its stack works."""
    out = {base_resource(r) for r in (*accelerators(node.capacity), *accelerators(node.allocatable))}
    if claim is not None:
        out |= {base_resource(r) for r in accelerators(claim.capacity)} | {
            base_resource(r) for r in accelerators(claim.requests)}
    known = accelerators_for(node.instance_type)
    if known is not None:
        out.add(base_resource(known[0]))
    labels = node.labels
    if labels.get("cloud.google.com/gke-accelerator") or labels.get("nvidia.com/gpu.present") == "true" or (
            labels.get("karpenter.k8s.aws/instance-gpu-count", "0") not in ("", "0")):
        out.add("nvidia.com/gpu")
    if labels.get("karpenter.k8s.aws/instance-accelerator-count", "0") not in ("", "0"):
        manu = labels.get("karpenter.k8s.aws/instance-accelerator-manufacturer", "")
        out.add("aws.amazon.com/neuron" if manu in ("aws", "") else f"{manu}.com/gpu")
    for t in node.taints:
        if t.key in ("nvidia.com/gpu", "amd.com/gpu", "aws.amazon.com/neuron"):
            out.add(t.key)
    return out


def _neuron(res: str) -> str:
    """Neuron devices and cores are one stack: a node that should have one serves pods asking for either."""
    return "aws.amazon.com/neuron" if res.startswith("aws.amazon.com/neuron") else res


def _vendor(res: str) -> str:
    """`nvidia.com` for nvidia.com/gpu, nvidia.com/mig-1g.10gb and nvidia.com/gpu.shared."""
    return res.split("/", 1)[0]


def admits(snap: Snapshot, pod: Pod, node: Node, claim: NodeClaim | None) -> bool:
    """The node would take the pod if its accelerator stack and kubelet were healthy.

    Its labels match the pod's nodeSelector / required affinity, the pod tolerates its taints (not the
    ones a broken or starting node carries), it should offer each accelerator the pod asks for, and
    the GPUs it should have are not all held by the pods on it (when those pods were read).
    """
    room = _could_take(snap, pod, node, claim)
    if room is None:
        return False
    if snap.all_pods_read_on(node.name):
        room -= snap.index.gpus_requested_on(node.name)
    return room >= accelerator_total(accelerators(pod.requests))


def _could_take(snap: Snapshot, pod: Pod, node: Node, claim: NodeClaim | None) -> float | None:
    """`admits` before the pods on the node are counted: the accelerators it should have, None if it is no
    candidate whatever runs on it. Reads the node, its claim and pool, and the pod's shape only."""
    want = accelerators(pod.requests)
    if not want or node.meta.deleting:
        return None
    if any(node.allocatable.get(r, need) < need for r, need in pod.requests.items() if r in NODE_RESOURCES):
        return None  # NodeResourcesFit: "Insufficient cpu" on this node even when it is empty and healthy
    if not node_matches(pod.node_selector, pod.required_affinity, {**node.labels, "field:metadata.name": node.name}):
        return None
    startup = {(t.key, t.effect) for t in getattr(claim, "startup_taints", ()) or ()}
    pool = snap.index.nodepool.get(node.nodepool) if node.nodepool else None
    startup |= {(t.key, t.effect) for t in getattr(pool, "startup_taints", ()) or ()}
    for t in node.taints:
        if t.effect in BLOCKING_EFFECTS and (not is_lifecycle_taint(t) or t.key in GOING_AWAY) \
                and (t.key, t.effect) not in startup and not tolerates_all(pod.tolerations, t):
            return None
    offers = offered(node, claim)
    have = {_neuron(r) for r in offers}
    if any(_neuron(base_resource(r)) not in have for r in want):
        # A node that advertises nothing cannot say which of its vendor's resources it will offer (MIG
        # profiles, shared GPUs are the plugin's configuration): its vendor is what it should have.
        if accelerator_total(node.allocatable) > 0 or not {_vendor(r) for r in want} <= {_vendor(r) for r in offers}:
            return None
    total = node_gpu_total(node, claim)
    if set(want) == {NEURONCORE}:
        total *= _cores_per_device(node, claim)  # node_gpu_total counts devices; the pod counts cores
    return total if total >= accelerator_total(want) else None


NEURONCORE = "aws.amazon.com/neuroncore"


def _cores_per_device(node: Node, claim: NodeClaim | None) -> float:
    """NeuronCores per Neuron device on the node: what it or its NodeClaim advertises, else its instance
    family's (inf2/trn1: 2, inf1: 4 - the counts Karpenter's instance types carry), else 1."""
    for res in (node.capacity, claim.capacity if claim is not None else {}):
        devices, cores = res.get("aws.amazon.com/neuron", 0.0), res.get(NEURONCORE, 0.0)
        if devices > 0 and cores > 0:
            return cores / devices
    fam = FAMILIES.get(node.instance_type.partition(".")[0])
    return float(fam.cores_per_device) if fam is not None else 1.0


GOING_AWAY = frozenset({"karpenter.sh/disrupted", "karpenter.sh/disruption", "ToBeDeletedByClusterAutoscaler"})
"""Taints of a node being drained to be deleted (Karpenter v1 DisruptedNoScheduleTaint, v1beta1's
`karpenter.sh/disruption=disrupting`, cluster-autoscaler's scale-down): unlike not-ready or uninitialized, no
fix brings the node back for the pod, so it is no candidate."""

NO_CANDIDATES = Candidates()


def candidates(snap: Snapshot, t: Triage) -> Candidates:
    """The pod's candidates (see the module docstring).

    A gated pod has none: no scheduler looks at it until its gates are removed. A pod Karpenter ignores
    (`pod_fit.ignored_whenever`: not marked Unschedulable by its scheduler, preempting, a DaemonSet's)
    has no NodePool, EC2NodeClass or NodeClaim candidates: nothing is launched for it whatever their state.
    A pod kube-scheduler nominated by preemption waits on that node (its victims leaving), not on a launch.
    A pod kube-scheduler rejected before looking at nodes (`prefiltered`) has none either.
    """
    if scheduling_gates(t.pod) is not None:
        return NO_CANDIDATES
    idx = snap.index
    w = t.waiting
    if w is not None and w.via == "status.nominatedNodeName" and w.node is not None:
        return Candidates(nodes=frozenset({w.node.name}),
                          claims=frozenset({w.claim.name} if w.claim is not None else ()), nominated=True)
    if w is not None:
        claim, node = w.claim, w.node
        pool_name = (claim.nodepool if claim else "") or (node.nodepool if node else "")
        pool = idx.nodepool.get(pool_name)
        return Candidates(
            nodes=frozenset({node.name} if node else ()),
            pools=frozenset({pool_name} - {""}),
            classes=frozenset({pool.node_class} if pool is not None and pool.node_class else ()),
            claims=frozenset({claim.name} if claim else ()),
            nominated=True)
    if prefiltered(t.sched):
        return NO_CANDIDATES
    base = _shared_candidates(snap, t)
    if t.ignored or karpenter_rejected(t.sched):
        return _nodes_only(snap, base)
    # A nomination Karpenter has since given up on (its claim gone after ICE) still names the pool it tried.
    claim_name = t.sched.nomination.nodeclaim if t.sched.nomination is not None else ""
    if not claim_name:
        return base
    live = idx.nodeclaim.get(claim_name)
    extra = {live.nodepool} if live is not None and live.nodepool else set()
    if claim_name in base.claims and extra <= base.pools:
        return base
    pools = base.pools | extra
    claims = base.claims | {c.name for p in extra for c in idx.nodeclaims_by_pool.get(p, ())} | {claim_name}
    return Candidates(base.nodes, pools, _classes(snap, pools), frozenset(claims))


def prefiltered(sched: PodScheduling) -> bool:
    """kube-scheduler's latest verdict rejected the pod before looking at any node.

    FitError.Error (pkg/scheduler/framework/types.go): "0/N nodes are available: <PreFilterMsg>." replaces the
    per-node counts when a PreFilter plugin fails (VolumeBinding: "pod has unbound immediate
    PersistentVolumeClaims", `persistentvolumeclaim "x" not found`). PreFilter does not depend on the node, so
    no node's or NodePool's health is why the pod waits: a new node would be rejected the same way.
    """
    msg = sched.scheduler_msg
    return msg is not None and bool(msg.reasons) and all(r.count == 0 for r in msg.reasons)


def _nodes_only(snap: Snapshot, base: Candidates) -> Candidates:
    """`base` without what Karpenter would launch (one object per `base`, so pods sharing it stay one group)."""
    memo = _nodes_only_memo(snap)
    found = memo.get(id(base))
    if found is None:
        found = memo[id(base)] = Candidates(nodes=base.nodes)
    return found


@per_snapshot
def _nodes_only_memo(snap: Snapshot) -> dict[int, Candidates]:
    return {}


@per_snapshot
def _shared_memo(snap: Snapshot) -> dict[object, Candidates]:
    return {}


@per_snapshot
def _admitting_memo(snap: Snapshot) -> dict[Shape, frozenset[str]]:
    return {}


def _classes(snap: Snapshot, pools: Iterable[str]) -> frozenset[str]:
    idx = snap.index
    return frozenset(idx.nodepool[p].node_class for p in pools if p in idx.nodepool and idx.nodepool[p].node_class)


def _shared_candidates(snap: Snapshot, t: Triage) -> Candidates:
    """The candidates every pod of the pod's shape (and PodFit) shares: one object for all of them."""
    pf = fit(snap, t.pod, t.shape) if snap.status("nodepools").state.usable else None
    memo = _shared_memo(snap)
    key = (t.shape, id(pf))
    found = memo.get(key)
    if found is None:
        idx = snap.index
        # A pool that could launch for the pod now makes the others' readiness or limits no reason for its waiting.
        fitting = [p for p in pf.pools if p.fits] if pf else []
        blocked = [p for p in pf.pools if p.kinds <= _POOL_BLOCKERS] if pf else []
        pools = frozenset(p.pool.name for p in (fitting or blocked))
        claims = frozenset(c.name for p in pools for c in idx.nodeclaims_by_pool.get(p, ()))
        found = memo[key] = Candidates(_nodes_admitting(snap, t), pools, _classes(snap, pools), claims)
    return found


def _nodes_admitting(snap: Snapshot, t: Triage) -> frozenset[str]:
    """The GPU nodes `admits` the pod to, shared by the pods of its shape (a thousand pending replicas have a
    handful of shapes). What does not depend on the pods on the nodes is carried to the next snapshot while
    nodes, claims and pools are the same objects, so a watch burst of pod changes costs a sum per node."""
    memo = _admitting_memo(snap)
    found = memo.get(t.shape)
    if found is None:
        idx = snap.index
        static = _room_on_gpu_nodes(snap, t.shape, pod=t.pod)
        want = accelerator_total(accelerators(t.pod.requests))
        found = memo[t.shape] = frozenset(
            name for name, room in static
            if not snap.all_pods_read_on(name) or room - idx.gpus_requested_on(name) >= want)
    return found


@facts(reads=("nodes", "nodeclaims", "nodepools"))
def _room_on_gpu_nodes(snap: Snapshot, shape: Shape, *, pod: Pod) -> tuple[tuple[str, float], ...]:
    """(GPU node, accelerators it could give a pod of the shape) for the nodes `_could_take` admits it to
    (`pod`: one pod of the shape), whatever the pods on them."""
    return tuple((n.name, room) for n, claim in snap.index.gpu_nodes
                 for room in (_could_take(snap, pod, n, claim),) if room is not None)


@per_snapshot
def all_candidates(snap: Snapshot) -> dict[ObjectRef, tuple[Triage, Candidates]]:
    """Every pending GPU pod with its candidates, once per snapshot."""
    if not snap.status("pods").state.usable:
        return {}
    return {t.ref: (t, candidates(snap, t)) for t in triage(snap)}


@per_snapshot
def _by_candidate(snap: Snapshot) -> dict[ObjectRef, list[list[ObjectRef]]]:
    """Candidate object -> the groups of pending pods (those sharing one Candidates) it is a candidate of."""
    groups: dict[int, tuple[Candidates, list[ObjectRef]]] = {}
    for ref, (_t, c) in all_candidates(snap).items():
        groups.setdefault(id(c), (c, []))[1].append(ref)
    out: dict[ObjectRef, list[list[ObjectRef]]] = {}
    for c, pods in groups.values():
        for kind, names in (("Node", c.nodes), ("NodePool", c.pools), ("EC2NodeClass", c.classes),
                            ("NodeClaim", c.claims)):
            for name in names:
                out.setdefault(ObjectRef(kind, name), []).append(pods)
    return out


@per_snapshot
def _order(snap: Snapshot) -> dict[ObjectRef, int]:
    return {ref: i for i, ref in enumerate(all_candidates(snap))}


# --- the relation --------------------------------------------------------------------------------

def is_cause(f: Finding) -> bool:
    """An error on a candidate explains the pod even when its check did not list the pod."""
    return (f.severity or Severity.OK) >= Severity.ERROR and f.check not in NOT_A_CAUSE


def explained(snap: Snapshot, f: Finding) -> tuple[ObjectRef, ...]:
    """The pending GPU pods finding `f` is (part of) the reason for, in the pods' order.

    A finding about a pod explains it and the replicas it lists. A finding about a candidate of a pod
    explains it when it is an error (not about idle capacity), or when its check lists the pod itself.
    A pod a check lists although the subject is none of its candidates is not explained by it (a
    metric about one NodePool does not explain a pod pinned to another).
    """
    pending = all_candidates(snap)
    if f.subject.kind == "Pod":
        # A pending pod the GPU-pod index does not count (it wants its GPU through a DRA ResourceClaim, no
        # nvidia.com/gpu request) is still explained by a finding about itself (GT407).
        return tuple(dict.fromkeys(x for x in (f.subject, *f.related)
                                   if x in pending or (x == f.subject and _pending_pod(snap, x) is not None)))
    groups = _by_candidate(snap).get(f.subject, ())
    pods = [p for g in groups for p in g]
    if len(groups) > 1:
        order = _order(snap)
        pods.sort(key=order.__getitem__)
    if is_cause(f):
        return tuple(pods)
    listed = set(f.related)
    return tuple(p for p in pods if p in listed)


def _pending_pod(snap: Snapshot, ref: ObjectRef) -> Pod | None:
    pod = snap.index.pod.get((ref.namespace or "", ref.name))
    return pod if pod is not None and pod.pending else None


def attribute(snap: Snapshot, results: Sequence[CheckResult]) -> tuple[CheckResult, ...]:
    """The results with each finding's `explains`, `related` (pending pods: only those it explains) and
    `impact` filled, and same-cause findings merged into one.

    A pod counts in the blast radius of its root cause only (`rank`), so no pod is counted twice.
    """
    merged = _merge_same_cause(results)
    pending = all_candidates(snap)
    staged: list[tuple[CheckResult, list[Finding]]] = []
    best: dict[ObjectRef, Finding] = {}
    for r in merged:
        fs = []
        for f in r.findings:
            ex = explained(snap, f)
            related = f.related
            if pending:
                mine = set(ex)
                related = tuple(x for x in f.related if x not in pending or x in mine)
                related += tuple(x for x in ex if x not in related and x != f.subject)
            f = replace(f, explains=ex, related=related)
            for p in ex:
                if p not in best or rank(f) < rank(best[p]):
                    best[p] = f
            fs.append(f)
        staged.append((r, fs))
    out = []
    for r, fs in staged:
        if not fs:
            out.append(r)
            continue
        done = tuple(replace(f, impact=impact(snap, f, [pod for x in f.explains if best[x] is f
                                                        for pod in (pending[x][0].pod if x in pending
                                                                    else _pending_pod(snap, x),) if pod]))
                     for f in fs)
        out.append(replace(r, findings=done))
    return tuple(out)


def _same_cause(check: str, f: Finding) -> bool:
    """gpu-idle repeats consolidation-blocked only for GPUs no pod holds: an idle GPU a pod holds is that pod's
    (a hung or finished job, its own fix), not the node's."""
    return check != "gpu-idle" or not any(x.kind == "Pod" for x in f.related)


def _merge_same_cause(results: Sequence[CheckResult]) -> list[CheckResult]:
    """Fold a SAME_CAUSE finding into the other check's finding on the same subject (evidence appended)."""
    by_check = {r.check: r for r in results}
    extra: dict[tuple[str, ObjectRef], list[Finding]] = {}
    out: list[CheckResult] = []
    for r in results:
        into = by_check.get(SAME_CAUSE.get(r.check, ""))
        if into is None or not r.findings or not into.findings:
            out.append(r)
            continue
        subjects = {f.subject for f in into.findings}
        kept = tuple(f for f in r.findings if f.subject not in subjects or not _same_cause(r.check, f))
        for f in r.findings:
            if f not in kept:
                extra.setdefault((into.check, f.subject), []).append(f)
        if len(kept) != len(r.findings):
            reason = f"reported with {into.code} {into.check} (same cause, its evidence added there)"
            r = replace(r, findings=kept, reason=reason if not kept else r.reason)
        out.append(r)
    if not extra:
        return out
    done = []
    for r in out:
        if any(k[0] == r.check for k in extra):
            fs = []
            for f in r.findings:
                more = extra.get((r.check, f.subject), [])
                if more:
                    related = tuple(dict.fromkeys(f.related + tuple(x for m in more for x in m.related)))
                    f = replace(f, evidence=f.evidence + tuple(e for m in more for e in m.evidence), related=related,
                                severity=max([f.severity or Severity.OK] + [m.severity or Severity.OK for m in more]))
                fs.append(f)
            r = replace(r, findings=tuple(fs))
        done.append(r)
    return done


def impact(snap: Snapshot, f: Finding, pods: Iterable[Pod]) -> Impact:
    """GPUs the finding keeps from work (wanted by `pods`, those it is the root cause for, or on a node it
    breaks) and how many pods it blocks."""
    pods = list(pods)
    stalled = sum(accelerator_total(accelerators(p.requests)) for p in pods)
    if f.subject.kind == "Node":
        node = snap.index.node.get(f.subject.name)
        if node is not None:
            claim = snap.index.nodeclaim_by_node.get(node.name)
            total = node_gpu_total(node, claim)
            if f.check in IDLE_CHECKS:
                idle = max(0.0, accelerator_total(node.allocatable) - snap.index.gpus_requested_on(node.name))
                return Impact(idle or total, len(pods), "idle")
            if (f.severity or Severity.OK) >= Severity.ERROR:
                usable = accelerator_total(node.allocatable) if node.ready is True else 0.0
                stalled = max(stalled, total - usable)
    return Impact(stalled, len(pods))


def rank(f: Finding) -> tuple[int, str, str]:
    """A pending pod's root cause among the findings that explain it: worst first, then the root-cause
    class (EC2NodeClass / NodePool / capacity GT1xx before nodes GT2xx, NodeClaims GT3xx, the pod GT4xx).

    Depends on nothing but the finding, so a pod's root cause is the same whether the whole cluster or
    only what the pod needs was read.
    """
    return (-(f.severity or Severity.OK), f.code, str(f.subject))


def explaining(report: Report, pod: ObjectRef) -> list[Finding]:
    """The findings that explain a pending pod, root cause first."""
    return sorted((f for f in report.findings if pod in f.explains), key=rank)


def root_cause(report: Report, pod: ObjectRef) -> Finding | None:
    found = explaining(report, pod)
    return found[0] if found else None


def root_causes(report: Report) -> dict[ObjectRef, Finding]:
    """Every explained pending pod's root cause, by pod."""
    out: dict[ObjectRef, Finding] = {}
    for f in report.findings:
        for p in f.explains:
            if p not in out or rank(f) < rank(out[p]):
                out[p] = f
    return dict(sorted(out.items()))


# --- focus -----------------------------------------------------------------------------------------

def about(snap: Snapshot, report: Report, ref: ObjectRef) -> set[tuple[str, ObjectRef, str]]:
    """Keys (check, subject, title) of the findings a diagnosis of `ref` reports.

    The target's chain (pod -> claim -> node -> pool -> class), the findings that explain it (a pending
    pod), and those naming it, its claim or its node among the objects they affect. A NodePool or
    EC2NodeClass is shared with many other objects: a finding about another pool's NodeClaim that
    merely lists the shared class is not about this pod or node.
    """
    keep = set(chain(snap, ref))
    own = {x for x in keep if x == ref or x.kind not in ("NodePool", "EC2NodeClass")}
    out = set()
    for f in report.findings:
        if f.subject in keep or ref in f.explains or any(x in own for x in f.related):
            out.add(_key(f))
    return out


def _key(f: Finding) -> tuple[str, ObjectRef, str]:
    return (f.check, f.subject, f.title)


def focus(report: Report, snap: Snapshot, ref: ObjectRef) -> Report:
    """The report seen from `ref`: its findings in full; the others counted as `elsewhere`, never dropped
    from a check's status (a check that failed elsewhere is not "passed" for the target). The verdict
    for the target (`diagnostics.verdict.judge`) is attached."""
    from diagnostics.verdict import judge

    keep = about(snap, report, ref)
    results = []
    for r in report.results:
        fs = tuple(f for f in r.findings if _key(f) in keep)
        results.append(replace(r, findings=fs, elsewhere=r.elsewhere + len(r.findings) - len(fs)))
    focused = replace(report, results=tuple(results))
    return replace(focused, verdict=judge(focused, snap, ref))


def elsewhere_line(report: Report) -> str:
    """'N findings elsewhere in the cluster (run `gputui diagnose`)', or '' when none."""
    n = report.elsewhere
    if not n:
        return ""
    return f"{counted(n, 'finding')} elsewhere in the cluster (run `gputui diagnose`)"


def failed_elsewhere(r: CheckResult) -> bool:
    """The check failed, on other objects than the target only."""
    return r.status is CheckStatus.FAILED and not r.findings and r.elsewhere > 0
