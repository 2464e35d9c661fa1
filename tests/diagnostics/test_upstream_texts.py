"""Real upstream objects and texts the accelerator-stack checks must recognise (audit of #19).

Each case is shaped from the upstream source named in its docstring: what a real controller writes,
not what the demo simulator writes.
"""

from __future__ import annotations

import pytest

from diagnostics import run
from tests.builders import snapshot
from tests.diagnostics.checks.test_nodeclaim_launch_failed import POOL_AND_CLASS, claim


@pytest.mark.parametrize("message, cause, wrong", [
    ("User is not authorized to perform this operation due to a service control policy",
     "an AWS Organizations service control policy denies the launch", "Add the missing EC2 permission"),
    ("User is not authorized to perform this operation due to a permission boundary",
     "the Karpenter controller role's permissions boundary denies the launch", "Add the missing EC2 permission"),
])
def test_karpenter_unauthorized_reason_says_which_policy_denied(message: str, cause: str, wrong: str) -> None:
    """aws/karpenter-provider-aws pkg/errors ToReasonMessage: an SCP or boundary deny becomes Launched reason
    `Unauthorized` with its own message (core lifecycle/launch.go SetUnknownWithReason), never the raw AWS text."""
    c = claim("gpu-inference-z8v3q", "2026-08-21T09:58:00Z",
              f'{{type: Launched, status: Unknown, reason: Unauthorized, message: "{message}", '
              f'lastTransitionTime: "2026-08-21T09:58:00Z"}}')
    (f,) = run(snapshot(POOL_AND_CLASS, c), only=["nodeclaim-launch-failed"]).results[0].findings
    assert cause in f.title, f.title
    assert wrong not in f.remediation.text


def test_karpenter_unauthorized_without_a_policy_type_does_not_promise_the_action_in_its_message() -> None:
    """ToReasonMessage's default: `User is not authorized to perform this operation because no identity-based policy
    allows it` - the denied action (ec2:CreateFleet, iam:PassRole ...) is only in the controller's log."""
    c = claim("gpu-inference-z8v3q", "2026-08-21T09:58:00Z",
              '{type: Launched, status: Unknown, reason: Unauthorized, message: "User is not authorized to perform '
              'this operation because no identity-based policy allows it", lastTransitionTime: "2026-08-21T09:58:00Z"}')
    (f,) = run(snapshot(POOL_AND_CLASS, c), only=["nodeclaim-launch-failed"]).results[0].findings
    assert "the Karpenter controller's IAM role is not allowed" in f.title
    assert "the message names the denied action" not in f.remediation.text
    assert any("karpenter" in cmd and "logs" in cmd for cmd in f.remediation.commands), f.remediation.commands


AMD_OPERATOR_NODE = """
apiVersion: v1
kind: Node
metadata:
  name: mi300x-node-01
  creationTimestamp: "2026-08-21T08:00:00Z"
  labels:
    feature.node.kubernetes.io/amd-gpu: "true"
    node.kubernetes.io/instance-type: bare-metal
spec: {}
status:
  conditions: [{type: Ready, status: "True"}]
  capacity: {cpu: "192"}
  allocatable: {cpu: "190"}
"""


def amd_operator_ds(name: str, image: str, container: str) -> str:
    """ROCm/gpu-operator internal/plugin/plugin.go, nodelabeller.go (6df13c17): DaemonSets `<DeviceConfig>-device-plugin`
    and `<DeviceConfig>-node-labeller` in the operator's namespace, pods labelled daemonset-name=<DeviceConfig>."""
    return f"""
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: {name}, namespace: kube-amd-gpu}}
spec:
  selector: {{matchLabels: {{daemonset-name: gpu-cluster}}}}
  template:
    spec:
      nodeSelector: {{feature.node.kubernetes.io/amd-gpu: "true"}}
      containers: [{{name: {container}, image: "{image}"}}]
status: {{desiredNumberScheduled: 1, numberReady: 0}}
"""


@pytest.mark.parametrize("config", ["gpu-cluster", "default"])
def test_amd_gpu_operator_device_plugin_is_recognised(config: str) -> None:
    """A DeviceConfig named gpu-cluster runs `gpu-cluster-device-plugin` (image rocm/k8s-device-plugin): not 'no AMD
    device plugin', and never the standalone manifest on top of it."""
    plugin = amd_operator_ds(f"{config}-device-plugin", "rocm/k8s-device-plugin:latest", "device-plugin")
    labeller = amd_operator_ds(f"{config}-node-labeller", "rocm/k8s-device-plugin:labeller-latest", "node-labeller")
    crash = f"""
apiVersion: v1
kind: Pod
metadata:
  name: {config}-device-plugin-x2k9p
  namespace: kube-amd-gpu
  ownerReferences: [{{apiVersion: apps/v1, kind: DaemonSet, name: {config}-device-plugin, uid: u1}}]
spec: {{nodeName: mi300x-node-01, containers: [{{name: device-plugin, image: x}}]}}
status:
  phase: Running
  containerStatuses:
  - name: device-plugin
    ready: false
    restartCount: 4
    state: {{waiting: {{reason: CrashLoopBackOff}}}}
    lastState:
      terminated:
        exitCode: 2
        reason: Error
        message: "F0821 09:51:02.118530       1 amdgpu.go:83] amdgpu driver unavailable. exiting with exit code 2."
"""
    snap = snapshot(AMD_OPERATOR_NODE, plugin, labeller, crash)
    (f,) = [f for f in run(snap, only=["gpu-not-advertised"]).findings if f.subject.name == "mi300x-node-01"]
    assert "no AMD device plugin" not in f.title, f.title
    assert f"{config}-device-plugin pod {config}-device-plugin-x2k9p" in f.title, f.title
    assert "the amdgpu kernel driver is not loaded" in f.title
    assert not any("k8s-ds-amdgpu-dp.yaml" in c for c in f.remediation.commands)


GKE_NODE = """
apiVersion: v1
kind: Node
metadata:
  name: gke-ml-t4-pool-1a2b3c4d-q8w2
  creationTimestamp: "2026-08-21T09:20:00Z"
  labels:
    cloud.google.com/gke-nodepool: t4-pool
    cloud.google.com/gke-accelerator: nvidia-tesla-t4
    cloud.google.com/gke-accelerator-count: "1"
    node.kubernetes.io/instance-type: n1-standard-8
    topology.kubernetes.io/region: us-central1
spec:
  providerID: gce://ml-prod/us-central1-a/gke-ml-t4-pool-1a2b3c4d-q8w2
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
status:
  conditions: [{type: Ready, status: "True"}]
  nodeInfo: {osImage: Container-Optimized OS from Google}
  capacity: {cpu: "8"}
  allocatable: {cpu: "7910m"}
"""

GKE_PLUGIN = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: nvidia-gpu-device-plugin-small-cos, namespace: kube-system, labels: {k8s-app: nvidia-gpu-device-plugin}}
spec:
  selector: {matchLabels: {k8s-app: nvidia-gpu-device-plugin}}
  template:
    spec:
      tolerations: [{operator: Exists}]
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: cloud.google.com/gke-accelerator, operator: Exists}
      containers: [{name: nvidia-gpu-device-plugin, image: gcr.io/gke-release/nvidia-gpu-device-plugin}]
status: {desiredNumberScheduled: 1, numberReady: 1}
---
apiVersion: v1
kind: Pod
metadata:
  name: nvidia-gpu-device-plugin-small-cos-x7k2p
  namespace: kube-system
  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: nvidia-gpu-device-plugin-small-cos, uid: u1}]
spec: {nodeName: gke-ml-t4-pool-1a2b3c4d-q8w2, containers: [{name: nvidia-gpu-device-plugin, image: x}]}
status:
  phase: Running
  containerStatuses:
  - {name: nvidia-gpu-device-plugin, ready: true, restartCount: 0, state: {running: {startedAt: "2026-08-21T09:21:00Z"}}}
"""


def test_gke_node_pool_without_a_driver_and_without_the_installer_is_told_to_install_a_driver() -> None:
    """No `cloud.google.com/gke-gpu-driver-version` label: GKE installs no driver (GPUDriverVersion unspecified = 'not
    to install any GPU driver', INSTALLATION_DISABLED = 'needs manual installation'); the installer DaemonSet of
    container-engine-accelerators selects exactly these nodes. Without it the GKE plugin polls /dev/nvidiactl silently
    (cmd/nvidia_gpu): recreating the node changes nothing."""
    (f,) = run(snapshot(GKE_NODE, GKE_PLUGIN), only=["gpu-not-advertised"]).findings
    assert "nvidia-driver-installer" in f.title and "no NVIDIA driver" in f.title, f.title
    cmds = " ".join(f.remediation.commands)
    assert ("kubectl apply -f https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/master/"
            "nvidia-driver-installer/cos/daemonset-preloaded.yaml") in cmds
    assert ("gcloud container node-pools update t4-pool --cluster ml --location us-central1 "
            "--accelerator type=nvidia-tesla-t4,count=1,gpu-driver-version=default") in cmds
    assert "delete its VM" not in f.remediation.text and "kubectl drain" not in cmds


def test_gke_node_without_gkes_plugin_on_purpose_is_not_told_to_turn_on_gke_drivers() -> None:
    """`gke-no-default-nvidia-gpu-device-plugin=true` (GKE docs: set up DRA / the NVIDIA GPU Operator) keeps GKE's
    plugin off whatever the driver version: the fix is the plugin the label was set for, or dropping the label."""
    labelled = GKE_NODE.replace("cloud.google.com/gke-nodepool: t4-pool",
                                'cloud.google.com/gke-nodepool: t4-pool\n    gke-no-default-nvidia-gpu-device-plugin: "true"')
    (f,) = run(snapshot(labelled, GKE_PLUGIN), only=["gpu-not-advertised"]).findings
    assert "gke-no-default-nvidia-gpu-device-plugin=true" in f.title, f.title
    assert not any("gpu-driver-version=default" in c for c in f.remediation.commands), f.remediation.commands
    assert "gke-no-default-nvidia-gpu-device-plugin" in f.remediation.text


def test_node_auto_provisioning_command_carries_the_cpu_and_memory_limits_it_requires() -> None:
    """GKE 'Use node auto-provisioning': 'Node auto-provisioning requires upper limits for CPU and memory. Setting
    limits for GPUs is optional'; its enable command passes --max-cpu and --max-memory with any --max-accelerator."""
    from tests.diagnostics.checks.test_pod_autoscaler_no_scale_up import L4_NODE, ca_event, pod
    snap = snapshot(L4_NODE, pod("nvidia-h100-80gb", 8), ca_event(
        "NotTriggerScaleUp", "pod didn't trigger scale-up: 2 node(s) didn't match Pod's node affinity/selector"))
    (f,) = run(snap, only=["pod-autoscaler-no-scale-up"]).findings
    nap = [c for c in f.remediation.commands if "--enable-autoprovisioning" in c]
    assert nap, f.remediation.commands
    for c in nap:
        assert "--max-cpu" in c and "--max-memory" in c and "--max-accelerator type=nvidia-h100-80gb" in c, c


@pytest.mark.parametrize("name", ["nvidia-gpu-driver-default-ubuntu22.04", "nvidia-vgpu-driver-default-ubuntu22.04",
                                  "nvidia-gpu-driver-a100-pool-rhcos4.16"])
def test_nvidiadriver_cr_driver_daemonsets_are_the_driver_layer(name: str) -> None:
    """gpu-operator internal/state/driver.go getDriverName: `nvidia-<driverType>-driver-<cr>-<osVersion>` with
    driverType gpu | vgpu (vgpu-host-manager: nvidia-vgpu-manager-<cr>-<os>); the chart's own CR is named `default`
    (deployments/gpu-operator/templates/nvidiadriver.yaml, deployDefaultCR: true) - 'default' holds 'efa', which is
    no EFA plugin. A crashing driver is the first broken layer, not the toolkit that waits on it."""
    from diagnostics.facts.accelerator_stack import diagnose_node
    from tests.diagnostics.test_accelerator_stack import NODE, OPERATOR, TOOLKIT_WAITING, ds, pod
    driver = ds(name, "nvidia.com/gpu.deploy.driver")
    operands = OPERATOR.split("---", 1)[1]  # every operand but the ClusterPolicy's nvidia-driver-daemonset
    crash = pod(f"{name}-k2x8p", name, "Running", """
  - name: nvidia-driver-ctr
    ready: false
    restartCount: 7
    state: {waiting: {reason: CrashLoopBackOff}}
    lastState: {terminated: {exitCode: 1, reason: Error}}
""")
    snap = snapshot(NODE, operands, driver, crash, TOOLKIT_WAITING)
    d = diagnose_node(snap, snap.nodes[0])
    assert (d.stack.provider, d.layer) == ("gpu-operator", "driver"), (d.layer, d.cause)
    assert f"{name}-k2x8p" in d.cause


def test_a_media_extension_mig_profile_is_named_as_the_plugin_and_mig_manager_name_it() -> None:
    """k8s-device-plugin internal/rm/rm.go: resource `nvidia.com/mig-<profile>` with '+' -> '.' (1g.10gb+me ->
    nvidia.com/mig-1g.10gb.me); the MIG manager's config is all-1g.10gb.me (gpu-operator assets/state-mig-manager/
    0400_configmap.yaml). An H100-80GB offers it: re-partitioning is the fix, not 'no such profile'."""
    from tests.diagnostics.checks.test_pod_gpu_resource_mismatch import H100_MIG, pending
    (f,) = run(snapshot(H100_MIG, pending("nvidia.com/mig-1g.10gb.me", "mig")),
               only=["pod-gpu-resource-mismatch"]).findings
    assert "No candidate node's GPU has" not in f.remediation.text, f.remediation.text
    assert "kubectl label node gpu-h100-mig nvidia.com/mig.config=all-1g.10gb.me --overwrite" in f.remediation.commands


def test_a_gpu_whose_mig_profiles_gputui_does_not_know_is_not_said_to_lack_the_profile() -> None:
    """B200's MIG profiles (1g.23gb ...) are not in gputui's table: it must not claim the GPU has no such profile."""
    from tests.diagnostics.checks.test_pod_gpu_resource_mismatch import H100_MIG, pending
    b200 = (H100_MIG.replace("NVIDIA-H100-80GB-HBM3", "NVIDIA-B200").replace("a3-highgpu-1g", "a4-highgpu-8g")
            .replace("mig-1g.10gb", "mig-1g.23gb").replace("all-1g.10gb", "all-1g.23gb"))
    (f,) = run(snapshot(b200, pending("nvidia.com/mig-3g.90gb", "mig")), only=["pod-gpu-resource-mismatch"]).findings
    assert "No candidate node's GPU has" not in f.remediation.text, f.remediation.text


def test_gpu_operator_managed_dra_kubelet_plugin_that_crashes_is_not_an_all_clear() -> None:
    """gpu-operator internal/state/dra_driver.go (GPUCluster CR; golden gpucluster-dra-driver-gpus-only.yaml): DaemonSet
    `nvidia-dra-driver-kubelet-plugin`, container `gpus`, image nvcr.io/nvidia/k8s-dra-driver-gpu. A DRA node
    publishes its GPUs as ResourceSlices only while that plugin runs: a crash-looping one is the broken layer."""
    from tests.diagnostics.test_accelerator_stack import NODE
    node = NODE.replace('nvidia.com/gpu.deploy.device-plugin: "true"', 'nvidia.com/gpu.deploy.dra-driver: "true"')
    plugin = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: nvidia-dra-driver-kubelet-plugin, namespace: gpu-operator, labels: {app: nvidia-dra-driver-kubelet-plugin}}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: nvidia-dra-driver}}
  template:
    spec:
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions: [{key: nvidia.com/gpu.present, operator: In, values: ["true"]}]
      containers: [{name: gpus, image: "nvcr.io/nvidia/k8s-dra-driver-gpu:v0.1.0"}]
status: {desiredNumberScheduled: 1, numberReady: 0}
---
apiVersion: v1
kind: Pod
metadata:
  name: nvidia-dra-driver-kubelet-plugin-7kq2m
  namespace: gpu-operator
  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: nvidia-dra-driver-kubelet-plugin, uid: u1}]
spec: {nodeName: ip-10-0-12-34.ec2.internal, containers: [{name: gpus, image: x}]}
status:
  phase: Running
  containerStatuses:
  - name: gpus
    ready: false
    restartCount: 6
    state: {waiting: {reason: CrashLoopBackOff}}
    lastState: {terminated: {exitCode: 1, reason: Error, message: "error initializing NVML: ERROR_LIBRARY_NOT_FOUND"}}
"""
    (f,) = run(snapshot(node, plugin), only=["gpu-not-advertised"]).findings
    assert "nvidia-dra-driver-kubelet-plugin-7kq2m" in f.title, f.title
    assert "ERROR_LIBRARY_NOT_FOUND" in f.title


@pytest.mark.parametrize("os_image, host", [("Bottlerocket OS 1.47.0 (aws-k8s-1.34-nvidia)", True),
                                            ("Bottlerocket OS 1.47.0 (aws-k8s-1.34)", False)])
def test_only_bottlerocket_nvidia_variants_carry_the_device_plugin(os_image: str, host: bool) -> None:
    """Bottlerocket's osImage is its os-release PRETTY_NAME, `Bottlerocket OS <version> (<variant>)`; only the
    aws-k8s-<ver>-nvidia variants ship the NVIDIA driver and device plugin. A GPU node on the standard variant has
    neither: the fix is the image (Karpenter's bottlerocket@ alias resolves the -nvidia SSM path for GPU instance
    types, aws pkg/providers/amifamily/bottlerocket.go), not 'no plugin pod to fix'."""
    from tests.diagnostics.test_accelerator_stack import NODE
    node = NODE.replace("  conditions: [{type: Ready", f"  nodeInfo: {{osImage: \"{os_image}\"}}\n  conditions: [{{type: Ready")
    (f,) = run(snapshot(node), only=["gpu-not-advertised"]).findings
    if host:
        assert "host service on Bottlerocket" in f.title, f.title
        return
    assert "host service" not in f.title and "aws-k8s-1.34" in f.title and "nvidia" in f.title, f.title
    assert "helm" not in " ".join(f.remediation.commands)
    assert any("amiSelectorTerms" in c for c in f.remediation.commands), f.remediation.commands


def test_amd_partitions_under_the_mixed_naming_strategy_are_accelerators() -> None:
    """ROCm/k8s-device-plugin (ed764684) -resource_naming_strategy=mixed: partitioned GPUs are advertised as
    amd.com/<compute>_<memory> (docs/user-guide/configuration.md: `amd.com/cpx_nps4: 64`; cmd/k8s-device-plugin
    main.go, amdgpu.go UniquePartitionConfigCount). Such a node advertises its GPUs."""
    from diagnostics.records import accelerator_total
    node = AMD_OPERATOR_NODE.replace('capacity: {cpu: "192"}', 'capacity: {cpu: "192", amd.com/cpx_nps4: "64"}') \
        .replace('allocatable: {cpu: "190"}', 'allocatable: {cpu: "190", amd.com/cpx_nps4: "64"}')
    snap = snapshot(node, amd_operator_ds("default-device-plugin", "rocm/k8s-device-plugin:latest", "device-plugin"))
    assert accelerator_total(snap.nodes[0].allocatable) == 64
    assert not run(snap, only=["gpu-not-advertised"]).findings


def test_a_time_sliced_mig_profile_renamed_by_default_is_not_a_missing_partition() -> None:
    """k8s-device-plugin api/config/v1 resources.go DefaultSharedRename: a shared resource becomes `<name>.shared`
    with renameByDefault, MIG profiles included (nvidia.com/mig-1g.10gb -> nvidia.com/mig-1g.10gb.shared). The node
    is cut into the asked profile already: re-partitioning it changes nothing."""
    from tests.diagnostics.checks.test_pod_gpu_resource_mismatch import H100_MIG, pending
    shared = H100_MIG.replace("nvidia.com/mig-1g.10gb: \"7\"", "nvidia.com/mig-1g.10gb.shared: \"28\"")
    (f,) = run(snapshot(shared, pending("nvidia.com/mig-1g.10gb", "mig")), only=["pod-gpu-resource-mismatch"]).findings
    assert "renameByDefault" in f.remediation.text, f.remediation.text
    assert not any("nvidia.com/mig.config=" in c for c in f.remediation.commands), f.remediation.commands
    assert any("nvidia.com/mig-1g.10gb.shared=1" in c for c in f.remediation.commands), f.remediation.commands


def test_eks_auto_mode_runs_the_neuron_plugin_on_the_host_too() -> None:
    """AWS 'Deploy an accelerated workload' (EKS Auto Mode): 'includes the drivers and device plugins required for
    certain instance types, such as NVIDIA and Amazon Neuron drivers. You do not have to install or update these
    components' (Trainium, Inferentia, NVIDIA). No DaemonSet is expected; installing the Neuron chart is no fix."""
    from tests.diagnostics.test_accelerator_stack import NEURON_NODE
    auto = NEURON_NODE.replace("karpenter.sh/nodepool: gpu", "karpenter.sh/nodepool: gpu\n    eks.amazonaws.com/compute-type: auto")
    (f,) = run(snapshot(auto), only=["gpu-not-advertised"]).findings
    assert "EKS Auto Mode" in f.title and "no AWS Neuron device plugin DaemonSet" not in f.title, f.title
    text = f.remediation.text + " ".join(f.remediation.commands)
    assert "helm" not in text and "nvidia" not in text.lower(), text


def test_gke_mig_partitions_are_requested_as_nvidia_gpu_with_the_partition_size_selector() -> None:
    """GKE advertises each MIG partition as nvidia.com/gpu and labels the node cloud.google.com/gke-gpu-partition-size
    (gcloud --accelerator ...,gpu-partition-size=1g.5gb); workloads select that label and request nvidia.com/gpu."""
    node = """
apiVersion: v1
kind: Node
metadata:
  name: gke-ml-a100-mig-6d2c1b0a-k3j9
  labels:
    cloud.google.com/gke-nodepool: a100-mig
    cloud.google.com/gke-accelerator: nvidia-tesla-a100
    cloud.google.com/gke-accelerator-count: "1"
    cloud.google.com/gke-gpu-partition-size: 1g.5gb
    node.kubernetes.io/instance-type: a2-highgpu-1g
    node-type: mig
spec: {providerID: gce://p/us-central1-a/gke-ml-a100-mig-6d2c1b0a-k3j9,
       taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]}
status:
  conditions: [{type: Ready, status: "True"}]
  capacity: {nvidia.com/gpu: "7"}
  allocatable: {nvidia.com/gpu: "7"}
"""
    from tests.diagnostics.checks.test_pod_gpu_resource_mismatch import pending
    (f,) = run(snapshot(node, pending("nvidia.com/mig-1g.5gb", "mig")), only=["pod-gpu-resource-mismatch"]).findings
    assert "cloud.google.com/gke-gpu-partition-size" in f.remediation.text, f.remediation.text
    assert not any("nvidia.com/mig.config" in c for c in f.remediation.commands), f.remediation.commands


NVDP_CHART_DS = """
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: nvdp-nvidia-device-plugin
  namespace: nvidia-device-plugin
  labels: {app.kubernetes.io/name: nvidia-device-plugin, app.kubernetes.io/instance: nvdp}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: nvidia-device-plugin, app.kubernetes.io/instance: nvdp}}
  template:
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions: [{key: feature.node.kubernetes.io/pci-10de.present, operator: In, values: ["true"]}]
            - matchExpressions: [{key: feature.node.kubernetes.io/cpu-model.vendor_id, operator: In, values: ["NVIDIA"]}]
            - matchExpressions: [{key: nvidia.com/gpu.present, operator: In, values: ["true"]}]
      tolerations: [{key: CriticalAddonsOnly, operator: Exists}, {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers: [{name: nvidia-device-plugin-ctr, image: "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"}]
status: {desiredNumberScheduled: 0, numberReady: 0}
"""


def test_the_device_plugin_charts_default_affinity_without_nfd_names_nfd() -> None:
    """k8s-device-plugin deployments/helm/nvidia-device-plugin/values.yaml: the default affinity requires NFD's
    feature.node.kubernetes.io/pci-10de.present=true (or cpu-model.vendor_id=NVIDIA, or nvidia.com/gpu.present=true);
    the chart deploys NFD only with nfd.enabled or gfd.enabled (Chart.yaml condition). Without NFD the DaemonSet
    wants 0 pods: the fix is NFD or the label, named."""
    from tests.diagnostics.test_accelerator_stack import NODE
    node = "\n".join(ln for ln in NODE.splitlines() if "nvidia.com/gpu.deploy." not in ln and "gpu.present" not in ln)
    (f,) = run(snapshot(node, NVDP_CHART_DS), only=["gpu-not-advertised"]).findings
    assert "Node Feature Discovery" in f.title and "feature.node.kubernetes.io/pci-10de.present" in f.title, f.title
    cmds = f.remediation.commands
    assert ("helm upgrade nvdp nvdp/nvidia-device-plugin -n nvidia-device-plugin --reuse-values --set nfd.enabled=true"
            in cmds), cmds
    assert "kubectl label node ip-10-0-12-34.ec2.internal nvidia.com/gpu.present=true" in cmds


def test_operands_turned_off_on_the_node_are_named_not_told_to_add_deploy_labels() -> None:
    """gpu-operator controllers/state_manager.go updateGPUStateLabels: nvidia.com/gpu.deploy.operands=false removes every
    nvidia.com/gpu.deploy.* label ('Operands are disabled for node'); adding one back by hand is undone."""
    from tests.diagnostics.test_accelerator_stack import NODE, OPERATOR
    node = "\n".join(ln for ln in NODE.splitlines() if "nvidia.com/gpu.deploy." not in ln).replace(
        '    nvidia.com/gpu.present: "true"', '    nvidia.com/gpu.present: "true"\n    nvidia.com/gpu.deploy.operands: "false"')
    (f,) = run(snapshot(node, OPERATOR), only=["gpu-not-advertised"]).findings
    assert "nvidia.com/gpu.deploy.operands=false" in f.title, f.title
    assert "kubectl label node ip-10-0-12-34.ec2.internal nvidia.com/gpu.deploy.operands-" in f.remediation.commands
    assert "Give the node the labels" not in f.remediation.text


@pytest.mark.parametrize("accel, gpus, machine, count", [
    ("nvidia-h100-80gb", 3, "a3-highgpu-4g", 4),        # A3 High: 1, 2, 4 or 8 GPUs
    ("nvidia-tesla-a100", 16, "a2-megagpu-16g", 16),    # A2 Standard: a2-highgpu-1g..8g, a2-megagpu-16g
    ("nvidia-h100-mega-80gb", 2, "a3-megagpu-8g", 8),   # A3 Mega comes with 8 GPUs only
    ("nvidia-l4", 2, "g2-standard-24", 2),
])
def test_the_node_pool_command_names_a_machine_type_that_exists_with_its_gpu_count(
        accel: str, gpus: int, machine: str, count: int) -> None:
    """GCE accelerator-optimized machine types come with fixed GPU counts (A3 High 1/2/4/8, A3 Mega 8, A2 Standard
    1/2/4/8 and a2-megagpu-16g, G2 1/2/4/8): --accelerator count must be the machine's, at least the pod's request."""
    from tests.diagnostics.checks.test_pod_autoscaler_no_scale_up import L4_NODE, ca_event, pod
    snap = snapshot(L4_NODE.replace("nvidia-l4", "nvidia-tesla-t4"), pod(accel, gpus), ca_event(
        "NotTriggerScaleUp", "pod didn't trigger scale-up: 2 node(s) didn't match Pod's node affinity/selector"))
    (f,) = run(snap, only=["pod-autoscaler-no-scale-up"]).findings
    create = next(c for c in f.remediation.commands if "node-pools create" in c)
    assert f"--accelerator type={accel},count={count}," in create and f"--machine-type {machine} " in create, create


@pytest.mark.parametrize("state", ["upgrade-required", "cordon-required", "wait-for-jobs-required"])
def test_a_driver_upgrade_that_has_not_touched_the_driver_yet_does_not_hide_a_broken_layer(state: str) -> None:
    """k8s-operator-libs pkg/upgrade/consts.go: upgrade-required = 'the driver pod on the node is not up-to-date',
    cordon-required / wait-for-jobs-required come before the driver pod is restarted (pod-restart-required). Until
    then the old driver and its plugin keep running: a node advertising nothing is broken, not in maintenance."""
    from tests.diagnostics.test_accelerator_stack import DRIVER_CRASH, NODE, OPERATOR, PLUGIN_WAITING, TOOLKIT_WAITING
    node = NODE.replace('    nvidia.com/gpu.present: "true"',
                        f'    nvidia.com/gpu.present: "true"\n    nvidia.com/gpu-driver-upgrade-state: {state}')
    (f,) = run(snapshot(node, OPERATOR, DRIVER_CRASH, TOOLKIT_WAITING, PLUGIN_WAITING),
               only=["gpu-not-advertised"]).findings
    assert f.severity is not None and f.severity.name == "ERROR", (f.severity, f.title)
    assert "nvidia-driver-daemonset-7xk2p" in f.title, f.title


def test_a_driver_upgrade_restarting_the_driver_pod_is_maintenance() -> None:
    from tests.diagnostics.test_accelerator_stack import NODE, OPERATOR
    node = NODE.replace('    nvidia.com/gpu.present: "true"',
                        '    nvidia.com/gpu.present: "true"\n    nvidia.com/gpu-driver-upgrade-state: pod-restart-required')
    (f,) = run(snapshot(node, OPERATOR), only=["gpu-not-advertised"]).findings
    assert f.severity is not None and f.severity.name == "INFO", (f.severity, f.title)


def test_gke_node_with_gkes_plugin_off_and_a_dra_driver_that_does_not_select_it() -> None:
    """GKE's DRA set-up: gke-no-default-nvidia-gpu-device-plugin=true on the pool, the NVIDIA DRA driver from Helm.
    When its kubelet plugin's affinity does not select the node, 'no DRA driver in the cluster' would be false."""
    labelled = GKE_NODE.replace("cloud.google.com/gke-nodepool: t4-pool",
                                'cloud.google.com/gke-nodepool: t4-pool\n    gke-no-default-nvidia-gpu-device-plugin: "true"')
    dra = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: nvidia-dra-driver-gpu-kubelet-plugin, namespace: nvidia-dra-driver-gpu}
spec:
  selector: {matchLabels: {app: kubelet-plugin}}
  template:
    spec:
      nodeSelector: {nvidia.com/gpu.present: "true"}
      containers: [{name: gpus, image: "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.8.0"}]
status: {desiredNumberScheduled: 0, numberReady: 0}
"""
    (f,) = run(snapshot(labelled, dra), only=["gpu-not-advertised"]).findings
    assert "nvidia-dra-driver-gpu-kubelet-plugin" in f.title and "does not select" in f.title, f.title


def test_nfd_class_specific_pci_label_means_nfd_saw_the_gpu() -> None:
    """gpu-operator controllers/state_manager.go gpuNodeLabels: pci-10de.present, pci-0302_10de.present or
    pci-0300_10de.present = "true" make a GPU node. With one of them set NFD did its part: the operator is the one
    that has not labelled the node."""
    from tests.diagnostics.test_accelerator_stack import NODE, OPERATOR
    node = "\n".join(ln for ln in NODE.splitlines() if "nvidia.com/gpu.deploy." not in ln).replace(
        '    nvidia.com/gpu.present: "true"', '    feature.node.kubernetes.io/pci-0302_10de.present: "true"')
    (f,) = run(snapshot(node, OPERATOR), only=["gpu-not-advertised"]).findings
    assert "found no NVIDIA PCI device" not in f.title, f.title
    assert "feature.node.kubernetes.io/pci-0302_10de.present" in str([e.path for e in f.evidence])


def test_mig_single_strategy_nodes_already_cut_into_the_profile_are_asked_for_as_nvidia_gpu() -> None:
    """k8s-device-plugin README 'MIG strategies': with `single` every MIG device is advertised as nvidia.com/gpu and GFD
    names the profile in nvidia.com/gpu.product (`...-MIG-1g.10gb`, internal/lm resource.go). A pod asking for
    nvidia.com/mig-1g.10gb there needs nvidia.com/gpu and that product selector - not a re-partition into the
    partitioning it already has, and nvidia.com/gpu does fit."""
    from tests.diagnostics.checks.test_pod_gpu_resource_mismatch import H100_MIG, pending
    single = (H100_MIG.replace("nvidia.com/mig.strategy: mixed", "nvidia.com/mig.strategy: single")
              .replace("NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb")
              .replace('nvidia.com/mig-1g.10gb: "7"', 'nvidia.com/gpu: "7"'))
    (f,) = run(snapshot(single, pending("nvidia.com/mig-1g.10gb", "mig")), only=["pod-gpu-resource-mismatch"]).findings
    assert "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3-MIG-1g.10gb" in f.remediation.text, f.remediation.text
    assert "would not fit" not in f.remediation.text
    assert not any("nvidia.com/mig.config=" in c for c in f.remediation.commands), f.remediation.commands
    assert any("nvidia.com/gpu=1" in c for c in f.remediation.commands), f.remediation.commands


def test_nvidiadriver_cr_driver_daemonsets_are_operator_components_for_bundles() -> None:
    """The bundle collects GPU Operator pods' logs by these DaemonSets; the chart's NVIDIADriver CR `default` runs the
    driver as nvidia-gpu-driver-default-<os> (gpu-operator internal/state/driver.go getDriverName)."""
    from diagnostics.facts.gpu_components import operator_daemonsets
    from tests.diagnostics.test_accelerator_stack import ds
    snap = snapshot(ds("nvidia-gpu-driver-default-ubuntu22.04", "nvidia.com/gpu.deploy.driver"))
    assert [d.meta.name for d in operator_daemonsets(snap)] == ["nvidia-gpu-driver-default-ubuntu22.04"]


def test_gke_autopilot_is_not_told_to_create_node_pools() -> None:
    """Autopilot (nodes gk3-<cluster>-<pool>-...) provisions GPU nodes itself from the pod's gke-accelerator selector;
    node pools and node auto-provisioning limits are not the user's to manage there."""
    from tests.diagnostics.checks.test_pod_autoscaler_no_scale_up import L4_NODE, ca_event, pod
    auto = L4_NODE.replace("gke-ml-prod-l4-pool-8c2f1e7a-x7k2", "gk3-ml-prod-nap-8c2f1e7a-x7k2") \
        .replace("cloud.google.com/gke-nodepool: l4-pool", "cloud.google.com/gke-nodepool: nap-8c2f1e7a")
    snap = snapshot(auto, pod("nvidia-h100-80gb", 8), ca_event(
        "NotTriggerScaleUp", "pod didn't trigger scale-up: 2 node(s) didn't match Pod's node affinity/selector"))
    (f,) = run(snap, only=["pod-autoscaler-no-scale-up"]).findings
    assert not any("node-pools create" in c or "enable-autoprovisioning" in c for c in f.remediation.commands), \
        f.remediation.commands
    assert "Autopilot" in f.remediation.text, f.remediation.text
