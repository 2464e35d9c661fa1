"""GPUs whose row remapping failed (DCGM_FI_DEV_ROW_REMAP_FAILURE): hardware to replace."""

from __future__ import annotations

from collections.abc import Iterator

from diagnostics.facts.gpu_findings import (
    debug_command,
    drain_commands,
    gpu_names,
    gpus_by_node,
    node_context,
    pods_of,
    replace_commands,
)
from diagnostics.facts.metric_facts import (
    ROW_REMAP_FAILURE,
    UNCORRECTABLE_REMAPPED_ROWS,
    GpuLabels,
    NodeResolver,
    absence_evidence,
    facts_for,
    metric_evidence,
)
from diagnostics.model import Finding, Remediation, Severity
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot


@check(code="GT706", slug="gpu-row-remap-failure", title="GPU memory row remapping works",
       severity=Severity.ERROR, requires=("prometheus",), optional=("nodes", "pods", "nodeclaims"))
def gpu_row_remap_failure(snap: Snapshot) -> Iterator[Finding | int]:
    """A GPU reports a row-remapping failure (DCGM_FI_DEV_ROW_REMAP_FAILURE = 1).

    Why it matters:
    Ampere and newer GPUs replace failing memory rows with spare ones. A failure means a bank
    ran out of spares (or the remap itself failed, Xid 64): the bad memory can no longer be
    retired, uncorrectable errors will keep crashing jobs, and NVIDIA treats the GPU as an RMA
    candidate.

    Fix:
    Take the node out of service: cordon, drain, and let Karpenter replace it (on EC2 a new
    instance lands on other hardware). On your own hardware, open an RMA with the output of
    `nvidia-smi -q -d ROW_REMAPPER`.
    """
    facts = facts_for(snap, ROW_REMAP_FAILURE, "row_remap_failure")
    resolver = NodeResolver(snap)
    uncorrectable = {GpuLabels.of(s.labels).key: s for s in facts.get("uncorrectable_remapped_rows")}
    for node, gpus in sorted(gpus_by_node(facts.get("row_remap_failure"), resolver).items()):
        yield 1
        bad = [(g, s) for g, s in gpus if s.value >= 1]
        if not bad:
            continue
        ref = resolver.ref(bad[0][0])
        ev, related = node_context(snap, node)
        for g, s in bad:
            ev.append(metric_evidence(ref, s, f"{g.describe()}: row remapping failed", g.as_value(failure=1)))
            rows = uncorrectable.get(g.key)
            if rows is not None:
                ev.append(metric_evidence(ref, rows, f"{g.describe()}: {rows.value:.0f} rows remapped for "
                                                     "uncorrectable errors"))
        ev += absence_evidence(facts, UNCORRECTABLE_REMAPPED_ROWS, ref, "how many rows were remapped is unknown")
        yield Finding(
            subject=ref,
            title=(f"{node}: row remapping failed on {gpu_names(g for g, _s in bad)} "
                   f"({bad[0][0].model or 'GPU'}): the GPU memory cannot retire bad rows - replace the node"),
            evidence=tuple(ev),
            remediation=Remediation(
                "Cordon and drain the node and replace it; the GPU is an RMA candidate and will keep failing jobs.",
                (debug_command(node, "nvidia-smi -q -d ROW_REMAPPER"),) + drain_commands(snap, node)
                + replace_commands(snap, node),
            ),
            related=pods_of(g for g, _s in bad) + related,
        )
