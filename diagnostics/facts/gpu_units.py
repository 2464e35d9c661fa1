"""Physical GPUs, MIG slices and shared (time-sliced / MPS) replicas on a node, counted apart; GPU model names.

A node's `nvidia.com/gpu` is not always a GPU: with the MIG `single` strategy it counts MIG
devices, with time-slicing or MPS it counts replicas (`nvidia.com/gpu.shared` when renamed), and
with the `mixed` strategy slices appear as `nvidia.com/mig-<profile>` beside whole GPUs
(k8s-device-plugin README "MIG strategies", "Shared Access to GPUs"; GFD labels
`nvidia.com/gpu.replicas`, `nvidia.com/mig.strategy`; GKE `cloud.google.com/gke-gpu-partition-size`,
`cloud.google.com/gke-max-shared-clients-per-gpu`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from diagnostics.facts.gpu_count import expected_gpus
from diagnostics.facts.pool_accelerators import accelerators_for
from diagnostics.records import Node, Resources

MIG_PREFIX = "nvidia.com/mig-"
SHARED = "nvidia.com/gpu.shared"


def _num(raw: str | None) -> float:
    try:
        return float(raw) if raw else 0.0
    except ValueError:
        return 0.0


@dataclass(frozen=True, slots=True)
class GpuUnits:
    """What a node's accelerator resources are made of."""

    physical: float
    """Whole GPUs (or accelerator devices) in the machine, whatever they are cut into."""
    mig: Mapping[str, float] = field(default_factory=dict)
    """MIG slices by resource name (`nvidia.com/mig-1g.10gb`, or `nvidia.com/gpu` under the single strategy)."""
    shared: float = 0.0
    """Time-slicing / MPS replicas advertised (of `nvidia.com/gpu` or `nvidia.com/gpu.shared`)."""
    whole: float = 0.0
    """GPUs advertised as whole devices."""

    @property
    def slices(self) -> float:
        return sum(self.mig.values())

    def text(self) -> str:
        """`1 GPU · 7 MIG`, `4 GPU · 16 shared`, `8 GPU`; '' when nothing is known."""
        if not self.physical and not self.slices and not self.shared:
            return ""
        parts = [f"{self.physical:g} GPU"]
        if self.slices:
            parts.append(f"{self.slices:g} MIG")
        if self.shared:
            parts.append(f"{self.shared:g} shared")
        return " · ".join(parts)

    @property
    def split(self) -> bool:
        """Slices or replicas are advertised: GPU counts of the resources are not GPU counts."""
        return bool(self.slices or self.shared)


def physical_gpus(node: Node) -> float:
    """Whole GPUs in the machine, from the labels that count them (not from the advertised resources).

    For NVIDIA nodes this is `gpu_count.expected_gpus`, the count nvidia-smi must list, so a node row
    and the debug pod's verdict never disagree; other vendors' accelerators follow.
    """
    labels = node.labels
    nvidia = expected_gpus(labels)
    if nvidia is not None:
        return float(nvidia.count)
    n = _num(labels.get("karpenter.k8s.aws/instance-accelerator-count"))
    if n:
        return n
    known = accelerators_for(node.instance_type)
    return float(known[1]) if known is not None else 0.0


def gpu_units(node: Node, resources: Resources | None = None) -> GpuUnits:
    """Units of `resources` (the node's capacity by default)."""
    res = node.capacity if resources is None else resources
    labels = node.labels
    mig = {k: v for k, v in res.items() if k.startswith(MIG_PREFIX) and v > 0}
    gpu = res.get("nvidia.com/gpu", 0.0)
    shared = res.get(SHARED, 0.0)
    replicas = _num(labels.get("nvidia.com/gpu.replicas")) or _num(labels.get("cloud.google.com/gke-max-shared-clients-per-gpu"))
    single_mig = (labels.get("nvidia.com/mig.strategy") == "single" and "-MIG-" in labels.get("nvidia.com/gpu.product", "")) \
        or bool(labels.get("cloud.google.com/gke-gpu-partition-size"))
    physical = physical_gpus(node)
    whole = 0.0
    if single_mig and gpu:
        mig = {**mig, "nvidia.com/gpu": gpu}
    elif replicas > 1 and gpu:
        shared += gpu
    else:
        whole = gpu
    if not physical:
        physical = whole + (shared / replicas if replicas > 1 else 0.0)
    return GpuUnits(physical, mig, shared, whole)


_MODEL = re.compile(r"(GB\d{3}|[ABHL]\d{2,3}[A-Z]?|L4(?!\d)|T4|V100|K80|M60|P100|P4|RTX[- ]?PRO[- ]?\d{4}|RTX[- ]?\d{4}|"
                    r"INFERENTIA2?|TRAINIUM2?|MI\d{3}[A-Z]?|RADEON[- ]PRO[- ]V\d{3}|GAUDI\d?)", re.IGNORECASE)


def model_name(raw: str) -> str:
    """One name for a GPU model however a label spells it: `h100`, `NVIDIA-H100-80GB-HBM3`, `nvidia-h100-80gb`
    -> `H100`; `Tesla-T4` / `nvidia-tesla-t4` -> `T4`; unknown spellings are returned as they are."""
    m = _MODEL.search(raw.replace("_", "-"))
    if not m:
        return raw
    name = m.group(1).upper().replace(" ", "-")
    return {"INFERENTIA": "Inferentia", "INFERENTIA2": "Inferentia2", "TRAINIUM": "Trainium",
            "TRAINIUM2": "Trainium2"}.get(name, name)


def node_model(node: Node) -> str:
    """The node's GPU model, normalised (`H100`), from GFD, Karpenter, GKE or AMD's labeller."""
    labels = node.labels
    raw = (labels.get("nvidia.com/gpu.product") or labels.get("karpenter.k8s.aws/instance-gpu-name")
           or labels.get("cloud.google.com/gke-accelerator") or labels.get("karpenter.k8s.aws/instance-accelerator-name")
           or labels.get("amd.com/gpu.product-name") or "")
    return model_name(raw) if raw else ""
