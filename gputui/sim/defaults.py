"""What the apiserver's defaulting and admission add to objects a client creates."""

from __future__ import annotations

from typing import Any


def pod_defaults(obj: dict[str, Any]) -> dict[str, Any]:
    """What the apiserver's defaulting and admission add to a new pod (status reset to Pending)."""
    spec = dict(obj.get("spec") or {})
    containers = []
    for c in spec.get("containers") or []:
        c = dict(c)
        image = str(c.get("image", ""))
        tag = image.rsplit(":", 1)[1] if ":" in image.split("/")[-1] else "latest"
        c.setdefault("imagePullPolicy", "Always" if tag == "latest" else "IfNotPresent")
        c.setdefault("resources", {})
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
        containers.append(c)
    spec["containers"] = containers
    for k, v in (("restartPolicy", "Always"), ("terminationGracePeriodSeconds", 30), ("dnsPolicy", "ClusterFirst"),
                 ("serviceAccountName", "default"), ("serviceAccount", "default"), ("securityContext", {}),
                 ("schedulerName", "default-scheduler"), ("enableServiceLinks", True), ("priority", 0),
                 ("preemptionPolicy", "PreemptLowerPriority")):
        spec.setdefault(k, v)
    tolerations = list(spec.get("tolerations") or [])
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(t.get("key") == key or (t.get("operator") == "Exists" and not t.get("key")) for t in tolerations):
            tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
    spec["tolerations"] = tolerations
    return {**obj, "spec": spec, "status": {"phase": "Pending", "qosClass": qos_class(containers)}}


def qos_class(containers: list[dict[str, Any]]) -> str:
    requests_any = limits_all = False
    limits_all = bool(containers)
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        if req or lim:
            requests_any = True
        for r in ("cpu", "memory"):
            if r not in lim or (r in req and req[r] != lim[r]):
                limits_all = False
    if limits_all:
        return "Guaranteed"
    return "Burstable" if requests_any else "BestEffort"
