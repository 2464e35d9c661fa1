"""instance-type-not-offered: named GPU types/families/models vs DescribeInstanceTypeOfferings, pass and skip."""

from __future__ import annotations

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.model import CheckResult
from tests.aws.shapes import make_facts, subnet, with_aws
from tests.builders import snapshot

CLASS = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu}
spec:
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: prod-cluster}}]
status:
  subnets: [{id: subnet-0aaa, zone: us-east-1a}, {id: subnet-0bbb, zone: us-east-1b}]
  conditions: [{type: Ready, status: "True", reason: Ready}]
"""

POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: POOLNAME}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: KEY, operator: In, values: [VALUES]}
      - {key: topology.kubernetes.io/zone, operator: In, values: [ZONES]}
      taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
status:
  conditions: [{type: Ready, status: "True", reason: Ready}]
"""

# Where moto's (real) data and a typical us-east-1 account sell them, trimmed for the cases below.
OFFERED = {
    "g5.xlarge": ["us-east-1a", "us-east-1b", "us-east-1c"],
    "g5.2xlarge": ["us-east-1a", "us-east-1b", "us-east-1c"],
    "g5.12xlarge": ["us-east-1a", "us-east-1b"],
    "g6.xlarge": ["us-east-1c", "us-east-1d"],
    "p4d.24xlarge": ["us-east-1a", "us-east-1b", "us-east-1c"],
    "p5.48xlarge": ["us-east-1d", "us-east-1f"],
    "p5e.48xlarge": ["us-east-1b", "us-east-1f"],
}


def _pool(key: str, values: str, zones: str = "us-east-1a, us-east-1b", name: str = "gpu-training") -> str:
    return POOL.replace("POOLNAME", name).replace("KEY", key).replace("VALUES", values).replace("ZONES", zones)


def _run(*docs: str, errors: dict[str, str] | None = None, region: str = "us-east-1") -> CheckResult:
    snap = snapshot(CLASS, *docs)
    facts = make_facts(snap, region=region, offered=OFFERED, errors=errors,
                       subnets=[subnet("subnet-0aaa", "us-east-1a"), subnet("subnet-0bbb", "us-east-1b")])
    (result,) = run(with_aws(snap, facts), only=["instance-type-not-offered"]).results
    return result


def test_only_type_not_offered_in_the_pools_zones_is_an_error() -> None:
    result = _run(_pool("node.kubernetes.io/instance-type", "p5.48xlarge"))
    (f,) = result.findings
    assert f.code == "GT603" and f.severity is Severity.ERROR
    assert f.subject == ObjectRef("NodePool", "gpu-training")
    assert f.title == ("NodePool gpu-training: p5.48xlarge not offered in its zones (us-east-1a, us-east-1b): "
                       "nothing can launch; offered in us-east-1d, us-east-1f")
    by_path = {e.path: e for e in f.evidence}
    offered = by_path["ec2:DescribeInstanceTypeOfferings (instance type p5.48xlarge)"]
    assert offered.value == {"p5.48xlarge": ["us-east-1d", "us-east-1f"]}
    assert "us-east-1a, us-east-1b (from ec2:DescribeSubnets (us-east-1))" in offered.note
    # 8 GPUs with at least as much memory each, sold where the pool can launch: what to allow instead.
    alts = by_path["ec2:DescribeInstanceTypeOfferings (alternatives)"].value
    assert alts == ["p5e.48xlarge (8x H200 141 GiB) in us-east-1b"]  # not p4d (40 GiB), not g5 (1-4 GPUs)
    assert f.remediation.commands[0].startswith("aws ec2 describe-instance-type-offerings --location-type "
                                                "availability-zone --region us-east-1 --filters "
                                                "Name=instance-type,Values=p5.48xlarge")
    assert "kubectl edit nodepool gpu-training" in f.remediation.commands


def test_one_family_not_offered_warns() -> None:
    # g5 is sold in both zones, g6 only in us-east-1c/d: the pool still launches g5.
    (f,) = _run(_pool("karpenter.k8s.aws/instance-family", "g5, g6", name="gpu-inference")).findings
    assert f.severity is Severity.WARNING
    assert f.title == ("NodePool gpu-inference: g6 not offered in any of its zones (us-east-1a, us-east-1b); "
                       "offered in us-east-1c, us-east-1d")
    assert {e.path: e for e in f.evidence}["ec2:DescribeInstanceTypeOfferings (instance family g6)"].value == {
        "g6.xlarge": ["us-east-1c", "us-east-1d"]}


def test_type_not_sold_in_the_region_and_gpu_names() -> None:
    # p6-b200 matches the p* pattern that was read, so its absence means "not in this region".
    (f,) = _run(_pool("node.kubernetes.io/instance-type", "p4d.24xlarge, p6-b200.48xlarge")).findings
    assert f.severity is Severity.WARNING
    assert "p6-b200.48xlarge not offered in any of its zones" in f.title and f.title.endswith("not sold in us-east-1")
    # A GPU model (Karpenter's instance-gpu-name) resolves to its types: h100 -> p5.48xlarge.
    (g,) = _run(_pool("karpenter.k8s.aws/instance-gpu-name", "h100")).findings
    assert g.severity is Severity.ERROR and "h100 not offered in its zones" in g.title


def test_passes_when_offered_and_skips_pools_without_gpus() -> None:
    cpu = _pool("karpenter.k8s.aws/instance-category", "c, m", name="default")
    result = _run(_pool("karpenter.k8s.aws/instance-family", "g5"), cpu)
    assert result.status is CheckStatus.PASSED
    assert result.examined == 1  # the CPU pool is not a GPU pool


def test_skipped_when_offerings_are_denied_or_the_region_is_wrong() -> None:
    denied = _run(_pool("karpenter.k8s.aws/instance-family", "g5"),
                  errors={"offerings": "forbidden (ec2:DescribeInstanceTypeOfferings)"})
    assert denied.status is CheckStatus.SKIPPED
    assert denied.reason == "aws: forbidden (ec2:DescribeInstanceTypeOfferings)"
    # AWS was read in eu-west-1 but the cluster's zones are us-east-1x: judging would be nonsense.
    wrong = _run(_pool("karpenter.k8s.aws/instance-family", "g5"), region="eu-west-1")
    assert wrong.status is CheckStatus.SKIPPED
    assert "pass --aws-region us-east-1" in wrong.reason
