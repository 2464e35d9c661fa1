"""GPU NodePools against the GPU best-practice list: taint, limits, spot for training, protected long jobs, fallback."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from diagnostics.facts.disruption import DO_NOT_DISRUPT, do_not_disrupt_state, do_not_disrupt_static
from diagnostics.facts.gpu_pools import (
    CAPACITY_TYPE,
    blocking_taints,
    capacity_types,
    is_gpu_pool,
    on_demand_fallbacks,
    spot_only,
    training_reason,
)
from diagnostics.facts.provider import facts, per_node
from diagnostics.model import Evidence, Finding, ObjectRef, Remediation, Severity
from diagnostics.records import Node, NodePool, Pod, accelerators, is_accelerator
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot
from diagnostics.timeutil import human_age

LONG_RUNNING_SECONDS = 6 * 3600.0
"""A GPU pod running this long has real work to lose when its node goes away."""
_STATELESS_OWNERS = ("ReplicaSet", "DaemonSet")
T = TypeVar("T")


@check(code="GT502", slug="gpu-nodepool-practices", title="GPU NodePools follow GPU best practices",
       severity=Severity.INFO, requires=("nodepools",), optional=("nodes", "pods"))
def gpu_nodepool_practices(snap: Snapshot) -> Iterator[Finding | int]:
    """A GPU NodePool misses a GPU best practice (taint, GPU limit, on-demand for training, protection, fallback).

    Why it matters:
    Without a GPU taint, CPU pods land on GPU nodes and keep them alive. Without an
    `nvidia.com/gpu` limit, a runaway job can buy GPUs without bound. Spot for training and
    unprotected long-running GPU pods lose hours of work to an interruption or a consolidation.
    A spot-only pool with no on-demand fallback stalls when spot GPU capacity runs out.

    Fix:
    Taint GPU pools (`nvidia.com/gpu=true:NoSchedule`), set `spec.limits` for accelerators,
    use on-demand for training, annotate long jobs `karpenter.sh/do-not-disrupt: "true"` (and
    checkpoint), and add a lower-weight on-demand NodePool next to spot-only GPU pools.
    """
    for pool in _gpu_pools(snap):
        yield 1
        yield from _taint(snap, pool)
        yield from _limits(pool)
        yield from _training_spot(pool)
        yield from _long_running(snap, pool)
        yield from _fallback(snap, pool)


def _taint(snap: Snapshot, pool: NodePool) -> Iterator[Finding]:
    if blocking_taints(pool):
        return
    ev = [Evidence.field(pool.ref, "spec.template.spec.taints", [str(t) for t in pool.taints] or "none",
                         note="no NoSchedule/NoExecute taint: any pod may schedule on these GPU nodes")]
    cpu_pods = _pool_cpu_pods(snap, pool.name)
    if cpu_pods:
        ev.append(Evidence.field(None, f"pods without GPU requests on NodePool {pool.name} nodes", len(cpu_pods),
                                 note=", ".join(f"{p.namespace}/{p.name}" for p in cpu_pods[:5])))
    patch = ('[{"op":"add","path":"/spec/template/spec/taints/-","value":'
             '{"key":"nvidia.com/gpu","value":"true","effect":"NoSchedule"}}]' if pool.taints else
             '[{"op":"add","path":"/spec/template/spec/taints","value":'
             '[{"key":"nvidia.com/gpu","value":"true","effect":"NoSchedule"}]}]')
    yield Finding(
        subject=pool.ref,
        title=f"GPU NodePool {pool.name} has no GPU taint: CPU pods will land on (and keep alive) GPU nodes"
              + (f" ({len(cpu_pods)} non-GPU pod(s) there now)" if cpu_pods else ""),
        evidence=tuple(ev),
        remediation=Remediation(
            "Taint the pool so only pods that tolerate it (GPU pods) land there; give GPU workloads the matching "
            "toleration (the ExtendedResourceToleration admission plugin adds it automatically where enabled). "
            "Existing nodes keep their taints until replaced.",
            (f"kubectl patch nodepool {pool.name} --type json -p '{patch}'",)),
        severity=Severity.WARNING,
        related=tuple(p.ref for p in cpu_pods[:20]),
    )


def _limits(pool: NodePool) -> Iterator[Finding]:
    if any(is_accelerator(k) for k in pool.limits):
        return
    resource = "aws.amazon.com/neuron" if any("neuron" in t.key for t in pool.taints) else "nvidia.com/gpu"
    usage = accelerators(pool.usage)
    ev = [Evidence.field(pool.ref, "spec.limits", dict(pool.limits_spec) or "none",
                         note="no accelerator limit: the pool can grow without bound")]
    if usage:
        ev.append(Evidence.field(pool.ref, "status.resources", {k: f"{v:g}" for k, v in usage.items()},
                                 note="accelerators in use now"))
    body = json.dumps({"spec": {"limits": {resource: "<max>"}}})
    yield Finding(
        subject=pool.ref,
        title=f"GPU NodePool {pool.name} has no {resource} limit (no GPU cost cap)",
        evidence=tuple(ev),
        remediation=Remediation(f"Set spec.limits.{resource} to the most GPUs this pool may ever hold.",
                                (f"kubectl patch nodepool {pool.name} --type merge -p '{body}'",)),
    )


def _training_spot(pool: NodePool) -> Iterator[Finding]:
    why = training_reason(pool)
    if not why or "spot" not in capacity_types(pool):
        return
    index = pool.requirement_index(CAPACITY_TYPE)
    cmd = (f"kubectl patch nodepool {pool.name} --type json -p '[{{\"op\":\"replace\",\"path\":"
           f"\"/spec/template/spec/requirements/{index}\",\"value\":{{\"key\":\"{CAPACITY_TYPE}\","
           "\"operator\":\"In\",\"values\":[\"on-demand\"]}}]'" if index is not None
           else f"kubectl edit nodepool {pool.name}")
    yield Finding(
        subject=pool.ref,
        title=f"Training GPU NodePool {pool.name} allows spot: an interruption kills the job (2-minute notice)",
        evidence=(Evidence.field(pool.ref, f"spec.template.spec.requirements[{CAPACITY_TYPE}]",
                                 sorted(capacity_types(pool)), note=f"training pool: {why}"),),
        remediation=Remediation("Use on-demand (or reserved capacity) for long training runs; keep spot for "
                                "inference and short, checkpointed jobs. do-not-disrupt does not stop spot "
                                "interruptions.", (cmd,)),
        severity=Severity.WARNING,
    )


def _long_running(snap: Snapshot, pool: NodePool) -> Iterator[Finding]:
    consolidates = (pool.consolidation_policy != "WhenEmpty" and pool.consolidate_after.strip() != "Never")
    # age >= LONG_RUNNING_SECONDS, as a datetime comparison (exact, and no age computed per pod).
    cutoff = snap.taken_at - timedelta(seconds=LONG_RUNNING_SECONDS)
    head: list[tuple[_JobPod, bool]] = []  # the first ten (pod, protected by do-not-disrupt) at risk
    count = 0
    refs: list[tuple[ObjectRef, ...]] = []
    for n in _pool_jobs(snap, pool.name):
        if not n.timed and (n.latest is None or n.latest <= cutoff):
            # Every pod here that can be at risk is old enough, and no protection runs out: as carried.
            at_risk, at_risk_refs = n.at_risk[consolidates], n.refs[consolidates]
        else:
            at_risk = []
            for job in n.jobs:
                if job.since is None or job.since > cutoff:
                    continue
                protected = job.protected if job.protected is not None else \
                    do_not_disrupt_state(job.pod, snap.taken_at)[0]
                if job.spot or (consolidates and not protected):
                    at_risk.append((job, protected))
            at_risk_refs = tuple(job.ref for job, _ in at_risk)
        if at_risk:
            count += len(at_risk)
            if len(head) < 10:
                head += at_risk[:10 - len(head)]
            refs.append(at_risk_refs)
    if not count:
        return

    def why(job: _JobPod, protected: bool) -> str:
        age = human_age(snap.age(job.since))
        if job.spot:
            return (f"on spot node {job.node.name} for {age}"
                    + (" (do-not-disrupt does not stop spot interruption)" if protected else ""))
        return (f"running {age} on {job.node.name}, pool consolidates "
                f"{pool.consolidation_policy}, no {DO_NOT_DISRUPT}")

    shown = [(job.pod, why(job, protected)) for job, protected in head]
    ev = tuple(Evidence.field(p.ref, "status.startTime", p.started.strftime("%Y-%m-%dT%H:%M:%SZ")
                              if p.started else None, note=text) for p, text in shown)
    cmds = [f"kubectl annotate pod -n {p.namespace} {p.name} {DO_NOT_DISRUPT}=true"
            for p, text in shown[:5] if "spot" not in text]
    first = head[0][0].pod
    yield Finding(
        subject=pool.ref,
        title=f"{count} long-running GPU pod(s) on NodePool {pool.name} can be interrupted or consolidated "
              f"away: {first.namespace}/{first.name}",
        evidence=ev,
        remediation=Remediation(
            f'Annotate long jobs {DO_NOT_DISRUPT}: "true" in the pod template (blocks consolidation and drift, not '
            "spot interruption or expiry), run them on on-demand capacity, and checkpoint.", tuple(cmds)),
        severity=Severity.WARNING,
        related=tuple(itertools.chain.from_iterable(refs)),
    )


@dataclass(frozen=True, slots=True)
class _JobPod:
    node: Node
    spot: bool
    pod: Pod
    since: datetime | None
    """Started (else created): the age compared with LONG_RUNNING_SECONDS."""
    ref: ObjectRef
    protected: bool | None
    """Whether karpenter.sh/do-not-disrupt protects it; None when that depends on the time (a duration)."""


@dataclass(frozen=True, slots=True)
class _NodeJobs:
    """A node's running GPU job pods, and who of them is at risk once old enough (when no protection is timed)."""

    jobs: list[_JobPod]
    timed: bool
    """Some job's protection depends on the time."""
    latest: datetime | None
    """The latest `since` of the jobs that can be at risk."""
    at_risk: tuple[list[tuple[_JobPod, bool]], list[tuple[_JobPod, bool]]]
    """(job, protected) at risk once past LONG_RUNNING_SECONDS: if the pool does not, and does, consolidate."""
    refs: tuple[tuple[ObjectRef, ...], tuple[ObjectRef, ...]]
    """The refs of `at_risk`'s jobs."""


def _node_jobs(jobs: list[_JobPod]) -> _NodeJobs:
    """What _long_running needs of a node, worked out once per node while its pods are the same."""
    timed = any(j.protected is None for j in jobs)
    spot = [(j, bool(j.protected)) for j in jobs if j.since is not None and j.spot]
    anyway = [(j, bool(j.protected)) for j in jobs if j.since is not None and (j.spot or not j.protected)]
    latest = max((j.since for j, _ in anyway if j.since is not None), default=None)
    return _NodeJobs(jobs, timed, latest, (spot, anyway),
                     (tuple(j.ref for j, _ in spot), tuple(j.ref for j, _ in anyway)))


def _pool_jobs(snap: Snapshot, pool: str) -> list[_NodeJobs]:
    """The pool's running GPU pods that are not stateless replicas, node by node (ages are checked by the caller)."""
    return _jobs_of_node(snap, pool, snap.index.nodes_by_pool.get(pool, ()))


def _patch_jobs(snap: Snapshot, node: Node, pods: Sequence[Pod], earlier: Sequence[Pod], was: _NodeJobs) -> _NodeJobs:
    jobs = _patch_pod_list(node, pods, earlier, was.jobs, _pod_of_job, _jobs_on)
    # The pods that changed ran no job here (CPU, DaemonSet or stateless pods): the node's jobs are as they were.
    unchanged = len(jobs) == len(was.jobs) and all(a is b for a, b in zip(jobs, was.jobs))
    return was if unchanged else _node_jobs(jobs)


@per_node(reads=("nodes", "pods"), patch=_patch_jobs)
def _jobs_of_node(snap: Snapshot, node: Node, pods: Sequence[Pod]) -> _NodeJobs:
    """A node's jobs; when some of its pods change, only those are gone through again."""
    return _node_jobs(_jobs_on(node, pods))


@facts(reads=("nodepools",))
def _gpu_pools(snap: Snapshot) -> list[NodePool]:
    return [p for p in snap.nodepools if is_gpu_pool(p) and not p.meta.deleting]


@facts(reads=("nodes", "pods"))
def _pool_cpu_pods(snap: Snapshot, pool: str) -> list[Pod]:
    """Pods on the pool's nodes that want no accelerator (nor are DaemonSet pods)."""
    return [p for pods in _cpu_pods_of_node(snap, pool, snap.index.nodes_by_pool.get(pool, ())) for p in pods]


def _patch_cpu_pods(snap: Snapshot, node: Node, pods: Sequence[Pod], earlier: Sequence[Pod], was: list[Pod]) -> list[Pod]:
    return _patch_pod_list(node, pods, earlier, was, _itself, _cpu_pods)


@per_node(reads=("nodes", "pods"), patch=_patch_cpu_pods)
def _cpu_pods_of_node(snap: Snapshot, node: Node, pods: Sequence[Pod]) -> list[Pod]:
    """_cpu_pods; when some of the node's pods change, only those are looked at."""
    return _cpu_pods(node, pods)


def _patch_pod_list(node: Node, pods: Sequence[Pod], earlier: Sequence[Pod], was: list[T], of_pod: Callable[[T], Pod],
                    compute: Callable[[Node, Sequence[Pod]], list[T]]) -> list[T]:
    """compute(node, pods), given that it gave `was` for the node's `earlier` pods: only new pods are looked at."""
    seen = set(map(id, earlier))
    kept = {id(of_pod(x)): x for x in was}
    out: list[T] = []
    for p in pods:
        if id(p) in seen:
            x = kept.get(id(p))
            if x is not None:
                out.append(x)
        else:
            out += compute(node, (p,))
    return out



def _itself(pod: Pod) -> Pod:
    return pod


def _pod_of_job(job: _JobPod) -> Pod:
    return job.pod


def _cpu_pods(node: Node, pods: Iterable[Pod]) -> list[Pod]:
    """Pods on the node that want no accelerator (nor are DaemonSet pods): what a GPU taint would keep away."""
    return [p for p in pods if not p.terminal and not p.is_daemonset and not p.wants_accelerator]


def _jobs_on(node: Node, pods: Iterable[Pod]) -> list[_JobPod]:
    spot = node.capacity_type == "spot"
    out = []
    for p in pods:
        if p.terminal or not p.wants_accelerator or p.is_daemonset:
            continue
        if any(o.get("kind") in _STATELESS_OWNERS for o in p.meta.owners):
            continue  # Deployment replicas: stateless, rescheduling is fine
        out.append(_JobPod(node, spot, p, p.started or p.meta.created, p.ref, do_not_disrupt_static(p)))
    return out


def _fallback(snap: Snapshot, pool: NodePool) -> Iterator[Finding]:
    if not spot_only(pool) or on_demand_fallbacks(snap, pool):  # carried by gpu_pools
        return
    yield Finding(
        subject=pool.ref,
        title=f"Spot-only GPU NodePool {pool.name} has no on-demand fallback NodePool",
        evidence=(Evidence.field(pool.ref, f"spec.template.spec.requirements[{CAPACITY_TYPE}]", ["spot"]),
                  Evidence.absence(None, "NodePool allowing on-demand GPU instances with the same or fewer taints",
                                   note="when spot GPU capacity runs out, pods wait")),
        remediation=Remediation(
            f"Add a NodePool with the same requirements and taints but {CAPACITY_TYPE} In [on-demand] and a lower "
            f"weight than {pool.name} ({pool.weight}); Karpenter tries the higher weight first.",
            (f"kubectl get nodepool {pool.name} -o yaml",)),
    )
