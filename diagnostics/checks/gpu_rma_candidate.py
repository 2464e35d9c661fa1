"""GPUs that keep failing over a week of DCGM metrics: hardware Xids that come back, memory that cannot be repaired."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone

from diagnostics.facts.gpu_findings import drain_commands, node_context, replace_commands
from diagnostics.facts.metric_facts import (
    RETIRED_DBE,
    RMA_WINDOW,
    ROW_REMAP_FAILURE,
    UNCORRECTABLE_REMAPPED_ROWS,
    XID,
    GpuLabels,
    MetricFacts,
    MetricUnavailable,
    NodeResolver,
    Sample,
    absence_evidence,
    facts_for,
    in_words,
    metric_evidence,
    usable,
)
from diagnostics.model import Evidence, Finding, Remediation, Severity
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot
from diagnostics.facts.xid import lookup

RMA_XIDS = frozenset({48, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140, *range(144, 151)})
"""Xids that point at the GPU's hardware (memory, bus, NVLink, GSP firmware), not at the job. Blackwell adds
140 (uncorrectable ECC error that escaped containment) and 144-150 (NVLink5: NVIDIA's catalog puts them in
WORKFLOW_NVLINK5_ERR, as it puts Hopper's Xid 74 in WORKFLOW_NVLINK_ERR)."""
MIN_EVENTS = 2
"""Occurrences of such Xids on one GPU before it is a candidate..."""
MIN_SPREAD_S = 86400
"""...at least a day apart (a burst within one incident is one failure), or under two node names."""


@dataclass
class _Gpu:
    """One physical GPU's week: keyed by UUID when exported, so a GPU that moved to a new node stays one."""

    labels: GpuLabels
    latest: float = 0.0
    xids: dict[int, list[float]] = field(default_factory=dict)
    """Xid -> [occurrences, first, last] (unix seconds)."""
    hosts: set[str] = field(default_factory=set)
    samples: list[Sample] = field(default_factory=list)
    remap_failure: Sample | None = None
    rows: Sample | None = None
    pages: Sample | None = None

    def reasons(self) -> list[str]:
        out = []
        for code, (n, first, last) in sorted(self.xids.items()):
            if code in RMA_XIDS and n >= MIN_EVENTS and (last - first >= MIN_SPREAD_S or len(self.hosts) > 1):
                where = f" on {len(self.hosts)} nodes" if len(self.hosts) > 1 else ""
                out.append(f"Xid {code} ({lookup(code).meaning}) {int(n)} times over {_days(last - first)}{where}")
        if self.remap_failure is not None:
            out.append("row remapping failed (its memory can no longer be repaired)")
        if self.rows is not None:
            out.append(f"uncorrectable remapped rows grew {int(self.rows.value)} times")
        if self.pages is not None:
            out.append(f"pages retired for double-bit ECC errors grew {int(self.pages.value)} times")
        return out


def _days(seconds: float) -> str:
    days = seconds / 86400
    return f"{days:.0f} days" if days >= 1.5 else "1 day" if days >= 1 else f"{seconds / 3600:.0f} hours"


def _date(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _key(labels: GpuLabels) -> tuple[str, ...]:
    """The physical GPU: what is returned to the vendor is the board, whatever its MIG instances."""
    return labels.physical


def _gpus(facts: MetricFacts) -> dict[tuple[str, ...], _Gpu]:
    gpus: dict[tuple[str, ...], _Gpu] = {}

    def gpu(s: Sample) -> _Gpu:
        labels = GpuLabels.of(s.labels)
        return gpus.setdefault(_key(labels), _Gpu(labels))

    firsts = {(_key(GpuLabels.of(s.labels)), s.labels.get("xid"), GpuLabels.of(s.labels).host): s.value
              for s in facts.get("rma_xid_first")}
    lasts = {(_key(GpuLabels.of(s.labels)), s.labels.get("xid"), GpuLabels.of(s.labels).host): s.value
             for s in facts.get("rma_xid_last")}
    for s in facts.get("rma_xid_events"):
        code = s.labels.get("xid", "")
        if not code.isdigit() or not usable(s.value) or s.value <= 0:
            continue
        g, labels = gpu(s), GpuLabels.of(s.labels)
        k = (_key(labels), code, labels.host)
        first, last = firsts.get(k, s.at.timestamp()), lasts.get(k, s.at.timestamp())
        n, f0, l0 = g.xids.get(int(code), [0.0, first, last])
        g.xids[int(code)] = [n + s.value, min(f0, first), max(l0, last)]
        g.hosts.add(labels.host)
        g.samples.append(s)
        if last >= g.latest:  # the GPU is where it last failed
            g.labels, g.latest = labels, last
    for s in facts.get("rma_remap_failure"):
        if usable(s.value) and s.value > 0:
            gpu(s).remap_failure = s
    for s in facts.get("rma_remapped_rows"):
        if usable(s.value) and s.value > 1:
            gpu(s).rows = s
    for s in facts.get("rma_retired_pages"):
        if usable(s.value) and s.value > 1:
            gpu(s).pages = s
    return gpus


def history_lines(snap: Snapshot, node: str) -> list[tuple[str, str]]:
    """(label, text) per GPU of `node` with Xids in the week, for a node page: `GPU 7 Xid history (7 days)`,
    `Xid 79 x3: 2026-08-16 09:00 UTC .. 2026-08-21 09:40 UTC - RMA candidate (GT709)`. Empty without the facts."""
    facts = snap.metrics
    if not isinstance(facts, MetricFacts) or "rma_xid_events" not in facts.queries:
        return []
    resolver = NodeResolver(snap)
    out = []
    for g in sorted(_gpus(facts).values(), key=lambda g: g.labels.index):
        if resolver.node(g.labels) != node or not g.xids:
            continue
        parts = [f"Xid {code} x{int(n)}: {_date(first)}" + (f" .. {_date(last)}" if last != first else "")
                 for code, (n, first, last) in sorted(g.xids.items())]
        verdict = " - RMA candidate (GT709)" if g.reasons() else ""
        nodes = f" on {len(g.hosts)} nodes" if len(g.hosts) > 1 else ""
        out.append((f"GPU {g.labels.index or g.labels.uuid} Xid history ({in_words(RMA_WINDOW)})",
                    "; ".join(parts) + nodes + verdict))
    return out


@check(code="GT709", slug="gpu-rma-candidate", title="No GPU keeps failing over the last week",
       severity=Severity.ERROR, requires=("prometheus",), optional=("nodes", "pods", "nodeclaims"))
def gpu_rma_candidate(snap: Snapshot) -> Iterator[Finding | int]:
    """A GPU kept failing over the last 7 days (DCGM metrics): a hardware Xid again and again, or unrepairable memory.

    Why it matters:
    A GPU that falls off the bus (Xid 79), loses memory (48, 63, 64, 92, 94, 95; 140 on Blackwell), its
    NVLink (74; 144-150 on Blackwell) or its firmware (119, 120) on one day and again days later is faulty
    hardware: every reset or reboot puts it back into service, jobs on it crash again, and in the cloud a
    replacement node may land on the same host. The one-hour checks see each failure alone; this one reads a week of
    DCGM_FI_DEV_XID_ERRORS per GPU (by its UUID, so a GPU seen under a new node name is still one GPU),
    plus DCGM_FI_DEV_ROW_REMAP_FAILURE and DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS (and, for GPUs before
    Ampere, DCGM_FI_DEV_RETIRED_DBE when the exporter has it on), and lists the GPUs
    with the history that makes them candidates for return (RMA). An occurrence is a change of the
    last-Xid gauge, so the same Xid twice without a reboot in between counts once; a held Xid seen again
    under a new job's pod label (dcgm-exporter relabels every metric of a GPU with the pod holding it),
    after a scrape gap of under an hour, or on each MIG instance of one GPU is not counted again.
    DCGM does not see every Xid: NVIDIA said in 2024 that DCGM could not report Xid 79, 119 and 120
    (NVML limits; NVIDIA/DCGM#162), and some Xids never reach DCGM_FI_DEV_XID_ERRORS (NVIDIA/DCGM#235):
    the kernel log of the node (`dmesg | grep -i xid`) is the full record.

    Fix:
    Take the GPU out of service: cordon and drain its node. In the cloud, replace the instance
    (delete its NodeClaim) and report the instance ID, GPU UUID and this history to the provider so
    the host is retired; on your own hardware, open an RMA with the vendor with the GPU's serial
    number (`nvidia-smi --query-gpu=index,uuid,serial --format=csv`) and an `nvidia-bug-report.sh`.
    """
    facts = facts_for(snap, XID, "rma_xid_events", "rma_xid_first", "rma_xid_last")
    if "rma_xid_events" not in facts.queries:
        # A bundle written before this check existed: no week of history was read, so no all-clear either.
        raise MetricUnavailable("prometheus: the week of Xid history was not queried in this snapshot")
    resolver = NodeResolver(snap)
    examined = {(_key(GpuLabels.of(s.labels))) for s in facts.get("gpu_temp") or facts.get("gpu_util")}
    gpus = _gpus(facts)
    yield len(examined | set(gpus))
    found = False
    for g in sorted(gpus.values(), key=lambda g: (resolver.node(g.labels), g.labels.index)):
        reasons = g.reasons()
        if not reasons:
            continue
        found = True
        yield _finding(snap, facts, resolver, g, reasons)
    failed = [p for p in ("rma_remap_failure", "rma_remapped_rows", "rma_retired_pages") if p in facts.errors]
    if failed and not found:
        # The memory history was not read (a 7-day query that timed out): no all-clear either.
        raise MetricUnavailable(f"query for {failed[0]} failed: {facts.errors[failed[0]]}", blind=True)


def _finding(snap: Snapshot, facts: MetricFacts, resolver: NodeResolver, g: _Gpu, reasons: list[str]) -> Finding:
    node = resolver.node(g.labels) or "unknown"
    ref = resolver.ref(g.labels)
    ev, related = node_context(snap, node)
    ident = g.labels.as_value()
    if g.labels.uuid:
        ident["UUID"] = g.labels.uuid
    for s in g.samples:
        labels = GpuLabels.of(s.labels)
        code = int(s.labels["xid"])
        n, first, last = g.xids[code]
        history = (f"Xid {code} {int(s.value)} time(s) on {resolver.node(labels) or labels.host} GPU {labels.index}"
                   f" in the last {in_words(RMA_WINDOW)}: first {_date(first)}, last {_date(last)}")
        ev.append(metric_evidence(resolver.ref(labels), s, history,
                                  labels.as_value(xid=code, occurrences=int(s.value), first=_date(first),
                                                  last=_date(last))))
    for counter, what in ((g.remap_failure, "memory the GPU cannot repair"),
                          (g.rows, "uncorrectable remapped rows changed more than once"),
                          (g.pages, "retired pages (double-bit ECC) changed more than once")):
        if counter is not None:
            ev.append(metric_evidence(ref, counter, what, ident))
    ev += absence_evidence(facts, ROW_REMAP_FAILURE, ref, "a failed row remap in the week cannot be seen")
    ev += absence_evidence(facts, UNCORRECTABLE_REMAPPED_ROWS, ref, "growing uncorrectable memory cannot be seen")
    ev += absence_evidence(facts, RETIRED_DBE, ref, "pages retired again and again (GPUs before Ampere) cannot be seen")
    index = f"GPU {g.labels.index}" if g.labels.index else ""
    serial = f"{index} ({g.labels.uuid})" if index and g.labels.uuid else g.labels.uuid or index
    """A UUID already reads GPU-...: `GPU 7 (GPU-6f9c...)`, never `GPU GPU-6f9c...`."""
    ev.append(Evidence.field(ref, "thresholds", f">= {MIN_EVENTS} occurrences of Xid "
                             f"{'/'.join(str(x) for x in sorted(RMA_XIDS))} at least a day apart or on two nodes, "
                             f"within {in_words(RMA_WINDOW)}", note="gpu-rma-candidate's parameters"))
    cloud = snap.index.node.get(node)
    in_cloud = cloud is not None and cloud.provider_id.startswith(("aws://", "gce://", "azure://"))
    if in_cloud:
        text = (f"Drain {node} and replace it; report the instance, {serial} and this history to the cloud "
                "provider so the host is retired (a new node may otherwise land on the same faulty GPU).")
    else:
        text = (f"Drain {node}, take {serial} out of service and open an RMA with the vendor: give its serial "
                "number (nvidia-smi --query-gpu=index,uuid,serial --format=csv) and an nvidia-bug-report.sh.")
    commands = drain_commands(snap, node) + (replace_commands(snap, node) if in_cloud else ()) + (
        f"gputui debug node/{node}",)
    name = g.labels.describe().split(" (")[0]
    return Finding(
        subject=ref,
        title=f"{node} {name}" + (f" ({g.labels.uuid})" if g.labels.uuid else "")
              + f" keeps failing: {'; '.join(reasons)} in the last {in_words(RMA_WINDOW)} - RMA candidate",
        evidence=tuple(ev),
        remediation=Remediation(text, commands),
        related=related,
    )
