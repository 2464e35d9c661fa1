"""Whether a NodePool's requirements still admit an EC2 instance type carrying the requested accelerator.

Karpenter only launches a node for a GPU pod if some instance type allowed by the NodePool (and
the pod) advertises the accelerator resource in its capacity. The table lists the accelerator
families Karpenter's AWS provider models (device counts from EC2 `GpuInfo`/`NeuronInfo`) with the
labels Karpenter derives from them; unknown families or sizes count as "might have it", so the
verdict errs towards silence.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache

from diagnostics.facts.matching import requirement_matches
from diagnostics.records import Requirement

# Extended resources Karpenter's instance types can carry (karpenter-facts.md section 6). Not
# aws.amazon.com/neurondevice: the Neuron device plugin registers it, but no instance type offers
# it, so a pod asking for it never gets a node from Karpenter.
KARPENTER_MODELED = frozenset({"nvidia.com/gpu", "amd.com/gpu", "aws.amazon.com/neuron",
                               "aws.amazon.com/neuroncore", "habana.ai/gaudi"})

# Instance categories (karpenter.k8s.aws/instance-category) whose families have no accelerator.
CPU_CATEGORIES = frozenset({"a", "c", "d", "h", "i", "im", "is", "m", "r", "t", "u", "x", "z", "hpc", "mac"})

_G = "nvidia.com/gpu"
_N = "aws.amazon.com/neuron"
_ONE_TO_16 = ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")


@dataclass(frozen=True, slots=True)
class Family:
    name: str
    resource: str
    manufacturer: str
    accel_name: str
    sizes: Mapping[str, int]
    """instance size -> accelerator devices (as Karpenter counts them)."""
    arch: str = "amd64"
    cores_per_device: int = 1
    """Neuron cores per device (for aws.amazon.com/neuroncore)."""

    @property
    def gpu_labels(self) -> bool:
        """GPUs get karpenter.k8s.aws/instance-gpu-*; Inferentia/Trainium get instance-accelerator-*."""
        return self.resource != _N


def _f(name: str, resource: str, manu: str, accel: str, sizes: Mapping[str, int], arch: str = "amd64",
       cores: int = 1) -> Family:
    return Family(name, resource, manu, accel, dict(sizes), arch, cores)


FAMILIES: dict[str, Family] = {f.name: f for f in (
    _f("g3", _G, "nvidia", "m60", {"4xlarge": 1, "8xlarge": 2, "16xlarge": 4}),
    _f("g3s", _G, "nvidia", "m60", {"xlarge": 1}),
    _f("g4dn", _G, "nvidia", "t4", {**{s: 1 for s in _ONE_TO_16}, "12xlarge": 4, "metal": 8}),
    _f("g4ad", "amd.com/gpu", "amd", "radeon-pro-v520",
       {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 2, "16xlarge": 4}),
    _f("g5", _G, "nvidia", "a10g", {**{s: 1 for s in _ONE_TO_16}, "12xlarge": 4, "24xlarge": 4, "48xlarge": 8}),
    _f("g5g", _G, "nvidia", "t4g", {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "16xlarge": 2,
                                   "metal": 2}, arch="arm64"),
    _f("g6", _G, "nvidia", "l4", {**{s: 1 for s in _ONE_TO_16}, "12xlarge": 4, "24xlarge": 4, "48xlarge": 8}),
    _f("g6e", _G, "nvidia", "l40s", {**{s: 1 for s in _ONE_TO_16}, "12xlarge": 4, "24xlarge": 4, "48xlarge": 8}),
    # Fractional-GPU g6f/gr6f report GPU count 0 to EC2, so Karpenter sees no nvidia.com/gpu on them.
    _f("g6f", _G, "nvidia", "l4", {"large": 0, "xlarge": 0, "2xlarge": 0, "4xlarge": 0}),
    _f("gr6", _G, "nvidia", "l4", {"4xlarge": 1, "8xlarge": 1}),
    _f("gr6f", _G, "nvidia", "l4", {"4xlarge": 0}),
    _f("p3", _G, "nvidia", "v100", {"2xlarge": 1, "8xlarge": 4, "16xlarge": 8}),
    _f("p3dn", _G, "nvidia", "v100", {"24xlarge": 8}),
    _f("p4d", _G, "nvidia", "a100", {"24xlarge": 8}),
    _f("p4de", _G, "nvidia", "a100", {"24xlarge": 8}),
    _f("p5", _G, "nvidia", "h100", {"4xlarge": 1, "48xlarge": 8}),
    _f("p5e", _G, "nvidia", "h200", {"48xlarge": 8}),
    _f("p5en", _G, "nvidia", "h200", {"48xlarge": 8}),
    _f("p6-b200", _G, "nvidia", "b200", {"48xlarge": 8}),
    _f("p6-b300", _G, "nvidia", "b300", {"48xlarge": 8}),
    _f("p6e-gb200", _G, "nvidia", "gb200", {"36xlarge": 4}, arch="arm64"),
    _f("dl1", "habana.ai/gaudi", "habana", "gaudi-hl-205", {"24xlarge": 8}),
    _f("inf1", _N, "aws", "inferentia", {"xlarge": 1, "2xlarge": 1, "6xlarge": 4, "24xlarge": 16}, cores=4),
    _f("inf2", _N, "aws", "inferentia2", {"xlarge": 1, "8xlarge": 1, "24xlarge": 6, "48xlarge": 12}, cores=2),
    _f("trn1", _N, "aws", "trainium", {"2xlarge": 1, "32xlarge": 16}, cores=2),
    _f("trn1n", _N, "aws", "trainium", {"32xlarge": 16}, cores=2),
    _f("trn2", _N, "aws", "trainium2", {"48xlarge": 16}, cores=8),
)}

_FAMILY_RE = re.compile(r"^([a-z]+)(\d+)")
INSTANCE_KEYS = frozenset({
    "node.kubernetes.io/instance-type", "karpenter.k8s.aws/instance-family",
    "karpenter.k8s.aws/instance-category", "karpenter.k8s.aws/instance-generation",
    "karpenter.k8s.aws/instance-size", "kubernetes.io/arch",
    "karpenter.k8s.aws/instance-gpu-count", "karpenter.k8s.aws/instance-gpu-manufacturer",
    "karpenter.k8s.aws/instance-gpu-name", "karpenter.k8s.aws/instance-accelerator-count",
    "karpenter.k8s.aws/instance-accelerator-manufacturer", "karpenter.k8s.aws/instance-accelerator-name"})


def category(family: str) -> str:
    m = _FAMILY_RE.match(family)
    return m.group(1) if m else family


def generation(family: str) -> str:
    m = _FAMILY_RE.match(family)
    return m.group(2) if m else ""


def base_resource(resource: str) -> str:
    return _N if resource == "aws.amazon.com/neuroncore" else resource


def devices(fam: Family, size: str, resource: str) -> int:
    n = fam.sizes.get(size, 0)
    return n * fam.cores_per_device if resource == "aws.amazon.com/neuroncore" else n


def labels_of(fam: Family, size: str) -> dict[str, str]:
    """The Karpenter well-known labels an instance type of this family/size carries."""
    labels = {
        "node.kubernetes.io/instance-type": f"{fam.name}.{size}",
        "karpenter.k8s.aws/instance-family": fam.name,
        "karpenter.k8s.aws/instance-category": category(fam.name),
        "karpenter.k8s.aws/instance-generation": generation(fam.name),
        "karpenter.k8s.aws/instance-size": size,
        "kubernetes.io/arch": fam.arch,
    }
    count = fam.sizes.get(size, 0)
    if fam.gpu_labels:
        if count > 0:
            labels.update({"karpenter.k8s.aws/instance-gpu-count": str(count),
                           "karpenter.k8s.aws/instance-gpu-manufacturer": fam.manufacturer,
                           "karpenter.k8s.aws/instance-gpu-name": fam.accel_name})
    else:
        labels.update({"karpenter.k8s.aws/instance-accelerator-count": str(count),
                       "karpenter.k8s.aws/instance-accelerator-manufacturer": fam.manufacturer,
                       "karpenter.k8s.aws/instance-accelerator-name": fam.accel_name})
    return labels


@dataclass(frozen=True, slots=True)
class Admission:
    """Can any instance type these requirements allow carry `count` of `resource`?"""

    possible: bool
    """False only when gputui is sure; True when it is or when unknown types could still qualify."""
    resource: str
    count: float
    best: tuple[str, int] | None = None
    """Largest known admitted instance type and its device count."""
    blocking: tuple[Requirement, ...] = ()
    """The requirements that ruled accelerator instance types out."""
    reason: str = ""


def _unknown_could_pass(req: Requirement, resource: str, count: float) -> bool:
    """Could an accelerator instance type missing from the table satisfy this requirement?"""
    key, op, vals = req.key, req.operator, req.values
    gpu = base_resource(resource) != _N
    if key == "node.kubernetes.io/instance-type":
        if op != "In":
            return True
        return any(category(v.split(".")[0]) not in CPU_CATEGORIES and v.split(".")[0] not in FAMILIES
                   for v in vals)
    if key == "karpenter.k8s.aws/instance-family":
        if op != "In":
            return True
        return any(category(v) not in CPU_CATEGORIES and v not in FAMILIES for v in vals)
    if key == "karpenter.k8s.aws/instance-category":
        if op != "In":
            return op != "DoesNotExist"
        return any(v not in CPU_CATEGORIES for v in vals)
    if key.startswith("karpenter.k8s.aws/instance-gpu-") and not gpu:
        return op in ("NotIn", "DoesNotExist")
    if key.startswith("karpenter.k8s.aws/instance-accelerator-") and gpu:
        return op in ("NotIn", "DoesNotExist")
    if key in ("karpenter.k8s.aws/instance-gpu-count", "karpenter.k8s.aws/instance-accelerator-count"):
        need = max(int(count), 1)
        return any(requirement_matches(req, {key: str(n)}) for n in range(need, 33))
    if key in ("karpenter.k8s.aws/instance-gpu-manufacturer", "karpenter.k8s.aws/instance-accelerator-manufacturer"):
        vendor = {"nvidia.com/gpu": "nvidia", "amd.com/gpu": "amd", "habana.ai/gaudi": "habana"}.get(
            base_resource(resource), "aws")
        return requirement_matches(req, {key: vendor})
    if key in ("karpenter.k8s.aws/instance-gpu-name", "karpenter.k8s.aws/instance-accelerator-name"):
        if op != "In":
            return op != "DoesNotExist"
        known = {f.accel_name for f in FAMILIES.values()}
        return any(v not in known for v in vals)
    return True


_TYPES: tuple[tuple[Family, str, dict[str, str]], ...] = tuple(
    (f, size, labels_of(f, size)) for f in FAMILIES.values() for size in f.sizes)


def admits(requirements: Iterable[Requirement], resource: str, count: float) -> Admission:
    """Whether instance types allowed by `requirements` can provide `count` x `resource` on one node."""
    return _admits(tuple(r for r in requirements if r.key in INSTANCE_KEYS), resource, float(count))


@lru_cache(maxsize=4096)
def _admits(reqs: tuple[Requirement, ...], resource: str, count: float) -> Admission:
    base = base_resource(resource)
    if resource not in KARPENTER_MODELED:
        return Admission(False, resource, count,
                         reason=f"Karpenter does not model {resource}: no instance type offers it, so no NodePool "
                                f"can launch a node for it (only existing nodes that advertise it, or a NodeOverlay "
                                f"adding it, can help)")
    candidates: list[tuple[str, int]] = []
    fails: dict[Requirement, int] = {}
    alone: dict[Requirement, int] = {}
    total = 0
    for fam, size, labels in _TYPES:
        if fam.resource != base:
            continue
        n = devices(fam, size, resource)
        if n <= 0:
            continue
        total += 1
        failed = [r for r in reqs if not requirement_matches(r, labels)]
        for r in failed:
            fails[r] = fails.get(r, 0) + 1
        if len(failed) == 1:
            alone[failed[0]] = alone.get(failed[0], 0) + 1
        if not failed:
            candidates.append((labels["node.kubernetes.io/instance-type"], n))
    unknown = all(_unknown_could_pass(r, resource, count) for r in reqs)
    enough = [c for c in candidates if c[1] >= count]
    best = max(candidates, key=lambda c: c[1]) if candidates else None
    if enough or unknown:
        return Admission(True, resource, count, best)
    # Name the requirements whose removal alone would admit an accelerator type, else those excluding all.
    blocking = tuple(alone) or tuple(r for r, n in fails.items() if n == total) or tuple(
        sorted(fails, key=lambda r: -fails[r])[:3])
    if best is None:
        return Admission(False, resource, count, None, blocking,
                         reason=f"its requirements admit no instance type with {resource} ("
                                + ", ".join(str(r) for r in blocking) + ")")
    return Admission(False, resource, count, best, blocking,
                     reason=f"the largest instance type its requirements admit, {best[0]}, has {best[1]} "
                            f"{resource}; the pod needs {count:g} on one node")


@dataclass(frozen=True, slots=True)
class Launchable:
    """The instance types a NodePool could launch for `count` x `resource` on one node, as limits see them."""

    types: tuple[tuple[str, Mapping[str, int]], ...]
    """Known admitted instance types with enough devices and their accelerator capacity, fewest devices first."""
    unknown_floor: int | None
    """Fewest devices an instance type missing from the table could carry and still qualify (None: none could)."""


def launchable(requirements: Iterable[Requirement], resource: str, count: float) -> Launchable:
    """What Karpenter would hold against a NodePool's limits to launch for the pod: whole instance capacities.

    kubernetes-sigs/karpenter scheduler.go filterByRemainingResources drops every instance type whose
    capacity of a limited resource exceeds what is left of spec.limits, before the pod is tried.
    """
    return _launchable(tuple(r for r in requirements if r.key in INSTANCE_KEYS), resource, float(count))


_COUNT_KEYS = ("karpenter.k8s.aws/instance-gpu-count", "karpenter.k8s.aws/instance-accelerator-count")


@lru_cache(maxsize=4096)
def _launchable(reqs: tuple[Requirement, ...], resource: str, count: float) -> Launchable:
    if resource not in KARPENTER_MODELED:
        return Launchable((), None)
    base = base_resource(resource)
    found: list[tuple[str, Mapping[str, int]]] = []
    for fam, size, labels in _TYPES:
        n = devices(fam, size, resource)
        if fam.resource != base or n < count or n <= 0:
            continue
        if all(requirement_matches(r, labels) for r in reqs):
            cap = {base: fam.sizes[size]}
            if base == _N:
                cap["aws.amazon.com/neuroncore"] = fam.sizes[size] * fam.cores_per_device
            found.append((labels["node.kubernetes.io/instance-type"], cap))
    found.sort(key=lambda t: (t[1].get(resource, 0), t[0]))
    floor: int | None = None
    if all(_unknown_could_pass(r, resource, count) for r in reqs):
        need = max(math.ceil(count), 1)
        counts = [r for r in reqs if r.key in _COUNT_KEYS] if resource != "aws.amazon.com/neuroncore" else []
        floor = next((n for n in range(need, 65) if all(requirement_matches(r, {r.key: str(n)}) for r in counts)),
                     None)
    return Launchable(tuple(found), floor)


@cache
def max_devices(resource: str) -> int:
    """Most devices of `resource` any known EC2 instance type carries (0 if the resource is not modeled)."""
    base = base_resource(resource)
    return max((devices(f, s, resource) for f in FAMILIES.values() if f.resource == base for s in f.sizes),
               default=0)


_GCE_ACCELERATOR_TYPE = re.compile(r"^(a2|a3|a4|g2)-\w+-(\d+)g$")


def accelerators_for(instance_type: str) -> tuple[str, int] | None:
    """(resource, devices) the kubelet should advertise for an instance type, None if not an accelerator type.

    For nodes that carry no GPU labels (EKS managed node groups, other provisioners): the
    FAMILIES table for EC2, the `-<N>g` suffix for GCE's accelerator-optimized machine types.
    """
    if not instance_type:
        return None
    m = _GCE_ACCELERATOR_TYPE.match(instance_type)
    if m:
        return (_G, int(m.group(2)))
    family, _, size = instance_type.partition(".")
    fam = FAMILIES.get(family)
    if fam is None:
        return None
    n = fam.sizes.get(size)
    return (fam.resource, n) if n else None
