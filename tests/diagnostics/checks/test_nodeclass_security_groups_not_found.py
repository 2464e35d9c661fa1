"""nodeclass-security-groups-not-found: the security-group variant of scenario B, pass and skip."""

from __future__ import annotations

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.snapshot import SourceState
from tests.builders import snapshot

NODECLASS = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu-inference, creationTimestamp: "2026-08-20T08:00:00Z"}
spec:
  role: KarpenterNodeRole-prod
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: prod-cluster}}]
  securityGroupSelectorTerms:
  - id: sg-0123456789abcdef0
  - tags: {karpenter.sh/discovery: prod-cluster, network: private}
status:
  subnets: [{id: subnet-0a1, zone: us-east-1a, zoneID: use1-az1}]
  amis: [{id: ami-0123456789abcdef0, name: amazon-eks-node-al2023-x86_64-nvidia-1.33-v20250801}]
  conditions:
  - {type: SubnetsReady, status: "True", reason: SubnetsReady}
  - type: SecurityGroupsReady
    status: "False"
    reason: SecurityGroupsNotFound
    message: SecurityGroupSelector did not match any SecurityGroups
    lastTransitionTime: "2026-08-21T09:10:00Z"
  - {type: ValidationSucceeded, status: "False", reason: DependenciesNotReady,
     message: "Awaiting AMI, Instance Profile, Security Group, and Subnet resolution"}
  - {type: Ready, status: "False", reason: UnhealthyDependents,
     message: "SecurityGroupsReady=False, ValidationSucceeded=False"}
---
apiVersion: v1
kind: Event
metadata: {name: gpu-inference.1, namespace: default}
involvedObject: {apiVersion: karpenter.k8s.aws/v1, kind: EC2NodeClass, name: gpu-inference}
reason: SecurityGroupsReady
type: Normal
source: {component: karpenter}
count: 1
firstTimestamp: "2026-08-21T09:10:00Z"
lastTimestamp: "2026-08-21T09:10:00Z"
message: >-
  Status condition transitioned, Type: SecurityGroupsReady, Status: True -> False,
  Reason: SecurityGroupsNotFound, Message: SecurityGroupSelector did not match any SecurityGroups
"""

NODEPOOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: inference}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu-inference}
      requirements: [{key: karpenter.k8s.aws/instance-gpu-name, operator: In, values: [a10g, l4]}]
status:
  conditions:
  - {type: NodeClassReady, status: "False", reason: UnhealthyDependents,
     message: "SecurityGroupsReady=False, ValidationSucceeded=False"}
  - {type: Ready, status: "False", reason: UnhealthyDependents, message: NodeClassReady=False}
"""


def test_fails_with_one_command_per_selector_term() -> None:
    (result,) = run(snapshot(NODECLASS, NODEPOOL), only=["nodeclass-security-groups-not-found"]).results
    (f,) = result.findings
    assert f.code == "GT102"
    assert f.severity is Severity.ERROR
    assert f.subject == ObjectRef("EC2NodeClass", "gpu-inference")
    assert "securityGroupSelectorTerms match no security group" in f.title
    assert "id sg-0123456789abcdef0 or tags karpenter.sh/discovery=prod-cluster,network=private" in f.title
    by_path = {e.path: e for e in f.evidence}
    assert by_path["status.conditions[SecurityGroupsReady]"].value["reason"] == "SecurityGroupsNotFound"
    assert "Status: True -> False" in by_path["event Normal/SecurityGroupsReady"].value
    cmds = f.remediation.commands
    assert cmds[0].startswith("aws ec2 describe-security-groups --group-ids sg-0123456789abcdef0")
    # Both tags of one term are ANDed into one call.
    assert cmds[1].startswith("aws ec2 describe-security-groups --filters Name=tag:karpenter.sh/discovery,"
                              "Values=prod-cluster Name=tag:network,Values=private")
    assert f.related == (ObjectRef("NodePool", "inference"),)


def test_subnet_failure_is_not_reported_here() -> None:
    # Subnets broken, security groups fine: GT101's business, not GT102's.
    subnets_broken = NODECLASS.replace("""  - type: SecurityGroupsReady
    status: "False"
    reason: SecurityGroupsNotFound
    message: SecurityGroupSelector did not match any SecurityGroups
    lastTransitionTime: "2026-08-21T09:10:00Z"
""", """  - {type: SecurityGroupsReady, status: "True", reason: SecurityGroupsReady}
""").replace("  - {type: SubnetsReady, status: \"True\", reason: SubnetsReady}",
             "  - {type: SubnetsReady, status: \"False\", reason: SubnetsNotFound}")
    report = run(snapshot(subnets_broken, NODEPOOL),
                 only=["nodeclass-security-groups-not-found", "nodeclass-subnets-not-found"])
    by_check = {r.check: r for r in report.results}
    assert by_check["nodeclass-security-groups-not-found"].status is CheckStatus.PASSED
    assert by_check["nodeclass-subnets-not-found"].status is CheckStatus.FAILED


def test_skipped_when_ec2nodeclasses_forbidden() -> None:
    (result,) = run(snapshot(NODEPOOL, sources={"ec2nodeclasses": SourceState.FORBIDDEN}),
                    only=["nodeclass-security-groups-not-found"]).results
    assert result.status is CheckStatus.SKIPPED
    assert "ec2nodeclasses: forbidden" in result.reason
