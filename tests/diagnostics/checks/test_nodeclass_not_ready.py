"""nodeclass-not-ready: AMI, IAM-validation and instance-profile failures; selector failures stay with GT101/102."""

from __future__ import annotations

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.snapshot import SourceState
from tests.builders import snapshot

AMI_FAILED = """\
  - type: AMIsReady
    status: "False"
    reason: AMINotFound
    message: AMISelector did not match any AMIs
    lastTransitionTime: "2026-08-21T07:00:00Z"
"""
AMI_OK = """  - {type: AMIsReady, status: "True", reason: AMIsReady}
"""

AMI_NOT_FOUND = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu, creationTimestamp: "2026-08-20T08:00:00Z"}
spec:
  role: KarpenterNodeRole-prod
  amiSelectorTerms:
  - name: my-gpu-ami-2026-*
    owner: "123456789012"
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: prod-cluster}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: prod-cluster}}]
status:
  subnets: [{id: subnet-0a1, zone: us-east-1a}]
  securityGroups: [{id: sg-0a1}]
  conditions:
""" + AMI_FAILED + """  - {type: SubnetsReady, status: "True", reason: SubnetsReady}
  - {type: SecurityGroupsReady, status: "True", reason: SecurityGroupsReady}
  - {type: InstanceProfileReady, status: "True", reason: InstanceProfileReady}
  - {type: ValidationSucceeded, status: "False", reason: DependenciesNotReady,
     message: "Awaiting AMI, Instance Profile, Security Group, and Subnet resolution"}
  - {type: Ready, status: "False", reason: UnhealthyDependents, message: "AMIsReady=False, ValidationSucceeded=False"}
"""

NODEPOOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [g5, g6]}]
      taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
status:
  conditions:
  - {type: NodeClassReady, status: "False", reason: UnhealthyDependents,
     message: "AMIsReady=False, ValidationSucceeded=False"}
  - {type: Ready, status: "False", reason: UnhealthyDependents, message: NodeClassReady=False}
---
apiVersion: v1
kind: Pod
metadata: {name: infer-7c9d-x2x, namespace: serving}
spec:
  tolerations: [{key: nvidia.com/gpu, operator: Exists}]
  containers: [{name: vllm, image: vllm/vllm-openai:v0.9.0, resources: {limits: {nvidia.com/gpu: "1"}}}]
status: {phase: Pending}
"""


def test_ami_not_found_names_the_selector_and_affected_objects() -> None:
    (result,) = run(snapshot(AMI_NOT_FOUND, NODEPOOL), only=["nodeclass-not-ready"]).results
    (f,) = result.findings
    assert f.code == "GT103"
    assert f.severity is Severity.ERROR
    assert f.subject == ObjectRef("EC2NodeClass", "gpu")
    assert "AMIsReady=False (AMINotFound: AMISelector did not match any AMIs)" in f.title
    assert "NodePool gpu cannot launch nodes" in f.title
    # DependenciesNotReady is a consequence, never the headline.
    assert "ValidationSucceeded" not in f.title
    by_path = {e.path: e for e in f.evidence}
    assert by_path["spec.amiSelectorTerms"].value == [{"name": "my-gpu-ami-2026-*", "owner": "123456789012"}]
    assert by_path["status.conditions[AMIsReady]"].age_seconds == 3 * 3600
    assert any(c.startswith("aws ec2 describe-images --owners 123456789012 --filters "
                            "'Name=name,Values=my-gpu-ami-2026-*'") for c in f.remediation.commands)
    assert ObjectRef("Pod", "infer-7c9d-x2x", "serving") in f.related


def test_create_fleet_auth_check_failed() -> None:
    consequence = """  - {type: ValidationSucceeded, status: "False", reason: DependenciesNotReady,
     message: "Awaiting AMI, Instance Profile, Security Group, and Subnet resolution"}"""
    text = AMI_NOT_FOUND.replace(AMI_FAILED, AMI_OK).replace(consequence, """  - type: ValidationSucceeded
    status: "False"
    reason: CreateFleetAuthCheckFailed
    message: >-
      Controller isn't authorized to call ec2:CreateFleet: You are not authorized to perform this operation.
      User: arn:aws:sts::123456789012:assumed-role/KarpenterController/1724230000 is not authorized to perform:
      ec2:CreateFleet on resource: arn:aws:ec2:us-east-1:123456789012:fleet/* with an explicit deny in a
      service control policy. Encoded authorization failure message: """ + "A" * 800)
    (result,) = run(snapshot(text), only=["nodeclass-not-ready"]).results
    (f,) = result.findings
    assert "ValidationSucceeded=False (CreateFleetAuthCheckFailed: Controller isn't authorized" in f.title
    cond = {e.path: e for e in f.evidence}["status.conditions[ValidationSucceeded]"]
    assert len(cond.value["message"]) <= 303  # huge AWS messages are truncated
    assert "ec2:CreateFleet" in f.remediation.text
    assert any("simulate-principal-policy" in c for c in f.remediation.commands)


def test_selector_only_failure_passes_here() -> None:
    # Subnets broken; ValidationSucceeded=False only because of it: GT101 reports, GT103 stays quiet.
    text = AMI_NOT_FOUND.replace(AMI_FAILED, AMI_OK).replace(
        '{type: SubnetsReady, status: "True", reason: SubnetsReady}',
        '{type: SubnetsReady, status: "False", reason: SubnetsNotFound}')
    (result,) = run(snapshot(text, NODEPOOL), only=["nodeclass-not-ready"]).results
    assert result.status is CheckStatus.PASSED
    assert result.examined == 1


def test_instance_profile_failure_shows_role() -> None:
    text = AMI_NOT_FOUND.replace(AMI_FAILED, AMI_OK).replace(
        '{type: InstanceProfileReady, status: "True", reason: InstanceProfileReady}',
        '{type: InstanceProfileReady, status: "False", reason: InstanceProfileCreationFailed, '
        'message: "creating instance profile, NoSuchEntity: The role with name KarpenterNodeRole-prod '
        'cannot be found."}')
    (result,) = run(snapshot(text), only=["nodeclass-not-ready"]).results
    (f,) = result.findings
    assert "InstanceProfileReady=False" in f.title
    assert {e.path: e.value for e in f.evidence}["spec.role"] == "KarpenterNodeRole-prod"
    assert "aws iam get-role --role-name KarpenterNodeRole-prod" in f.remediation.commands


def test_skipped_without_ec2nodeclasses() -> None:
    (result,) = run(snapshot(NODEPOOL, sources={"ec2nodeclasses": SourceState.FORBIDDEN}),
                    only=["nodeclass-not-ready"]).results
    assert result.status is CheckStatus.SKIPPED
