"""gpu-allocatable-below-capacity: a GPU marked unhealthy (Xid) or gone from the node, plus pass/skip cases."""

from __future__ import annotations

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.snapshot import SourceState
from tests.builders import snapshot

CHECK = "gpu-allocatable-below-capacity"

NODE = """
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-77-12.us-west-2.compute.internal
  creationTimestamp: "2026-08-18T06:00:00Z"
  labels:
    karpenter.sh/nodepool: training
    karpenter.sh/initialized: "true"
    node.kubernetes.io/instance-type: p4d.24xlarge
    karpenter.k8s.aws/instance-gpu-count: "8"
    karpenter.k8s.aws/instance-gpu-name: a100
spec:
  providerID: aws:///us-west-2a/i-0f1e2d3c4b5a69788
  taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
status:
  conditions: [{type: Ready, status: "True", reason: KubeletReady, message: kubelet is posting ready status}]
  capacity: {cpu: "96", memory: 1152Gi, nvidia.com/gpu: "8", pods: "737"}
  allocatable: {cpu: 95690m, memory: 1130Gi, nvidia.com/gpu: "7", pods: "737"}
  nodeInfo: {osImage: Amazon Linux 2023.8.20250818, bootID: 6f2a9c1e-8d3b-4e5f-a1b2-c3d4e5f6a7b8}
"""

CLAIM = """
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: training-x8k2m
  creationTimestamp: "2026-08-18T05:58:00Z"
  labels: {karpenter.sh/nodepool: training, node.kubernetes.io/instance-type: p4d.24xlarge}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
  resources: {requests: {nvidia.com/gpu: "8"}}
status:
  nodeName: ip-10-0-77-12.us-west-2.compute.internal
  providerID: aws:///us-west-2a/i-0f1e2d3c4b5a69788
  capacity: {nvidia.com/gpu: "8", cpu: "96"}
  conditions:
  - {type: Launched, status: "True", reason: Launched}
  - {type: Registered, status: "True", reason: Registered}
  - {type: Initialized, status: "True", reason: Initialized}
  - {type: Ready, status: "True", reason: Ready}
"""

PLUGIN_DS = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: nvidia-device-plugin-daemonset, namespace: kube-system}
spec:
  selector: {matchLabels: {name: nvidia-device-plugin-ds}}
  template:
    spec:
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers: [{name: nvidia-device-plugin-ctr, image: nvcr.io/nvidia/k8s-device-plugin:v0.17.0}]
status: {desiredNumberScheduled: 4, numberReady: 4}
"""

PLUGIN_POD = """
apiVersion: v1
kind: Pod
metadata:
  name: nvidia-device-plugin-daemonset-7xkq2
  namespace: kube-system
  labels: {name: nvidia-device-plugin-ds}
  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: nvidia-device-plugin-daemonset, uid: d1}]
spec:
  nodeName: ip-10-0-77-12.us-west-2.compute.internal
  containers: [{name: nvidia-device-plugin-ctr, image: nvcr.io/nvidia/k8s-device-plugin:v0.17.0}]
status:
  phase: Running
  startTime: "2026-08-18T06:01:10Z"
  containerStatuses:
  - name: nvidia-device-plugin-ctr
    ready: true
    restartCount: 0
    state: {running: {startedAt: "2026-08-18T06:01:12Z"}}
"""

# p4d nodes also run the EFA device plugin; it must never be the pod we tell people to restart.
EFA = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: aws-efa-k8s-device-plugin-daemonset, namespace: kube-system}
spec:
  selector: {matchLabels: {name: aws-efa-k8s-device-plugin}}
  template:
    spec:
      containers: [{name: aws-efa-k8s-device-plugin, image: 602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.6}]
---
apiVersion: v1
kind: Pod
metadata:
  name: aws-efa-k8s-device-plugin-daemonset-qq8hx
  namespace: kube-system
  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: aws-efa-k8s-device-plugin-daemonset, uid: e1}]
spec: {nodeName: ip-10-0-77-12.us-west-2.compute.internal, containers: [{name: aws-efa-k8s-device-plugin, image: x}]}
status: {phase: Running}
"""

TRAINER = """
apiVersion: v1
kind: Pod
metadata: {name: llm-pretrain-worker-3, namespace: ml}
spec:
  nodeName: ip-10-0-77-12.us-west-2.compute.internal
  containers:
  - name: trainer
    image: nvcr.io/nvidia/pytorch:24.08-py3
    resources: {limits: {nvidia.com/gpu: "7"}}
status: {phase: Running}
"""


def test_unhealthy_gpu_names_the_device_plugin_pod_to_restart() -> None:
    (result,) = run(snapshot(NODE, CLAIM, EFA, PLUGIN_DS, PLUGIN_POD, TRAINER), only=[CHECK]).results
    assert result.status is CheckStatus.FAILED
    (f,) = result.findings
    assert f.code == "GT202"
    assert f.severity is Severity.ERROR
    assert f.subject == ObjectRef("Node", "ip-10-0-77-12.us-west-2.compute.internal")
    assert f.title == ("ip-10-0-77-12.us-west-2.compute.internal (p4d.24xlarge) offers 7 of 8 GPUs: "
                       "1 GPU(s) marked unhealthy by the device plugin")
    ev = {e.path: e for e in f.evidence}
    assert ev["status.capacity"].value == {"nvidia.com/gpu": 8.0}
    assert ev["status.allocatable"].value == {"nvidia.com/gpu": 7.0}
    assert "1 device(s) withheld as unhealthy" in ev["status.allocatable"].note
    plugin = ev["status.containerStatuses"]
    assert plugin.subject == ObjectRef("Pod", "nvidia-device-plugin-daemonset-7xkq2", "kube-system")
    # Running since before the fault, never restarted: it will not re-register the GPU by itself.
    assert plugin.value["restarts"] == 0
    assert plugin.value["running_since"] == "2026-08-18T06:01:12Z"
    cmds = f.remediation.commands
    assert cmds[0] == "gputui debug node/ip-10-0-77-12.us-west-2.compute.internal"
    assert "kubectl -n kube-system delete pod nvidia-device-plugin-daemonset-7xkq2" in cmds
    assert not any("efa" in c for c in cmds)
    assert "kubectl delete nodeclaim training-x8k2m" in cmds
    assert "1 pod, 1 GPU pod holding 7 of 8 GPUs" in f.remediation.text
    # No Xid named: restart the plugin only once nvidia-smi lists every GPU and flags none.
    assert "Only if nvidia-smi lists all 8 of the node's GPUs and flags none, restart the device-plugin pod" \
        in f.remediation.text
    assert ObjectRef("Pod", "llm-pretrain-worker-3", "ml") in f.related


def test_gpu_missing_from_capacity_cites_karpenter_consistency_check() -> None:
    # The GPU fell off the bus before the plugin (re)started: capacity itself is short, so a plugin
    # restart cannot help. Karpenter's consistency controller notices and warns on the NodeClaim.
    gone = NODE.replace('nvidia.com/gpu: "8", pods', 'nvidia.com/gpu: "7", pods')
    event = """
apiVersion: v1
kind: Event
metadata: {name: training-x8k2m.17e0a1b2c3d4e5f6, namespace: default}
involvedObject: {apiVersion: karpenter.sh/v1, kind: NodeClaim, name: training-x8k2m}
reason: FailedConsistencyCheck
message: expected 8 of resource nvidia.com/gpu, but found 7 (87.5% of expected)
type: Warning
source: {component: karpenter}
count: 4
firstTimestamp: "2026-08-21T09:20:00Z"
lastTimestamp: "2026-08-21T09:50:00Z"
"""
    (result,) = run(snapshot(gone, CLAIM, PLUGIN_DS, PLUGIN_POD, event), only=[CHECK]).results
    (f,) = result.findings
    assert f.title.endswith("offers 7 of 8 GPUs: 1 GPU(s) missing from the node")
    ev = {e.path: e for e in f.evidence}
    consistency = ev["event Warning/FailedConsistencyCheck"]
    assert consistency.subject == ObjectRef("NodeClaim", "training-x8k2m")
    assert consistency.value == "expected 8 of resource nvidia.com/gpu, but found 7 (87.5% of expected)"
    assert consistency.count == 4
    assert consistency.note == "Karpenter expected 8 nvidia.com/gpu, node has 7"
    assert ev["metadata.labels[karpenter.k8s.aws/instance-gpu-count]"].value == "8"
    assert "restarting the device plugin will not bring them back" in f.remediation.text


def test_gke_xid_event_is_named_in_the_title() -> None:
    # GKE's own device plugin (a DaemonSet in kube-system) emits XIDError on the Node.
    node = """
apiVersion: v1
kind: Node
metadata:
  name: gke-ml-a100-pool-5f2c9a1b-x7qp
  labels:
    cloud.google.com/gke-accelerator: nvidia-tesla-a100
    cloud.google.com/gke-accelerator-count: "2"
    node.kubernetes.io/instance-type: a2-highgpu-2g
spec: {providerID: gce://ml-prod/us-central1-a/gke-ml-a100-pool-5f2c9a1b-x7qp}
status:
  conditions: [{type: Ready, status: "True", reason: KubeletReady}]
  capacity: {nvidia.com/gpu: "2"}
  allocatable: {nvidia.com/gpu: "1"}
---
apiVersion: v1
kind: Event
metadata: {name: gke-ml-a100-pool-5f2c9a1b-x7qp.17e0b, namespace: default}
involvedObject: {kind: Node, name: gke-ml-a100-pool-5f2c9a1b-x7qp}
reason: XIDError
message: Caught XID error, XID=48
type: Warning
source: {component: nvidia-gpu-device-plugin}
count: 1
lastTimestamp: "2026-08-21T09:41:00Z"
"""
    (result,) = run(snapshot(node), only=[CHECK]).results
    (f,) = result.findings
    assert f.title.endswith("offers 1 of 2 GPUs: 1 GPU(s) marked unhealthy by the device plugin after Xid 48")
    assert any(e.path == "event Warning/XIDError" and e.value == "Caught XID error, XID=48" for e in f.evidence)
    # A fatal Xid: the GPU must not be handed back by restarting the plugin once nvidia-smi answers again.
    assert "do not restart the device plugin" in f.remediation.text
    assert "Xid 48 (double-bit (uncorrectable) ECC error)" in f.remediation.text
    assert not any("device-plugin" in c or "delete pod" in c for c in f.remediation.commands)


def test_passes_when_all_gpus_are_allocatable() -> None:
    healthy = NODE.replace('nvidia.com/gpu: "7", pods', 'nvidia.com/gpu: "8", pods')
    (result,) = run(snapshot(healthy, CLAIM, PLUGIN_DS, PLUGIN_POD), only=[CHECK]).results
    assert result.status is CheckStatus.PASSED
    assert result.examined == 1


def test_node_advertising_no_gpus_is_left_to_gpu_not_advertised() -> None:
    # Nothing registered at all (capacity has no GPUs): gpu-not-advertised owns that diagnosis.
    none = NODE.replace('nvidia.com/gpu: "8", pods', 'pods').replace('nvidia.com/gpu: "7", pods', 'pods')
    report = run(snapshot(none, CLAIM), only=[CHECK, "gpu-not-advertised"])
    by_slug = {r.check: r for r in report.results}
    assert by_slug[CHECK].status is CheckStatus.PASSED
    assert by_slug["gpu-not-advertised"].status is CheckStatus.FAILED


def test_skipped_when_nodes_are_forbidden() -> None:
    (result,) = run(snapshot(NODE, sources={"nodes": SourceState.FORBIDDEN}), only=[CHECK]).results
    assert result.status is CheckStatus.SKIPPED
    assert "nodes: forbidden" in result.reason


def test_bottlerocket_node_has_no_plugin_pod_to_restart() -> None:
    # Bottlerocket's NVIDIA variants run the device plugin on the host: reboot or replace, no pod.
    node = NODE.replace("osImage: Amazon Linux 2023.8.20250818", "osImage: Bottlerocket OS 1.44.0 (aws-k8s-1.33-nvidia)")
    (result,) = run(snapshot(node, CLAIM, TRAINER), only=[CHECK]).results
    (f,) = result.findings
    assert "the device plugin runs as a host service on Bottlerocket: reboot or replace the node" in f.remediation.text
    assert not any("device-plugin" in c or "delete pod" in c for c in f.remediation.commands)
    (os_image,) = [e for e in f.evidence if e.path == "status.nodeInfo.osImage"]
    assert os_image.value == "Bottlerocket OS 1.44.0 (aws-k8s-1.33-nvidia)"
