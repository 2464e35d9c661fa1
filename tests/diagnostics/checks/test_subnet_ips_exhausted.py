"""subnet-ips-exhausted: free addresses per selected subnet (AWS answers as EC2 shapes), threshold, pass and skip."""

from __future__ import annotations

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.checks.subnet_ips_exhausted import ip_findings
from diagnostics.model import Finding
from diagnostics.snapshot import SourceState
from tests.aws.shapes import make_facts, subnet, with_aws
from tests.builders import snapshot

CLASS = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu}
spec:
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: prod-cluster}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: prod-cluster}}]
status:
  subnets:
  - {id: subnet-0aaa, zone: us-east-1a, zoneID: use1-az1}
  - {id: subnet-0bbb, zone: us-east-1b, zoneID: use1-az2}
  - {id: subnet-0ccc, zone: us-east-1c, zoneID: use1-az4}
  conditions: [{type: Ready, status: "True", reason: Ready}]
"""

POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu-training}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [p5.48xlarge]}
      - {key: topology.kubernetes.io/zone, operator: In, values: [ZONES]}
status:
  conditions: [{type: Ready, status: "True", reason: Ready}]
"""

ICE_EVENT = """
apiVersion: v1
kind: Event
metadata: {name: gpu-training-x7k2p.17f2, namespace: default}
involvedObject: {kind: NodeClaim, name: gpu-training-x7k2p}
reason: InsufficientCapacityError
type: Warning
source: {component: karpenter}
count: 3
lastTimestamp: "2026-08-21T09:55:00Z"
message: >-
  NodeClaim gpu-training-x7k2p event: creating instance, insufficient capacity, with fleet error(s),
  InsufficientFreeAddressesInSubnet: There are not enough free addresses in subnet 'subnet-0ccc' to satisfy
  the requested number of instances.
"""


def _snap(free_c: int, *, free_a: int = 8187, zones: str = "us-east-1a, us-east-1b, us-east-1c",
          extra: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    snap = snapshot(CLASS, POOL.replace("ZONES", zones), *extra)
    facts = make_facts(snap, subnets=[subnet("subnet-0aaa", "us-east-1a", free_a, cidr="10.0.0.0/19"),
                                      subnet("subnet-0bbb", "us-east-1b", 8187, cidr="10.0.32.0/19"),
                                      subnet("subnet-0ccc", "us-east-1c", free_c, cidr="10.0.64.0/19")])
    return with_aws(snap, facts)


def _one(snap) -> Finding:  # type: ignore[no-untyped-def]
    (result,) = run(snap, only=["subnet-ips-exhausted"]).results
    assert result.status is CheckStatus.FAILED, result
    (f,) = result.findings
    return f


def test_one_low_subnet_warns_with_the_count_from_aws() -> None:
    f = _one(_snap(free_c=11))
    assert f.code == "GT601"
    assert f.severity is Severity.WARNING  # other zones still have room: Karpenter uses them
    assert f.subject == ObjectRef("Subnet", "subnet-0ccc")
    assert f.title.startswith("Subnet subnet-0ccc (us-east-1c) has only 11 free IP addresses")
    assert "InsufficientFreeAddressesInSubnet" in f.title
    by_path = {e.path: e for e in f.evidence}
    free = by_path["ec2:DescribeSubnets subnet-0ccc AvailableIpAddressCount"]
    assert free.value == 11 and free.kind.value == "aws"
    assert "10.0.64.0/19 (8187 usable addresses)" in free.note
    listed = by_path["ec2:DescribeSubnets (ec2nodeclass/gpu subnetSelectorTerms)"]
    assert {"id": "subnet-0aaa", "zone": "us-east-1a", "freeIPs": 8187} in listed.value
    assert ObjectRef("EC2NodeClass", "gpu") in f.related and ObjectRef("NodePool", "gpu-training") in f.related
    assert any("describe-network-interfaces" in c and "subnet-0ccc" in c for c in f.remediation.commands)
    assert any("WARM_IP_TARGET=5" in c for c in f.remediation.commands)
    # Prefix delegation needs free /28 blocks: not advice for a nearly full subnet.
    assert not any("ENABLE_PREFIX_DELEGATION" in c for c in f.remediation.commands)


def test_pool_pinned_to_the_low_zone_is_an_error_with_launch_events() -> None:
    # The pool may only use us-east-1c, whose subnet is full: it gets nothing; the fleet error proves it.
    f = _one(_snap(0, zones="us-east-1c", extra=(ICE_EVENT,)))
    assert f.severity is Severity.ERROR
    assert "has no free IP addresses" in f.title and "NodePool gpu-training can only launch there" in f.title
    by_path = {e.path: e for e in f.evidence}
    assert by_path["spec.template.spec.requirements[topology.kubernetes.io/zone]"].value == ["us-east-1c"]
    ev = by_path["event Warning/InsufficientCapacityError"]
    assert ev.count == 3 and "InsufficientFreeAddressesInSubnet" in ev.value


def test_every_subnet_low_is_an_error_for_the_class() -> None:
    (result,) = run(_all_low(), only=["subnet-ips-exhausted"]).results
    assert {f.subject.name for f in result.findings} == {"subnet-0aaa", "subnet-0bbb", "subnet-0ccc"}
    assert all(f.severity is Severity.ERROR for f in result.findings)
    assert all("EC2NodeClass gpu has no other subnet with room" in f.title for f in result.findings)


def _all_low():  # type: ignore[no-untyped-def]
    snap = snapshot(CLASS, POOL.replace("ZONES", "us-east-1a"))
    facts = make_facts(snap, subnets=[subnet("subnet-0aaa", "us-east-1a", 0), subnet("subnet-0bbb", "us-east-1b", 12),
                                      subnet("subnet-0ccc", "us-east-1c", 30)])
    return with_aws(snap, facts)


def test_a_full_subnet_beside_a_roomy_one_in_its_zone_is_not_used() -> None:
    # Karpenter picks the subnet with the most free addresses per zone: an old /24 with 3 free next to
    # a new /19 in us-east-1c is skipped, not a problem (and tagging a larger subnet would never clear it).
    snap = snapshot(CLASS, POOL.replace("ZONES", "us-east-1a, us-east-1b, us-east-1c"))
    facts = make_facts(snap, subnets=[subnet("subnet-0aaa", "us-east-1a"), subnet("subnet-0bbb", "us-east-1b"),
                                      subnet("subnet-0ccc", "us-east-1c", 3, cidr="10.0.64.0/24"),
                                      subnet("subnet-0ddd", "us-east-1c", 8000, cidr="10.0.96.0/19")])
    (result,) = run(with_aws(snap, facts), only=["subnet-ips-exhausted"]).results
    assert result.status is CheckStatus.PASSED and result.examined == 4


def test_an_ipv6_only_subnet_is_not_called_empty() -> None:
    snap = snapshot(CLASS, POOL.replace("ZONES", "us-east-1a, us-east-1b, us-east-1c"))
    v6 = subnet("subnet-0ccc", "us-east-1c", 0, cidr="") | {"Ipv6Native": True}
    facts = make_facts(snap, subnets=[subnet("subnet-0aaa", "us-east-1a"), subnet("subnet-0bbb", "us-east-1b"), v6])
    (result,) = run(with_aws(snap, facts), only=["subnet-ips-exhausted"]).results
    assert result.status is CheckStatus.PASSED


def test_threshold_is_a_parameter() -> None:
    snap = _snap(free_c=11)
    assert [f for f in ip_findings(snap, min_free=8) if isinstance(f, Finding)] == []
    assert [f.subject.name for f in ip_findings(snap, min_free=12) if isinstance(f, Finding)] == ["subnet-0ccc"]


def test_passes_with_room_everywhere() -> None:
    (result,) = run(_snap(free_c=4000), only=["subnet-ips-exhausted"]).results
    assert result.status is CheckStatus.PASSED
    assert result.examined == 3  # three distinct subnets judged


def test_skipped_without_aws_and_when_describe_subnets_is_denied() -> None:
    snap = snapshot(CLASS)
    no_aws = run(with_aws(snap, None, SourceState.NOT_CONFIGURED, "no AWS credentials"),
                 only=["subnet-ips-exhausted"]).results[0]
    assert no_aws.status is CheckStatus.SKIPPED and no_aws.reason == "aws: not configured (no AWS credentials)"
    denied = run(with_aws(snap, None, SourceState.FORBIDDEN, "ec2:DescribeSubnets"),
                 only=["subnet-ips-exhausted"]).results[0]
    assert denied.status is CheckStatus.SKIPPED and denied.reason == "aws: forbidden (ec2:DescribeSubnets)"
