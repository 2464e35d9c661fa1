"""Log tails for a bundle: Karpenter's lines about the affected objects, and GPU DaemonSet pods on the affected nodes.

Karpenter logs one JSON object per line and names what it acts on in structured keys
(`"NodeClaim":{"name":...}`, `"Pods":"ns/a, ns/b"`, `"NodePool":{"name":...}`), so lines are kept by
the objects they name, not by grepping names (a NodePool called `gpu` would match every line).
A NodeClaim that no longer exists still counts when its name is `<affected pool>-xxxxx`: the launch that
failed and was deleted is the evidence. Device plugin / GPU Operator pods get a plain tail, plus the
previous container's log when it crashed (that is where the reason is).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import orjson

from gputui.bundle.gather import obj_key, raw_list
from gputui.bundle.scope import Selection
from gputui.bundle.manifest import LOGS_DIR
from gputui.kube.api import Api, KubeError, Unreachable
from gputui.kube.resources import RESOURCES

Obj = dict[str, Any]
KARPENTER_SELECTOR = "app.kubernetes.io/name=karpenter"
_KIND_KEYS = {"nodeclaim": "NodeClaim", "nodepool": "NodePool", "ec2nodeclass": "EC2NodeClass", "node": "Node",
              "pod": "Pod"}
_CLAIM_SUFFIX = re.compile(r"^[a-z0-9]{5}$")


@dataclass(frozen=True, slots=True)
class LogLimits:
    since: timedelta = timedelta(hours=2)
    max_lines: int = 1000
    """Per log, after filtering (the newest lines are kept)."""
    max_bytes: int = 1024 * 1024
    """Per log, after redaction."""
    max_files: int = 60
    karpenter_scan_lines: int = 50_000
    """How far back Karpenter's log is read to find the lines about the affected objects."""


@dataclass
class LogFile:
    path: str
    text: str
    info: dict[str, Any]


@dataclass
class LogsResult:
    files: list[LogFile] = field(default_factory=list)
    denied: list[dict[str, str]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    caps: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Want:
    namespace: str
    pod: str
    container: str
    previous: bool
    karpenter: bool
    priority: int
    """Lower first: crash-looping / not-ready GPU components, then Karpenter, then the rest."""

    @property
    def path(self) -> str:
        suffix = ".previous.log" if self.previous else ".log"
        return f"{LOGS_DIR}/{self.namespace}/{self.pod}/{self.container}{suffix}"


# --- which logs ----------------------------------------------------------------------------------

def _statuses(pod: Obj) -> dict[str, Obj]:
    st = pod.get("status") or {}
    return {str(cs.get("name")): cs for key in ("initContainerStatuses", "containerStatuses")
            for cs in st.get(key) or [] if isinstance(cs, dict)}


def _containers(pod: Obj, *, karpenter: bool, base_priority: int, out: LogsResult) -> list[_Want]:
    ns, name = obj_key(pod)
    spec = pod.get("spec") or {}
    statuses = _statuses(pod)
    wants: list[_Want] = []
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or []:
            cname = str((c or {}).get("name") or "")
            cs = statuses.get(cname)
            if not cname or cs is None:
                out.skipped.append({"log": f"{ns}/{name}/{cname}", "reason": "container has no status yet"})
                continue
            state = cs.get("state") or {}
            crashed = bool((cs.get("lastState") or {}).get("terminated"))
            troubled = crashed or not cs.get("ready", False)
            prio = base_priority - (1 if troubled and not karpenter else 0)
            # A crash-looping container (waiting, lastState.terminated) still serves its last run's log.
            if "running" in state or "terminated" in state or crashed:
                wants.append(_Want(ns, name, cname, False, karpenter, prio))
            else:
                reason = (state.get("waiting") or {}).get("reason") or "waiting"
                out.skipped.append({"log": f"{ns}/{name}/{cname}", "reason": f"container not started ({reason})"})
            if crashed:
                wants.append(_Want(ns, name, cname, True, karpenter, prio))
    return wants


def _ds_owned(pod: Obj, dss: set[tuple[str, str]]) -> bool:
    ns = obj_key(pod)[0]
    return any(o.get("kind") == "DaemonSet" and (ns, str(o.get("name"))) in dss
               for o in (pod.get("metadata") or {}).get("ownerReferences") or [] if isinstance(o, dict))


# --- which Karpenter lines -----------------------------------------------------------------------

class KarpenterFilter:
    """Keeps a Karpenter log line when it names an affected object (or, cluster-wide, is an error)."""

    def __init__(self, names: dict[str, set[str]], *, errors_too: bool) -> None:
        self.names = names
        self.errors_too = errors_too
        self.pools = sorted(names.get("NodePool", ()), key=len, reverse=True)
        plain = sorted((n for names_ in names.values() for n in names_ if len(n) >= 4 or "-" in n),
                       key=len, reverse=True)
        self.text_rx = (re.compile(r"(?<![\w.-])(?:" + "|".join(re.escape(n) for n in plain) + r")(?![\w.-])")
                        if plain else None)

    def _claim_of_pool(self, claim: str) -> bool:
        return any(claim.startswith(p + "-") and _CLAIM_SUFFIX.match(claim[len(p) + 1:]) for p in self.pools)

    def refs(self, entry: dict[str, Any]) -> set[tuple[str, str]]:
        out: set[tuple[str, str]] = set()
        for k, v in entry.items():
            kind = _KIND_KEYS.get(k.lower())
            if kind and isinstance(v, dict) and v.get("name"):
                name = str(v["name"])
                out.add((kind, f"{v['namespace']}/{name}" if kind == "Pod" and v.get("namespace") else name))
            elif k.lower() == "pods" and isinstance(v, str):
                out |= {("Pod", p.strip()) for p in v.split(",") if p.strip()}
        ck = _KIND_KEYS.get(str(entry.get("controllerKind") or "").lower())
        if ck and entry.get("name"):
            out.add((ck, str(entry["name"])))
        return out

    def keep(self, line: str) -> bool:
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            entry = None
        if not isinstance(entry, dict):
            return bool(self.text_rx and self.text_rx.search(line))
        if self.errors_too and str(entry.get("level", "")).upper() in ("ERROR", "WARN", "WARNING"):
            return True
        for kind, name in self.refs(entry):
            if name in self.names.get(kind, ()):
                return True
            if kind == "Pod" and "/" not in name and any(p.endswith("/" + name) for p in self.names.get("Pod", ())):
                return True
            if kind == "NodeClaim" and self._claim_of_pool(name):
                return True
        return False


# --- reading -------------------------------------------------------------------------------------

def _rfc3339(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def gather_logs(api: Api, pods: list[Obj], sel: Selection, limits: LogLimits, *, now: datetime,
                cluster_wide: bool, redact: Callable[[str], str], budget: int, workers: int = 8) -> LogsResult:
    """Fetch, filter, redact and cap the logs; `budget` is what the bundle's total size cap leaves for them."""
    out = LogsResult()
    wants: list[_Want] = []
    on = set(sel.affected_nodes)
    for pod in pods:
        if (pod.get("spec") or {}).get("nodeName") in on and _ds_owned(pod, sel.gpu_daemonsets):
            wants += _containers(pod, karpenter=False, base_priority=2, out=out)
    try:
        karpenters = raw_list(api, RESOURCES["pods"], label_selector=KARPENTER_SELECTOR)
    except KubeError as exc:
        if isinstance(exc, Unreachable):
            raise
        entry = {"verb": "list", "resource": "pods", "what": f"Karpenter pods ({KARPENTER_SELECTOR})",
                 "detail": exc.message[:300]}
        (out.denied if exc.status == 403 else out.errors).append(entry)
        karpenters = []
    if not karpenters:
        out.skipped.append({"log": "karpenter", "reason": f"no pod labelled {KARPENTER_SELECTOR}"})
    for pod in karpenters:
        wants += _containers(pod, karpenter=True, base_priority=1, out=out)
    wants.sort(key=lambda w: (w.priority, w.path))
    if len(wants) > limits.max_files:
        out.caps.append({"cap": "max-log-files", "limit": limits.max_files,
                         "detail": f"{len(wants) - limits.max_files} of {len(wants)} logs left out"})
        wants = wants[: limits.max_files]
    flt = KarpenterFilter(sel.names, errors_too=cluster_wide)
    since = _rfc3339(now - limits.since)

    def fetch(w: _Want) -> tuple[_Want, str | None]:
        tail = limits.karpenter_scan_lines if w.karpenter else limits.max_lines
        read_cap = max(limits.max_bytes, 1024 * 1024) * (16 if w.karpenter else 2)
        query: list[tuple[str, Any]] = [("container", w.container), ("tailLines", tail),
                                        ("limitBytes", read_cap), ("sinceTime", since)]
        if w.previous:
            query.append(("previous", "true"))
        try:
            data = api.get_bytes(f"{RESOURCES['pods'].path(w.namespace, w.pod)}/log", query, timeout=30)
        except KubeError as exc:
            if isinstance(exc, Unreachable):
                raise
            entry = {"verb": "get", "resource": "pods/log", "what": w.path, "detail": exc.message[:300]}
            (out.denied if exc.status == 403 else out.errors).append(entry)
            return w, None
        return w, data.decode("utf-8", "replace")

    with ThreadPoolExecutor(max_workers=workers) as pool:
        fetched = list(pool.map(fetch, wants))
    for w, text in fetched:
        if text is None:
            continue
        lines = text.splitlines(keepends=True)
        info: dict[str, Any] = {"pod": f"{w.namespace}/{w.pod}", "container": w.container,
                                "previous": w.previous, "since": since}
        if w.karpenter:
            read = len(lines)
            lines = [ln for ln in lines if flt.keep(ln)]
            info["filter"] = ("lines naming the affected objects" + (" and every error" if cluster_wide else "")
                              + f" ({len(lines)} of {read} lines read)")
        if len(lines) > limits.max_lines or (not w.karpenter and len(lines) == limits.max_lines):
            out.caps.append({"cap": "max-log-lines", "file": w.path, "limit": limits.max_lines,
                             "detail": "older lines left out"})
            lines = lines[-limits.max_lines:]
        body = redact("".join(lines))
        data = body.encode()
        cap = min(limits.max_bytes, budget)
        if len(data) > cap:
            what = "max-log-bytes" if cap == limits.max_bytes else "max-total-bytes"
            if cap < 4096:
                out.caps.append({"cap": what, "file": w.path, "limit": cap, "detail": "log left out"})
                continue
            cut = data[-cap:]
            cut = cut[cut.find(b"\n") + 1:] if b"\n" in cut else cut
            out.caps.append({"cap": what, "file": w.path, "limit": cap,
                             "detail": f"kept the last {len(cut)} of {len(data)} bytes"})
            data = cut
            body = data.decode("utf-8", "replace")
        if not data:
            out.skipped.append({"log": w.path, "reason": f"no lines since {since}"
                                + (" about the affected objects" if w.karpenter else "")})
            continue
        budget -= len(data)
        info["lines"] = body.count("\n")
        info["bytes"] = len(data)
        out.files.append(LogFile(w.path, body, info))
    return out
