"""How many physical GPUs a node has: what nvidia-smi on it must list for a verdict to be complete.

One answer for the debug pod (`gputui debug`, the TUI) and for GT801, so the two never disagree.
`status.capacity` is no measure: time-slicing multiplies it and MIG replaces it, and a device plugin
that lost a GPU may already have lowered it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from diagnostics.facts.pool_accelerators import accelerators_for

COUNT_LABELS = ("karpenter.k8s.aws/instance-gpu-count", "cloud.google.com/gke-accelerator-count",
                "nvidia.com/gpu.count")
"""Labels that count physical GPUs (Karpenter's instance type, GKE, GPU Feature Discovery)."""
INSTANCE_TYPE = "node.kubernetes.io/instance-type"


@dataclass(frozen=True, slots=True)
class ExpectedGpus:
    """The count and where it was read, as an evidence path (`metadata.labels[...]`)."""

    count: int
    source: str


def _int(value: object) -> int | None:
    try:
        n = int(str(value))
    except (TypeError, ValueError):
        return None
    return n if n > 0 else None


def count_labels(labels: Mapping[str, str]) -> tuple[str, ...]:
    """COUNT_LABELS that count physical GPUs on this node: under the MIG "single" strategy GPU Feature
    Discovery's nvidia.com/gpu.count counts MIG devices (gpu.product `A100-SXM4-40GB-MIG-1g.5gb`)."""
    if labels.get("nvidia.com/mig.strategy") == "single" or "-MIG-" in labels.get("nvidia.com/gpu.product", ""):
        return COUNT_LABELS[:-1]
    return COUNT_LABELS


def expected_gpus(labels: Mapping[str, str]) -> ExpectedGpus | None:
    """From the count labels, else the instance type's known NVIDIA GPU count; None when nothing says."""
    for key in count_labels(labels):
        n = _int(labels.get(key))
        if n:
            return ExpectedGpus(n, f"metadata.labels[{key}]")
    instance_type = labels.get(INSTANCE_TYPE) or labels.get("beta.kubernetes.io/instance-type") or ""
    known = accelerators_for(instance_type) if instance_type else None
    if known is not None and known[0] == "nvidia.com/gpu" and known[1] > 0:
        return ExpectedGpus(int(known[1]), f"instance type {instance_type}")
    return None
