"""GPUs running hot (DCGM_FI_DEV_GPU_TEMP averaged over 5 minutes), thresholds as parameters."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from diagnostics.facts.gpu_findings import debug_command, gpu_names, gpus_by_node, node_context, pods_of
from diagnostics.facts.metric_facts import GPU_TEMP, NodeResolver, facts_for, metric_evidence
from diagnostics.model import Finding, Remediation, Severity
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot


@dataclass(frozen=True, slots=True)
class TemperatureThresholds:
    warn_c: float = 85.0
    """Where datacenter GPUs start to approach their slowdown temperature."""
    critical_c: float = 92.0
    """Around the hardware slowdown/shutdown range of H100/A100-class GPUs."""


THRESHOLDS = TemperatureThresholds()


@check(code="GT708", slug="gpu-temperature", title="GPUs run at safe temperatures",
       severity=Severity.WARNING, requires=("prometheus",), optional=("nodes", "pods", "nodeclaims"))
def gpu_temperature(snap: Snapshot) -> Iterator[Finding | int]:
    """A GPU's temperature (DCGM_FI_DEV_GPU_TEMP, 5-minute average) is at or above 85 °C (critical at 92 °C).

    Why it matters:
    Hot GPUs throttle their clocks (jobs slow down without any error) and, past the shutdown
    temperature, stop. One hot GPU among cool ones on the same node points at its cooling.

    Fix:
    Look at `nvidia-smi -q -d TEMPERATURE,PERFORMANCE` for thermal slowdown. On cloud instances,
    replace the node and report it; on your own hardware, check airflow, fans and the data-centre
    inlet temperature.
    """
    yield from evaluate(snap, THRESHOLDS)


def evaluate(snap: Snapshot, limits: TemperatureThresholds) -> Iterator[Finding | int]:
    """The check with explicit thresholds (tests and other callers pass their own)."""
    facts = facts_for(snap, GPU_TEMP, "gpu_temp")
    resolver = NodeResolver(snap)
    for node, gpus in sorted(gpus_by_node(facts.get("gpu_temp"), resolver).items()):
        yield 1
        hot = [(g, s) for g, s in gpus if s.value >= limits.warn_c]
        if not hot:
            continue
        ref = resolver.ref(hot[0][0])
        ev, related = node_context(snap, node)
        for g, s in hot:
            ev.append(metric_evidence(ref, s, f"{g.describe()}: {s.value:.0f} °C (warn at {limits.warn_c:g}, "
                                              f"critical at {limits.critical_c:g})",
                                      g.as_value(temperature_c=round(s.value, 1))))
        hottest = max(s.value for _g, s in hot)
        critical = hottest >= limits.critical_c
        yield Finding(
            subject=ref,
            title=(f"{node}: {gpu_names(g for g, _s in hot)} at up to {hottest:.0f} °C"
                   f"{' - near thermal shutdown' if critical else ' - likely thermal throttling'}"),
            evidence=tuple(ev),
            remediation=Remediation(
                "Confirm thermal slowdown in nvidia-smi; replace the node (cloud) or fix its cooling (own hardware).",
                (debug_command(node, "nvidia-smi -q -d TEMPERATURE,PERFORMANCE"),),
            ),
            severity=Severity.CRITICAL if critical else None,
            related=pods_of(g for g, _s in hot) + related,
        )
