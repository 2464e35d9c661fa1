"""Pure Snapshot -> table rows for the overview (TUI tables and the headless summary share them).

Rows are keyed (stable keys let the TUI update only the cells that changed) and carry plain
strings, so they are testable without Textual.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from diagnostics.model import ObjectRef, Report, Severity
from diagnostics.records import Event, Node, NodeClaim, NodePool, Pod, accelerator_total
from diagnostics.facts.dra import pod_claims
from diagnostics.facts.gpu_units import gpu_units, model_name
from diagnostics.snapshot import Snapshot, is_gpu_node, node_should_have_gpus
from diagnostics.timeutil import human_age, budget_active

NODE_COLUMNS = ("NAME", "TYPE", "GPU", "CAP", "ALLOC", "USED", "CAPACITY", "NODEPOOL", "ZONE", "AGE", "READY",
                "HEALTH")
CLAIM_COLUMNS = ("NAME", "NODEPOOL", "TYPE", "CAPACITY", "ZONE", "STAGE", "NODE", "AGE", "REASON")
PENDING_COLUMNS = ("NAMESPACE/NAME", "GPUS", "AGE", "WHY")
POOL_COLUMNS = ("NAME", "GPUS USED/LIMIT", "NODES", "WEIGHT", "CONSOLIDATION", "BUDGET NOW", "READY")


@dataclass(frozen=True, slots=True)
class Row:
    key: str
    ref: ObjectRef
    cells: tuple[str, ...]
    severity: Severity = Severity.OK


def _n(v: float) -> str:
    return f"{v:g}"


def gpus_text(used: float) -> str:
    """A node's USED cell: accelerators requested by its pods."""
    return _n(used)


def gpu_model(labels: dict[str, str] | object) -> str:
    """The GPU model, one name however the labels spell it (`h100`, `NVIDIA-H100-80GB-HBM3` -> `H100`)."""
    get = getattr(labels, "get")  # noqa: B009 - `labels` is typed `object` too: mypy rejects `.get`
    raw = (get("nvidia.com/gpu.product") or get("karpenter.k8s.aws/instance-gpu-name")
           or get("cloud.google.com/gke-accelerator") or get("karpenter.k8s.aws/instance-accelerator-name")
           or get("amd.com/gpu.product-name") or "")
    return model_name(raw) if raw else ""


def gpu_cell(n: Node) -> str:
    """The GPU column: the model, and physical GPUs apart from MIG slices or shared replicas (`H100 1 GPU · 7 MIG`)."""
    model = gpu_model(n.labels)
    units = gpu_units(n)
    return f"{model} {units.text()}".strip() if units.split else model


def worst_by_subject(report: Report | None) -> dict[ObjectRef, Severity]:
    worst: dict[ObjectRef, Severity] = {}
    if report is None:
        return worst
    for f in report.findings:
        sev = f.severity or Severity.OK
        if sev > worst.get(f.subject, Severity.OK):
            worst[f.subject] = sev
    return worst


def badge(sev: Severity | None) -> str:
    if sev is None or sev <= Severity.INFO:
        return "ok"
    return sev.label


def age(now: datetime, when: datetime | None) -> str:
    """`human_age` of `when` as seen at `now` (a snapshot's `taken_at`)."""
    return human_age(None if when is None else (now - when).total_seconds())


def node_row(n: Node, claim: NodeClaim | None, used: float, now: datetime, sev: Severity | None) -> Row:
    """One GPU node (the caller checked `is_gpu_node`); `used`: accelerators its pods hold."""
    cap = accelerator_total(n.capacity)
    expected = node_should_have_gpus(n, claim)
    ready = n.ready
    return Row(n.name, n.ref, (
        n.name,
        n.instance_type,
        gpu_cell(n),
        _n(cap if cap else expected) if cap or not expected else f"{_n(expected)}?",
        _n(accelerator_total(n.allocatable)),
        gpus_text(used),
        n.capacity_type or "-",
        n.nodepool or n.label("cloud.google.com/gke-nodepool", "eks.amazonaws.com/nodegroup") or "-",
        n.zone or "-",
        age(now, n.meta.created),
        "Ready" if ready else ("NotReady" if ready is False else "Unknown"),
        badge(sev),
    ), sev or Severity.OK)


def node_rows(snap: Snapshot, report: Report | None = None) -> list[Row]:
    idx = snap.index
    worst = worst_by_subject(report)
    rows = []
    for n in sorted(snap.nodes, key=lambda n: n.name):
        claim = idx.nodeclaim_by_node.get(n.name)
        if is_gpu_node(n, claim):
            rows.append(node_row(n, claim, idx.gpus_requested_on(n.name), snap.taken_at, worst.get(n.ref)))
    return rows


def claim_row(c: NodeClaim, now: datetime, sev: Severity | None) -> Row:
    reason = ""
    for t in ("Launched", "Registered", "Initialized"):
        cond = c.condition(t)
        if cond is not None and cond.status != "True":
            reason = cond.reason + (f": {cond.message}" if cond.message else "")
            break
    stage = lifecycle_stage(c)
    if c.meta.deleting:
        stage = "Deleting"
    return Row(c.name, c.ref, (
        c.name, c.nodepool or "-", c.instance_type or "-", c.capacity_type or "-", c.zone or "-",
        stage, c.node_name or "-", age(now, c.meta.created), reason[:120],
    ), sev or Severity.OK)


def claim_rows(snap: Snapshot, report: Report | None = None) -> list[Row]:
    worst = worst_by_subject(report)
    return [claim_row(c, snap.taken_at, worst.get(c.ref))
            for c in sorted(snap.nodeclaims, key=lambda c: (c.nodepool, c.name))]


def lifecycle_stage(c: NodeClaim) -> str:
    """Launched -> Registered -> Initialized -> GPU ready: the last stage reached."""
    reached = "Created"
    for t in ("Launched", "Registered", "Initialized"):
        cond = c.condition(t)
        if cond is None or cond.status != "True":
            return reached
        reached = t
    if accelerator_total(c.requests) > 0 or accelerator_total(c.capacity) > 0:
        return "GPU ready"
    return "Ready"


def explained_by(report: Report | None) -> dict[ObjectRef, str]:
    """For each object, the title of the finding that explains it: a pending pod's root cause
    (`diagnostics.relations`, what `diagnose pod/X` names), else the worst finding about it or naming it
    as affected (built once)."""
    from diagnostics.relations import root_causes

    out: dict[ObjectRef, str] = {}
    if report is None:
        return out
    out.update((pod, f.title) for pod, f in root_causes(report).items())
    for f in report.findings:
        for ref in (f.subject, *f.related):
            out.setdefault(ref, f.title)
    return out


def pending_reason(snap: Snapshot, pod: Pod, explained: dict[ObjectRef, str]) -> str:
    """The best one-line reason: a finding about the pod, else the latest scheduling event."""
    return reason_from(pod, snap.index.events("Pod", pod.name, pod.namespace), explained)


SCHEDULING_REASONS = ("FailedScheduling", "Nominated")
"""The events that explain a pending pod (the latest one wins)."""


def reason_from(pod: Pod, events: Sequence[Event], explained: Mapping[ObjectRef, str]) -> str:
    """`pending_reason` given the pod's events, oldest first (only SCHEDULING_REASONS ones are read)."""
    if pod.ref in explained:
        return explained[pod.ref]
    for e in reversed(events):
        if e.reason in SCHEDULING_REASONS:
            return e.message
    cond = pod.condition("PodScheduled")
    if cond is not None and cond.message:
        return cond.message
    return "waiting for the scheduler"


WHY_WIDTH = 200
"""A pending pod's reason is cut at a word, never inside a node or pool name the user copies."""


def pending_row(p: Pod, events: Sequence[Event], now: datetime, explained: Mapping[ObjectRef, str],
                sev: Severity | None) -> Row:
    """One pending GPU pod; `events`: the pod's events, oldest first."""
    return Row(f"{p.namespace}/{p.name}", p.ref, (
        f"{p.namespace}/{p.name}", _n(p.gpus) if p.gpus else "DRA", age(now, p.meta.created),
        textwrap.shorten(reason_from(p, events, explained), WHY_WIDTH, placeholder=" …"),
    ), sev or Severity.OK)


def pending_rows(snap: Snapshot, report: Report | None = None) -> list[Row]:
    worst = worst_by_subject(report)
    explained = explained_by(report)
    idx = snap.index
    # Pods waiting on DRA ResourceClaims ask for no extended resource: they are GPU pods all the same.
    dra = [p for p in idx.pending if not p.wants_accelerator and pod_claims(p)]
    return [pending_row(p, idx.events("Pod", p.name, p.namespace), snap.taken_at, explained, worst.get(p.ref))
            for p in sorted([*idx.pending_gpu_pods, *dra], key=lambda p: (p.namespace, p.name))]


def bar(used: float, limit: float | None, width: int = 10) -> str:
    if not limit:
        return f"{_n(used)}/∞"
    frac = min(1.0, used / limit) if limit else 0
    filled = round(frac * width)
    return f"{'█' * filled}{'░' * (width - filled)} {_n(used)}/{_n(limit)}"


def budget_now(pool: NodePool, snap: Snapshot) -> str:
    return budget_at(pool, snap.taken_at)


def budget_at(pool: NodePool, now: datetime) -> str:
    """The disruption budgets in force at `now` (scheduled ones only inside their window)."""
    active = []
    for b in pool.budgets:
        if b.schedule:
            on = budget_active(b.schedule, b.duration, now)
            if not on:
                continue
        active.append(b.nodes + (f" ({','.join(b.reasons)})" if b.reasons else ""))
    return "; ".join(active) or "-"


def pool_row(p: NodePool, nodes: int, now: datetime, sev: Severity | None) -> Row:
    """One NodePool; `nodes`: how many nodes carry its label (when its status has no count)."""
    used = accelerator_total(p.usage)
    limit = accelerator_total(p.limits) or None
    ready = p.condition("Ready")
    return Row(p.name, p.ref, (
        p.name, bar(used, limit), _n(p.usage.get("nodes", nodes)),
        str(p.weight or "-"), f"{p.consolidation_policy} {p.consolidate_after}", budget_at(p, now),
        ready.status if ready else "?",
    ), sev or Severity.OK)


def pool_rows(snap: Snapshot, report: Report | None = None) -> list[Row]:
    worst = worst_by_subject(report)
    by_pool = snap.index.nodes_by_pool
    return [pool_row(p, len(by_pool.get(p.name, ())), snap.taken_at, worst.get(p.ref))
            for p in sorted(snap.nodepools, key=lambda p: (-p.weight, p.name))]
