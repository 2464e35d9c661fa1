"""The resource kinds the simulator serves, with discovery data and selectable fields."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

FieldFn = Callable[[dict[str, Any]], dict[str, str]]

CRUD_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class Column:
    """A `kubectl get` column (server-side Table), as in a CRD's additionalPrinterColumns."""

    name: str
    type: str
    json_path: str
    priority: int = 0
    description: str = ""


@dataclass(frozen=True)
class KindInfo:
    """One served resource: names, scope, and which fields a fieldSelector may use."""

    kind: str
    plural: str
    group: str
    version: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = CRUD_VERBS
    subresources: tuple[str, ...] = ()
    extra_fields: tuple[str, ...] = ()
    builtin: bool = True  # core/aggregated types omit kind/apiVersion on list items; CRDs keep them
    columns: tuple[Column, ...] = ()
    source: str = ""  # gputui source name, e.g. "pdbs"
    model: str = ""  # official client model class; "" for CRDs (no model) and create-only kinds

    def __post_init__(self) -> None:
        if not self.model and self.builtin and self.verbs != ("create",):
            prefix = "CoreV1" if self.kind == "Event" else "V1"
            object.__setattr__(self, "model", f"{prefix}{self.kind}")

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def resource(self) -> str:
        """The qualified resource name used in RBAC messages: `pods`, `nodeclaims.karpenter.sh`."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def selectable_fields(self) -> frozenset[str]:
        base = {"metadata.name", "metadata.namespace"}
        return frozenset(base | set(self.extra_fields))

    @cached_property
    def type_prefix(self) -> bytes:
        """Serialized opening of a full object: `{"kind":"Pod","apiVersion":"v1",`."""
        return f'{{"kind":"{self.kind}","apiVersion":"{self.api_version}",'.encode()

    @cached_property
    def field_paths(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(selector name, path parts) for the kind-specific selectable fields."""
        return tuple((name, tuple(_FIELD_PATHS.get(name, name).split("."))) for name in self.extra_fields)


def _text(value: Any) -> str:
    if value.__class__ is str:
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def field_values(info: KindInfo, obj: dict[str, Any]) -> dict[str, str]:
    """Values of every selectable field of `obj` (missing fields read as "", like the apiserver)."""
    md = obj.get("metadata") or {}
    out = {"metadata.name": _text(md.get("name")), "metadata.namespace": _text(md.get("namespace"))}
    for name, parts in info.field_paths:
        cur: Any = obj
        for part in parts:
            cur = cur.get(part) if isinstance(cur, dict) else None
        out[name] = _text(cur)
    return out


# Selector names whose value lives elsewhere in the object (core/v1 Event `source` is source.component).
_FIELD_PATHS = {"source": "source.component"}


_AGE = Column("Age", "date", ".metadata.creationTimestamp", 0, "CreationTimestamp is a timestamp")

_KINDS: tuple[KindInfo, ...] = (
    KindInfo(
        "Node", "nodes", "", "v1", False, "node", ("no",), (), subresources=("status", "proxy"),
        extra_fields=("spec.unschedulable",), source="nodes",
    ),
    KindInfo(
        "Pod", "pods", "", "v1", True, "pod", ("po",), ("all",),
        subresources=("status", "log", "eviction", "exec", "attach", "portforward", "ephemeralcontainers"),
        extra_fields=(
            "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
            "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName",
        ),
        source="pods",
    ),
    KindInfo(
        "Event", "events", "", "v1", True, "event", ("ev",), (),
        extra_fields=(
            "involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
            "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
            "reason", "reportingComponent", "source", "type",
        ),
        source="events",
    ),
    KindInfo(
        "Namespace", "namespaces", "", "v1", False, "namespace", ("ns",), (),
        verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
        subresources=("status", "finalize"), extra_fields=("status.phase",), source="namespaces",
    ),
    KindInfo("Service", "services", "", "v1", True, "service", ("svc",), ("all",), subresources=("status", "proxy"),
             source="services"),
    KindInfo("ConfigMap", "configmaps", "", "v1", True, "configmap", ("cm",), ()),
    KindInfo("ResourceQuota", "resourcequotas", "", "v1", True, "resourcequota", ("quota",), (),
             subresources=("status",)),
    KindInfo("LimitRange", "limitranges", "", "v1", True, "limitrange", ("limits",), ()),
    KindInfo("DaemonSet", "daemonsets", "apps", "v1", True, "daemonset", ("ds",), ("all",),
             subresources=("status",), source="daemonsets"),
    KindInfo("Deployment", "deployments", "apps", "v1", True, "deployment", ("deploy",), ("all",),
             subresources=("status", "scale")),
    KindInfo("ReplicaSet", "replicasets", "apps", "v1", True, "replicaset", ("rs",), ("all",),
             subresources=("status", "scale")),
    KindInfo("StatefulSet", "statefulsets", "apps", "v1", True, "statefulset", ("sts",), ("all",),
             subresources=("status", "scale")),
    KindInfo("Job", "jobs", "batch", "v1", True, "job", (), ("all",), subresources=("status",)),
    KindInfo("PodDisruptionBudget", "poddisruptionbudgets", "policy", "v1", True, "poddisruptionbudget",
             ("pdb",), (), subresources=("status",), source="pdbs"),
    KindInfo("RuntimeClass", "runtimeclasses", "node.k8s.io", "v1", False, "runtimeclass", (), (),
             source="runtimeclasses"),
    KindInfo("PriorityClass", "priorityclasses", "scheduling.k8s.io", "v1", False, "priorityclass", ("pc",), ()),
    # Dynamic Resource Allocation (GA in 1.34): GPUs of a DRA driver are ResourceSlice devices, pods get them
    # through ResourceClaims.
    KindInfo("ResourceClaim", "resourceclaims", "resource.k8s.io", "v1", True, "resourceclaim", (), (),
             subresources=("status",), model="ResourceV1ResourceClaim"),
    KindInfo("ResourceSlice", "resourceslices", "resource.k8s.io", "v1", False, "resourceslice", (), (),
             extra_fields=("spec.nodeName", "spec.driver")),
    KindInfo("DeviceClass", "deviceclasses", "resource.k8s.io", "v1", False, "deviceclass", (), ()),
    KindInfo(
        "NodeClaim", "nodeclaims", "karpenter.sh", "v1", False, "nodeclaim", (), ("karpenter",),
        subresources=("status",), builtin=False, source="nodeclaims",
        columns=(
            Column("Type", "string", ".metadata.labels.node\\.kubernetes\\.io/instance-type"),
            Column("Capacity", "string", ".metadata.labels.karpenter\\.sh/capacity-type"),
            Column("Zone", "string", ".metadata.labels.topology\\.kubernetes\\.io/zone"),
            Column("Node", "string", ".status.nodeName"),
            Column("Ready", "string", '.status.conditions[?(@.type=="Ready")].status'),
            _AGE,
            Column("ImageID", "string", ".status.imageID", 1),
            Column("ID", "string", ".status.providerID", 1),
            Column("NodePool", "string", ".metadata.labels.karpenter\\.sh/nodepool", 1),
            Column("NodeClass", "string", ".spec.nodeClassRef.name", 1),
            Column("Drifted", "string", '.status.conditions[?(@.type=="Drifted")].status', 1),
        ),
    ),
    KindInfo(
        "NodePool", "nodepools", "karpenter.sh", "v1", False, "nodepool", (), ("karpenter",),
        subresources=("status",), builtin=False, source="nodepools",
        columns=(
            Column("NodeClass", "string", ".spec.template.spec.nodeClassRef.name"),
            Column("Nodes", "string", ".status.nodes"),
            Column("Ready", "string", '.status.conditions[?(@.type=="Ready")].status'),
            _AGE,
            Column("Weight", "integer", ".spec.weight", 1),
            Column("CPU", "string", ".status.resources.cpu", 1),
            Column("Memory", "string", ".status.resources.memory", 1),
        ),
    ),
    KindInfo(
        "EC2NodeClass", "ec2nodeclasses", "karpenter.k8s.aws", "v1", False, "ec2nodeclass", ("ec2nc", "ec2ncs"),
        ("karpenter",), subresources=("status",), builtin=False, source="ec2nodeclasses",
        columns=(
            Column("Ready", "string", '.status.conditions[?(@.type=="Ready")].status'),
            _AGE,
            Column("Role", "string", ".spec.role", 1),
        ),
    ),
    KindInfo("SelfSubjectAccessReview", "selfsubjectaccessreviews", "authorization.k8s.io", "v1", False,
             "selfsubjectaccessreview", (), (), verbs=("create",)),
)


@dataclass
class KindRegistry:
    """Lookups by kind, plural, short name, `plural.group` and (group, version, plural)."""

    kinds: tuple[KindInfo, ...]
    _by_name: dict[str, KindInfo] = field(default_factory=dict, repr=False)
    _by_path: dict[tuple[str, str, str], KindInfo] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for info in self.kinds:
            self._by_path[(info.group, info.version, info.plural)] = info
            names = {info.kind, info.kind.lower(), info.plural, info.singular, info.resource, *info.short_names}
            if info.group:
                names |= {f"{info.kind}.{info.group}", f"{info.singular}.{info.group}"}
            for n in names:
                if n:
                    self._by_name.setdefault(n, info)
                    self._by_name.setdefault(n.lower(), info)

    def resolve(self, name: str) -> KindInfo:
        """Find a kind by any name a user would type (`Pod`, `pods`, `po`, `nodeclaims.karpenter.sh`)."""
        info = self._by_name.get(name) or self._by_name.get(name.lower())
        if info is None:
            raise KeyError(f"unknown kind or resource {name!r}")
        return info

    def get(self, name: str) -> KindInfo | None:
        return self._by_name.get(name) or self._by_name.get(name.lower())

    def by_path(self, group: str, version: str, plural: str) -> KindInfo | None:
        return self._by_path.get((group, version, plural))

    def groups(self) -> dict[str, list[str]]:
        """Group name -> versions, in first-seen order (core group is "")."""
        out: dict[str, list[str]] = {}
        for info in self.kinds:
            versions = out.setdefault(info.group, [])
            if info.version not in versions:
                versions.append(info.version)
        return out

    def in_group_version(self, group: str, version: str) -> Iterable[KindInfo]:
        return (k for k in self.kinds if k.group == group and k.version == version)


KINDS = KindRegistry(_KINDS)


def resolve(name: str) -> KindInfo:
    """Module-level shortcut for `KINDS.resolve`."""
    return KINDS.resolve(name)
