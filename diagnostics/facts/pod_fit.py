"""Why a pending accelerator pod cannot be served by each NodePool (and by each existing GPU node).

Mirrors what Karpenter's scheduler checks, in the order it reports them: NodePool readiness,
template taints (not startupTaints: pods need not tolerate those), nodeSelector/required node
affinity against the NodePool's requirements and template labels, whether any allowed instance
type carries the requested accelerator, and the NodePool's limits.
"""

from __future__ import annotations

import bisect
import operator

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from diagnostics.facts.matching import allowed_values, node_matches, requirement_matches
from diagnostics.model import Evidence, ObjectRef, clip
from diagnostics.records import (
    Node,
    NodePool,
    Pod,
    Requirement,
    Taint,
    Toleration,
    accelerator_total,
    accelerators,
    is_accelerator,
    tolerates_all,
)
from diagnostics.facts.pod_shape import Shape, pod_shape
from diagnostics.facts.provider import derived, facts, per_node, per_snapshot, previous
from diagnostics.facts.pool_accelerators import (
    CPU_CATEGORIES,
    FAMILIES,
    INSTANCE_KEYS,
    KARPENTER_MODELED,
    admits,
    base_resource,
    category,
    launchable,
)
from diagnostics.snapshot import Snapshot

T = TypeVar("T")

NOT_READY = "not-ready"
TAINT = "taint"
REQUIREMENTS = "requirements"
ACCELERATOR = "accelerator"
LIMIT = "limit"
AVOIDS_KARPENTER = "avoids-karpenter"
STATIC = "static"
CAPACITY = "capacity"
"""Existing node only: not enough free accelerators/CPU/memory."""

NODEPOOL_LABEL = "karpenter.sh/nodepool"
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")

# Taints that mean "node going away / not ready yet": never tell a pod to tolerate these.
LIFECYCLE_TAINTS = ("node.kubernetes.io/", "karpenter.sh/disrupted", "karpenter.sh/disruption",
                    "karpenter.sh/unregistered", "node.cloudprovider.kubernetes.io/uninitialized",
                    "ToBeDeletedByClusterAutoscaler", "DeletionCandidateOfClusterAutoscaler",
                    "node.cilium.io/agent-not-ready")

# Labels Karpenter can satisfy without the NodePool naming them (instance-type labels and the like).
WELL_KNOWN = frozenset({
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region", "node.kubernetes.io/instance-type",
    "kubernetes.io/arch", "kubernetes.io/os", "node.kubernetes.io/windows-build", "kubernetes.io/hostname",
    "beta.kubernetes.io/instance-type", "beta.kubernetes.io/arch", "beta.kubernetes.io/os",
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "karpenter.sh/capacity-type", NODEPOOL_LABEL,
}) | INSTANCE_KEYS
WELL_KNOWN_PREFIXES = ("karpenter.k8s.aws/", "topology.k8s.aws/", "eks.amazonaws.com/", "karpenter.azure.com/")


@dataclass(frozen=True, slots=True)
class FitReason:
    kind: str
    text: str
    """Short clause a human reads after the NodePool's name."""
    evidence: tuple[Evidence, ...] = ()
    taints: tuple[Taint, ...] = ()
    resource: str = ""
    """For LIMIT/ACCELERATOR: the resource concerned (`nodes` for the node-count limit)."""
    cause: str = ""
    """For NOT_READY: `nodeclass`, `nodeclass-missing`, `validation`, `deleting` or `unknown`."""
    launch: str = ""
    """For LIMIT on an accelerator: the smallest instance type the pool could launch for the pod ('' when not
    known by name, or when the limit is judged by the pod's request alone)."""
    adds: float = 0.0
    """For LIMIT: what one launch for the pod adds to the limited resource (the instance's whole capacity)."""


@dataclass(frozen=True, slots=True)
class PoolFit:
    pool: NodePool
    reasons: tuple[FitReason, ...]
    kinds: frozenset[str] = field(init=False, repr=False, compare=False)
    """The kinds of the reasons (computed once: checks ask for every pending pod and NodePool)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "kinds", frozenset(r.kind for r in self.reasons))

    @property
    def fits(self) -> bool:
        return not self.reasons

    def only(self, *kinds: str) -> bool:
        """Blocked, and only by reasons of these kinds."""
        return bool(self.reasons) and self.kinds <= set(kinds)

    def summary(self) -> str:
        return "; ".join(r.text for r in self.reasons) or "fits"


@dataclass(frozen=True, slots=True)
class NodeFit:
    node: Node
    reasons: tuple[FitReason, ...]
    kinds: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kinds", frozenset(r.kind for r in self.reasons))

    @property
    def fits(self) -> bool:
        return not self.reasons


# --- pod side -------------------------------------------------------------------------------------

NORMALIZED_LABELS = {
    "beta.kubernetes.io/arch": "kubernetes.io/arch",
    "beta.kubernetes.io/os": "kubernetes.io/os",
    "beta.kubernetes.io/instance-type": "node.kubernetes.io/instance-type",
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
}
"""Karpenter's NormalizedLabels: a pod selecting a deprecated key is matched as the stable one."""


def _normalized(r: Requirement) -> Requirement:
    key = NORMALIZED_LABELS.get(r.key)
    return r if key is None else Requirement(key, r.operator, r.values, r.min_values)


def pod_terms(pod: Pod) -> list[tuple[Requirement, ...]]:
    """The pod's node requirements as ORed terms: nodeSelector ANDed into each required affinity term
    (deprecated label keys as Karpenter normalizes them)."""
    selector = tuple(_normalized(Requirement(k, "In", (v,))) for k, v in pod.node_selector.items())
    terms = [selector + tuple(_normalized(r) for r in t) for t in pod.required_affinity]
    return terms or [selector]


def avoids_karpenter(pod: Pod) -> bool:
    """The pod's requirements as Karpenter first reads them hold `karpenter.sh/nodepool DoesNotExist`: it ignores the pod.

    Provisioner.Validate (kubernetes-sigs/karpenter pkg/controllers/provisioning/provisioner.go) checks
    `scheduling.NewPodRequirements`: the nodeSelector, the heaviest preferred term and the FIRST required
    term only - a later required term that admits Karpenter's nodes does not bring the pod back.
    """
    terms = [*pod.required_affinity[:1], pod.preferred_affinity]
    return any(r.key == NODEPOOL_LABEL and r.operator == "DoesNotExist" for t in terms for r in t)


def spec_rejected(pod: Pod) -> str:
    """Why Provisioner.Validate rejects the pod for its own spec ('' if it does not): it opts out
    (validateKarpenterManagedLabelCanExist), or karpenter_rejects' restricted labels and matchFields.
    Callers keep the answer while the pod is unchanged (pending.Triage)."""
    if avoids_karpenter(pod):
        return f"it requires {NODEPOOL_LABEL} DoesNotExist (configured to not run on a Karpenter provisioned node)"
    return karpenter_rejects(pod)


def untolerated(taints: Iterable[Taint], tolerations: tuple[Toleration, ...]) -> list[Taint]:
    """Taints that keep the pod off (PreferNoSchedule never does; Karpenter relaxes it)."""
    return [t for t in taints if t.effect in BLOCKING_EFFECTS and not tolerates_all(tolerations, t)]


def is_lifecycle_taint(t: Taint) -> bool:
    return t.key.startswith(LIFECYCLE_TAINTS)


def accel_text(res: Mapping[str, float]) -> str:
    """`nvidia.com/gpu: 4` style summary of the accelerators in a resource map."""
    return ", ".join(f"{k}: {v:g}" for k, v in sorted(accelerators(res).items())) or "no accelerators"


# --- requirements ---------------------------------------------------------------------------------

def pool_labels(pool: NodePool) -> dict[str, str]:
    """Labels every node of the pool carries: template labels plus the ones Karpenter stamps."""
    labels = dict(pool.template_labels)
    labels[NODEPOOL_LABEL] = pool.name
    if pool.node_class and pool.node_class_kind == "EC2NodeClass":
        labels.setdefault("karpenter.k8s.aws/ec2nodeclass", pool.node_class)
    return labels


def _well_known(key: str) -> bool:
    return key in WELL_KNOWN or key.startswith(WELL_KNOWN_PREFIXES)


def _bounds(reqs: Iterable[Requirement]) -> tuple[int | None, int | None]:
    low: int | None = None
    high: int | None = None
    for r in reqs:
        try:
            n = int(r.values[0]) if r.values else None
        except ValueError:
            continue
        if n is None:
            continue
        if r.operator == "Gt":
            low = n if low is None else max(low, n)
        elif r.operator == "Lt":
            high = n if high is None else min(high, n)
    return low, high


def requirement_conflict(req: Requirement, pool_reqs: Iterable[Requirement], labels: Mapping[str, str]) -> str:
    """Why a pod requirement cannot hold on any node of the pool ('' if it can). Karpenter's semantics."""
    key = req.key
    if key == "field:":
        return "an empty nodeSelectorTerm matches no node"
    if key.startswith("field:"):
        return f"matchFields ({key[len('field:'):]}) pins the pod to existing nodes: Karpenter ignores such pods"
    if key in labels:
        if requirement_matches(req, {key: labels[key]}):
            return ""
        return f"{req} but the NodePool labels its nodes {key}={labels[key]}"
    mine = [r for r in pool_reqs if r.key == key]
    if not mine:
        if req.operator in ("NotIn", "DoesNotExist") or _well_known(key):
            return ""
        hint = ""
        if key.startswith(("nvidia.com/", "feature.node.kubernetes.io/")):
            hint = (" (GPU/Node Feature Discovery labels appear only after a node boots; Karpenter cannot launch "
                    "for them: select on karpenter.k8s.aws/instance-gpu-name or add the label to the NodePool "
                    "template)")
        return f'label "{key}" does not have known values{hint}'
    allowed, excluded = allowed_values(mine, key)
    must_not = any(r.operator == "DoesNotExist" for r in mine)
    must = any(r.operator in ("In", "Exists", "Gt", "Lt") for r in mine)
    ranged = [r for r in mine if r.operator in ("Gt", "Lt")]
    pool_text = ", ".join(str(r) for r in mine)
    op = req.operator
    if op == "In":
        cands = set(req.values) - excluded
        if allowed is not None:
            cands &= allowed
        cands = {v for v in cands if all(requirement_matches(r, {key: v}) for r in ranged)}
        return "" if cands else f"{req} not in {pool_text}"
    if op == "NotIn":
        return f"{req} excludes every value of {pool_text}" if allowed and allowed <= set(req.values) else ""
    if op == "Exists":
        return f"{req} but the NodePool requires {pool_text}" if must_not else ""
    if op == "DoesNotExist":
        return f"{req} but the NodePool requires {pool_text}" if must else ""
    if op in ("Gt", "Lt"):
        if must_not:
            return f"{req} but the NodePool requires {pool_text}"
        if allowed is not None:
            ok = any(requirement_matches(req, {key: v}) for v in allowed - excluded)
            return "" if ok else f"{req} not in {pool_text}"
        low, high = _bounds([*ranged, req])
        if low is not None and high is not None and high - low < 2:
            return f"{req} cannot overlap {pool_text}"
    return ""


KARPENTER_WELL_KNOWN = frozenset({
    NODEPOOL_LABEL, "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "node.kubernetes.io/instance-type", "kubernetes.io/arch", "kubernetes.io/os", "karpenter.sh/capacity-type",
    "node.kubernetes.io/windows-build"})
"""kubernetes-sigs/karpenter pkg/apis/v1/labels.go WellKnownLabels: exempt from the restricted domains."""
RESTRICTED_LABELS = frozenset({"kubernetes.io/hostname"})
RESTRICTED_DOMAIN = "karpenter.sh"


def karpenter_rejects(pod: Pod) -> str:
    """Why Karpenter's Provisioner.Validate ignores the pod whatever the NodePools ('' when it does not).

    validateNodeSelector / validateAffinity (pkg/controllers/provisioning/provisioner.go) check the
    nodeSelector and EVERY required term: a term with matchFields, or a restricted label
    (kubernetes.io/hostname, the karpenter.sh domain but for well-known labels: IsRestrictedLabel), rejects
    the whole pod even when another term would fit a NodePool.
    """
    keys = [*pod.node_selector]
    for term in pod.required_affinity:
        for r in term:
            if r.key.startswith(FIELD) and r.key != FIELD:
                return f"matchFields ({r.key[len(FIELD):]}) pins the pod to existing nodes: Karpenter ignores such pods"
            keys.append(r.key)
    for key in keys:
        key = NORMALIZED_LABELS.get(key, key)
        domain = key.rsplit("/", 1)[0] if "/" in key else ""
        if key in KARPENTER_WELL_KNOWN:
            continue
        if key in RESTRICTED_LABELS or domain == RESTRICTED_DOMAIN or domain.endswith("." + RESTRICTED_DOMAIN):
            return (f"the pod requires {key}, a label Karpenter does not launch for (\"using label {key} is not "
                    f"allowed as it might interfere with the internal provisioning logic\"): Karpenter ignores such pods")
    return ""


def min_values_conflicts(pod: Pod, pool: NodePool, term: tuple[Requirement, ...]) -> list[str]:
    """NodePool requirements whose minValues the pod's term (and, for instance families, its accelerator)
    leaves unmet: Karpenter's filterInstanceTypesByRequirements -> InstanceTypes.SatisfiesMinValues refuses
    the pool ("minValues requirement is not met for label(s)") under MinValuesPolicy Strict, the default.

    Judged only where the values left are known: the pool lists them (In), or the pod's term does.
    """
    out: list[str] = []
    # Only resources instance types carry narrow the families (a MIG profile is the ACCELERATOR reason's).
    want = {base_resource(r) for r in accelerators(pod.requests) if r in KARPENTER_MODELED}
    for key in dict.fromkeys(r.key for r in pool.requirements if r.min_values):
        mine = [r for r in pool.requirements if r.key == key]
        need = max(r.min_values or 0 for r in mine)
        allowed, excluded = allowed_values(mine, key)
        theirs = [_normalized(r) for r in term]
        theirs = [r for r in theirs if r.key == key]
        pod_in, _ = allowed_values(theirs, key)
        if allowed is None and pod_in is None:
            continue
        left: set[str] = (pod_in if allowed is None else allowed if pod_in is None else allowed & pod_in) or set()
        left = {v for v in left - excluded if all(requirement_matches(r, {key: v}) for r in [*mine, *theirs])}
        if key == "karpenter.k8s.aws/instance-family" and want:
            left = {f for f in left if (f in FAMILIES and FAMILIES[f].resource in want)
                    or (f not in FAMILIES and category(f) not in CPU_CATEGORIES)}
        if len(left) < need:
            what = f" with {', '.join(sorted(want))}" if key == "karpenter.k8s.aws/instance-family" and want else ""
            out.append(f"minValues requirement is not met for label(s) [{key}]: the NodePool wants {need} values, "
                       f"the pod leaves {len(left)}{what} ({', '.join(sorted(left)) or 'none'})")
    return out


FIELD = "field:"
"""How ingest keys a matchFields requirement (`field:metadata.name`); `field:` alone is an empty term."""


def term_conflicts(term: tuple[Requirement, ...], pool: NodePool) -> list[str]:
    labels = pool_labels(pool)
    return [c for c in (requirement_conflict(r, pool.requirements, labels) for r in term) if c]


# --- per NodePool ---------------------------------------------------------------------------------

def _not_ready(snap: Snapshot, pool: NodePool) -> FitReason | None:
    ref = pool.ref
    if pool.meta.deleting:
        return FitReason(NOT_READY, "is being deleted",
                         (Evidence.field(ref, "metadata.deletionTimestamp", pool.meta.deleting.isoformat()),),
                         cause="deleting")
    ready = pool.condition("Ready")
    nodeclass = snap.index.nodeclass.get(pool.node_class)
    nc_ready = nodeclass.condition("Ready") if nodeclass is not None else None
    if ready is None:
        # v1beta1 NodePools have no conditions: fall back to the EC2NodeClass itself.
        if nc_ready is not None and nc_ready.status == "False":
            why = clip(nc_ready.message or nc_ready.reason)
            return FitReason(NOT_READY, f"its EC2NodeClass {pool.node_class} is not Ready ({why})",
                             (Evidence.condition(nodeclass.ref if nodeclass else None, nc_ready.as_dict(),
                                                 snap.age(nc_ready.last_transition)),),
                             cause="nodeclass")
        return None
    if ready.status == "True":
        return None
    ev = [Evidence.condition(ref, ready.as_dict(), snap.age(ready.last_transition))]
    ncr = pool.condition("NodeClassReady")
    val = pool.condition("ValidationSucceeded")
    if ncr is not None and ncr.status != "True":
        ev.append(Evidence.condition(ref, ncr.as_dict(), snap.age(ncr.last_transition)))
        if nc_ready is not None and nodeclass is not None and nc_ready.status != "True":
            ev.append(Evidence.condition(nodeclass.ref, nc_ready.as_dict(), snap.age(nc_ready.last_transition)))
        missing = ncr.reason in ("NodeClassNotFound", "NodeClassTerminating")
        detail = clip(ncr.message or ncr.reason)
        return FitReason(NOT_READY, f"not Ready: NodeClassReady={ncr.status} ({detail})", tuple(ev),
                         cause="nodeclass-missing" if missing else "nodeclass")
    if val is not None and val.status != "True":
        ev.append(Evidence.condition(ref, val.as_dict(), snap.age(val.last_transition)))
        return FitReason(NOT_READY, f"not Ready: ValidationSucceeded={val.status} ({clip(val.message or val.reason)})",
                         tuple(ev), cause="validation")
    return FitReason(NOT_READY, f"not Ready ({ready.reason}: {clip(ready.message)})".replace(": )", ")"), tuple(ev),
                     cause="unknown")


def _nodes_used(snap: Snapshot, pool: NodePool) -> float | None:
    """Nodes counted against a `nodes` limit when status.resources does not say (None: no such limit)."""
    if "nodes" not in pool.limits or pool.usage.get("nodes") is not None:
        return None
    return float(len(snap.index.nodeclaims_by_pool.get(pool.name, ())) or
                 len(snap.index.nodes_by_pool.get(pool.name, ())))


def _limits(pod: Pod, pool: NodePool, nodes_used: float | None, term: tuple[Requirement, ...] = ()) -> list[FitReason]:
    """Limits the pod's launch would break. Accelerators as Karpenter's filterByRemainingResources judges them
    (the whole capacity of the smallest instance type the pool and the pod's term admit, see `_launch_limits`);
    other resources by the pod's request, which no instance type is below."""
    out: list[FitReason] = []
    by_instance = _launch_limits(pod, pool, term)
    for res, limit in sorted(pool.limits.items()):
        if by_instance is not None and is_accelerator(res):
            out.extend(r for r in by_instance if r.resource == res)
            continue
        if res == "nodes":
            used = pool.usage.get("nodes")
            if used is None:
                used = nodes_used if nodes_used is not None else 0.0
            need = 1.0
        else:
            need = pod.requests.get(res, 0.0)
            if need <= 0:
                continue
            used = pool.usage.get(res, 0.0)
        if used + need > limit:
            what = "nodes" if res == "nodes" else res
            out.append(FitReason(
                LIMIT, f"limit {what} {qty(res, used)}/{qty(res, limit)} used, pod needs {qty(res, need)} more",
                (Evidence.field(pool.ref, f"spec.limits[{res}]", _num(limit)),
                 Evidence.field(pool.ref, f"status.resources[{res}]", _num(used))),
                resource=res, adds=need))
    return out


def _launch_limits(pod: Pod, pool: NodePool, term: tuple[Requirement, ...]) -> list[FitReason] | None:
    """The accelerator LIMIT reasons judged by instance type, or None when gputui cannot name the types (not an
    EC2NodeClass pool, not one Karpenter-modeled accelerator, or no admitted type: ACCELERATOR says why).

    An instance type is launchable when each limited accelerator it carries fits in what is left of
    spec.limits (`status.resources` counts in-flight NodeClaims' capacity, as Karpenter's remaining does).
    A type missing from gputui's table is given the fewest devices its requirements allow.
    """
    want = accelerators(pod.requests)
    limited = {r: lim - pool.usage.get(r, 0.0) for r, lim in pool.limits.items() if is_accelerator(r)}
    if pool.node_class_kind != "EC2NodeClass" or len(want) != 1 or not limited:
        return None
    ((res, count),) = want.items()
    reqs = list(pool.requirements) + [r for r in term if r.key in INSTANCE_KEYS]
    options = launchable(reqs, res, count)
    types = list(options.types)
    if options.unknown_floor is not None:
        types.append(("", {res: options.unknown_floor}))
    if not types:
        return None
    if any(all(cap.get(r, 0) <= left for r, left in limited.items()) for _name, cap in types):
        return []
    name, cap = min(types, key=lambda t: (t[1].get(res, 0), t[0] == "", t[0]))
    out: list[FitReason] = []
    for r, left in sorted(limited.items()):
        adds = float(cap.get(r, 0))
        if adds <= left:
            continue
        used, limit = pool.usage.get(r, 0.0), pool.limits[r]
        it = name or f"an instance type with {adds:g} {r}"
        ev = [Evidence.field(pool.ref, f"spec.limits[{r}]", _num(limit)),
              Evidence.field(pool.ref, f"status.resources[{r}]", _num(used))]
        if adds > pod.requests.get(r, 0.0):
            text = (f"limit {r} {qty(r, used)}/{qty(r, limit)} used, {qty(r, max(left, 0.0))} left: the smallest "
                    f"instance type it can launch for the pod ({it}) has {adds:g}")
            ev.append(Evidence.field(pool.ref, "spec.template.spec.requirements",
                                     [str(q) for q in reqs if q.key in INSTANCE_KEYS] or "none",
                                     note=f"smallest instance type they admit for {count:g} {res}: {it} ({adds:g} {r}); "
                                          "Karpenter drops every instance type whose capacity exceeds what is left "
                                          "of spec.limits"))
        else:
            text = f"limit {r} {qty(r, used)}/{qty(r, limit)} used, pod needs {qty(r, adds)} more"
        out.append(FitReason(LIMIT, text, tuple(ev), resource=r, launch=name, adds=adds))
    return out


def _accelerator(pod: Pod, pool: NodePool, term: tuple[Requirement, ...]) -> list[FitReason]:
    out: list[FitReason] = []
    aws = pool.node_class_kind == "EC2NodeClass"
    reqs = list(pool.requirements) + [r for r in term if r.key in INSTANCE_KEYS]
    for res, count in sorted(accelerators(pod.requests).items()):
        verdict = admits(reqs if aws else [], res, count)
        if verdict.possible:
            continue
        ev: list[Evidence] = []
        from_pool = [str(r) for r in verdict.blocking if r in pool.requirements]
        from_pod = [str(r) for r in verdict.blocking if r not in pool.requirements]
        if from_pool:
            ev.append(Evidence.field(pool.ref, "spec.template.spec.requirements", from_pool,
                                     note=f"exclude every instance type with {res}"))
        if from_pod:
            ev.append(Evidence.field(pod.ref, "spec.nodeSelector/affinity", from_pod,
                                     note=f"the pod's own selector excludes every instance type with {res}"))
        if not ev:
            ev.append(Evidence.field(pod.ref, f"spec.containers[*].resources.limits[{res}]", _num(count),
                                     note=verdict.reason))
        out.append(FitReason(ACCELERATOR, verdict.reason, tuple(ev), resource=res))
    return out


def _avoids_reason(pod: Pod) -> tuple[FitReason, ...]:
    if not avoids_karpenter(pod):
        return ()
    return (FitReason(AVOIDS_KARPENTER, f"the pod requires {NODEPOOL_LABEL} DoesNotExist",
                      (Evidence.field(pod.ref, "spec.affinity.nodeAffinity", f"{NODEPOOL_LABEL} DoesNotExist",
                                      note="Karpenter ignores such pods"),)),)


def _pool_reasons(snap: Snapshot, pool: NodePool) -> tuple[FitReason, ...]:
    """What stops the pool whatever the pod: a static pool, a pool (or its class) not Ready."""
    reasons: list[FitReason] = []
    if pool.replicas is not None:
        replicas = pool.replicas
        reasons.append(FitReason(STATIC, f"static NodePool (spec.replicas={replicas}) never launches for pending pods",
                                 (Evidence.field(pool.ref, "spec.replicas", replicas),)))
    nr = _not_ready(snap, pool)
    if nr is not None:
        reasons.append(nr)
    return tuple(reasons)


def _pod_pool_reasons(pod: Pod, pool: NodePool, nodes_used: float | None) -> tuple[FitReason, ...]:
    """What stops this pod on this pool: taints, requirements, accelerators, limits. Reads no snapshot."""
    reasons: list[FitReason] = []
    blocked = untolerated(pool.taints, pod.tolerations)
    if blocked:
        reasons.append(FitReason(
            TAINT, "taint " + ", ".join(str(t) for t in blocked) + " not tolerated",
            (Evidence.field(pool.ref, "spec.template.spec.taints", [str(t) for t in blocked]),),
            taints=tuple(blocked)))
    # Karpenter tries the pod's required terms in turn until one fits: judge the term with the fewest
    # reasons of all (requirements and accelerator), not only the fewest label conflicts.
    scored = []
    for t in pod_terms(pod):
        c = term_conflicts(t, pool)
        scored.append((len(c) + len(_accelerator(pod, pool, () if c else t)), len(c), t, c))
    _n, _nc, term, conflicts = min(scored, key=lambda x: (x[0], x[1]))
    rejected = karpenter_rejects(pod)
    if rejected and rejected not in conflicts:
        conflicts = [rejected, *conflicts]
    if not conflicts:
        conflicts = min_values_conflicts(pod, pool, term)
    if conflicts and not avoids_karpenter(pod):
        reasons.append(FitReason(
            REQUIREMENTS, "requirements: " + "; ".join(conflicts),
            (Evidence.field(pool.ref, "spec.template.spec.requirements",
                            [str(r) for r in pool.requirements] or "none",
                            note="conflicts with the pod: " + "; ".join(conflicts)),)))
    # A conflicting pod selector is already the reason; judge the accelerator on the pool's own requirements.
    reasons.extend(_accelerator(pod, pool, () if conflicts else term))
    reasons.extend(_limits(pod, pool, nodes_used, () if conflicts else term))
    return tuple(reasons)


def fit_pool(snap: Snapshot, pod: Pod, pool: NodePool) -> PoolFit:
    """Every reason this NodePool cannot launch a node for the pod (empty = it can)."""
    return PoolFit(pool, _avoids_reason(pod) + _pool_reasons(snap, pool)
                   + _pod_pool_reasons(pod, pool, _nodes_used(snap, pool)))


def fit_pools(snap: Snapshot, pod: Pod) -> list[PoolFit]:
    return list(_pool_fits(snap, pod, pod_shape(snap, pod))[0])


# --- the same, shared across pods and snapshots ----------------------------------------------------
#
# At scale a thousand pending pods are replicas of a handful of workloads, and the TUI re-runs the
# checks every few seconds on records that did not change. A pod's PoolFits depend on its shape
# (the fields below), the NodePool records, the per-pool reasons (which carry ages, so they are
# recomputed per snapshot and swapped in only where they changed) and the node counts used by
# `nodes` limits. Evidence that names the pod itself makes its fits its own.

@dataclass(frozen=True, slots=True)
class _PoolContext:
    """The NodePools in Karpenter's order, with what each contributes whatever the pod."""

    pools: tuple[NodePool, ...]
    pool_reasons: tuple[tuple[FitReason, ...], ...]
    nodes_used: tuple[float | None, ...]


@facts(reads=("nodepools",))
def _pools_in_order(snap: Snapshot) -> tuple[NodePool, ...]:
    """The NodePools in Karpenter's order: weight, then name."""
    return tuple(sorted(snap.nodepools, key=lambda p: (-p.weight, p.name)))


@per_snapshot
def _pool_context(snap: Snapshot) -> _PoolContext:
    """Per snapshot (pool reasons carry ages); equal reasons and node counts keep the previous snapshot's
    objects, so per-pod fits see "unchanged" by identity."""
    was: _PoolContext | None = previous(snap)
    pools = _pools_in_order(snap)
    before = dict(zip((p.name for p in was.pools), was.pool_reasons)) if was is not None else {}
    reasons = tuple(_same_if_equal(before.get(p.name), _pool_reasons(snap, p)) for p in pools)
    reasons = _same_if_equal(was.pool_reasons if was is not None else None, reasons)
    used = _same_if_equal(was.nodes_used if was is not None else None, tuple(_nodes_used(snap, p) for p in pools))
    return _PoolContext(pools, reasons, used)


def _same_if_equal(was: T | None, now: T) -> T:
    return was if was is not None and was == now else now


def _names_pod(reasons: tuple[FitReason, ...], ref: ObjectRef) -> bool:
    return any(e.subject == ref for r in reasons for e in r.evidence)


def _pool_fits(snap: Snapshot, pod: Pod, shape: Shape) -> tuple[tuple[PoolFit, ...], bool]:
    """The pod's PoolFit for every NodePool, in Karpenter's order (weight, then name), and whether they are
    the pod's own (evidence names it) rather than shared by every pod of its shape."""
    ctx = _pool_context(snap)
    mids = None if avoids_karpenter(pod) else _shared_mids(snap, shape, ctx.pools, ctx.nodes_used, pod=pod)
    if mids is not None:
        return _assembled(snap, mids, ctx.pool_reasons, ctx.pools, ak=()), False
    mids = _own_mids(snap, pod, ctx.pools, ctx.nodes_used)
    return _assembled(snap, mids, ctx.pool_reasons, ctx.pools, ak=_avoids_reason(pod)), True


def _mids(pod: Pod, pools: tuple[NodePool, ...], nodes_used: tuple[float | None, ...]) -> tuple[
        tuple[FitReason, ...], ...]:
    return tuple(_pod_pool_reasons(pod, p, used) for p, used in zip(pools, nodes_used))


@derived
def _shared_mids(shape: Shape, pools: tuple[NodePool, ...], nodes_used: tuple[float | None, ...], *,
                 pod: Pod) -> tuple[tuple[FitReason, ...], ...] | None:
    """What stops a pod of the shape on each pool (`pod`: one of them), shared by them all; None when the
    evidence names the pod: then each pod of the shape gets its own (whether it does depends on the shape only)."""
    mids = _mids(pod, pools, nodes_used)
    return None if any(_names_pod(mid, pod.ref) for mid in mids) else mids


@derived
def _own_mids(pod: Pod, pools: tuple[NodePool, ...], nodes_used: tuple[float | None, ...]) -> tuple[
        tuple[FitReason, ...], ...]:
    return _mids(pod, pools, nodes_used)


@derived
def _assembled(mids: tuple[tuple[FitReason, ...], ...], pool_reasons: tuple[tuple[FitReason, ...], ...],
               pools: tuple[NodePool, ...], *, ak: tuple[FitReason, ...]) -> tuple[PoolFit, ...]:
    """The PoolFits from their parts (`ak`: the pod's own reason, when it avoids Karpenter: then `mids` are
    its own too); the same parts give the same tuple, so the PodFit built on it is found by identity."""
    return tuple(PoolFit(p, ak + pre + mid) for p, pre, mid in zip(pools, pool_reasons, mids))


# --- existing nodes -------------------------------------------------------------------------------

def fit_node(snap: Snapshot, pod: Pod, node: Node) -> NodeFit | None:
    """Reasons an existing accelerator node cannot take the pod; None if it is no candidate at all.

    A node that is going away, not Ready, cordoned, or lacks free accelerators is no candidate:
    a toleration would not help there, so it must not be offered as a fix.
    """
    want = accelerators(pod.requests)
    if not want or any(node.allocatable.get(r, 0.0) < n for r, n in want.items()):
        return None
    if node.meta.deleting or node.unschedulable or node.ready is not True:
        return None
    if any(is_lifecycle_taint(t) and t.effect in BLOCKING_EFFECTS for t in node.taints):
        return None
    startup = _startup_taints(snap, node)
    if any((t.key, t.effect) in startup for t in node.taints):
        return None  # still initializing (its startup taint is removed by an agent): not a toleration's fix
    used = used_by_node(snap).get(node.name, {})
    for res, need in pod.requests.items():
        if need <= 0:
            continue
        if res not in node.allocatable:
            if "/" in res:
                return None  # an extended resource the node does not have (EFA...): 0 available
            continue
        if node.allocatable.get(res, 0.0) - used.get(res, 0.0) < need:
            return None
    reasons: list[FitReason] = []
    blocked = untolerated(node.taints, pod.tolerations)
    if blocked:
        reasons.append(FitReason(TAINT, "taint " + ", ".join(str(t) for t in blocked) + " not tolerated",
                                 (Evidence.field(node.ref, "spec.taints", [str(t) for t in blocked]),),
                                 taints=tuple(blocked)))
    fields = {**node.labels, "field:metadata.name": node.name}  # matchFields pin by name
    if not node_matches(pod.node_selector, pod.required_affinity, fields):
        reasons.append(FitReason(REQUIREMENTS, "nodeSelector/affinity does not match its labels"))
    return NodeFit(node, tuple(reasons))


def _startup_taints(snap: Snapshot, node: Node) -> set[tuple[str, str]]:
    """(key, effect) of the startupTaints of the node's NodePool and NodeClaim."""
    out: set[tuple[str, str]] = set()
    pool = snap.index.nodepool.get(node.nodepool) if node.nodepool else None
    claim = snap.index.nodeclaim_by_node.get(node.name)
    for owner in (pool, claim):
        for t in getattr(owner, "startup_taints", ()) or ():
            out.add((t.key, t.effect))
    return out


@facts(reads=("nodes",))
def accelerator_nodes(snap: Snapshot) -> list[Node]:
    """Nodes advertising any accelerator (clusters have thousands of CPU nodes)."""
    return [n for n in snap.nodes if accelerator_total(n.allocatable) > 0]


@facts(reads=("nodes", "pods"))
def used_by_node(snap: Snapshot) -> dict[str, dict[str, float]]:
    """Requests of non-terminal pods summed per accelerator node."""
    return {n.name: used for n, used in zip(accelerator_nodes(snap), _used_on(snap))}


def _used_on(snap: Snapshot) -> list[dict[str, float]]:
    """used_by_node as a list in accelerator_nodes' order: only nodes whose pods changed are summed again."""
    return _requested_on(snap, None, accelerator_nodes(snap))


def _same_or_new(snap: Snapshot, node: Node, pods: Sequence[Pod], earlier: Sequence[Pod],
                 was: dict[str, float]) -> dict[str, float]:
    """`was` when the sums did not change (a pod's labels or status moved, not its requests): the free
    index and per-node fits then see the node as unchanged by identity."""
    now = _requested(pods)
    return was if was == now else now


@per_node(reads=("nodes", "pods"), patch=_same_or_new)
def _requested_on(snap: Snapshot, node: Node, pods: Sequence[Pod]) -> dict[str, float]:
    return _requested(pods)


def _requested(pods: Iterable[Pod]) -> dict[str, float]:
    used: dict[str, float] = {}
    for p in pods:
        if not p.terminal:
            for r, q in p.requests.items():
                used[r] = used.get(r, 0.0) + q
    return used


@dataclass(frozen=True, slots=True)
class _FreeIndex:
    """Per accelerator resource, (free devices, node position) sorted, so candidates are a bisect away."""

    nodes: list[Node]
    used: list[dict[str, float]]
    allocatable: list[dict[str, float]]
    index: dict[str, list[tuple[float, int]]]
    base: _FreeIndex | None = None
    """The index this one was patched from (None after a full build)."""
    moved: tuple[int, ...] = ()
    """Positions whose `used` is another object than in `base`: only their candidacy can differ."""


def _free_index(snap: Snapshot) -> _FreeIndex:
    """Free accelerators per node, sorted per resource (see _FreeIndex).

    Without it every pending pod was checked against every GPU node and its pods: at 1k pending
    pods x 2k GPU nodes that was a minute per diagnostics run. When only pods changed, the entries
    of the nodes whose requests changed are moved; the rest stay as they are.
    """
    return _free_accelerators(snap)


@facts(reads=("nodes",))
def _allocatable(snap: Snapshot) -> list[dict[str, float]]:
    """The accelerators each of accelerator_nodes has allocatable, in its order."""
    return [accelerators(n.allocatable) for n in accelerator_nodes(snap)]


@facts(reads=("nodes", "pods"))
def _free_accelerators(snap: Snapshot) -> _FreeIndex:
    nodes = accelerator_nodes(snap)
    used = _used_on(snap)
    allocatable = _allocatable(snap)
    before: _FreeIndex | None = previous(snap)
    if before is not None and before.nodes is nodes and before.allocatable is allocatable:
        patched = _patch_free(before, used)
        if patched is not None:
            return patched
    index: dict[str, list[tuple[float, int]]] = {}
    for i in range(len(nodes)):
        for r, a in allocatable[i].items():
            index.setdefault(r, []).append((a - used[i].get(r, 0.0), i))
    for entries in index.values():
        entries.sort()
    return _FreeIndex(nodes, used, allocatable, index)


def _patch_free(before: _FreeIndex, used: list[dict[str, float]]) -> _FreeIndex | None:
    """`before` with the entries of the nodes whose requests changed moved; None if an entry is not found."""
    if used is before.used:
        return before
    index = dict(before.index)
    copied: set[str] = set()
    differ = list(map(operator.is_not, before.used, used))
    moved: list[int] = []
    i = -1
    while True:
        try:
            i = differ.index(True, i + 1)
        except ValueError:
            return _FreeIndex(before.nodes, used, before.allocatable, index, before, tuple(moved))
        moved.append(i)
        for r, a in before.allocatable[i].items():
            entries = index[r]
            if r not in copied:
                entries = index[r] = list(entries)
                copied.add(r)
            old = (a - before.used[i].get(r, 0.0), i)
            at = bisect.bisect_left(entries, old)
            if at == len(entries) or entries[at] != old:
                return None
            del entries[at]
            bisect.insort(entries, (a - used[i].get(r, 0.0), i))


def fit_nodes(snap: Snapshot, pod: Pod, shape: Shape | None = None) -> list[NodeFit]:
    """Existing nodes with enough free accelerators for the pod, and what else stops it there.

    `shape`: the pod's pod_shape, to share each node's verdict with the pod's replicas and later snapshots
    while the node and the pods on it are unchanged (there may be hundreds of candidate nodes).
    """
    if not snap.status("nodes").state.usable:
        return []
    want = accelerators(pod.requests)
    if not want:
        return []
    free = _free_index(snap)
    nodes, index = free.nodes, free.index
    candidates: set[int] | None = None
    for res, need in want.items():
        entries = index.get(res, [])
        ids = {i for _free, i in entries[bisect.bisect_left(entries, (need, -1)):]}
        candidates = ids if candidates is None else candidates & ids
    if shape is None:
        fits = [fit_node(snap, pod, nodes[i]) for i in sorted(candidates or ())]
    else:
        fits = [_verdict(snap, pod, shape, n) for n in (nodes[i] for i in sorted(candidates or ()))]
    return [f for f in fits if f is not None]


@dataclass(frozen=True, slots=True)
class _ShapeFits:
    """fit_nodes for one pod shape against one free index, by candidate node position."""

    free: _FreeIndex
    verdicts: dict[int, NodeFit | None]
    """Candidate positions, in order, and fit_node's verdict on each."""
    fits: tuple[NodeFit, ...]
    """The verdicts that are not None, in order: what fit_nodes gives."""
    owners: tuple[object, ...]
    """_owners when the verdicts were given."""


def _node_fits(snap: Snapshot, pod: Pod, shape: Shape) -> tuple[NodeFit, ...]:
    """fit_nodes, shared by pods of one shape while the nodes and the pods on them are unchanged.

    A NodeFit's evidence names only the node, so replicas of a workload share their fits. When some
    pods changed, only the nodes whose requests changed are judged again, and an unchanged answer
    is the same tuple as last time (so the PodFit built on it is found by identity).
    """
    if not snap.status("nodes").state.usable:
        return ()
    return _shape_node_fits(snap, shape, pod=pod).fits


@facts(reads=("nodes", "pods", "nodepools", "nodeclaims"))
def _shape_node_fits(snap: Snapshot, shape: Shape, *, pod: Pod) -> _ShapeFits:
    """_node_fits for the shape (`pod`: one pod of it). A verdict reads the node's NodePool and NodeClaim
    (startup taints) too: when those change, every candidate is looked at again (each verdict is kept)."""
    free = _free_index(snap)
    was: _ShapeFits | None = previous(snap)
    if was is not None and was.free is free and was.owners is _owners(snap):
        return was
    if was is not None and free.base is was.free and was.owners is _owners(snap):
        return _patch_shape_fits(snap, pod, shape, free, was)
    return _shape_fits(snap, pod, shape, free)


@facts(reads=("nodepools", "nodeclaims", "nodes"))
def _owners(snap: Snapshot) -> tuple[object, ...]:
    """What a verdict reads besides the node and its requests, as one object per version."""
    return (snap.index.nodepool, snap.index.nodeclaim_by_node)


def _candidate(free: _FreeIndex, i: int, want: Mapping[str, float]) -> bool:
    """Node `i` is in the free index with at least `want` free of each accelerator (what fit_nodes bisects for)."""
    alloc, used = free.allocatable[i], free.used[i]
    return all(r in alloc and alloc[r] - used.get(r, 0.0) >= need for r, need in want.items())


def _verdict(snap: Snapshot, pod: Pod, shape: Shape, node: Node) -> NodeFit | None:
    """fit_node by (pod shape, node), kept while the node, the requests on it, its NodePool and NodeClaim
    (startup taints) are the same objects."""
    idx = snap.index
    return _node_verdict(snap, shape, node, used_by_node(snap).get(node.name), idx.nodepool.get(node.nodepool or ""),
                         idx.nodeclaim_by_node.get(node.name), within=snap, pod=pod)


@derived
def _node_verdict(shape: Shape, node: Node, used: object, pool: object, claim: object, *, within: Snapshot,
                  pod: Pod) -> NodeFit | None:
    """fit_node of `pod` (one pod of the shape); it reads no more of the snapshot than the node's NodePool and
    NodeClaim."""
    return fit_node(within, pod, node)


def _shape_fits(snap: Snapshot, pod: Pod, shape: Shape, free: _FreeIndex) -> _ShapeFits:
    want = accelerators(pod.requests)
    candidates: set[int] | None = None
    for res, need in want.items():
        entries = free.index.get(res, [])
        ids = {i for _free, i in entries[bisect.bisect_left(entries, (need, -1)):]}
        candidates = ids if candidates is None else candidates & ids
    verdicts = {i: _verdict(snap, pod, shape, free.nodes[i]) for i in sorted(candidates or ())}
    return _ShapeFits(free, verdicts, tuple(f for f in verdicts.values() if f is not None), _owners(snap))


def _patch_shape_fits(snap: Snapshot, pod: Pod, shape: Shape, free: _FreeIndex, was: _ShapeFits) -> _ShapeFits:
    """`was` (against free.base) brought up to `free`: only the nodes whose requests moved are looked at."""
    want = accelerators(pod.requests)
    if not want:
        return _ShapeFits(free, was.verdicts, was.fits, was.owners)
    verdicts = was.verdicts
    copied = added = False
    for i in free.moved:
        now = _verdict(snap, pod, shape, free.nodes[i]) if _candidate(free, i, want) else _ABSENT
        if verdicts.get(i, _ABSENT) is now:
            continue
        if not copied:
            verdicts, copied = dict(verdicts), True
        if now is _ABSENT:
            del verdicts[i]
        else:
            added = added or i not in verdicts
            verdicts[i] = now  # type: ignore[assignment]
    if not copied:
        return _ShapeFits(free, verdicts, was.fits, was.owners)
    if added:
        verdicts = {i: verdicts[i] for i in sorted(verdicts)}
    fits = tuple([f for f in verdicts.values() if f is not None])
    same = len(fits) == len(was.fits) and all(map(operator.is_, fits, was.fits))
    return _ShapeFits(free, verdicts, was.fits if same else fits, was.owners)


_ABSENT: object = object()


@dataclass(frozen=True, slots=True)
class PodFit:
    """The whole picture for one pod: every NodePool and every candidate existing node."""

    pools: tuple[PoolFit, ...]
    nodes: tuple[NodeFit, ...]
    servable: bool = field(init=False, repr=False, compare=False)
    """Some NodePool or existing node could take the pod as things stand."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "servable", any(p.fits for p in self.pools) or any(n.fits for n in self.nodes))

    def only(self, *kinds: str) -> list[PoolFit]:
        return [p for p in self.pools if p.only(*kinds)]

    def taint_only(self) -> tuple[list[PoolFit], list[NodeFit]]:
        """Targets a toleration alone would open up (GT401's territory)."""
        return ([p for p in self.pools if p.kinds == {TAINT}],
                [n for n in self.nodes if n.kinds == {TAINT}])


@derived
def _pod_fit(pools: tuple[PoolFit, ...], nodes: tuple[NodeFit, ...]) -> PodFit:
    """The same parts as last snapshot give the same PodFit (callers key derived data on it)."""
    return PodFit(pools, nodes)


@per_snapshot
def _fits_of_snapshot(snap: Snapshot) -> dict[object, PodFit]:
    """fit's answers in this snapshot, by shape (shared fits) or by id(pod) (the pod's own)."""
    return {}


def fit(snap: Snapshot, pod: Pod, shape: Shape | None = None) -> PodFit:
    """The PodFit of a pod, computed once per snapshot and shared by the checks (and by replicas) that need it.

    `shape`: the pod's pod_shape when the caller has it.
    """
    memo = _fits_of_snapshot(snap)
    shape = shape or pod_shape(snap, pod)
    pf = memo.get(shape)  # present only for shapes whose fits are shared
    if pf is None:
        pf = memo.get(id(pod))
    if pf is not None:
        return pf
    pools, own = _pool_fits(snap, pod, shape) if snap.status("nodepools").state.usable else ((), False)
    nodes = _node_fits(snap, pod, shape)
    pf = _pod_fit(snap, pools, nodes)
    memo[id(pod) if own else shape] = pf
    return pf


def qty(resource: str, v: float) -> str:
    """A quantity the way kubectl would print it: bytes in Gi/Mi, counts as plain numbers."""
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20)):
            if abs(v) >= size:
                return f"{v / size:.4g}{unit}"
    return f"{v:g}"


def _num(v: float) -> float | int:
    return int(v) if float(v).is_integer() else v


def not_considered(snap: Snapshot, pod: Pod) -> str:
    """Why a pending pod is none of Karpenter's business yet ('' when it is).

    Karpenter acts only on pods a scheduler marked `PodScheduled=False/Unschedulable`. A pod for
    another scheduler (Volcano, YuniKorn, HAMi, ...) that has not been marked is waiting on that
    scheduler, and a pod created seconds ago has not been looked at yet. DaemonSet pods are
    placed per node and are never provisioned for.
    """
    why = ignored_whenever(pod)
    if why is not None:
        return why
    age = snap.age(pod.meta.created)
    if age is not None and age < YOUNG_SECONDS:
        return "created less than a minute ago"
    return ""


YOUNG_SECONDS = 60.0
"""A pod this young has not been looked at by the scheduler yet."""


def ignored_whenever(pod: Pod) -> str | None:
    """not_considered's verdict where time does not matter; None when only the pod's age decides.

    Karpenter's `pod.IsProvisionable` (kubernetes-sigs/karpenter pkg/utils/pod/scheduling.go): marked
    `PodScheduled` reason Unschedulable by its scheduler, no status.nominatedNodeName (preempting), not
    owned by a DaemonSet or a Node (mirror pod). A gated pod is marked SchedulingGated instead.
    """
    if pod.is_daemonset:
        return "DaemonSet pod"
    if any(o.get("kind") == "Node" for o in pod.meta.owners):
        return "mirror pod of a static pod"
    gates = scheduling_gates(pod)
    if gates is not None:
        return held_by(gates)
    if pod.nominated_node:
        return f"nominated to node {pod.nominated_node} by preemption (status.nominatedNodeName)"
    cond = pod.condition("PodScheduled")
    marked = cond is not None and cond.status == "False" and cond.reason == "Unschedulable"
    if marked:
        return ""
    if pod.scheduler_name != "default-scheduler":
        return f"waits for scheduler {pod.scheduler_name}, which has not marked it Unschedulable"
    return None


SCHEDULING_GATED = "SchedulingGated"
"""PodScheduled reason the API server sets on a pod created with spec.schedulingGates (k8s.io/api core/v1)."""


def scheduling_gates(pod: Pod) -> tuple[str, ...] | None:
    """Names in spec.schedulingGates (or () when only the `SchedulingGated` condition says so); None if not gated.

    kube-scheduler's SchedulingGates PreEnqueue plugin keeps a gated pod out of its queue, so no node is
    judged for it and Karpenter, which waits for `Unschedulable`, does not look at it either: the
    controller that set the gates (Kueue, ...) has to remove them.
    """
    if pod.scheduling_gates:
        return pod.scheduling_gates
    cond = pod.condition("PodScheduled")
    if cond is not None and cond.status == "False" and cond.reason == SCHEDULING_GATED:
        return ()
    return None


def held_by(gates: tuple[str, ...]) -> str:
    """`held by scheduling gates (kueue.x-k8s.io/admission)`."""
    return "held by scheduling gates" + (f" ({', '.join(gates)})" if gates else " (PodScheduled=False SchedulingGated)")
