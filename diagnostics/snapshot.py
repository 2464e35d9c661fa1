"""The immutable Snapshot checks read, the per-source status, and an index built once per snapshot."""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from typing import TYPE_CHECKING, Any

from diagnostics.records import (
    DaemonSet,
    Event,
    Node,
    NodeClaim,
    NodeClass,
    NodePool,
    Pdb,
    Pod,
    RuntimeClass,
    accelerator_total,
)
from diagnostics.carry import CARRIED, Generations, canonical
from diagnostics.index_parts import build_events, build_pods
from diagnostics.facts.pool_accelerators import accelerators_for

if TYPE_CHECKING:  # both modules read Snapshot: imported for the annotations only
    from diagnostics.facts.aws_facts import AwsFacts
    from diagnostics.facts.metric_facts import MetricFacts

# Source names (check `requires=` and SourceStatus keys).
KUBE_SOURCES = ("nodes", "pods", "events", "namespaces", "daemonsets", "pdbs", "runtimeclasses",
                "nodeclaims", "nodepools", "ec2nodeclasses")
OTHER_SOURCES = ("aws", "prometheus", "nvidia-smi")


class SourceState(str, enum.Enum):
    OK = "ok"
    FORBIDDEN = "forbidden"
    ABSENT = "not installed"
    UNREACHABLE = "unreachable"
    STALE = "stale"
    NOT_CONFIGURED = "not configured"
    LOADING = "loading"

    @property
    def usable(self) -> bool:
        """Stale data is still data: checks run on it and the status line says how old it is."""
        return self in (SourceState.OK, SourceState.STALE)

    @property
    def absent(self) -> bool:
        """The component is not there (a CRD not installed, a source not configured): a fact about the
        cluster, not something gputui was kept from seeing."""
        return self in (SourceState.ABSENT, SourceState.NOT_CONFIGURED)


@dataclass(frozen=True, slots=True)
class SourceStatus:
    name: str
    state: SourceState
    detail: str = ""
    """For forbidden: the missing permission (`list nodeclaims.karpenter.sh`); else the error."""
    updated_at: datetime | None = None
    partial: bool = False
    """True when only what one target needs was read (e.g. `diagnose pod/X` reads that pod, not all)."""

    def reason(self) -> str:
        """The sentence a skipped check shows."""
        if self.state is SourceState.FORBIDDEN:
            return f"{self.name}: forbidden ({self.detail or 'no permission'})"
        if self.state is SourceState.ABSENT:
            return f"{self.name}: not installed ({self.detail or 'CRD absent'})"
        if self.state is SourceState.NOT_CONFIGURED:
            return f"{self.name}: not configured" + (f" ({self.detail})" if self.detail else "")
        if self.state is SourceState.UNREACHABLE:
            return f"{self.name}: unreachable ({self.detail})" if self.detail else f"{self.name}: unreachable"
        if self.state is SourceState.LOADING:
            return f"{self.name}: not loaded yet"
        return f"{self.name}: {self.state.value}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"state": self.state.value}
        if self.detail:
            out["detail"] = self.detail
        if self.updated_at:
            out["updated_at"] = self.updated_at.isoformat().replace("+00:00", "Z")
        if self.partial:
            out["partial"] = True
        return out


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class Snapshot:
    """Everything the checks may read, frozen at `taken_at`. Ages are measured from `taken_at`."""

    taken_at: datetime
    nodes: tuple[Node, ...] = ()
    pods: tuple[Pod, ...] = ()
    events: tuple[Event, ...] = ()
    namespaces: tuple[str, ...] = ()
    daemonsets: tuple[DaemonSet, ...] = ()
    pdbs: tuple[Pdb, ...] = ()
    runtimeclasses: tuple[RuntimeClass, ...] = ()
    nodeclaims: tuple[NodeClaim, ...] = ()
    nodepools: tuple[NodePool, ...] = ()
    ec2nodeclasses: tuple[NodeClass, ...] = ()
    sources: Mapping[str, SourceStatus] = field(default_factory=dict)
    cluster: Mapping[str, Any] = field(default_factory=dict)
    """Context name, server, Kubernetes version; the server is sensitive (bundles hash it)."""
    aws: AwsFacts | None = None
    """AWS facts when the AWS source ran."""
    metrics: MetricFacts | None = None
    """Prometheus samples (diagnostics.facts.metric_facts.MetricFacts) when Prometheus was queried."""
    gpu_reports: Mapping[str, Any] = field(default_factory=dict)
    """nvidia-smi results by node name (plain JSON from the debug pod parser)."""
    pod_logs: Mapping[str, str] = field(default_factory=dict)
    """Log tails of the accelerator-stack containers that keep a GPU node from advertising its GPUs, by
    `namespace/pod/container` (the previous run's when it restarted); read by the one-shot collection
    (diagnostics.facts.accelerator_stack.logs_to_read), absent in the live view."""
    resource_claims: Mapping[str, Any] = field(default_factory=dict)
    """DRA ResourceClaims pending pods wait on, by `namespace/name`: the object as read, or `{"error": why}`
    when it could not be read; read by the one-shot collection (gputui.collect.dra_claims), absent in the live view."""
    target: str = "cluster"
    pods_read_on: frozenset[str] | None = None
    """When the pods source is partial (read for one target): the nodes whose pods were all read."""

    def status(self, source: str) -> SourceStatus:
        return self.sources.get(source) or SourceStatus(source, SourceState.NOT_CONFIGURED)

    def all_pods_read_on(self, node: str) -> bool:
        """Every pod bound to `node` is in the snapshot: the whole pod list, or that node's pods read for a
        target (`pods_read_on`). Only then may a check conclude from a pod's absence there."""
        st = self.status("pods")
        if not st.state.usable:
            return False
        return not st.partial or node in (self.pods_read_on or ())

    def age(self, when: datetime | None) -> float | None:
        if when is None:
            return None
        return (self.taken_at - when).total_seconds()

    @cached_property
    def index(self) -> Index:
        return Index(self)


_IS_GPU: Generations[bool] = Generations()
_NO_EVENTS: list[Event] = []
"""What `Index.events` returns for an object without events: one shared (never modified) list, so
carried results keyed on an object's events see "no events" as unchanged."""


class Index:
    """Lookups every check needs, built once per snapshot so checks never re-scan all pods.

    Each part is carried over from the previous snapshot while the records it was built from are
    the same objects (see diagnostics.carry): an unchanged cache costs identity checks, not a rebuild.
    The structures are shared between snapshots, so nobody may mutate them.
    """

    def __init__(self, snap: Snapshot) -> None:
        self.memo: dict[object, object] = {}
        """Derived data shared by the checks for this snapshot only (diagnostics.facts.provider's @per_snapshot)."""
        self.sources: dict[str, tuple[Any, ...]] = {
            name: canonical(name, getattr(snap, name))
            for name in ("nodes", "pods", "events", "namespaces", "daemonsets", "pdbs", "runtimeclasses",
                         "nodeclaims", "nodepools", "ec2nodeclasses")}
        """Each source's records, as the tuple the previous snapshot had when they are the same objects:
        an identity test tells whether a source changed (keys for carried data)."""
        src = self.sources
        self.node, self.nodes_by_pool = CARRIED.get(("index", "nodes"), (src["nodes"],),
                                                    lambda: _index_nodes(snap.nodes))
        (self.nodeclaim, self.nodeclaim_by_node, self.nodeclaim_by_provider,
         self.nodeclaims_by_pool) = CARRIED.get(("index", "nodeclaims"), (src["nodeclaims"], src["nodes"]),
                                                lambda: _index_claims(snap.nodeclaims, snap.nodes))
        self.nodepool, self.pools_by_class = CARRIED.get(("index", "nodepools"), (src["nodepools"],),
                                                         lambda: _index_pools(snap.nodepools))
        self.nodeclass = CARRIED.get(("index", "ec2nodeclasses"), (src["ec2nodeclasses"],),
                                     lambda: {c.name: c for c in snap.ec2nodeclasses})
        # Patched from the previous snapshot's part when only a few pods or events changed.
        pods = CARRIED.get(("index", "pods"), (src["pods"],),
                           lambda: build_pods(src["pods"], CARRIED.previous(("index", "pods"))))
        self.pod, self.pods_by_node, self.pending = pods.by_key, pods.by_node, pods.pending
        self._pods_part = pods
        events = CARRIED.get(("index", "events"), (src["events"],),
                             lambda: build_events(src["events"], CARRIED.previous(("index", "events"))))
        by_object, untimed = events.by_object, events.untimed
        if untimed:
            # Events without any timestamp sort as of `taken_at`: order those lists for this snapshot only.
            by_object = defaultdict(list, by_object)
            for key in untimed:
                by_object[key] = sorted(untimed[key], key=lambda e: e.last_seen or e.first_seen or snap.taken_at)
        self.events_by_object: dict[tuple[str, str | None, str], list[Event]] = by_object

    def events(self, kind: str, name: str, namespace: str | None = None) -> list[Event]:
        """Events on one object, oldest first."""
        return self.events_by_object.get((kind, namespace or None, name), _NO_EVENTS)

    def nodes_with_changed_pods(self, earlier: Mapping[str, list[Pod]]) -> Collection[str]:
        """Nodes whose pod lists differ (as objects) between `earlier`, an earlier index's `pods_by_node`, and this one's.

        Costs what changed when this index's pods were patched from `earlier`'s (the usual case in a live cache).
        """
        return self._pods_part.nodes_changed_since(earlier)

    def first_pod(self, key: object, predicate: Callable[[Pod], bool]) -> Pod | None:
        """The first pod in source order for which `predicate` (a function of the record alone, named by `key`)
        holds. Carried: when a few pods changed, only they are tested."""
        part = self._pods_part
        found = CARRIED.get(("first-pod", key), (part.items,),
                            lambda: (part.items, part.first_match(CARRIED.previous(("first-pod", key)), predicate)))
        return None if found[1] is None else part.items[found[1]]

    def gpus_requested_on(self, node: str) -> float:
        """Accelerators held by non-terminal pods bound to the node (what the scheduler counts)."""
        return sum(p.gpus for p in self.pods_by_node.get(node, ()) if not p.terminal)

    @property
    def gpu_nodes(self) -> list[tuple[Node, NodeClaim | None]]:
        """Nodes with accelerators or that should have them (is_gpu_node), with their NodeClaims, in order.

        Carried while nodes and NodeClaims are unchanged; when some change, only those are judged again.
        """
        nodes = self.sources["nodes"]

        def compute() -> list[tuple[Node, NodeClaim | None]]:
            out = []
            for n in nodes:
                claim = self.nodeclaim_by_node.get(n.name)
                if _IS_GPU.of(self, n, (claim,), lambda: is_gpu_node(n, claim)):  # noqa: B023 - called at once
                    out.append((n, claim))
            return out

        return CARRIED.get(("index", "gpu-nodes"), (nodes, self.sources["nodeclaims"]), compute)

    @property
    def pending_gpu_pods(self) -> list[Pod]:
        return CARRIED.get(("index", "pending-gpu"), (self.pending,),
                           lambda: [p for p in self.pending if p.wants_accelerator])


def _index_nodes(nodes: tuple[Node, ...]) -> tuple[dict[str, Node], dict[str, list[Node]]]:
    by_name = {n.name: n for n in nodes}
    by_pool: dict[str, list[Node]] = defaultdict(list)
    for n in nodes:
        if n.nodepool:
            by_pool[n.nodepool].append(n)
    return by_name, by_pool


def _index_claims(claims: tuple[NodeClaim, ...], nodes: tuple[Node, ...]) -> tuple[
        dict[str, NodeClaim], dict[str, NodeClaim], dict[str, NodeClaim], dict[str, list[NodeClaim]]]:
    by_name = {c.name: c for c in claims}
    by_node: dict[str, NodeClaim] = {}
    by_provider: dict[str, NodeClaim] = {}
    by_pool: dict[str, list[NodeClaim]] = defaultdict(list)
    for c in claims:
        if c.node_name:
            by_node[c.node_name] = c
        if c.provider_id:
            by_provider[c.provider_id] = c
        by_pool[c.nodepool].append(c)
    for n in nodes:
        if n.name not in by_node and n.provider_id in by_provider:
            by_node[n.name] = by_provider[n.provider_id]
    return by_name, by_node, by_provider, by_pool


def _index_pools(pools: tuple[NodePool, ...]) -> tuple[dict[str, NodePool], dict[str, list[NodePool]]]:
    by_class: dict[str, list[NodePool]] = defaultdict(list)
    for np in pools:
        by_class[np.node_class].append(np)
    return {p.name: p for p in pools}, by_class


def node_should_have_gpus(node: Node, claim: NodeClaim | None = None) -> float:
    """How many accelerators the node *should* advertise, from every signal a real cluster may carry.

    Karpenter (`karpenter.k8s.aws/instance-gpu-count`, `-accelerator-count`), GPU Feature Discovery
    (`nvidia.com/gpu.count`), GKE (`cloud.google.com/gke-accelerator-count`), the NodeClaim's
    estimate (`status.capacity`) or what it was launched for (`spec.resources.requests`), the
    instance type's known accelerator count, or a GPU taint on the node.
    Returns 0 when nothing says the node is a GPU node.
    """
    labels = node.labels
    for key in ("karpenter.k8s.aws/instance-gpu-count", "nvidia.com/gpu.count",
                "cloud.google.com/gke-accelerator-count", "karpenter.k8s.aws/instance-accelerator-count"):
        raw = labels.get(key)
        if raw:
            try:
                n = float(raw)
            except ValueError:
                continue
            if n > 0:
                return n
    if claim is not None:
        n = max(accelerator_total(claim.capacity), accelerator_total(claim.requests))
        if n > 0:
            return n
    known = accelerators_for(node.instance_type)
    if known is not None:
        return float(known[1])
    if any(t.key in ("nvidia.com/gpu", "amd.com/gpu", "aws.amazon.com/neuron") for t in node.taints):
        return max(1.0, accelerator_total(node.capacity))
    # NFD's AMD rule label is the AMD GPU Operator's node selector (ROCm/gpu-operator DeviceConfig default).
    if labels.get("cloud.google.com/gke-accelerator") or labels.get("nvidia.com/gpu.present") == "true" \
            or labels.get("feature.node.kubernetes.io/amd-gpu") == "true":
        return max(1.0, accelerator_total(node.capacity))
    return 0.0


def is_gpu_node(node: Node, claim: NodeClaim | None = None) -> bool:
    return accelerator_total(node.capacity) > 0 or node_should_have_gpus(node, claim) > 0
