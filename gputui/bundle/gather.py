"""Read again, in full, the objects a bundle holds (the Snapshot's pods are projected), plus owners and events.

`scope.select` decided what; this module lists/GETs it so the bundle shows what `kubectl get -o yaml`
shows. For a target, pods are read without a cluster-wide list (one list per GPU node, plus the
pending ones), as `collect` does. Every object loses `metadata.managedFields`. What could not be read is
recorded as data (denied / absent / missing / errors), like troubleshoot's *-errors.json files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any


from diagnostics.model import ObjectRef
from diagnostics.snapshot import Snapshot, SourceState, SourceStatus
from gputui.bundle.scope import Key, Selection, gpu_related, key
from gputui.kube.api import Api, BrokenAnswer, KubeError, Unreachable
from gputui.collect.reads import retrying
from gputui.kube.resources import RESOURCES, Resource
from gputui.kube.informer import iter_pages

Obj = dict[str, Any]

INFRA_EVENT_KINDS = frozenset({"Node", "NodeClaim", "NodePool", "EC2NodeClass"})
OWNER_PLURALS = {"ReplicaSet": "replicasets", "Deployment": "deployments", "StatefulSet": "statefulsets",
                 "DaemonSet": "daemonsets", "Job": "jobs", "CronJob": "cronjobs",
                 "ReplicationController": "replicationcontrollers"}
PER_POD_EVENT_LISTS = 40
"""Up to this many pods, their events are read per pod; past it, one filtered list of all pod events."""


@dataclass
class Gathered:
    objects: dict[str, list[Obj]] = field(default_factory=dict)
    owners: list[Obj] = field(default_factory=list)
    denied: list[dict[str, str]] = field(default_factory=list)
    absent: list[dict[str, str]] = field(default_factory=list)
    """Lists answering 404: a CRD that is not installed."""
    missing: list[dict[str, str]] = field(default_factory=list)
    """Objects referenced but gone (an owner deleted since): 404 on a GET."""
    errors: list[dict[str, str]] = field(default_factory=list)
    statuses: dict[str, SourceStatus] = field(default_factory=dict)
    """Sources whose full read failed here although `collect` could read them (rare: RBAC changed)."""
    partial: set[str] = field(default_factory=set)
    """Sources of which only part could be read (a per-node pod list failed)."""


# --- what to keep --------------------------------------------------------------------------------

# --- reading ---------------------------------------------------------------------------------------

def clean(obj: Obj, res: Resource | None = None) -> Obj:
    """Drop managedFields; restore apiVersion/kind, which list items of built-in kinds omit."""
    out = dict(obj)
    md = out.get("metadata")
    if isinstance(md, dict) and "managedFields" in md:
        out["metadata"] = {k: v for k, v in md.items() if k != "managedFields"}
    if res is not None:
        out.setdefault("apiVersion", res.api_version)
        out.setdefault("kind", res.kind)
    # Re-order so apiVersion/kind/metadata come first, as kubectl shows them.
    head: dict[str, Any] = {k: out[k] for k in ("apiVersion", "kind", "metadata") if k in out}
    return {**head, **{k: v for k, v in out.items() if k not in head}}


def raw_list(api: Api, res: Resource, *, namespace: str | None = None, field_selector: str | None = None,
             label_selector: str | None = None, keep: Callable[[Obj], bool] | None = None,
             page_size: int = 500, timeout: float = 30.0) -> list[Obj]:
    """Full objects of a paged list, filtered page by page so memory follows what is kept."""
    out: list[Obj] = []
    for items, _meta in iter_pages(api, res, namespace=namespace, field_selector=field_selector,
                                   label_selector=label_selector, page_size=page_size, timeout=timeout):
        out.extend(clean(o, res) for o in items if keep is None or keep(o))
    return out


def obj_key(o: Obj) -> Key:
    md = o.get("metadata") or {}
    return (str(md.get("namespace") or ""), str(md.get("name") or ""))


def _involved(e: Obj) -> tuple[str, str, str]:
    io = e.get("involvedObject") or e.get("regarding") or {}
    return (str(io.get("kind") or ""), str(io.get("namespace") or ""), str(io.get("name") or ""))


class _Reader:
    """Records what could not be read as data (denied / absent / errors), like troubleshoot's *-errors.json."""

    def __init__(self, api: Api, out: Gathered) -> None:
        self.api = api
        self.out = out

    def note(self, exc: KubeError, verb: str, resource: str, what: str) -> None:
        if isinstance(exc, Unreachable) and not isinstance(exc, BrokenAnswer):
            raise exc  # the API server is gone; a broken answer (after retries) is one thing not read
        entry = {"verb": verb, "resource": resource, "what": what, "detail": exc.message[:300]}
        if exc.status == 403:
            self.out.denied.append(entry)
        elif exc.status == 404 and verb == "list":
            self.out.absent.append(entry)
        elif exc.status == 404:
            self.out.missing.append(entry)
        else:
            self.out.errors.append({**entry, "status": str(exc.status)})

    def list(self, source: str, what: str, **kw: Any) -> list[Obj] | None:
        res = RESOURCES[source]
        try:
            return retrying(lambda: raw_list(self.api, res, **kw))
        except KubeError as exc:
            self.note(exc, "list", res.qualified, what)
            return None

    def get(self, path: str, resource: str, what: str) -> Obj | None:
        try:
            obj = retrying(lambda: self.api.get(path))
        except KubeError as exc:
            self.note(exc, "get", resource, what)
            return None
        return obj if isinstance(obj, dict) else None


def gather(api: Api, snap: Snapshot, target: ObjectRef | None, sel: Selection, *, workers: int = 8) -> Gathered:
    """Full objects for the selection. Raises Unreachable if the API server goes away meanwhile."""
    out = Gathered()
    rd = _Reader(api, out)
    usable = {s for s, st in snap.sources.items() if st.state.usable}

    def whole(source: str) -> tuple[str, list[Obj] | None]:
        return source, rd.list(source, f"all {RESOURCES[source].plural}")

    simple = [s for s in ("nodes", "nodeclaims", "nodepools", "ec2nodeclasses", "daemonsets", "pdbs",
                          "runtimeclasses", "namespaces") if s in usable]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pods_future = pool.submit(_pods, rd, snap, target, sel, workers) if "pods" in usable else None
        for source, objs in pool.map(whole, simple):
            if objs is None:
                out.statuses[source] = _failed_status(out, source)
            else:
                out.objects[source] = objs
        if pods_future is not None:
            pods, complete = pods_future.result()
            if pods is None:
                out.statuses["pods"] = _failed_status(out, "pods")
            else:
                out.objects["pods"] = pods
                if not complete:
                    out.partial.add("pods")
    out.owners = _owners(rd, out.objects.get("pods", []), sel.owner_roots)
    if "events" in usable:
        events, complete = _events(rd, target, out, workers)
        if not complete:
            out.partial.add("events")
        if events is None:
            out.statuses["events"] = _failed_status(out, "events")
        else:
            out.objects["events"] = events
    return out


def _failed_status(out: Gathered, source: str) -> SourceStatus:
    res = RESOURCES[source]
    if any(d["resource"] == res.qualified for d in out.denied):
        return SourceStatus(source, SourceState.FORBIDDEN, f"list {res.qualified}")
    if any(d["resource"] == res.qualified for d in out.absent):
        return SourceStatus(source, SourceState.ABSENT, f"CRD {res.qualified} not found")
    return SourceStatus(source, SourceState.UNREACHABLE, "could not be read in full for the bundle")


def _pods(rd: _Reader, snap: Snapshot, target: ObjectRef | None, sel: Selection,
          workers: int) -> tuple[list[Obj] | None, bool]:
    """(GPU-related full pods, whether every list answered)."""
    if sel.pods is not None:
        # The live snapshot read every pod already: one more paged pass, keeping the GPU-related ones.
        wanted = sel.pods
        return rd.list("pods", "GPU-related pods", keep=lambda o: obj_key(o) in wanted), True
    from gputui.kube.ingest import record

    on = set(sel.gpu_nodes)

    def pending_related(o: Obj) -> bool:
        return gpu_related(record("pods", o), on, sel.gpu_daemonsets)

    lists: list[tuple[str, Callable[[Obj], bool] | None]] = [(f"spec.nodeName={n}", None) for n in sel.gpu_nodes]
    lists.append(("status.phase=Pending", pending_related))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(lambda q: rd.list("pods", "pods " + q[0], field_selector=q[0], keep=q[1]), lists))
    if all(r is None for r in results):
        return None, False
    found: dict[Key, Obj] = {}
    for objs in results:
        for o in objs or ():
            found[obj_key(o)] = o
    if target is not None and target.kind == "Pod" and key(target.namespace, target.name) not in found:
        res = RESOURCES["pods"]
        got = rd.get(res.path(target.namespace, target.name), "pods", f"pod {target.namespace}/{target.name}")
        if got is not None:
            found[obj_key(got)] = clean(got, res)
    return [found[k] for k in sorted(found)], all(r is not None for r in results)


def owner_path(api_version: str, kind: str, namespace: str, name: str) -> str:
    plural = OWNER_PLURALS.get(kind) or _plural(kind.lower())
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    return f"{base}/namespaces/{namespace}/{plural}/{name}"


def _plural(word: str) -> str:
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def _owners(rd: _Reader, pods: list[Obj], roots: Iterable[Key]) -> list[Obj]:
    """The controller chain of each root pod (ReplicaSet -> Deployment, Job -> CronJob, ...), each fetched once."""
    by_key = {obj_key(p): p for p in pods}
    seen: dict[tuple[str, str, str], Obj | None] = {}
    out: list[Obj] = []
    for root in roots:
        obj = by_key.get(root)
        depth = 0
        while obj is not None and depth < 4:
            depth += 1
            refs = [o for o in (obj.get("metadata") or {}).get("ownerReferences") or [] if isinstance(o, dict)]
            ref = next((o for o in refs if o.get("controller")), refs[0] if refs else None)
            if ref is None or ref.get("kind") in ("DaemonSet", "Node") or not ref.get("name"):
                break
            ns = str((obj.get("metadata") or {}).get("namespace") or "")
            k = (str(ref.get("kind")), ns, str(ref.get("name")))
            if k not in seen:
                path = owner_path(str(ref.get("apiVersion") or "v1"), k[0], ns, k[2])
                fetched = rd.get(path, k[0].lower(), f"{k[0].lower()} {ns}/{k[2]}")
                seen[k] = clean(fetched) if fetched is not None else None
                if seen[k] is not None:
                    fetched_obj = seen[k]
                    assert fetched_obj is not None
                    fetched_obj.setdefault("apiVersion", ref.get("apiVersion"))
                    fetched_obj.setdefault("kind", k[0])
                    out.append(fetched_obj)
            obj = seen[k]
    return out


def _events(rd: _Reader, target: ObjectRef | None, out: Gathered,
            workers: int) -> tuple[list[Obj] | None, bool]:
    kept: set[tuple[str, str, str]] = set()
    for source, kind in (("daemonsets", "DaemonSet"), ("pdbs", "PodDisruptionBudget"),
                         ("runtimeclasses", "RuntimeClass")):
        kept |= {(kind, *obj_key(o)) for o in out.objects.get(source, [])}
    kept |= {(str(o.get("kind")), *obj_key(o)) for o in out.owners}
    pods = {obj_key(p) for p in out.objects.get("pods", [])}

    def keep(e: Obj) -> bool:
        kind, ns, name = _involved(e)
        if kind == "Pod":
            return (ns, name) in pods
        return kind in INFRA_EVENT_KINDS or (kind, ns, name) in kept

    if target is None:
        every = rd.list("events", "events", keep=keep)
        return every, every is not None
    # A target: no cluster-wide list of every event (collect avoids it too) unless many pods are kept.
    infra = rd.list("events", "events about non-pod objects", field_selector="involvedObject.kind!=Pod", keep=keep)
    per_pod: list[list[Obj] | None]
    if len(pods) > PER_POD_EVENT_LISTS:
        per_pod = [rd.list("events", "pod events", field_selector="involvedObject.kind=Pod", keep=keep)]
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            per_pod = list(pool.map(
                lambda k: rd.list("events", f"events of pod {k[0]}/{k[1]}", namespace=k[0],
                                  field_selector=f"involvedObject.kind=Pod,involvedObject.name={k[1]}"),
                sorted(pods)))
    if infra is None and all(p is None for p in per_pod):
        return None, False
    found: dict[str, Obj] = {}
    for objs in (infra, *per_pod):
        for e in objs or ():
            md = e.get("metadata") or {}
            found[str(md.get("uid") or f"{md.get('namespace')}/{md.get('name')}")] = e
    return list(found.values()), infra is not None and all(p is not None for p in per_pod)


def _rfc3339(d: datetime | None) -> str | None:
    return d.astimezone(timezone.utc).isoformat().replace("+00:00", "Z") if d is not None else None


def _with_conditions(rec: Any) -> Obj:
    """Cached pods and nodes leave their conditions to the record (see ingest): put them back."""
    obj = dict(rec.obj)
    status = dict(obj.get("status") or {})
    status["conditions"] = [{**c.as_dict(), "lastTransitionTime": _rfc3339(c.last_transition)}
                            for c in rec.conditions]
    obj["status"] = status
    return obj


def from_records(snap: Snapshot, sel: Selection) -> Gathered:
    """Without an API (a bundle re-exported offline): the records' objects. Pods are then projected ones."""
    out = Gathered()
    for source in ("nodes", "nodeclaims", "nodepools", "ec2nodeclasses", "daemonsets", "pdbs", "pods"):
        if not snap.status(source).state.usable:
            continue
        wanted = sel.pods if source == "pods" else None
        res = RESOURCES[source]
        out.objects[source] = [clean(_with_conditions(r) if source in ("pods", "nodes") else dict(r.obj), res)
                               for r in getattr(snap, source)
                               if isinstance(getattr(r, "obj", None), dict)
                               and (wanted is None or key(r.meta.namespace, r.meta.name) in wanted)]
    if snap.status("runtimeclasses").state.usable:
        out.objects["runtimeclasses"] = [{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                                          "metadata": {"name": r.meta.name}, "handler": r.handler}
                                         for r in snap.runtimeclasses]
    if snap.status("namespaces").state.usable:
        out.objects["namespaces"] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
                                     for n in snap.namespaces]
    if snap.status("events").state.usable:
        out.objects["events"] = [_event_obj(e) for e in snap.events]
    return out


def _event_obj(e: Any) -> Obj:
    def ts(d: Any) -> str | None:
        return d.isoformat().replace("+00:00", "Z") if d is not None else None

    md: Obj = {"name": e.meta.name, "namespace": e.meta.namespace, "uid": e.meta.uid}
    return {"apiVersion": "v1", "kind": "Event", "metadata": {k: v for k, v in md.items() if v},
            "involvedObject": {k: v for k, v in (("kind", e.involved_kind), ("name", e.involved_name),
                                                 ("namespace", e.involved_namespace)) if v},
            "reason": e.reason, "message": e.message, "type": e.type, "count": e.count,
            "firstTimestamp": ts(e.first_seen), "lastTimestamp": ts(e.last_seen),
            "source": {"component": e.source} if e.source else {}}
