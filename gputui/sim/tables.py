"""Server-side `meta.k8s.io/v1 Table` output, so `kubectl get` prints the columns it prints on a real cluster."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import orjson

from gputui.sim.kinds import Column, KindInfo

Row = Callable[[dict[str, Any]], list[Any]]

_FILTER = re.compile(r'^(?P<field>[^\[]*)\[\?\(@\.(?P<key>[\w.]+)\s*==\s*"(?P<value>[^"]*)"\)\]$')


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def age(ts: str | None) -> str:
    if not ts:
        return "<unknown>"
    try:
        then = datetime.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return "<unknown>"
    return human_duration((datetime.now(timezone.utc) - then).total_seconds())


def _split_path(path: str) -> list[str]:
    """Split on unescaped dots outside `[...]` (`labels.node\\.kubernetes\\.io/zone` is one part)."""
    parts, cur, depth, i = [], "", 0, 0
    path = path.lstrip(".")
    while i < len(path):
        ch = path[i]
        if ch == "\\" and i + 1 < len(path):
            cur += path[i + 1]
            i += 2
            continue
        depth += (ch == "[") - (ch == "]")
        if ch == "." and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    parts.append(cur)
    return [p for p in parts if p]


def json_path(obj: Any, path: str) -> Any:
    """The JSONPath subset CRD printer columns use: dotted fields, escaped dots, `[?(@.k=="v")]` filters."""
    cur = obj
    for part in _split_path(path):
        m = _FILTER.match(part)
        if m:
            items = cur.get(m["field"]) if isinstance(cur, dict) and m["field"] else cur
            cur = next((it for it in items or [] if isinstance(it, dict)
                        and str(it.get(m["key"])) == m["value"]), None)
        elif isinstance(cur, dict):
            cur = cur.get(part)
        else:
            return None
        if cur is None:
            return None
    return cur


def _cell(value: Any, type_: str) -> Any:
    if value is None:
        return "<none>" if type_ == "string" else None
    if type_ == "date":
        return age(str(value))
    if isinstance(value, (dict, list)):
        return orjson.dumps(value).decode()
    return value


def _pod_row(pod: dict[str, Any]) -> list[Any]:
    """kubectl's printPod: READY, STATUS (waiting/terminated reason), RESTARTS, AGE, wide columns."""
    status, spec, md = pod.get("status") or {}, pod.get("spec") or {}, pod["metadata"]
    total = len(spec.get("containers") or [])
    reason = status.get("reason") or status.get("phase") or "Unknown"
    ready = restarts = 0
    running = False
    init_statuses = status.get("initContainerStatuses") or []
    for i, cs in enumerate(init_statuses):
        restarts += cs.get("restartCount", 0)
        st = cs.get("state") or {}
        if "terminated" in st and st["terminated"].get("exitCode") == 0:
            continue
        if "terminated" in st:
            reason = "Init:" + (st["terminated"].get("reason") or f"ExitCode:{st['terminated'].get('exitCode')}")
        elif "waiting" in st and st["waiting"].get("reason") not in (None, "", "PodInitializing"):
            reason = "Init:" + st["waiting"]["reason"]
        else:
            reason = f"Init:{i}/{len(spec.get('initContainers') or [])}"
        break
    else:
        for cs in reversed(status.get("containerStatuses") or []):
            restarts += cs.get("restartCount", 0)
            st = cs.get("state") or {}
            if (st.get("waiting") or {}).get("reason"):
                reason = st["waiting"]["reason"]
            elif "terminated" in st:
                t = st["terminated"]
                reason = t.get("reason") or (f"Signal:{t['signal']}" if t.get("signal") else f"ExitCode:{t.get('exitCode')}")
            elif "running" in st and cs.get("ready"):
                running = True
                ready += 1
        if reason == "Completed" and running:
            reason = "Running"
    if md.get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    gates = spec.get("readinessGates")
    return [md["name"], f"{ready}/{total}", reason, restarts, age(md.get("creationTimestamp")),
            status.get("podIP") or "<none>", spec.get("nodeName") or "<none>",
            status.get("nominatedNodeName") or "<none>", f"{len(gates)}" if gates else "<none>"]


def _node_row(node: dict[str, Any]) -> list[Any]:
    md, spec, status = node["metadata"], node.get("spec") or {}, node.get("status") or {}
    states = []
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    states.append("Unknown" if ready is None else ("Ready" if ready.get("status") == "True" else
                                                   "NotReady" if ready.get("status") == "False" else "Unknown"))
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    roles = sorted(k.split("/", 1)[1] for k in (md.get("labels") or {})
                   if k.startswith("node-role.kubernetes.io/") and "/" in k)
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    info = status.get("nodeInfo") or {}
    return [md["name"], ",".join(states), ",".join(roles) or "<none>", age(md.get("creationTimestamp")),
            info.get("kubeletVersion", ""), addresses.get("InternalIP", "<none>"),
            addresses.get("ExternalIP", "<none>"), info.get("osImage", "<unknown>"),
            info.get("kernelVersion", "<unknown>"), info.get("containerRuntimeVersion", "<unknown>")]


def _event_row(ev: dict[str, Any]) -> list[Any]:
    io = ev.get("involvedObject") or {}
    last = ev.get("lastTimestamp") or ev.get("eventTime") or ev["metadata"].get("creationTimestamp")
    first = ev.get("firstTimestamp") or ev.get("eventTime") or ev["metadata"].get("creationTimestamp")
    count = ev.get("count") or 1
    last_seen = age(last)
    if count > 1:
        last_seen = f"{last_seen} (x{count} over {age(first)})"
    source = (ev.get("source") or {}).get("component") or ev.get("reportingComponent") or ""
    host = (ev.get("source") or {}).get("host")
    return [last_seen, ev.get("type", ""), ev.get("reason", ""), f"{str(io.get('kind', '')).lower()}/{io.get('name', '')}",
            io.get("fieldPath", ""), f"{source}, {host}" if host else source, ev.get("message", ""),
            age(first), count, ev["metadata"]["name"]]


def _simple(*getters: Callable[[dict[str, Any]], Any]) -> Row:
    return lambda o: [o["metadata"]["name"], *[g(o) for g in getters]]


def _get(path: str, default: Any = 0) -> Callable[[dict[str, Any]], Any]:
    def read(o: dict[str, Any]) -> Any:
        v = json_path(o, path)
        return default if v is None else v
    return read


def _age(o: dict[str, Any]) -> str:
    return age(o["metadata"].get("creationTimestamp"))


def _node_selector(o: dict[str, Any]) -> str:
    sel = ((o.get("spec") or {}).get("template") or {}).get("spec", {}).get("nodeSelector") or {}
    return ",".join(f"{k}={v}" for k, v in sel.items()) or "<none>"


def _c(name: str, type_: str = "string", priority: int = 0) -> dict[str, Any]:
    col: dict[str, Any] = {"name": name, "type": type_, "format": "name" if name == "Name" else "", "description": "",
                           "priority": priority}
    return col


_BUILTIN: dict[str, tuple[list[dict[str, Any]], Row]] = {
    "Pod": ([_c("Name"), _c("Ready"), _c("Status"), _c("Restarts", "string"), _c("Age"), _c("IP", priority=1),
             _c("Node", priority=1), _c("Nominated Node", priority=1), _c("Readiness Gates", priority=1)], _pod_row),
    "Node": ([_c("Name"), _c("Status"), _c("Roles"), _c("Age"), _c("Version"), _c("Internal-IP", priority=1),
              _c("External-IP", priority=1), _c("OS-Image", priority=1), _c("Kernel-Version", priority=1),
              _c("Container-Runtime", priority=1)], _node_row),
    "Event": ([_c("Last Seen"), _c("Type"), _c("Reason"), _c("Object"), _c("Subobject", priority=1),
               _c("Source", priority=1), _c("Message"), _c("First Seen", priority=1),
               _c("Count", "integer", 1), _c("Name", priority=1)], _event_row),
    "Namespace": ([_c("Name"), _c("Status"), _c("Age")], _simple(_get(".status.phase", ""), _age)),
    "DaemonSet": ([_c("Name"), _c("Desired", "integer"), _c("Current", "integer"), _c("Ready", "integer"),
                   _c("Up-to-date", "integer"), _c("Available", "integer"), _c("Node Selector"), _c("Age")],
                  _simple(_get(".status.desiredNumberScheduled"), _get(".status.currentNumberScheduled"),
                          _get(".status.numberReady"), _get(".status.updatedNumberScheduled"),
                          _get(".status.numberAvailable"), _node_selector, _age)),
    "Deployment": ([_c("Name"), _c("Ready"), _c("Up-to-date", "integer"), _c("Available", "integer"), _c("Age")],
                   _simple(lambda o: f"{json_path(o, '.status.readyReplicas') or 0}/{json_path(o, '.spec.replicas') or 0}",
                           _get(".status.updatedReplicas"), _get(".status.availableReplicas"), _age)),
    "PodDisruptionBudget": ([_c("Name"), _c("Min Available"), _c("Max Unavailable"),
                             _c("Allowed Disruptions", "integer"), _c("Age")],
                            _simple(_get(".spec.minAvailable", "N/A"), _get(".spec.maxUnavailable", "N/A"),
                                    _get(".status.disruptionsAllowed"), _age)),
    "RuntimeClass": ([_c("Name"), _c("Handler"), _c("Age")], _simple(_get(".handler", ""), _age)),
    "Service": ([_c("Name"), _c("Type"), _c("Cluster-IP"), _c("External-IP"), _c("Port(s)"), _c("Age")],
                _simple(_get(".spec.type", "ClusterIP"), _get(".spec.clusterIP", "<none>"),
                        lambda o: "<none>",
                        lambda o: ",".join(f"{p.get('port')}/{p.get('protocol', 'TCP')}"
                                           for p in (o.get("spec") or {}).get("ports") or []) or "<none>", _age)),
}


def _columns_table(columns: tuple[Column, ...]) -> tuple[list[dict[str, Any]], Row]:
    defs = [_c("Name")] + [{"name": c.name, "type": c.type, "format": "", "description": c.description,
                            "priority": c.priority} for c in columns]

    def row(o: dict[str, Any]) -> list[Any]:
        return [o["metadata"]["name"], *[_cell(json_path(o, c.json_path), c.type) for c in columns]]

    return defs, row


def _row_object(obj: dict[str, Any], include: str) -> dict[str, Any] | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}


def table_for(info: KindInfo, items: list[bytes], rv: int, continue_token: str | None,
              include_object: bool | str = False) -> dict[str, Any]:
    """A Table for `items` (serialized objects) in the columns kubectl shows for this kind."""
    if info.kind in _BUILTIN:
        defs, row = _BUILTIN[info.kind]
    elif info.columns:
        defs, row = _columns_table(info.columns)
    else:
        defs, row = [_c("Name"), _c("Age")], _simple(_age)
    include = include_object if isinstance(include_object, str) else ("Object" if include_object else "Metadata")
    rows = []
    for raw in items:
        obj = orjson.loads(raw)
        r: dict[str, Any] = {"cells": row(obj)}
        o = _row_object(obj, include)
        if o is not None:
            r["object"] = o
        rows.append(r)
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if continue_token:
        meta["continue"] = continue_token
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "columnDefinitions": defs, "rows": rows}
