"""Pure: which logs `l` offers for the selected object (read from a snapshot, no I/O).

A pod: each of its containers. A node: its accelerator device-plugin / GPU Operator / DCGM pods
(the root cause is often a crash-looping plugin) and the Karpenter controller's lines about the node
and its NodeClaim. A NodeClaim or NodePool: Karpenter's lines about it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from diagnostics.model import ObjectRef
from diagnostics.facts.gpu_components import NOT_ACCELERATOR_PLUGINS
from diagnostics.facts.node_health import device_plugin_pod
from diagnostics.snapshot import Snapshot

GPU_POD_WORDS = ("nvidia", "gpu", "dcgm", "neuron", "amdgpu", "habana", "device-plugin")
KARPENTER_LABEL = ("app.kubernetes.io/name", "karpenter")


@dataclass(frozen=True, slots=True)
class LogSource:
    """One container's log, optionally only the lines about some objects (Karpenter's)."""

    label: str
    namespace: str
    pod: str
    container: str
    about: dict[str, frozenset[str]] = field(default_factory=dict)
    """Kind -> names: keep only Karpenter lines naming these (empty: every line)."""

    def keep(self) -> Callable[[str], bool] | None:
        if not self.about:
            return None
        try:
            from gputui.bundle.logs import KarpenterFilter  # the bundle's rule for "lines about these objects"
        except ImportError:  # a build without bundles: every line, the label still says what to look for
            return None
        return KarpenterFilter({k: set(v) for k, v in self.about.items()}, errors_too=False).keep


def _containers(pod: Any) -> list[str]:
    names = [c.name for c in pod.containers]
    if not names:  # no status yet: the spec's containers
        spec = (pod.obj.get("spec") or {}) if isinstance(pod.obj, dict) else {}
        names = [str(c.get("name")) for c in spec.get("containers") or [] if isinstance(c, dict)]
    return names


def pod_sources(pod: Any, why: str = "") -> list[LogSource]:
    return [LogSource(f"{pod.namespace}/{pod.name} · {c}" + (f"  ({why})" if why else ""), pod.namespace,
                      pod.name, c) for c in _containers(pod)]


def karpenter_sources(snap: Snapshot, about: dict[str, frozenset[str]], what: str) -> list[LogSource]:
    key, value = KARPENTER_LABEL
    out: list[LogSource] = []
    for p in snap.pods:
        if p.meta.labels.get(key) == value and not p.terminal:
            for c in _containers(p):
                out.append(LogSource(f"{p.namespace}/{p.name} · {c}  (Karpenter: lines about {what})",
                                     p.namespace, p.name, c, about))
    return out


def sources_for(snap: Snapshot, ref: ObjectRef) -> list[LogSource]:
    idx = snap.index
    if ref.kind == "Pod":
        pod = idx.pod.get((ref.namespace or "", ref.name))
        return pod_sources(pod) if pod is not None else []
    if ref.kind == "Node":
        node = idx.node.get(ref.name)
        out: list[LogSource] = []
        if node is not None:
            plugin, _ds = device_plugin_pod(snap, node)
            if plugin is not None:
                out += pod_sources(plugin, "device plugin")
            for p in idx.pods_by_node.get(ref.name, ()):
                if p is plugin or not p.is_daemonset or p.terminal:
                    continue
                name = p.name.lower()
                if any(w in name for w in GPU_POD_WORDS) and not any(x in name for x in NOT_ACCELERATOR_PLUGINS):
                    out += pod_sources(p, "GPU DaemonSet")
        claim = idx.nodeclaim_by_node.get(ref.name)
        about = {"Node": frozenset({ref.name})}
        if claim is not None:
            about["NodeClaim"] = frozenset({claim.name})
        return out + karpenter_sources(snap, about, f"node {ref.name}")
    if ref.kind == "NodeClaim":
        claim = idx.nodeclaim.get(ref.name)
        about = {"NodeClaim": frozenset({ref.name})}
        if claim is not None and claim.node_name:
            about["Node"] = frozenset({claim.node_name})
        return karpenter_sources(snap, about, f"NodeClaim {ref.name}")
    if ref.kind == "NodePool":
        return karpenter_sources(snap, {"NodePool": frozenset({ref.name})}, f"NodePool {ref.name}")
    return []
