"""nodeclass-subnets-not-found: scenario B of karpenter-scenarios.md (v1 and v1beta1 shapes), pass and skip."""

from __future__ import annotations

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.snapshot import SourceState
from tests.builders import snapshot

NODECLASS = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu, generation: 3, creationTimestamp: "2026-08-20T08:00:00Z"}
spec:
  role: KarpenterNodeRole-prod
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms:
  - tags: {karpenter.sh/discovery: prod-cluster}
  securityGroupSelectorTerms:
  - tags: {karpenter.sh/discovery: prod-cluster}
status:
  securityGroups: [{id: sg-0a1b2c3d4e5f, name: eks-cluster-sg-prod}]
  amis:
  - id: ami-0123456789abcdef0
    name: amazon-eks-node-al2023-x86_64-nvidia-1.33-v20250801
  instanceProfile: prod-cluster_1234567890123456789
  conditions:
  - {type: AMIsReady, status: "True", reason: AMIsReady}
  - type: SubnetsReady
    status: "False"
    reason: SubnetsNotFound
    message: SubnetSelector did not match any Subnets
    lastTransitionTime: "2026-08-21T08:30:00Z"
  - {type: SecurityGroupsReady, status: "True", reason: SecurityGroupsReady}
  - {type: InstanceProfileReady, status: "True", reason: InstanceProfileReady}
  - {type: PlacementGroupReady, status: "True", reason: PlacementGroupReady}
  - type: ValidationSucceeded
    status: "False"
    reason: DependenciesNotReady
    message: Awaiting AMI, Instance Profile, Security Group, and Subnet resolution
  - type: Ready
    status: "False"
    reason: UnhealthyDependents
    message: SubnetsReady=False, ValidationSucceeded=False
"""

NODEPOOLS = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
      - {key: karpenter.k8s.aws/instance-gpu-count, operator: Gt, values: ["0"]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
status:
  resources: {cpu: "0", memory: "0", pods: "0", ephemeral-storage: "0", nodes: "0"}
  conditions:
  - {type: ValidationSucceeded, status: "True", reason: ValidationSucceeded}
  - type: NodeClassReady
    status: "False"
    reason: UnhealthyDependents
    message: SubnetsReady=False, ValidationSucceeded=False
    lastTransitionTime: "2026-08-21T08:30:05Z"
  - {type: Ready, status: "False", reason: UnhealthyDependents, message: NodeClassReady=False}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
status:
  conditions:
  - {type: Ready, status: "True", reason: Ready}
"""

POD = """
apiVersion: v1
kind: Pod
metadata: {name: trainer-0, namespace: ml, uid: p1, creationTimestamp: "2026-08-21T09:00:00Z"}
spec:
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  containers:
  - name: trainer
    image: ghcr.io/acme/trainer:2.3
    resources: {limits: {nvidia.com/gpu: "1"}}
status:
  phase: Pending
  conditions:
  - {type: PodScheduled, status: "False", reason: Unschedulable,
     message: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}
---
apiVersion: v1
kind: Event
metadata: {name: trainer-0.17e0a1, namespace: ml}
involvedObject: {kind: Pod, name: trainer-0, namespace: ml}
reason: FailedScheduling
type: Warning
source: {component: default-scheduler}
count: 42
firstTimestamp: "2026-08-21T09:00:00Z"
lastTimestamp: "2026-08-21T09:58:00Z"
message: >-
  0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available:
  3 No preemption victims found for incoming pod.
"""


def test_fails_with_selector_pools_and_waiting_pods() -> None:
    (result,) = run(snapshot(NODECLASS, NODEPOOLS, POD), only=["nodeclass-subnets-not-found"]).results
    assert result.status is CheckStatus.FAILED
    (f,) = result.findings
    assert f.code == "GT101"
    assert f.severity is Severity.ERROR
    assert f.subject == ObjectRef("EC2NodeClass", "gpu")
    assert "subnetSelectorTerms match no subnet (tags karpenter.sh/discovery=prod-cluster)" in f.title
    assert "NodePool gpu cannot launch nodes" in f.title and "1 GPU pod(s) pending" in f.title
    by_path = {e.path: e for e in f.evidence}
    assert by_path["status.conditions[SubnetsReady]"].value["reason"] == "SubnetsNotFound"
    assert by_path["spec.subnetSelectorTerms"].value == [{"tags": {"karpenter.sh/discovery": "prod-cluster"}}]
    assert by_path["status.subnets"].value == []
    pool_cond = next(e for e in f.evidence if e.subject == ObjectRef("NodePool", "gpu"))
    assert pool_cond.value["message"] == "SubnetsReady=False, ValidationSucceeded=False"
    # v1 symptom: no NodeClaim and only kube-scheduler's event on the pod.
    assert "NodeClaims with karpenter.sh/nodepool in [gpu]" in by_path
    assert "only kube-scheduler's event" in by_path["event Warning/FailedScheduling"].note
    assert ("aws ec2 describe-subnets --filters Name=tag:karpenter.sh/discovery,Values=prod-cluster "
            in f.remediation.commands[0])
    assert ObjectRef("NodePool", "gpu") in f.related
    assert ObjectRef("Pod", "trainer-0", "ml") in f.related
    assert ObjectRef("NodePool", "default") not in f.related


def test_the_tag_command_carries_every_tag_of_the_term() -> None:
    # All tags of a term must match: tagging a subnet with the first one alone changes nothing.
    two = NODECLASS.replace("  - tags: {karpenter.sh/discovery: prod-cluster}\n  securityGroupSelectorTerms:",
                            "  - tags: {karpenter.sh/discovery: prod-cluster, network-tier: private-gpu}\n"
                            "  securityGroupSelectorTerms:")
    assert two != NODECLASS
    (f,) = run(snapshot(two, NODEPOOLS, POD), only=["nodeclass-subnets-not-found"]).results[0].findings
    assert ("aws ec2 create-tags --resources <subnet-id> --tags Key=karpenter.sh/discovery,Value=prod-cluster "
            "Key=network-tier,Value=private-gpu") in f.remediation.commands


def test_nodeclaims_unreadable_still_explains_the_symptom() -> None:
    snap = snapshot(NODECLASS, NODEPOOLS, POD, sources={"nodeclaims": SourceState.FORBIDDEN})
    (result,) = run(snap, only=["nodeclass-subnets-not-found"]).results
    (f,) = result.findings
    claims = {e.path: e for e in f.evidence}["NodeClaims with karpenter.sh/nodepool in [gpu]"]
    assert claims.note.startswith("nodeclaims: forbidden (list nodeclaims); in v1 Karpenter skips a NodePool")


def test_pod_served_by_a_healthy_pool_is_not_related() -> None:
    # Another Ready GPU pool on a healthy class tolerates the same pod: it does not depend on gpu.
    other = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu-backup}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu-backup}
      requirements: [{key: karpenter.k8s.aws/instance-category, operator: In, values: [g]}]
status:
  conditions: [{type: Ready, status: "True", reason: Ready}]
"""
    (result,) = run(snapshot(NODECLASS, NODEPOOLS, POD, other), only=["nodeclass-subnets-not-found"]).results
    (f,) = result.findings
    assert ObjectRef("Pod", "trainer-0", "ml") not in f.related
    assert "pending" not in f.title


def test_v1beta1_class_with_empty_status_subnets_fails() -> None:
    # v1beta1 (v0.37): no sub-conditions; the only sign is status.subnets missing while the rest resolved.
    v1beta1 = """
apiVersion: karpenter.k8s.aws/v1beta1
kind: EC2NodeClass
metadata: {name: gpu-legacy, creationTimestamp: "2026-08-01T00:00:00Z"}
spec:
  amiFamily: AL2
  role: KarpenterNodeRole-prod
  subnetSelectorTerms: [{id: subnet-0deadbeef0000001}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: prod-cluster}}]
status:
  securityGroups: [{id: sg-0a1b2c3d4e5f}]
  amis: [{id: ami-0aaa, name: amazon-eks-gpu-node-1.29-v20240703}]
"""
    (result,) = run(snapshot(v1beta1), only=["nodeclass-subnets-not-found"]).results
    (f,) = result.findings
    assert f.subject == ObjectRef("EC2NodeClass", "gpu-legacy")
    assert "id subnet-0deadbeef0000001" in f.title
    assert "v1beta1-style" in {e.path: e for e in f.evidence}["status.subnets"].note
    assert f.remediation.commands[0].startswith("aws ec2 describe-subnets --subnet-ids subnet-0deadbeef0000001")


def test_passes_when_subnets_resolved_and_ignores_unreconciled_class() -> None:
    healthy = NODECLASS.replace("""  - type: SubnetsReady
    status: "False"
    reason: SubnetsNotFound
    message: SubnetSelector did not match any Subnets
    lastTransitionTime: "2026-08-21T08:30:00Z"
""", """  - {type: SubnetsReady, status: "True", reason: SubnetsReady}
""").replace("status:\n  securityGroups:",
              "status:\n  subnets: [{id: subnet-0a1, zone: us-east-1a}]\n  securityGroups:")
    # Created 30 s ago, no status yet: the controller has not reconciled it, not a failure.
    fresh = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: brand-new, creationTimestamp: "2026-08-21T09:59:30Z"}
spec:
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: prod-cluster}}]
"""
    (result,) = run(snapshot(healthy, fresh, NODEPOOLS), only=["nodeclass-subnets-not-found"]).results
    assert result.status is CheckStatus.PASSED
    assert result.examined == 2


def test_skipped_when_ec2nodeclass_crd_absent() -> None:
    (result,) = run(snapshot(NODEPOOLS, sources={"ec2nodeclasses": SourceState.ABSENT}),
                    only=["nodeclass-subnets-not-found"]).results
    assert result.status is CheckStatus.SKIPPED
    assert "ec2nodeclasses: not installed" in result.reason
