"""GPU DaemonSets and host-plugin facts shared by the stack model (accelerator_stack), the checks and bundles."""

from __future__ import annotations

import re
from collections.abc import Iterable

from diagnostics.model import Evidence
from diagnostics.records import DaemonSet, Node, Pod, Taint, tolerates_all
from diagnostics.snapshot import Snapshot

# Names seen in real clusters: standalone Helm chart, GPU Operator, EKS add-on, GKE.
# Vendor-specific names only: EFA, SR-IOV or RDMA device plugins register no accelerators.
DEVICE_PLUGIN_HINTS = ("nvidia-device-plugin", "nvidia-gpu-device-plugin", "neuron-device-plugin",
                       "amdgpu-device-plugin", "amd-gpu-device-plugin")
OPERATOR_HINTS = ("nvidia-driver-daemonset", "nvidia-container-toolkit-daemonset",
                  "nvidia-operator-validator", "gpu-feature-discovery",
                  "nvidia-gpu-driver-", "nvidia-vgpu-driver-")  # NVIDIADriver CR DaemonSets (internal/state/driver.go)


NOT_ACCELERATOR_PLUGINS = ("efa", "sriov", "rdma")
"""Device plugins that own network devices, not GPUs (aws-efa-k8s-device-plugin's image name included)."""


def network_plugin(name: str) -> bool:
    """A network device plugin's name (aws-efa-k8s-device-plugin, kube-sriov-device-plugin, rdma-shared-dp-ds), by
    whole words: "default" holds "efa", and the GPU Operator's NVIDIADriver CR `default` makes
    nvidia-gpu-driver-default-<os>, the AMD GPU Operator's DeviceConfig `default` makes default-device-plugin."""
    return any(w in NOT_ACCELERATOR_PLUGINS for w in re.split(r"[-_./:\s]", name.lower()))


def _matches(ds: DaemonSet, hints: Iterable[str]) -> bool:
    name = ds.meta.name.lower()
    if network_plugin(name):
        return False
    app = (ds.meta.labels.get("app") or ds.meta.labels.get("app.kubernetes.io/name") or "").lower()
    images = " ".join(ds.images).lower()
    return any(h in name or h in app for h in hints) or ("k8s-device-plugin" in images)


def device_plugin_daemonsets(snap: Snapshot) -> list[DaemonSet]:
    # GPU Feature Discovery and the MPS control daemon ship in the k8s-device-plugin image but
    # register no resources (the MPS one runs only on nodes labelled nvidia.com/mps.capable=true).
    # The AMD node labeller ships in the rocm/k8s-device-plugin image (tag labeller-*) and registers nothing either.
    return [ds for ds in snap.daemonsets if _matches(ds, DEVICE_PLUGIN_HINTS)
            and not any(x in ds.meta.name.lower() for x in ("feature-discovery", "mps-control", "labeller"))]


def operator_daemonsets(snap: Snapshot) -> list[DaemonSet]:
    plugins = {ds.ref for ds in device_plugin_daemonsets(snap)}
    return [ds for ds in snap.daemonsets if _matches(ds, OPERATOR_HINTS) and ds.ref not in plugins]


def os_image(node: Node) -> str:
    return node.os_image


def plugin_on_host(node: Node) -> str:
    """Where the NVIDIA device plugin is a host service, not a pod: "EKS Auto Mode", "Bottlerocket", or "".

    Bottlerocket's NVIDIA variants (and EKS Auto Mode) bake the plugin into the OS, so a
    missing device-plugin DaemonSet there is normal, and there is no pod to restart.
    """
    if node.labels.get("eks.amazonaws.com/compute-type") == "auto":
        return "EKS Auto Mode"
    if "bottlerocket" not in os_image(node).lower() or _is_neuron(node):  # its NVIDIA variants only
        return ""
    variant = bottlerocket_variant(node)
    return "Bottlerocket" if not variant or "nvidia" in variant else ""


def bottlerocket_variant(node: Node) -> str:
    """`aws-k8s-1.34-nvidia` from the osImage `Bottlerocket OS 1.47.0 (aws-k8s-1.34-nvidia)` (os-release
    PRETTY_NAME); '' when the node does not run Bottlerocket or its osImage names no variant."""
    m = re.match(r"bottlerocket os \S+ \(([^)]+)\)", os_image(node).strip().lower())
    return m.group(1) if m else ""


def _is_neuron(node: Node) -> bool:
    return (node.label("karpenter.k8s.aws/instance-accelerator-manufacturer") == "aws"
            or any(k.startswith("aws.amazon.com/neuron") for k in (*node.capacity, *node.allocatable))
            or node.instance_type.startswith(("inf", "trn")))


def host_evidence(node: Node, host: str, note: str) -> Evidence:
    """What `plugin_on_host` read to answer `host`."""
    if host == "EKS Auto Mode":
        return Evidence.field(node.ref, "metadata.labels[eks.amazonaws.com/compute-type]", "auto", note=note)
    return Evidence.field(node.ref, "status.nodeInfo.osImage", os_image(node), note=note)


def untolerated_taints(ds: DaemonSet, node: Node) -> list[Taint]:
    # DaemonSet pods tolerate the node-lifecycle taints automatically; only NoSchedule/NoExecute block.
    auto = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "node.kubernetes.io/disk-pressure",
            "node.kubernetes.io/memory-pressure", "node.kubernetes.io/pid-pressure",
            "node.kubernetes.io/unschedulable", "node.kubernetes.io/network-unavailable")
    return [t for t in node.taints
            if t.effect in ("NoSchedule", "NoExecute") and t.key not in auto and not tolerates_all(ds.tolerations, t)]


def pod_of(snap: Snapshot, ds: DaemonSet, node: Node) -> Pod | None:
    for p in snap.index.pods_by_node.get(node.name, ()):
        if p.meta.namespace == ds.meta.namespace and any(
                o.get("kind") == "DaemonSet" and o.get("name") == ds.meta.name for o in p.meta.owners):
            return p
    return None
