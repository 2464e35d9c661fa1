"""gpu-not-advertised: scenario A of karpenter-scenarios.md, plus the passing and skipped cases."""

from __future__ import annotations

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.snapshot import SourceState
from tests.builders import snapshot
from tests.diagnostics.checks.test_gpu_allocatable_below_capacity import EFA

NODE = """
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-12-34.ec2.internal
  creationTimestamp: "2026-08-21T09:40:00Z"
  labels:
    karpenter.sh/nodepool: gpu
    karpenter.sh/registered: "true"
    node.kubernetes.io/instance-type: g5.2xlarge
    karpenter.k8s.aws/instance-gpu-count: "1"
    karpenter.k8s.aws/instance-gpu-name: a10g
spec:
  providerID: aws:///us-east-1b/i-0abc123def4567890
  taints:
  - {key: nvidia.com/gpu, value: "true", effect: NoSchedule}
  - {key: dedicated, value: ml-training, effect: NoSchedule}
status:
  conditions: [{type: Ready, status: "True", reason: KubeletReady}]
  capacity: {cpu: "8", memory: 32Gi, pods: "58"}
  allocatable: {cpu: 7910m, memory: 30Gi, pods: "58"}
"""

CLAIM = """
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: gpu-7xk2q
  labels: {karpenter.sh/nodepool: gpu}
spec:
  resources: {requests: {nvidia.com/gpu: "1"}}
status:
  nodeName: ip-10-0-12-34.ec2.internal
  providerID: aws:///us-east-1b/i-0abc123def4567890
  conditions:
  - {type: Launched, status: "True", reason: Launched}
  - {type: Registered, status: "True", reason: Registered}
  - type: Initialized
    status: Unknown
    reason: ResourceNotRegistered
    message: Resource "nvidia.com/gpu" was requested but not registered
    lastTransitionTime: "2026-08-21T09:41:00Z"
"""

PLUGIN = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: nvidia-device-plugin-daemonset, namespace: gpu-operator}
spec:
  selector: {matchLabels: {name: nvidia-device-plugin-ds}}
  template:
    spec:
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers: [{name: nvidia-device-plugin-ctr, image: nvcr.io/nvidia/k8s-device-plugin:v0.17.0}]
status: {desiredNumberScheduled: 3, numberReady: 3}
"""


def plugin_pod(container_statuses: str) -> str:
    """The plugin DaemonSet's pod on the node, Running, with these containerStatuses (YAML list items)."""
    return """
apiVersion: v1
kind: Pod
metadata:
  name: nvidia-device-plugin-daemonset-x7k2p
  namespace: gpu-operator
  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: nvidia-device-plugin-daemonset, uid: u1}]
spec: {nodeName: ip-10-0-12-34.ec2.internal, containers: [{name: nvidia-device-plugin-ctr, image: x}]}
status:
  phase: Running
  containerStatuses:
""" + container_statuses


def test_fails_naming_the_untolerated_taint() -> None:
    report = run(snapshot(NODE, CLAIM, PLUGIN), only=["gpu-not-advertised"])
    (result,) = report.results
    assert result.status is CheckStatus.FAILED
    (f,) = result.findings
    assert f.code == "GT201"
    assert f.severity is Severity.ERROR
    assert f.subject == ObjectRef("Node", "ip-10-0-12-34.ec2.internal")
    assert "does not tolerate taint dedicated=ml-training:NoSchedule" in f.title
    paths = {e.path: e for e in f.evidence}
    assert paths["status.conditions[Initialized]"].value["reason"] == "ResourceNotRegistered"
    assert paths["spec.taints"].value == ["dedicated=ml-training:NoSchedule"]
    assert any("patch daemonset nvidia-device-plugin-daemonset" in c for c in f.remediation.commands)


def test_passes_when_gpus_are_advertised() -> None:
    healthy = NODE.replace('allocatable: {cpu: 7910m,', 'allocatable: {nvidia.com/gpu: "1", cpu: 7910m,')
    (result,) = run(snapshot(healthy, CLAIM, PLUGIN), only=["gpu-not-advertised"]).results
    assert result.status is CheckStatus.PASSED
    assert result.examined == 1


def test_crashlooping_plugin_is_named() -> None:
    no_taint = NODE.replace("  - {key: dedicated, value: ml-training, effect: NoSchedule}\n", "")
    pod = plugin_pod("""
  - name: nvidia-device-plugin-ctr
    ready: false
    restartCount: 14
    state: {waiting: {reason: CrashLoopBackOff, message: back-off 5m0s restarting failed container}}
    lastState: {terminated: {exitCode: 1, reason: Error}}
""")
    (result,) = run(snapshot(no_taint, CLAIM, PLUGIN, pod), only=["gpu-not-advertised"]).results
    (f,) = result.findings
    assert "CrashLoopBackOff, 14 restarts" in f.title
    assert any(c.startswith("kubectl logs -n gpu-operator nvidia-device-plugin-daemonset-x7k2p") for c in
               f.remediation.commands)


def test_the_efa_plugin_is_not_patched_and_a_plugin_without_tolerations_gets_a_list() -> None:
    # aws-efa-k8s-device-plugin's image contains "k8s-device-plugin" but it owns EFA devices, not GPUs.
    bare = PLUGIN.replace("      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n", "")
    assert bare != PLUGIN
    (f,) = run(snapshot(NODE, CLAIM, bare, EFA), only=["gpu-not-advertised"]).results[0].findings
    assert not any("aws-efa" in c for c in f.remediation.commands)
    patch = next(c for c in f.remediation.commands if "patch daemonset nvidia-device-plugin-daemonset" in c)
    # No tolerations yet: "add .../tolerations/-" would fail with "doc is missing path".
    assert '"path":"/spec/template/spec/tolerations","value":[{' in patch


def test_skipped_when_nodes_are_forbidden() -> None:
    (result,) = run(snapshot(NODE, sources={"nodes": SourceState.FORBIDDEN}), only=["gpu-not-advertised"]).results
    assert result.status is CheckStatus.SKIPPED
    assert "nodes: forbidden" in result.reason


BOTTLEROCKET_INFO = """
  nodeInfo: {osImage: Bottlerocket OS 1.44.0 (aws-k8s-1.33-nvidia), kernelVersion: 6.1.141,
             containerRuntimeVersion: containerd://2.0.5+bottlerocket}
"""


def test_bottlerocket_host_plugin_is_not_told_to_install_a_daemonset() -> None:
    # Bottlerocket's NVIDIA variants run the device plugin as a host service: no DaemonSet is normal.
    node = NODE.replace("  - {key: dedicated, value: ml-training, effect: NoSchedule}\n", "") + BOTTLEROCKET_INFO
    (result,) = run(snapshot(node, CLAIM), only=["gpu-not-advertised"]).results
    (f,) = result.findings
    assert "device plugin runs as a host service on Bottlerocket (no DaemonSet)" in f.title
    assert not any("helm" in c for c in f.remediation.commands)
    assert "gputui debug node/ip-10-0-12-34.ec2.internal" in f.remediation.commands
    (os_image,) = [e for e in f.evidence if e.path == "status.nodeInfo.osImage"]
    assert os_image.value == "Bottlerocket OS 1.44.0 (aws-k8s-1.33-nvidia)"
    # The same node on Amazon Linux with no plugin anywhere: install one.
    al2023 = node.replace("Bottlerocket OS 1.44.0 (aws-k8s-1.33-nvidia)", "Amazon Linux 2023.8.20250715")
    (result,) = run(snapshot(al2023, CLAIM), only=["gpu-not-advertised"]).results
    assert "no NVIDIA device plugin or GPU Operator DaemonSet" in result.findings[0].title
    # The chart's repo is added first, and GFD labels the nodes the chart's default affinity wants.
    cmds = result.findings[0].remediation.commands
    assert cmds[0].startswith("helm repo add nvdp https://nvidia.github.io/k8s-device-plugin")
    assert "--set gfd.enabled=true" in cmds[1]


def test_eks_auto_mode_node_is_a_host_plugin_too() -> None:
    node = NODE.replace("  - {key: dedicated, value: ml-training, effect: NoSchedule}\n", "").replace(
        "    karpenter.sh/registered: \"true\"\n",
        "    karpenter.sh/registered: \"true\"\n    eks.amazonaws.com/compute-type: auto\n")
    (result,) = run(snapshot(node, CLAIM, PLUGIN), only=["gpu-not-advertised"]).results
    (f,) = result.findings
    assert "device plugin runs as a host service on EKS Auto Mode (no DaemonSet)" in f.title
    assert any(e.path == "metadata.labels[eks.amazonaws.com/compute-type]" for e in f.evidence)


def test_mps_control_daemon_does_not_hide_a_running_plugin_that_found_no_gpus() -> None:
    # The chart's MPS control daemon runs only on nvidia.com/mps.capable=true nodes: it is not the
    # plugin, and its nodeSelector not matching is not why the node has no GPUs.
    no_taint = NODE.replace("  - {key: dedicated, value: ml-training, effect: NoSchedule}\n", "")
    mps = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: nvdp-nvidia-device-plugin-mps-control-daemon, namespace: kube-system}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: nvidia-device-plugin}}
  template:
    spec:
      nodeSelector: {nvidia.com/mps.capable: "true"}
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers: [{name: mps-control-daemon-ctr, image: nvcr.io/nvidia/k8s-device-plugin:v0.17.0}]
status: {desiredNumberScheduled: 0, numberReady: 0}
"""
    pod = plugin_pod("  - {name: nvidia-device-plugin-ctr, ready: true, restartCount: 0, state: {running: {}}}\n")
    (result,) = run(snapshot(no_taint, CLAIM, PLUGIN, mps, pod), only=["gpu-not-advertised"]).results
    (f,) = result.findings
    assert "registered no GPUs (driver/AMI or NVML problem)" in f.title
    assert "mps" not in f.title


def test_an_operator_owned_plugin_is_fixed_in_its_cluster_policy() -> None:
    # The GPU Operator copies ClusterPolicy spec.daemonsets.tolerations over its DaemonSets on every reconcile
    # (gpu-operator controllers/object_controls.go): a patch to the DaemonSet itself would be undone.
    owned = PLUGIN.replace(
        "metadata: {name: nvidia-device-plugin-daemonset, namespace: gpu-operator}",
        "metadata: {name: nvidia-device-plugin-daemonset, namespace: gpu-operator, ownerReferences: "
        "[{apiVersion: nvidia.com/v1, kind: ClusterPolicy, name: cluster-policy, uid: u2, controller: true}]}")
    assert owned != PLUGIN
    (f,) = run(snapshot(NODE, CLAIM, owned), only=["gpu-not-advertised"]).results[0].findings
    assert not any("patch daemonset" in c for c in f.remediation.commands)
    assert ("kubectl patch clusterpolicies.nvidia.com cluster-policy --type=merge -p '{\"spec\":{\"daemonsets\":"
            "{\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"},"
            "{\"key\":\"dedicated\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]}}}'") in f.remediation.commands
    assert "spec.daemonsets.tolerations" in f.remediation.text and "helm upgrade" in f.remediation.text
