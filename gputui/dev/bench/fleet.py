"""A seeded, realistic EKS + Karpenter GPU fleet at three scales, streamed as Kubernetes objects.

Objects have the sizes real clusters serve (pods ~5 KB with managedFields, nodes ~12 KB with
image lists), because list and parse costs scale with bytes, not object counts. The fleet is
mostly healthy with the failures an on-call engineer meets at scale: pending GPU pods behind a
NodePool at its GPU limit, Spot shortage on in-flight NodeClaims, an EC2NodeClass whose security
groups are gone, GPU nodes not advertising GPUs or NotReady.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import orjson

Obj = dict[str, Any]

BENCH_LABEL = "bench.gputui.dev/fleet"
"""Every generated object carries it (value: the scale), so a fleet is recognisable in any cluster."""


@dataclass(frozen=True, slots=True)
class Scale:
    name: str
    nodes: int
    gpu_nodes: int
    pods: int
    gpu_pods: int
    """Pods requesting GPUs, pending ones included."""
    pending: int
    """Pending GPU pods (each asks for a whole 8-GPU node)."""
    nodeclaims: int
    nodepools: int
    nodeclasses: int
    events: int
    teams: int
    gpus_per_node: int = 8

    @property
    def cpu_nodes(self) -> int:
        return self.nodes - self.gpu_nodes

    @property
    def daemonset_pods(self) -> int:
        return self.cpu_nodes * len(_CPU_DAEMONSETS) + self.gpu_nodes * (len(_CPU_DAEMONSETS) + len(_GPU_DAEMONSETS))

    @property
    def cpu_pods(self) -> int:
        return self.pods - self.daemonset_pods - self.gpu_pods


SCALES: dict[str, Scale] = {
    "S": Scale("S", nodes=100, gpu_nodes=40, pods=1_000, gpu_pods=300, pending=20, nodeclaims=44,
               nodepools=8, nodeclasses=3, events=500, teams=6),
    "M": Scale("M", nodes=1_000, gpu_nodes=400, pods=12_000, gpu_pods=3_000, pending=200, nodeclaims=420,
               nodepools=16, nodeclasses=5, events=6_000, teams=20),
    "L": Scale("L", nodes=5_000, gpu_nodes=2_000, pods=60_000, gpu_pods=16_000, pending=1_000, nodeclaims=2_100,
               nodepools=40, nodeclasses=10, events=30_000, teams=40),
}

ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
ZONES = (("us-east-1a", "use1-az1"), ("us-east-1b", "use1-az2"), ("us-east-1c", "use1-az4"),
         ("us-east-1d", "use1-az6"))
ACCOUNT = "381492650713"
CLUSTER = "ml-prod"
KUBELET = "v1.31.4-eks-aeac579"


@dataclass(frozen=True, slots=True)
class InstanceType:
    name: str
    cpu: int
    memory_mib: int
    gpu_name: str = ""
    gpu_product: str = ""
    gpu_memory: int = 0
    gpus: int = 0
    family: str = ""
    category: str = ""
    pods: int = 234


GPU_TYPES = (
    InstanceType("p5.48xlarge", 192, 2_097_152, "h100", "NVIDIA-H100-80GB-HBM3", 81_559, 8, "p5", "p", 100),
    InstanceType("p4d.24xlarge", 96, 1_179_648, "a100", "NVIDIA-A100-SXM4-40GB", 40_960, 8, "p4d", "p", 737),
    InstanceType("p4de.24xlarge", 96, 1_179_648, "a100", "NVIDIA-A100-SXM4-80GB", 81_920, 8, "p4de", "p", 737),
    InstanceType("g6e.48xlarge", 192, 1_572_864, "l40s", "NVIDIA-L40S", 46_068, 8, "g6e", "g", 737),
)
CPU_TYPES = (
    InstanceType("m6i.4xlarge", 16, 65_536, family="m6i", category="m", pods=234),
    InstanceType("m7i.8xlarge", 32, 131_072, family="m7i", category="m", pods=234),
    InstanceType("c6i.8xlarge", 32, 65_536, family="c6i", category="c", pods=234),
    InstanceType("r6i.4xlarge", 16, 131_072, family="r6i", category="r", pods=234),
)

_CPU_DAEMONSETS = (
    ("kube-system", "aws-node", "602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni:v1.19.2-eksbuild.1"),
    ("kube-system", "kube-proxy", "602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/kube-proxy:v1.31.3-minimal-eksbuild.2"),
    ("kube-system", "ebs-csi-node", "602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/aws-ebs-csi-driver:v1.38.1"),
)
_GPU_DAEMONSETS = (
    ("gpu-operator", "nvidia-device-plugin-daemonset", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"),
    ("gpu-operator", "gpu-feature-discovery", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"),
    ("gpu-operator", "nvidia-dcgm-exporter", "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04"),
)
_GPU_IMAGES = (
    ("nvcr.io/nvidia/pytorch", "24.05-py3", 9_841_123_456),
    ("nvcr.io/nvidia/tritonserver", "24.08-py3", 7_420_331_102),
    ("nvcr.io/nvidia/cuda", "12.4.1-base-ubuntu22.04", 91_331_002),
    ("vllm/vllm-openai", "v0.6.3", 5_120_441_987),
    ("nvcr.io/nvidia/k8s-device-plugin", "v0.17.0", 127_010_331),
    ("nvcr.io/nvidia/k8s/dcgm-exporter", "3.3.9-3.6.1-ubuntu22.04", 375_221_009),
    ("nvcr.io/nvidia/gpu-operator", "v24.9.1", 93_441_870),
    ("nvcr.io/nvidia/cloud-native/k8s-driver-manager", "v0.7.0", 254_102_563),
)
_BASE_IMAGES = (
    ("602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni", "v1.19.2-eksbuild.1", 43_210_998),
    ("602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni-init", "v1.19.2-eksbuild.1", 61_002_331),
    ("602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/kube-proxy", "v1.31.3-minimal-eksbuild.2", 34_771_004),
    ("602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/aws-ebs-csi-driver", "v1.38.1", 36_554_120),
    ("602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/csi-node-driver-registrar", "v2.12.0-eks-1-31-12", 9_012_441),
    ("602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/livenessprobe", "v2.14.0-eks-1-31-12", 8_224_903),
    ("602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/pause", "3.5", 298_689),
    ("public.ecr.aws/aws-observability/aws-for-fluent-bit", "2.32.4", 113_004_221),
)


@dataclass
class Workload:
    namespace: str
    name: str
    kind: str  # Deployment | Job | StatefulSet
    image: str
    gpus: int
    cpu: str
    memory: str
    team: str
    uid: str
    hash: str = ""
    pool: str = ""
    tolerate_gpu: bool = True
    managed: dict[str, Any] = field(default_factory=dict)
    """fieldsV1 of the controller's update, shared by every replica (same shape)."""


@dataclass
class FleetIndex:
    """What the benchmark needs to know about a generated fleet without reading it back."""

    counts: dict[str, int] = field(default_factory=dict)
    pending_pods: list[tuple[str, str]] = field(default_factory=list)
    gpu_pods: list[tuple[str, str]] = field(default_factory=list)
    """Bound GPU pods (namespace, name): the watch burst flips their phase, which the TUI shows."""
    other_pods: list[tuple[str, str]] = field(default_factory=list)
    gpu_nodes: list[str] = field(default_factory=list)
    bytes_by_kind: dict[str, int] = field(default_factory=dict)


def _fields(v: Any, depth: int = 0) -> Any:
    """An approximation of a managedFields `fieldsV1` tree for `v` (same shape as the API server's, 3 levels)."""
    if depth >= 3:
        return {}
    if isinstance(v, dict):
        return {f"f:{k}": _fields(x, depth + 1) if isinstance(x, (dict, list)) else {} for k, x in v.items()}
    if isinstance(v, list) and v and isinstance(v[0], dict):
        out: dict[str, Any] = {}
        for item in v:
            key = next(((k, item[k]) for k in ("name", "type", "containerPort", "mountPath", "key", "ip", "address")
                        if k in item), None)
            if key is None:
                return {}
            sub = {f"f:{k}": _fields(x, depth + 1) if isinstance(x, (dict, list)) else {} for k, x in item.items()
                   if k != key[0]}
            out["k:" + orjson.dumps({key[0]: key[1]}).decode()] = {".": {}, **sub}
        return out
    return {}


def _status_fields(status: dict[str, Any]) -> dict[str, Any]:
    """The kubelet's status entry: conditions by type; containerStatuses is an atomic list."""
    out: dict[str, Any] = {f"f:{k}": {} for k in status if k != "conditions"}
    out["f:conditions"] = {f'k:{{"type":"{c["type"]}"}}': {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {},
                                                          "f:status": {}, "f:type": {}}
                           for c in status.get("conditions", ())}
    return out


def _managed(manager: str, at: str, tree: dict[str, Any], subresource: str | None = None,
             api_version: str = "v1") -> Obj:
    entry: Obj = {"apiVersion": api_version, "fieldsType": "FieldsV1", "fieldsV1": tree, "manager": manager,
                  "operation": "Update", "time": at}
    if subresource:
        entry["subresource"] = subresource
    return entry


class Fleet:
    """`objects()` streams the fleet (namespaces first, events last); `index` fills in as it goes."""

    def __init__(self, scale: Scale | str, *, seed: int = 20260821, now: datetime | None = None) -> None:
        self.scale = SCALES[scale] if isinstance(scale, str) else scale
        if self.scale.cpu_pods < 0:
            raise ValueError(f"scale {self.scale.name}: more DaemonSet and GPU pods than pods")
        self.rng = random.Random(seed)
        self.now = (now or datetime.now(timezone.utc)).replace(microsecond=0)
        self.index = FleetIndex()
        self._ts_cache: dict[int, str] = {}
        self._nodes: list[dict[str, Any]] = []  # name, itype, zone, pool, gpu, ip, claim, broken
        self._class_names: list[str] = []
        self._pool_names: list[str] = []
        self._gpu_pools: list[str] = []
        self._pool_uid: dict[str, str] = {}
        self._pool_specs: dict[str, tuple[str, list[Obj]]] = {}
        self._limit_pool = ""
        self._broken_pool = ""
        self._broken_class = ""
        self._teams = [f"team-{t}" for t in _team_names(self.scale.teams)]
        self._claims: list[tuple[str, str]] = []  # (claim name, node name or "") for events
        self._inflight: list[tuple[str, str]] = []  # (claim name, pool)
        self._pods_for_events: list[tuple[str, str, str, str]] = []  # ns, name, uid, node
        self._pod_names: set[tuple[str, str]] = set()

    # --- small helpers ---
    def ts(self, seconds_ago: float) -> str:
        s = int(seconds_ago)
        hit = self._ts_cache.get(s)
        if hit is None:
            hit = (self.now - timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%SZ")
            if len(self._ts_cache) < 200_000:
                self._ts_cache[s] = hit
        return hit

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def suffix(self, k: int = 5) -> str:
        return "".join(self.rng.choices(ALPHABET, k=k))

    def unique(self, namespace: str, make: Any) -> str:
        """A pod name from `make()` not yet used in the namespace (random suffixes do collide at 60k pods)."""
        while True:
            name = make()
            if (namespace, name) not in self._pod_names:
                self._pod_names.add((namespace, name))
                return str(name)

    def hexid(self, k: int = 16) -> str:
        return f"{self.rng.getrandbits(4 * k):0{k}x}"

    def _count(self, source: str, obj: Obj) -> Obj:
        self.index.counts[source] = self.index.counts.get(source, 0) + 1
        return obj

    # --- the stream ---
    def objects(self) -> Iterator[Obj]:
        yield from self._namespaces()
        yield self._count("runtimeclasses", {
            "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "handler": "nvidia",
            "metadata": {"name": "nvidia", "uid": self.uid(), "creationTimestamp": self.ts(86400 * 120),
                         "labels": {BENCH_LABEL: self.scale.name}}})
        yield from self._nodeclasses()
        self._plan_nodepools()
        yield from self._nodes_and_claims()  # NodePools follow their nodes: status counts them
        yield from self._daemonsets()
        yield from self._pdbs()
        yield from self._pods()
        yield from self._events()

    def all_objects(self) -> list[Obj]:
        return list(self.objects())

    # --- namespaces, classes, pools ---
    def _namespaces(self) -> Iterator[Obj]:
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease", "gpu-operator", "karpenter",
                   "monitoring", *self._teams):
            md: Obj = {"name": ns, "uid": self.uid(), "creationTimestamp": self.ts(86400 * 200),
                       "labels": {"kubernetes.io/metadata.name": ns, BENCH_LABEL: self.scale.name}}
            if ns == "gpu-operator":
                md["labels"]["pod-security.kubernetes.io/enforce"] = "privileged"
            yield self._count("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": md,
                                             "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})

    def _nodeclasses(self) -> Iterator[Obj]:
        names = ["gpu-al2023", "default", "gpu-efa", "gpu-bottlerocket", "gpu-al2023-large-disk", "cpu-bottlerocket",
                 "gpu-al2023-fsx", "gpu-inference", "batch", "system"][: self.scale.nodeclasses]
        self._class_names = names
        self._broken_class = "gpu-efa" if "gpu-efa" in names else names[-1]
        for i, name in enumerate(names):
            broken = name == self._broken_class
            created = 86400 * (60 + i)
            ready_at = self.ts(created - 8)
            conds = [
                {"lastTransitionTime": ready_at, "message": "", "observedGeneration": 3, "reason": "AMIsReady",
                 "status": "True", "type": "AMIsReady"},
                {"lastTransitionTime": ready_at, "message": "", "observedGeneration": 3, "reason": "InstanceProfileReady",
                 "status": "True", "type": "InstanceProfileReady"},
                {"lastTransitionTime": ready_at, "message": "", "observedGeneration": 3, "reason": "SubnetsReady",
                 "status": "True", "type": "SubnetsReady"},
            ]
            if broken:
                t = self.ts(3600 * 5)
                conds += [
                    {"lastTransitionTime": t, "message": "SecurityGroupSelector did not match any SecurityGroups",
                     "observedGeneration": 4, "reason": "SecurityGroupsNotFound", "status": "False",
                     "type": "SecurityGroupsReady"},
                    {"lastTransitionTime": t, "message": "Awaiting AMI, Instance Profile, Security Group, and Subnet "
                     "resolution", "observedGeneration": 4, "reason": "DependenciesNotReady", "status": "False",
                     "type": "ValidationSucceeded"},
                    {"lastTransitionTime": t, "message": "SecurityGroupsReady=False, ValidationSucceeded=False",
                     "observedGeneration": 4, "reason": "UnhealthyDependents", "status": "False", "type": "Ready"},
                ]
            else:
                conds += [
                    {"lastTransitionTime": ready_at, "message": "", "observedGeneration": 3,
                     "reason": "SecurityGroupsReady", "status": "True", "type": "SecurityGroupsReady"},
                    {"lastTransitionTime": ready_at, "message": "", "observedGeneration": 3,
                     "reason": "ValidationSucceeded", "status": "True", "type": "ValidationSucceeded"},
                    {"lastTransitionTime": ready_at, "message": "", "observedGeneration": 3, "reason": "Ready",
                     "status": "True", "type": "Ready"},
                ]
            sg_tag = "ml-prod-efa-removed" if broken else CLUSTER
            gpu = name.startswith("gpu")
            yield self._count("ec2nodeclasses", {
                "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
                "metadata": {"name": name, "uid": self.uid(), "creationTimestamp": self.ts(created), "generation": 4,
                             "finalizers": ["karpenter.k8s.aws/termination"],
                             "labels": {BENCH_LABEL: self.scale.name},
                             "annotations": {"karpenter.k8s.aws/ec2nodeclass-hash": str(self.rng.getrandbits(62)),
                                             "karpenter.k8s.aws/ec2nodeclass-hash-version": "v4"}},
                "spec": {
                    "amiSelectorTerms": [{"alias": "bottlerocket@v1.26.1" if "bottlerocket" in name
                                          else "al2023@v20260805"}],
                    "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {
                        "deleteOnTermination": True, "encrypted": True, "iops": 6000, "throughput": 250,
                        "volumeSize": "500Gi" if gpu else "100Gi", "volumeType": "gp3"}}],
                    "metadataOptions": {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
                                        "httpPutResponseHopLimit": 1, "httpTokens": "required"},
                    "role": f"KarpenterNodeRole-{CLUSTER}",
                    "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": sg_tag}}],
                    "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
                    "tags": {"Environment": "production", "ManagedBy": "karpenter", "NodeClass": name},
                },
                "status": {
                    "amis": [{"id": f"ami-0{self.hexid(16)}", "name": f"amazon-eks-node-al2023-x86_64-"
                              f"{'nvidia' if gpu else 'standard'}-1.31-v20260805",
                              "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}],
                    "conditions": conds,
                    "instanceProfile": f"{CLUSTER}_{self.rng.getrandbits(60)}",
                    "securityGroups": [] if broken else [
                        {"id": f"sg-0{self.hexid(16)}", "name": f"eks-cluster-sg-{CLUSTER}-{self.rng.getrandbits(30)}"}],
                    "subnets": [{"id": f"subnet-0{self.hexid(16)}", "zone": z, "zoneID": zid} for z, zid in ZONES],
                },
            })

    def _plan_nodepools(self) -> None:
        """Names, NodeClasses and requirements of the pools; the objects are built after the nodes."""
        n = self.scale.nodepools
        n_gpu = max(2, n * 3 // 4)
        names: list[str] = []
        gpu_names: list[str] = []
        kinds = ("training", "inference")
        for i in range(n):
            if i < n_gpu:
                team = self._teams[i % len(self._teams)].removeprefix("team-")
                name = f"gpu-{team}-{kinds[i % 2]}-{'spot' if (i // 2) % 2 else 'od'}"
                if name in names:
                    name = f"{name}-{i}"
                gpu_names.append(name)
            else:
                name = ("default", "general-purpose", "batch-cpu", "system", "arm64", "spot-cpu", "memory-optimized",
                        "compute-optimized", "ci-runners", "monitoring")[(i - n_gpu) % 10]
                if name in names:
                    name = f"{name}-{i}"
            names.append(name)
        self._pool_names = names
        # The last GPU pool uses the broken EC2NodeClass and has no nodes; the first is at its GPU limit.
        self._broken_pool = gpu_names[-1]
        self._limit_pool = gpu_names[0]
        self._gpu_pools = gpu_names[:-1]
        for name in names:
            self._pool_uid[name] = self.uid()
        for name in names:
            gpu = name in gpu_names
            spot = name.endswith("-spot")
            klass = self._broken_class if name == self._broken_pool else (
                "gpu-al2023" if gpu else "default")
            reqs: list[Obj] = [
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"] if spot else ["on-demand"]},
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [z for z, _ in ZONES]},
            ]
            if gpu:
                reqs.append({"key": "node.kubernetes.io/instance-type", "operator": "In",
                             "values": [t.name for t in GPU_TYPES]})
            else:
                reqs.append({"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]})
            self._pool_specs[name] = (klass, reqs)

    def _nodepool_obj(self, name: str, nodes: int, gpus: float) -> Obj:
        klass, reqs = self._pool_specs[name]
        gpu = name.startswith("gpu-")
        broken = name == self._broken_pool
        created = self.ts(86400 * 90)
        ok_at = self.ts(86400 * 90 - 8)
        limit = int(gpus) if name == self._limit_pool else max(64, int(gpus * 1.5) // 8 * 8 + 64)
        conds = [
            {"lastTransitionTime": ok_at, "message": "", "observedGeneration": 2, "reason": "ValidationSucceeded",
             "status": "True", "type": "ValidationSucceeded"},
            {"lastTransitionTime": ok_at, "message": "", "observedGeneration": 2, "reason": "NodeRegistrationHealthy",
             "status": "True", "type": "NodeRegistrationHealthy"},
        ]
        if broken:
            t = self.ts(3600 * 5)
            conds += [
                {"lastTransitionTime": t, "message": "SecurityGroupsReady=False, ValidationSucceeded=False",
                 "observedGeneration": 2, "reason": "UnhealthyDependents", "status": "False", "type": "NodeClassReady"},
                {"lastTransitionTime": t, "message": "NodeClassReady=False", "observedGeneration": 2,
                 "reason": "UnhealthyDependents", "status": "False", "type": "Ready"}]
        else:
            conds += [
                {"lastTransitionTime": ok_at, "message": "", "observedGeneration": 2, "reason": "NodeClassReady",
                 "status": "True", "type": "NodeClassReady"},
                {"lastTransitionTime": ok_at, "message": "", "observedGeneration": 2, "reason": "Ready",
                 "status": "True", "type": "Ready"}]
        spec: Obj = {
            "disruption": {"budgets": [{"nodes": "10%"}, {"nodes": "0", "reasons": ["Drifted"],
                                                         "schedule": "0 9 * * mon-fri", "duration": "8h"}],
                           "consolidateAfter": "30m" if gpu else "1m",
                           "consolidationPolicy": "WhenEmpty" if gpu else "WhenEmptyOrUnderutilized"},
            "limits": {"cpu": "20000", "memory": "80000Gi", **({"nvidia.com/gpu": str(limit)} if gpu else {})},
            "template": {
                "metadata": {"labels": {"workload": "gpu" if gpu else "general", BENCH_LABEL: self.scale.name,
                                        **({"nvidia.com/gpu.present": "true"} if gpu else {})}},
                "spec": {"expireAfter": "720h",
                         "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": klass},
                         "requirements": reqs,
                         **({"taints": [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "true"}]}
                            if gpu else {})}},
            "weight": 50 if gpu else 10,
        }
        return self._count("nodepools", {
            "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
            "metadata": {"name": name, "uid": self._pool_uid[name], "creationTimestamp": created, "generation": 2,
                         "labels": {BENCH_LABEL: self.scale.name},
                         "annotations": {"karpenter.sh/nodepool-hash": str(self.rng.getrandbits(62)),
                                         "karpenter.sh/nodepool-hash-version": "v3"}},
            "spec": spec,
            "status": {"conditions": conds, "nodeClassObservedGeneration": 4, "nodes": nodes,
                       "resources": {"cpu": str(nodes * 192), "memory": f"{nodes * 2_000_000}Mi",
                                     "nodes": str(nodes), "pods": str(nodes * 737),
                                     **({"nvidia.com/gpu": f"{gpus:g}"} if gpu else {})}},
        })

    # --- nodes and NodeClaims ---
    def _node_name(self, i: int) -> tuple[str, str]:
        n = 4096 + i * 7
        a, b, c = (n >> 16) & 255, (n >> 8) & 255, n & 255
        return f"ip-10-{a}-{b}-{c}.ec2.internal", f"10.{a}.{b}.{c}"

    def _nodes_and_claims(self) -> Iterator[Obj]:
        sc = self.scale
        rng = self.rng
        pool_nodes: dict[str, int] = {p: 0 for p in self._pool_names}
        pool_gpus: dict[str, float] = {p: 0.0 for p in self._pool_names}
        n_not_advertised = max(1, sc.gpu_nodes // 400)
        n_not_ready = max(1, sc.gpu_nodes // 1000)
        na_stride = max(1, sc.gpu_nodes // n_not_advertised)
        nr_stride = max(1, sc.gpu_nodes // n_not_ready)
        for i in range(sc.nodes):
            gpu = i < sc.gpu_nodes
            name, ip = self._node_name(i)
            itype = GPU_TYPES[i % len(GPU_TYPES)] if gpu else CPU_TYPES[i % len(CPU_TYPES)]
            zone = ZONES[i % len(ZONES)]
            pool = self._gpu_pools[i % len(self._gpu_pools)] if gpu else ""
            broken = ""
            if gpu and i % na_stride == 7 % na_stride:
                broken = "no-gpus"
            elif gpu and i % nr_stride == 13 % nr_stride:
                broken = "not-ready"
            age = 3600 * rng.randint(3, 24 * 20)
            node = {"name": name, "ip": ip, "itype": itype, "zone": zone, "pool": pool, "gpu": gpu, "age": age,
                    "broken": broken, "claim": "", "uid": self.uid(), "spot": pool.endswith("-spot"),
                    "instance": f"i-0{self.hexid(16)}"}
            if gpu:
                node["claim"] = f"{pool}-{self.suffix()}"
                pool_nodes[pool] += 1
                pool_gpus[pool] += itype.gpus
                self.index.gpu_nodes.append(name)
            self._nodes.append(node)
            yield self._count("nodes", self._node_obj(node))
            if gpu:
                yield self._count("nodeclaims", self._claim_obj(node))
        # In-flight NodeClaims: launched for the pending pods, not Ready yet (Spot shortage or registering).
        spot_pools = [p for p in self._gpu_pools if p.endswith("-spot")] or self._gpu_pools
        for j in range(sc.nodeclaims - sc.gpu_nodes):
            pool = spot_pools[j % len(spot_pools)]
            name = f"{pool}-{self.suffix()}"
            self._inflight.append((name, pool))
            yield self._count("nodeclaims", self._inflight_claim(name, pool, j))
        for p in self._pool_names:
            yield self._nodepool_obj(p, pool_nodes[p], pool_gpus[p])

    def _node_labels(self, n: dict[str, Any]) -> dict[str, str]:
        t: InstanceType = n["itype"]
        zone, zone_id = n["zone"]
        labels = {
            "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/instance-type": t.name,
            "beta.kubernetes.io/os": "linux", "failure-domain.beta.kubernetes.io/region": "us-east-1",
            "failure-domain.beta.kubernetes.io/zone": zone, "k8s.io/cloud-provider-aws": "1bf5ef0627d3b14447145b940c8f87be",
            "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": n["name"], "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": t.name, "topology.ebs.csi.aws.com/zone": zone,
            "topology.k8s.aws/zone-id": zone_id, "topology.kubernetes.io/region": "us-east-1",
            "topology.kubernetes.io/zone": zone, BENCH_LABEL: self.scale.name,
        }
        if not n["gpu"]:
            labels.update({"eks.amazonaws.com/capacityType": "ON_DEMAND", "eks.amazonaws.com/nodegroup": "general-ng",
                           "eks.amazonaws.com/nodegroup-image": "ami-0a1b2c3d4e5f60718",
                           "eks.amazonaws.com/sourceLaunchTemplateId": "lt-0d7f2b9a1c3e5f701",
                           "eks.amazonaws.com/sourceLaunchTemplateVersion": "7", "workload": "general"})
            return labels
        labels.update({
            "karpenter.k8s.aws/ec2nodeclass": "gpu-al2023", "karpenter.k8s.aws/instance-category": t.category,
            "karpenter.k8s.aws/instance-cpu": str(t.cpu), "karpenter.k8s.aws/instance-cpu-manufacturer": "intel",
            "karpenter.k8s.aws/instance-ebs-bandwidth": "19000",
            "karpenter.k8s.aws/instance-encryption-in-transit-supported": "true",
            "karpenter.k8s.aws/instance-family": t.family, "karpenter.k8s.aws/instance-generation": t.family[1:2],
            "karpenter.k8s.aws/instance-gpu-count": str(t.gpus), "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
            "karpenter.k8s.aws/instance-gpu-memory": str(t.gpu_memory), "karpenter.k8s.aws/instance-gpu-name": t.gpu_name,
            "karpenter.k8s.aws/instance-hypervisor": "nitro", "karpenter.k8s.aws/instance-local-nvme": "7600",
            "karpenter.k8s.aws/instance-memory": str(t.memory_mib), "karpenter.k8s.aws/instance-network-bandwidth": "400000",
            "karpenter.k8s.aws/instance-size": t.name.split(".")[1],
            "karpenter.sh/capacity-type": "spot" if n["spot"] else "on-demand", "karpenter.sh/initialized": "true",
            "karpenter.sh/nodepool": n["pool"], "karpenter.sh/registered": "true", "workload": "gpu",
            "nvidia.com/cuda.driver-version.full": "580.95.05", "nvidia.com/cuda.driver-version.major": "580",
            "nvidia.com/cuda.runtime-version.full": "13.0", "nvidia.com/gfd.timestamp": str(1_787_040_169 - n["age"]),
            "nvidia.com/gpu.compute.major": "9" if t.gpu_name == "h100" else "8", "nvidia.com/gpu.compute.minor": "0",
            "nvidia.com/gpu.count": str(t.gpus), "nvidia.com/gpu.deploy.container-toolkit": "true",
            "nvidia.com/gpu.deploy.dcgm-exporter": "true", "nvidia.com/gpu.deploy.device-plugin": "true",
            "nvidia.com/gpu.deploy.driver": "pre-installed", "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
            "nvidia.com/gpu.family": "hopper" if t.gpu_name == "h100" else ("ada-lovelace" if t.gpu_name == "l40s"
                                                                             else "ampere"),
            "nvidia.com/gpu.machine": t.name, "nvidia.com/gpu.memory": str(t.gpu_memory),
            "nvidia.com/gpu.mode": "compute", "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": t.gpu_product,
            "nvidia.com/gpu.replicas": "1", "nvidia.com/gpu.sharing-strategy": "none", "nvidia.com/mig.capable": "false",
        })
        return labels

    def _node_obj(self, n: dict[str, Any]) -> Obj:
        t: InstanceType = n["itype"]
        gpus = t.gpus
        alloc_gpus = 0 if n["broken"] == "no-gpus" else gpus
        created = self.ts(n["age"])
        hb = self.ts(self.rng.randint(5, 40))
        ready = n["broken"] != "not-ready"
        md: Obj = {
            "name": n["name"], "uid": n["uid"], "creationTimestamp": created, "labels": self._node_labels(n),
            "annotations": {"alpha.kubernetes.io/provided-node-ip": n["ip"],
                            "node.alpha.kubernetes.io/ttl": "0",
                            "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                            "csi.volume.kubernetes.io/nodeid": orjson.dumps({"ebs.csi.aws.com": n["instance"]}).decode()},
        }
        spec: Obj = {"providerID": f"aws:///{n['zone'][0]}/{n['instance']}"}
        if n["gpu"]:
            md["finalizers"] = ["karpenter.sh/termination"]
            md["ownerReferences"] = [{"apiVersion": "karpenter.sh/v1", "blockOwnerDeletion": True, "kind": "NodeClaim",
                                      "name": n["claim"], "uid": self.uid()}]
            spec["taints"] = [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "true"}]
        if not ready:
            spec.setdefault("taints", []).extend([
                {"effect": "NoSchedule", "key": "node.kubernetes.io/unreachable", "timeAdded": self.ts(1800)},
                {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "timeAdded": self.ts(1795)}])
        mem_ki = t.memory_mib * 1024
        cap = {"cpu": str(t.cpu), "ephemeral-storage": "524275692Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0",
               "memory": f"{mem_ki}Ki", "pods": str(t.pods)}
        alloc = {"cpu": f"{t.cpu * 1000 - 250}m", "ephemeral-storage": "482098489669", "hugepages-1Gi": "0",
                 "hugepages-2Mi": "0", "memory": f"{mem_ki - 2_000_000}Ki", "pods": str(t.pods)}
        if gpus:
            cap["nvidia.com/gpu"] = str(gpus)
            alloc["nvidia.com/gpu"] = str(alloc_gpus)
            if n["broken"] == "no-gpus":
                cap["nvidia.com/gpu"] = "0"
        since = self.ts(n["age"] - 30)

        def cond(type_: str, status: str, reason: str, message: str, at: str = since) -> Obj:
            return {"lastHeartbeatTime": hb, "lastTransitionTime": at, "message": message, "reason": reason,
                    "status": status, "type": type_}

        conditions = [
            cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            cond("Ready", "True", "KubeletReady", "kubelet is posting ready status") if ready else
            cond("Ready", "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.", self.ts(1800)),
        ]
        images = [{"names": [f"{repo}@sha256:{self.hexid(64)}", f"{repo}:{tag}"], "sizeBytes": size}
                  for repo, tag, size in (_BASE_IMAGES + (_GPU_IMAGES if n["gpu"] else ()))]
        images += [{"names": [f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/{team}/svc-{k}@sha256:{self.hexid(64)}",
                              f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/{team}/svc-{k}:1.{k}.0"],
                    "sizeBytes": 300_000_000 + k * 1_000_003}
                   for k, team in enumerate(self.rng.sample(self._teams, min(6, len(self._teams))))]
        status: Obj = {
            "addresses": [{"address": n["ip"], "type": "InternalIP"}, {"address": n["name"], "type": "InternalDNS"},
                          {"address": n["name"], "type": "Hostname"}],
            "allocatable": alloc, "capacity": cap, "conditions": conditions,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": images,
            "nodeInfo": {"architecture": "amd64", "bootID": self.uid(), "containerRuntimeVersion": "containerd://1.7.25",
                         "kernelVersion": "6.1.124-134.200.amzn2023.x86_64", "kubeProxyVersion": KUBELET,
                         "kubeletVersion": KUBELET, "machineID": self.hexid(32), "operatingSystem": "linux",
                         "osImage": "Amazon Linux 2023.6.20250123", "systemUUID": f"ec2{self.hexid(5)}-{self.uid()[9:]}"},
        }
        md["managedFields"] = [
            _managed("kubelet", created, {"f:metadata": {"f:annotations": {".": {}, "f:alpha.kubernetes.io/provided-node-ip": {},
                                                                          "f:node.alpha.kubernetes.io/ttl": {}},
                                                         "f:labels": _fields(md["labels"])},
                                          "f:spec": {"f:providerID": {}}}),
            _managed("kubelet", hb, {"f:status": {"f:allocatable": _fields(alloc), "f:capacity": _fields(cap),
                                                  "f:conditions": _fields(conditions), "f:images": {},
                                                  "f:nodeInfo": {"f:bootID": {}}}}, "status"),
        ]
        if n["gpu"]:
            md["managedFields"].append(_managed("karpenter", created, {"f:metadata": {
                "f:finalizers": {".": {}, 'v:"karpenter.sh/termination"': {}},
                "f:ownerReferences": {".": {}, f'k:{{"uid":"{md["ownerReferences"][0]["uid"]}"}}': {}}},
                "f:spec": {"f:taints": {}}}))
        return {"apiVersion": "v1", "kind": "Node", "metadata": md, "spec": spec, "status": status}

    def _claim_conditions(self, age: int, stages: int, *, failed: str = "") -> list[Obj]:
        """NodeClaim conditions with the first `stages` of Launched/Registered/Initialized True."""
        out = []
        for k, (type_, delay) in enumerate((("Launched", 3), ("Registered", 48), ("Initialized", 178))):
            at = self.ts(max(0, age - delay))
            if k < stages:
                out.append({"lastTransitionTime": at, "message": "", "observedGeneration": 1, "reason": type_,
                            "status": "True", "type": type_})
            elif k == stages and failed:
                out.append({"lastTransitionTime": at, "message": failed, "observedGeneration": 1,
                            "reason": "InsufficientCapacity" if "capacity" in failed else "NotLaunched",
                            "status": "False", "type": type_})
            else:
                out.append({"lastTransitionTime": self.ts(age), "message": "", "observedGeneration": 1,
                            "reason": "AwaitingReconciliation" if k else "Launching", "status": "Unknown",
                            "type": type_})
        ready = stages == 3
        out.append({"lastTransitionTime": self.ts(max(0, age - 178)) if ready else self.ts(age), "message": "",
                    "observedGeneration": 1, "reason": "Ready" if ready else "NotReady",
                    "status": "True" if ready else "Unknown", "type": "Ready"})
        return out

    def _claim_obj(self, n: dict[str, Any]) -> Obj:
        t: InstanceType = n["itype"]
        age = n["age"] + 40
        labels = {k: v for k, v in self._node_labels(n).items()
                  if k.startswith(("karpenter", "kubernetes.io/arch", "kubernetes.io/os", "node.kubernetes.io",
                                   "topology.kubernetes.io", "topology.k8s.aws"))}
        labels.pop("karpenter.sh/initialized", None)
        labels.pop("karpenter.sh/registered", None)
        labels[BENCH_LABEL] = self.scale.name
        self._claims.append((n["claim"], n["name"]))
        return {
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": n["claim"], "uid": self.uid(), "creationTimestamp": self.ts(age), "generation": 1,
                         "generateName": f"{n['pool']}-", "finalizers": ["karpenter.sh/termination"], "labels": labels,
                         "annotations": {"compatibility.karpenter.k8s.aws/cluster-name-tagged": "true",
                                         "karpenter.k8s.aws/tagged": "true",
                                         "karpenter.sh/nodepool-hash": str(self.rng.getrandbits(62)),
                                         "karpenter.sh/nodepool-hash-version": "v3"},
                         "ownerReferences": [{"apiVersion": "karpenter.sh/v1", "blockOwnerDeletion": True,
                                              "kind": "NodePool", "name": n["pool"], "uid": self._pool_uid[n["pool"]]}]},
            "spec": {"expireAfter": "720h",
                     "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu-al2023"},
                     "requirements": [
                         {"key": "karpenter.sh/nodepool", "operator": "In", "values": [n["pool"]]},
                         {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [t.name]},
                         {"key": "karpenter.sh/capacity-type", "operator": "In",
                          "values": ["spot" if n["spot"] else "on-demand"]},
                         {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
                     "resources": {"requests": {"cpu": "12180m", "memory": "98Gi", "nvidia.com/gpu": str(t.gpus),
                                                "pods": "9"}},
                     "taints": [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "true"}]},
            "status": {"allocatable": {"cpu": f"{t.cpu * 1000 - 250}m", "memory": f"{t.memory_mib - 2000}Mi",
                                       "nvidia.com/gpu": str(t.gpus), "pods": str(t.pods)},
                       "capacity": {"cpu": str(t.cpu), "memory": f"{t.memory_mib}Mi", "nvidia.com/gpu": str(t.gpus),
                                    "pods": str(t.pods)},
                       "conditions": self._claim_conditions(age, 3), "imageID": "ami-0f3c5a7b9d1e2f401",
                       "lastPodEventTime": self.ts(self.rng.randint(60, 3600)), "nodeName": n["name"],
                       "providerID": f"aws:///{n['zone'][0]}/{n['instance']}"},
        }

    def _inflight_claim(self, name: str, pool: str, j: int) -> Obj:
        age = 60 + (j * 37) % 1500
        failed = j % 2 == 0
        msg = ("creating instance, insufficient capacity, with fleet error(s), InsufficientInstanceCapacity: "
               "There is no Spot capacity available that matches your request.") if failed else ""
        t = GPU_TYPES[j % len(GPU_TYPES)]
        status: Obj = {"conditions": self._claim_conditions(age, 0 if failed else 1, failed=msg)}
        if not failed:
            status["providerID"] = f"aws:///us-east-1b/i-0{self.hexid(16)}"
            status["imageID"] = "ami-0f3c5a7b9d1e2f401"
        return {
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "uid": self.uid(), "creationTimestamp": self.ts(age), "generation": 1,
                         "generateName": f"{pool}-", "finalizers": ["karpenter.sh/termination"],
                         "labels": {"karpenter.sh/nodepool": pool, "karpenter.k8s.aws/ec2nodeclass": "gpu-al2023",
                                    "karpenter.sh/capacity-type": "spot", "kubernetes.io/arch": "amd64",
                                    BENCH_LABEL: self.scale.name},
                         "ownerReferences": [{"apiVersion": "karpenter.sh/v1", "blockOwnerDeletion": True,
                                              "kind": "NodePool", "name": pool, "uid": self._pool_uid[pool]}]},
            "spec": {"expireAfter": "720h",
                     "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu-al2023"},
                     "requirements": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": [pool]},
                                      {"key": "node.kubernetes.io/instance-type", "operator": "In",
                                       "values": [t.name for t in GPU_TYPES]},
                                      {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}],
                     "resources": {"requests": {"cpu": "96", "memory": "900Gi", "nvidia.com/gpu": str(t.gpus),
                                                "pods": "7"}},
                     "taints": [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "true"}]},
            "status": status,
        }

    # --- DaemonSets and PDBs ---
    def _daemonsets(self) -> Iterator[Obj]:
        sc = self.scale
        self._ds_uid = {}
        for ns, name, image in _CPU_DAEMONSETS + _GPU_DAEMONSETS:
            gpu = ns == "gpu-operator"
            n = sc.gpu_nodes if gpu else sc.nodes
            uid = self.uid()
            self._ds_uid[name] = (uid, self.suffix(10 if gpu else 9)[:10])
            pspec: Obj = {"containers": [{"name": name.removesuffix("-daemonset"), "image": image,
                                          "resources": {"requests": {"cpu": "25m", "memory": "64Mi"}}}],
                          "tolerations": [{"operator": "Exists"}], "priorityClassName": "system-node-critical"}
            if gpu:
                pspec["nodeSelector"] = {"nvidia.com/gpu.present": "true"}
                pspec["tolerations"] = [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}]
            ready = n - (sc.gpu_nodes // 400 + 1 if name == "nvidia-device-plugin-daemonset" else 0)
            yield self._count("daemonsets", {
                "apiVersion": "apps/v1", "kind": "DaemonSet",
                "metadata": {"name": name, "namespace": ns, "uid": uid, "creationTimestamp": self.ts(86400 * 100),
                             "generation": 3, "labels": {"app.kubernetes.io/name": name, BENCH_LABEL: sc.name}},
                "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": name}},
                         "template": {"metadata": {"labels": {"app.kubernetes.io/name": name}}, "spec": pspec},
                         "updateStrategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
                                            "type": "RollingUpdate"}},
                "status": {"currentNumberScheduled": n, "desiredNumberScheduled": n, "numberAvailable": ready,
                           "numberMisscheduled": 0, "numberReady": ready, "observedGeneration": 3,
                           "updatedNumberScheduled": n},
            })

    def _pdbs(self) -> Iterator[Obj]:
        for team in self._teams:
            yield self._count("pdbs", {
                "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": "inference", "namespace": team, "uid": self.uid(),
                             "creationTimestamp": self.ts(86400 * 50), "generation": 1,
                             "labels": {BENCH_LABEL: self.scale.name}},
                "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app.kubernetes.io/component": "inference"}}},
                "status": {"conditions": [{"lastTransitionTime": self.ts(3600), "message": "",
                                           "observedGeneration": 1, "reason": "SufficientPods", "status": "True",
                                           "type": "DisruptionAllowed"}],
                           "currentHealthy": 4, "desiredHealthy": 3, "disruptionsAllowed": 1, "expectedPods": 4,
                           "observedGeneration": 1}})

    # --- pods ---
    def _workloads(self) -> tuple[list[Workload], list[Workload], list[Workload]]:
        gpu_w, cpu_w, pending_w = [], [], []
        for t, team in enumerate(self._teams):
            short = team.removeprefix("team-")
            for kind, name, image, gpus in (
                    ("Deployment", f"{short}-llm-inference", "vllm/vllm-openai:v0.6.3", 1),
                    ("Job", f"{short}-finetune", "nvcr.io/nvidia/pytorch:24.05-py3", 1),
                    ("StatefulSet", f"{short}-triton", "nvcr.io/nvidia/tritonserver:24.08-py3", 1)):
                gpu_w.append(Workload(team, name, kind, image, gpus, "8", "64Gi", short, self.uid(), self.suffix(10)))
            for k, name in enumerate(("api", "feature-store", "embedder-gateway", "ingest-worker", "redis")):
                image = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/{team}/{name}:2.{k}.{t}"
                cpu_w.append(Workload(team, f"{short}-{name}", "Deployment", image, 0, "500m", "1Gi", short,
                                      self.uid(), self.suffix(10)))
        for team in self._teams[: max(1, len(self._teams) // 2)]:
            short = team.removeprefix("team-")
            pending_w.append(Workload(team, f"{short}-pretrain", "Job", "nvcr.io/nvidia/pytorch:24.05-py3", 8, "90",
                                      "900Gi", short, self.uid(), pool=self._limit_pool))
            pending_w.append(Workload(team, f"{short}-efa-pretrain", "Job", "nvcr.io/nvidia/pytorch:24.05-py3", 8, "90",
                                      "900Gi", short, self.uid(), pool=self._broken_pool))
            pending_w.append(Workload(team, f"{short}-spot-sweep", "Job", "nvcr.io/nvidia/pytorch:24.05-py3", 8, "90",
                                      "900Gi", short, self.uid(), pool="spot"))
            pending_w.append(Workload(team, f"{short}-notebook", "Deployment", "jupyter/pytorch-notebook:cuda12-2024-10-07",
                                      8, "16", "120Gi", short, self.uid(), self.suffix(10), tolerate_gpu=False))
        return gpu_w, cpu_w, pending_w

    def _pod_name(self, w: Workload, i: int) -> str:
        if w.kind == "Deployment":
            return f"{w.name}-{w.hash}-{self.suffix()}"
        if w.kind == "StatefulSet":
            return f"{w.name}-{i}"
        return f"{w.name}-{i}-{self.suffix()}"

    def _owner(self, w: Workload) -> tuple[Obj, dict[str, str]]:
        labels = {"app.kubernetes.io/name": w.name, "team": w.team,
                  "app.kubernetes.io/component": "inference" if "inference" in w.name or "triton" in w.name
                  else "worker"}
        if w.kind == "Deployment":
            labels["pod-template-hash"] = w.hash
            return ({"apiVersion": "apps/v1", "blockOwnerDeletion": True, "controller": True, "kind": "ReplicaSet",
                     "name": f"{w.name}-{w.hash}", "uid": w.uid}, labels)
        if w.kind == "StatefulSet":
            labels["apps.kubernetes.io/pod-index"] = "0"
            return ({"apiVersion": "apps/v1", "blockOwnerDeletion": True, "controller": True, "kind": "StatefulSet",
                     "name": w.name, "uid": w.uid}, labels)
        labels.update({"batch.kubernetes.io/job-name": w.name, "job-name": w.name,
                       "batch.kubernetes.io/controller-uid": w.uid, "controller-uid": w.uid})
        return ({"apiVersion": "batch/v1", "blockOwnerDeletion": True, "controller": True, "kind": "Job",
                 "name": w.name, "uid": w.uid}, labels)

    def _container(self, name: str, image: str, gpus: int, cpu: str, memory: str, team: str) -> Obj:
        res: Obj = {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": memory}}
        if gpus:
            res["requests"]["nvidia.com/gpu"] = str(gpus)
            res["limits"]["nvidia.com/gpu"] = str(gpus)
        env = [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
               {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}},
               {"name": "OTEL_SERVICE_NAME", "value": name}, {"name": "LOG_LEVEL", "value": "info"},
               {"name": "AWS_REGION", "value": "us-east-1"}]
        if gpus:
            env += [{"name": "NCCL_DEBUG", "value": "WARN"}, {"name": "HF_HOME", "value": "/cache/huggingface"}]
        return {
            "name": name, "image": image, "imagePullPolicy": "IfNotPresent",
            "env": env, "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
            "resources": res, "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            "volumeMounts": [{"mountPath": "/dev/shm", "name": "dshm"}, {"mountPath": "/etc/app", "name": "config"},
                             {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": "kube-api-access",
                              "readOnly": True}],
        }

    def _volumes(self, cfg: str) -> list[Obj]:
        return [
            {"emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}, "name": "dshm"},
            {"configMap": {"defaultMode": 420, "name": cfg}, "name": "config"},
            {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                            "path": "namespace"}]}}]}},
        ]

    def _pod(self, w: Workload, i: int, node: dict[str, Any] | None, age: int) -> Obj:
        name = self.unique(w.namespace, lambda: self._pod_name(w, i))
        owner, labels = self._owner(w)
        labels = dict(labels, **{BENCH_LABEL: self.scale.name})
        if w.kind == "StatefulSet":
            labels["apps.kubernetes.io/pod-index"] = str(i)
            labels["statefulset.kubernetes.io/pod-name"] = name
        created = self.ts(age)
        container = self._container(w.name.split("-", 1)[1] if "-" in w.name else w.name, w.image, w.gpus, w.cpu,
                                    w.memory, w.team)
        tolerations: list[Obj] = [
            {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
            {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists",
             "tolerationSeconds": 300}]
        if w.gpus and w.tolerate_gpu:
            tolerations.insert(0, {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"})
        spec: Obj = {
            "containers": [container], "dnsPolicy": "ClusterFirst", "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority", "priority": 0,
            "restartPolicy": "OnFailure" if w.kind == "Job" else "Always", "schedulerName": "default-scheduler",
            "securityContext": {"fsGroup": 1000, "runAsNonRoot": True, "runAsUser": 1000},
            "serviceAccount": w.name, "serviceAccountName": w.name, "terminationGracePeriodSeconds": 30,
            "tolerations": tolerations, "volumes": self._volumes(f"{w.name}-config"),
        }
        if w.gpus:
            spec["nodeSelector"] = {"nvidia.com/gpu.present": "true"}
            if w.pool and w.pool != "spot":
                spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "karpenter.sh/nodepool", "operator": "In", "values": [w.pool]}]}]}}}
            elif w.pool == "spot":
                spec["nodeSelector"]["karpenter.sh/capacity-type"] = "spot"
            spec["runtimeClassName"] = "nvidia"
        md: Obj = {"name": name, "namespace": w.namespace, "uid": self.uid(), "creationTimestamp": created,
                   "labels": labels, "ownerReferences": [owner],
                   "annotations": {"prometheus.io/port": "9090", "prometheus.io/scrape": "true"}}
        if w.kind != "StatefulSet":
            md["generateName"] = name[:-5]
        if node is None:
            pending_for = age
            n_nodes = self.scale.nodes
            status: Obj = {"phase": "Pending", "qosClass": "Burstable", "conditions": [
                {"lastProbeTime": None, "lastTransitionTime": self.ts(pending_for), "message": self._scheduler_message(
                    w, n_nodes), "reason": "Unschedulable", "status": "False", "type": "PodScheduled"}]}
        else:
            spec["nodeName"] = node["name"]
            started = self.ts(age - 2)
            ready = self.ts(age - 11)
            pod_ip = f"{node['ip'].rsplit('.', 1)[0]}.{(i * 7) % 250 + 2}"
            status = {
                "conditions": [
                    {"lastProbeTime": None, "lastTransitionTime": self.ts(age - 5), "status": "True",
                     "type": "PodReadyToStartContainers"},
                    {"lastProbeTime": None, "lastTransitionTime": started, "status": "True", "type": "Initialized"},
                    {"lastProbeTime": None, "lastTransitionTime": ready, "status": "True", "type": "Ready"},
                    {"lastProbeTime": None, "lastTransitionTime": ready, "status": "True", "type": "ContainersReady"},
                    {"lastProbeTime": None, "lastTransitionTime": created, "status": "True", "type": "PodScheduled"}],
                "containerStatuses": [{
                    "containerID": f"containerd://{self.hexid(64)}", "image": w.image,
                    "imageID": f"{w.image.split(':')[0]}@sha256:{self.hexid(64)}", "lastState": {},
                    "name": container["name"], "ready": True, "restartCount": 0, "started": True,
                    "state": {"running": {"startedAt": self.ts(age - 6)}}}],
                "hostIP": node["ip"], "hostIPs": [{"ip": node["ip"]}], "phase": "Running", "podIP": pod_ip,
                "podIPs": [{"ip": pod_ip}], "qosClass": "Burstable", "startTime": started}
        if not w.managed:
            w.managed = {"f:metadata": {"f:generateName": {}, "f:labels": _fields(labels),
                                        "f:ownerReferences": {".": {}, f'k:{{"uid":"{w.uid}"}}': {}}},
                         "f:spec": _fields({k: v for k, v in spec.items() if k != "nodeName"})}
        md["managedFields"] = [_managed("kube-controller-manager", created, w.managed)]
        if node is not None:
            md["managedFields"].append(_managed("kubelet", self.ts(age - 11), {"f:status": _status_fields(status)},
                                                "status"))
        else:
            md["managedFields"].append(_managed("kube-scheduler", self.ts(age), {"f:status": {"f:conditions": {
                ".": {}, 'k:{"type":"PodScheduled"}': {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {},
                                                      "f:message": {}, "f:reason": {}, "f:status": {}, "f:type": {}}}}},
                "status"))
        return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec, "status": status}

    def _scheduler_message(self, w: Workload, n_nodes: int) -> str:
        """kube-scheduler's FitError text: `<count> <reason>` items sorted, then the preemption verdict."""
        sc = self.scale
        if w.tolerate_gpu:
            parts = [f"{n_nodes} Insufficient nvidia.com/gpu"]
        else:
            parts = sorted([f"{sc.cpu_nodes} Insufficient nvidia.com/gpu",
                            f"{sc.gpu_nodes} node(s) had untolerated taint {{nvidia.com/gpu: true}}"])
        return (f"0/{n_nodes} nodes are available: {', '.join(parts)}. preemption: 0/{n_nodes} nodes are available: "
                f"{n_nodes} No preemption victims found for incoming pod.")

    def _ds_pod(self, ns: str, name: str, image: str, node: dict[str, Any]) -> Obj:
        uid, hash_ = self._ds_uid[name]
        pod_name = self.unique(ns, lambda: f"{name}-{self.suffix()}")
        created = self.ts(node["age"] - 20)
        labels = {"app.kubernetes.io/name": name, "controller-revision-hash": hash_, "pod-template-generation": "3",
                  BENCH_LABEL: self.scale.name}
        cname = name.removesuffix("-daemonset")
        spec: Obj = {
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node["name"]]}]}]}}},
            "containers": [{"name": cname, "image": image, "imagePullPolicy": "IfNotPresent",
                            "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1",
                                                                                     "fieldPath": "spec.nodeName"}}}],
                            "resources": {"requests": {"cpu": "25m", "memory": "64Mi"}},
                            "securityContext": {"privileged": True},
                            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                            "volumeMounts": [{"mountPath": "/var/lib/kubelet/device-plugins", "name": "device-plugin"},
                                             {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                              "name": "kube-api-access", "readOnly": True}]}],
            "dnsPolicy": "ClusterFirst", "enableServiceLinks": True, "hostNetwork": ns == "kube-system",
            "nodeName": node["name"], "preemptionPolicy": "PreemptLowerPriority", "priority": 2000001000,
            "priorityClassName": "system-node-critical", "restartPolicy": "Always", "schedulerName": "default-scheduler",
            "serviceAccount": name, "serviceAccountName": name, "terminationGracePeriodSeconds": 30,
            "tolerations": [{"operator": "Exists"},
                            {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists"},
                            {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists"}],
            "volumes": [{"hostPath": {"path": "/var/lib/kubelet/device-plugins", "type": ""}, "name": "device-plugin"},
                        self._volumes("x")[2]],
        }
        crash = name == "nvidia-device-plugin-daemonset" and node["broken"] == "no-gpus"
        state: Obj = ({"waiting": {"message": f"back-off 5m0s restarting failed container={cname} pod={pod_name}_{ns}"
                                   f"({uid[:8]}-0000-0000-0000-000000000000)", "reason": "CrashLoopBackOff"}}
                      if crash else {"running": {"startedAt": self.ts(node["age"] - 30)}})
        status: Obj = {
            "conditions": [{"lastProbeTime": None, "lastTransitionTime": created, "status": "True", "type": t}
                           for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                                     "PodScheduled")],
            "containerStatuses": [{"containerID": f"containerd://{self.hexid(64)}", "image": image,
                                   "imageID": f"{image.split(':')[0]}@sha256:{self.hexid(64)}",
                                   "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                                                                "finishedAt": self.ts(200), "startedAt": self.ts(210)}}
                                   if crash else {},
                                   "name": cname, "ready": not crash, "restartCount": 37 if crash else 0,
                                   "started": not crash, "state": state}],
            "hostIP": node["ip"], "hostIPs": [{"ip": node["ip"]}], "phase": "Running", "podIP": node["ip"],
            "podIPs": [{"ip": node["ip"]}], "qosClass": "Burstable", "startTime": created}
        md: Obj = {"name": pod_name, "generateName": f"{name}-", "namespace": ns, "uid": self.uid(),
                   "creationTimestamp": created, "labels": labels,
                   "ownerReferences": [{"apiVersion": "apps/v1", "blockOwnerDeletion": True, "controller": True,
                                        "kind": "DaemonSet", "name": name, "uid": uid}]}
        md["managedFields"] = [
            _managed("kube-controller-manager", created, {"f:metadata": {"f:generateName": {}, "f:labels": _fields(labels),
                                                                         "f:ownerReferences": {}},
                                                          "f:spec": _fields(spec)}),
            _managed("kubelet", created, {"f:status": _status_fields(status)}, "status")]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec, "status": status}

    def _pods(self) -> Iterator[Obj]:
        sc = self.scale
        gpu_w, cpu_w, pending_w = self._workloads()
        counters: dict[str, int] = {}
        gpu_nodes = [n for n in self._nodes if n["gpu"]]
        cpu_nodes = [n for n in self._nodes if not n["gpu"]]
        # DaemonSet pods: three on every node, three more (GPU Operator) on GPU nodes.
        for node in self._nodes:
            for ns, name, image in _CPU_DAEMONSETS + (_GPU_DAEMONSETS if node["gpu"] else ()):
                pod = self._ds_pod(ns, name, image, node)
                self.index.other_pods.append((ns, pod["metadata"]["name"]))
                yield self._count("pods", pod)
        # Bound GPU pods, one GPU each, packed onto healthy GPU nodes.
        bound = sc.gpu_pods - sc.pending
        usable = [n for n in gpu_nodes if not n["broken"]]
        slots = [(n, k) for k in range(sc.gpus_per_node) for n in usable]
        for j in range(bound):
            node = slots[j % len(slots)][0]
            w = gpu_w[j % len(gpu_w)]
            i = counters[w.name] = counters.get(w.name, -1) + 1
            pod = self._pod(w, i, node, age=self.rng.randint(600, 86400 * 5))
            self.index.gpu_pods.append((w.namespace, pod["metadata"]["name"]))
            if j % 3 == 0:
                self._pods_for_events.append((w.namespace, pod["metadata"]["name"], pod["metadata"]["uid"], node["name"]))
            yield self._count("pods", pod)
        # CPU pods on CPU nodes.
        for j in range(sc.cpu_pods):
            node = cpu_nodes[j % len(cpu_nodes)] if cpu_nodes else self._nodes[j % len(self._nodes)]
            w = cpu_w[j % len(cpu_w)]
            i = counters[w.name] = counters.get(w.name, -1) + 1
            pod = self._pod(w, i, node, age=self.rng.randint(600, 86400 * 10))
            self.index.other_pods.append((w.namespace, pod["metadata"]["name"]))
            if j % 3 == 0:
                self._pods_for_events.append((w.namespace, pod["metadata"]["name"], pod["metadata"]["uid"], node["name"]))
            yield self._count("pods", pod)
        # Pending GPU pods (whole-node jobs): behind the GPU limit, the broken EC2NodeClass, Spot shortage, a taint.
        self._pending: list[tuple[Workload, Obj]] = []
        for j in range(sc.pending):
            w = pending_w[j % len(pending_w)]
            i = counters[w.name] = counters.get(w.name, -1) + 1
            pod = self._pod(w, i, None, age=120 + (j * 53) % 5400)
            self.index.pending_pods.append((w.namespace, pod["metadata"]["name"]))
            self._pending.append((w, pod))
            yield self._count("pods", pod)

    # --- events ---
    def _event(self, kind: str, name: str, ns: str | None, uid: str, reason: str, message: str, *,
               type_: str = "Normal", component: str = "karpenter", count: int = 1, first: int = 600,
               last: int = 60, api_version: str = "v1", host: str = "", field_path: str = "") -> Obj:
        ev_ns = ns or "default"
        inv: Obj = {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}
        if ns:
            inv["namespace"] = ns
        if field_path:
            inv["fieldPath"] = field_path
        src: Obj = {"component": component}
        if host:
            src["host"] = host
        return self._count("events", {
            "apiVersion": "v1", "kind": "Event", "count": count, "eventTime": None,
            "firstTimestamp": self.ts(first), "lastTimestamp": self.ts(last), "involvedObject": inv,
            "message": message, "reason": reason, "reportingComponent": component,
            "reportingInstance": host, "source": src, "type": type_,
            "metadata": {"name": f"{name}.{self.hexid(16)}", "namespace": ev_ns, "uid": self.uid(),
                         "creationTimestamp": self.ts(first), "labels": {BENCH_LABEL: self.scale.name}},
        })

    def _events(self) -> Iterator[Obj]:
        budget = self.scale.events
        made = 0
        # Pending pods: the scheduler's and Karpenter's view, as a user sees in `kubectl describe pod`.
        for k, (w, pod) in enumerate(self._pending):
            if made >= budget:
                return
            md = pod["metadata"]
            age = int((self.now - datetime.fromisoformat(md["creationTimestamp"].replace("Z", "+00:00")))
                      .total_seconds())
            yield self._event("Pod", md["name"], md["namespace"], md["uid"], "FailedScheduling",
                              pod["status"]["conditions"][0]["message"], type_="Warning",
                              component="default-scheduler", count=max(1, age // 60), first=age, last=30)
            made += 1
            if w.pool == self._limit_pool:
                msg = f"Failed to schedule pod, all available instance types exceed limits for nodepool " \
                      f"(NodePool={self._limit_pool})"
            elif w.pool == self._broken_pool:
                pools = [p for p in self._gpu_pools[:4]]
                msg = "Failed to schedule pod, " + "; ".join(
                    f"incompatible requirements, key karpenter.sh/nodepool, karpenter.sh/nodepool In "
                    f"[{self._broken_pool}] not in karpenter.sh/nodepool In [{p}]" for p in pools)
            elif w.pool == "spot" and self._inflight:
                claim = self._inflight[k % len(self._inflight)][0]
                msg = f"Pod should schedule on: nodeclaim/{claim}"
            else:
                msg = ("Failed to schedule pod, did not tolerate taint (taint=nvidia.com/gpu=true:NoSchedule); "
                       "no instance type met all requirements, requirements=karpenter.k8s.aws/instance-category In "
                       "[c m r], karpenter.sh/capacity-type In [on-demand], karpenter.sh/nodepool In [default], "
                       "kubernetes.io/arch In [amd64], resources={\"cpu\":\"16125m\",\"memory\":\"120Gi\","
                       "\"nvidia.com/gpu\":\"8\",\"pods\":\"7\"}")
            if made < budget:
                yield self._event("Pod", md["name"], md["namespace"], md["uid"],
                                  "Nominated" if msg.startswith("Pod should") else "FailedScheduling", msg,
                                  type_="Normal" if msg.startswith("Pod should") else "Warning",
                                  count=max(1, age // 300), first=age - 5, last=45)
                made += 1
        # In-flight claims: Spot shortage and registration.
        for j, (claim, _pool) in enumerate(self._inflight):
            if made >= budget:
                return
            if j % 2 == 0:
                yield self._event("NodeClaim", claim, None, self.uid(), "InsufficientCapacityError",
                                  f"NodeClaim {claim} event: creating instance, insufficient capacity, with fleet "
                                  "error(s), InsufficientInstanceCapacity: There is no Spot capacity available that "
                                  "matches your request.", type_="Warning", api_version="karpenter.sh/v1",
                                  first=300, last=40)
            else:
                yield self._event("NodeClaim", claim, None, self.uid(), "Launched",
                                  "Status condition transitioned, Type: Launched, Status: Unknown -> True, "
                                  "Reason: Launched", api_version="karpenter.sh/v1", first=200, last=200)
            made += 1
        # The broken EC2NodeClass and its NodePool.
        for kind, name, reason, msg in (
                ("EC2NodeClass", self._broken_class, "SecurityGroupsReady",
                 "Status condition transitioned, Type: SecurityGroupsReady, Status: True -> False, Reason: "
                 "SecurityGroupsNotFound, Message: SecurityGroupSelector did not match any SecurityGroups"),
                ("NodePool", self._broken_pool, "Ready", "Status condition transitioned, Type: Ready, Status: True -> "
                 "False, Reason: UnhealthyDependents, Message: NodeClassReady=False")):
            if made < budget:
                yield self._event(kind, name, None, self.uid(), reason, msg,
                                  api_version="karpenter.k8s.aws/v1" if kind == "EC2NodeClass" else "karpenter.sh/v1",
                                  first=18000, last=18000)
                made += 1
        # Broken nodes.
        for n in self._nodes:
            if made >= budget:
                return
            if n["broken"] == "not-ready":
                yield self._event("Node", n["name"], None, n["uid"], "NodeNotReady",
                                  f"Node {n['name']} status is now: NodeNotReady", component="node-controller",
                                  first=1800, last=1800)
                made += 1
        # The long tail: claim lifecycle, disruption decisions, pod starts.
        claim_msgs = (("Registered", "Status condition transitioned, Type: Registered, Status: Unknown -> True, "
                                     "Reason: Registered"),
                      ("Initialized", "Status condition transitioned, Type: Initialized, Status: Unknown -> True, "
                                      "Reason: Initialized"))
        pod_msgs = ("Scheduled", "Pulled", "Created", "Started")
        pools = [p for p in self._pool_names]
        k = 0
        while made < budget:
            r = k % 10
            if r < 2 and self._claims:
                claim, node = self._claims[(k // 10) % len(self._claims)]
                reason, msg = claim_msgs[r]
                ev = self._event("NodeClaim", claim, None, self.uid(), reason, msg, api_version="karpenter.sh/v1",
                                 first=3000, last=3000)
            elif r == 2 and self._nodes:
                n = self._nodes[(k // 10) % len(self._nodes)]
                if n["gpu"]:
                    ev = self._event("Node", n["name"], None, n["uid"], "DisruptionBlocked",
                                     "Node is nominated for a pending pod", first=1200, last=90,
                                     count=3)
                else:
                    ev = self._event("Node", n["name"], None, n["uid"], "RegisteredNode",
                                     f"Node {n['name']} event: Registered Node {n['name']} in Controller",
                                     component="node-controller", first=n["age"], last=n["age"])
            elif r == 3 and pools:
                pool = pools[(k // 10) % len(pools)]
                ev = self._event("NodePool", pool, None, self._pool_uid.get(pool, ""), "DisruptionBlocked",
                                 "No allowed disruptions for disruption reason Drifted due to blocking budget",
                                 api_version="karpenter.sh/v1", first=3600, last=60, count=12)
            elif self._pods_for_events:
                ns, name, uid, node = self._pods_for_events[(k // 10 * 6 + r) % len(self._pods_for_events)]
                reason = pod_msgs[r % 4]
                msg = {"Scheduled": f"Successfully assigned {ns}/{name} to {node}",
                       "Pulled": "Container image \"nvcr.io/nvidia/pytorch:24.05-py3\" already present on machine",
                       "Created": "Created container: main", "Started": "Started container main"}[reason]
                ev = self._event("Pod", name, ns, uid, reason, msg,
                                 component="default-scheduler" if reason == "Scheduled" else "kubelet",
                                 host="" if reason == "Scheduled" else node,
                                 field_path="" if reason == "Scheduled" else "spec.containers{main}",
                                 first=900, last=900)
            else:
                ev = self._event("Namespace", "default", None, self.uid(), "Filler", "benchmark filler event")
            yield ev
            made += 1
            k += 1


def _team_names(n: int) -> list[str]:
    base = ["search", "ads", "vision", "speech", "recsys", "nlp", "research", "platform", "fraud", "maps",
            "translate", "ranking", "safety", "robotics", "genai", "forecast", "payments", "growth", "media",
            "health"]
    out = []
    for i in range(n):
        out.append(base[i % len(base)] + ("" if i < len(base) else f"{i // len(base) + 1}"))
    return out


def expected_counts(scale: Scale | str) -> dict[str, int]:
    """Objects per source the fleet holds (what a complete cache must count)."""
    sc = SCALES[scale] if isinstance(scale, str) else scale
    return {"nodes": sc.nodes, "pods": sc.pods, "events": sc.events, "nodeclaims": sc.nodeclaims,
            "nodepools": sc.nodepools, "ec2nodeclasses": sc.nodeclasses, "namespaces": 7 + sc.teams,
            "daemonsets": len(_CPU_DAEMONSETS) + len(_GPU_DAEMONSETS), "pdbs": sc.teams, "runtimeclasses": 1}
