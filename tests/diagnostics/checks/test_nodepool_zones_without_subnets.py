"""nodepool-zones-without-subnets: zone requirements vs subnet zones (AWS answer or status.subnets), pass, skip."""

from __future__ import annotations

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.snapshot import SourceState
from tests.aws.shapes import make_facts, subnet, with_aws
from tests.builders import snapshot

CLASS = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu}
spec:
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: prod-cluster}}]
status:
  subnets:
  - {id: subnet-0aaa, zone: us-east-1a, zoneID: use1-az1}
  - {id: subnet-0bbb, zone: us-east-1b, zoneID: use1-az2}
  conditions: [{type: Ready, status: "True", reason: Ready}]
"""

POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu-inference}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [g5]}
      - {key: ZONE_KEY, operator: In, values: [ZONES]}
      taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
status:
  conditions: [{type: Ready, status: "True", reason: Ready}]
"""

PINNED_POD = """
apiVersion: v1
kind: Pod
metadata: {name: asr-0, namespace: serving}
spec:
  nodeSelector: {topology.kubernetes.io/zone: us-east-1d}
  tolerations: [{key: nvidia.com/gpu, operator: Exists}]
  containers:
  - name: asr
    image: ghcr.io/acme/asr:1.0
    resources: {limits: {nvidia.com/gpu: "1"}}
status: {phase: Pending}
"""


def _pool(zones: str, key: str = "topology.kubernetes.io/zone") -> str:
    return POOL.replace("ZONES", zones).replace("ZONE_KEY", key)


def _aws(snap, extra_subnets=()):  # type: ignore[no-untyped-def]
    subs = [subnet("subnet-0aaa", "us-east-1a", zone_id="use1-az1"), subnet("subnet-0bbb", "us-east-1b", zone_id="use1-az2"),
            *extra_subnets]
    return with_aws(snap, make_facts(snap, subnets=subs))


def test_zone_without_subnet_warns_and_names_the_untagged_subnet_there() -> None:
    # us-east-1d has a subnet in the cluster's VPC (found by the VPC listing) that lacks the selector tag.
    untagged = subnet("subnet-0ddd", "us-east-1d", 4000, tags={"Name": "prod-private-1d"}, zone_id="use1-az6")
    snap = _aws(snapshot(CLASS, _pool("us-east-1a, us-east-1b, us-east-1d"), PINNED_POD), [untagged])
    (result,) = run(snap, only=["nodepool-zones-without-subnets"]).results
    (f,) = result.findings
    assert f.code == "GT602" and f.severity is Severity.WARNING
    assert f.subject == ObjectRef("NodePool", "gpu-inference")
    assert f.title.startswith("NodePool gpu-inference: zone us-east-1d has no subnet of EC2NodeClass gpu "
                              "(subnets in us-east-1a, us-east-1b): nothing launches there")
    assert "1 pending pod(s) pinned to it" in f.title
    by_path = {e.path: e for e in f.evidence}
    req = by_path["spec.template.spec.requirements[topology.kubernetes.io/zone]"]
    assert req.value == ["us-east-1a", "us-east-1b", "us-east-1d"] and "us-east-1d" in req.note
    zones = by_path["ec2:DescribeSubnets (subnetSelectorTerms, us-east-1)"]
    assert zones.value == {"us-east-1a": ["subnet-0aaa"], "us-east-1b": ["subnet-0bbb"]}
    cand = by_path["ec2:DescribeSubnets subnet-0ddd"]
    assert cand.value["zone"] == "us-east-1d" and cand.value["freeIPs"] == 4000
    assert ("aws ec2 create-tags --region us-east-1 --resources subnet-0ddd "
            "--tags Key=karpenter.sh/discovery,Value=prod-cluster") in f.remediation.commands
    assert ObjectRef("Pod", "asr-0", "serving") in f.related


def test_no_zone_with_a_subnet_is_an_error() -> None:
    snap = _aws(snapshot(CLASS, _pool("us-east-1d")))
    (f,) = run(snap, only=["nodepool-zones-without-subnets"]).results[0].findings
    assert f.severity is Severity.ERROR
    assert "none of its zones (us-east-1d) has a subnet of EC2NodeClass gpu" in f.title
    assert f.title.endswith("nothing can launch")


def test_zone_id_requirement_is_checked_against_subnet_zone_ids() -> None:
    # topology.k8s.aws/zone-id names use1-az6; the class's subnets are in use1-az1 and use1-az2.
    snap = _aws(snapshot(CLASS, _pool("use1-az6", key="topology.k8s.aws/zone-id")))
    (f,) = run(snap, only=["nodepool-zones-without-subnets"]).results[0].findings
    assert f.severity is Severity.ERROR and "zone ids use1-az6" in f.title
    assert {e.path: e for e in f.evidence}["spec.template.spec.requirements[topology.k8s.aws/zone-id]"].value == [
        "use1-az6"]


def test_without_aws_it_reads_status_subnets() -> None:
    # The AWS source is not configured: the zones come from Karpenter's status.subnets instead.
    snap = with_aws(snapshot(CLASS, _pool("us-east-1a, us-east-1d")), None, SourceState.NOT_CONFIGURED)
    (result,) = run(snap, only=["nodepool-zones-without-subnets"]).results
    (f,) = result.findings
    assert "zone us-east-1d has no subnet" in f.title
    status = {e.path: e for e in f.evidence}["status.subnets"]
    assert status.value == [{"id": "subnet-0aaa", "zone": "us-east-1a"}, {"id": "subnet-0bbb", "zone": "us-east-1b"}]


def test_passes_when_every_zone_has_a_subnet_and_skips_broken_classes() -> None:
    broken = CLASS.replace("name: gpu}", "name: gpu-broken}").replace(
        "conditions: [{type: Ready, status: \"True\", reason: Ready}]",
        "conditions: [{type: SubnetsReady, status: \"False\", reason: SubnetsNotFound}]")
    other = _pool("us-east-1d").replace("gpu-inference}", "gpu-other}").replace("name: gpu}", "name: gpu-broken}")
    # gpu-other's class matches no subnet at all: that is nodeclass-subnets-not-found's finding, not examined here.
    (result,) = run(_aws(snapshot(CLASS, broken, _pool("us-east-1a, us-east-1b"), other)),
                    only=["nodepool-zones-without-subnets"]).results
    assert result.status is CheckStatus.PASSED
    assert result.examined == 1


def test_skipped_without_ec2nodeclasses() -> None:
    (result,) = run(snapshot(_pool("us-east-1a"), sources={"ec2nodeclasses": SourceState.ABSENT}),
                    only=["nodepool-zones-without-subnets"]).results
    assert result.status is CheckStatus.SKIPPED
    assert "ec2nodeclasses: not installed" in result.reason
