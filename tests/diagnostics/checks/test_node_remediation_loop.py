"""node-remediation-loop: a node rebooted again and again, a NodePool whose nodes node repair keeps replacing."""

from __future__ import annotations

import shlex

from collections.abc import Callable

from diagnostics import CheckStatus, ObjectRef, Report, Severity, run
from diagnostics.snapshot import SourceState
from tests.builders import snapshot
from tests.prometheus.conftest import diagnose, facts, prometheus  # noqa: F401 - real Prometheus fixtures

CHECK = "node-remediation-loop"
NODE_NAME = "ip-10-0-33-21.us-east-2.compute.internal"

NODE = f"""
apiVersion: v1
kind: Node
metadata:
  name: {NODE_NAME}
  creationTimestamp: "2026-08-20T22:00:00Z"
  labels:
    karpenter.sh/nodepool: training
    node.kubernetes.io/instance-type: p5.48xlarge
    topology.kubernetes.io/zone: us-east-2b
    karpenter.k8s.aws/instance-gpu-count: "8"
spec:
  providerID: aws:///us-east-2b/i-0aa11bb22cc33dd44
status:
  conditions:
  - {{type: Ready, status: "True", reason: KubeletReady, lastTransitionTime: "2026-08-21T09:53:00Z"}}
  - {{type: AcceleratedHardwareReady, status: "False", reason: NvidiaXID79Error,
     message: "XID 79 detected: GPU has fallen off the bus", lastTransitionTime: "2026-08-21T09:54:00Z"}}
  capacity: {{nvidia.com/gpu: "8"}}
  allocatable: {{nvidia.com/gpu: "8"}}
  nodeInfo: {{bootID: 9c0ffee0-1111-4222-8333-944445555666}}
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: training-q7w4r
  labels: {{karpenter.sh/nodepool: training, node.kubernetes.io/instance-type: p5.48xlarge}}
status:
  nodeName: {NODE_NAME}
  providerID: aws:///us-east-2b/i-0aa11bb22cc33dd44
  conditions:
  - {{type: Launched, status: "True", reason: Launched}}
  - {{type: Registered, status: "True", reason: Registered}}
  - {{type: Initialized, status: "True", reason: Initialized}}
---
apiVersion: v1
kind: Pod
metadata: {{name: megatron-worker-0, namespace: research}}
spec:
  nodeName: {NODE_NAME}
  containers: [{{name: train, image: nvcr.io/nvidia/nemo:24.07, resources: {{limits: {{nvidia.com/gpu: "8"}}}}}}]
status: {{phase: Running}}
"""


def reboot(boot_id: str, at: str) -> str:
    # kubelet: Warning/Rebooted, one Event per boot (the message differs, so they never aggregate).
    return f"""
apiVersion: v1
kind: Event
metadata: {{name: {NODE_NAME}.{boot_id[:8]}, namespace: default}}
involvedObject: {{kind: Node, name: {NODE_NAME}, uid: {NODE_NAME}}}
reason: Rebooted
message: "Node {NODE_NAME} has been rebooted, boot id: {boot_id}"
type: Warning
source: {{component: kubelet, host: {NODE_NAME}}}
count: 1
firstTimestamp: "{at}"
lastTimestamp: "{at}"
"""


FLAPS = f"""
apiVersion: v1
kind: Event
metadata: {{name: {NODE_NAME}.notready, namespace: default}}
involvedObject: {{kind: Node, name: {NODE_NAME}}}
reason: NodeNotReady
message: "Node {NODE_NAME} status is now: NodeNotReady"
type: Normal
source: {{component: node-controller}}
count: 3
firstTimestamp: "2026-08-21T09:12:00Z"
lastTimestamp: "2026-08-21T09:52:00Z"
---
apiVersion: v1
kind: Event
metadata: {{name: {NODE_NAME}.registered, namespace: default}}
involvedObject: {{kind: Node, name: {NODE_NAME}}}
reason: RegisteredNode
message: "Node {NODE_NAME} event: Registered Node {NODE_NAME} in Controller"
type: Normal
source: {{component: node-controller}}
count: 3
firstTimestamp: "2026-08-21T09:14:00Z"
lastTimestamp: "2026-08-21T09:54:00Z"
"""

REBOOTS = [reboot("3b1c7d2e-aaaa-4bbb-8ccc-000000000001", "2026-08-21T09:10:00Z"),
           reboot("5d2e8f3a-aaaa-4bbb-8ccc-000000000002", "2026-08-21T09:30:00Z"),
           reboot("9c0ffee0-1111-4222-8333-944445555666", "2026-08-21T09:50:00Z")]


def test_node_rebooting_again_and_again_is_a_loop() -> None:
    (result,) = run(snapshot(NODE, FLAPS, *REBOOTS), only=[CHECK]).results
    assert result.status is CheckStatus.FAILED
    (f,) = result.findings
    assert f.code == "GT203"
    assert f.severity is Severity.ERROR
    assert f.subject == ObjectRef("Node", NODE_NAME)
    assert f.title == (f"{NODE_NAME} (p5.48xlarge) rebooted 3 times and went NotReady 3 times in the last 50m "
                       f"(since 2026-08-21T09:10:00Z): remediation loop")
    ev = {e.path: e for e in f.evidence}
    rebooted = ev["event Warning/Rebooted"]
    assert rebooted.count == 3
    assert rebooted.value == f"Node {NODE_NAME} has been rebooted, boot id: 9c0ffee0-1111-4222-8333-944445555666"
    assert "MIN_REBOOTS=3" in rebooted.note and "REBOOT_WINDOW_SECONDS=6h" in rebooted.note
    assert ev["event Normal/NodeNotReady"].count == 3
    assert ev["event Normal/RegisteredNode"].count == 3
    assert ev["status.conditions[AcceleratedHardwareReady]"].value["reason"] == "NvidiaXID79Error"
    # Each way out states what it costs.
    text = f.remediation.text
    assert "nothing is evicted, 1 pod, 1 GPU pod holding 8 of 8 GPUs keep running" in text
    assert "evicts 1 pod, 1 GPU pod holding 8 of 8 GPUs" in text
    assert "i-0aa11bb22cc33dd44" in text
    cmds = f.remediation.commands
    assert f"kubectl cordon {NODE_NAME}" in cmds
    assert f"kubectl taint node {NODE_NAME} gputui.dev/quarantine=remediation-loop:NoSchedule" in cmds
    assert "kubectl delete nodeclaim training-q7w4r" in cmds
    assert ObjectRef("Pod", "megatron-worker-0", "research") in f.related


def repair_event(claim: str, at: str) -> str:
    return f"""
apiVersion: v1
kind: Event
metadata: {{name: {claim}.repair, namespace: default}}
involvedObject: {{apiVersion: karpenter.sh/v1, kind: NodeClaim, name: {claim}}}
reason: DisruptionTerminating
message: "Disrupting NodeClaim: Unhealthy"
type: Normal
source: {{component: karpenter}}
count: 1
firstTimestamp: "{at}"
lastTimestamp: "{at}"
"""


POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: inference}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [g6e]}]
"""

# The third victim is still terminating: its DisruptionReason says why (Karpenter >= v1.8).
DELETING_CLAIM = """
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: inference-m2n8b
  creationTimestamp: "2026-08-21T09:20:00Z"
  deletionTimestamp: "2026-08-21T09:48:00Z"
  labels: {karpenter.sh/nodepool: inference, node.kubernetes.io/instance-type: g6e.12xlarge,
           topology.kubernetes.io/zone: us-east-2a}
status:
  conditions:
  - {type: Launched, status: "True", reason: Launched}
  - {type: DisruptionReason, status: "True", reason: Unhealthy, message: Unhealthy,
     lastTransitionTime: "2026-08-21T09:48:00Z"}
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: inference-t5v9c
  creationTimestamp: "2026-08-21T09:48:30Z"
  labels: {karpenter.sh/nodepool: inference, node.kubernetes.io/instance-type: g6e.12xlarge,
           topology.kubernetes.io/zone: us-east-2a}
status:
  conditions: [{type: Launched, status: "True", reason: Launched}]
---
apiVersion: v1
kind: Event
metadata: {name: inference.repairblocked, namespace: default}
involvedObject: {apiVersion: karpenter.sh/v1, kind: NodePool, name: inference}
reason: NodeRepairBlocked
message: more than 20% of nodes in nodepool "inference" are unhealthy
type: Warning
source: {component: karpenter}
count: 1
lastTimestamp: "2026-08-21T09:55:00Z"
"""


def test_nodepool_whose_nodes_keep_being_repaired_is_a_loop() -> None:
    snap = snapshot(POOL, DELETING_CLAIM, repair_event("inference-a4k7p", "2026-08-21T08:40:00Z"),
                    repair_event("inference-h3j6d", "2026-08-21T09:15:00Z"))
    (result,) = run(snap, only=[CHECK]).results
    (f,) = result.findings
    assert f.subject == ObjectRef("NodePool", "inference")
    assert f.severity is Severity.ERROR
    # Two victims are gone (only their events remain), so the title does not guess their shape.
    assert f.title == "NodePool inference: 3 nodes replaced as Unhealthy in the last 1h20m: node repair is looping"
    # The custom-columns argument is quoted: unquoted, the shell eats its backslashes (TYPE shows <none>).
    columns = next(c for c in f.remediation.commands if "custom-columns" in c)
    assert r"TYPE:.metadata.labels.node\.kubernetes\.io/instance-type" in shlex.split(columns)[-1]
    by_subject = {(str(e.subject), e.path): e for e in f.evidence}
    gone = by_subject[("nodeclaim/inference-a4k7p", "event Normal/DisruptionTerminating")]
    assert gone.value == "Disrupting NodeClaim: Unhealthy"
    assert by_subject[("nodeclaim/inference-m2n8b", "status.conditions[DisruptionReason]")].value == "Unhealthy"
    count = by_subject[("nodepool/inference", "unhealthy replacements")]
    assert count.value == 3 and "MIN_REPLACEMENTS=3" in count.note
    assert by_subject[("nodepool/inference", "nodeclaims")].value == {"created in window": 1, "deleting": 1,
                                                                       "total": 2}
    assert by_subject[("nodepool/inference", "replaced instance types / zones")].value == {
        "instance types": {"unknown": 2, "g6e.12xlarge": 1}, "zones": {"unknown": 2, "us-east-2a": 1}}
    blocked = by_subject[("nodepool/inference", "event Warning/NodeRepairBlocked")]
    assert blocked.value == 'more than 20% of nodes in nodepool "inference" are unhealthy'
    assert "settings.featureGates.nodeRepair=false" in f.remediation.commands[-1]
    assert "Each repair drains a whole node" in f.remediation.text


def test_replacements_sharing_one_instance_type_suggest_excluding_it() -> None:
    # Older Karpenter deleted unhealthy claims without an event: the claims are terminating and their
    # nodes carry the repair condition past its 10 minute toleration.
    docs = []
    for i, name in enumerate(("inference-b1c2d", "inference-e3f4g", "inference-h5j6k")):
        node = f"ip-10-0-9-{i}.us-east-2.compute.internal"
        docs.append(f"""
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: {name}
  deletionTimestamp: "2026-08-21T09:{10 + 15 * i}:00Z"
  labels: {{karpenter.sh/nodepool: inference, node.kubernetes.io/instance-type: g6e.12xlarge,
           topology.kubernetes.io/zone: us-east-2a}}
status:
  nodeName: {node}
  conditions: [{{type: Launched, status: "True", reason: Launched}}]
---
apiVersion: v1
kind: Node
metadata:
  name: {node}
  labels: {{karpenter.sh/nodepool: inference, node.kubernetes.io/instance-type: g6e.12xlarge}}
status:
  capacity: {{nvidia.com/gpu: "4"}}
  conditions:
  - {{type: AcceleratedHardwareReady, status: "False", reason: NvidiaXID48Error,
     lastTransitionTime: "2026-08-21T08:{30 + 10 * i}:00Z"}}
""")
    (result,) = run(snapshot(POOL, *docs), only=[CHECK]).results
    (f,) = result.findings
    assert f.title == ("NodePool inference: 3 nodes replaced as Unhealthy in the last 50m "
                       "(g6e.12xlarge, us-east-2a): node repair is looping")
    assert any(e.path == "nodes with a repair condition" and e.value == "AcceleratedHardwareReady=False "
               "(NvidiaXID48Error)" and e.note == "3 current node(s)" for e in f.evidence)
    assert ("kubectl patch nodepool inference --type=json -p '[{\"op\":\"add\",\"path\":\"/spec/template/spec/"
            "requirements/-\",\"value\":{\"key\":\"node.kubernetes.io/instance-type\",\"operator\":\"NotIn\","
            "\"values\":[\"g6e.12xlarge\"]}}]'") in f.remediation.commands
    assert "3 node(s) with 12 GPUs" in f.remediation.text


def test_one_reboot_and_one_repair_are_not_a_loop() -> None:
    snap = snapshot(NODE, POOL, REBOOTS[-1], repair_event("inference-a4k7p", "2026-08-21T09:15:00Z"))
    (result,) = run(snap, only=[CHECK]).results
    assert result.status is CheckStatus.PASSED
    assert result.examined == 1


def test_reboots_outside_the_window_do_not_count() -> None:
    # An old burst (kept longer than the default 1h event TTL) ended hours ago: not a loop now.
    old = [reboot(f"0000000{i}-aaaa-4bbb-8ccc-000000000000", f"2026-08-21T0{i}:00:00Z") for i in range(1, 4)]
    (result,) = run(snapshot(NODE, *old), only=[CHECK]).results
    assert result.status is CheckStatus.PASSED


def test_replaced_node_that_is_gone_is_still_reported() -> None:
    (result,) = run(snapshot(*REBOOTS), only=[CHECK]).results
    (f,) = result.findings
    assert f.subject == ObjectRef("Node", NODE_NAME)
    assert any(e.path == f"node {NODE_NAME}" and e.value is None for e in f.evidence)


def test_skipped_without_events() -> None:
    (result,) = run(snapshot(NODE, sources={"events": SourceState.FORBIDDEN}), only=[CHECK]).results
    assert result.status is CheckStatus.SKIPPED
    assert "events: forbidden" in result.reason


def test_repairs_only_karpenters_counters_saw_are_a_loop(diagnose: Callable[..., Report]) -> None:
    # Karpenter before v1.8 force-deletes an unhealthy claim with no event or condition: in the
    # fleet dataset only its counters say gpu-ondemand lost 4 claims (both counters, not added up).
    (result,) = diagnose(CHECK, "fleet").results
    (f,) = result.findings
    assert f.subject == ObjectRef("NodePool", "gpu-ondemand")
    assert f.title == "NodePool gpu-ondemand: 4 nodes replaced as Unhealthy in the last 6 hours: node repair is looping"
    metric = [e for e in f.evidence if "karpenter_nodeclaims_unhealthy_disrupted_total" in e.path]
    assert [e.value for e in metric] == [4]
    assert "condition=AcceleratedHardwareReady, image_id=ami-0f1e2d3c4b5a69788" in metric[0].note
    assert not any('reason="unhealthy"' in e.path for e in f.evidence)  # the generic counter is not added
    # Without Prometheus the same cluster shows no loop (nothing left in events or objects).
    (quiet,) = diagnose(CHECK, "quiet").results
    assert quiet.findings == ()
