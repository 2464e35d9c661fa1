"""Spot prices and spot alternatives, read through the real source with botocore's Stubber.

moto's DescribeSpotPriceHistory answers a constant 0.00001 dated 2006, so these responses are
shaped after the EC2 API reference instead (SpotPriceHistory items with AvailabilityZone,
InstanceType, ProductDescription, SpotPrice as a string, Timestamp).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import boto3
from botocore.stub import ANY, Stubber

from diagnostics.facts import aws_facts as af
from diagnostics.snapshot import SourceState
from gputui.sources.aws import SPOT_PRODUCTS, AwsConfig, collect_aws
from tests.aws.shapes import TYPES, group, offerings, spot, subnet, with_aws
from tests.builders import NOW, snapshot

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: ip-10-0-3-142.ec2.internal, labels: {node.kubernetes.io/instance-type: m6i.2xlarge}}
spec: {providerID: "aws:///us-east-1a/i-0ec17bbc9068102fb"}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu}
spec:
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: prod-cluster}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: prod-cluster}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu-training-spot}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [p4d.24xlarge]}
      - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a, us-east-1b]}
"""

SUBNETS = [subnet("subnet-0aaa", "us-east-1a"), subnet("subnet-0bbb", "us-east-1b"),
           subnet("subnet-0ccc", "us-east-1c")]
OFFERED = {"p5.48xlarge": ["us-east-1a", "us-east-1b", "us-east-1c"], "p4d.24xlarge": ["us-east-1a", "us-east-1b",
           "us-east-1c"], "p5e.48xlarge": ["us-east-1f"], "g5.xlarge": ["us-east-1a"]}
PRICES = [
    spot("p5.48xlarge", "us-east-1a", "12.500000", NOW - timedelta(hours=2)),
    spot("p5.48xlarge", "us-east-1a", "14.200000", NOW - timedelta(minutes=5)),  # the current one
    spot("p5.48xlarge", "us-east-1c", "9.800000"),
    spot("p4d.24xlarge", "us-east-1a", "7.300000"),
    spot("p4d.24xlarge", "us-east-1b", "6.900000"),
    spot("p4d.24xlarge", "us-east-1c", "8.100000"),
    spot("p5e.48xlarge", "us-east-1f", "18.000000"),
    spot("g5.xlarge", "us-east-1a", "0.450000"),
]


def _collect() -> tuple[Any, Any]:
    ec2 = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="x")
    stub = Stubber(ec2)
    sg = group("sg-0a1", "eks-cluster-sg-prod", tags={"karpenter.sh/discovery": "prod-cluster"})
    stub.add_response("describe_subnets", {"Subnets": SUBNETS},
                      {"Filters": [{"Name": "tag-key", "Values": ["karpenter.sh/discovery"]}]})
    stub.add_response("describe_security_groups", {"SecurityGroups": [sg]},
                      {"Filters": [{"Name": "tag-key", "Values": ["karpenter.sh/discovery"]}]})
    stub.add_response("describe_instance_types", {"InstanceTypes": TYPES},
                      {"Filters": [{"Name": "instance-type", "Values": list(af.ACCELERATED_PATTERNS)}]})
    stub.add_response("describe_subnets", {"Subnets": SUBNETS},
                      {"Filters": [{"Name": "vpc-id", "Values": ["vpc-0a1b2c3d"]}]})
    names = sorted(t["InstanceType"] for t in TYPES)
    stub.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": offerings(OFFERED)},
                      {"LocationType": "availability-zone", "Filters": [{"Name": "instance-type", "Values": names}]})
    stub.add_response("describe_spot_price_history", {"SpotPriceHistory": PRICES},
                      {"InstanceTypes": names, "ProductDescriptions": list(SPOT_PRODUCTS), "StartTime": ANY})
    snap = snapshot(CLUSTER)
    with stub:
        facts, status = collect_aws(snap, AwsConfig(), client=ec2, workers=1)
    stub.assert_no_pending_responses()
    assert status.state is SourceState.OK, status
    return with_aws(snap, facts), facts


def test_latest_spot_price_per_type_and_zone() -> None:
    _snap, facts = _collect()
    assert facts.calls == 6
    assert facts.spot_price("p5.48xlarge", "us-east-1a") == 14.2
    assert facts.spot_price("p5.48xlarge", "us-east-1c") == 9.8
    assert facts.spot_price("p5.48xlarge", "us-east-1f") is None


def test_alternatives_same_type_elsewhere_then_cheapest_per_gpu() -> None:
    _snap, facts = _collect()
    opts = af.spot_alternatives(facts, ["p4d.24xlarge"], ["us-east-1a", "us-east-1b"],
                                launchable_zones=["us-east-1a", "us-east-1b", "us-east-1c"])
    assert [(o.instance_type, o.zone, o.price, o.same_type) for o in opts] == [
        ("p4d.24xlarge", "us-east-1c", 8.1, True),    # same type, a zone that did not fail
        ("p5.48xlarge", "us-east-1c", 9.8, False),    # 8 GPUs with at least 40 GiB each, cheapest per GPU first
        ("p5.48xlarge", "us-east-1a", 14.2, False),
        ("p5.48xlarge", "us-east-1b", None, False),   # offered, but no price read: last
    ]
    assert opts[1].price_per_accelerator == 9.8 / 8
    # p5e (8x H200) is only sold in us-east-1f, where the class has no subnet; g5 has too few, too small GPUs.
    # An H100 workload does not fit on A100 40 GiB GPUs: p4d is no alternative to p5.
    assert [o.instance_type for o in af.spot_alternatives(facts, ["p5.48xlarge"], ["us-east-1a"])] == [
        "p5.48xlarge", "p5.48xlarge", "p5e.48xlarge"]


def test_advice_evidence_for_the_spot_shortage_check() -> None:
    snap, _facts = _collect()
    pool = snap.index.nodepool["gpu-training-spot"]
    (ev,) = af.spot_advice_evidence(snap, ["p4d.24xlarge"], ["us-east-1a", "us-east-1b"], pool=pool, limit=3)
    assert ev.kind.value == "aws" and ev.subject == pool.ref
    assert ev.value == ["p4d.24xlarge in us-east-1c (8x A100 40 GiB, $8.10/h spot)",
                        "p5.48xlarge in us-east-1c (8x H100 80 GiB, $9.80/h spot)",
                        "p5.48xlarge in us-east-1a (8x H100 80 GiB, $14.20/h spot)"]
    assert ev.note == ("offered in us-east-1 besides p4d.24xlarge in us-east-1a, us-east-1b; "
                       "latest Linux/UNIX spot prices")
    assert af.spot_advice_evidence(with_aws(snap, None, SourceState.NOT_CONFIGURED), ["p4d.24xlarge"]) == []


def test_facts_survive_a_bundle_round_trip() -> None:
    # Bundles store the facts as JSON; replaying them must give the same facts (and so the same findings).
    import json

    _snap, facts = _collect()
    again = af.AwsFacts.from_json(json.loads(json.dumps(facts.to_json())))
    assert again == facts
