"""Light, typed views of the Kubernetes objects checks read.

Records are built once when an object enters the cache (gputui.kube.ingest), not on every
diagnostics run. Quantities arrive already parsed (floats) because `diagnostics` may not
import the kubernetes client. Checks read fields, never `obj`: it keeps the projected object for
the views (YAML, bundles); a part of the spec a check quotes back as written (a NodePool's template
for a copy of it, a container's quantity strings) is a field of its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from diagnostics.fast_init import fast_init
from diagnostics.model import ObjectRef

Resources = Mapping[str, float]
Json = Mapping[str, Any]

# Extended resources that mean "an accelerator" wherever counts, requests, taints or limits matter.
GPU_RESOURCE = "nvidia.com/gpu"
ACCELERATOR_PREFIXES = ("nvidia.com/gpu", "nvidia.com/mig-", "amd.com/gpu", "aws.amazon.com/neuron",
                        "habana.ai/gaudi", "gpu.intel.com/")


_AMD_PARTITION = re.compile(r"amd\.com/[a-z]+px_nps\d+$")
"""ROCm device plugin's mixed naming strategy: partitioned GPUs as amd.com/<compute>_<memory> (`amd.com/cpx_nps4`)."""


def is_accelerator(resource: str) -> bool:
    return resource.startswith(ACCELERATOR_PREFIXES) or (
        resource.startswith("amd.com/") and _AMD_PARTITION.match(resource) is not None)


def looks_like_accelerator(name: str) -> bool:
    """An accelerator by prefix, or a resource name that plainly means one (a typo'd GPU resource)."""
    low = name.lower()
    return is_accelerator(name) or "gpu" in low or "neuron" in low


def accelerator_total(resources: Resources) -> float:
    """Sum of every accelerator-like resource (GPUs, MIG slices, shared GPUs, Neuron devices)."""
    return sum(v for k, v in resources.items() if is_accelerator(k))


def accelerators(resources: Resources) -> dict[str, float]:
    return {k: v for k, v in resources.items() if is_accelerator(k) and v}


@fast_init
@dataclass(frozen=True, slots=True)
class Condition:
    """A status condition: the one type for it past the decoder (gputui.kube.shapes converts a pod's decoded
    conditions into it once; gputui.kube.ingest builds the others')."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition: datetime | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.type, "status": self.status, "reason": self.reason, "message": self.message}


@fast_init
@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = ""

    def __str__(self) -> str:
        # Karpenter and kubectl print key=value:effect (key:effect when no value).
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


@fast_init
@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes toleration semantics (k8s.io/api/core/v1 Toleration.ToleratesTaint)."""
        if self.effect and self.effect != taint.effect:
            return False
        if not self.key:
            return self.operator == "Exists"
        if self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


def tolerates_all(tolerations: tuple[Toleration, ...], taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


@fast_init
@dataclass(frozen=True, slots=True)
class Requirement:
    """A node selector requirement (pod affinity term or NodePool requirement)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()
    min_values: int | None = None

    def __str__(self) -> str:
        if self.operator in ("Exists", "DoesNotExist"):
            return f"{self.key} {self.operator}"
        return f"{self.key} {self.operator} [{' '.join(self.values)}]"


@fast_init
@dataclass(frozen=True, slots=True)
class Meta:
    name: str
    namespace: str | None = None
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    created: datetime | None = None
    deleting: datetime | None = None
    owners: tuple[Mapping[str, Any], ...] = ()


class _Object:
    """Shared accessors for records that carry `meta`, `conditions` and a `kind` class attribute."""

    __slots__ = ()
    kind: str
    meta: Meta

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(self.kind, self.meta.name, self.meta.namespace)

    def condition(self, type_: str) -> Condition | None:
        conditions: tuple[Condition, ...] = getattr(self, "conditions", ())
        for c in conditions:
            if c.type == type_:
                return c
        return None


@fast_init
@dataclass(frozen=True, slots=True)
class Node(_Object):
    meta: Meta
    capacity: Resources
    allocatable: Resources
    taints: tuple[Taint, ...]
    conditions: tuple[Condition, ...]
    unschedulable: bool
    provider_id: str
    boot_id: str
    os_image: str
    """status.nodeInfo.osImage (`Bottlerocket OS 1.47.0 (aws-k8s-1.34-nvidia)`)."""
    addresses: tuple[tuple[str, str], ...]
    """(type, address) of each status.addresses entry that has an address."""
    runtime_handlers: tuple[str, ...] | None
    """status.runtimeHandlers names (Kubernetes 1.30+); None when the node does not report them."""
    obj: Json

    kind = "Node"

    @property
    def labels(self) -> Mapping[str, str]:
        return self.meta.labels

    def label(self, *keys: str) -> str:
        for k in keys:
            v = self.meta.labels.get(k)
            if v:
                return v
        return ""

    @property
    def instance_type(self) -> str:
        return self.label("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")

    @property
    def zone(self) -> str:
        return self.label("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")

    @property
    def nodepool(self) -> str:
        return self.label("karpenter.sh/nodepool")

    @property
    def capacity_type(self) -> str:
        ct = self.label("karpenter.sh/capacity-type", "eks.amazonaws.com/capacityType")
        if ct:
            return ct.lower().replace("_", "-")
        if self.label("cloud.google.com/gke-spot") == "true":
            return "spot"
        return ""

    @property
    def ready(self) -> bool | None:
        for c in self.conditions:
            if c.type == "Ready":
                return c.status == "True"
        return None


@fast_init
@dataclass(frozen=True, slots=True)
class ContainerState:
    name: str
    ready: bool
    restart_count: int
    state: str
    """running | waiting | terminated | unknown."""
    reason: str = ""
    message: str = ""
    exit_code: int | None = None
    last_reason: str = ""
    """Reason of lastState.terminated (e.g. OOMKilled, Error) - why it is crash-looping."""
    last_exit_code: int | None = None
    last_message: str = ""
    """lastState.terminated.message: with `terminationMessagePolicy: FallbackToLogsOnError`, the log's last lines."""
    started_at: datetime | None = None
    """state.running.startedAt: when the container last (re)started."""


@fast_init
@dataclass(frozen=True, slots=True)
class ContainerResources:
    """One container's `resources` as written (quantity strings, not parsed): for checks that quote them
    back or validate them as the API server does."""

    section: str
    """`initContainers` or `containers`."""
    name: str
    requests: Json
    limits: Json


@fast_init
@dataclass(frozen=True, slots=True)
class PodClaim:
    """One entry of a pod's `spec.resourceClaims` (Dynamic Resource Allocation)."""

    entry: str
    """The pod's name for it (`spec.resourceClaims[].name`)."""
    claim: str
    """The ResourceClaim's name; '' when its template has not produced one yet."""
    template: str = ""


@fast_init
@dataclass(frozen=True, slots=True)
class Pod(_Object):
    meta: Meta
    node_name: str
    phase: str
    requests: Resources
    """Effective pod requests as the scheduler sees them: max(init containers, sum of containers) + overhead."""
    limits: Resources
    container_requests: tuple[tuple[str, Resources, Resources], ...]
    """(container name, requests, limits) per app container, for request/limit consistency checks."""
    tolerations: tuple[Toleration, ...]
    node_selector: Mapping[str, str]
    required_affinity: tuple[tuple[Requirement, ...], ...]
    """requiredDuringScheduling nodeSelectorTerms (ORed), each a tuple of ANDed requirements."""
    conditions: tuple[Condition, ...]
    nominated_node: str
    containers: tuple[ContainerState, ...]
    scheduler_name: str
    priority_class: str
    runtime_class: str
    started: datetime | None
    resources_written: tuple[ContainerResources, ...]
    """Init containers, then app containers, as the spec writes their resources."""
    preferred_affinity: tuple[Requirement, ...]
    """matchExpressions of the heaviest preferredDuringScheduling node affinity term (kept while unscheduled,
    as affinity is): Karpenter treats it as required until it relaxes it."""
    scheduling_gates: tuple[str, ...]
    """Names in spec.schedulingGates."""
    tolerations_written: tuple[Json, ...]
    """spec.tolerations as written (tolerationSeconds included), for patches that must carry them over."""
    claims: tuple[PodClaim, ...]
    """spec.resourceClaims, resolved to ResourceClaim names where the API already did."""
    pod_ip: str
    obj: Json

    kind = "Pod"

    @property
    def namespace(self) -> str:
        return self.meta.namespace or ""

    @property
    def gpus(self) -> float:
        return accelerator_total(self.requests)

    @property
    def wants_accelerator(self) -> bool:
        """Some accelerator asked for (a limit overrides the request of the same name).

        Plain loops: checks ask this of every pod on every node a change touches.
        """
        limits = self.limits
        for k, v in limits.items():
            if k.startswith(ACCELERATOR_PREFIXES) and v > 0:
                return True
        for k, v in self.requests.items():
            if k.startswith(ACCELERATOR_PREFIXES) and k not in limits and v > 0:
                return True
        return False

    @property
    def is_daemonset(self) -> bool:
        for o in self.meta.owners:
            if o.get("kind") == "DaemonSet":
                return True
        return False

    @property
    def terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @property
    def pending(self) -> bool:
        return self.phase == "Pending" and not self.node_name


@fast_init
@dataclass(frozen=True, slots=True)
class Event:
    meta: Meta
    involved_kind: str
    involved_name: str
    involved_namespace: str | None
    reason: str
    message: str
    type: str
    count: int
    first_seen: datetime | None
    last_seen: datetime | None
    source: str
    """Reporting component: default-scheduler, karpenter, kubelet ..."""

    kind = "Event"

    @property
    def involved(self) -> ObjectRef:
        return ObjectRef(self.involved_kind, self.involved_name, self.involved_namespace or None)


@fast_init
@dataclass(frozen=True, slots=True)
class NodeClaim(_Object):
    meta: Meta
    nodepool: str
    node_name: str
    provider_id: str
    requests: Resources
    capacity: Resources
    allocatable: Resources
    requirements: tuple[Requirement, ...]
    taints: tuple[Taint, ...]
    startup_taints: tuple[Taint, ...]
    node_class: str
    conditions: tuple[Condition, ...]
    last_pod_event: datetime | None
    image_id: str
    """status.imageID: the AMI the instance was launched from."""
    expire_after: str
    """spec.expireAfter ('' when unset: the NodePool's applies)."""
    termination_grace_period: str
    """spec.terminationGracePeriod ('' when unset)."""
    obj: Json

    kind = "NodeClaim"

    @property
    def instance_type(self) -> str:
        return self.meta.labels.get("node.kubernetes.io/instance-type", "")

    @property
    def capacity_type(self) -> str:
        return self.meta.labels.get("karpenter.sh/capacity-type", "")

    @property
    def zone(self) -> str:
        return self.meta.labels.get("topology.kubernetes.io/zone", "")

    @property
    def stage(self) -> str:
        """Lifecycle stage in the order Karpenter moves through it: the first condition not True."""
        for t in ("Launched", "Registered", "Initialized"):
            c = self.condition(t)
            if c is None or c.status != "True":
                return f"awaiting {t}"
        return "Ready"


@fast_init
@dataclass(frozen=True, slots=True)
class Budget:
    nodes: str
    reasons: tuple[str, ...] = ()
    schedule: str = ""
    duration: str = ""


@fast_init
@dataclass(frozen=True, slots=True)
class NodePool(_Object):
    meta: Meta
    weight: int
    limits: Resources
    usage: Resources
    """status.resources: what the NodePool's nodes currently provide."""
    requirements: tuple[Requirement, ...]
    taints: tuple[Taint, ...]
    startup_taints: tuple[Taint, ...]
    template_labels: Mapping[str, str]
    node_class: str
    node_class_kind: str
    consolidation_policy: str
    consolidate_after: str
    budgets: tuple[Budget, ...]
    expire_after: str
    conditions: tuple[Condition, ...]
    replicas: int | None
    """spec.replicas: set only on a static NodePool, which never launches for pending pods."""
    limits_spec: Json
    """spec.limits as written (quantity strings): quoted in evidence and copied into a fallback pool."""
    template_spec: Json
    """spec.template.spec as written: a copy of the pool or a JSON patch of it must keep the user's own text."""
    disruption_spec: Json
    """spec.disruption as written."""
    obj: Json

    kind = "NodePool"

    @property
    def termination_grace_period(self) -> str:
        """spec.template.spec.terminationGracePeriod ('' when unset)."""
        return str(self.template_spec.get("terminationGracePeriod") or "")

    def requirement_index(self, key: str) -> int | None:
        """Position of `key` in spec.template.spec.requirements as written: the index a JSON patch replaces."""
        raw = self.template_spec.get("requirements")
        for i, r in enumerate(raw if isinstance(raw, list) else ()):
            if isinstance(r, Mapping) and r.get("key") == key:
                return i
        return None


@fast_init
@dataclass(frozen=True, slots=True)
class NodeClass(_Object):
    """An EC2NodeClass (karpenter.k8s.aws/v1)."""

    meta: Meta
    subnet_terms: tuple[Mapping[str, Any], ...]
    security_group_terms: tuple[Mapping[str, Any], ...]
    ami_terms: tuple[Mapping[str, Any], ...]
    subnets: tuple[Mapping[str, Any], ...]
    security_groups: tuple[Mapping[str, Any], ...]
    amis: tuple[Mapping[str, Any], ...]
    role: str
    instance_profile: str
    """status.instanceProfile, else spec.instanceProfile."""
    spec_instance_profile: str
    """spec.instanceProfile ('' when Karpenter manages the profile from spec.role)."""
    tags: Json
    """spec.tags as written."""
    placement_group_selector: Json
    capacity_reservation_terms: tuple[Json, ...]
    """spec.capacityReservationSelectorTerms."""
    conditions: tuple[Condition, ...]
    obj: Json

    kind = "EC2NodeClass"


@fast_init
@dataclass(frozen=True, slots=True)
class DaemonSet(_Object):
    meta: Meta
    selector: Mapping[str, str]
    node_selector: Mapping[str, str]
    required_affinity: tuple[tuple[Requirement, ...], ...]
    tolerations: tuple[Toleration, ...]
    images: tuple[str, ...]
    desired: int
    ready: int
    obj: Json

    kind = "DaemonSet"


@fast_init
@dataclass(frozen=True, slots=True)
class Pdb(_Object):
    meta: Meta
    selector: Mapping[str, Any]
    """The raw label selector (matchLabels / matchExpressions)."""
    disruptions_allowed: int | None
    has_selector: bool
    """spec.selector is set: an empty one selects every pod of the namespace, an absent one none."""
    unhealthy_pod_eviction_policy: str
    budget: Json
    """spec.minAvailable / spec.maxUnavailable as written (those that are set)."""
    health: Json
    """status.currentHealthy / desiredHealthy / expectedPods as written (those that are set)."""
    obj: Json

    kind = "PodDisruptionBudget"


@fast_init
@dataclass(frozen=True, slots=True)
class RuntimeClass:
    meta: Meta
    handler: str

    kind = "RuntimeClass"
