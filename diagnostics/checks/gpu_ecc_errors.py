"""GPUs with uncorrectable (double-bit) volatile ECC errors since the driver loaded (DCGM)."""

from __future__ import annotations

from collections.abc import Iterator

from diagnostics.facts.gpu_findings import debug_command, drain_commands, gpu_names, gpus_by_node, node_context, pods_of
from diagnostics.facts.metric_facts import ECC_DBE, XID_WINDOW, GpuLabels, NodeResolver, facts_for, in_words, metric_evidence
from diagnostics.model import Finding, Remediation, Severity
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot


@check(code="GT705", slug="gpu-ecc-errors", title="No uncorrectable ECC errors on GPUs",
       severity=Severity.ERROR, requires=("prometheus",), optional=("nodes", "pods", "nodeclaims"))
def gpu_ecc_errors(snap: Snapshot) -> Iterator[Finding | int]:
    """A GPU counted uncorrectable (double-bit) ECC errors since its driver loaded (DCGM_FI_DEV_ECC_DBE_VOL_TOTAL).

    Why it matters:
    An uncorrectable memory error kills the process that touched the memory (Xid 48/94/95) and
    can corrupt results silently before that. The bad row stays in use until the GPU is reset,
    which activates row remapping (Ampere+) or page retirement (older GPUs). dcgm-exporter ships
    with the ECC counters commented out, so without a custom counters CSV this check is skipped
    rather than reporting the GPUs healthy.

    Fix:
    Drain the node and reset the GPU (or reboot/replace the node) so the bad memory is remapped;
    check `nvidia-smi -q -d ECC,ROW_REMAPPER`. If errors come back on the same GPU, replace the
    node and report the hardware.
    """
    facts = facts_for(snap, ECC_DBE, "ecc_dbe")
    resolver = NodeResolver(snap)
    new = {GpuLabels.of(s.labels).key: s for s in facts.get("ecc_dbe_new")}
    for node, gpus in sorted(gpus_by_node(facts.get("ecc_dbe"), resolver).items()):
        yield 1
        bad = [(g, s) for g, s in gpus if s.value > 0]
        if not bad:
            continue
        ref = resolver.ref(bad[0][0])
        ev, related = node_context(snap, node)
        fresh = 0
        for g, s in bad:
            grew = new.get(g.key)
            fresh += round(grew.value) if grew is not None else 0
            ev.append(metric_evidence(ref, s, f"{g.describe()}: {s.value:.0f} uncorrectable ECC errors since the "
                                              "driver loaded", g.as_value(dbe_volatile=int(s.value))))
            if grew is not None:
                ev.append(metric_evidence(ref, grew, f"{g.describe()}: +{grew.value:.0f} in the last "
                                                         f"{in_words(XID_WINDOW)}"))
        total = sum(int(s.value) for _g, s in bad)
        when = f" ({fresh} in the last {in_words(XID_WINDOW)})" if fresh else ""
        yield Finding(
            subject=ref,
            title=(f"{node}: {gpu_names(g for g, _s in bad)} had {total} uncorrectable ECC "
                   f"error{'s' if total != 1 else ''} since the driver loaded{when}: reset the GPU to remap the "
                   "bad memory"),
            evidence=tuple(ev),
            remediation=Remediation(
                "Drain the node and reset the GPU (or replace the node) so the failing memory rows are remapped; "
                "if uncorrectable errors return on the same GPU, the GPU needs replacing.",
                (debug_command(node, "nvidia-smi -q -d ECC,ROW_REMAPPER"),) + drain_commands(snap, node)
                + (debug_command(node, f"nvidia-smi -r -i {bad[0][0].index or 0}"),),
            ),
            related=pods_of(g for g, _s in bad) + related,
        )
