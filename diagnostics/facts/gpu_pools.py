"""What a NodePool can launch (GPU or not, spot or on-demand) and which pending pods it could serve."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from diagnostics.facts.matching import allowed_values, compatible
from diagnostics.facts.pod_shape import Shape, pod_shape
from diagnostics.facts.provider import facts
from diagnostics.records import NodePool, Pod, Requirement, Taint, is_accelerator, tolerates_all
from diagnostics.snapshot import Snapshot

CAPACITY_TYPE = "karpenter.sh/capacity-type"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
INSTANCE_FAMILY = "karpenter.k8s.aws/instance-family"
INSTANCE_CATEGORY = "karpenter.k8s.aws/instance-category"
GPU_NAME = "karpenter.k8s.aws/instance-gpu-name"
GPU_COUNT = "karpenter.k8s.aws/instance-gpu-count"
ZONE = "topology.kubernetes.io/zone"
NODEPOOL = "karpenter.sh/nodepool"

# Instance families with accelerators (EC2 naming): g4dn, g5, g6e, gr6, p4d, p5en, p6-b200, inf2, trn1n, dl1 ...
_GPU_FAMILY = re.compile(r"^(g\d|gr\d|p\d|inf\d|trn\d|dl\d|vt\d)")
GPU_CATEGORIES = frozenset({"g", "gr", "p", "inf", "trn", "dl", "vt"})
# Keys whose mere presence in a requirement (In/Exists/Gt) restricts a pool to accelerator instances.
_ACCEL_KEYS = ("karpenter.k8s.aws/instance-gpu-name", "karpenter.k8s.aws/instance-gpu-manufacturer",
               "karpenter.k8s.aws/instance-gpu-memory", "karpenter.k8s.aws/instance-accelerator-name",
               "karpenter.k8s.aws/instance-accelerator-manufacturer", "cloud.google.com/gke-accelerator",
               "nvidia.com/gpu.product", "nvidia.com/gpu.present")
_COUNT_KEYS = ("karpenter.k8s.aws/instance-gpu-count", "karpenter.k8s.aws/instance-accelerator-count",
               "cloud.google.com/gke-accelerator-count", "nvidia.com/gpu.count")
# GPU models EC2 sells in P instances (everything else NVIDIA is a G/VT instance): for quota codes.
P_GPU_NAMES = frozenset({"k80", "v100", "a100", "h100", "h200", "b200", "gb200", "b300"})
# Families/GPUs people buy for large training; spot for these is a planning smell.
TRAINING_FAMILIES = re.compile(r"^(p4d|p4de|p5|p5e|p5en|p6|p6e|trn1|trn1n|trn2)(\b|-|$)")
TRAINING_GPU_NAMES = frozenset({"a100", "h100", "h200", "b200", "gb200"})

Admission = Literal["only", "some", "none", "unconstrained"]


def family_of(instance_type: str) -> str:
    """`p4d.24xlarge` -> `p4d`; `p6-b200.48xlarge` -> `p6-b200`."""
    return instance_type.split(".", 1)[0]


def is_gpu_family(family: str) -> bool:
    return bool(_GPU_FAMILY.match(family))


def _share(values: Iterable[str], is_gpu: bool | None = None) -> Admission:
    flags = [is_gpu_family(family_of(v)) for v in values] if is_gpu is None else [is_gpu]
    if not flags:
        return "none"
    if all(flags):
        return "only"
    return "some" if any(flags) else "none"


def _requirement_admission(r: Requirement) -> Admission:
    """What one requirement says about accelerators."""
    if r.key in _COUNT_KEYS:
        if r.operator in ("Exists",):
            return "only"
        if r.operator == "DoesNotExist":
            return "none"
        nums = [_int(v) for v in r.values]
        if r.operator == "Gt" and nums and nums[0] is not None:
            return "only" if nums[0] >= 0 else "some"
        if r.operator == "Lt" and nums and nums[0] is not None:
            return "none" if nums[0] <= 1 else "some"
        if r.operator == "In":
            pos = [n for n in nums if n is not None and n > 0]
            return "only" if pos and len(pos) == len(nums) else ("some" if pos else "none")
        if r.operator == "NotIn" and "0" in r.values:
            return "only"
        return "unconstrained"
    if r.key in _ACCEL_KEYS:
        if r.operator in ("In", "Exists"):
            return "only"
        if r.operator == "DoesNotExist":
            return "none"
        return "unconstrained"
    if r.key in (INSTANCE_TYPE, "beta.kubernetes.io/instance-type") and r.operator == "In":
        return _share(r.values)
    if r.key == INSTANCE_FAMILY and r.operator == "In":
        return _share(r.values)
    if r.key == INSTANCE_CATEGORY and r.operator == "In":
        flags = [v in GPU_CATEGORIES for v in r.values]
        return "only" if flags and all(flags) else ("some" if any(flags) else "none")
    if r.key == INSTANCE_CATEGORY and r.operator == "NotIn" and GPU_CATEGORIES <= set(r.values):
        return "none"
    return "unconstrained"


def gpu_admission(pool: NodePool) -> Admission:
    """Can the pool launch accelerator instances: only those, some, none, or it does not say.

    Requirements are ANDed, so one that excludes accelerators wins; template labels count as
    `In [value]` requirements.
    """
    reqs = list(pool.requirements) + [Requirement(k, "In", (v,)) for k, v in pool.template_labels.items()]
    verdicts = [_requirement_admission(r) for r in reqs]
    if "none" in verdicts:
        return "none"
    if "only" in verdicts:
        return "only"
    if "some" in verdicts:
        return "some"
    return "unconstrained"


def mentions_accelerators(pool: NodePool) -> bool:
    """Taints or limits that name an accelerator resource (nvidia.com/gpu, aws.amazon.com/neuron ...)."""
    return any(is_accelerator(t.key) for t in pool.taints) or any(is_accelerator(k) for k in pool.limits)


def is_gpu_pool(pool: NodePool) -> bool:
    """A pool meant for GPUs: requirements admit GPU instance types, or taints/limits mention accelerators."""
    adm = gpu_admission(pool)
    return adm in ("only", "some") or (adm != "none" and mentions_accelerators(pool))


def can_launch_gpu(pool: NodePool) -> bool:
    """Could Karpenter pick an accelerator instance from this pool (an unconstrained pool can)."""
    return gpu_admission(pool) != "none"


def capacity_types(pool: NodePool) -> set[str]:
    """Capacity types the pool may launch. Karpenter defaults to on-demand when the pool does not say."""
    if CAPACITY_TYPE in pool.template_labels:
        return {pool.template_labels[CAPACITY_TYPE]}
    allowed, excluded = allowed_values(pool.requirements, CAPACITY_TYPE)
    if allowed is None:
        constrained = any(r.key == CAPACITY_TYPE for r in pool.requirements)
        # "reserved" only counts when named: it needs reservations and the feature gate.
        allowed = {"spot", "on-demand"} if constrained else {"on-demand"}
    return allowed - excluded


def spot_only(pool: NodePool) -> bool:
    types = capacity_types(pool)
    return "spot" in types and "on-demand" not in types


def pool_requirement_values(pool: NodePool, key: str) -> list[str]:
    """Values an `In` requirement (or template label) allows for key; [] when unconstrained."""
    if key in pool.template_labels:
        return [pool.template_labels[key]]
    allowed, _ = allowed_values(pool.requirements, key)
    return sorted(allowed) if allowed else []


def instance_shape(pool: NodePool) -> list[str]:
    """The pool's instance-selection requirements as Karpenter prints them (for evidence)."""
    keys = (INSTANCE_TYPE, INSTANCE_FAMILY, INSTANCE_CATEGORY, GPU_NAME, GPU_COUNT,
            "karpenter.k8s.aws/instance-size", "karpenter.k8s.aws/instance-generation")
    return [str(r) for r in pool.requirements if r.key in keys]


def training_reason(pool: NodePool) -> str:
    """Why the pool looks like a training pool ('' if it does not): its name/labels, or p4d/p5-class + WhenEmpty."""
    for text in (pool.name, *pool.template_labels.keys(), *pool.template_labels.values()):
        if "train" in text.lower():
            return f"named/labelled {text!r}"
    if big_training_instances(pool) and pool.consolidation_policy == "WhenEmpty":
        return "allows p4d/p5-class instances with consolidationPolicy WhenEmpty"
    return ""


def big_training_instances(pool: NodePool) -> bool:
    for r in pool.requirements:
        if r.operator != "In":
            continue
        if r.key in (INSTANCE_TYPE, INSTANCE_FAMILY) and any(TRAINING_FAMILIES.match(family_of(v)) for v in r.values):
            return True
        if r.key == GPU_NAME and TRAINING_GPU_NAMES & set(r.values):
            return True
    return False


def quota_class(instance_types: Iterable[str], gpu_names: Iterable[str] = ()) -> set[str]:
    """EC2 quota buckets ("G" for G and VT, "P", "Inf", "Trn") the instances fall into."""
    out: set[str] = set()
    for it in instance_types:
        fam = family_of(it)
        if fam.startswith(("p",)) and is_gpu_family(fam):
            out.add("P")
        elif fam.startswith(("g", "vt")) and is_gpu_family(fam):
            out.add("G")
        elif fam.startswith("inf"):
            out.add("Inf")
        elif fam.startswith("trn"):
            out.add("Trn")
    for name in gpu_names:
        out.add("P" if name.lower() in P_GPU_NAMES else "G")
    return out


def blocking_taints(pool: NodePool) -> list[Taint]:
    """Taints that keep pods off the pool's nodes (startupTaints are ignored by scheduling)."""
    return [t for t in pool.taints if t.effect in ("NoSchedule", "NoExecute")]


def _int(v: str) -> int | None:
    try:
        return int(v)
    except ValueError:
        return None


def _labels(pool: NodePool) -> dict[str, str]:
    return {**pool.template_labels, NODEPOOL: pool.name}


def _term_fits(pool: NodePool, term: Sequence[Requirement], labels: Mapping[str, str]) -> bool:
    for r in term:
        if r.operator == "In":
            if not compatible(pool.requirements, r.key, r.values, labels):
                return False
        elif r.operator == "NotIn":
            if r.key in labels:
                if labels[r.key] in r.values:
                    return False
                continue
            allowed, _ = allowed_values(pool.requirements, r.key)
            if allowed is not None and allowed <= set(r.values):
                return False
        elif r.operator == "Exists":
            allowed, _ = allowed_values(pool.requirements, r.key)
            if allowed == set() and r.key not in labels:
                return False
        elif r.operator == "DoesNotExist":
            allowed, _ = allowed_values(pool.requirements, r.key)
            if r.key in labels or allowed:
                return False
    return True


def pool_fits_pod(pool: NodePool, pod: Pod) -> bool:
    """Approximation of Karpenter's NodePool/pod compatibility: taints, nodeSelector, required affinity, GPUs.

    Good enough to say which pools a pending pod depends on; the exact answer (instance type
    offerings, limits) is Karpenter's FailedScheduling message.
    """
    if any(not tolerates_all(pod.tolerations, t) for t in blocking_taints(pool)):
        return False
    labels = _labels(pool)
    for k, v in pod.node_selector.items():
        if not compatible(pool.requirements, k, (v,), labels):
            return False
    if pod.required_affinity and not any(_term_fits(pool, term, labels) for term in pod.required_affinity):
        return False
    return not (pod.wants_accelerator and not can_launch_gpu(pool))


def fitting_pools(snap: Snapshot, pod: Pod) -> list[NodePool]:
    """The NodePools pool_fits_pod accepts, shared by pods of one shape while the NodePools are unchanged.

    Callers must not modify the list.
    """
    return _fitting(snap, pod_shape(snap, pod), pod=pod)


@facts(reads=("nodepools",))
def _fitting(snap: Snapshot, shape: Shape, *, pod: Pod) -> list[NodePool]:
    """fitting_pools for the shape (`pod`: one pod of it)."""
    return [p for p in snap.nodepools if pool_fits_pod(p, pod)]


def pool_ready(pool: NodePool) -> bool:
    """False only when Karpenter says so (Ready=False); v1beta1 pools without conditions count as ready."""
    c = pool.condition("Ready")
    return c is None or c.status != "False"


def on_demand_fallbacks(snap: Snapshot, pool: NodePool, pods: Sequence[Pod] = ()) -> list[NodePool]:
    """Other ready pools that can launch on-demand GPU instances for these pods.

    Without pods, a pool qualifies when its taints are a subset of this pool's taints (whatever
    tolerates this pool tolerates it) and its requirements do not exclude accelerators. Callers must
    not modify the list.
    """
    # pool_fits_pod reads only what pod_shape holds: one pod per shape answers for its replicas. The answer
    # reads NodePool records and those shapes only, so it is carried while they are the same.
    shapes = {pod_shape(snap, p): p for p in pods}
    return _on_demand_fallbacks(snap, pool.name, tuple(shapes), pool=pool, pods=list(shapes.values()))


@facts(reads=("nodepools",))
def _on_demand_fallbacks(snap: Snapshot, name: str, shapes: tuple[Shape, ...], *, pool: NodePool,
                         pods: Sequence[Pod]) -> list[NodePool]:
    """on_demand_fallbacks of the pool (`name`) for pods of these shapes (`pods`: one of each)."""
    out = []
    mine = {(t.key, t.value, t.effect) for t in blocking_taints(pool)}
    for other in snap.nodepools:
        if other.name == pool.name or "on-demand" not in capacity_types(other):
            continue
        if not can_launch_gpu(other) or not pool_ready(other):
            continue
        if pods:
            if all(pool_fits_pod(other, p) for p in pods):
                out.append(other)
        elif {(t.key, t.value, t.effect) for t in blocking_taints(other)} <= mine:
            out.append(other)
    return out
