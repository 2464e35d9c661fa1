"""nodeclaim-launch-failed: provider launch errors mapped to fixes; ICE and fresh claims left alone."""

from __future__ import annotations

import pytest

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.snapshot import SourceState
from tests.builders import snapshot

CHECK = "nodeclaim-launch-failed"

POOL_AND_CLASS = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu-inference}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu-al2023}
status:
  conditions:
  - {type: Ready, status: "True", reason: Ready}
  - {type: NodeRegistrationHealthy, status: "False", reason: SecurityGroupSubnetVPCMismatch,
     message: Security groups and subnets must be in the same VPC., lastTransitionTime: "2026-08-21T09:40:00Z"}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu-al2023}
spec:
  role: KarpenterNodeRole-prod
  amiSelectorTerms: [{alias: al2023@latest}]
status:
  subnets:
  - {id: subnet-0a1b2c3d4e5f60001, zone: us-east-1a, zoneID: use1-az1}
  - {id: subnet-0a1b2c3d4e5f60002, zone: us-east-1b, zoneID: use1-az2}
  securityGroups: [{id: sg-0f9e8d7c6b5a40321, name: eks-cluster-sg-legacy}]
  conditions: [{type: Ready, status: "True", reason: Ready}]
"""


def claim(name: str, created: str, launched: str, extra_meta: str = "") -> str:
    return f"""
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: {name}
  creationTimestamp: "{created}"
  labels: {{karpenter.sh/nodepool: gpu-inference, node.kubernetes.io/instance-type: g6.2xlarge}}
{extra_meta}spec:
  nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu-al2023}}
  resources: {{requests: {{nvidia.com/gpu: "1"}}}}
status:
  conditions:
  - {launched}
  - {{type: Registered, status: Unknown, reason: AwaitingReconciliation, message: object is awaiting reconciliation,
     lastTransitionTime: "{created}"}}
"""


MISMATCH = claim("gpu-inference-k4n7w", "2026-08-21T09:57:00Z",
                 '{type: Launched, status: Unknown, reason: SecurityGroupSubnetVPCMismatch, '
                 'message: Security groups and subnets must be in the same VPC., '
                 'lastTransitionTime: "2026-08-21T09:57:00Z"}')

NOMINATED = """
apiVersion: v1
kind: Pod
metadata: {name: whisper-asr-5d8f7-lq2xv, namespace: speech}
spec:
  containers: [{name: asr, image: x, resources: {limits: {nvidia.com/gpu: "1"}}}]
status:
  phase: Pending
  conditions: [{type: PodScheduled, status: "False", reason: Unschedulable}]
---
apiVersion: v1
kind: Event
metadata: {name: whisper-asr-5d8f7-lq2xv.17e0c, namespace: speech}
involvedObject: {kind: Pod, namespace: speech, name: whisper-asr-5d8f7-lq2xv}
reason: Nominated
message: "Pod should schedule on: nodeclaim/gpu-inference-k4n7w"
type: Normal
source: {component: karpenter}
count: 1
lastTimestamp: "2026-08-21T09:57:01Z"
"""


def test_vpc_mismatch_is_mapped_to_its_fix_with_waiting_pods() -> None:
    (result,) = run(snapshot(POOL_AND_CLASS, MISMATCH, NOMINATED), only=[CHECK]).results
    assert result.status is CheckStatus.FAILED
    (f,) = result.findings
    assert f.code == "GT301"
    assert f.severity is Severity.ERROR
    assert f.subject == ObjectRef("NodeClaim", "gpu-inference-k4n7w")
    assert f.title == ("NodeClaim gpu-inference-k4n7w (g6.2xlarge) not launched for 3m: SecurityGroupSubnetVPCMismatch"
                       " - the EC2NodeClass selects security groups and subnets in different VPCs")
    ev = {(str(e.subject), e.path): e for e in f.evidence}
    cond = ev[("nodeclaim/gpu-inference-k4n7w", "status.conditions[Launched]")]
    assert cond.value == {"status": "Unknown", "reason": "SecurityGroupSubnetVPCMismatch",
                          "message": "Security groups and subnets must be in the same VPC."}
    timeout = ev[("nodeclaim/gpu-inference-k4n7w", "launch timeout")]
    assert timeout.value == "3m of 5m"
    assert "Karpenter deletes it in 2m (launch_timeout)" in timeout.note
    assert ev[("nodepool/gpu-inference", "status.conditions[NodeRegistrationHealthy]")].value["status"] == "False"
    assert ev[("nodeclaim/gpu-inference-k4n7w", "pods waiting for it")].value == ["speech/whisper-asr-5d8f7-lq2xv"]
    assert ObjectRef("Pod", "whisper-asr-5d8f7-lq2xv", "speech") in f.related
    cmds = f.remediation.commands
    assert cmds[0].startswith("kubectl get ec2nodeclass gpu-al2023 -o jsonpath=")
    # The resolved IDs from the EC2NodeClass status are filled in, ready to paste.
    assert cmds[1] == ("aws ec2 describe-subnets --subnet-ids subnet-0a1b2c3d4e5f60001 subnet-0a1b2c3d4e5f60002 "
                       "--query 'Subnets[].[SubnetId,VpcId]' --output text")
    assert cmds[2].startswith("aws ec2 describe-security-groups --group-ids sg-0f9e8d7c6b5a40321 ")


def test_launch_failed_raw_error_is_classified_from_its_text() -> None:
    raw = ("creating instance, with fleet error(s), UnauthorizedOperation: You are not authorized to perform this "
           "operation. User: arn:aws:sts::111122223333:assumed-role/KarpenterController/1755770000 is not authorized "
           "to perform: ec2:CreateFleet with an explicit deny in a service control policy. Encoded authorization "
           "failure message: " + "Zm9vYmFy" * 80)
    c = claim("gpu-inference-z8v3q", "2026-08-21T09:51:00Z",
              f'{{type: Launched, status: Unknown, reason: LaunchFailed, message: "{raw}", '
              f'lastTransitionTime: "2026-08-21T09:51:00Z"}}')
    (result,) = run(snapshot(POOL_AND_CLASS, c), only=[CHECK]).results
    (f,) = result.findings
    # An SCP deny is not fixed in the controller role: the title and the fix say where it is.
    assert "not launched for 9m: LaunchFailed (SCPDeny) - an AWS Organizations service control policy" in f.title
    assert "editing the controller role changes nothing" in f.remediation.text
    cond = next(e for e in f.evidence if e.path == "status.conditions[Launched]")
    assert len(cond.value["message"]) <= 303  # Karpenter-sized, not the whole encoded blob
    timeout = next(e for e in f.evidence if e.path == "launch timeout")
    assert "4m past the timeout and not deleted" in timeout.note
    assert "check that its controller runs" in f.remediation.text


@pytest.mark.parametrize("text, mapped, cause", [
    ("User: arn:aws:sts::111122223333:assumed-role/KarpenterController/1 is not authorized to perform: ec2:CreateFleet "
     "on resource: arn:aws:ec2:us-east-1:111122223333:fleet/* because no identity-based policy allows the "
     "ec2:CreateFleet action", "Unauthorized", "the Karpenter controller's IAM role is not allowed"),
    ("is not authorized to perform: ec2:RunInstances with an explicit deny in a permissions boundary", "BoundaryDeny",
     "permissions boundary denies the launch"),
    ("is not authorized to perform: iam:PassRole on resource: arn:aws:iam::111122223333:role/KarpenterNodeRole",
     "PassRoleDenied", "may not pass the node role"),
    ("Unsupported: Your requested instance type (p5.48xlarge) is not supported in your requested Availability Zone "
     "(us-east-1e).", "UnsupportedInZone", "not offered in the zone"),
])
def test_launch_errors_are_told_apart_by_their_aws_text(text: str, mapped: str, cause: str) -> None:
    c = claim("gpu-inference-z8v3q", "2026-08-21T09:58:00Z",
              f'{{type: Launched, status: Unknown, reason: LaunchFailed, message: "creating instance, {text}", '
              f'lastTransitionTime: "2026-08-21T09:58:00Z"}}')
    (f,) = run(snapshot(POOL_AND_CLASS, c), only=[CHECK]).results[0].findings
    assert f"LaunchFailed ({mapped}) - " in f.title and cause in f.title, f.title


@pytest.mark.parametrize("reason, message, cause", [
    # The Launched reasons of aws ToReasonMessage beyond the common ones, with their own messages.
    ("InstanceProfileNameInvalid", "Instance profile name used from EC2NodeClass status does not exist",
     "the instance profile in the EC2NodeClass status does not exist"),
    ("LaunchTemplateNotFound", "Launch template used for instance launch wasn't found",
     "the launch template Karpenter had cached was deleted"),
    ("InvalidAMIID", "AMI used for instance launch is invalid", "an AMI id in the EC2NodeClass is malformed"),
    ("AccountPendingVerification", "An instance launch was requested but the request for launching resources in "
     "this region is still being verified", "AWS is still verifying the account"),
])
def test_every_provider_launch_reason_gets_its_own_cause(reason: str, message: str, cause: str) -> None:
    c = claim("gpu-inference-z8v3q", "2026-08-21T09:58:00Z",
              f'{{type: Launched, status: Unknown, reason: {reason}, message: "{message}", '
              f'lastTransitionTime: "2026-08-21T09:58:00Z"}}')
    (f,) = run(snapshot(POOL_AND_CLASS, c), only=[CHECK]).results[0].findings
    assert f"not launched for 2m: {reason} - {cause}" in f.title
    assert "the cloud provider rejected the launch" not in f.title


def test_an_unknown_reason_shows_its_message() -> None:
    c = claim("gpu-inference-z8v3q", "2026-08-21T09:58:00Z",
              '{type: Launched, status: Unknown, reason: CapacityReservationNotFound, '
              'message: "capacity reservation cr-0abc is not active", lastTransitionTime: "2026-08-21T09:58:00Z"}')
    (f,) = run(snapshot(POOL_AND_CLASS, c), only=[CHECK]).results[0].findings
    assert f.title.endswith("CapacityReservationNotFound - the cloud provider rejected the launch: "
                            "capacity reservation cr-0abc is not active")


def test_awaiting_reconciliation_for_minutes_means_karpenter_is_not_launching() -> None:
    c = claim("gpu-inference-r2d2c", "2026-08-21T09:56:00Z",
              '{type: Launched, status: Unknown, reason: AwaitingReconciliation, '
              'message: object is awaiting reconciliation, lastTransitionTime: "2026-08-21T09:56:00Z"}')
    (result,) = run(snapshot(c), only=[CHECK]).results
    (f,) = result.findings
    assert "AwaitingReconciliation - Karpenter has not attempted the launch" in f.title
    assert any("app.kubernetes.io/name=karpenter" in cmd for cmd in f.remediation.commands)


def test_launched_fresh_and_capacity_errors_are_not_reported() -> None:
    ok = claim("gpu-inference-ok111", "2026-08-21T09:00:00Z", '{type: Launched, status: "True", reason: Launched}')
    # Karpenter has not reached this one yet (30s old).
    fresh = claim("gpu-inference-new22", "2026-08-21T09:59:30Z",
                  '{type: Launched, status: Unknown, reason: AwaitingReconciliation, '
                  'message: object is awaiting reconciliation, lastTransitionTime: "2026-08-21T09:59:30Z"}')
    # ICE churn is spot-capacity-shortage's: the claim is being deleted and carries the ICE event.
    ice = claim("gpu-inference-ice33", "2026-08-21T09:58:00Z",
                '{type: Launched, status: Unknown, reason: AwaitingReconciliation, '
                'message: object is awaiting reconciliation, lastTransitionTime: "2026-08-21T09:58:00Z"}',
                '  deletionTimestamp: "2026-08-21T09:58:04Z"\n')
    ice_event = """
apiVersion: v1
kind: Event
metadata: {name: gpu-inference-ice33.17e0d, namespace: default}
involvedObject: {apiVersion: karpenter.sh/v1, kind: NodeClaim, name: gpu-inference-ice33}
reason: InsufficientCapacityError
message: "NodeClaim gpu-inference-ice33 event: creating instance, insufficient capacity, with fleet error(s), InsufficientInstanceCapacity: There is no Spot capacity available that matches your request."
type: Warning
source: {component: karpenter}
count: 1
lastTimestamp: "2026-08-21T09:58:03Z"
"""
    (result,) = run(snapshot(ok, fresh, ice, ice_event), only=[CHECK]).results
    assert result.status is CheckStatus.PASSED
    assert result.examined == 3


def test_skipped_when_karpenter_is_not_installed() -> None:
    (result,) = run(snapshot(MISMATCH, sources={"nodeclaims": SourceState.ABSENT}), only=[CHECK]).results
    assert result.status is CheckStatus.SKIPPED
    assert result.reason.startswith("nodeclaims: not installed")
