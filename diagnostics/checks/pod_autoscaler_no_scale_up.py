"""A pending GPU pod that cluster-autoscaler (or GKE node auto-provisioning) will not, or cannot, scale up for."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from diagnostics.facts.accelerator_stack import gke_names
from diagnostics.facts.matching import node_matches
from diagnostics.model import Evidence, Finding, Remediation, Severity
from diagnostics.facts.node_health import gpu_not_advertised_would_report
from diagnostics.facts.pod_events import clip
from diagnostics.records import Event, Pod
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot

CA = "cluster-autoscaler"
STATUS_CONFIGMAP = "cluster-autoscaler-status"
_COUNTED = re.compile(r"(\d+)\s+([^,]+)")
_GCE_CODES = {
    "RESOURCE_POOL_EXHAUSTED": "the zone has no capacity for this machine/GPU type (GCE stockout)",
    "ZONE_RESOURCE_POOL_EXHAUSTED": "the zone has no capacity for this machine/GPU type (GCE stockout)",
    "INSUFFICIENT_CAPACITY": "the zone has no capacity for this machine/GPU type",
    "QUOTA_EXCEEDED": "a GPU or CPU quota of the project/region is used up",
    "IP_SPACE_EXHAUSTED": "the node pool's subnet has no free IP ranges",
    "PERMISSIONS_ERROR": "the node service account lacks a permission",
}
"""cluster-autoscaler cloudprovider/gce/autoscaling_gce_client.go error codes, as `ScaleUpFailed` events carry them."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the autoscaler said about one pod, and what it means."""

    event: Event
    reasons: tuple[tuple[int, str], ...]
    cause: str
    fix: str
    commands: tuple[str, ...]


_NAP_LIMITS = "--enable-autoprovisioning --max-cpu MAX_CPU --max-memory MAX_MEMORY_GB"
"""Node auto-provisioning requires upper limits for CPU and memory; a GPU limit is optional (GKE 'Use node
auto-provisioning'), so the enabling command carries them with --max-accelerator."""

# GKE accelerator -> the GCE machine type per GPU count it comes with (accelerator-optimized machines have fixed
# counts: A3 High 1/2/4/8, A3 Mega and Ultra 8, A2 Standard 1/2/4/8 and a2-megagpu-16g, A2 Ultra 1/2/4/8, G2 1/2/4/8,
# A4 8), for the node pool a fix creates.
_MACHINES: dict[str, dict[int, str]] = {
    "nvidia-h100-80gb": {n: f"a3-highgpu-{n}g" for n in (1, 2, 4, 8)},
    "nvidia-h100-mega-80gb": {8: "a3-megagpu-8g"},
    "nvidia-h200-141gb": {8: "a3-ultragpu-8g"},
    "nvidia-a100-80gb": {n: f"a2-ultragpu-{n}g" for n in (1, 2, 4, 8)},
    "nvidia-tesla-a100": {**{n: f"a2-highgpu-{n}g" for n in (1, 2, 4, 8)}, 16: "a2-megagpu-16g"},
    "nvidia-l4": {1: "g2-standard-8", 2: "g2-standard-24", 4: "g2-standard-48", 8: "g2-standard-96"},
    "nvidia-b200": {8: "a4-highgpu-8g"},
}


def machine_for(accel: str, count: int) -> tuple[str, int]:
    """(machine type, GPUs it comes with) for the smallest machine with at least `count` GPUs; ('MACHINE_TYPE', count)
    where the accelerator attaches to general-purpose machines (T4, V100 on N1) or none is big enough."""
    sizes = _MACHINES.get(accel, {})
    fit = min((n for n in sizes if n >= count), default=0)
    return (sizes[fit], fit) if fit else ("MACHINE_TYPE", count)


def reasons_of(message: str) -> tuple[tuple[int, str], ...]:
    """`pod didn't trigger scale-up: 2 node(s) didn't match ..., 1 max node group size reached` -> counted reasons."""
    _, _, tail = message.partition(":")
    out = []
    for part in tail.split(","):
        m = _COUNTED.match(part.strip())
        if m:
            out.append((int(m.group(1)), m.group(2).strip()))
        elif part.strip():
            out.append((0, part.strip()))
    return tuple(out)


def _accelerator(pod: Pod) -> str:
    return pod.node_selector.get("cloud.google.com/gke-accelerator", "")


def _pools(snap: Snapshot) -> dict[str, str]:
    """GKE node pools seen on nodes -> their accelerator ('' for CPU pools)."""
    out: dict[str, str] = {}
    for n in snap.nodes:
        pool = n.labels.get("cloud.google.com/gke-nodepool")
        if pool:
            out[pool] = out.get(pool) or n.labels.get("cloud.google.com/gke-accelerator", "")
    return out


def _autopilot(snap: Snapshot) -> bool:
    """GKE Autopilot: its nodes are named gk3-<cluster>-<pool>-... (Standard: gke-...)."""
    return any(n.name.startswith("gk3-") for n in snap.nodes)


def _gke(snap: Snapshot) -> bool:
    return any(n.provider_id.startswith("gce://") or "cloud.google.com/gke-nodepool" in n.labels for n in snap.nodes)


def _scale_up_failures(snap: Snapshot) -> list[Event]:
    """Warnings on the autoscaler's status ConfigMap: ScaleUpFailed (with the GCE code), FailedToScaleUpGroup."""
    out = []
    for e in snap.events:
        if e.involved_kind == "ConfigMap" and e.involved_name == STATUS_CONFIGMAP and e.reason in (
                "ScaleUpFailed", "FailedToScaleUpGroup", "ScaleUpTimedOut"):
            out.append(e)
    return out


@dataclass(frozen=True, slots=True)
class _Cluster:
    """What `verdict` reads of the whole cluster: worked out once per run, not once per pending pod."""

    gke: bool
    autopilot: bool
    pools: dict[str, str]
    failures: list[Event]


def _cluster(snap: Snapshot) -> _Cluster:
    return _Cluster(_gke(snap), _autopilot(snap), _pools(snap), _scale_up_failures(snap))


def verdict(snap: Snapshot, pod: Pod, facts: Callable[[], _Cluster] | None = None) -> Verdict | None:
    """The autoscaler's latest word on the pod when it is bad news (no scale-up, or a failed one).

    `facts`: the run's `_cluster(snap)`, asked only for a pod the autoscaler spoke about."""
    events = [e for e in snap.index.events("Pod", pod.name, pod.namespace)
              if e.source == CA or e.reason in ("NotTriggerScaleUp", "TriggeredScaleUp")]
    if not events:
        return None
    last = events[-1]
    c = facts() if facts is not None else _cluster(snap)
    gke = c.gke
    cluster, pool = gke_names(snap, pod)
    accel = _accelerator(pod)
    if last.reason == "TriggeredScaleUp":
        failed = [e for e in c.failures
                  if (last.last_seen is None or e.last_seen is None or e.last_seen >= last.last_seen)]
        if not failed:
            return None  # a node is on its way
        f = failed[-1]
        code = next((c for c in _GCE_CODES if c in f.message), "")
        what = _GCE_CODES.get(code, "the cloud refused the new node")
        fix = "Let the autoscaler try other zones or machine types, or get the capacity another way."
        steps: list[str] = ["kubectl -n kube-system describe configmap cluster-autoscaler-status"]
        if gke and code in ("RESOURCE_POOL_EXHAUSTED", "ZONE_RESOURCE_POOL_EXHAUSTED", "INSUFFICIENT_CAPACITY"):
            fix = ("GPUs are out of stock in that zone: let the node pool use more zones (--node-locations), use a "
                   "reservation, Spot, or a flex-start / queued provisioning (Dynamic Workload Scheduler) node pool.")
            steps.append(f"gcloud container node-pools update {pool} --cluster {cluster} --node-locations ZONE1,ZONE2,ZONE3")
        elif gke and code == "QUOTA_EXCEEDED":
            fix = "Ask for more GPU quota in the region (IAM & Admin > Quotas, e.g. NVIDIA_L4_GPUS), or use another region."
            steps.append("gcloud compute regions describe REGION --format='table(quotas.metric,quotas.limit,quotas.usage)'")
        return Verdict(f, (), f"the scale-up it triggered failed: {what}", fix, tuple(steps))
    reasons = reasons_of(last.message)
    text = " ".join(r for _, r in reasons)
    pools = c.pools
    cmds: tuple[str, ...]
    if "max node group size reached" in text:
        cause = "the node pool(s) that could take it are at their maximum size"
        fix = "Raise the node pool's maximum size (autoscaling max nodes), or free GPUs on its nodes."
        silent = [n.name for n in snap.nodes if gpu_not_advertised_would_report(n, None)
                  and node_matches(pod.node_selector, pod.required_affinity, n.labels)]
        if silent:
            cause += (f", and {', '.join(silent[:3])} in it advertises no GPUs (see gpu-not-advertised): fixing that "
                      "node gives the pod room without a new one")
            fix = "Fix the node that advertises no GPUs first (gpu-not-advertised); or raise the pool's maximum size."
        cmds = ((f"gcloud container clusters update {cluster} --node-pool {pool} --enable-autoscaling --max-nodes N",)
                if gke and not c.autopilot else ("kubectl -n kube-system describe configmap cluster-autoscaler-status",))
    elif "in backoff after failed scale-up" in text:
        cause = "the node pool is in backoff after a failed scale-up (5 to 30 minutes)"
        fix = "Find why the last scale-up failed (stockout, quota) in the autoscaler's status; it retries after the backoff."
        cmds = ("kubectl -n kube-system describe configmap cluster-autoscaler-status",)
    elif "exceeded quota" in text or "max cluster" in text or "max total nodes" in last.message:
        cause = "a cluster-wide autoscaling limit is reached (node count or resource limit)"
        fix = ("Raise the autoscaler's limits (GKE: node auto-provisioning resource limits for the accelerator, "
               "--max-accelerator) or free capacity.")
        cmds = ((f"gcloud container clusters update {cluster} {_NAP_LIMITS} "
                 f"--max-accelerator type={accel or 'ACCELERATOR'},count=N",) if gke and not c.autopilot else ())
    elif "didn't match Pod's node affinity/selector" in text or "node(s) didn't match" in text:
        offered = sorted({a for a in pools.values() if a})
        if accel and gke and accel not in offered:
            cause = (f"no node pool offers accelerator {accel} (pools seen: "
                     + (", ".join(f"{p}={a or 'no GPU'}" for p, a in sorted(pools.items())) or "none") + ")")
        else:
            cause = "no node group's nodes match the pod's nodeSelector/affinity"
        count = pod.requests.get("nvidia.com/gpu", 0.0)
        fix = (f"Create a node pool with {accel} GPUs (autoscaling from 0), or enable node auto-provisioning with a "
               f"limit for {accel}; or change the pod's selector to an accelerator a pool offers"
               + (f" ({', '.join(offered)})" if offered else "") + ".") if accel and gke else (
            "Add a node group whose nodes carry the labels the pod selects, or fix the pod's selector.")
        if accel and gke and c.autopilot:
            # Autopilot provisions nodes from the pod's selector itself; there are no node pools to create.
            fix = (f"GKE Autopilot creates GPU nodes itself: check that {accel} with {max(int(count), 1)} GPU(s) per "
                   "pod is offered in the cluster's region and that the project has GPU quota there, or ask for an "
                   "accelerator Autopilot offers" + (f" ({', '.join(offered)})" if offered else "") + ".")
        machine, gpus = machine_for(accel, max(int(count), 1))
        cmds = ((f"gcloud container node-pools create {accel.replace('nvidia-', '')}-pool --cluster {cluster} "
                 f"--accelerator type={accel},count={gpus},gpu-driver-version=default "
                 f"--machine-type {machine} --enable-autoscaling --min-nodes 0 "
                 "--max-nodes N",
                 f"gcloud container clusters update {cluster} {_NAP_LIMITS} "
                 f"--max-accelerator type={accel},count=N")
                if accel and gke and not c.autopilot else
                (f"gcloud compute accelerator-types list --filter=name={accel}",) if accel and gke else ())
    elif "Insufficient" in text:
        cause = "even a new node of each group would lack the resources the pod asks for"
        fix = "Use a node pool whose machine has as many GPUs (and CPU/memory) as the pod asks for, or ask for fewer."
        cmds = ()
    else:
        cause = "the autoscaler will not add a node for it"
        fix = "Read the autoscaler's reasons in the event and its status ConfigMap."
        cmds = ("kubectl -n kube-system describe configmap cluster-autoscaler-status",)
    return Verdict(last, reasons, cause, fix, cmds + (f"kubectl -n {pod.namespace} describe pod {pod.name}",))


@check(code="GT406", slug="pod-autoscaler-no-scale-up", title="The cluster autoscaler scales up for pending GPU pods",
       severity=Severity.ERROR, pending_pods_suffice=True, requires=("pods", "events"), optional=("nodes",))
def pod_autoscaler_no_scale_up(snap: Snapshot) -> Iterator[Finding | int]:
    """A pending GPU pod for which cluster-autoscaler (GKE, or any cluster without Karpenter) adds no node.

    Why it matters:
    Where cluster-autoscaler manages node groups (GKE Standard node pools, node auto-provisioning,
    managed node groups), its `NotTriggerScaleUp` event on the pod says why no node will come:
    no node pool offers the accelerator or matches the selector, a pool at its maximum, a backoff
    after a failed scale-up, a cluster limit; `ScaleUpFailed` on its status ConfigMap carries the
    cloud's error (GCE `RESOURCE_POOL_EXHAUSTED` stockout, `QUOTA_EXCEEDED`).

    Fix:
    Depends on the reason: create a node pool with the accelerator (autoscaling from 0) or give
    node auto-provisioning a limit for it; raise the pool's maximum; spread it over more zones
    or use reservations / Spot / flex-start for a stockout; raise the GPU quota.
    """
    examined = 0
    facts = functools.cache(lambda: _cluster(snap))
    for pod in snap.index.pending_gpu_pods:
        examined += 1
        v = verdict(snap, pod, facts)
        if v is None:
            continue
        e = v.event
        ev = [Evidence.event(e.involved, e.reason, clip(e.message), e.count, snap.age(e.last_seen), type_=e.type,
                             note=f"from {e.source or CA}")]
        if _accelerator(pod):
            ev.append(Evidence.field(pod.ref, "spec.nodeSelector[cloud.google.com/gke-accelerator]", _accelerator(pod)))
        pools = facts().pools
        if pools:
            ev.append(Evidence.field(None, "nodes: labels[cloud.google.com/gke-nodepool] -> [gke-accelerator]",
                                     {p: a or "no GPU" for p, a in sorted(pools.items())},
                                     note="node pools with nodes now (a pool at 0 "
                                                                         "nodes is not visible here)"))
        yield Finding(subject=pod.ref,
                      title=f"{pod.namespace}/{pod.name}: cluster-autoscaler adds no node: {v.cause}",
                      evidence=tuple(ev), remediation=Remediation(v.fix, v.commands))
    yield examined

