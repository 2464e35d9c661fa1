"""The workload that owns a pod, and kubectl commands that change its pod template."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from diagnostics.model import ObjectRef
from diagnostics.records import Pod, Taint, Toleration

_CRONJOB_JOB = re.compile(r"^(.+)-\d{8,}$")


@dataclass(frozen=True, slots=True)
class Workload:
    """What to edit so that the change survives the pod: Deployment, StatefulSet, Job, CronJob, ... or the Pod."""

    kind: str
    name: str
    namespace: str
    template_path: str
    """JSON path of the pod spec inside the object (`/spec/template/spec`)."""
    immutable: bool = False
    """Job pod templates cannot be patched: the Job must be re-created."""

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(self.kind, self.name, self.namespace)

    @property
    def resource(self) -> str:
        return self.kind.lower()

    def __str__(self) -> str:
        return f"{self.resource}/{self.name}"


def owner_workload(pod: Pod) -> Workload:
    """ReplicaSet -> Deployment (hash suffix stripped), StatefulSet, DaemonSet, Job (-> CronJob), else the Pod."""
    ns = pod.namespace
    owner = next((o for o in pod.meta.owners if o.get("controller")), None) or (
        pod.meta.owners[0] if pod.meta.owners else None)
    if owner is None:
        return Workload("Pod", pod.name, ns, "/spec")
    kind, name = str(owner.get("kind", "")), str(owner.get("name", ""))
    if kind == "ReplicaSet":
        h = pod.meta.labels.get("pod-template-hash", "")
        if h and name.endswith("-" + h):
            return Workload("Deployment", name[: -len(h) - 1], ns, "/spec/template/spec")
        base, _, suffix = name.rpartition("-")
        if base and suffix.isalnum():
            return Workload("Deployment", base, ns, "/spec/template/spec")
        return Workload("ReplicaSet", name, ns, "/spec/template/spec")
    if kind in ("StatefulSet", "DaemonSet", "ReplicationController"):
        return Workload(kind, name, ns, "/spec/template/spec")
    if kind == "Job":
        m = _CRONJOB_JOB.match(name)
        if m:
            return Workload("CronJob", m.group(1), ns, "/spec/jobTemplate/spec/template/spec")
        return Workload("Job", name, ns, "/spec/template/spec", immutable=True)
    if kind and name:
        # Operators (RayCluster, PyTorchJob, LeaderWorkerSet, ...): their template paths vary.
        return Workload(kind, name, ns, "")
    return Workload("Pod", pod.name, ns, "/spec")


_DEFAULT_TOLERATION_KEYS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def template_tolerations(pod: Pod) -> list[dict[str, Any]]:
    """The pod's tolerations minus the ones admission adds (not-ready/unreachable for 300s)."""
    out: list[dict[str, Any]] = []
    for t in pod.tolerations_written:
        if t.get("key") in _DEFAULT_TOLERATION_KEYS and t.get("effect") == "NoExecute" \
                and t.get("tolerationSeconds") == 300:
            continue
        out.append(dict(t))
    return out


def toleration_str(t: Toleration) -> str:
    """kubectl-describe-like: `key=value:Effect`, `key Exists:Effect`, `* Exists` (tolerates all)."""
    effect = f":{t.effect}" if t.effect else ""
    if not t.key:
        return f"* Exists{effect}" if t.operator == "Exists" else f"(invalid){effect}"
    if t.operator == "Exists":
        return f"{t.key} Exists{effect}"
    return f"{t.key}={t.value}{effect}"


def toleration_for(taint: Taint) -> dict[str, str]:
    """The narrowest toleration for a taint: Equal on its value, or Exists when it has none."""
    if taint.value:
        return {"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect}
    return {"key": taint.key, "operator": "Exists", "effect": taint.effect}


def toleration_yaml(taints: Iterable[Taint]) -> str:
    """What to paste under `tolerations:` (quoted values so `true` stays a string)."""
    lines = ["tolerations:"]
    for t in taints:
        tol = toleration_for(t)
        lines.append(f"- key: {tol['key']}")
        lines.append(f"  operator: {tol['operator']}")
        if "value" in tol:
            lines.append(f'  value: "{tol["value"]}"')
        lines.append(f"  effect: {tol['effect']}")
    return "\n".join(lines)


def _nest(path: str, value: dict[str, Any]) -> dict[str, Any]:
    obj = value
    for part in reversed([p for p in path.split("/") if p]):
        obj = {part: obj}
    return obj


def toleration_commands(pod: Pod, taints: Iterable[Taint]) -> tuple[str, ...]:
    """kubectl commands adding tolerations for `taints` where they last (the owning workload's template).

    Tolerations have no merge key, so a patch replaces the whole list: the command carries the
    pod's existing tolerations plus the new ones.
    """
    wl = owner_workload(pod)
    new = [toleration_for(t) for t in taints]
    existing = template_tolerations(pod)
    merged = existing + [t for t in new if t not in existing]
    ns = wl.namespace
    if wl.kind == "Pod":
        # Adding tolerations to a live pod is allowed (only additions are); nothing recreates it. Its list
        # includes the not-ready/unreachable ones the API server added: append, never replace (refused).
        ops = [{"op": "add", "path": "/spec/tolerations/-", "value": t} for t in new] if pod.tolerations else \
            [{"op": "add", "path": "/spec/tolerations", "value": new}]
        return (f"kubectl -n {ns} patch pod {wl.name} --type=json -p '{json.dumps(ops, separators=(',', ':'))}'",)
    if wl.immutable:
        return (f"kubectl -n {ns} get job {wl.name} -o yaml > {wl.name}.yaml  "
                f"# add the tolerations under spec.template.spec, drop status/selector/controller-uid labels",
                f"kubectl replace --force -f {wl.name}.yaml")
    if not wl.template_path:
        return (f"kubectl -n {ns} edit {wl.resource} {wl.name}  # add the tolerations to its pod template",)
    patch = json.dumps(_nest(wl.template_path, {"tolerations": merged}), separators=(",", ":"))
    return (f"kubectl -n {ns} patch {wl.resource} {wl.name} --type=merge -p '{patch}'",)
