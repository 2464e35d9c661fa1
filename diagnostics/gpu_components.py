"""Which GPU component (device plugin, GPU Operator driver/validator) is missing or failing on a node, and why."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from diagnostics.matching import node_matches
from diagnostics.model import Evidence
from diagnostics.records import DaemonSet, Node, Pod, Taint, tolerates_all
from diagnostics.snapshot import Snapshot

# Names seen in real clusters: standalone Helm chart, GPU Operator, EKS add-on, GKE.
# Vendor-specific names only: EFA, SR-IOV or RDMA device plugins register no accelerators.
DEVICE_PLUGIN_HINTS = ("nvidia-device-plugin", "nvidia-gpu-device-plugin", "neuron-device-plugin",
                       "amdgpu-device-plugin", "amd-gpu-device-plugin")
OPERATOR_HINTS = ("nvidia-driver-daemonset", "nvidia-container-toolkit-daemonset",
                  "nvidia-operator-validator", "gpu-feature-discovery")


NOT_ACCELERATOR_PLUGINS = ("efa", "sriov", "rdma")
"""Device plugins that own network devices, not GPUs (aws-efa-k8s-device-plugin's image name included)."""


def _matches(ds: DaemonSet, hints: Iterable[str]) -> bool:
    name = ds.meta.name.lower()
    if any(x in name for x in NOT_ACCELERATOR_PLUGINS):
        return False
    app = (ds.meta.labels.get("app") or ds.meta.labels.get("app.kubernetes.io/name") or "").lower()
    images = " ".join(ds.images).lower()
    return any(h in name or h in app for h in hints) or ("k8s-device-plugin" in images)


def device_plugin_daemonsets(snap: Snapshot) -> list[DaemonSet]:
    # GPU Feature Discovery and the MPS control daemon ship in the k8s-device-plugin image but
    # register no resources (the MPS one runs only on nodes labelled nvidia.com/mps.capable=true).
    return [ds for ds in snap.daemonsets if _matches(ds, DEVICE_PLUGIN_HINTS)
            and not any(x in ds.meta.name.lower() for x in ("feature-discovery", "mps-control"))]


def operator_daemonsets(snap: Snapshot) -> list[DaemonSet]:
    plugins = {ds.ref for ds in device_plugin_daemonsets(snap)}
    return [ds for ds in snap.daemonsets if _matches(ds, OPERATOR_HINTS) and ds.ref not in plugins]


def _os_image(node: Node) -> str:
    status = node.obj.get("status")
    info = status.get("nodeInfo") if isinstance(status, Mapping) else None
    return str(info.get("osImage") or "") if isinstance(info, Mapping) else ""


def plugin_on_host(node: Node) -> str:
    """Where the NVIDIA device plugin is a host service, not a pod: "EKS Auto Mode", "Bottlerocket", or "".

    Bottlerocket's NVIDIA variants (and EKS Auto Mode) bake the plugin into the OS, so a
    missing device-plugin DaemonSet there is normal, and there is no pod to restart.
    """
    if node.labels.get("eks.amazonaws.com/compute-type") == "auto":
        return "EKS Auto Mode"
    if "bottlerocket" not in _os_image(node).lower() or _is_neuron(node):  # its NVIDIA variants only
        return ""
    return "Bottlerocket"


def _is_neuron(node: Node) -> bool:
    return (node.label("karpenter.k8s.aws/instance-accelerator-manufacturer") == "aws"
            or any(k.startswith("aws.amazon.com/neuron") for k in (*node.capacity, *node.allocatable))
            or node.instance_type.startswith(("inf", "trn")))


def host_evidence(node: Node, host: str, note: str) -> Evidence:
    """What `plugin_on_host` read to answer `host`."""
    if host == "EKS Auto Mode":
        return Evidence.field(node.ref, "metadata.labels[eks.amazonaws.com/compute-type]", "auto", note=note)
    return Evidence.field(node.ref, "status.nodeInfo.osImage", _os_image(node), note=note)


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


def device_plugin_diagnosis(snap: Snapshot, node: Node) -> tuple[str, list[Evidence], tuple[str, ...]]:
    """(one-line cause, evidence, commands) for a node that advertises no GPUs."""
    host = plugin_on_host(node)
    if host and not _plugin_pod_on(snap, node):
        return (f"its device plugin runs as a host service on {host} (no DaemonSet) and registered no GPUs "
                "(driver/NVML problem or its settings.kubelet-device-plugins.nvidia settings)",
                [host_evidence(node, host, "the device plugin runs on the host: there is no pod to fix; "
                                           "replace the node if the GPUs do not come back")],
                ("gputui debug node/" + node.name,))
    if not snap.status("daemonsets").state.usable:
        return ("device plugin state unknown (" + snap.status("daemonsets").reason() + ")", [], ())
    plugins = device_plugin_daemonsets(snap)
    operator = operator_daemonsets(snap)
    if not plugins and not operator:
        return ("no NVIDIA device plugin or GPU Operator DaemonSet in the cluster",
                [Evidence.absence(None, "DaemonSets matching nvidia-device-plugin / gpu-operator",
                                  note="nothing registers nvidia.com/gpu with the kubelet")],
                # The repo first (else "repo nvdp not found"); gfd.enabled labels the nodes the chart's
                # default affinity requires (nvidia.com/gpu.present / NFD's pci-10de), or it runs nowhere.
                ("helm repo add nvdp https://nvidia.github.io/k8s-device-plugin && helm repo update",
                 "helm upgrade --install nvdp nvdp/nvidia-device-plugin -n kube-system --set gfd.enabled=true "
                 "--set-json 'tolerations=[{\"operator\":\"Exists\"}]'"))
    ev: list[Evidence] = []
    causes: list[str] = []
    commands: list[str] = []
    pods_known = snap.status("pods").state.usable
    # When a device plugin DaemonSet exists it is the one that matters; GPU Operator components
    # (driver, toolkit, validator) are looked at only when there is no plugin to blame.
    for ds in plugins or operator:
        ref = ds.ref
        blocked = untolerated_taints(ds, node)
        selects = node_matches(ds.node_selector, ds.required_affinity, node.labels)
        pod = pod_of(snap, ds, node) if pods_known else None
        if pod is not None:
            bad = [c for c in pod.containers if not c.ready]
            if pod.phase != "Running" or bad:
                c = bad[0] if bad else None
                detail = (f"{c.reason or c.state}" + (f", {c.restart_count} restarts" if c.restart_count else "")
                          + (f", last exit {c.last_exit_code} {c.last_reason}".rstrip() if c.last_exit_code else "")
                          if c else pod.phase)
                causes.append(f"{ds.meta.name} pod {pod.name} is not ready ({detail})")
                ev.append(Evidence.field(pod.ref, "status.containerStatuses", detail,
                                         note=f"pod of DaemonSet {ds.meta.namespace}/{ds.meta.name} on this node"))
                commands.append(f"kubectl logs -n {pod.namespace} {pod.name} --all-containers --tail=50")
                if c and c.message:
                    ev.append(Evidence.field(pod.ref, "state.waiting.message", c.message[:300]))
            continue
        if not selects:  # a DaemonSet that never targets the node: its tolerations do not matter
            missing = {k: v for k, v in ds.node_selector.items() if node.labels.get(k) != v}
            causes.append(f"{ds.meta.name} nodeSelector/affinity does not match the node"
                          + (f" (needs {', '.join(f'{k}={v}' for k, v in missing.items())})" if missing else ""))
            ev.append(Evidence.field(ref, "spec.template.spec.nodeSelector", dict(ds.node_selector) or "affinity",
                                     note="node labels do not match"))
            commands.append(f"kubectl get node {node.name} --show-labels")
        elif blocked:
            causes.append(f"{ds.meta.name} does not tolerate taint {blocked[0]}")
            ev.append(Evidence.field(node.ref, "spec.taints", [str(t) for t in blocked],
                                     note=f"not tolerated by DaemonSet {ds.meta.namespace}/{ds.meta.name}"))
            ev.append(Evidence.field(ref, "spec.template.spec.tolerations",
                                     [_tol(t) for t in ds.tolerations] or "none"))
            toleration = {"key": blocked[0].key, "operator": "Exists", "effect": blocked[0].effect}
            # Appending to a list that does not exist fails ("doc is missing path"): create it then.
            op = ({"op": "add", "path": "/spec/template/spec/tolerations/-", "value": toleration} if ds.tolerations
                  else {"op": "add", "path": "/spec/template/spec/tolerations", "value": [toleration]})
            commands.append(f"kubectl -n {ds.meta.namespace} patch daemonset {ds.meta.name} --type=json "
                            f"-p '{json.dumps([op], separators=(',', ':'))}'")
        elif pods_known and not snap.status("pods").partial:
            causes.append(f"{ds.meta.name} should run here but has no pod on the node")
            ev.append(Evidence.absence(ref, f"pod of {ds.meta.name} on {node.name}",
                                       note=f"DaemonSet desired={ds.desired} ready={ds.ready}"))
            commands.append(f"kubectl -n {ds.meta.namespace} describe daemonset {ds.meta.name}")
    if not causes:
        return ("device plugin pod is running but registered no GPUs (driver/AMI or NVML problem)",
                ev, ("gputui debug node/" + node.name,))
    return (causes[0], ev, tuple(dict.fromkeys(commands)))


def _plugin_pod_on(snap: Snapshot, node: Node) -> bool:
    """A DaemonSet's device-plugin pod on the node (someone installed one there after all)."""
    if not snap.status("pods").state.usable:
        return False
    return any(pod_of(snap, ds, node) is not None for ds in device_plugin_daemonsets(snap))


def _tol(t: object) -> str:
    key = getattr(t, "key", "") or "*"
    op = getattr(t, "operator", "")
    val = getattr(t, "value", "")
    eff = getattr(t, "effect", "") or "*"
    return f"{key} {op} {val}:{eff}".replace("  ", " ")
