"""gpu-node-not-ready: GPU hardware conditions (EKS, GKE) and NotReady GPU nodes, with the pods they strand."""

from __future__ import annotations

from typing import Any

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.snapshot import SourceState
from tests.builders import snapshot

CHECK = "gpu-node-not-ready"
NAME = "ip-10-0-58-140.us-west-2.compute.internal"

NODE = f"""
apiVersion: v1
kind: Node
metadata:
  name: {NAME}
  labels:
    karpenter.sh/nodepool: training
    node.kubernetes.io/instance-type: p4de.24xlarge
    karpenter.k8s.aws/instance-gpu-count: "8"
spec:
  providerID: aws:///us-west-2c/i-0123abcd4567ef890
status:
  conditions:
  - {{type: Ready, status: "True", reason: KubeletReady, message: kubelet is posting ready status,
     lastTransitionTime: "2026-08-20T11:00:00Z"}}
  - {{type: KernelReady, status: "True", reason: KernelIsReady, lastTransitionTime: "2026-08-20T11:00:00Z"}}
  - {{type: AcceleratedHardwareReady, status: "False", reason: NvidiaXID79Error,
     message: "XID 79: GPU has fallen off the bus", lastTransitionTime: "2026-08-21T09:55:00Z"}}
  capacity: {{nvidia.com/gpu: "8"}}
  allocatable: {{nvidia.com/gpu: "8"}}
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: training-p9z3x
  labels: {{karpenter.sh/nodepool: training}}
status:
  nodeName: {NAME}
  conditions:
  - {{type: Launched, status: "True", reason: Launched}}
  - {{type: Registered, status: "True", reason: Registered}}
  - {{type: Initialized, status: "True", reason: Initialized}}
"""

GPU_POD = f"""
apiVersion: v1
kind: Pod
metadata: {{name: bert-finetune-7c9d5-0, namespace: nlp}}
spec:
  nodeName: {NAME}
  containers: [{{name: main, image: x, resources: {{limits: {{nvidia.com/gpu: "8"}}}}}}]
status: {{phase: Running}}
---
apiVersion: v1
kind: Pod
metadata: {{name: log-shipper-abcde, namespace: logging}}
spec: {{nodeName: {NAME}, containers: [{{name: fluent-bit, image: y}}]}}
status: {{phase: Running}}
"""


def test_accelerated_hardware_fault_with_gpu_pods_is_critical() -> None:
    (result,) = run(snapshot(NODE, GPU_POD), only=[CHECK]).results
    assert result.status is CheckStatus.FAILED
    (f,) = result.findings
    assert f.code == "GT204"
    # A GPU pod is running on the faulty GPUs: raised from the default error.
    assert f.severity is Severity.CRITICAL
    assert f.subject == ObjectRef("Node", NAME)
    assert f.title == (f"{NAME} (p4de.24xlarge) AcceleratedHardwareReady=False for 5m (NvidiaXID79Error, Xid 79): "
                       f"1 GPU pod holding 8 GPUs affected")
    ev = {e.path: e for e in f.evidence}
    cond = ev["status.conditions[AcceleratedHardwareReady]"]
    assert cond.value == {"status": "False", "reason": "NvidiaXID79Error", "message": "XID 79: GPU has fallen off the bus"}
    assert cond.age_seconds == 300
    assert ev["node repair"].value == ("Karpenter NodeRepair (feature gate NodeRepair=true) replaces it at "
                                       "2026-08-21T10:05:00Z, in 5m")
    assert ev["pods on node"].value == ["nlp/bert-finetune-7c9d5-0 (8 GPUs)", "logging/log-shipper-abcde"]
    assert ev["pods on node"].note == "2 pods, 1 GPU pod holding 8 of 8 GPUs"
    assert f.remediation.commands[0] == f"gputui debug node/{NAME}"
    assert "kubectl delete nodeclaim training-p9z3x" in f.remediation.commands
    assert ObjectRef("Pod", "bert-finetune-7c9d5-0", "nlp") in f.related


def test_unreachable_gpu_node_without_gpu_pods_is_an_error() -> None:
    node = NODE.replace(
        '''  - {type: Ready, status: "True", reason: KubeletReady, message: kubelet is posting ready status,
     lastTransitionTime: "2026-08-20T11:00:00Z"}''',
        '''  - {type: Ready, status: Unknown, reason: NodeStatusUnknown, message: Kubelet stopped posting node status.,
     lastTransitionTime: "2026-08-21T09:20:00Z"}''').replace(
        '''  - {type: AcceleratedHardwareReady, status: "False", reason: NvidiaXID79Error,
     message: "XID 79: GPU has fallen off the bus", lastTransitionTime: "2026-08-21T09:55:00Z"}''', "").replace(
        "  providerID: aws:///us-west-2c/i-0123abcd4567ef890",
        "  providerID: aws:///us-west-2c/i-0123abcd4567ef890\n  taints:\n"
        "  - {key: node.kubernetes.io/unreachable, effect: NoExecute, timeAdded: '2026-08-21T09:20:40Z'}\n"
        "  - {key: node.kubernetes.io/unreachable, effect: NoSchedule, timeAdded: '2026-08-21T09:20:40Z'}")
    (result,) = run(snapshot(node), only=[CHECK]).results
    (f,) = result.findings
    assert f.severity is Severity.ERROR
    assert f.title == (f"{NAME} (p4de.24xlarge) Unknown (kubelet stopped reporting) for 40m (NodeStatusUnknown: "
                       f"Kubelet stopped posting node status.): no workload pods (8 GPUs idle)")
    ev = {e.path: e for e in f.evidence}
    assert ev["spec.taints"].value == "node.kubernetes.io/unreachable:NoExecute"
    # Past the 30 min Ready=Unknown repair policy and still here: repair is off or blocked.
    assert ev["node repair"].value.endswith("10m overdue, so NodeRepair is off or blocked")
    cmds = f.remediation.commands
    assert "aws ec2 describe-instance-status --instance-ids i-0123abcd4567ef890 --include-all-instances" in cmds
    assert not any(c.startswith("gputui debug") for c in cmds)  # a debug pod cannot start on it
    # Its kubelet will never confirm the pods are gone: the drain must not wait forever.
    # Node events live in "default", not the context's namespace.
    assert any(c.startswith("kubectl get events -A --field-selector involvedObject.kind=Node") for c in cmds)
    drain = next(c for c in cmds if c.startswith("kubectl drain"))
    assert "--skip-wait-for-delete-timeout=60" in drain and "--timeout=10m" in drain


def test_gke_xid_critical_error_condition() -> None:
    # GKE's device plugin sets XidCriticalError=True with a JSON map of Xids as the reason.
    node = """
apiVersion: v1
kind: Node
metadata:
  name: gke-infer-l4-pool-1a2b3c4d-9xkz
  labels: {cloud.google.com/gke-accelerator: nvidia-l4, cloud.google.com/gke-accelerator-count: "1"}
status:
  conditions:
  - {type: Ready, status: "True", reason: KubeletReady}
  - {type: XidCriticalError, status: "True", reason: '{"48":true}', message: 1c2d3e4f-5a6b-7c8d-9e0f-a1b2c3d4e5f6,
     lastTransitionTime: "2026-08-21T09:30:00Z"}
  capacity: {nvidia.com/gpu: "1"}
  allocatable: {nvidia.com/gpu: "0"}
"""
    (result,) = run(snapshot(node), only=[CHECK]).results
    (f,) = result.findings
    assert f.title.startswith("gke-infer-l4-pool-1a2b3c4d-9xkz (GPU node) XidCriticalError=True for 30m")
    assert "Xid 48" in f.title
    # Not a Karpenter node: no NodeRepair promise.
    assert "node repair" not in {e.path for e in f.evidence}


def test_healthy_gpu_node_passes_and_cpu_nodes_are_not_examined() -> None:
    healthy = NODE.replace('status: "False", reason: NvidiaXID79Error', 'status: "True", reason: NvidiaXID79Error')
    cpu = """
apiVersion: v1
kind: Node
metadata: {name: ip-10-0-1-5.us-west-2.compute.internal, labels: {node.kubernetes.io/instance-type: m7i.large}}
status:
  conditions: [{type: Ready, status: "False", reason: KubeletNotReady}]
  capacity: {cpu: "2"}
"""
    (result,) = run(snapshot(healthy, cpu), only=[CHECK]).results
    assert result.status is CheckStatus.PASSED
    assert result.examined == 1


def test_never_initialized_not_ready_node_is_left_to_nodeclaim_not_initialized() -> None:
    node = NODE.replace('{type: Ready, status: "True", reason: KubeletReady', '{type: Ready, status: "False", '
                        'reason: KubeletNotReady').replace('status: "False", reason: NvidiaXID79Error',
                                                            'status: "True", reason: NvidiaXID79Error')
    node = node.replace('{type: Initialized, status: "True", reason: Initialized}',
                        '{type: Initialized, status: Unknown, reason: NodeNotReady, message: Node status is NotReady}')
    (result,) = run(snapshot(node), only=[CHECK]).results
    assert result.status is CheckStatus.PASSED


def test_skipped_when_nodes_are_not_loaded() -> None:
    (result,) = run(snapshot(NODE, sources={"nodes": SourceState.UNREACHABLE}), only=[CHECK]).results
    assert result.status is CheckStatus.SKIPPED
    assert result.reason == "nodes: unreachable"


def node_event(reason: str, message: str, *, at: str, count: int = 1) -> dict[str, Any]:
    """A Warning event on the node (what NPD rules and the EKS node monitoring agent post)."""
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{reason.lower()}.1", "namespace": "default"},
            "involvedObject": {"kind": "Node", "name": NAME}, "reason": reason, "message": message,
            "type": "Warning", "count": count, "lastTimestamp": at}


def test_kernel_log_xid_names_the_code_not_the_pci_address() -> None:
    # A node-problem-detector kmsg rule copies the driver's line into its condition: the Xid is the
    # number after the PCI address, and an NVSwitch SXid on the same node is not a GPU Xid.
    kmsg = "NVRM: Xid (PCI:0000:3b:00): 79, pid=4121, name=python, GPU has fallen off the bus."
    node = NODE.replace('reason: NvidiaXID79Error,\n     message: "XID 79: GPU has fallen off the bus"',
                        f'reason: GPUXidError,\n     message: "{kmsg}"')
    sxid = node_event("NVSwitchSXid", "nvidia-nvswitch0: SXid (PCI:0000:c5:00.0): 12028, Non-fatal, Link 11 egress "
                                      "non-posted PRIV error", at="2026-08-21T09:58:00Z")
    assert node != NODE
    (result,) = run(snapshot(node, sxid), only=[CHECK]).results
    (f,) = result.findings
    assert "(GPUXidError, Xid 79)" in f.title and "Xid 0" not in f.title


def test_nvswitch_sxid_alone_is_not_an_xid() -> None:
    node = NODE.replace('reason: NvidiaXID79Error,\n     message: "XID 79: GPU has fallen off the bus"',
                        'reason: NVSwitchFault,\n     message: "nvidia-nvswitch2: SXid (PCI:0000:c7:00.0): 20034, Fatal"')
    (result,) = run(snapshot(node), only=[CHECK]).results
    (f,) = result.findings
    assert "Xid" not in f.title.replace("SXid", "") and "NVSwitchFault: nvidia-nvswitch2: SXid" in f.title


def test_node_monitoring_agent_dcgm_events_are_evidence() -> None:
    # The EKS node monitoring agent reports DCGM health incidents as DCGMHealthCode<N> events, with
    # no "GPU" or "Xid" in them.
    dcgm = node_event("DCGMHealthCode109", "DCGM detected issues in health check system with error code 109",
                      at="2026-08-21T09:57:00Z", count=4)
    (result,) = run(snapshot(NODE, dcgm), only=[CHECK]).results
    (f,) = result.findings
    events = [e for e in f.evidence if e.path.startswith("event")]
    assert any("DCGMHealthCode109" in e.path and e.count == 4 for e in events), [e.path for e in f.evidence]
