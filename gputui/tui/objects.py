"""Pure: what a detail screen shows about one object (key fields, related objects, conditions, events).

Everything here reads a Snapshot; nothing does I/O, so detail screens re-render from each new
snapshot and the functions are tested without Textual.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from diagnostics.checks.gpu_rma_candidate import history_lines as gpu_history
from diagnostics.model import ObjectRef, Report
from diagnostics.records import Condition, accelerator_total, accelerators
from diagnostics.snapshot import Snapshot, node_should_have_gpus
from diagnostics.timeutil import budget_active, human_age
from diagnostics import relations as related
from gputui.output import rows

KINDS = ("Pod", "NodeClaim", "Node", "NodePool", "EC2NodeClass")
MAX_RELATED_PODS = 50


def find(snap: Snapshot, ref: ObjectRef) -> Any:
    """The record for `ref` in the snapshot, or None (deleted, forbidden, or not a kind we keep)."""
    idx = snap.index
    if ref.kind == "Pod":
        return idx.pod.get((ref.namespace or "", ref.name))
    tables: dict[str, Mapping[str, Any]] = {"Node": idx.node, "NodeClaim": idx.nodeclaim, "NodePool": idx.nodepool,
                                            "EC2NodeClass": idx.nodeclass}
    return tables.get(ref.kind, {}).get(ref.name)


def similar_names(snap: Snapshot, ref: ObjectRef, limit: int = 3) -> list[str]:
    """Names of the same kind that contain what was typed (`:node 31-203` for a full node name)."""
    idx = snap.index
    names: Any = {"Node": idx.node, "NodeClaim": idx.nodeclaim, "NodePool": idx.nodepool,
                  "EC2NodeClass": idx.nodeclass}.get(ref.kind)
    if ref.kind == "Pod":
        names = [f"{ns}/{n}" for ns, n in idx.pod]
    needle = ref.name.lower()
    if not names or not needle:
        return []
    return sorted(n for n in names if needle in n.lower())[:limit]


def labels_of(snap: Snapshot, ref: ObjectRef | None) -> Mapping[str, str]:
    rec = find(snap, ref) if ref is not None else None
    return rec.meta.labels if rec is not None else {}


def _res(r: Mapping[str, float]) -> str:
    acc = accelerators(r)
    return ", ".join(f"{k}={v:g}" for k, v in sorted(acc.items())) or "none"


def _list(items: Any) -> str:
    out = [str(i) for i in items]
    return ", ".join(out) if out else "-"


def _terms(terms: Any) -> str:
    return "; ".join(", ".join(f"{k}={v}" for k, v in dict(t).items()) for t in terms) or "-"


def key_fields(snap: Snapshot, ref: ObjectRef, rec: Any) -> list[tuple[str, str]]:
    """(label, value) pairs an engineer checks first for this kind."""
    age = human_age(snap.age(rec.meta.created))
    if ref.kind == "Node":
        claim = snap.index.nodeclaim_by_node.get(rec.name)
        expected = node_should_have_gpus(rec, claim)
        node_info = (rec.obj.get("status") or {}).get("nodeInfo") or {}
        return [
            ("Ready", {True: "True", False: "False", None: "Unknown"}[rec.ready]),
            ("Instance type", rec.instance_type or "-"),
            ("GPU model", rows.gpu_model(rec.labels) or "-"),
            ("GPUs expected", f"{expected:g}" if expected else "-"),
            ("Capacity", _res(rec.capacity)),
            ("Allocatable", _res(rec.allocatable)),
            ("Requested by pods", f"{snap.index.gpus_requested_on(rec.name):g}"),
            ("Capacity type", rec.capacity_type or "-"),
            ("NodePool", rec.nodepool or "-"),
            ("NodeClaim", claim.name if claim else "-"),
            ("Zone", rec.zone or "-"),
            ("Taints", _list(rec.taints)),
            ("Unschedulable", "yes (cordoned)" if rec.unschedulable else "no"),
            ("Kubelet", str(node_info.get("kubeletVersion") or "-")),
            ("Provider ID", rec.provider_id or "-"),
            ("Age", age),
            *gpu_history(snap, rec.name),
        ]
    if ref.kind == "Pod":
        nominated = related.nominated_claim(snap, rec.namespace, rec.name)
        states = [f"{c.name}: {c.state}{' ' + c.reason if c.reason else ''} ({c.restart_count} restarts)"
                  for c in rec.containers]
        affinity = [" AND ".join(str(r) for r in term) for term in rec.required_affinity]
        return [
            ("Phase", rec.phase + (" (terminating)" if rec.meta.deleting else "")),
            ("Node", rec.node_name or "- (not scheduled)"),
            ("Nominated node", rec.nominated_node or "-"),
            ("NodeClaim (nominated)", nominated or "-"),
            ("Accelerators requested", _res(rec.requests)),
            ("Accelerator limits", _res(rec.limits)),
            ("Node selector", _list(f"{k}={v}" for k, v in rec.node_selector.items())),
            ("Required node affinity", " OR ".join(f"({a})" for a in affinity) or "-"),
            ("Tolerations", _list(f"{t.key or '*'}{'=' + t.value if t.value else ''}:{t.effect or '*'} ({t.operator})"
                                  for t in rec.tolerations)),
            ("Priority class", rec.priority_class or "-"),
            ("Runtime class", rec.runtime_class or "-"),
            ("Containers", "; ".join(states) or "-"),
            ("Age", age),
        ]
    if ref.kind == "NodeClaim":
        return [
            ("Stage", rows.lifecycle_stage(rec)),
            ("NodePool", rec.nodepool or "-"),
            ("Node", rec.node_name or "- (not registered)"),
            ("Instance type", rec.instance_type or "-"),
            ("Capacity type", rec.capacity_type or "-"),
            ("Zone", rec.zone or "-"),
            ("Requests", _res(rec.requests)),
            ("Capacity", _res(rec.capacity)),
            ("EC2NodeClass", rec.node_class or "-"),
            ("Taints", _list(rec.taints)),
            ("Startup taints", _list(rec.startup_taints)),
            ("Requirements", _list(rec.requirements)),
            ("Provider ID", rec.provider_id or "-"),
            ("Age", age),
        ]
    if ref.kind == "NodePool":
        budgets = []
        for b in rec.budgets:
            when = ""
            if b.schedule:
                on = budget_active(b.schedule, b.duration, snap.taken_at)
                when = f" [{b.schedule} for {b.duration}: {'active now' if on else 'inactive now' if on is False else 'invalid'}]"
            budgets.append(f"nodes={b.nodes}{' ' + ','.join(b.reasons) if b.reasons else ''}{when}")
        used = accelerator_total(rec.usage)
        limit = accelerator_total(rec.limits)
        return [
            ("GPUs used / limit", rows.bar(used, limit or None)),
            ("Limits", ", ".join(f"{k}={v:g}" for k, v in rec.limits.items()) or "none"),
            ("Weight", str(rec.weight or "-")),
            ("EC2NodeClass", f"{rec.node_class} ({rec.node_class_kind})" if rec.node_class else "-"),
            ("Consolidation", f"{rec.consolidation_policy} after {rec.consolidate_after}"),
            ("Budgets", "; ".join(budgets) or "-"),
            ("Budget now", rows.budget_now(rec, snap)),
            ("Expire after", rec.expire_after),
            ("Requirements", _list(rec.requirements)),
            ("Taints", _list(rec.taints)),
            ("Startup taints", _list(rec.startup_taints)),
            ("Age", age),
        ]
    if ref.kind == "EC2NodeClass":
        return [
            ("Role", rec.role or "-"),
            ("Instance profile", rec.instance_profile or "-"),
            ("Subnet selector", _terms(rec.subnet_terms)),
            ("Subnets resolved", _list(s.get("id", "?") + (f" ({s['zone']})" if s.get("zone") else "")
                                       for s in rec.subnets) if rec.subnets else "none"),
            ("Security group selector", _terms(rec.security_group_terms)),
            ("Security groups resolved", _list(s.get("id", "?") for s in rec.security_groups)
             if rec.security_groups else "none"),
            ("AMI selector", _terms(rec.ami_terms)),
            ("AMIs resolved", _list(a.get("id", "?") for a in rec.amis) if rec.amis else "none"),
            ("Age", age),
        ]
    return [("Age", age)]


def pools_for_pod(snap: Snapshot, pod: Any) -> list[str]:
    """NodePools a pod pins itself to (nodeSelector or required affinity on karpenter.sh/nodepool)."""
    names = [pod.node_selector.get("karpenter.sh/nodepool", "")]
    for term in pod.required_affinity:
        for req in term:
            if req.key == "karpenter.sh/nodepool" and req.operator == "In":
                names.extend(req.values)
    return [n for n in dict.fromkeys(names) if n in snap.index.nodepool]


def related_objects(snap: Snapshot, ref: ObjectRef, report: Report | None = None) -> list[tuple[ObjectRef, str]]:
    """Objects to navigate to from `ref`, with how they relate; the drill-down chain comes first.

    With a report, the subjects of findings that name `ref` as affected come too (a pending pod
    links to the EC2NodeClass that keeps its NodePool from launching).
    """
    idx = snap.index
    out: dict[ObjectRef, str] = {}
    for r in related.chain(snap, ref)[1:]:
        out[r] = {"NodeClaim": "NodeClaim", "Node": "node", "NodePool": "NodePool",
                  "EC2NodeClass": "EC2NodeClass"}.get(r.kind, r.kind)
    if ref.kind == "Pod":
        pod = idx.pod.get((ref.namespace or "", ref.name))
        if pod is not None and related.nominated_claim(snap, pod.namespace, pod.name):
            for r in list(out):
                if r.kind == "NodeClaim":
                    out[r] = "NodeClaim (nominated for this pod)"
        for name in pools_for_pod(snap, pod) if pod is not None else ():
            pool = idx.nodepool[name]
            out.setdefault(pool.ref, "NodePool it selects")
            if pool.node_class:
                out.setdefault(ObjectRef("EC2NodeClass", pool.node_class), "EC2NodeClass of that NodePool")
    elif ref.kind == "NodeClaim":
        claim = idx.nodeclaim.get(ref.name)
        for p in idx.pending_gpu_pods:
            if related.nominated_claim(snap, p.namespace, p.name) == ref.name or (
                    claim is not None and claim.node_name and p.nominated_node == claim.node_name):
                out.setdefault(p.ref, "pending pod waiting for it")
    elif ref.kind == "Node":
        for p in idx.pending_gpu_pods:
            if p.nominated_node == ref.name:
                out.setdefault(p.ref, "pending pod nominated here")
        pods = sorted(idx.pods_by_node.get(ref.name, ()), key=lambda p: (not p.wants_accelerator, p.namespace, p.name))
        for p in pods[:MAX_RELATED_PODS]:
            if not p.terminal:
                out.setdefault(p.ref, "GPU pod on node" if p.wants_accelerator else
                               "DaemonSet pod on node" if p.is_daemonset else "pod on node")
    elif ref.kind == "NodePool":
        for c in sorted(idx.nodeclaims_by_pool.get(ref.name, ()), key=lambda c: c.name):
            out.setdefault(c.ref, "NodeClaim of pool")
        for n in sorted(idx.nodes_by_pool.get(ref.name, ()), key=lambda n: n.name):
            out.setdefault(n.ref, "node of pool")
    elif ref.kind == "EC2NodeClass":
        for pool in sorted(idx.pools_by_class.get(ref.name, ()), key=lambda p: p.name):
            out.setdefault(pool.ref, "NodePool using it")
    for f in report.findings if report is not None else ():
        if ref in f.related and f.subject != ref:
            out.setdefault(f.subject, f"via finding {f.check}")
    out.pop(ref, None)
    return list(out.items())


def conditions(rec: Any) -> tuple[Condition, ...]:
    return tuple(getattr(rec, "conditions", ()) or ())


def condition_rows(snap: Snapshot, rec: Any) -> list[tuple[str, tuple[str, str, str, str, str]]]:
    """(key, (type, status, reason, age, message)) in the object's own order."""
    return [(c.type, (c.type, c.status, c.reason, human_age(snap.age(c.last_transition)) if c.last_transition
                      else "-", c.message)) for c in conditions(rec)]


def event_rows(snap: Snapshot, ref: ObjectRef, limit: int = 30) -> list[tuple[str, tuple[str, ...]]]:
    """Recent events on the object, newest first: (key, (type, reason, count, last seen, source, message))."""
    evs = snap.index.events(ref.kind, ref.name, ref.namespace)
    out: list[tuple[str, tuple[str, ...]]] = []
    for e in reversed(evs[-limit:]):
        out.append((e.meta.uid or f"{e.meta.namespace}/{e.meta.name}", (
            e.type, e.reason, f"x{e.count}", human_age(snap.age(e.last_seen)) if e.last_seen else "-",
            e.source or "-", e.message)))
    return out
