"""What GT101/GT102 add from AWS: AWS's own answer, missing ids/names, near misses, the VPC's tags."""

from __future__ import annotations

from diagnostics.facts import aws_facts as af
from diagnostics import run
from tests.aws.shapes import group, make_facts, subnet, with_aws
from tests.builders import snapshot

BROKEN = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu}
spec:
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: prod-cluster}}]
  securityGroupSelectorTerms: [{name: prod-cluster-node}, {tags: {karpenter.sh/discovery: prod-cluster}}]
status:
  conditions:
  - {type: SubnetsReady, status: "False", reason: SubnetsNotFound, message: SubnetSelector did not match any Subnets}
  - {type: SecurityGroupsReady, status: "False", reason: SecurityGroupsNotFound,
     message: SecurityGroupSelector did not match any SecurityGroups}
"""


def test_selector_matching_now_points_at_karpenter_not_the_tags() -> None:
    # The tags were fixed after Karpenter's last reconcile (or its role cannot list subnets).
    snap = snapshot(BROKEN)
    facts = make_facts(snap, subnets=[subnet("subnet-0aaa", "us-east-1a", 300), subnet("subnet-0bbb", "us-east-1b")])
    ev = af.selector_aws_evidence(with_aws(snap, facts), snap.index.nodeclass["gpu"], "subnets")
    (now,) = ev
    assert now.path == "ec2:DescribeSubnets (selector terms, region us-east-1)"
    assert now.value[0] == {"id": "subnet-0aaa", "zone": "us-east-1a", "vpc": "vpc-0a1b2c3d", "freeIPs": 300}
    assert now.note.startswith("AWS returns 2 subnet(s) for this selector now: Karpenter picks them up")


def test_misspelt_key_lists_the_cluster_vpc_subnets_and_their_tags() -> None:
    # No subnet has karpenter.sh/discovery at all; the security group locates the cluster's VPC.
    snap = snapshot(BROKEN)
    facts = make_facts(snap, subnets=[subnet("subnet-0aaa", "us-east-1a",
                                             tags={"karpenter.sh/discvery": "prod-cluster", "Name": "private-1a"})],
                       groups=[group("sg-0a1", "prod-cluster-node")])
    ev = {e.path: e for e in af.selector_aws_evidence(with_aws(snap, facts), snap.index.nodeclass["gpu"], "subnets")}
    listing = ev["ec2:DescribeSubnets vpc-id=vpc-0a1b2c3d"]
    assert listing.value == {"subnet-0aaa": {"Name": "private-1a", "karpenter.sh/discvery": "prod-cluster"}}
    assert "no subnet carries any of the selector's tag keys (karpenter.sh/discovery)" in listing.note


def test_security_group_name_not_found_and_gt102_carries_it() -> None:
    snap = snapshot(BROKEN)
    facts = make_facts(snap, subnets=[subnet("subnet-0aaa", "us-east-1a")],
                       groups=[group("sg-0old", "prod-node-old", tags={"karpenter.sh/discovery": "prod"})])
    full = with_aws(snap, facts)
    (result,) = run(full, only=["nodeclass-security-groups-not-found"]).results
    (f,) = result.findings
    ev = {e.path: e for e in f.evidence}
    assert ev["ec2:DescribeSecurityGroups group-name=prod-cluster-node"].value == "not found"
    near = ev["ec2:DescribeSecurityGroups sg-0old tags"]
    assert near.value == {"sg-0old": {"name": "prod-node-old", "vpc": "vpc-0a1b2c3d", "karpenter.sh/discovery": "prod"}}
    assert near.note.startswith("near miss, 1 security group(s): has karpenter.sh/discovery=prod, "
                                "selector wants karpenter.sh/discovery=prod-cluster")


def test_nothing_added_when_the_read_did_not_cover_the_selector() -> None:
    # The facts were read for other tag keys (e.g. before the selector changed): no conclusion.
    snap = snapshot(BROKEN)
    facts = make_facts(snapshot(BROKEN.replace("karpenter.sh/discovery", "team")), subnets=[])
    assert af.selector_aws_evidence(with_aws(snap, facts), snap.index.nodeclass["gpu"], "subnets") == []
