"""Xid errors DCGM reported in the last hour, with NVIDIA's recommended action per Xid."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from diagnostics.gpu_findings import (
    debug_command,
    drain_commands,
    gpus_by_node,
    node_context,
    pods_of,
    reboot_commands,
)
from diagnostics.metric_facts import (
    XID,
    XID_COUNT,
    XID_WINDOW,
    GpuLabels,
    absence_evidence,
    in_words,
    NodeResolver,
    Sample,
    facts_for,
    metric_evidence,
    usable,
)
from diagnostics.model import Evidence, Finding, Remediation, Severity
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot
from diagnostics.xid import Xid, lookup


def _key(labels: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in labels.items() if k != "__name__"))


@check(code="GT704", slug="gpu-xid-errors", title="No Xid errors on GPUs in the last hour",
       severity=Severity.ERROR, requires=("prometheus",), optional=("nodes", "pods", "nodeclaims"))
def gpu_xid_errors(snap: Snapshot) -> Iterator[Finding | int]:
    """A GPU reported an Xid error (DCGM_FI_DEV_XID_ERRORS) in the last hour.

    Why it matters:
    Xids are the driver's error reports. Some are the job's own bug (13, 31), others mean the
    GPU is unusable until it is reset or the node rebooted (48 double-bit ECC, 79 fallen off the
    bus, 119/120 GSP): jobs on it crash or hang, and new pods keep landing on it. The DCGM gauge
    holds only the *last* Xid, so gputui counts an Xid as recent when the series changed in the
    window or appeared in it.

    Fix:
    Follow NVIDIA's action for the Xid: restart the job for application Xids; for fatal ones
    cordon and drain the node, then reset the GPU or reboot/replace the node. Repeats on the
    same GPU mean hardware: replace the node and report it.
    """
    facts = facts_for(snap, XID, "xid_changed", "xid_new", "xid_max", "xid_last")
    resolver = NodeResolver(snap)
    recent = {_key(s.labels) for s in facts.get("xid_changed") + facts.get("xid_new")}
    shown: dict[tuple[str, str, str], Sample] = {}
    for s in facts.get("xid_changed") + facts.get("xid_new"):
        shown.setdefault(GpuLabels.of(s.labels).key, s)
    # Newer exporters put each Xid in its own series (err_code label): collect codes per GPU.
    codes: dict[tuple[str, str, str], set[int]] = {}
    for s in facts.get("xid_max") + facts.get("xid_last"):
        if _key(s.labels) in recent and usable(s.value) and s.value > 0:
            codes.setdefault(GpuLabels.of(s.labels).key, set()).add(int(s.value))
    # dcgm-exporter's optional counter names the Xid in a label: exact when it is enabled.
    for s in facts.get("xid_count"):
        code = s.labels.get("xid", "")
        # Before 4.5.2-4.8.1 the exporter counted DCGM's blank value as an Xid (xid="9223372036854775792").
        if code.isdigit() and usable(float(code)):
            key = GpuLabels.of(s.labels).key
            shown.setdefault(key, s)
            codes.setdefault(key, set()).add(int(code))

    gpus_seen = gpus_by_node(facts.get("gpu_temp") or facts.get("gpu_util"), resolver)
    hit = gpus_by_node(shown.values(), resolver)
    for node in sorted(set(gpus_seen) | set(hit)):
        yield 1
        if node not in hit:
            continue
        ev, related = node_context(snap, node)
        per_gpu: list[tuple[GpuLabels, list[Xid]]] = []
        for gpu, s in hit[node]:
            xids = [lookup(c) for c in sorted(codes.get(gpu.key, ()))]
            if not xids:
                continue
            per_gpu.append((gpu, xids))
            ref = resolver.ref(gpu)
            ev.append(metric_evidence(ref, s, f"{gpu.describe()}: Xid seen within the last {in_words(XID_WINDOW)}",
                                      gpu.as_value(xids=[x.code for x in xids], result=round(s.value, 3))))
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
            related=pods_of(g for g, _x in per_gpu) + related,
        )
