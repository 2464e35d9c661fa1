"""nodepool-not-ready: validation failures and missing/deleting NodeClasses; class failures stay with GT101-103."""

from __future__ import annotations

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.snapshot import SourceState
from tests.builders import snapshot

CLASS = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu, creationTimestamp: "2026-08-01T00:00:00Z"}
spec:
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: prod-cluster}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: prod-cluster}}]
status:
  subnets: [{id: subnet-0a1, zone: us-east-1a}]
  securityGroups: [{id: sg-0a1}]
  amis: [{id: ami-0a1}]
  conditions: [{type: Ready, status: "True", reason: Ready}]
"""

POOL_NOT_FOUND = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu-h100}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu-v2}
      requirements: [{key: karpenter.k8s.aws/instance-gpu-name, operator: In, values: [h100]}]
      taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
status:
  conditions:
  - {type: ValidationSucceeded, status: "True", reason: ValidationSucceeded}
  - type: NodeClassReady
    status: "False"
    reason: NodeClassNotFound
    message: NodeClass not found on cluster
    lastTransitionTime: "2026-08-21T09:00:00Z"
  - {type: Ready, status: "False", reason: UnhealthyDependents, message: NodeClassReady=False}
---
apiVersion: v1
kind: Pod
metadata: {name: llm-train-0, namespace: research}
spec:
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  nodeSelector: {karpenter.k8s.aws/instance-gpu-name: h100}
  containers: [{name: main, image: nvcr.io/nvidia/pytorch:25.01-py3, resources: {limits: {nvidia.com/gpu: "8"}}}]
status: {phase: Pending}
"""


def test_nodeclass_not_found() -> None:
    (result,) = run(snapshot(CLASS, POOL_NOT_FOUND), only=["nodepool-not-ready"]).results
    (f,) = result.findings
    assert f.code == "GT106"
    assert f.severity is Severity.ERROR
    assert f.subject == ObjectRef("NodePool", "gpu-h100")
    assert "EC2NodeClass gpu-v2 not found" in f.title
    assert "1 GPU pod(s) pending" in f.title
    by_path = {e.path: e for e in f.evidence}
    assert by_path["status.conditions[NodeClassReady]"].value == {
        "status": "False", "reason": "NodeClassNotFound", "message": "NodeClass not found on cluster"}
    assert by_path["status.conditions[NodeClassReady]"].age_seconds == 3600
    assert "existing: gpu" in by_path["EC2NodeClass gpu-v2"].note
    assert "kubectl get ec2nodeclasses" in f.remediation.commands
    assert f.related == (ObjectRef("Pod", "llm-train-0", "research"),)


def test_validation_failed() -> None:
    pool = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements: [{key: karpenter.sh/nodepool, operator: In, values: [gpu]}]
status:
  conditions:
  - type: ValidationSucceeded
    status: "False"
    reason: NodePoolValidationFailed
    message: 'label domain "karpenter.sh" is restricted: spec.template.spec.requirements[0].key'
  - {type: NodeClassReady, status: "True", reason: NodeClassReady}
  - {type: Ready, status: "False", reason: UnhealthyDependents, message: ValidationSucceeded=False}
"""
    (result,) = run(snapshot(CLASS, pool), only=["nodepool-not-ready"]).results
    (f,) = result.findings
    assert "spec failed validation (NodePoolValidationFailed: label domain \"karpenter.sh\" is restricted" in f.title
    assert {e.path for e in f.evidence} >= {"status.conditions[ValidationSucceeded]"}
    assert f.remediation.commands[0] == "kubectl edit nodepool gpu"


def test_v1beta1_pool_referencing_a_missing_class() -> None:
    # v1beta1 NodePools have no conditions at all: the missing class is the only sign.
    pool = """
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata: {name: legacy-gpu}
spec:
  template:
    spec:
      nodeClassRef: {apiVersion: karpenter.k8s.aws/v1beta1, kind: EC2NodeClass, name: gpu-old}
status: {resources: {cpu: "0"}}
"""
    (result,) = run(snapshot(CLASS, pool), only=["nodepool-not-ready"]).results
    (f,) = result.findings
    assert f.title == "NodePool legacy-gpu not ready: EC2NodeClass gpu-old does not exist"


def test_pool_of_a_broken_class_is_left_to_the_class_checks() -> None:
    broken = CLASS.replace('conditions: [{type: Ready, status: "True", reason: Ready}]', """conditions:
  - {type: SubnetsReady, status: "False", reason: SubnetsNotFound, message: SubnetSelector did not match any Subnets}
  - {type: Ready, status: "False", reason: UnhealthyDependents, message: "SubnetsReady=False"}""")
    pool = POOL_NOT_FOUND.replace("name: gpu-v2", "name: gpu").replace("""    reason: NodeClassNotFound
    message: NodeClass not found on cluster""", """    reason: UnhealthyDependents
    message: SubnetsReady=False""")
    report = run(snapshot(broken, pool), only=["nodepool-not-ready", "nodeclass-subnets-not-found"])
    by_check = {r.check: r for r in report.results}
    assert by_check["nodepool-not-ready"].status is CheckStatus.PASSED
    assert ObjectRef("NodePool", "gpu-h100") in by_check["nodeclass-subnets-not-found"].findings[0].related


def test_class_unreadable_still_reports_the_pool() -> None:
    # With ec2nodeclasses forbidden GT101-103 are skipped, so the pool's copied message is all we have.
    pool = POOL_NOT_FOUND.replace("""    reason: NodeClassNotFound
    message: NodeClass not found on cluster""", """    reason: UnhealthyDependents
    message: SubnetsReady=False, ValidationSucceeded=False""")
    snap = snapshot(pool, sources={"ec2nodeclasses": SourceState.FORBIDDEN})
    (result,) = run(snap, only=["nodepool-not-ready"]).results
    (f,) = result.findings
    assert "its NodeClass gpu-v2 is not ready (SubnetsReady=False, ValidationSucceeded=False)" in f.title
    assert "ec2nodeclasses: forbidden" in {e.path: e for e in f.evidence}["EC2NodeClass gpu-v2"].note


def test_passes_for_ready_pool_and_skips_without_nodepools() -> None:
    ok = POOL_NOT_FOUND.replace("name: gpu-v2", "name: gpu").replace("""  - type: NodeClassReady
    status: "False"
    reason: NodeClassNotFound
    message: NodeClass not found on cluster
    lastTransitionTime: "2026-08-21T09:00:00Z"
  - {type: Ready, status: "False", reason: UnhealthyDependents, message: NodeClassReady=False}""", """\
  - {type: NodeClassReady, status: "True", reason: NodeClassReady}
  - {type: Ready, status: "True", reason: Ready}""")
    (result,) = run(snapshot(CLASS, ok), only=["nodepool-not-ready"]).results
    assert result.status is CheckStatus.PASSED and result.examined == 1
    (result,) = run(snapshot(CLASS, sources={"nodepools": SourceState.FORBIDDEN}), only=["nodepool-not-ready"]).results
    assert result.status is CheckStatus.SKIPPED
