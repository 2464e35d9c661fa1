"""GPUs retransmitting on PCIe (DCGM_FI_DEV_PCIE_REPLAY_COUNTER rate): a failing link."""

from __future__ import annotations

from collections.abc import Iterator

from diagnostics.facts.gpu_findings import debug_command, drain_commands, gpu_names, gpus_by_node, node_context, pods_of
from diagnostics.facts.metric_facts import PCIE_REPLAY, PCIE_WINDOW, NodeResolver, facts_for, in_words, metric_evidence
from diagnostics.model import Finding, Remediation, Severity
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot

REPLAYS_PER_MINUTE = 8.0
"""Sustained PCIe replays per minute (averaged over the window) above which the link is called failing."""


@check(code="GT707", slug="gpu-pcie-replays", title="GPU PCIe links are clean",
       severity=Severity.WARNING, requires=("prometheus",), optional=("nodes", "pods", "nodeclaims"))
def gpu_pcie_replays(snap: Snapshot) -> Iterator[Finding | int]:
    """A GPU keeps replaying PCIe transfers (rate of DCGM_FI_DEV_PCIE_REPLAY_COUNTER over 15 minutes).

    Why it matters:
    A replay is a PCIe packet resent after a link error. A steady stream means a marginal link
    (riser, slot, signal integrity): host-GPU transfers slow down, and it often precedes the GPU
    falling off the bus (Xid 79).

    Fix:
    Check the link in `nvidia-smi -q -d PCIE` (generation and width below the maximum). Move the
    workload off the node and replace it; on your own hardware, reseat or replace the riser/GPU.
    """
    facts = facts_for(snap, PCIE_REPLAY, "pcie_replay_rate")
    resolver = NodeResolver(snap)
    window = in_words(PCIE_WINDOW)
    for node, gpus in sorted(gpus_by_node(facts.get("pcie_replay_rate"), resolver).items()):
        yield 1
        bad = [(g, s) for g, s in gpus if s.value * 60 > REPLAYS_PER_MINUTE]
        if not bad:
            continue
        ref = resolver.ref(bad[0][0])
        ev, related = node_context(snap, node)
        for g, s in bad:
            ev.append(metric_evidence(ref, s, f"{g.describe()}: {s.value * 60:.1f} PCIe replays/min over "
                                              f"the last {window} (threshold {REPLAYS_PER_MINUTE:g}/min)",
                                      g.as_value(replays_per_minute=round(s.value * 60, 1))))
        worst = max(s.value for _g, s in bad) * 60
        yield Finding(
            subject=ref,
            title=(f"{node}: PCIe replays on {gpu_names(g for g, _s in bad)} at up to {worst:.0f}/min: "
                   "the GPU's PCIe link is failing"),
            evidence=tuple(ev),
            remediation=Remediation(
                "Check the PCIe link generation and width; move workloads off this node and replace it before "
                "the GPU falls off the bus.",
                (debug_command(node, "nvidia-smi -q -d PCIE"),) + drain_commands(snap, node),
            ),
            related=pods_of(g for g, _s in bad) + related,
        )
