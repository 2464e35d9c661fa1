"""Raw Kubernetes JSON -> slim projected dicts -> typed records the checks read.

Projection runs once per object as it enters the cache (list or watch event): it drops
`metadata.managedFields` always, and for pods keeps only what gputui shows or checks, so a
60k-pod cluster fits in a few hundred MB. Full objects are fetched on demand (detail, bundle).
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from decimal import InvalidOperation
from functools import lru_cache
from sys import intern
from typing import Any

import orjson
from kubernetes.utils import parse_quantity
from msgspec import UNSET

from diagnostics.records import (
    Budget,
    Condition,
    ContainerResources,
    ContainerState,
    DaemonSet,
    Event,
    Meta,
    Node,
    NodeClaim,
    NodeClass,
    NodePool,
    Pdb,
    Pod,
    PodClaim,
    Requirement,
    RuntimeClass,
    Taint,
    Toleration,
)
from gputui.kube import wire

Obj = dict[str, Any]

_EMPTY: Mapping[str, Any] = {}


# --- scalar helpers -------------------------------------------------------------------------

def quantity(raw: Any) -> float:
    """A Kubernetes quantity as a float; malformed values count as 0 rather than crash."""
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        return 0.0
    return _quantity(raw)


@lru_cache(maxsize=4096)
def _quantity(raw: str | int | float) -> float:
    try:
        return float(parse_quantity(raw))
    except (ValueError, TypeError, InvalidOperation, ArithmeticError):
        return 0.0


def resources(raw: Mapping[str, Any] | None) -> dict[str, float]:
    if not raw or not isinstance(raw, Mapping):
        return {}
    return {str(k): quantity(v if not isinstance(v, (dict, list)) else None) for k, v in raw.items()}


def timestamp(raw: Any) -> datetime | None:
    if not raw or not isinstance(raw, str):
        return None
    return _timestamp(raw)


@lru_cache(maxsize=65536)
def _timestamp(raw: str) -> datetime | None:
    try:
        dt = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def _s(v: Any) -> str:
    return v if isinstance(v, str) else ("" if v is None else str(v))


def _int(v: Any) -> int:
    """Counts from status fields; a hand-edited or corrupt object must not crash the checks."""
    try:
        return int(v or 0)
    except (TypeError, ValueError):
        return 0


def _list(v: Any) -> list[Any]:
    return v if type(v) is list else []


def _map(v: Any) -> Mapping[str, Any]:
    # `type(v) is dict`, not isinstance(v, Mapping): the ABC check was ~20% of ingest time, and
    # parsed JSON is only ever plain dicts.
    return v if type(v) is dict else _EMPTY


_NO_STRINGS: dict[str, str] = {}
"""Shared by every record without labels/annotations/nodeSelector: records are never mutated."""


def _str_map(v: Any) -> dict[str, str]:
    """A string->string map; the parsed dict itself when it already is one (shared, not copied:
    labels of 60k pods are a good share of the cache)."""
    if type(v) is not dict or not v:
        return _NO_STRINGS
    for x in v.values():
        if type(x) is not str:
            return {str(k): _s(x) for k, x in v.items()}
    return v


def meta(obj: Mapping[str, Any]) -> Meta:
    return _meta(_map(obj.get("metadata")))


def _meta(m: Mapping[str, Any], owners: tuple[Mapping[str, Any], ...] | None = None,
          share_labels: bool = False) -> Meta:
    """`owners`: the ownerReferences as a tuple when the caller has it already (shared, see `pod`);
    `share_labels`: labels equal to earlier ones become the same dict (see `_shared_strings`)."""
    ns = m.get("namespace")
    labels = _str_map(m.get("labels"))
    return Meta(
        name=_s(m.get("name")),
        namespace=_s(ns) or None,
        uid=_s(m.get("uid")),
        labels=_shared_strings(labels) if share_labels and labels else labels,
        annotations=_str_map(m.get("annotations")),
        created=timestamp(m.get("creationTimestamp")),
        deleting=timestamp(m.get("deletionTimestamp")),
        owners=_owner_tuple(m.get("ownerReferences")) if owners is None else owners,
    )


def _owner_tuple(raw: Any) -> tuple[Mapping[str, Any], ...]:
    return tuple(o for o in _list(raw) if isinstance(o, Mapping))


def conditions(raw: Any) -> tuple[Condition, ...]:
    """A pod's decoded conditions arrive as Condition already (gputui.kube.shapes); others as parsed JSON."""
    items = _list(raw)
    if items and type(items[0]) is Condition:
        return tuple(items)
    # type/status are a handful of distinct strings repeated on every object: share them.
    return tuple(Condition(intern(_s(c.get("type"))), intern(_s(c.get("status"))), _s(c.get("reason")),
                           _s(c.get("message")),
                           timestamp(c.get("lastTransitionTime") or c.get("lastHeartbeatTime")))
                 for c in items if type(c) is dict and c.get("type"))


def taints(raw: Any) -> tuple[Taint, ...]:
    return tuple(Taint(_s(t.get("key")), _s(t.get("value")), _s(t.get("effect")))
                 for t in _list(raw) if isinstance(t, Mapping))


def tolerations(raw: Any) -> tuple[Toleration, ...]:
    return tuple(Toleration(_s(t.get("key")), _s(t.get("operator")) or "Equal", _s(t.get("value")),
                            _s(t.get("effect")))
                 for t in _list(raw) if isinstance(t, Mapping))


_INCLUSIVE = {"Gte": ("Gt", -1), "Lte": ("Lt", 1)}
"""Karpenter v1.9+ NodePool operators on integer labels, read as the Gt/Lt every check knows (Gte 1 = Gt 0)."""


def requirements(raw: Any) -> tuple[Requirement, ...]:
    out = []
    for r in _list(raw):
        if isinstance(r, Mapping) and r.get("key"):
            mv = r.get("minValues")
            op, values = _s(r.get("operator")), tuple(_s(v) for v in _list(r.get("values")))
            if op in _INCLUSIVE and len(values) == 1 and values[0].lstrip("-").isdigit():
                op, shift = _INCLUSIVE[op]
                values = (str(int(values[0]) + shift),)
            out.append(Requirement(_s(r.get("key")), op, values, int(mv) if isinstance(mv, int) else None))
    return tuple(out)


FIELD_PREFIX = "field:"
"""matchFields requirements (only `metadata.name`) are kept as `field:metadata.name`: they pin a pod to a
node by name, and Karpenter ignores pods that use them."""


def required_affinity(spec: Mapping[str, Any]) -> tuple[tuple[Requirement, ...], ...]:
    na = _map(_map(spec.get("affinity")).get("nodeAffinity"))
    req = _map(na.get("requiredDuringSchedulingIgnoredDuringExecution"))
    out = []
    for term in _list(req.get("nodeSelectorTerms")):
        if not isinstance(term, Mapping):
            continue
        fields = tuple(Requirement(FIELD_PREFIX + r.key, r.operator, r.values)
                       for r in requirements(term.get("matchFields")))
        # An empty term matches no node (Kubernetes); () would match every one.
        out.append(requirements(term.get("matchExpressions")) + fields or (EMPTY_TERM,))
    return tuple(out)


EMPTY_TERM = Requirement(FIELD_PREFIX, "In", ())
"""Stands for a nodeSelectorTerm with no requirement at all: it holds on no node."""


# --- projection -----------------------------------------------------------------------------

POD_SPEC_KEEP = ("nodeName", "nodeSelector", "tolerations", "priorityClassName", "schedulerName",
                 "runtimeClassName", "overhead", "priority", "restartPolicy", "activeDeadlineSeconds",
                 "serviceAccountName", "resourceClaims", "schedulingGates")
POD_STATUS_KEEP = ("phase", "reason", "message", "nominatedNodeName", "startTime", "hostIP", "podIP",
                   "qosClass", "resourceClaimStatuses")
"""`resourceClaims` / `resourceClaimStatuses`: the DRA claims a pod waits on (absent on almost every pod);
`schedulingGates`: who holds a pod back from every scheduler (Kueue, ...; absent on almost every pod)."""
CONTAINER_KEEP = ("name", "image", "resources", "restartPolicy")
"""`restartPolicy: Always` on an init container makes it a sidecar: its requests add up, not max."""
POD_SPEC_READ = ("affinity", "containers", "initContainers")
"""Read by `pod` besides the kept keys (affinity is kept only while unscheduled)."""
POD_STATUS_READ = ("conditions", "containerStatuses", "initContainerStatuses")
"""Read by `pod` into the record, not kept in its object."""
_NODE_STATUS_DROP = ("images", "conditions")
"""Conditions live in the record (Node.conditions); a node's raw ones are ~3 KB."""
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _slim_metadata(obj: Mapping[str, Any]) -> Obj:
    md = dict(_map(obj.get("metadata")))
    md.pop("managedFields", None)
    anns = md.get("annotations")
    if type(anns) is dict and _LAST_APPLIED in anns:
        md["annotations"] = {k: v for k, v in anns.items() if k != _LAST_APPLIED}
    return md


def project(kind: str, obj: Obj) -> Obj:
    """A slim copy (never mutates `obj`); always drops managedFields. Nested values are shared with
    `obj`, not copied. Pods: see `pod`."""
    if kind == "Pod":
        return pod(obj).obj
    out = dict(obj)
    out["metadata"] = _slim_metadata(obj)
    if kind == "Node" and isinstance(obj.get("status"), Mapping):
        out["status"] = {k: v for k, v in obj["status"].items() if k not in _NODE_STATUS_DROP}
    return out


# --- sharing --------------------------------------------------------------------------------

class _Interner:
    """Equal values -> one shared object. Pods of one workload repeat the same containers,
    tolerations and owners thousands of times; sharing them is most of what keeps a 60k-pod cache
    small, and skips re-parsing their quantities. Bounded: cleared when full."""

    def __init__(self, cap: int = 20_000) -> None:
        self._d: dict[Any, Any] = {}
        self._cap = cap

    def get(self, key: Any, make: Callable[[], Any]) -> Any:
        v = self._d.get(key)
        if v is None:
            if len(self._d) >= self._cap:
                self._d.clear()
            v = self._d[key] = make()
        return v

    def share(self, key: Any, value: Any) -> Any:
        """`get` for a value that is already built: the one kept under `key`, else `value`, now kept."""
        v = self._d.get(key)
        if v is None:
            if len(self._d) >= self._cap:
                self._d.clear()
            v = self._d[key] = value
        return v


def _key(v: Any) -> bytes | None:
    try:
        return orjson.dumps(v)
    except TypeError:
        return None  # not JSON (a caller's Python objects): build without sharing


_json_parts = _Interner()
_parsed_resources = _Interner()


def _shared_json(v: Any) -> Any:
    """An equal JSON value seen before (the capacity of one instance type, a pool's requirements),
    else `v` itself. Only for parts most objects of a kind repeat: each distinct one is kept."""
    if type(v) is not dict and type(v) is not list:
        return v
    key = _key(v)
    return v if key is None else _json_parts.share(key, v)


def _shared_resources(raw: Any) -> dict[str, float]:
    """`resources(raw)`, one dict for every equal `raw` (records never change what they hold)."""
    key = _key(raw) if type(raw) is dict and raw else None
    if key is None:
        return resources(raw)
    return _parsed_resources.get(key, lambda: resources(raw))


_string_maps = _Interner()


def _shared_strings(v: Any) -> Any:
    """An equal string->string map already seen (same items, same order), else `v` itself.

    Pods of one workload carry the same labels and node selector, and every copy parsed from JSON
    is its own dict with its own strings (~0.5 KB a pod). Anything else is returned as it is.
    """
    if type(v) is not dict or not v:
        return v
    for x in v.values():
        if type(x) is not str:
            return v
    return _string_maps.share(orjson.dumps(v), v)  # str -> str: always JSON


_POOL_CAP = 50_000
_pool: dict[str, str] = {}


def _pooled_values(v: Any) -> Any:
    """A copy of a string map whose string values are shared with equal values of earlier maps.

    A node's ~30 labels are nearly all values every other node of its type also has (zone, arch,
    instance type...), but each parsed copy is its own string; `sys.intern` is not used because
    the pool must stay bounded. Anything but a dict is returned as it is.
    """
    if type(v) is not dict or not v:
        return v
    pool = _pool
    if len(pool) >= _POOL_CAP:
        pool.clear()
    return {k: pool.setdefault(x, x) if type(x) is str else x for k, x in v.items()}


def _share_node_parts(obj: Obj, raw: Mapping[str, Any]) -> None:
    """Share what nodes of one kind repeat, in the slim copy `project` made (never in `raw`)."""
    md = obj["metadata"]
    if "labels" in md:
        md["labels"] = _pooled_values(md["labels"])
    status = obj.get("status")
    if type(status) is dict and status is not raw.get("status"):
        for k in ("allocatable", "capacity", "daemonEndpoints"):
            if k in status:
                status[k] = _shared_json(status[k])
        if "nodeInfo" in status:
            status["nodeInfo"] = _pooled_values(status["nodeInfo"])


def _share_nodeclaim_parts(obj: Obj, raw: Mapping[str, Any]) -> None:
    """NodeClaims of one pool and instance type repeat their labels, spec and capacity."""
    md = obj["metadata"]
    if "labels" in md:
        md["labels"] = _shared_strings(md["labels"])
    for part, keys in (("spec", ("nodeClassRef", "requirements", "resources", "taints", "startupTaints")),
                       ("status", ("allocatable", "capacity"))):
        d = obj.get(part)
        if type(d) is dict and any(k in d for k in keys):
            d = obj[part] = dict(d)  # a copy: `raw` is the caller's
            for k in keys:
                if k in d:
                    d[k] = _shared_json(d[k])


# --- records --------------------------------------------------------------------------------

def node(raw: Obj) -> Node:
    obj = project("Node", raw)
    _share_node_parts(obj, raw)
    spec, status = _map(raw.get("spec")), _map(raw.get("status"))
    return Node(
        meta=meta(obj),
        capacity=_shared_resources(status.get("capacity")),
        allocatable=_shared_resources(status.get("allocatable")),
        taints=taints(spec.get("taints")),
        conditions=conditions(status.get("conditions")),
        unschedulable=bool(spec.get("unschedulable")),
        provider_id=_s(spec.get("providerID")),
        boot_id=_s(_map(status.get("nodeInfo")).get("bootID")),
        os_image=str(_map(status.get("nodeInfo")).get("osImage") or ""),
        addresses=tuple((_s(a.get("type")), str(a["address"])) for a in _list(status.get("addresses"))
                        if isinstance(a, Mapping) and a.get("address")),
        runtime_handlers=_runtime_handlers(status.get("runtimeHandlers")),
        obj=obj,
    )


def _runtime_handlers(raw: Any) -> tuple[str, ...] | None:
    if not isinstance(raw, list):
        return None
    return tuple(str(h.get("name") or "") for h in raw if isinstance(h, Mapping))


def _container_states(raw: Any) -> tuple[ContainerState, ...]:
    items = _list(raw)
    if items and type(items[0]) is wire.ContainerStatus:
        return tuple([_decoded_container_state(cs) for cs in items])
    return tuple([_container_state(cs) for cs in items if isinstance(cs, Mapping)])


def _decoded_container_state(cs: wire.ContainerStatus) -> ContainerState:
    """`_container_state` for a status msgspec decoded (see `gputui.kube.wire`)."""
    state, last = cs.state, cs.lastState
    kind, detail = "unknown", _NO_DETAIL
    if state is not None:
        if state.running is not UNSET:
            kind, detail = "running", state.running
        elif state.waiting is not UNSET:
            kind, detail = "waiting", state.waiting
        elif state.terminated is not UNSET:
            kind, detail = "terminated", state.terminated
    term = last.terminated if last is not None and last.terminated is not UNSET else _NO_DETAIL
    return ContainerState(
        name=cs.name, ready=cs.ready, restart_count=cs.restartCount, state=kind,
        reason=detail.reason, message=detail.message, exit_code=detail.exitCode,
        last_reason=term.reason, last_exit_code=term.exitCode, last_message=term.message,
        started_at=detail.startedAt if kind == "running" else None,
    )


_NO_DETAIL = wire.StateDetail()


def _container_state(cs: Mapping[str, Any]) -> ContainerState:
    state = _map(cs.get("state"))
    last = _map(_map(cs.get("lastState")).get("terminated"))
    kind = next((k for k in ("running", "waiting", "terminated") if k in state), "unknown")
    detail = _map(state.get(kind))
    code = detail.get("exitCode")
    last_code = last.get("exitCode")
    return ContainerState(
        name=_s(cs.get("name")), ready=bool(cs.get("ready")),
        restart_count=_int(cs.get("restartCount")), state=kind,
        reason=_s(detail.get("reason")), message=_s(detail.get("message")),
        exit_code=code if isinstance(code, int) else None,
        last_reason=_s(last.get("reason")), last_exit_code=last_code if isinstance(last_code, int) else None,
        last_message=_s(last.get("message")),
        started_at=timestamp(detail.get("startedAt")) if kind == "running" else None,
    )


def pod_resources(spec: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, float],
                                                     tuple[tuple[str, dict[str, float], dict[str, float]], ...]]:
    """Effective requests/limits the scheduler uses: max(each init container with the sidecars started before
    it, app containers + all sidecars) + overhead. Sidecars are init containers with `restartPolicy: Always`.

    A container that sets only a limit for an extended resource gets request == limit (API defaulting).
    """
    per: list[tuple[str, dict[str, float], dict[str, float]]] = []
    req_sum: dict[str, float] = {}
    lim_sum: dict[str, float] = {}
    for c in _list(spec.get("containers")):
        if not isinstance(c, Mapping):
            continue
        res = _map(c.get("resources"))
        lim = resources(res.get("limits"))
        req = resources(res.get("requests"))
        for k, v in lim.items():
            req.setdefault(k, v)
        per.append((_s(c.get("name")), req, lim))
        for k, v in req.items():
            req_sum[k] = req_sum.get(k, 0.0) + v
        for k, v in lim.items():
            lim_sum[k] = lim_sum.get(k, 0.0) + v
    sidecars: dict[str, float] = {}
    init_peak: dict[str, float] = {}
    for c in _list(spec.get("initContainers")):
        if not isinstance(c, Mapping):
            continue
        res = _map(c.get("resources"))
        lim = resources(res.get("limits"))
        req = resources(res.get("requests"))
        for k, v in lim.items():
            req.setdefault(k, v)
        if c.get("restartPolicy") == "Always":  # a sidecar: runs on beside everything after it
            for k, v in req.items():
                sidecars[k] = sidecars.get(k, 0.0) + v
            running = dict(sidecars)
        else:
            running = {k: req.get(k, 0.0) + sidecars.get(k, 0.0) for k in {*req, *sidecars}}
        for k, v in running.items():
            init_peak[k] = max(init_peak.get(k, 0.0), v)
    for k, v in sidecars.items():
        req_sum[k] = req_sum.get(k, 0.0) + v
    for k, v in init_peak.items():
        req_sum[k] = max(req_sum.get(k, 0.0), v)
    for k, v in resources(spec.get("overhead")).items():
        req_sum[k] = req_sum.get(k, 0.0) + v
    return req_sum, lim_sum, tuple(per)


_shapes = _Interner()
_tolerations = _Interner()
_owners = _Interner()


def _pod_shape(spec: Mapping[str, Any]) -> tuple[Any, ...]:
    """(slim containers, slim init containers, requests, limits, per-container requests, resources as written)."""
    slim = tuple([{k: c[k] for k in CONTAINER_KEEP if k in c} for c in _list(spec.get(key)) if type(c) is dict]
                 if key in spec else None for key in ("containers", "initContainers"))
    overhead = spec.get("overhead")

    def make() -> tuple[Any, ...]:
        return (*slim, *pod_resources(spec), _resources_written(spec))

    key = _key((slim, overhead))
    return make() if key is None else _shapes.get(key, make)


def _resources_written(spec: Mapping[str, Any]) -> tuple[ContainerResources, ...]:
    out = []
    for section in ("initContainers", "containers"):
        for c in _list(spec.get(section)):
            if isinstance(c, Mapping):
                res = _map(c.get("resources"))
                out.append(ContainerResources(section, str(c.get("name", "?")), _map(res.get("requests")),
                                              _map(res.get("limits"))))
    return tuple(out)


def _pod_tolerations(raw: Any) -> tuple[Any, tuple[Toleration, ...], tuple[Mapping[str, Any], ...]]:
    """(the list as written, parsed, its entries as written)."""
    def make() -> tuple[Any, tuple[Toleration, ...], tuple[Mapping[str, Any], ...]]:
        return raw, tolerations(raw), tuple(t for t in _list(raw) if isinstance(t, Mapping))

    key = _key(raw) if type(raw) is list else None
    if key is None:
        return make()
    return _tolerations.get(key, make)


def heaviest_preference(spec: Mapping[str, Any]) -> tuple[Requirement, ...]:
    """The matchExpressions of the heaviest preferredDuringScheduling node affinity term."""
    node_aff = _map(_map(spec.get("affinity")).get("nodeAffinity"))
    preferred = node_aff.get("preferredDuringSchedulingIgnoredDuringExecution")
    if not isinstance(preferred, list):
        return ()
    best: Mapping[str, Any] | None = None
    for p in preferred:
        if isinstance(p, Mapping) and (best is None or _weight(p) > _weight(best)):
            best = p
    pref = best.get("preference") if best is not None else None
    exprs = pref.get("matchExpressions") if isinstance(pref, Mapping) else None
    return tuple(Requirement(str(e.get("key", "")), str(e.get("operator", "")),
                             tuple(str(v) for v in e.get("values") or ()))
                 for e in exprs or () if isinstance(e, Mapping)) if isinstance(exprs, list) else ()


def _weight(term: Mapping[str, Any]) -> int:
    w = term.get("weight")
    return w if isinstance(w, int) else 0


def _scheduling_gates(raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list):
        return ()
    return tuple(str(g.get("name", "")) if isinstance(g, Mapping) else str(g) for g in raw)


def pod_claims(spec: Mapping[str, Any], status: Mapping[str, Any]) -> tuple[PodClaim, ...]:
    """spec.resourceClaims, with the names status.resourceClaimStatuses gives claims made from a template."""
    entries = _list(spec.get("resourceClaims"))
    if not entries:
        return ()
    made = {str(_map(s).get("name")): str(_map(s).get("resourceClaimName") or "")
            for s in _list(status.get("resourceClaimStatuses"))}
    out = []
    for e in entries:
        e = _map(e)
        name = str(e.get("name") or "")
        direct = str(e.get("resourceClaimName") or "")
        template = str(e.get("resourceClaimTemplateName") or "")
        out.append(PodClaim(name, direct or made.get(name, ""), template))
    return tuple(out)


def _pick(d: Mapping[str, Any], keys: tuple[str, ...]) -> Obj:
    """The `keys` of `d`, strings interned: node, namespace, scheduler, phase, QoS... repeat on
    thousands of pods, and each parsed copy is its own ~60-byte object otherwise."""
    return {k: intern(v) if type(v) is str else v for k in keys if k in d for v in (d[k],)}


_POD_OBJ = Pod.__dict__["obj"]
"""The dataclass's own slot for `obj` (PackedPod's property shadows it)."""

_Layout = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]
_layouts = _Interner()


def _pack(api_version: Any, md: Obj, spec: Obj, status: Obj) -> tuple[Any, ...]:
    """A pod's slim object as (key layout, apiVersion, values...): one tuple instead of four dicts.

    The layout (each dict's keys, in order) is shared by every pod with the same keys; the values
    are the very objects the dicts held. ~0.75 KB less per pod than keeping the dicts (45 MB at 60k).
    """
    keys = (tuple(md), tuple(spec), tuple(status))
    layout = _layouts.share(keys, keys)
    return (layout, api_version, *md.values(), *spec.values(), *status.values())


def _unpack(packed: tuple[Any, ...]) -> Obj:
    """The dict `_pack` was given, rebuilt (same keys, order and values; nested values are shared)."""
    layout: _Layout = packed[0]
    md_keys, spec_keys, status_keys = layout
    i = 2 + len(md_keys)
    j = i + len(spec_keys)
    return {"apiVersion": packed[1], "kind": "Pod", "metadata": dict(zip(md_keys, packed[2:i])),
            "spec": dict(zip(spec_keys, packed[i:j])), "status": dict(zip(status_keys, packed[j:]))}


def _get_obj(self: Pod) -> Obj:
    v = _POD_OBJ.__get__(self, Pod)
    return _unpack(v) if type(v) is tuple else v


def _set_obj(self: Pod, value: Any) -> None:
    _POD_OBJ.__set__(self, value)


class PackedPod(Pod):
    """A Pod that keeps its slim object packed (see `_pack`) and rebuilds the dict when `obj` is read.

    Pods are most of a big cluster and `obj` is read rarely (YAML view, bundles, a few checks on the
    pods they flag), so each read builds a fresh dict rather than the cache keeping 60k of them.
    Everything else behaves as Pod: equality and hashing compare the same fields, pickling and
    `dataclasses.replace` go through `obj` (a replaced or unpickled PackedPod keeps the plain dict
    it was given).
    """

    __slots__ = ()
    obj = property(_get_obj, _set_obj)

    def __eq__(self, other: object) -> bool:
        """Pod's equality, with `obj` compared last: rebuilt only when every other field is equal
        (checks test `pod in list` against other pods)."""
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _all_but_obj(self) == _all_but_obj(other) and self.obj == other.obj

    __hash__ = Pod.__hash__  # as Pod's (defining __eq__ would drop it)


_all_but_obj = operator.attrgetter(*(f.name for f in dataclasses.fields(Pod) if f.name != "obj"))


def pod(raw: Obj) -> PackedPod:
    """From the object as the API returns it. Pods are most of a big cluster, so `obj` keeps only
    what gputui shows or checks and nothing the record holds in another form: no conditions or
    container statuses (the record has them), no env/volumes, node affinity only while unscheduled.
    """
    spec, status = _map(raw.get("spec")), _map(raw.get("status"))
    md = _slim_metadata(raw)
    for k in ("namespace", "generateName"):
        if type(md.get(k)) is str:
            md[k] = intern(md[k])
    if "labels" in md:
        md["labels"] = _shared_strings(md["labels"])
    owners = md.get("ownerReferences")
    owner_tuple = None
    if type(owners) is list and owners:
        key = _key(owners)
        if key is not None:
            owners, owner_tuple = _owners.get(key, lambda: (owners, _owner_tuple(owners)))
            md["ownerReferences"] = owners
    containers, init, reqs, lims, per, written = _pod_shape(spec)
    tol_raw, tols, tols_written = _pod_tolerations(spec.get("tolerations"))
    slim_spec = _pick(spec, POD_SPEC_KEEP)
    if "nodeSelector" in slim_spec:
        slim_spec["nodeSelector"] = _shared_strings(slim_spec["nodeSelector"])
    if tol_raw is not None:
        slim_spec["tolerations"] = tol_raw
    preferred: tuple[Requirement, ...] = ()
    if "affinity" in spec and not spec.get("nodeName"):
        slim_spec["affinity"] = spec["affinity"]
        preferred = heaviest_preference(spec)
    if containers is not None:
        slim_spec["containers"] = containers
    if init is not None:
        slim_spec["initContainers"] = init
    slim_status = _pick(status, POD_STATUS_KEEP)
    return PackedPod(
        meta=_meta(md, owner_tuple),
        node_name=_s(slim_spec.get("nodeName")),
        phase=_s(slim_status.get("phase")) or "Pending",
        requests=reqs,
        limits=lims,
        container_requests=per,
        tolerations=tols,
        node_selector=_str_map(slim_spec.get("nodeSelector")),
        required_affinity=required_affinity(spec),
        conditions=conditions(status.get("conditions")),
        nominated_node=_s(status.get("nominatedNodeName")),
        containers=_container_states(status.get("containerStatuses"))
        + _container_states(status.get("initContainerStatuses")),
        scheduler_name=_s(slim_spec.get("schedulerName")) or "default-scheduler",
        priority_class=_s(slim_spec.get("priorityClassName")),
        runtime_class=_s(slim_spec.get("runtimeClassName")),
        started=timestamp(status.get("startTime")),
        resources_written=written,
        preferred_affinity=preferred,
        scheduling_gates=_scheduling_gates(slim_spec.get("schedulingGates")),
        tolerations_written=tols_written,
        claims=pod_claims(slim_spec, slim_status),
        pod_ip=_s(slim_status.get("podIP")),
        # The packed tuple, not a Mapping: PackedPod's `obj` property unpacks it on read.
        obj=_pack(raw.get("apiVersion", "v1"), md, slim_spec, slim_status),  # type: ignore[arg-type]
    )


def event(obj: Obj) -> Event:
    inv = _map(obj.get("involvedObject") or obj.get("regarding"))
    src = _map(obj.get("source"))
    count = obj.get("count")
    series = _map(obj.get("series"))
    if not isinstance(count, int):
        count = _int(series.get("count")) or 1
    first = timestamp(obj.get("firstTimestamp")) or timestamp(obj.get("eventTime"))
    last = (timestamp(obj.get("lastTimestamp")) or timestamp(series.get("lastObservedTime"))
            or timestamp(obj.get("eventTime")) or first)
    return Event(
        meta=_meta(_map(obj.get("metadata")), share_labels=True),  # events of one source share them
        involved_kind=intern(_s(inv.get("kind"))),
        involved_name=_s(inv.get("name")),
        involved_namespace=intern(_s(inv.get("namespace"))) or None,
        reason=intern(_s(obj.get("reason"))),
        message=_s(obj.get("message") or obj.get("note")),
        type=intern(_s(obj.get("type")) or "Normal"),
        count=count,
        first_seen=first,
        last_seen=last,
        source=intern(_s(src.get("component") or obj.get("reportingComponent") or obj.get("reportingController"))),
    )


def nodeclaim(raw: Obj) -> NodeClaim:
    obj = project("NodeClaim", raw)
    _share_nodeclaim_parts(obj, raw)
    spec, status = _map(obj.get("spec")), _map(obj.get("status"))
    m = meta(obj)
    return NodeClaim(
        meta=m,
        nodepool=m.labels.get("karpenter.sh/nodepool", ""),
        node_name=_s(status.get("nodeName")),
        provider_id=_s(status.get("providerID")),
        requests=_shared_resources(_map(spec.get("resources")).get("requests")),
        capacity=_shared_resources(status.get("capacity")),
        allocatable=_shared_resources(status.get("allocatable")),
        requirements=requirements(spec.get("requirements")),
        taints=taints(spec.get("taints")),
        startup_taints=taints(spec.get("startupTaints")),
        node_class=_s(_map(spec.get("nodeClassRef")).get("name")),
        conditions=conditions(status.get("conditions")),
        last_pod_event=timestamp(status.get("lastPodEventTime")),
        image_id=str(status.get("imageID") or ""),
        expire_after=str(spec.get("expireAfter") or ""),
        termination_grace_period=str(spec.get("terminationGracePeriod") or ""),
        obj=obj,
    )


def nodepool(raw: Obj) -> NodePool:
    obj = project("NodePool", raw)
    spec, status = _map(obj.get("spec")), _map(obj.get("status"))
    template = _map(spec.get("template"))
    tspec = _map(template.get("spec"))
    disruption = _map(spec.get("disruption"))
    ncr = _map(tspec.get("nodeClassRef"))
    budgets = tuple(Budget(_s(b.get("nodes")) or "10%", tuple(_s(r) for r in _list(b.get("reasons"))),
                           _s(b.get("schedule")), _s(b.get("duration")))
                    for b in _list(disruption.get("budgets")) if isinstance(b, Mapping))
    weight, replicas = spec.get("weight"), spec.get("replicas")
    return NodePool(
        meta=meta(obj),
        weight=weight if isinstance(weight, int) else 0,
        limits=resources(spec.get("limits")),
        usage=resources(status.get("resources")),
        requirements=requirements(tspec.get("requirements")),
        taints=taints(tspec.get("taints")),
        startup_taints=taints(tspec.get("startupTaints")),
        template_labels={str(k): _s(v) for k, v in _map(_map(template.get("metadata")).get("labels")).items()},
        node_class=_s(ncr.get("name")),
        node_class_kind=_s(ncr.get("kind")) or "EC2NodeClass",
        consolidation_policy=_s(disruption.get("consolidationPolicy")) or "WhenEmptyOrUnderutilized",
        consolidate_after=_s(disruption.get("consolidateAfter")) or "0s",
        budgets=budgets or (Budget("10%"),),
        expire_after=_s(tspec.get("expireAfter") or disruption.get("expireAfter")) or "720h",
        conditions=conditions(status.get("conditions")),
        replicas=None if replicas is None else replicas if isinstance(replicas, int) else _int(replicas),
        limits_spec=_map(spec.get("limits")),
        template_spec=tspec,
        disruption_spec=disruption,
        obj=obj,
    )


def nodeclass(raw: Obj) -> NodeClass:
    obj = project("EC2NodeClass", raw)
    spec, status = _map(obj.get("spec")), _map(obj.get("status"))

    def maps(v: Any) -> tuple[Mapping[str, Any], ...]:
        return tuple(x for x in _list(v) if isinstance(x, Mapping))

    return NodeClass(
        meta=meta(obj),
        subnet_terms=maps(spec.get("subnetSelectorTerms")),
        security_group_terms=maps(spec.get("securityGroupSelectorTerms")),
        ami_terms=maps(spec.get("amiSelectorTerms")),
        subnets=maps(status.get("subnets")),
        security_groups=maps(status.get("securityGroups")),
        amis=maps(status.get("amis")),
        role=_s(spec.get("role")),
        instance_profile=_s(status.get("instanceProfile") or spec.get("instanceProfile")),
        spec_instance_profile=str(spec.get("instanceProfile") or ""),
        tags=_map(spec.get("tags")),
        placement_group_selector=_map(spec.get("placementGroupSelector")),
        capacity_reservation_terms=maps(spec.get("capacityReservationSelectorTerms")),
        conditions=conditions(status.get("conditions")),
        obj=obj,
    )


def daemonset(raw: Obj) -> DaemonSet:
    obj = project("DaemonSet", raw)
    spec, status = _map(obj.get("spec")), _map(obj.get("status"))
    pspec = _map(_map(spec.get("template")).get("spec"))
    return DaemonSet(
        meta=meta(obj),
        selector={str(k): _s(v) for k, v in _map(_map(spec.get("selector")).get("matchLabels")).items()},
        node_selector={str(k): _s(v) for k, v in _map(pspec.get("nodeSelector")).items()},
        required_affinity=required_affinity(pspec),
        tolerations=tolerations(pspec.get("tolerations")),
        images=tuple(_s(c.get("image")) for c in _list(pspec.get("containers")) if isinstance(c, Mapping)),
        desired=_int(status.get("desiredNumberScheduled")),
        ready=_int(status.get("numberReady")),
        obj=obj,
    )


def pdb(raw: Obj) -> Pdb:
    obj = project("PodDisruptionBudget", raw)
    spec, status = _map(obj.get("spec")), _map(obj.get("status"))
    allowed = status.get("disruptionsAllowed")
    return Pdb(meta=meta(obj), selector=_map(spec.get("selector")),
               disruptions_allowed=allowed if isinstance(allowed, int) else None,
               has_selector=spec.get("selector") is not None,
               unhealthy_pod_eviction_policy=_s(spec.get("unhealthyPodEvictionPolicy")),
               budget={k: spec[k] for k in ("minAvailable", "maxUnavailable") if k in spec},
               health={k: status[k] for k in ("currentHealthy", "desiredHealthy", "expectedPods") if k in status},
               obj=obj)


def runtimeclass(obj: Obj) -> RuntimeClass:
    return RuntimeClass(meta=meta(obj), handler=_s(obj.get("handler")))


RECORD_BUILDERS: dict[str, Callable[[Obj], Any]] = {
    "nodes": node,
    "pods": pod,
    "events": event,
    "nodeclaims": nodeclaim,
    "nodepools": nodepool,
    "ec2nodeclasses": nodeclass,
    "daemonsets": daemonset,
    "pdbs": pdb,
    "runtimeclasses": runtimeclass,
    "namespaces": lambda o: _s(_map(o.get("metadata")).get("name")),
}

KIND_OF_SOURCE = {
    "nodes": "Node", "pods": "Pod", "events": "Event", "nodeclaims": "NodeClaim",
    "nodepools": "NodePool", "ec2nodeclasses": "EC2NodeClass", "daemonsets": "DaemonSet",
    "pdbs": "PodDisruptionBudget", "runtimeclasses": "RuntimeClass", "namespaces": "Namespace",
}


def record(source: str, obj: Obj) -> Any:
    """The record for one object of a source (see KIND_OF_SOURCE), as the API returned it."""
    return RECORD_BUILDERS[source](obj)
