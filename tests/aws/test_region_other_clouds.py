"""A GKE cluster's region is not an AWS region: neither the AWS source nor the demo's moto use it."""

from __future__ import annotations

from gputui.sim.scenario import load_scenario
from gputui.sources.aws import detect_region
from gputui.sim.aws import on_aws
from tests.builders import snapshot

GKE_NODE = """
apiVersion: v1
kind: Node
metadata:
  name: gke-ml-prod-l4-pool-8c2f1e7a-x7k2
  labels: {topology.kubernetes.io/region: us-central1, cloud.google.com/gke-nodepool: l4-pool}
spec: {providerID: gce://ml-prod-4711/us-central1-a/gke-ml-prod-l4-pool-8c2f1e7a-x7k2}
"""
EKS_NODE = """
apiVersion: v1
kind: Node
metadata: {name: ip-10-0-12-34.ec2.internal, labels: {topology.kubernetes.io/region: us-east-1}}
spec: {providerID: aws:///us-east-1b/i-0abc123def4567890}
"""


def test_gke_nodes_give_no_aws_region() -> None:
    assert detect_region(snapshot(GKE_NODE).nodes) == (None, "")
    assert detect_region(snapshot(GKE_NODE, EKS_NODE).nodes) == ("us-east-1", "node labels")


def test_the_demo_simulates_ec2_only_for_aws_scenarios() -> None:
    assert not on_aws(load_scenario("gke-plugin-crash"))
    assert on_aws(load_scenario("gpu-not-advertised"))


def test_a_gke_gpu_node_asks_for_no_aws_credentials() -> None:
    # gke-plugin-crash printed "aws not configured (no AWS credentials: set AWS_PROFILE ...)": GKE's g2-standard-8
    # read as EC2's g2 family, so the AWS source wanted to describe it.
    from gputui.sources.aws import plan_reads

    gke_gpu = GKE_NODE.replace("labels: {", "labels: {node.kubernetes.io/instance-type: g2-standard-8, ")
    assert plan_reads(snapshot(gke_gpu).nodes, [], []).empty
    eks_gpu = EKS_NODE.replace("labels: {", "labels: {node.kubernetes.io/instance-type: g5.2xlarge, ")
    assert not plan_reads(snapshot(eks_gpu).nodes, [], []).empty
