"""Probe objects: a write made right after a fault, so "recovered" means the informer saw a change made later.

Each probe is a new object (a new name), replacing the previous probe of its kind: the cache holds it only if
the informer re-established its watch (or relisted) after the fault, whatever the kind keeps in its record.
"""

from __future__ import annotations

from typing import Any

from gputui.dev.reliability.mutator import NAMESPACE
from gputui.kube.resources import RESOURCES


def probe_object(source: str, name: str) -> dict[str, Any]:
    """A minimal, valid object of `source`'s kind (deliberately sparse: no status, few fields)."""
    res = RESOURCES[source]
    md: dict[str, Any] = {"name": name, "labels": {"gputui.dev/probe": "true"}}
    if res.namespaced:
        md["namespace"] = NAMESPACE
    obj: dict[str, Any] = {"apiVersion": res.api_version, "kind": res.kind, "metadata": md}
    if source == "pods":
        obj["spec"] = {"containers": [{"name": "probe", "image": "registry.k8s.io/pause:3.10"}]}
    elif source == "events":
        obj.update(involvedObject={"kind": "Node", "name": name}, reason="Probe", message="gputui soak probe",
                   type="Normal", count=1)
    elif source == "runtimeclasses":
        obj["handler"] = "nvidia"
    elif source == "daemonsets":
        obj["spec"] = {"selector": {"matchLabels": {"app": name}}}
    elif source == "pdbs":
        obj["spec"] = {"maxUnavailable": 0, "selector": {"matchLabels": {"app": name}}}
    elif source == "nodepools":
        obj["spec"] = {"template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                               "name": "soak"}, "requirements": []}}}
    return obj


def probe_key(source: str, name: str) -> tuple[str | None, str]:
    if source == "namespaces":
        return (None, name)
    return (NAMESPACE if RESOURCES[source].namespaced else None, name)
