"""Prometheus facts: the PromQL gputui runs, the samples it got back, and what was not exported.

Pure data plus the helpers checks share (GPU identity from DCGM labels, GPU -> node, evidence),
so a bundle replays the same findings offline. The Prometheus source fills a `MetricFacts`; checks
never query anything themselves.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from typing import Any

from diagnostics.model import Evidence, EvidenceKind, ObjectRef
from diagnostics.records import is_accelerator
from diagnostics.snapshot import Snapshot

# --- metric names --------------------------------------------------------------------------------
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
XID = "DCGM_FI_DEV_XID_ERRORS"
XID_COUNT = "DCGM_EXP_XID_ERRORS_COUNT"
ECC_DBE = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"
ROW_REMAP_FAILURE = "DCGM_FI_DEV_ROW_REMAP_FAILURE"
UNCORRECTABLE_REMAPPED_ROWS = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
RETIRED_DBE = "DCGM_FI_DEV_RETIRED_DBE"
"""Pages retired for double-bit ECC errors: how GPUs before Ampere (T4, V100) repair memory (no row remapping)."""
PCIE_REPLAY = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
GPU_TEMP = "DCGM_FI_DEV_GPU_TEMP"
NODEPOOL_USAGE = "karpenter_nodepools_usage"
"""Also `karpenter_nodepool_usage` in older Karpenter releases: queries match both names."""
NODEPOOL_LIMIT = "karpenter_nodepools_limit"
KARPENTER = "karpenter"
"""Pseudo-name for "this Prometheus scrapes Karpenter at all" (build info or any nodepool gauge)."""

DCGM_DEFAULT_ON = (GPU_UTIL, XID, ROW_REMAP_FAILURE, UNCORRECTABLE_REMAPPED_ROWS, PCIE_REPLAY, GPU_TEMP)
DCGM_DEFAULT_OFF = (ECC_DBE, XID_COUNT, RETIRED_DBE)

# --- windows the queries and the checks' wording share ------------------------------------------
IDLE_WINDOW = "1h"
XID_WINDOW = "1h"
FAILURE_WINDOW = "15m"
REPAIR_WINDOW = "6h"
"""Node repair loops: replacements as unhealthy counted over this window (node_remediation_loop)."""
PCIE_WINDOW = "15m"
RMA_WINDOW = "7d"
"""gpu-rma-candidate looks this far back for a GPU's repeated failures (a week: across reboots and replacements)."""
RMA_STEP = "5m"
"""Resolution of its Xid history: an Xid is a new occurrence when the gauge changed within this step."""


def in_words(window: str) -> str:
    """'1h' -> 'hour', '15m' -> '15 minutes', '7d' -> '7 days': titles read "in the last hour"."""
    m = re.fullmatch(r"(\d+)([mhd])", window)
    if not m:
        return window
    n, unit = int(m.group(1)), {"m": "minute", "h": "hour", "d": "day"}[m.group(2)]
    return unit if n == 1 else f"{n} {unit}s"


NA_SENTINEL = 2.0 ** 63 - 100
"""dcgm-exporter renders blank/unsupported fields as huge integers (9223372036854775794): N/A."""

_ACCELERATOR_TYPES = r"nvidia\\.com/.*|amd\\.com/gpu|aws\\.amazon\\.com/neuron.*|habana\\.ai/gaudi|gpu\\.intel\\.com/.*"
_FAILURE_REASONS = "insufficient_capacity|launch_timeout|registration_timeout|nodeclass_not_ready|liveness"
"""Disruption reasons that mean "a NodeClaim never became a node" (`liveness`: pre-v1 registration timeout)."""
_KARPENTER_COUNTERS = ("karpenter_nodeclaims_disrupted_total", "karpenter_nodeclaims_terminated",
                       "karpenter_cloudprovider_instance_launch_failures_total",
                       "karpenter_nodeclaims_unhealthy_disrupted_total")
_KARPENTER_WITNESS = '{__name__=~"karpenter_build_info|karpenter_nodepools?_usage"}'


RMA_HOLD = "1h"
"""How far back an Xid history step looks for the gauge's previous value: a scrape gap shorter than this
(a Prometheus restart replaying its WAL, an exporter restarting) does not make a held Xid a new one."""
_WORKLOAD_LABELS = ("pod, namespace, container, pod_uid, pod_name, pod_namespace, container_name, exported_pod, "
                    "exported_namespace, exported_container, vgpu, hpc_job, dra_claim_name, dra_claim_namespace, "
                    "dra_driver_name, dra_pool_name, dra_device_name, dra_mig_profile, dra_mig_device_uuid, "
                    "err_code, err_msg")
"""Labels dcgm-exporter changes while a GPU's gauge keeps its value: the workload holding the GPU, put on
every metric of it (internal/pkg/transformation/kubernetes.go), and the Xid's own err_code/err_msg."""
XID_STEP = "1m"
"""Resolution of gpu-xid-errors' hour of Xid history: an Xid is seen at most a minute after it was scraped."""


def xid_edges(step: str) -> str:
    """PromQL for new Xids: one series per physical GPU and Xid code (an `xid` label), at a step where the GPU's
    last-Xid gauge reads an Xid it did not read at its last scrape before the step.

    The gauge is per GPU, not per series: dcgm-exporter relabels every metric of a GPU with the workload
    holding it, so a job that lands on a GPU starts a new series already reading the old Xid; the GPU's
    value a step before is its newest series then (so 79 -> reset -> 0 -> 79 under a new pod is a new
    Xid), else, across a scrape gap under RMA_HOLD, the last it read. MIG instances each carry their
    GPU's Xid (GPU_I_PROFILE/GPU_I_ID): one GPU. Nothing is new while Prometheus had no Xid series at
    all a step before (a Prometheus just started would call every held Xid new).
    Used by gpu-xid-errors over an hour (XID_STEP) and gpu-rma-candidate over a week (RMA_STEP).
    """
    now = f"max without({_WORKLOAD_LABELS}) ({XID})"
    before = (f"(max without({_WORKLOAD_LABELS}) ({XID} offset {step}) or max without({_WORKLOAD_LABELS}) "
              f"(last_over_time({XID}[{RMA_HOLD}] offset {step})))")
    return (f'max without(GPU_I_PROFILE, GPU_I_ID) (count_values without() ("xid", '
            f"{now} > 0 unless {before} == {now})) and on() group(last_over_time({XID}[{RMA_HOLD}] offset {step}))")


_XID_EDGE = xid_edges(RMA_STEP)
_XID_RECENT = xid_edges(XID_STEP)


def _new_or_increased(metric: str, selector: str, window: str) -> str:
    """Counter grew in the window, or its series was born in it (increase() misses a first sample).

    A series counts as born in the window only if Prometheus already scraped Karpenter a window
    ago: right after a Prometheus restart every series looks new, with totals from long before.
    """
    m = f"{metric}{selector}"
    # Born series first: their value is the exact count, where increase() would extrapolate.
    return (f"(({m} unless {m} offset {window}) and on() group({_KARPENTER_WITNESS} offset {window}))"
            f" or increase({m}[{window}]) > 0")


QUERIES: dict[str, tuple[str, ...]] = {
    # Which of the metrics the checks need exist at all (instant: sampled in the last 5 minutes).
    "present": (
        'group by (__name__) ({__name__=~"' + "|".join(DCGM_DEFAULT_ON + DCGM_DEFAULT_OFF)
        + "|karpenter_build_info|karpenter_nodepools?_(usage|limit)|" + "|".join(_KARPENTER_COUNTERS) + '"})',
    ),
    # Average utilisation per GPU over the hour, only for series alive now *and* an hour ago, so a
    # pod that started five minutes ago (still loading data at 0 %) is not called idle.
    "gpu_util": (f"avg_over_time({GPU_UTIL}[{IDLE_WINDOW}]) and {GPU_UTIL} and {GPU_UTIL} offset 50m",),
    # The Xid gauge holds the *last* Xid forever: a value alone says "ever since the exporter
    # started". An Xid is recent when the GPU's gauge turned to it within the window (xid_edges: not
    # when a new job's series or a MIG instance repeats it): one series per GPU and Xid, valued with the
    # time it last turned; `xid_last` names the pods on the GPU.
    "xid_recent": (f"max_over_time(timestamp({_XID_RECENT})[{XID_WINDOW}:{XID_STEP}])",),
    "xid_last": (f"last_over_time({XID}[{XID_WINDOW}]) > 0",),
    # A windowed count (dcgm-exporter --xid-count-window-size), not a counter: a series per Xid
    # that reads N for a window and then goes away, so increase() of it is 0.
    "xid_count": (f"max_over_time({XID_COUNT}[{XID_WINDOW}]) > 0",),
    "ecc_dbe": (f"max_over_time({ECC_DBE}[10m])",),
    "ecc_dbe_new": (f"increase({ECC_DBE}[{XID_WINDOW}]) > 0",),
    "row_remap_failure": (f"max_over_time({ROW_REMAP_FAILURE}[10m])",),
    "uncorrectable_remapped_rows": (f"max_over_time({UNCORRECTABLE_REMAPPED_ROWS}[10m]) > 0",),
    "pcie_replay_rate": (f"rate({PCIE_REPLAY}[{PCIE_WINDOW}])",),
    "gpu_temp": (f"avg_over_time({GPU_TEMP}[5m])",),
    # A GPU's Xid history over a week, one series per GPU and Xid code (count_values turns the gauge's
    # value into an `xid` label). An occurrence is a rising edge: the gauge reads an Xid it did not read
    # at its last scrape before the step (after a reboot the exporter starts again at 0, so a recurring Xid
    # is seen again), whatever pod the exporter names on the series, and across a scrape gap under RMA_HOLD.
    "rma_xid_events": (f"count_over_time(({_XID_EDGE})[{RMA_WINDOW}:{RMA_STEP}])",),
    "rma_xid_first": (f"min_over_time(timestamp({_XID_EDGE})[{RMA_WINDOW}:{RMA_STEP}])",),
    "rma_xid_last": (f"max_over_time(timestamp({_XID_EDGE})[{RMA_WINDOW}:{RMA_STEP}])",),
    "rma_remap_failure": (f"max_over_time({ROW_REMAP_FAILURE}[{RMA_WINDOW}]) > 0",),
    # Uncorrectable remapped rows that grew more than once in the week: the memory keeps failing. Per GPU,
    # not per series: a failure that kills the job moves the counter under the next pod's label.
    "rma_remapped_rows": (f"changes((max without({_WORKLOAD_LABELS}) ({UNCORRECTABLE_REMAPPED_ROWS}))"
                          f"[{RMA_WINDOW}:{RMA_STEP}]) > 1 and max without({_WORKLOAD_LABELS}) "
                          f"(max_over_time({UNCORRECTABLE_REMAPPED_ROWS}[{RMA_WINDOW}])) > 0",),
    # The same for pages retired by double-bit errors (GPUs before Ampere), when the exporter has it on.
    "rma_retired_pages": (f"changes((max without({_WORKLOAD_LABELS}) ({RETIRED_DBE}))[{RMA_WINDOW}:{RMA_STEP}]) > 1 "
                          f"and max without({_WORKLOAD_LABELS}) (max_over_time({RETIRED_DBE}[{RMA_WINDOW}])) > 0",),
    # Both Karpenter generations: karpenter_nodepool_usage (older) and karpenter_nodepools_usage.
    "nodepool_usage": (f'{{__name__=~"karpenter_nodepools?_usage", resource_type=~"{_ACCELERATOR_TYPES}"}}',),
    "nodepool_limit": (f'{{__name__=~"karpenter_nodepools?_limit", resource_type=~"{_ACCELERATOR_TYPES}"}}',),
    # One query per name: increase() drops __name__, so one regex over both would collide.
    "nodeclaim_failures": (
        _new_or_increased("karpenter_nodeclaims_disrupted_total", f'{{reason=~"{_FAILURE_REASONS}"}}',
                          FAILURE_WINDOW),
        # Karpenter before v1 (v0.3x): `karpenter_nodeclaims_terminated{reason}`, no `_total`; v1's
        # terminated_total has no reason label, its failures are in disrupted_total above.
        _new_or_increased("karpenter_nodeclaims_terminated", f'{{reason=~"{_FAILURE_REASONS}"}}',
                          FAILURE_WINDOW),
    ),
    "launch_failures": (
        _new_or_increased("karpenter_cloudprovider_instance_launch_failures_total", "", FAILURE_WINDOW),
    ),
    # Node repair replacements: before Karpenter v1.8 they leave no event or condition, only these
    # (the specific counter labels the condition and the AMI).
    "unhealthy_repairs": (
        _new_or_increased("karpenter_nodeclaims_unhealthy_disrupted_total", "", REPAIR_WINDOW),
        _new_or_increased("karpenter_nodeclaims_disrupted_total", '{reason="unhealthy"}', REPAIR_WINDOW),
    ),
}
"""Purpose -> PromQL. Purposes are the contract between the Prometheus source and the checks."""

NEEDS: dict[str, str] = {
    "gpu_util": GPU_UTIL, "xid_recent": XID, "xid_last": XID,
    "xid_count": XID_COUNT, "ecc_dbe": ECC_DBE, "ecc_dbe_new": ECC_DBE, "row_remap_failure": ROW_REMAP_FAILURE,
    "uncorrectable_remapped_rows": UNCORRECTABLE_REMAPPED_ROWS, "pcie_replay_rate": PCIE_REPLAY,
    "gpu_temp": GPU_TEMP, "rma_xid_events": XID, "rma_xid_first": XID, "rma_xid_last": XID,
    "rma_remap_failure": ROW_REMAP_FAILURE, "rma_remapped_rows": UNCORRECTABLE_REMAPPED_ROWS,
    "rma_retired_pages": RETIRED_DBE,
    "nodepool_usage": NODEPOOL_USAGE, "nodepool_limit": NODEPOOL_LIMIT,
    "nodeclaim_failures": KARPENTER, "launch_failures": KARPENTER, "unhealthy_repairs": KARPENTER,
}
"""Purpose -> the metric it reads: the source skips a purpose whose metric is absent."""


# --- data ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Sample:
    """One series of one instant query, with the PromQL that produced it (evidence quotes it)."""

    query: str
    labels: Mapping[str, str]
    value: float
    at: datetime

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query, "labels": dict(self.labels), "value": self.value,
                "at": self.at.timestamp()}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Sample:
        return cls(str(d["query"]), dict(d.get("labels") or {}), float(d["value"]),
                   datetime.fromtimestamp(float(d["at"]), timezone.utc))


@dataclass(frozen=True)
class MetricFacts:
    """What one round of Prometheus queries returned."""

    queried_at: datetime
    url: str = field(default="", metadata={"sensitive": True})
    """The Prometheus (or API-server proxy) URL: identifies the cluster, so bundles redact it."""
    samples: Mapping[str, tuple[Sample, ...]] = field(default_factory=dict)
    """Samples by purpose (keys of QUERIES)."""
    queries: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The PromQL run per purpose, also when it returned nothing (so "no samples" is checkable)."""
    absent: Mapping[str, str] = field(default_factory=dict)
    """Metric name -> why it is missing ("off in dcgm-exporter's default counters")."""
    errors: Mapping[str, str] = field(default_factory=dict)
    """Purpose -> error of a query that failed or timed out."""

    def get(self, purpose: str) -> tuple[Sample, ...]:
        return self.samples.get(purpose, ())

    def to_json(self) -> dict[str, Any]:
        return {
            "queried_at": self.queried_at.isoformat().replace("+00:00", "Z"),
            "url": self.url,
            "samples": {p: [s.to_json() for s in ss] for p, ss in self.samples.items()},
            "queries": {p: list(q) for p, q in self.queries.items()},
            "absent": dict(self.absent),
            "errors": dict(self.errors),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> MetricFacts:
        return cls(
            queried_at=datetime.fromisoformat(str(d["queried_at"]).replace("Z", "+00:00")),
            url=str(d.get("url") or ""),
            samples={p: tuple(Sample.from_json(s) for s in ss) for p, ss in (d.get("samples") or {}).items()},
            queries={p: tuple(q) for p, q in (d.get("queries") or {}).items()},
            absent=dict(d.get("absent") or {}),
            errors=dict(d.get("errors") or {}),
        )


SENSITIVE_FIELDS = ("url",)


def absent_metrics(present: Iterable[str]) -> dict[str, str]:
    """Which needed metrics are missing, each with the likely reason (pure: from the `present` names)."""
    have = set(present)
    out: dict[str, str] = {}
    dcgm_seen = any(m in have for m in DCGM_DEFAULT_ON + DCGM_DEFAULT_OFF)
    for m in DCGM_DEFAULT_ON:
        if m not in have:
            out[m] = ("no dcgm-exporter metrics in this Prometheus: is dcgm-exporter installed and scraped?"
                      if not dcgm_seen else "on by default, but missing from this dcgm-exporter's counters CSV")
    for m in DCGM_DEFAULT_OFF:
        if m not in have:
            out[m] = "off in dcgm-exporter's default counters"
    for new, old in ((NODEPOOL_USAGE, "karpenter_nodepool_usage"), (NODEPOOL_LIMIT, "karpenter_nodepool_limit")):
        if new not in have and old not in have:
            out[new] = f"nor {old} (older Karpenter): is Karpenter's /metrics scraped by this Prometheus?"
    if not have & {"karpenter_build_info", NODEPOOL_USAGE, "karpenter_nodepool_usage", *_KARPENTER_COUNTERS}:
        out[KARPENTER] = ("no Karpenter metrics (karpenter_build_info, karpenter_nodepools_usage): "
                          "is Karpenter's /metrics scraped by this Prometheus?")
    return out


class MetricUnavailable(Exception):
    """Raised by a check that cannot judge because its metric is not there; the engine skips the check.

    Duck-typed (`skips_check`, `blind`) so the engine needs no import of this module. A metric nobody
    exports is a fact about the cluster; a query that failed kept the check from looking (`blind`).
    """

    skips_check = True

    def __init__(self, reason: str, *, blind: bool = False) -> None:
        super().__init__(reason)
        self.blind = blind


def facts_for(snap: Snapshot, metric: str, *purposes: str) -> MetricFacts:
    """The snapshot's facts when `metric` was exported and `purposes` were queried, else MetricUnavailable."""
    facts = snap.metrics
    if not isinstance(facts, MetricFacts):
        raise MetricUnavailable("prometheus: no metric samples in this snapshot")
    if metric in facts.absent:
        if metric == KARPENTER:
            raise MetricUnavailable(facts.absent[metric])
        raise MetricUnavailable(f"{metric} not exported ({facts.absent[metric]})")
    for p in purposes:
        if p in facts.errors:
            raise MetricUnavailable(f"query for {p} failed: {facts.errors[p]}", blind=True)
    return facts


def usable(value: float) -> bool:
    """False for NaN and dcgm-exporter's N/A sentinels."""
    return value == value and abs(value) < NA_SENTINEL


# --- GPU identity and placement ------------------------------------------------------------------
_NODE_LABELS = ("Hostname", "hostname", "kubernetes_node", "node", "nodename")
"""dcgm-exporter labels the node `Hostname` (before its 2026 rename) or `hostname`; scrape configs
often add `kubernetes_node` / `node`."""


@dataclass(frozen=True, slots=True)
class GpuLabels:
    """One GPU (or MIG instance) as dcgm-exporter labels it."""

    host: str
    """The node as the exporter named it, or the scrape target's address when no host label exists."""
    index: str
    uuid: str
    model: str
    pod: str
    namespace: str
    container: str
    mig: str
    """`GPU_I_PROFILE` / `GPU_I_ID` for a MIG instance, else ''."""

    @classmethod
    def of(cls, labels: Mapping[str, str]) -> GpuLabels:
        host = (next((labels[k] for k in _NODE_LABELS if labels.get(k)), "")
                or _instance_host(labels.get("instance", "")))
        mig = labels.get("GPU_I_PROFILE") or ""
        if labels.get("GPU_I_ID"):
            mig = f"{mig} #{labels['GPU_I_ID']}".strip()
        if labels.get("exported_pod"):
            # Scraped without honorLabels: the workload's labels were renamed exported_*, and
            # pod/namespace/container now name the exporter itself.
            pod, ns, container = (labels["exported_pod"], labels.get("exported_namespace", ""),
                                  labels.get("exported_container", ""))
        elif labels.get("pod_name"):
            # dcgm-exporter --use-old-namespace (-o): the workload is pod_name/pod_namespace, and
            # pod/namespace (if any) are the scrape target's.
            pod, ns, container = (labels["pod_name"], labels.get("pod_namespace", ""),
                                  labels.get("container_name") or labels.get("pod_container_name") or "")
        else:
            pod, ns, container = labels.get("pod", ""), labels.get("namespace", ""), labels.get("container", "")
            if "dcgm-exporter" in pod:  # same scrape setup, GPU held by no pod: only the exporter's labels
                pod, ns, container = "", "", ""
        return cls(host, labels.get("gpu", ""), labels.get("UUID") or labels.get("uuid") or "",
                   labels.get("modelName", ""), pod, ns, container, mig)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.host, self.uuid or self.index, self.mig)

    @property
    def physical(self) -> tuple[str, ...]:
        """The board, whatever its MIG instances or the pod on it: its UUID, else the node and index."""
        return (self.uuid,) if self.uuid else (self.host, self.index)

    @property
    def pod_ref(self) -> ObjectRef | None:
        return ObjectRef("Pod", self.pod, self.namespace or None) if self.pod else None

    def describe(self) -> str:
        """`GPU 7 (NVIDIA H100 80GB HBM3)`; MIG instances say so."""
        name = f"GPU {self.index}" if self.index else (self.uuid or "GPU ?")
        if self.mig:
            name += f" MIG {self.mig}"
        return f"{name} ({self.model})" if self.model else name

    def as_value(self, **extra: Any) -> dict[str, Any]:
        """The evidence value: which GPU, which pod, plus what was measured."""
        out: dict[str, Any] = {"gpu": self.index}
        if self.uuid:
            out["UUID"] = self.uuid
        if self.model:
            out["modelName"] = self.model
        if self.mig:
            out["mig"] = self.mig
        if self.pod:
            out["pod"] = f"{self.namespace}/{self.pod}" if self.namespace else self.pod
        out.update(extra)
        return out


def _instance_host(instance: str) -> str:
    if not instance:
        return ""
    if instance.startswith("["):  # [fd00::1]:9400
        return instance[1:].split("]", 1)[0]
    return instance.rsplit(":", 1)[0] if instance.count(":") == 1 else instance


class NodeResolver:
    """Maps a GPU's host label to a Node: by name, by InternalIP, by the exporter pod's IP or name.

    dcgm-exporter sets Hostname from NODE_NAME (the GPU Operator does); without it the label is the
    exporter pod's name, and some scrape configs only carry `instance` (pod or node IP:port).
    """

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        self.nodes = {n.name for n in snap.nodes}
        self.by_ip: dict[str, str] = {}
        for n in snap.nodes:
            for kind, address in n.addresses:
                if kind != "Hostname":
                    self.by_ip.setdefault(address, n.name)
        self.short: dict[str, list[str]] = {}
        for name in self.nodes:
            self.short.setdefault(name.split(".", 1)[0], []).append(name)

    @cached_property
    def _pods(self) -> tuple[dict[str, str], dict[str, str]]:
        """(pod IP -> node, pod name -> node), built only when a host label is not a node name."""
        by_ip: dict[str, str] = {}
        by_name: dict[str, str] = {}
        for p in self.snap.pods:
            if not p.node_name:
                continue
            by_name.setdefault(p.name, p.node_name)
            if p.pod_ip:
                by_ip.setdefault(p.pod_ip, p.node_name)
        return by_ip, by_name

    def node(self, gpu: GpuLabels) -> str:
        """The node name ('' when the sample names no host at all)."""
        host = gpu.host
        if not host or host in self.nodes:
            return host
        if _is_ip(host):
            return self.by_ip.get(host) or self._pods[0].get(host) or host
        if host in self._pods[1]:
            return self._pods[1][host]
        same = self.short.get(host.split(".", 1)[0], [])
        return same[0] if len(same) == 1 else host

    def ref(self, gpu: GpuLabels) -> ObjectRef:
        return ObjectRef("Node", self.node(gpu) or "unknown")


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def metric_evidence(subject: ObjectRef | None, sample: Sample, note: str = "", value: Any = None) -> Evidence:
    """Evidence quoting the PromQL (path) and the sample, so a reader can re-run it in Prometheus."""
    shown = value if value is not None else round(sample.value, 3)
    return Evidence(EvidenceKind.METRIC, subject, sample.query, shown, note)


def absence_evidence(facts: MetricFacts, metric: str, subject: ObjectRef | None, consequence: str) -> list[Evidence]:
    """Say so when an enriching metric is missing, instead of letting its silence read as healthy."""
    if metric not in facts.absent:
        return []
    return [Evidence.absence(subject, metric, note=f"not exported ({facts.absent[metric]}): {consequence}")]


def is_accelerator_type(resource_type: str) -> bool:
    """Karpenter lower-cases resource names and turns '-' into '_' in the `resource_type` label."""
    return is_accelerator(resource_type) or is_accelerator(resource_type.replace("_", "-"))
