"""One-shot collection for `diagnose`/`bundle`: read each source once, concurrently, into a Snapshot.

For a single target it reads only what that target needs - never a cluster-wide pod list - so
`gputui diagnose pod/X` stays fast on a 60k-pod cluster; a pod target reads even less (see
`gputui.collect.pod`). /version, the target's GET and a pod's first reads start together.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from typing import Any

from diagnostics.model import ObjectRef
from diagnostics.snapshot import KUBE_SOURCES, Snapshot, SourceState, SourceStatus, utcnow
from gputui.kube import ingest
from gputui.collect.pod import PodReads, broken_candidates, pod_events_selector, troubled_daemon_pods
from gputui.kube.api import Api, BrokenAnswer, ClusterInfo, KubeError, Unauthorized, Unreachable
from gputui.collect.reads import Merged, freeze, merge, raise_if_unreachable, read, retrying
from gputui.kube.resources import RESOURCES
from gputui.collect.dra_claims import with_resource_claims
from gputui.collect.stack_logs import with_stack_logs
from gputui.collect.store import Store


class TargetNotFound(Exception):
    pass


def _pod_selectors(api: Api, target: ObjectRef | None) -> list[tuple[str | None, str | None]]:
    """(namespace, fieldSelector) pod lists for a target; [(None, None)] means every pod."""
    if target is None:
        return [(None, None)]
    if target.kind == "Pod":
        # Only the pod itself (and, below, the pods on its node): judging every other pending pod
        # is what made a one-shot slow on a big cluster, and the answer is about this pod.
        return [(target.namespace, f"metadata.name={target.name}")]
    return [(None, "status.phase=Pending")]


def collect(api: Api, info: ClusterInfo, target: ObjectRef | None = None, *,
            now: Callable[[], datetime] = utcnow, workers: int = 16, prometheus: Any = None,
            aws: Any = None, scoped: bool = False) -> Snapshot:
    """Read the sources for `target` (None = whole cluster). Raises TargetNotFound, Unreachable.

    `prometheus` (PrometheusSettings) and `aws` (AwsConfig) are optional sources read alongside the
    Kubernetes lists; without them their checks are skipped with the reason. `scoped`: for a pod,
    read only the nodes, NodeClaims and events its own findings depend on (`diagnose`; a bundle
    keeps the whole lists).
    """
    store = Store(clock=now)
    store.cluster = {"context": info.context, "server": info.server}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        version = pool.submit(retrying, lambda: api.get("/version", timeout=10))
        found = pool.submit(_get_target, api, target) if target is not None else None
        prom_future = pool.submit(_prometheus, prometheus, api, now) if prometheus is not None else None
        if aws is not None:
            pool.submit(_preload_aws)  # AWS is read after the lists: import boto3 while they are on their way
        pod_reads = None
        if scoped and target is not None and target.kind == "Pod":
            pod_reads = PodReads(api, target, pool, now)  # starts reading before the GET returns
        _record_version(store, version)
        obj = found.result() if found is not None else None
        if pod_reads is not None and obj is not None:
            merged, failed, partial, read_on = pod_reads.finish(obj)
        else:  # whole lists (a pod that cannot be read directly too: the lists say why)
            merged, failed, partial, read_on = _collect_lists(api, target, pool, now)
        if prom_future is not None:
            facts, prom_status = prom_future.result()
            store.set_extra("prometheus", facts, prom_status)
    snap = freeze(store, merged, failed, target, partial)
    if target is not None:
        snap = replace(snap, pods_read_on=read_on)  # the nodes whose pods were all read
    if target is not None and obj is None:
        _require_target(snap, target)
    if aws is not None:
        snap = _with_aws(snap, aws)
    return with_resource_claims(api, with_stack_logs(api, snap))


_SOURCE_OF_KIND = {"Pod": "pods", "Node": "nodes", "NodeClaim": "nodeclaims", "NodePool": "nodepools",
                   "EC2NodeClass": "ec2nodeclasses"}


def _require_target(snap: Snapshot, target: ObjectRef) -> None:
    """A target neither its GET nor its list could read: say so (exit 2) rather than judge nothing and
    print "No problems found"."""
    source = _SOURCE_OF_KIND[target.kind]
    if any(r.ref == target for r in getattr(snap, source)):
        return
    status = snap.status(source)
    if status.state is SourceState.UNREACHABLE:
        # Not the user's mistake (exit 2): the API failed or its answers broke, after retries (exit 5).
        raise Unreachable(f"cannot read {target}: {status.reason()}")
    if not status.state.usable:
        raise TargetNotFound(f"cannot read {target}: {status.reason()}")
    raise _not_found(target)


def _not_found(target: ObjectRef) -> TargetNotFound:
    where = f" in namespace {target.namespace!r}" if target.namespace else ""
    return TargetNotFound(f'{target.kind.lower()} "{target.name}" not found{where}')


def _record_version(store: Store, version: Future[Any]) -> None:
    try:
        answer = version.result()
        store.cluster["version"] = answer.get("gitVersion", "") if isinstance(answer, dict) else ""
    except KubeError as exc:
        if isinstance(exc, (Unreachable, Unauthorized)):
            raise  # /version broken after retries too (a login page, not JSON): not a Kubernetes API
        # /version forbidden is unusual but not fatal: the lists will tell.


def _collect_lists(api: Api, target: ObjectRef | None, pool: ThreadPoolExecutor,
                   now: Callable[[], datetime]) -> tuple[Merged, dict[str, SourceStatus], tuple[str, ...],
                                                         frozenset[str]]:
    """Whole lists of every source (pods and events narrowed for a target), then the target's nodes' pods
    (and the nodes whose pods were all read)."""
    jobs: list[tuple[str, str | None, str | None]] = []
    for s in KUBE_SOURCES:
        if s == "pods":
            jobs.extend(("pods", ns, fs) for ns, fs in _pod_selectors(api, target))
        elif s == "events" and target is not None:
            # Karpenter and kubelet events on nodes/claims/pools, plus the target pod's own.
            jobs.append(("events", None, "involvedObject.kind!=Pod"))
            if target.kind == "Pod":
                jobs.append(("events", target.namespace,
                             f"involvedObject.kind=Pod,involvedObject.name={target.name}"))
            else:
                # What pending pods were told: why they cannot schedule, and what they wait for.
                jobs.append(("events", None, "involvedObject.kind=Pod,reason=FailedScheduling"))
                jobs.append(("events", None, "involvedObject.kind=Pod,reason=Nominated"))
        else:
            jobs.append((s, None, None))

    merged: Merged = {}
    failed: dict[str, SourceStatus] = {}
    results = list(pool.map(lambda j: read(api, *j), jobs))
    raise_if_unreachable(results)
    merge(results, merged, failed)

    # Pods on the nodes the target touches (for node checks: device plugin pods, GPUs in use).
    read_on: frozenset[str] = frozenset()
    if target is not None and "pods" not in failed:
        snap0 = freeze(Store(clock=now), merged, failed, target)
        from diagnostics.relations import chain

        nodes = [r.name for r in chain(snap0, target) if r.kind == "Node"]
        if target.kind == "NodePool":
            nodes += [n.name for n in snap0.index.nodes_by_pool.get(target.name, [])]
        pod = snap0.index.pod.get((target.namespace or "", target.name)) if target.kind == "Pod" else None
        if pod is not None:
            nodes += broken_candidates(snap0, pod)  # whether they have room for it
        extra = list(pool.map(lambda n: read(api, "pods", None, f"spec.nodeName={n}"), sorted(set(nodes))))
        merge((r for r in extra if r[2] is None), merged, failed)
        read_on = frozenset(n for n, r in zip(sorted(set(nodes)), extra) if r[2] is None)
        if "events" not in failed:  # why the node's GPU stack pods do not start, as the whole-cluster run reads it
            merge(pool.map(lambda p: read(api, "events", p.namespace, pod_events_selector(p.name)),
                           [p for p in troubled_daemon_pods(extra) if p.ref != target]), merged, failed)
    return merged, failed, (), read_on


def _prometheus(settings: Any, api: Api, now: Callable[[], datetime]) -> tuple[Any, SourceStatus]:
    from gputui.sources.prometheus import collect as collect_prometheus

    return collect_prometheus(settings, api, now=now)


def _preload_aws() -> None:
    from gputui.sources.aws import preload

    preload()


def _with_aws(snap: Snapshot, config: Any) -> Snapshot:
    """AWS reads depend on the EC2NodeClasses and NodePools just listed, so they run after them."""
    from dataclasses import replace

    from gputui.sources.aws import collect_aws

    facts, status = collect_aws(snap, config)
    return replace(snap, aws=facts, sources={**snap.sources, "aws": status})


def _get_target(api: Api, target: ObjectRef | None) -> dict[str, Any] | None:
    """The target as the API returns it; None when it cannot be read directly (403: the lists will tell)."""
    assert target is not None
    res = RESOURCES[_SOURCE_OF_KIND[target.kind]]
    try:
        obj = retrying(lambda: api.get(res.path(target.namespace, target.name)))
    except KubeError as exc:
        if exc.status == 404:
            if res.crd and "could not find the requested resource" in exc.message:
                older = " (or Karpenter is older than v1.0 and serves only v1beta1)" if res.karpenter_v1 else ""
                raise TargetNotFound(f"{res.qualified} {res.version} is not installed in this cluster{older}") from None
            raise _not_found(target) from None
        if exc.status == 403 or exc.status == 429 or exc.status >= 500 or isinstance(exc, BrokenAnswer):
            # Can't read it directly (forbidden, throttled, a proxy's 502, a broken answer): the lists will
            # find it or say why.
            return None
        raise
    if not _is_the_object(obj, res.kind, target):
        return None  # a List, a Status or another object where this one was asked for: not the target
    return obj


def _is_the_object(obj: Any, kind: str, target: ObjectRef) -> bool:
    """A GET answer is the target only if it says so: its kind and name (a proxy that answers a GET of
    one pod with a PodList must not have that list's first item judged as the pod)."""
    if not isinstance(obj, dict) or obj.get("kind") not in (None, kind):
        return False
    md = obj.get("metadata")
    return isinstance(md, dict) and md.get("name") == target.name and (
        target.namespace is None or md.get("namespace") in (None, target.namespace))


def snapshot_from_objects(objects: dict[str, list[dict[str, Any]]], *, taken_at: datetime,
                          statuses: dict[str, SourceStatus] | None = None,
                          cluster: dict[str, Any] | None = None, target: str = "cluster") -> Snapshot:
    """Snapshot from full raw objects by source name (bundles, tests): the same ingest as live data."""
    store = Store(clock=lambda: taken_at)
    store.cluster = dict(cluster or {})
    for source in KUBE_SOURCES:
        st = (statuses or {}).get(source)
        if st is not None and not st.state.usable:
            store.set_status(st)
            continue
        store.replace(source, (ingest.record(source, o) for o in objects.get(source, [])))
        if st is not None:
            store.set_status(st)
    return store.snapshot(taken_at=taken_at, target=target)
