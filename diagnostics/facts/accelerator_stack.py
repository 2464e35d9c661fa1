"""The accelerator stack on one node: vendor, resources, who provides them, and the first layer that is broken.

A node's GPUs reach the scheduler through a chain of components, and only the first broken link
is a cause: later links wait on it and show symptoms (`PodInitializing`, `waiting for nvidia
container stack to be setup`). Which chain applies depends on the vendor (NVIDIA, AWS Neuron,
AMD) and the provider (GPU Operator, standalone device plugin, GKE's managed plugin, a plugin
baked into the OS, a DRA driver). Names, labels and orders are the upstream ones (GPU Operator
`controllers/state_manager.go` and `assets/state-*`, GoogleCloudPlatform/container-engine-accelerators,
aws-neuron/neuron-helm-charts, ROCm/k8s-device-plugin, kubernetes-sigs/dra-driver-nvidia-gpu).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from diagnostics.facts.gpu_components import (bottlerocket_variant, host_evidence, network_plugin, os_image, plugin_on_host,
                                        pod_of, untolerated_taints)
from diagnostics.facts.matching import node_matches
from diagnostics.model import Evidence, EvidenceKind
from diagnostics.records import ContainerState, DaemonSet, Event, Node, Pod, Taint, accelerator_total
from diagnostics.snapshot import Snapshot, node_should_have_gpus
from diagnostics.timeutil import human_age

NVIDIA, NEURON, AMD = "nvidia", "neuron", "amd"
VENDOR_NAMES = {NVIDIA: "NVIDIA", NEURON: "AWS Neuron", AMD: "AMD"}

STARTUP_ALLOWANCE = 15 * 60.0
"""How long a new GPU node may take to advertise its accelerators: cluster-autoscaler's
`--max-node-startup-time` (15m, "GPU can take up to 15 minutes to become allocatable") and
Karpenter's 15-minute registration TTL."""
OPERATOR_DRIVER_ALLOWANCE = 60 + 120 * 10.0 + 60
"""The GPU Operator driver pod's startup probe: 60 s initial delay + 120 failures x 10 s (~21 min)
before the kubelet restarts a driver that is still compiling (`assets/state-driver/0500_daemonset.yaml`)."""


@dataclass(frozen=True, slots=True)
class Layer:
    """One component of a stack: the DaemonSets that implement it, in dependency order."""

    name: str
    """What a human calls it: "driver", "container toolkit", "device plugin" ..."""
    names: tuple[str, ...]
    """DaemonSet name prefixes (or exact names) that implement it."""
    deploy_label: str = ""
    """GPU Operator gate label (`nvidia.com/gpu.deploy.<x>`), "" outside the operator."""
    registers: bool = False
    """This layer registers the accelerators with the kubelet (the device plugin)."""
    images: tuple[str, ...] = ()
    """Image repositories that implement it whatever the DaemonSet is called (an operator names it after its CR)."""


OPERATOR_LAYERS = (
    # ClusterPolicy: nvidia-driver-daemonset[-<kernel>-<os>]; NVIDIADriver CRs: nvidia-<gpu|vgpu>-driver-<cr>-<os>,
    # vgpu-host-manager: nvidia-vgpu-manager-<cr>-<os> (gpu-operator internal/state/driver.go getDriverName).
    Layer("driver", ("nvidia-driver-daemonset", "nvidia-gpu-driver-", "nvidia-vgpu-driver-", "nvidia-vgpu-manager-"),
          "nvidia.com/gpu.deploy.driver"),
    Layer("container toolkit", ("nvidia-container-toolkit-daemonset",), "nvidia.com/gpu.deploy.container-toolkit"),
    Layer("operator validator", ("nvidia-operator-validator",), "nvidia.com/gpu.deploy.operator-validator"),
    Layer("device plugin", ("nvidia-device-plugin-daemonset",), "nvidia.com/gpu.deploy.device-plugin", True),
)
"""The operator's states up to the device plugin (GFD, DCGM exporter and the MIG manager come after it
and do not stop GPUs from being advertised)."""
STANDALONE_LAYERS = (Layer("device plugin", ("nvidia-device-plugin",), registers=True),)
GKE_LAYERS = (
    Layer("driver installer", ("nvidia-driver-installer",)),
    Layer("device plugin", ("nvidia-gpu-device-plugin",), registers=True),
)
NEURON_LAYERS = (Layer("device plugin", ("neuron-device-plugin",), registers=True),)
AMD_LAYERS = (Layer("device plugin", ("amdgpu-device-plugin", "amd-gpu-device-plugin"), registers=True,
                    images=("rocm/k8s-device-plugin",)),)
"""ROCm/k8s-device-plugin's manifests name it amdgpu-device-plugin-daemonset; the AMD GPU Operator names it
`<DeviceConfig>-device-plugin` (ROCm/gpu-operator internal/plugin/plugin.go), same image. The node labeller ships
in that image too (tag labeller-*) and registers nothing."""
DRA_LAYERS = (Layer("DRA kubelet plugin", ("nvidia-dra-driver-gpu-kubelet-plugin", "dra-driver-nvidia-gpu-kubelet-plugin",
                                           "nvidia-dra-driver-kubelet-plugin"),
                    registers=True),)
"""The Helm chart's DaemonSet (nvidia-dra-driver-gpu, renamed dra-driver-nvidia-gpu) and the GPU Operator's own
(GPUCluster CR: nvidia-dra-driver-kubelet-plugin, gpu-operator internal/state/dra_driver.go). Not by image: the
ComputeDomain daemons' DaemonSets run the same image and publish no GPUs."""

_NOT_GPU = ("mps-control", "feature-discovery", "labeller")
"""Operands that register no accelerators (network device plugins are `network_plugin`)."""


@dataclass(frozen=True, slots=True)
class Stack:
    """How accelerators reach the scheduler on one node."""

    vendor: str
    """nvidia | neuron | amd."""
    provider: str
    """gpu-operator | device-plugin | gke | host | dra | none."""
    platform: str
    """eks | gke | other (from the providerID and labels)."""
    resource: str
    """The extended resource its pods request (`nvidia.com/gpu`, `aws.amazon.com/neuron`, `amd.com/gpu`)."""
    layers: tuple[Layer, ...]
    host: str = ""
    """Where the plugin is part of the OS (Bottlerocket, EKS Auto Mode): no DaemonSet is expected."""

    @property
    def vendor_name(self) -> str:
        return VENDOR_NAMES.get(self.vendor, self.vendor)

    @property
    def describe(self) -> str:
        who = {"gpu-operator": "GPU Operator", "device-plugin": f"{self.vendor_name} device plugin",
               "gke": "GKE GPU driver installer + device plugin", "host": f"device plugin built into {self.host}",
               "dra": "NVIDIA DRA driver", "none": "no device plugin installed"}[self.provider]
        return f"{self.resource} via {who}"

    @property
    def allowance(self) -> float:
        return OPERATOR_DRIVER_ALLOWANCE if self.provider == "gpu-operator" else STARTUP_ALLOWANCE


def node_vendor(node: Node) -> str:
    """NVIDIA unless the node's labels, resources or instance type say AWS Neuron or AMD."""
    labels = node.labels
    keys = (*node.capacity, *node.allocatable)
    if (labels.get("karpenter.k8s.aws/instance-accelerator-manufacturer") == "aws"
            or any(k.startswith("aws.amazon.com/neuron") for k in keys)
            or node.instance_type.startswith(("inf1.", "inf2.", "trn1.", "trn1n.", "trn2.", "trn2u."))):
        return NEURON
    if (labels.get("karpenter.k8s.aws/instance-gpu-manufacturer") == "amd"
            or any(k.startswith("amd.com/") for k in keys)
            or labels.get("feature.node.kubernetes.io/amd-gpu") == "true"
            or any(k.startswith("amd.com/gpu.") for k in labels)
            or node.instance_type.startswith("g4ad.")):
        return AMD
    return NVIDIA


def node_platform(node: Node) -> str:
    if node.provider_id.startswith("gce://") or "cloud.google.com/gke-nodepool" in node.labels:
        return "gke"
    if node.provider_id.startswith("aws://") or "eks.amazonaws.com/nodegroup" in node.labels:
        return "eks"
    return "other"


def _ds_named(snap: Snapshot, layer: Layer) -> list[DaemonSet]:
    out = []
    for ds in snap.daemonsets:
        name = ds.meta.name.lower()
        if any(x in name for x in _NOT_GPU) or network_plugin(name):
            continue
        if any(name == n or name.startswith(n) or (n.endswith("-") and n in name) or name.endswith("-" + n)
               for n in layer.names):
            out.append(ds)
        elif layer.images and any(_repository(i).endswith(layer.images) for i in ds.images):
            out.append(ds)
    return out


def _repository(image: str) -> str:
    """`registry:5000/rocm/k8s-device-plugin` from `registry:5000/rocm/k8s-device-plugin:latest` (or `@sha256:...`)."""
    repo = image.lower().split("@", 1)[0]
    head, _, tag = repo.rpartition(":")
    return head if head and "/" not in tag else repo


def _host_plugin(node: Node, vendor: str) -> str:
    """Bottlerocket's NVIDIA variants and EKS Auto Mode run the NVIDIA device plugin on the host; EKS Auto Mode runs
    the Neuron one there too ('includes the drivers and device plugins ... NVIDIA and Amazon Neuron', AWS docs)."""
    host = plugin_on_host(node)
    return host if vendor == NVIDIA or (vendor == NEURON and host == "EKS Auto Mode") else ""


def _selects(ds: DaemonSet, node: Node) -> bool:
    return node_matches(ds.node_selector, ds.required_affinity, node.labels)


def node_stack(snap: Snapshot, node: Node) -> Stack:
    """The stack that should make this node's accelerators schedulable."""
    vendor = node_vendor(node)
    platform = node_platform(node)
    if vendor == NEURON:
        host = _host_plugin(node, vendor)
        if host:
            return Stack(vendor, "host", platform, "aws.amazon.com/neuron", (), host=host)
        return Stack(vendor, "device-plugin" if _any(snap, NEURON_LAYERS) else "none", platform,
                     "aws.amazon.com/neuron", NEURON_LAYERS)
    if vendor == AMD:
        return Stack(vendor, "device-plugin" if _any(snap, AMD_LAYERS) else "none", platform, "amd.com/gpu", AMD_LAYERS)
    dra = [ds for ds in _ds_named(snap, DRA_LAYERS[0]) if _selects(ds, node)]
    if dra or node.labels.get("cloud.google.com/gke-gpu-dra-driver") == "true" \
            or node.labels.get("nvidia.com/gpu.deploy.dra-driver") == "true":
        return Stack(vendor, "dra", platform, "gpu.nvidia.com (DRA)", DRA_LAYERS)
    host = _host_plugin(node, vendor)
    if host:
        return Stack(vendor, "host", platform, "nvidia.com/gpu", (), host=host)
    if platform == "gke" and node.labels.get(GKE_NO_PLUGIN) != "true":
        # Managed drivers are installed by an init container of the plugin pod; a node without
        # `cloud.google.com/gke-gpu-driver-version` relies on the nvidia-driver-installer DaemonSet.
        layers = GKE_LAYERS if not node.labels.get(GKE_DRIVER_LABEL) else GKE_LAYERS[1:]
        return Stack(vendor, "gke", platform, "nvidia.com/gpu", layers)
    if any(_ds_named(snap, layer) for layer in OPERATOR_LAYERS[:3]):
        return Stack(vendor, "gpu-operator", platform, "nvidia.com/gpu", OPERATOR_LAYERS)
    if _any(snap, STANDALONE_LAYERS):
        return Stack(vendor, "device-plugin", platform, "nvidia.com/gpu", STANDALONE_LAYERS)
    return Stack(vendor, "none", platform, "nvidia.com/gpu", STANDALONE_LAYERS)


def _any(snap: Snapshot, layers: tuple[Layer, ...]) -> bool:
    return any(_ds_named(snap, layer) for layer in layers)


# --- the first broken layer ------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Why a node's accelerators are not advertised: the first broken layer and how to fix it."""

    stack: Stack
    layer: str
    cause: str
    evidence: tuple[Evidence, ...]
    commands: tuple[str, ...]
    fix: str
    progressing: bool = False
    """The layer is still starting (creating, initializing, compiling): it may come up by itself."""
    maintenance: bool = False
    """An intentional pause (driver upgrade, MIG reconfiguration): not a fault."""
    elsewhere: bool = False
    """Nothing is broken: the stack publishes its devices outside `status.allocatable` (DRA ResourceSlices)."""
    log: tuple[str, str, bool] | None = None
    """(pod key `ns/name`, container, previous run) whose log tail tells why the layer fails."""


_CRASH = ("CrashLoopBackOff", "Error", "RunContainerError", "CreateContainerError", "CreateContainerConfigError",
          "ImagePullBackOff", "ErrImagePull", "InvalidImageName", "OOMKilled", "StartError")


def _rank(c: ContainerState) -> int:
    """Which not-ready container explains a pod: a crash before a wait, a wait before `PodInitializing`."""
    if c.reason in _CRASH or (c.state == "terminated" and c.exit_code):
        return 0
    if c.restart_count and c.last_exit_code:
        return 1
    if c.state == "running":
        return 2
    if c.reason == "PodInitializing":
        return 4
    return 3


def culprit(pod: Pod) -> ContainerState | None:
    """The container that keeps a pod from being ready (init containers included), or None."""
    bad = [c for c in pod.containers if not c.ready and not (c.state == "terminated" and c.exit_code == 0)]
    return min(bad, key=_rank) if bad else None


def container_detail(c: ContainerState) -> str:
    text = c.reason or c.state
    if c.restart_count:
        text += f", {c.restart_count} restarts"
    if c.last_exit_code:
        text += f", last exit {c.last_exit_code} {c.last_reason}".rstrip()
    return text


_DRIVER, _TOOLKIT, _VALIDATOR, _PLUGIN = ("driver", "driver installer"), ("container toolkit",), \
    ("operator validator",), ("device plugin",)
KNOWN_FAILURES: dict[str, tuple[tuple[str, ...], str]] = {
    # GPU Operator driver container (gpu-driver-container nvidia-driver script)
    "Could not resolve Linux kernel version": (_DRIVER, "no kernel headers/packages for the node's running kernel: "
                                               "use a precompiled driver image or a node image whose kernel the "
                                               "driver container supports (or a GPU AMI with the driver pre-installed)"),
    "Failed to update package cache": (_DRIVER, "the driver container cannot reach its package repositories "
                                                "(proxy/air-gap)"),
    "Could not unload NVIDIA driver kernel modules, driver is in use": (_DRIVER, "a host driver or a GPU process "
                                                                                 "holds the kernel modules"),
    "An instance of the NVIDIA driver is already running": (_DRIVER, "a driver is already installed on the host: set "
                                                                     "driver.enabled=false or use an image without one"),
    # NVIDIA container toolkit (nvidia-ctk-installer)
    "unable to dial": (_TOOLKIT, "the toolkit cannot reach containerd at the socket it was given: CONTAINERD_SOCKET / "
                                 "the socket hostPath do not match this node (k3s/RKE2 paths on a stock containerd, or "
                                 "the reverse)"),
    "unable to configure containerd": (_TOOLKIT, "the toolkit cannot write containerd's config (CONTAINERD_CONFIG "
                                                 "path)"),
    # GPU Operator validator
    "toolkit is not ready": (_VALIDATOR, "nvidia-smi fails through the nvidia runtime (container toolkit / runtime "
                                         "config)"),
    # AMD (ROCm/k8s-device-plugin)
    "amdgpu driver unavailable": (_PLUGIN, "the amdgpu kernel driver is not loaded on the node"),
}
"""Log lines that name a cause, the layers that print them, and what they mean (upstream texts; see the
accelerator-stacks reference)."""


def known_failure(lines: list[str], layer: str) -> tuple[str, str]:
    """(the line, what it means) for the last log line of `layer` that names a known cause."""
    for line in reversed(lines):
        for text, (layers, meaning) in KNOWN_FAILURES.items():
            if layer in layers and text.lower() in line.lower():
                return line.strip()[:200], meaning
    return "", ""


def last_lines(c: ContainerState, n: int = 6, logged: str = "") -> list[str]:
    """The last lines of the container's log when it was read, else what the kubelet kept (termination
    message, or the waiting message)."""
    text = logged or c.last_message or c.message
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-n:]


_NVML = re.compile(r"(?:Failed to initialize NVML|nvml init failed|failed to initialize nvml|error initializing NVML)"
                   r":\s*([A-Za-z_/ ]+?)(?:\.|$|\n)", re.IGNORECASE)


def nvml_error(text: str) -> str:
    """`ERROR_LIBRARY_NOT_FOUND`, `Driver/library version mismatch`, `Driver Not Loaded` ... from a plugin's log."""
    if "could not load NVML library" in (text or ""):  # pre-v0.12 plugins' spelling of the same error
        return "ERROR_LIBRARY_NOT_FOUND"
    m = _NVML.search(text or "")
    return m.group(1).strip() if m else ""


NVML_CAUSES = {
    "ERROR_LIBRARY_NOT_FOUND": "libnvidia-ml.so.1 is not in the plugin container: the node has no NVIDIA driver "
                               "(a non-GPU AMI/image) or the nvidia runtime did not inject it",
    "Driver/library version mismatch": "the driver's user-space libraries and the loaded kernel module differ "
                                       "(driver upgraded without a reboot)",
    "Driver Not Loaded": "the NVIDIA kernel module is not loaded",
    "Unknown Error": "the container cannot open /dev/nvidiactl (device cgroup / permissions)",
}


def _nvml_cause(err: str) -> str:
    for k, v in NVML_CAUSES.items():
        if k.lower() == err.lower():
            return v
    return f"NVML failed to initialize ({err})"


def untolerated(ds: DaemonSet, node: Node) -> list[Taint]:
    """NoSchedule/NoExecute taints a DaemonSet pod does not tolerate (the lifecycle ones are added automatically)."""
    return untolerated_taints(ds, node)


def _cluster_policy(ds: DaemonSet) -> str:
    """The ClusterPolicy that owns a GPU Operator DaemonSet, "" for one a user may patch directly."""
    return next((str(o.get("name") or "") for o in ds.meta.owners if o.get("kind") == "ClusterPolicy"), "")


def _toleration_patch(ds: DaemonSet, taint: Taint) -> str:
    tol = {"key": taint.key, "operator": "Exists", "effect": taint.effect}
    policy = _cluster_policy(ds)
    if policy:
        # The operator copies spec.daemonsets.tolerations over every operand DaemonSet's on each reconcile
        # (gpu-operator controllers/object_controls.go), so a patch to the DaemonSet is undone: patch the policy,
        # with the whole list (a merge patch replaces it; the DaemonSet holds the policy's list when it has one).
        old = [{k: v for k, v in (("key", t.key), ("operator", t.operator), ("value", t.value), ("effect", t.effect))
                if v} for t in ds.tolerations]
        body = {"spec": {"daemonsets": {"tolerations": [*old, tol]}}}
        return (f"kubectl patch clusterpolicies.nvidia.com {policy} --type=merge "
                f"-p '{json.dumps(body, separators=(',', ':'))}'")
    # Appending to a list that does not exist fails ("doc is missing path"): create it then.
    op = ({"op": "add", "path": "/spec/template/spec/tolerations/-", "value": tol} if ds.tolerations
          else {"op": "add", "path": "/spec/template/spec/tolerations", "value": [tol]})
    return (f"kubectl -n {ds.meta.namespace} patch daemonset {ds.meta.name} --type=json "
            f"-p '{json.dumps([op], separators=(',', ':'))}'")


def gke_names(snap: Snapshot, pod: Pod | None = None) -> tuple[str, str]:
    """(cluster, node pool) as a gcloud command needs them, from GKE node names `gke-<cluster>-<pool>-<hash>-<id>`
    (the pool: of a node the pod selects, if any); 'CLUSTER' / 'POOL' when no node tells. The cluster is followed
    by `--location REGION` when the nodes' region label says it (gcloud asks for it otherwise)."""
    cluster, pool = "CLUSTER", "POOL"
    region = next((n.labels["topology.kubernetes.io/region"] for n in snap.nodes
                   if n.labels.get("topology.kubernetes.io/region") and n.provider_id.startswith("gce://")), "")
    for n in snap.nodes:
        p = n.labels.get("cloud.google.com/gke-nodepool", "")
        marker = f"-{p}-"
        if p and n.name.startswith(("gke-", "gk3-")) and marker in n.name:  # gk3-: Autopilot
            cluster = n.name[4:n.name.index(marker)] or cluster
            if pod is not None and node_matches(pod.node_selector, pod.required_affinity, n.labels):
                pool = p
    return cluster + (f" --location {region}" if region else ""), pool


def _gke_target(snap: Snapshot, node: Node) -> tuple[str, str, str]:
    cluster, _ = gke_names(snap)
    accel = node.labels.get("cloud.google.com/gke-accelerator") or "ACCELERATOR"
    count = node.labels.get("cloud.google.com/gke-accelerator-count") or "N"
    return cluster, node.labels.get("cloud.google.com/gke-nodepool") or "POOL", f"type={accel},count={count}"


def install_commands(stack: Stack, cluster: str = "CLUSTER", pool: str = "POOL",
                     accelerator: str = "type=ACCELERATOR,count=N") -> tuple[str, ...]:
    """How to install the missing device plugin of this vendor and platform."""
    if stack.vendor == NEURON:
        # aws-neuron/neuron-helm-charts: DaemonSet neuron-device-plugin in kube-system.
        return ("helm upgrade --install neuron-helm-chart oci://public.ecr.aws/neuron/neuron-helm-chart "
                "-n kube-system --set npd.enabled=false",)
    if stack.vendor == AMD:
        return ("kubectl create -f https://raw.githubusercontent.com/ROCm/k8s-device-plugin/master/"
                "k8s-ds-amdgpu-dp.yaml",)
    if stack.platform == "gke":
        return (f"gcloud container node-pools update {pool} --cluster {cluster} "
                f"--accelerator {accelerator},gpu-driver-version=default",)
    return ("helm repo add nvdp https://nvidia.github.io/k8s-device-plugin && helm repo update",
            "helm upgrade --install nvdp nvdp/nvidia-device-plugin -n kube-system --set gfd.enabled=true "
            "--set-json 'tolerations=[{\"operator\":\"Exists\"}]'")


def diagnose_node(snap: Snapshot, node: Node) -> Diagnosis:
    """The first broken layer of the node's stack (for a node that advertises none of its accelerators)."""
    stack = node_stack(snap, node)
    if stack.provider == "host":
        why = ("driver/NVML problem or its settings.kubelet-device-plugins.nvidia settings" if stack.vendor == NVIDIA
               else f"{stack.vendor_name} driver problem")
        return Diagnosis(stack, "host device plugin",
                         f"its device plugin runs as a host service on {stack.host} (no DaemonSet) and registered no "
                         f"{'GPUs' if stack.vendor == NVIDIA else 'devices'} ({why})",
                         (_host_evidence(node, stack.host),), (health_command(node),),
                         "There is no plugin pod to fix: look at the host's driver with a debug pod; replace the node "
                         "if the accelerators do not come back.")
    variant = bottlerocket_variant(node)
    if stack.vendor == NVIDIA and variant and "nvidia" not in variant:
        return _bottlerocket_without_nvidia(snap, node, stack, variant)
    paused = _maintenance(node)
    if paused is not None:
        return Diagnosis(
            stack, "maintenance", paused[0], paused[1], (f"kubectl get node {node.name} --show-labels",),
            "Wait for the GPU Operator to finish; the operands come back by themselves.", maintenance=True)
    if not snap.status("daemonsets").state.usable:
        return Diagnosis(stack, "unknown", "device plugin state unknown (" + snap.status("daemonsets").reason() + ")",
                         (), (), "Grant read access to DaemonSets to see which layer is broken.")
    if stack.provider == "none" and node.labels.get(GKE_NO_PLUGIN) == "true":
        return _gke_plugin_turned_off(snap, node, stack)
    if stack.provider == "none":
        what = f"{stack.vendor_name} device plugin" + (" or GPU Operator" if stack.vendor == NVIDIA else "")
        return Diagnosis(stack, "device plugin", f"no {what} DaemonSet in the cluster: nothing registers {stack.resource}",
                         (Evidence.absence(None, f"DaemonSets of the {what} ({', '.join(stack.layers[0].names)})",
                                           note=f"nothing registers {stack.resource} with the kubelet"),),
                         install_commands(stack, *_gke_target(snap, node)),
                         f"Install the {what}; it must tolerate the node's taints.")
    pods_known = snap.status("pods").state.usable
    for layer in stack.layers:
        daemonsets = _ds_named(snap, layer)
        if not daemonsets:
            if stack.provider == "gke" and layer.name == "driver installer" and not node.name.startswith("gk3-"):
                return _gke_no_driver(snap, node, stack)
            if stack.provider == "dra":
                break  # a DRA driver GKE (or another platform) manages: its devices are ResourceSlices
            if layer.registers:
                what = f"{stack.vendor_name} {layer.name}"
                return Diagnosis(stack, layer.name, f"no {what} DaemonSet in the cluster",
                                 (Evidence.absence(None, f"DaemonSet {' / '.join(layer.names)}"),),
                                 install_commands(stack, *_gke_target(snap, node)), f"Install the {what}.")
            continue  # an optional layer that is not deployed (driver pre-installed, managed GKE driver)
        gate = node.labels.get(layer.deploy_label, "") if layer.deploy_label else ""
        if layer.deploy_label and gate in ("pre-installed", "false"):
            continue  # operator told not to run it here (host driver, or disabled by the admin)
        found = _judge_layer(snap, node, stack, layer, daemonsets, pods_known)
        if found is not None:  # later layers wait on this one: their state is a symptom
            if node.labels.get("nvidia.com/gpu-driver-upgrade-state") == "upgrade-failed":
                # The operator's upgrade controller gave up on this node (driver pod restarted more than 10
                # times); it retries once the driver pod is Ready (k8s-operator-libs ProcessUpgradeFailedNodes).
                found = replace(found, cause="GPU driver upgrade failed (nvidia.com/gpu-driver-upgrade-state="
                                             "upgrade-failed); " + found.cause,
                                evidence=found.evidence + (Evidence.field(
                                    node.ref, "metadata.labels[nvidia.com/gpu-driver-upgrade-state]", "upgrade-failed"),),
                                fix=found.fix + " Once the driver pod on the node is Ready again, the upgrade controller "
                                                "moves the node on and uncordons it by itself; do not remove the label by "
                                                "hand (the node would stay cordoned).")
            return found
    if stack.provider == "dra":
        return Diagnosis(stack, "DRA kubelet plugin", "its GPUs are published as ResourceSlice devices, not as "
                         "nvidia.com/gpu in status.allocatable", (), (f"kubectl get resourceslices "
                                                                     f"--field-selector spec.nodeName={node.name}",),
                         "Nothing to fix: pods get these GPUs through ResourceClaims.", elsewhere=True)
    return _running_but_silent(snap, node, stack)


def _bottlerocket_without_nvidia(snap: Snapshot, node: Node, stack: Stack, variant: str) -> Diagnosis:
    """A GPU node on a Bottlerocket variant without NVIDIA support: no driver, no plugin, nothing to install on it
    (Bottlerocket takes no packages); only the aws-k8s-<ver>-nvidia variants carry both."""
    nodeclass = node.labels.get("karpenter.k8s.aws/ec2nodeclass", "")
    commands = ((f"kubectl get ec2nodeclass {nodeclass} -o jsonpath='{{.spec.amiSelectorTerms}}{{\"\\n\"}}"
                 f"{{.status.amis}}'",) if nodeclass else ())
    return Diagnosis(
        stack, "node image",
        f"it runs Bottlerocket's {variant} variant, which has no NVIDIA driver or device plugin (only the "
        f"{variant}-nvidia variants do)",
        (host_evidence(node, "Bottlerocket", "the variant in parentheses; NVIDIA support is the -nvidia variants"),),
        commands + (f"kubectl get node {node.name} -o jsonpath='{{.status.nodeInfo.osImage}}'",),
        "Launch GPU nodes from the Bottlerocket NVIDIA variant: Karpenter's amiSelectorTerms alias bottlerocket@latest "
        "resolves the -nvidia AMI for GPU instance types; an AMI selected by id or name must be the "
        "aws-k8s-<version>-nvidia one. Then replace this node.")


NFD_PCI = "feature.node.kubernetes.io/pci-10de.present"
OPERANDS_OFF = "nvidia.com/gpu.deploy.operands"
NFD_GPU_LABELS = (NFD_PCI, "feature.node.kubernetes.io/pci-0302_10de.present",
                  "feature.node.kubernetes.io/pci-0300_10de.present")
"""The NFD labels that make a node a GPU node for the GPU Operator (controllers/state_manager.go)."""
GKE_NO_PLUGIN = "gke-no-default-nvidia-gpu-device-plugin"
GKE_DRIVER_LABEL = "cloud.google.com/gke-gpu-driver-version"
GKE_INSTALLER = "https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/master/" \
    "nvidia-driver-installer/{os}/daemonset-preloaded.yaml"


def _gke_no_driver(snap: Snapshot, node: Node, stack: Stack) -> Diagnosis:
    """A GKE GPU node pool created without a driver version (GPUDriverVersion unspecified: "not to install any GPU
    driver"; INSTALLATION_DISABLED: "needs manual installation") and no installer DaemonSet: GKE's plugin waits
    silently for /dev/nvidiactl (container-engine-accelerators cmd/nvidia_gpu), so only the missing driver explains it."""
    cluster, pool, accel = _gke_target(snap, node)
    os_name = "ubuntu" if "ubuntu" in os_image(node).lower() else "cos"
    return Diagnosis(
        stack, "driver installer",
        f"no NVIDIA driver: the node pool does not install one (no {GKE_DRIVER_LABEL} label) and no "
        "nvidia-driver-installer DaemonSet is deployed",
        (Evidence.absence(node.ref, f"metadata.labels[{GKE_DRIVER_LABEL}]",
                          note="GKE installs the driver only on node pools created with gpu-driver-version"),
         Evidence.absence(None, "DaemonSet kube-system/nvidia-driver-installer",
                          note="installs the driver on nodes without that label")),
        (f"kubectl apply -f {GKE_INSTALLER.format(os=os_name)}",
         f"gcloud container node-pools update {pool} --cluster {cluster} --accelerator {accel},gpu-driver-version=default"),
        "Install the driver: apply GKE's nvidia-driver-installer DaemonSet for the node image, or let GKE manage the "
        "driver (gpu-driver-version=default on the node pool). GKE's device plugin registers the GPUs once it is there.")


def _gke_plugin_turned_off(snap: Snapshot, node: Node, stack: Stack) -> Diagnosis:
    """`gke-no-default-nvidia-gpu-device-plugin=true` keeps GKE's plugin off (GKE's DRA and GPU Operator set-ups), so
    turning GKE's driver installation on brings nothing back: the plugin it was set for is missing."""
    cluster, pool, _ = _gke_target(snap, node)
    present = [ds for layers in (DRA_LAYERS, OPERATOR_LAYERS, STANDALONE_LAYERS) for layer in layers
               for ds in _ds_named(snap, layer)]
    if present:  # installed, but not for this node: its selector is the broken link
        names = ", ".join(dict.fromkeys(f"{ds.meta.namespace}/{ds.meta.name}" for ds in present))
        return Diagnosis(
            stack, "device plugin",
            f"GKE's device plugin is turned off on this node ({GKE_NO_PLUGIN}=true) and {names} does not select it",
            tuple(Evidence.field(ds.ref, "spec.template.spec.nodeSelector", dict(ds.node_selector) or "affinity",
                                 note="does not match the node's labels") for ds in present[:3]),
            (f"kubectl get node {node.name} --show-labels",
             f"gcloud container node-pools describe {pool} --cluster {cluster} --format='value(config.labels)'"),
            "Give the node pool the Kubernetes labels that DaemonSet selects (gcloud container node-pools update "
            "--node-labels, which replaces the pool's labels: list them all), or widen its nodeSelector/affinity.")
    return Diagnosis(
        stack, "device plugin",
        f"GKE's device plugin is turned off on this node ({GKE_NO_PLUGIN}=true) and no NVIDIA device plugin, GPU "
        "Operator or DRA driver DaemonSet runs in the cluster: nothing registers its GPUs",
        (Evidence.field(node.ref, f"metadata.labels[{GKE_NO_PLUGIN}]", "true",
                        note="GKE does not run its NVIDIA device plugin on this node"),
         Evidence.absence(None, "DaemonSets of the NVIDIA device plugin, GPU Operator or DRA driver")),
        ("kubectl get daemonsets -A -o wide",
         f"gcloud container node-pools describe {pool} --cluster {cluster} "
         "--format='value(config.labels,config.accelerators)'"),
        f"Install what the {GKE_NO_PLUGIN} label was set for (the NVIDIA GPU Operator or the NVIDIA DRA driver, "
        f"with a driver on the node), or drop the label from the node pool's Kubernetes labels to get GKE's managed "
        "device plugin back.")


def _running_but_silent(snap: Snapshot, node: Node, stack: Stack) -> Diagnosis:
    """Every layer is up, yet nothing is registered: a plugin started with `failOnInitError: false` blocks
    forever after an NVML error (k8s-device-plugin README), so its log is the only place the cause shows."""
    cause = (f"the {stack.vendor_name} device plugin pod is running but registered no "
             f"{'Neuron devices' if stack.vendor == NEURON else 'GPUs'} (driver/AMI or NVML problem)")
    ev: list[Evidence] = []
    commands = [health_command(node)]
    log: tuple[str, str, bool] | None = None
    registering = [layer for layer in stack.layers if layer.registers]
    for ds in (_ds_named(snap, registering[0]) if registering else []):
        pod = pod_of(snap, ds, node) if snap.status("pods").state.usable else None
        if pod is None or not pod.containers:
            continue
        cname = pod.containers[0].name
        log = (f"{pod.namespace}/{pod.name}", cname, False)
        commands.insert(0, f"kubectl logs -n {pod.namespace} {pod.name} -c {cname} --tail=50")
        text = snap.pod_logs.get(f"{pod.namespace}/{pod.name}/{cname}", "")
        if text:
            lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
            ev.append(Evidence(EvidenceKind.LOG, pod.ref, f"logs[{cname}]", "\n".join(lines[-6:]),
                               note="last lines of its log"))
            nvml = nvml_error(text)
            if nvml:
                cause = (f"{ds.meta.name} pod {pod.name} is running but registered nothing: Failed to initialize NVML: "
                         f"{nvml} - {_nvml_cause(nvml)}")
            elif "No devices found" in text:
                cause = f"{ds.meta.name} pod {pod.name} is running but found no devices (`No devices found. Waiting indefinitely.`)"
        break
    return Diagnosis(stack, "device plugin", cause, tuple(ev), tuple(commands),
                     "Look at the plugin's log and at the driver on the node.", log=log)


def _judge_layer(snap: Snapshot, node: Node, stack: Stack, layer: Layer, daemonsets: list[DaemonSet],
                 pods_known: bool) -> Diagnosis | None:
    """None when this layer is fine on the node; else why it is not."""
    for ds in daemonsets:
        pod = pod_of(snap, ds, node) if pods_known else None
        if pod is not None:
            return _judge_pod(snap, node, stack, layer, ds, pod)
    selecting = [ds for ds in daemonsets if _selects(ds, node)]
    if not selecting:
        ds = daemonsets[0]
        missing = {k: v for k, v in ds.node_selector.items() if node.labels.get(k) != v}
        cause = f"{ds.meta.name} nodeSelector/affinity does not match the node" + (
            f" (needs {', '.join(f'{k}={v}' for k, v in missing.items())})" if missing else "")
        ev = [Evidence.field(ds.ref, "spec.template.spec.nodeSelector", dict(ds.node_selector) or "affinity",
                             note="node labels do not match")]
        fix = f"Give the node the labels the {layer.name} DaemonSet selects, or widen its nodeSelector/affinity."
        labelling = False  # labels another component sets after the node joins (NFD, the operator, GFD)
        extra: tuple[str, ...] = ()
        if stack.provider == "gpu-operator" and node.labels.get(OPERANDS_OFF) == "false":
            # The operator removes every nvidia.com/gpu.deploy.* label from such a node (controllers/state_manager.go
            # updateGPUStateLabels): a deploy label added by hand is taken away again.
            cause = f"the GPU Operator's operands are turned off on this node ({OPERANDS_OFF}=false)"
            ev.append(Evidence.field(node.ref, f"metadata.labels[{OPERANDS_OFF}]", "false",
                                     note="the operator removes every nvidia.com/gpu.deploy.* label"))
            fix = (f"If the node should run the operator's GPU stack, remove {OPERANDS_OFF}=false; the operator then "
                   "labels it and deploys the driver, toolkit and device plugin.")
            extra = (f"kubectl label node {node.name} {OPERANDS_OFF}-",)
        elif stack.provider == "gpu-operator" and node.labels.get("nvidia.com/gpu.present") != "true":
            seen = next((k for k in NFD_GPU_LABELS if node.labels.get(k) == "true"), "")
            if seen:  # NFD did its part: the operator has not reconciled the node
                cause = (f"the GPU Operator did not label the node nvidia.com/gpu.present=true although NFD labelled "
                         f"it {seen}=true (the operator is not running or not reconciling)")
                ev.append(Evidence.field(node.ref, f"metadata.labels[{seen}]", "true"))
                fix = ("Look at the gpu-operator Deployment and its log (and the ClusterPolicy status): it labels "
                       "GPU nodes with nvidia.com/gpu.present and the deploy labels.")
                extra = ("kubectl get pods -A -l app=gpu-operator", "kubectl get clusterpolicies -o wide")
            else:
                cause = ("the GPU Operator did not label the node nvidia.com/gpu.present=true (Node Feature Discovery "
                         "found no NVIDIA PCI device: its worker pod is missing on the node or lacks a toleration)")
                ev.append(Evidence.field(node.ref, f"metadata.labels[{NFD_PCI}]", node.labels.get(NFD_PCI) or "absent"))
                fix = "Get the NFD worker running on the node (tolerate its taints); the operator then labels it."
            labelling = True
        elif any(k.startswith(("nvidia.com/", "feature.node.kubernetes.io/")) for k in missing):
            labelling = True
        elif NFD_PCI in {r.key for term in ds.required_affinity for r in term} and NFD_PCI not in node.labels:
            # k8s-device-plugin chart's default affinity: NFD's PCI label, the Tegra CPU label or a forced
            # nvidia.com/gpu.present; the chart runs NFD only with nfd.enabled or gfd.enabled.
            cause += (f" (its affinity wants Node Feature Discovery's {NFD_PCI}=true or nvidia.com/gpu.present=true, "
                      "and NFD has not labelled the node)")
            fix = ("Run Node Feature Discovery on the node (the plugin's chart deploys it with nfd.enabled=true), or "
                   "label the node nvidia.com/gpu.present=true - for Karpenter in the NodePool's "
                   "spec.template.metadata.labels, so that every new node has it.")
            release = ds.meta.labels.get("app.kubernetes.io/instance", "")
            extra = ((f"helm upgrade {release} nvdp/nvidia-device-plugin -n {ds.meta.namespace} --reuse-values "
                      "--set nfd.enabled=true",) if release else ())
            extra += (f"kubectl label node {node.name} nvidia.com/gpu.present=true",)
            labelling = True
        if stack.vendor == NEURON and any(r.key in ("node.kubernetes.io/instance-type",
                                                    "beta.kubernetes.io/instance-type")
                                          for term in ds.required_affinity for r in term):
            # neuron-helm-charts' affinity lists instance types (neuronInstances): a newer type is not in it.
            cause += f" (its affinity lists instance types, and {node.instance_type or 'this type'} is not one)"
            fix = (f"Add {node.instance_type or 'the instance type'} to the Neuron chart's instance list "
                   "(neuronInstances) or upgrade the chart.")
        return Diagnosis(stack, layer.name, cause, tuple(ev), extra + (f"kubectl get node {node.name} --show-labels",),
                         fix, progressing=labelling)
    ds = selecting[0]
    blocked = untolerated(ds, node)
    if blocked:
        return Diagnosis(
            stack, layer.name, f"{ds.meta.name} does not tolerate taint {blocked[0]}",
            (Evidence.field(node.ref, "spec.taints", [str(t) for t in blocked],
                            note=f"not tolerated by DaemonSet {ds.meta.namespace}/{ds.meta.name}"),
             Evidence.field(ds.ref, "spec.template.spec.tolerations",
                            [_tol(t) for t in ds.tolerations] or "none")),
            (_toleration_patch(ds, blocked[0]),),
            f"Make the {stack.vendor_name} {layer.name} DaemonSet tolerate the node's taint." if not _cluster_policy(ds)
            else f"Make the GPU Operator's DaemonSets tolerate the node's taint: the operator sets their tolerations "
                 f"from ClusterPolicy {_cluster_policy(ds)} spec.daemonsets.tolerations and undoes a patch to "
                 f"{ds.meta.name} itself. Add it to the Helm values (daemonsets.tolerations) too, or the next "
                 f"helm upgrade drops it.")
    if not pods_known or not snap.all_pods_read_on(node.name):  # a node target's own pods are all read
        return None
    return Diagnosis(stack, layer.name, f"{ds.meta.name} should run here but has no pod on the node",
                     (Evidence.absence(ds.ref, f"pod of {ds.meta.name} on {node.name}",
                                       note=f"DaemonSet desired={ds.desired} ready={ds.ready}"),),
                     (f"kubectl -n {ds.meta.namespace} describe daemonset {ds.meta.name}",),
                     f"See why the {layer.name} DaemonSet creates no pod on the node (its events).",
                     progressing=True)


# Init containers that only wait for an earlier layer: their pod is blocked, not broken.
_WAITS_FOR = {"driver-validation": "driver", "toolkit-validation": "container toolkit",
              "plugin-validation": "device plugin", "k8s-driver-manager": "driver"}


def _judge_pod(snap: Snapshot, node: Node, stack: Stack, layer: Layer, ds: DaemonSet, pod: Pod) -> Diagnosis | None:
    c = culprit(pod)
    if pod.phase == "Running" and c is None:
        return None
    ref = pod.ref
    ev: list[Evidence] = []
    detail = container_detail(c) if c else pod.phase
    cname = c.name if c else ""
    ev.append(Evidence.field(ref, f"status.containerStatuses[{cname}]" if cname else "status.phase", detail,
                             note=f"pod of DaemonSet {ds.meta.namespace}/{ds.meta.name} ({stack.vendor_name} "
                                  f"{layer.name}) on this node"))
    log_key = f"{pod.namespace}/{pod.name}/{cname}"
    logged = snap.pod_logs.get(log_key, "") if c else ""
    lines = last_lines(c, logged=logged) if c else []
    if lines:
        if logged:
            ev.append(Evidence(EvidenceKind.LOG, ref, f"logs[{cname}]" + (" --previous" if c and c.restart_count else ""),
                               "\n".join(lines), note="last lines of its log"))
        else:
            ev.append(Evidence.field(ref, f"lastState.terminated.message[{cname}]" if c and c.last_message
                                     else f"state.waiting.message[{cname}]", "\n".join(lines),
                                     note="last log lines kept by the kubelet"))
    warning = _pod_warning(snap, pod)
    if warning is not None:
        ev.append(Evidence.event(ref, warning.reason, warning.message[:300], warning.count, snap.age(warning.last_seen),
                                 type_="Warning"))
    logs = f"kubectl logs -n {pod.namespace} {pod.name}" + (f" -c {cname}" if cname else " --all-containers") \
        + (" --previous" if c and c.restart_count else "") + " --tail=50"
    crashing = c is not None and _rank(c) <= 1
    text = "\n".join(last_lines(c, 40, logged=logged) if c else []) + "\n" + (c.message if c else "")
    nvml = nvml_error(text)
    # A client's wait on an earlier layer (toolkit-validation, plugin-validation) is a symptom of that layer.
    waits_on = _WAITS_FOR.get(cname, "") if c is not None and not crashing else ""
    if waits_on and waits_on != layer.name and layer.name == "operator validator" and waits_on == "device plugin":
        return None  # the validator waits for GPUs to be advertised: judge the device plugin instead
    # Name the container when the pod has several (an init container is often the one that fails).
    state = f"{cname}: {detail}" if cname and len(pod.containers) > 1 else detail
    cause = f"{ds.meta.name} pod {pod.name} is not ready ({state})"
    fix = _layer_fix(stack, layer, cname, nvml)
    line, meaning = known_failure(last_lines(c, 40, logged=logged) if c else [], layer.name)
    if line and not nvml:
        cause += f': "{line}" - {meaning}'
        fix = f"{meaning[0].upper()}{meaning[1:]}." + _WAITERS.get(layer.name, "")
    commands = [logs]
    sandbox = warning is not None and warning.reason in _POD_FAILURES
    handlers = runtime_handlers(node)
    no_handler = bool(pod.runtime_class) and handlers is not None and pod.runtime_class not in handlers \
        and (c is None or _rank(c) >= 2)
    if no_handler:
        ev.append(Evidence.field(node.ref, "status.runtimeHandlers", sorted(h for h in handlers or () if h) or "none",
                                 note=f"the pod's runtimeClassName {pod.runtime_class} has no handler here"))
    if (sandbox and warning is not None) or no_handler:
        crashing = True  # the kubelet cannot even start it: not a pod that is still coming up
        if no_handler:
            cause += (f": the node's container runtime has no {pod.runtime_class!r} handler "
                      f"(status.runtimeHandlers: {', '.join(sorted(h for h in handlers or () if h)) or 'none'})")
        if sandbox and warning is not None:
            cause += f"; {warning.reason} x{warning.count}: {warning.message[:200]}"
        commands = [f"kubectl describe pod -n {pod.namespace} {pod.name}"]
        if no_handler or (warning is not None and 'no runtime for "nvidia"' in warning.message):
            fix = ("containerd on this node has no `nvidia` runtime handler, so every operand with runtimeClassName "
                   "nvidia fails to start: the container toolkit's containerd drop-in was not loaded (containerd not "
                   "restarted, or CONTAINERD_CONFIG points at another file). Restart the toolkit pod on the node, "
                   "then check the node's runtime handlers.")
            commands.append(f"kubectl get node {node.name} -o jsonpath='{{.status.runtimeHandlers[*].name}}'")
            commands += [f"kubectl delete pod -n {p.namespace} {p.name}" for p in _layer_pods(snap, node, "container toolkit")]
    if nvml:
        cause += f": Failed to initialize NVML: {nvml} - {_nvml_cause(nvml)}"
        commands.append(f"kubectl get node {node.name} -o jsonpath='{{.status.nodeInfo.osImage}}'")
        if nvml.upper() == "ERROR_LIBRARY_NOT_FOUND" and node.labels.get("karpenter.k8s.aws/ec2nodeclass"):
            nc = node.labels["karpenter.k8s.aws/ec2nodeclass"]
            commands.append(f"kubectl get ec2nodeclass {nc} -o jsonpath='{{.status.amis}}'")
            image = _node_image(snap, node)
            if image is not None:
                ev.append(image[1])
                if image[0]:
                    cause += f"; the node runs {image[0]}, not a GPU image"
    elif layer.name == "driver" and stack.provider == "gpu-operator" and cname != "nvidia-driver-ctr":
        commands.append(f"kubectl logs -n {pod.namespace} {pod.name} -c nvidia-driver-ctr --tail=50")
    elif layer.name == "container toolkit" and cname != "nvidia-container-toolkit-ctr":
        commands.append(f"kubectl logs -n {pod.namespace} {pod.name} -c nvidia-container-toolkit-ctr --tail=50")
    progressing = not crashing and pod.phase in ("Pending", "Running")
    if (no_handler or 'no runtime for "nvidia"' in (warning.message if warning else "")) and layer.name != "driver":
        cause += " (the container toolkit's runtime config is not in effect)"
    return Diagnosis(stack, layer.name, cause, tuple(ev), tuple(dict.fromkeys(commands)), fix, progressing=progressing,
                     log=(f"{pod.namespace}/{pod.name}", cname, bool(c.restart_count)) if c else None)


_WAITERS = {"driver": " The container toolkit, validator and device plugin only wait on it.",
            "container toolkit": " The validator and device plugin only wait on it.",
            "operator validator": " The device plugin only waits on it."}

_POD_FAILURES = ("FailedCreatePodSandBox", "FailedMount", "FailedAttachVolume", "UnexpectedAdmissionError",
                 "FailedPrepareDynamicResources")
"""Kubelet Warnings that mean a pod cannot start at all (BackOff and Failed repeat the container state)."""


def _pod_warning(snap: Snapshot, pod: Pod) -> Event | None:
    """The newest Warning event on the pod that says why it cannot start or keeps failing."""
    found = None
    for e in snap.index.events("Pod", pod.name, pod.namespace):
        if e.type == "Warning" and (e.reason in _POD_FAILURES or e.reason == "BackOff"):
            if found is None or e.reason in _POD_FAILURES or found.reason not in _POD_FAILURES:
                found = e
    return found


def _node_image(snap: Snapshot, node: Node) -> tuple[str, Evidence] | None:
    """(AMI name when it is not a GPU variant else '', evidence) for a Karpenter node: its NodeClaim's imageID,
    named by the EC2NodeClass status (`amazon-eks-node-al2023-x86_64-standard-...` has no NVIDIA driver)."""
    claim = snap.index.nodeclaim_by_node.get(node.name)
    if claim is None:
        return None
    image = claim.image_id
    nodeclass = snap.index.nodeclass.get(claim.node_class)
    if not image or nodeclass is None:
        return None
    name = next((str(a.get("name") or "") for a in nodeclass.amis if isinstance(a, Mapping) and a.get("id") == image),
                "")
    gpu = any(w in name.lower() for w in ("nvidia", "gpu", "neuron", "accelerated"))
    return (f"{image} ({name})" if name and not gpu else "",
            Evidence.field(claim.ref, "status.imageID", image,
                           note=f"{name or 'not in'} EC2NodeClass {nodeclass.name} status.amis"))


def runtime_handlers(node: Node) -> list[str] | None:
    """status.runtimeHandlers names (Kubernetes 1.30+), None when the node does not report them."""
    return None if node.runtime_handlers is None else list(node.runtime_handlers)


def _layer_pods(snap: Snapshot, node: Node, layer_name: str) -> list[Pod]:
    layer = next(x for x in OPERATOR_LAYERS if x.name == layer_name)
    return [p for ds in _ds_named(snap, layer) if (p := pod_of(snap, ds, node)) is not None]


def _layer_fix(stack: Stack, layer: Layer, container: str, nvml: str) -> str:
    if nvml.upper() == "ERROR_LIBRARY_NOT_FOUND":
        if stack.platform == "eks":
            return ("The node has no NVIDIA driver libraries visible to the plugin: launch it from an NVIDIA GPU AMI "
                    "(EC2NodeClass amiSelectorTerms alias al2023@... resolves the nvidia variant for GPU instances; a "
                    "custom AMI must ship the driver), or set the plugin's runtimeClassName to nvidia.")
        return "Install the NVIDIA driver on the node image, or run the plugin with the nvidia runtime class."
    if nvml:
        return f"Fix the driver on the node ({_nvml_cause(nvml)}): reboot or replace it."
    if stack.provider == "gpu-operator":
        return {
            "driver": "Fix the GPU Operator driver pod: its log names the failure (kernel headers for the running "
                      "kernel, package repository access, a driver already loaded). Until it runs, the toolkit, "
                      "validator and device plugin wait on it.",
            "container toolkit": "Fix the container toolkit pod (containerd config/socket paths: CONTAINERD_CONFIG, "
                                 "CONTAINERD_SOCKET); the validator and device plugin wait on it.",
            "operator validator": f"The operator validator's {container or 'init'} step fails; its log says which "
                                  "(toolkit-validation = container runtime, cuda-validation = driver/CUDA); the device "
                                  "plugin waits for it.",
            "device plugin": "Fix the GPU Operator device plugin pod (its log).",
        }.get(layer.name, f"Fix the {layer.name}.")
    if stack.provider == "gke":
        if layer.name == "driver installer" or container == "nvidia-driver-installer":
            return ("The GKE NVIDIA driver installer fails: check its log; on a node pool with gpu-driver-version "
                    "set, GKE installs the driver itself (do not also apply the installer DaemonSet).")
        return "GKE manages this device plugin: look at its log, then recreate the node (or upgrade the node pool)."
    return f"Fix the {stack.vendor_name} {layer.name} pod (its log names the failure)."


_UPGRADE_BEFORE_RESTART = ("upgrade-required", "cordon-required", "wait-for-jobs-required", "pod-deletion-required",
                           "drain-required")
"""Driver-upgrade states before the driver pod is restarted (k8s-operator-libs pkg/upgrade/consts.go: then
pod-restart-required): the old driver and its device plugin still run, so a node advertising no GPUs is broken."""


def _maintenance(node: Node) -> tuple[str, tuple[Evidence, ...]] | None:
    """A GPU Operator driver upgrade or MIG reconfiguration in progress: the operands are gone on purpose."""
    labels = node.labels
    for k, v in labels.items():
        if k.startswith("nvidia.com/gpu.deploy.") and v.endswith(("paused-for-driver-upgrade", "paused-for-mig-change")):
            return (f"GPU Operator maintenance in progress ({k}={v})",
                    (Evidence.field(node.ref, f"metadata.labels[{k}]", v, note="operands stopped on purpose"),))
    state = labels.get("nvidia.com/mig.config.state", "")
    if state in ("pending", "rebooting"):
        return (f"MIG reconfiguration in progress (nvidia.com/mig.config.state={state})",
                (Evidence.field(node.ref, "metadata.labels[nvidia.com/mig.config.state]", state),))
    up = labels.get("nvidia.com/gpu-driver-upgrade-state", "")
    if up and up not in ("upgrade-done", "upgrade-failed") and up not in _UPGRADE_BEFORE_RESTART:
        return (f"GPU driver upgrade in progress (nvidia.com/gpu-driver-upgrade-state={up})",
                (Evidence.field(node.ref, "metadata.labels[nvidia.com/gpu-driver-upgrade-state]", up),))
    return None


def _host_evidence(node: Node, host: str) -> Evidence:
    return host_evidence(node, host, "the device plugin runs on the host: there is no pod to fix; replace the node "
                                     "if the GPUs do not come back")


def _tol(t: object) -> str:
    key = getattr(t, "key", "") or "*"
    op = getattr(t, "operator", "")
    val = getattr(t, "value", "")
    eff = getattr(t, "effect", "") or "*"
    return f"{key} {op} {val}:{eff}".replace("  ", " ")


def logs_to_read(snap: Snapshot, limit: int = 8) -> list[tuple[str, str, str, bool]]:
    """(namespace, pod, container, previous) of the failing containers behind GPU nodes that advertise none of
    their accelerators: the one-shot collection reads their log tails into `Snapshot.pod_logs`."""
    out: list[tuple[str, str, str, bool]] = []
    for node, claim in snap.index.gpu_nodes:
        if len(out) >= limit:
            break
        if accelerator_total(node.allocatable) > 0 or node_should_have_gpus(node, claim) <= 0:
            continue
        d = diagnose_node(snap, node)
        if d.log is not None and d.log[1]:
            ns, pod = d.log[0].split("/", 1)
            out.append((ns, pod, d.log[1], d.log[2]))
    return out


HEALTH_TOOLS = {NEURON: "neuron-ls", AMD: "rocm-smi"}


def health_command(node: Node) -> str:
    """How to look at the node's accelerators: gputui's nvidia-smi debug pod only on NVIDIA nodes."""
    vendor = node_vendor(node)
    if vendor == NVIDIA:
        return f"gputui debug node/{node.name}"
    return (f"kubectl debug node/{node.name} -it --profile=sysadmin --image=public.ecr.aws/amazonlinux/amazonlinux:2023 "
            f"-- chroot /host {HEALTH_TOOLS.get(vendor, 'dmesg')}")


def health_tool(node: Node) -> str:
    """The name of the vendor's health tool a remediation text may mention."""
    return {NVIDIA: "nvidia-smi"}.get(node_vendor(node), HEALTH_TOOLS.get(node_vendor(node), "dmesg"))


def startup_note(snap: Snapshot, node: Node, stack: Stack) -> tuple[bool, str]:
    """(young, text): whether the node is within its stack's start-up allowance, and how long it has been."""
    age = snap.age(node.meta.created)
    if age is None:
        return False, ""
    young = age < stack.allowance
    return young, f"{human_age(age)} old, start-up allowance {human_age(stack.allowance)}"
