"""`diagnose pod/X` and `node/X` keep what is about the target, not everything sharing its EC2NodeClass."""

from __future__ import annotations

from diagnostics import ObjectRef, run
from diagnostics.relations import focus
from tests.builders import snapshot
from tests.diagnostics.checks.test_nodeclaim_not_registered import NODECLASS, claim

# A second pool on the same EC2NodeClass, with a healthy node and a running GPU pod on it.
POOL_B = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu-b}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [g5]}]
status:
  conditions: [{type: Ready, status: "True", reason: Ready}]
"""
CLAIM_B = """
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: gpu-b-x7k2p
  creationTimestamp: "2026-08-21T08:00:00Z"
  labels: {karpenter.sh/nodepool: gpu-b, node.kubernetes.io/instance-type: g5.2xlarge}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
status:
  nodeName: ip-10-0-7-7.ec2.internal
  providerID: aws:///eu-west-1a/i-0b0b0b0b0b0b0b0b0
  conditions:
  - {type: Launched, status: "True", reason: Launched, lastTransitionTime: "2026-08-21T08:01:00Z"}
  - {type: Registered, status: "True", reason: Registered, lastTransitionTime: "2026-08-21T08:03:00Z"}
  - {type: Initialized, status: "True", reason: Initialized, lastTransitionTime: "2026-08-21T08:04:00Z"}
"""
NODE_B = """
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-7-7.ec2.internal
  labels: {karpenter.sh/nodepool: gpu-b, node.kubernetes.io/instance-type: g5.2xlarge,
           nvidia.com/gpu.present: "true"}
spec: {providerID: "aws:///eu-west-1a/i-0b0b0b0b0b0b0b0b0"}
status:
  capacity: {nvidia.com/gpu: "1", cpu: "8", memory: 32Gi, pods: "58"}
  allocatable: {nvidia.com/gpu: "1", cpu: 7910m, memory: 30Gi, pods: "58"}
  conditions: [{type: Ready, status: "True", reason: KubeletReady, lastTransitionTime: "2026-08-21T08:04:00Z"}]
"""
POD_B = """
apiVersion: v1
kind: Pod
metadata: {name: infer-0, namespace: ml}
spec:
  nodeName: ip-10-0-7-7.ec2.internal
  containers: [{name: main, image: vllm, resources: {limits: {nvidia.com/gpu: "1"}}}]
status:
  phase: Running
  conditions: [{type: Ready, status: "True"}]
"""


def kept(target: ObjectRef) -> set[tuple[str, str]]:
    snap = snapshot(NODECLASS, claim("2026-08-21T09:49:00Z"), POOL_B, CLAIM_B, NODE_B, POD_B)
    report = run(snap)
    assert ("nodeclaim-not-registered", "nodeclaim/gpu-8fj2k") in {(f.check, str(f.subject)) for f in report.findings}
    return {(f.check, str(f.subject)) for f in focus(report, snap, target).findings}


def test_a_healthy_pod_is_not_blamed_for_another_pools_claim_on_the_same_nodeclass() -> None:
    assert ("nodeclaim-not-registered", "nodeclaim/gpu-8fj2k") not in kept(ObjectRef("Pod", "infer-0", "ml"))
    assert ("nodeclaim-not-registered", "nodeclaim/gpu-8fj2k") not in kept(ObjectRef("Node", "ip-10-0-7-7.ec2.internal"))


def test_the_nodeclass_and_the_claim_itself_still_see_it() -> None:
    assert ("nodeclaim-not-registered", "nodeclaim/gpu-8fj2k") in kept(ObjectRef("EC2NodeClass", "gpu"))
    assert ("nodeclaim-not-registered", "nodeclaim/gpu-8fj2k") in kept(ObjectRef("NodeClaim", "gpu-8fj2k"))
