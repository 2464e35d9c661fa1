"""One-shot collection for `diagnose`/`bundle`: read each source once, concurrently, into a Snapshot.

For a single target it reads only what that target needs - never a cluster-wide pod list - so
`gputui diagnose pod/X` stays fast on a 60k-pod cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from diagnostics.model import ObjectRef
from diagnostics.snapshot import KUBE_SOURCES, Snapshot, SourceState, SourceStatus, utcnow
from gputui import ingest
from gputui.kubeapi import Api, ClusterInfo, KubeError, Unauthorized, Unreachable
from gputui.resources import RESOURCES
from gputui.sources.kube import list_objects, status_for_error
from gputui.store import Store


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
            now: Callable[[], datetime] = utcnow, workers: int = 8, prometheus: Any = None,
            aws: Any = None) -> Snapshot:
    """Read the sources for `target` (None = whole cluster). Raises TargetNotFound, Unreachable.

    `prometheus` (PrometheusSettings) and `aws` (AwsConfig) are optional sources read alongside the
    Kubernetes lists; without them their checks are skipped with the reason.
    """
    store = Store(clock=now)
    store.cluster = {"context": info.context, "server": info.server}
    try:
        version = api.get("/version", timeout=10)
        store.cluster["version"] = version.get("gitVersion", "") if isinstance(version, dict) else ""
    except KubeError as exc:
        if isinstance(exc, (Unreachable, Unauthorized)):
            raise
        # /version forbidden is unusual but not fatal: the lists will tell.

    if target is not None:
        _check_target_exists(api, target)

    def read(source: str, namespace: str | None = None, field: str | None = None) -> tuple[str, list[Any] | None,
                                                                                             SourceStatus | None]:
        res = RESOURCES[source]
        try:
            recs, _rv = list_objects(api, res, namespace=namespace, field_selector=field)
            return source, recs, None
        except KubeError as exc:
            return source, None, status_for_error(res, exc)

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

    merged: dict[str, dict[tuple[str | None, str], Any]] = {}
    failed: dict[str, SourceStatus] = {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        prom_future = pool.submit(_prometheus, prometheus, api, now) if prometheus is not None else None
        results = list(pool.map(lambda j: read(*j), jobs))
        if prom_future is not None:
            facts, prom_status = prom_future.result()
            store.set_extra("prometheus", facts, prom_status)
    unreachable = [st for _s, _r, st in results if st is not None and st.state is SourceState.UNREACHABLE]
    if unreachable and len(unreachable) == len(results):
        raise Unreachable(unreachable[0].detail)
    for source, recs, st in results:
        if st is not None:
            failed.setdefault(source, st)
            continue
        bucket = merged.setdefault(source, {})
        for r in recs or ():
            bucket[_key(source, r)] = r

    # Pods on the nodes the target touches (for node checks: device plugin pods, GPUs in use).
    if target is not None and "pods" not in failed:
        snap0 = _freeze(store, merged, failed, target)
        from gputui.related import chain

        nodes = [r.name for r in chain(snap0, target) if r.kind == "Node"]
        if target.kind == "NodePool":
            nodes += [n.name for n in snap0.index.nodes_by_pool.get(target.name, [])]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            extra = list(pool.map(lambda n: read("pods", None, f"spec.nodeName={n}"), sorted(set(nodes))))
        for source, recs, st in extra:
            if st is None:
                for r in recs or ():
                    merged.setdefault("pods", {})[_key(source, r)] = r
    snap = _freeze(store, merged, failed, target)
    if aws is not None:
        snap = _with_aws(snap, aws)
    return snap


def _prometheus(settings: Any, api: Api, now: Callable[[], datetime]) -> tuple[Any, SourceStatus]:
    from gputui.sources.prometheus import collect as collect_prometheus

    return collect_prometheus(settings, api, now=now)  # type: ignore[no-any-return]


def _with_aws(snap: Snapshot, config: Any) -> Snapshot:
    """AWS reads depend on the EC2NodeClasses and NodePools just listed, so they run after them."""
    from dataclasses import replace

    from gputui.sources.aws import collect_aws

    facts, status = collect_aws(snap, config)
    return replace(snap, aws=facts, sources={**snap.sources, "aws": status})


def _key(source: str, rec: Any) -> tuple[str | None, str]:
    if source == "namespaces":
        return (None, rec)
    return (rec.meta.namespace, rec.meta.name)


def _freeze(store: Store, merged: dict[str, dict[tuple[str | None, str], Any]],
            failed: dict[str, SourceStatus], target: ObjectRef | None) -> Snapshot:
    for source in KUBE_SOURCES:
        if source in failed:
            store.set_status(failed[source])
        else:
            store.replace(source, merged.get(source, {}).values())
    snap = store.snapshot(target=str(target) if target else "cluster")
    if target is not None:
        # Pods and events were read for this target only: checks must not conclude "absent" from them.
        sources = dict(snap.sources)
        for s in ("pods", "events"):
            st = sources[s]
            if st.state.usable:
                sources[s] = SourceStatus(st.name, st.state, st.detail, st.updated_at, partial=True)
        from dataclasses import replace

        snap = replace(snap, sources=sources)
    return snap


def _check_target_exists(api: Api, target: ObjectRef) -> None:
    res = {"Pod": RESOURCES["pods"], "Node": RESOURCES["nodes"], "NodeClaim": RESOURCES["nodeclaims"],
           "NodePool": RESOURCES["nodepools"], "EC2NodeClass": RESOURCES["ec2nodeclasses"]}[target.kind]
    try:
        api.get(res.path(target.namespace, target.name))
    except KubeError as exc:
        if exc.status == 404:
            where = f" in namespace {target.namespace!r}" if target.namespace else ""
            if res.crd and "could not find the requested resource" in exc.message:
                raise TargetNotFound(f"{res.qualified} is not installed in this cluster") from None
            raise TargetNotFound(f'{target.kind.lower()} "{target.name}" not found{where}') from None
        if exc.status == 403:
            return  # can't read it directly; the lists will say what is forbidden
        raise


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
