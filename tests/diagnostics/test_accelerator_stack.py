"""The accelerator stack of a node and its first broken layer, as gpu-not-advertised reports them.

Objects are shaped like the upstream ones: GPU Operator operands (`assets/state-*`: DaemonSet names,
init containers, `nvidia.com/gpu.deploy.*` gates), the standalone plugin's NVML failure block
(k8s-device-plugin `internal/plugin/factory.go`), the Neuron chart's `neuron-device-plugin`.
"""

from __future__ import annotations

from diagnostics import Severity, run
from diagnostics.facts.accelerator_stack import diagnose_node, logs_to_read, node_stack, nvml_error
from tests.builders import snapshot

NODE = """
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-12-34.ec2.internal
  creationTimestamp: "2026-08-21T09:20:00Z"
  labels:
    karpenter.sh/nodepool: gpu
    karpenter.k8s.aws/ec2nodeclass: gpu
    node.kubernetes.io/instance-type: g5.2xlarge
    karpenter.k8s.aws/instance-gpu-count: "1"
    karpenter.k8s.aws/instance-gpu-manufacturer: nvidia
    nvidia.com/gpu.present: "true"
    nvidia.com/gpu.deploy.driver: "true"
    nvidia.com/gpu.deploy.container-toolkit: "true"
    nvidia.com/gpu.deploy.operator-validator: "true"
    nvidia.com/gpu.deploy.device-plugin: "true"
spec:
  providerID: aws:///us-east-1b/i-0abc123def4567890
  taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
status:
  conditions: [{type: Ready, status: "True", reason: KubeletReady}]
  capacity: {cpu: "8", memory: 32Gi, pods: "58"}
  allocatable: {cpu: 7910m, memory: 30Gi, pods: "58"}
"""


def ds(name: str, gate: str, ns: str = "gpu-operator") -> str:
    return f"""
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: {name}, namespace: {ns}}}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    spec:
      nodeSelector: {{{gate}: "true"}}
      tolerations: [{{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}}]
      containers: [{{name: c, image: nvcr.io/nvidia/x}}]
status: {{desiredNumberScheduled: 1, numberReady: 0}}
"""


OPERATOR = "---".join([
    ds("nvidia-driver-daemonset", "nvidia.com/gpu.deploy.driver"),
    ds("nvidia-container-toolkit-daemonset", "nvidia.com/gpu.deploy.container-toolkit"),
    ds("nvidia-operator-validator", "nvidia.com/gpu.deploy.operator-validator"),
    ds("nvidia-device-plugin-daemonset", "nvidia.com/gpu.deploy.device-plugin"),
])


def pod(name: str, owner: str, phase: str, statuses: str, ns: str = "gpu-operator") -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {ns}
  ownerReferences: [{{apiVersion: apps/v1, kind: DaemonSet, name: {owner}, uid: u1}}]
spec: {{nodeName: ip-10-0-12-34.ec2.internal, containers: [{{name: c, image: x}}]}}
status:
  phase: {phase}
  containerStatuses:
{statuses}"""


DRIVER_CRASH = pod("nvidia-driver-daemonset-7xk2p", "nvidia-driver-daemonset", "Pending", """
  - name: nvidia-driver-ctr
    ready: false
    restartCount: 0
    state: {waiting: {reason: PodInitializing}}
  - name: k8s-driver-manager
    ready: false
    restartCount: 9
    state: {waiting: {reason: CrashLoopBackOff, message: back-off 5m0s restarting failed container}}
    lastState:
      terminated:
        exitCode: 1
        reason: Error
        message: |
          Uncordoning node ip-10-0-12-34.ec2.internal...
          Could not unload NVIDIA driver kernel modules, driver is in use
""")
TOOLKIT_WAITING = pod("nvidia-container-toolkit-daemonset-q8w2n", "nvidia-container-toolkit-daemonset", "Pending", """
  - {name: nvidia-container-toolkit-ctr, ready: false, restartCount: 0, state: {waiting: {reason: PodInitializing}}}
  - {name: driver-validation, ready: false, restartCount: 0, state: {running: {}}}
""")
PLUGIN_WAITING = pod("nvidia-device-plugin-daemonset-zz9kq", "nvidia-device-plugin-daemonset", "Pending", """
  - {name: nvidia-device-plugin, ready: false, restartCount: 0, state: {waiting: {reason: PodInitializing}}}
  - {name: toolkit-validation, ready: false, restartCount: 0, state: {running: {}}}
""")


def test_operator_driver_crash_is_the_first_broken_layer_not_the_plugins_init() -> None:
    snap = snapshot(NODE, OPERATOR, DRIVER_CRASH, TOOLKIT_WAITING, PLUGIN_WAITING)
    d = diagnose_node(snap, snap.nodes[0])
    assert (d.stack.provider, d.layer) == ("gpu-operator", "driver")
    assert "nvidia-driver-daemonset-7xk2p" in d.cause and "k8s-driver-manager: CrashLoopBackOff, 9 restarts" in d.cause
    assert "PodInitializing" not in d.cause
    (f,) = run(snap, only=["gpu-not-advertised"]).findings
    assert f.severity is Severity.ERROR
    lines = [e.value for e in f.evidence if e.path.startswith("lastState.terminated.message")]
    assert lines and "Could not unload NVIDIA driver kernel modules, driver is in use" in lines[0]
    assert ("kubectl logs -n gpu-operator nvidia-driver-daemonset-7xk2p -c k8s-driver-manager --previous --tail=50"
            in f.remediation.commands)
    assert not any("delete node" in c for c in f.remediation.commands)  # a fresh node would run the same operator


def test_young_node_whose_plugin_is_starting_is_info_and_says_how_long() -> None:
    young = NODE.replace('creationTimestamp: "2026-08-21T09:20:00Z"', 'creationTimestamp: "2026-08-21T09:58:45Z"')
    plugin = ds("nvidia-device-plugin-daemonset", "nvidia.com/gpu.present", ns="kube-system")
    starting = pod("nvidia-device-plugin-daemonset-5bf8q", "nvidia-device-plugin-daemonset", "Pending", """
  - {name: nvidia-device-plugin-ctr, ready: false, restartCount: 0, state: {waiting: {reason: ContainerCreating}}}
""", ns="kube-system")
    (f,) = run(snapshot(young, plugin, starting), only=["gpu-not-advertised"]).findings
    assert f.severity is Severity.INFO
    assert "still starting" in f.title and "75s old, start-up allowance 15m" in f.title
    # The same node 40 minutes old: an error, and the text says how old.
    (old,) = run(snapshot(NODE, plugin, starting), only=["gpu-not-advertised"]).findings
    assert old.severity is Severity.ERROR
    assert any(e.path == "metadata.creationTimestamp" and e.value.startswith("40m old") for e in old.evidence)


def test_nvml_library_not_found_names_the_node_image() -> None:
    plugin = ds("nvidia-device-plugin-daemonset", "nvidia.com/gpu.present", ns="kube-system")
    crash = pod("nvidia-device-plugin-daemonset-5bf8q", "nvidia-device-plugin-daemonset", "Running", """
  - name: nvidia-device-plugin-ctr
    ready: false
    restartCount: 11
    state: {waiting: {reason: CrashLoopBackOff}}
    lastState:
      terminated:
        exitCode: 1
        reason: Error
        message: |
          I0821 09:41:02.118530       1 factory.go:48] Failed to initialize NVML: ERROR_LIBRARY_NOT_FOUND.
          E0821 09:41:02.118571       1 main.go:132] error starting plugins: error creating plugin manager: unable to create plugin manager: nvml init failed: ERROR_LIBRARY_NOT_FOUND
""", ns="kube-system")
    (f,) = run(snapshot(NODE, plugin, crash), only=["gpu-not-advertised"]).findings
    assert "ERROR_LIBRARY_NOT_FOUND" in f.title and "no NVIDIA driver" in f.title
    assert "NVIDIA GPU AMI" in f.remediation.text
    assert "kubectl get ec2nodeclass gpu -o jsonpath='{.status.amis}'" in f.remediation.commands


NEURON_NODE = (NODE.replace("g5.2xlarge", "inf2.xlarge")
               .replace("karpenter.k8s.aws/instance-gpu-count: \"1\"", "karpenter.k8s.aws/instance-accelerator-count: \"1\"")
               .replace("karpenter.k8s.aws/instance-gpu-manufacturer: nvidia",
                        "karpenter.k8s.aws/instance-accelerator-manufacturer: aws")
               .replace("{key: nvidia.com/gpu, value: \"true\", effect: NoSchedule}",
                        "{key: aws.amazon.com/neuron, value: \"true\", effect: NoSchedule}"))


def test_neuron_node_without_its_plugin_is_not_told_to_patch_the_nvidia_plugin() -> None:
    plugin = ds("nvidia-device-plugin-daemonset", "nvidia.com/gpu.present", ns="kube-system")
    snap = snapshot(NEURON_NODE, plugin)
    assert node_stack(snap, snap.nodes[0]).vendor == "neuron"
    (f,) = run(snap, only=["gpu-not-advertised"]).findings
    assert "advertises 0 Neuron devices: no AWS Neuron device plugin DaemonSet" in f.title
    text = f.remediation.text + " ".join(f.remediation.commands)
    assert "nvidia" not in text.lower()
    assert any("oci://public.ecr.aws/neuron/neuron-helm-chart" in c for c in f.remediation.commands)


def test_nvml_error_spellings() -> None:
    assert nvml_error("Failed to initialize NVML: Driver/library version mismatch") == "Driver/library version mismatch"
    assert nvml_error("nvml init failed: ERROR_LIBRARY_NOT_FOUND") == "ERROR_LIBRARY_NOT_FOUND"
    assert nvml_error("Failed to initialize NVML: could not load NVML library.") == "ERROR_LIBRARY_NOT_FOUND"
    assert nvml_error("Starting to serve 'nvidia.com/gpu'") == ""


YOUNG_CLAIM = """
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: gpu-7xk2q
  creationTimestamp: "2026-08-21T09:57:30Z"
  labels: {karpenter.sh/nodepool: gpu, node.kubernetes.io/instance-type: g5.2xlarge}
spec:
  resources: {requests: {nvidia.com/gpu: "1"}}
status:
  nodeName: ip-10-0-12-34.ec2.internal
  providerID: aws:///us-east-1b/i-0abc123def4567890
  conditions:
  - {type: Launched, status: "True", reason: Launched, lastTransitionTime: "2026-08-21T09:58:00Z"}
  - {type: Registered, status: "True", reason: Registered, lastTransitionTime: "2026-08-21T09:58:45Z"}
  - type: Initialized
    status: Unknown
    reason: ResourceNotRegistered
    message: Resource "nvidia.com/gpu" was requested but not registered
    lastTransitionTime: "2026-08-21T09:58:45Z"
"""


def test_a_75_second_old_node_gets_at_most_info_from_every_check() -> None:
    young = NODE.replace('creationTimestamp: "2026-08-21T09:20:00Z"', 'creationTimestamp: "2026-08-21T09:58:45Z"')
    plugin = ds("nvidia-device-plugin-daemonset", "nvidia.com/gpu.present", ns="kube-system")
    starting = pod("nvidia-device-plugin-daemonset-5bf8q", "nvidia-device-plugin-daemonset", "Pending", """
  - {name: nvidia-device-plugin-ctr, ready: false, restartCount: 0, state: {waiting: {reason: ContainerCreating}}}
""", ns="kube-system")
    report = run(snapshot(young, plugin, starting, YOUNG_CLAIM))
    assert report.findings, "the starting node is still shown"
    assert max(f.severity or Severity.OK for f in report.findings) <= Severity.INFO, [
        (f.check, f.severity, f.title) for f in report.findings]


def test_operator_maintenance_is_info_not_a_missing_plugin() -> None:
    paused = NODE.replace('nvidia.com/gpu.deploy.device-plugin: "true"',
                          "nvidia.com/gpu.deploy.device-plugin: paused-for-mig-change")
    (f,) = run(snapshot(paused, OPERATOR), only=["gpu-not-advertised"]).findings
    assert f.severity is Severity.INFO
    assert "GPU Operator maintenance in progress (nvidia.com/gpu.deploy.device-plugin=paused-for-mig-change)" in f.title


AMD_NODE = (NODE.replace("g5.2xlarge", "g4ad.xlarge")
            .replace("karpenter.k8s.aws/instance-gpu-manufacturer: nvidia", "karpenter.k8s.aws/instance-gpu-manufacturer: amd")
            .replace("{key: nvidia.com/gpu, value: \"true\", effect: NoSchedule}", "{key: amd.com/gpu, value: \"true\", effect: NoSchedule}"))


def test_amd_node_is_told_about_the_amd_plugin_and_its_driver() -> None:
    nvidia = ds("nvidia-device-plugin-daemonset", "nvidia.com/gpu.present", ns="kube-system")
    (f,) = run(snapshot(AMD_NODE, nvidia), only=["gpu-not-advertised"]).findings
    assert "no AMD device plugin DaemonSet" in f.title
    assert "nvidia" not in (f.remediation.text + " ".join(f.remediation.commands)).lower()
    amd = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: amdgpu-device-plugin-daemonset, namespace: kube-system}
spec:
  selector: {matchLabels: {name: amdgpu-dp-ds}}
  template:
    spec:
      tolerations: [{key: amd.com/gpu, operator: Exists, effect: NoSchedule}]
      containers: [{name: amdgpu-dp-cntr, image: rocm/k8s-device-plugin}]
status: {desiredNumberScheduled: 1, numberReady: 0}
"""
    crash = pod("amdgpu-device-plugin-daemonset-k2x8p", "amdgpu-device-plugin-daemonset", "Running", """
  - name: amdgpu-dp-cntr
    ready: false
    restartCount: 6
    state: {waiting: {reason: CrashLoopBackOff}}
    lastState:
      terminated:
        exitCode: 2
        reason: Error
        message: "F0821 09:51:02.118530       1 amdgpu.go:83] amdgpu driver unavailable. exiting with exit code 2. error: no such file"
""", ns="kube-system")
    (f,) = run(snapshot(AMD_NODE, nvidia, amd, crash), only=["gpu-not-advertised"]).findings
    assert "amdgpu-device-plugin-daemonset pod amdgpu-device-plugin-daemonset-k2x8p" in f.title
    assert "the amdgpu kernel driver is not loaded" in f.title
    assert not any("nvidia" in c for c in f.remediation.commands)


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
spec:
  providerID: gce://ml-prod/us-central1-a/gke-ml-t4-pool-1a2b3c4d-q8w2
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
status:
  conditions: [{type: Ready, status: "True"}]
  capacity: {cpu: "8"}
  allocatable: {cpu: "7910m"}
"""


def test_gke_manual_driver_installer_is_the_first_broken_layer() -> None:
    """No `cloud.google.com/gke-gpu-driver-version` label: the nvidia-driver-installer DaemonSet installs the driver."""
    installer = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: nvidia-driver-installer, namespace: kube-system}
spec:
  selector: {matchLabels: {k8s-app: nvidia-driver-installer}}
  template:
    spec:
      tolerations: [{operator: Exists}]
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: cloud.google.com/gke-accelerator, operator: Exists}
              - {key: cloud.google.com/gke-gpu-driver-version, operator: DoesNotExist}
      containers: [{name: pause, image: gcr.io/google-containers/pause:2.0}]
status: {desiredNumberScheduled: 1, numberReady: 0}
"""
    failing = pod("nvidia-driver-installer-7xk2p", "nvidia-driver-installer", "Pending", """
  - {name: pause, ready: false, restartCount: 0, state: {waiting: {reason: PodInitializing}}}
  - name: nvidia-driver-installer
    ready: false
    restartCount: 5
    state: {waiting: {reason: CrashLoopBackOff}}
    lastState: {terminated: {exitCode: 1, reason: Error}}
""", ns="kube-system").replace("ip-10-0-12-34.ec2.internal", "gke-ml-t4-pool-1a2b3c4d-q8w2")
    snap = snapshot(GKE_NODE, installer, failing)
    d = diagnose_node(snap, snap.nodes[0])
    assert (d.stack.provider, d.layer) == ("gke", "driver installer")
    (f,) = run(snap, only=["gpu-not-advertised"]).findings
    assert "nvidia-driver-installer pod nvidia-driver-installer-7xk2p is not ready (nvidia-driver-installer: " \
           "CrashLoopBackOff, 5 restarts" in f.title
    assert "GKE NVIDIA driver installer" in f.remediation.text
    assert not any("helm" in c or "karpenter" in c.lower() for c in f.remediation.commands)


def test_a_running_plugin_that_found_nothing_is_explained_by_its_log() -> None:
    """`failOnInitError: false`: the plugin stays Running and Ready after an NVML error; only its log says why."""
    plugin = ds("nvidia-device-plugin-daemonset", "nvidia.com/gpu.present", ns="kube-system")
    up = pod("nvidia-device-plugin-daemonset-5bf8q", "nvidia-device-plugin-daemonset", "Running", """
  - {name: nvidia-device-plugin-ctr, ready: true, restartCount: 0, state: {running: {startedAt: "2026-08-21T09:21:00Z"}}}
""", ns="kube-system")
    snap = snapshot(NODE, plugin, up)
    assert logs_to_read(snap) == [("kube-system", "nvidia-device-plugin-daemonset-5bf8q", "nvidia-device-plugin-ctr", False)]
    log = ("I0821 09:21:02.1 main.go:356] Retrieving plugins.\n"
           "E0821 09:21:02.2 factory.go:112] Failed to initialize NVML: Driver Not Loaded.\n"
           "I0821 09:21:02.3 main.go:172] Failed to start one or more plugins. Retrying in 30s...\n")
    snap = snapshot(NODE, plugin, up, pod_logs={
        "kube-system/nvidia-device-plugin-daemonset-5bf8q/nvidia-device-plugin-ctr": log})
    (f,) = run(snap, only=["gpu-not-advertised"]).findings
    assert "is running but registered nothing: Failed to initialize NVML: Driver Not Loaded" in f.title
    assert any(e.kind.value == "log" and "Driver Not Loaded" in e.value for e in f.evidence)


def test_library_not_found_names_the_non_gpu_ami_the_nodeclass_resolved() -> None:
    plugin = ds("nvidia-device-plugin-daemonset", "nvidia.com/gpu.present", ns="kube-system")
    crash = pod("nvidia-device-plugin-daemonset-5bf8q", "nvidia-device-plugin-daemonset", "Running", """
  - name: nvidia-device-plugin-ctr
    ready: false
    restartCount: 11
    state: {waiting: {reason: CrashLoopBackOff}}
    lastState: {terminated: {exitCode: 1, reason: Error}}
""", ns="kube-system")
    claim = """
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: gpu-7xk2q, labels: {karpenter.sh/nodepool: gpu}}
spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}}
status:
  nodeName: ip-10-0-12-34.ec2.internal
  imageID: ami-0b1c2d3e4f5a69788
  conditions: [{type: Initialized, status: Unknown, reason: ResourceNotRegistered}]
"""
    nodeclass = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu}
spec: {amiSelectorTerms: [{name: "amazon-eks-node-al2023-x86_64-standard-1.34-*"}]}
status:
  amis:
  - {id: ami-0b1c2d3e4f5a69788, name: amazon-eks-node-al2023-x86_64-standard-1.34-v20260805}
"""
    log = "E0821 09:41:02.118571 1 main.go:132] error starting plugins: error creating plugin manager: " \
          "unable to create plugin manager: nvml init failed: ERROR_LIBRARY_NOT_FOUND\n"
    snap = snapshot(NODE, plugin, crash, claim, nodeclass, pod_logs={
        "kube-system/nvidia-device-plugin-daemonset-5bf8q/nvidia-device-plugin-ctr": log})
    (f,) = run(snap, only=["gpu-not-advertised"]).findings
    assert "ERROR_LIBRARY_NOT_FOUND" in f.title
    assert "the node runs ami-0b1c2d3e4f5a69788 (amazon-eks-node-al2023-x86_64-standard-1.34-v20260805), not a GPU image" \
        in f.title
    assert any(e.path == "status.imageID" for e in f.evidence)


def test_operator_node_without_nfd_labels_is_blamed_on_node_feature_discovery() -> None:
    """No `nvidia.com/gpu.present` (NFD found no NVIDIA PCI device) means no deploy labels: every operand skips the node."""
    bare = "\n".join(line for line in NODE.splitlines() if "nvidia.com/gpu.deploy" not in line
                     and "nvidia.com/gpu.present" not in line)
    snap = snapshot(bare, OPERATOR)
    d = diagnose_node(snap, snap.nodes[0])
    assert (d.stack.provider, d.layer) == ("gpu-operator", "driver")
    assert "did not label the node nvidia.com/gpu.present=true (Node Feature Discovery" in d.cause
    assert "NFD worker" in d.fix


def test_a_neuron_chart_that_does_not_list_the_instance_type() -> None:
    trn2 = NEURON_NODE.replace("inf2.xlarge", "trn2.48xlarge")
    chart = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: neuron-device-plugin, namespace: kube-system}
spec:
  selector: {matchLabels: {name: neuron-device-plugin-ds}}
  template:
    spec:
      tolerations: [{key: aws.amazon.com/neuron, operator: Exists, effect: NoSchedule}]
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: node.kubernetes.io/instance-type, operator: In, values: [inf1.xlarge, inf2.xlarge, trn1.2xlarge]}
      containers: [{name: neuron-device-plugin, image: public.ecr.aws/neuron/neuron-device-plugin:2.22.4.0}]
status: {desiredNumberScheduled: 0, numberReady: 0}
"""
    (f,) = run(snapshot(trn2, chart), only=["gpu-not-advertised"]).findings
    assert "its affinity lists instance types, and trn2.48xlarge is not one" in f.title
    assert "neuronInstances" in f.remediation.text


def test_a_young_node_waiting_for_its_nfd_labels_is_info() -> None:
    young = NODE.replace('creationTimestamp: "2026-08-21T09:20:00Z"', 'creationTimestamp: "2026-08-21T09:58:45Z"')
    bare = "\n".join(line for line in young.splitlines() if "nvidia.com/gpu.deploy" not in line
                     and "nvidia.com/gpu.present" not in line)
    (f,) = run(snapshot(bare, OPERATOR), only=["gpu-not-advertised"]).findings
    assert f.severity is Severity.INFO and "still starting" in f.title


def test_a_failed_driver_upgrade_is_named_before_the_layer_it_broke() -> None:
    failed = NODE.replace('    nvidia.com/gpu.present: "true"\n',
                          '    nvidia.com/gpu.present: "true"\n    nvidia.com/gpu-driver-upgrade-state: upgrade-failed\n')
    (f,) = run(snapshot(failed, OPERATOR, DRIVER_CRASH, TOOLKIT_WAITING, PLUGIN_WAITING),
               only=["gpu-not-advertised"]).findings
    assert "GPU driver upgrade failed (nvidia.com/gpu-driver-upgrade-state=upgrade-failed); nvidia-driver-daemonset" in f.title
    assert "do not remove the label by hand" in f.remediation.text
