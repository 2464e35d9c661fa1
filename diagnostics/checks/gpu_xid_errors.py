"""Xid errors DCGM reported in the last hour, with NVIDIA's recommended action per Xid."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone

from diagnostics.facts.gpu_findings import (
    debug_command,
    drain_commands,
    gpus_by_node,
    node_context,
    pods_of,
    reboot_commands,
)
from diagnostics.facts.metric_facts import (
    XID,
    XID_COUNT,
    XID_WINDOW,
    GpuLabels,
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
from diagnostics.facts.xid import Xid, lookup


def _ago(sample: Sample, ts: float | None) -> str:
    """'at 09:40 UTC, 12 min ago': when the gauge turned, to match against the node's kernel log."""
    if ts is None:
        return ""
    minutes = max(0, round((sample.at.timestamp() - ts) / 60))
    return f"at {datetime.fromtimestamp(ts, timezone.utc):%H:%M} UTC, {minutes} min ago"


@check(code="GT704", slug="gpu-xid-errors", title="No Xid errors on GPUs in the last hour",
       severity=Severity.ERROR, requires=("prometheus",), optional=("nodes", "pods", "nodeclaims"))
def gpu_xid_errors(snap: Snapshot) -> Iterator[Finding | int]:
    """A GPU reported an Xid error (DCGM_FI_DEV_XID_ERRORS) in the last hour.

    Why it matters:
    Xids are the driver's error reports. Some are the job's own bug (13, 31), others mean the
    GPU is unusable until it is reset or the node rebooted (48 double-bit ECC, 79 fallen off the
    bus, 119/120 GSP): jobs on it crash or hang, and new pods keep landing on it. The DCGM gauge
    holds only the *last* Xid, so gputui counts an Xid as recent when the GPU's gauge turned to it
    within the hour, judged per physical GPU: dcgm-exporter labels every metric of a GPU with the pod
    holding it (and the Xid's err_code/err_msg), so a new job starts a new series still reading the
    old Xid, and in MIG mode each GPU instance carries a copy; neither is a new Xid, nor is a held
    Xid seen again after a scrape gap of under an hour.

    Fix:
    Follow NVIDIA's action for the Xid: restart the job for application Xids; for fatal ones
    cordon and drain the node, then reset the GPU or reboot/replace the node. Repeats on the
    same GPU mean hardware: replace the node and report it.
    """
    facts = facts_for(snap, XID, "xid_recent", "xid_last")
    if "xid_recent" not in facts.queries:
        # A bundle written before Xids were judged per GPU: its per-series samples are no answer either way.
        raise MetricUnavailable("prometheus: the hour of Xid history per GPU was not queried in this snapshot")
    resolver = NodeResolver(snap)
    # One physical GPU per entry (UUID, else host and index): the first sample names it in the evidence.
    shown: dict[tuple[str, ...], Sample] = {}
    codes: dict[tuple[str, ...], set[int]] = {}
    at: dict[tuple[tuple[str, ...], str], float] = {}
    for s in facts.get("xid_recent"):  # valued with when the gauge last turned to the Xid
        code = s.labels.get("xid", "")
        if code.isdigit() and usable(float(code)) and usable(s.value) and s.value > 0:
            key = GpuLabels.of(s.labels).physical
            shown.setdefault(key, s)
            codes.setdefault(key, set()).add(int(code))
            at[(key, code)] = s.value
    # dcgm-exporter's optional counter names the Xid in a label: exact when it is enabled.
    for s in facts.get("xid_count"):
        code = s.labels.get("xid", "")
        # Before 4.5.2-4.8.1 the exporter counted DCGM's blank value as an Xid (xid="9223372036854775792").
        if code.isdigit() and usable(float(code)):
            key = GpuLabels.of(s.labels).physical
            shown.setdefault(key, s)
            codes.setdefault(key, set()).add(int(code))
    # The pods that held a GPU while its gauge read an Xid this hour: the jobs it may have hit.
    holders: dict[tuple[str, ...], list[GpuLabels]] = {}
    for s in facts.get("xid_last"):
        gpu = GpuLabels.of(s.labels)
        if gpu.physical in shown:
            holders.setdefault(gpu.physical, []).append(gpu)

    gpus_seen = gpus_by_node(facts.get("gpu_temp") or facts.get("gpu_util"), resolver)
    hit = gpus_by_node(shown.values(), resolver)
    for node in sorted(set(gpus_seen) | set(hit)):
        yield 1
        if node not in hit:
            continue
        ev, related = node_context(snap, node)
        per_gpu: list[tuple[GpuLabels, list[Xid]]] = []
        for gpu, s in hit[node]:
            xids = [lookup(c) for c in sorted(codes.get(gpu.physical, ()))]
            if not xids:
                continue
            per_gpu.append((gpu, xids))
            ref = resolver.ref(gpu)
            when = [f"Xid {x.code} {_ago(s, at.get((gpu.physical, str(x.code))))}" for x in xids
                    if (gpu.physical, str(x.code)) in at]
            ev.append(metric_evidence(ref, s, f"{gpu.describe()}: the GPU's Xid gauge turned to "
                                              + ("; ".join(when) or f"a new Xid within the last {in_words(XID_WINDOW)}"),
                                      gpu.as_value(xids=[x.code for x in xids])))
            for x in xids:
                ev.append(Evidence.field(ref, f"Xid {x.code}", f"{x.meaning} [{x.bucket}]",
                                         note=f"NVIDIA action: {x.action}"))
        if not per_gpu:
            continue
        worst = max((x for _g, xs in per_gpu for x in xs), key=lambda x: (x.rank, x.code))
        ref = resolver.ref(per_gpu[0][0])
        what = ", ".join(f"Xid {'/'.join(str(x.code) for x in xs)} on {g.describe().split(' (')[0]}"
                         for g, xs in per_gpu)
        title = f"{what} of {node} in the last {in_words(XID_WINDOW)}: {worst.meaning}"
        if worst.drain:
            title += " - drain the node"
            severity: Severity | None = Severity.CRITICAL  # NVIDIA classes it fatal: reset/reboot needed
        elif all(x.is_app_error for _g, xs in per_gpu for x in xs):
            severity = Severity.WARNING  # application errors: NVIDIA's device plugin keeps the GPU healthy
        else:
            severity = None
        commands: tuple[str, ...] = (debug_command(node, "sh -c 'dmesg | grep -i xid | tail -20'"),)
        if worst.drain:
            commands += drain_commands(snap, node)
            if worst.bucket == "RESTART_BM":
                commands += reboot_commands(snap, node)
            else:
                idx = next((g.index for g, xs in per_gpu if worst in xs and g.index), "")
                commands += (debug_command(node, f"nvidia-smi -r -i {idx}" if idx else "nvidia-smi -r"),)
        ev += absence_evidence(facts, XID_COUNT, ref, "codes come from the last-Xid gauge, so an earlier Xid "
                                                      "replaced by a later one within the hour is not listed")
        yield Finding(
            subject=ref,
            title=title,
            evidence=tuple(ev),
            remediation=Remediation(f"Xid {worst.code}: {worst.action}.", commands),
            severity=severity,
            related=pods_of(h for g, _x in per_gpu for h in holders.get(g.physical, [g])) + related,
        )
