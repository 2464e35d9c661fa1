"""Accelerators per instance type, for nodes that carry no GPU labels (managed node groups, old Karpenter).

Karpenter labels its nodes with `karpenter.k8s.aws/instance-gpu-count`, but nodes from EKS managed
node groups, self-managed groups or other provisioners often do not. Counts from the EC2 instance
type documentation; the AWS source (describe_instance_types) is authoritative when configured.
"""

from __future__ import annotations

import re

# family -> {size: count}; "*" is the default size count for the family.
_NVIDIA: dict[str, dict[str, int]] = {
    "g4dn": {"*": 1, "12xlarge": 4, "metal": 8},
    "g5": {"*": 1, "12xlarge": 4, "24xlarge": 4, "48xlarge": 8},
    "g5g": {"*": 1, "16xlarge": 2, "metal": 2},
    "g6": {"*": 1, "12xlarge": 4, "24xlarge": 4, "48xlarge": 8},
    "g6e": {"*": 1, "12xlarge": 4, "24xlarge": 4, "48xlarge": 8},
    "gr6": {"*": 1},
    "g6f": {"*": 1},
    "p3": {"2xlarge": 1, "8xlarge": 4, "16xlarge": 8},
    "p3dn": {"24xlarge": 8},
    "p4d": {"24xlarge": 8},
    "p4de": {"24xlarge": 8},
    "p5": {"4xlarge": 1, "48xlarge": 8},
    "p5e": {"48xlarge": 8},
    "p5en": {"48xlarge": 8},
    "p6-b200": {"48xlarge": 8},
    "p6e-gb200": {"36xlarge": 4},
}
_AMD: dict[str, dict[str, int]] = {"g4ad": {"*": 1, "8xlarge": 2, "16xlarge": 4}}
_NEURON: dict[str, dict[str, int]] = {
    "inf1": {"xlarge": 1, "2xlarge": 1, "6xlarge": 4, "24xlarge": 16},
    "inf2": {"xlarge": 1, "8xlarge": 1, "24xlarge": 6, "48xlarge": 12},
    "trn1": {"2xlarge": 1, "32xlarge": 16},
    "trn1n": {"32xlarge": 16},
    "trn2": {"48xlarge": 16},
}
GPU_FAMILIES = frozenset(_NVIDIA) | frozenset(_AMD)
NEURON_FAMILIES = frozenset(_NEURON)
_GCE = re.compile(r"^(a2|a3|a4|g2)-\w+-(\d+)g$")


def accelerators_for(instance_type: str) -> tuple[str, int] | None:
    """(resource name, count) the kubelet should advertise for this instance type, or None if unknown."""
    if not instance_type:
        return None
    m = _GCE.match(instance_type)
    if m:
        return ("nvidia.com/gpu", int(m.group(2)))
    family, _, size = instance_type.partition(".")
    for table, resource in ((_NVIDIA, "nvidia.com/gpu"), (_AMD, "amd.com/gpu"), (_NEURON, "aws.amazon.com/neuron")):
        sizes = table.get(family)
        if sizes is not None:
            n = sizes.get(size, sizes.get("*"))
            return (resource, n) if n else None
    return None


def family(instance_type: str) -> str:
    return instance_type.partition(".")[0]
