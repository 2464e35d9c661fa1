"""The AWS source against moto with the real boto3 client: selectors, GPU data, call budget, region, cache."""

from __future__ import annotations

import time
from typing import Any

import pytest

from diagnostics.facts import aws_facts as af
from diagnostics import run
from diagnostics.snapshot import SourceState
from gputui.sources.aws import AwsConfig, AwsSource, collect_aws, detect_region
from tests.aws.conftest import REGION, client
from tests.aws.shapes import with_aws
from tests.builders import snapshot

NODE = """
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-12-34.us-west-2.compute.internal
  labels: {node.kubernetes.io/instance-type: g5.xlarge, topology.kubernetes.io/zone: us-west-2a}
spec: {providerID: "aws:///us-west-2a/i-0ade88bbed7875833"}
"""

CPU_NODE = NODE.replace("g5.xlarge", "m6i.2xlarge")
"""Without GPU nodes or pools only subnets and security groups are read (moto's instance-type scan is slow)."""

CLASS = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu}
spec:
  subnetSelectorTerms:
  - tags: {karpenter.sh/discovery: prod-cluster, kubernetes.io/role/internal-elb: "*"}
  - id: SUBNET_ID
  securityGroupSelectorTerms:
  - tags: {karpenter.sh/discovery: prod-cluster}
  - name: prod-cluster-node
"""

BROKEN = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu-new}
spec:
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: prod-cluster, network-tier: private-gpu}}, {id: subnet-0deadbeef0000001}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: prod-cluster}}]
"""

POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: NAME}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: CLASS}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [FAMILIES]}
      - {key: karpenter.k8s.aws/instance-size, operator: In, values: [xlarge, 2xlarge, 12xlarge, 24xlarge]}
"""


def _tags(**kv: str) -> list[dict[str, Any]]:
    return [{"Key": k.replace("__", "/").replace("_", "."), "Value": v} for k, v in kv.items()]


def seed(ec2: Any) -> dict[str, str]:
    """A VPC with tagged, near-miss and foreign subnets, plus security groups, like a real account."""
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    other = ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]

    def sub(cidr: str, zone: str, tags: dict[str, str], in_vpc: str = vpc) -> str:
        spec = [{"ResourceType": "subnet", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
        return ec2.create_subnet(VpcId=in_vpc, CidrBlock=cidr, AvailabilityZone=zone,
                                 TagSpecifications=spec)["Subnet"]["SubnetId"]

    ids = {
        "a": sub("10.0.0.0/19", "us-west-2a", {"karpenter.sh/discovery": "prod-cluster",
                                                "kubernetes.io/role/internal-elb": "1", "network-tier": "private"}),
        "b": sub("10.0.32.0/19", "us-west-2b", {"karpenter.sh/discovery": "prod-cluster",
                                                 "kubernetes.io/role/internal-elb": "1", "network-tier": "private"}),
        # Tagged for the cluster but not an internal-elb subnet: the "*" term must not pick it.
        "public": sub("10.0.64.0/24", "us-west-2c", {"karpenter.sh/discovery": "prod-cluster"}),
        "by-id": sub("10.0.96.0/24", "us-west-2c", {"Name": "legacy"}),
        "staging": sub("10.1.0.0/24", "us-west-2a", {"karpenter.sh/discovery": "staging"}, other),
    }
    sg = ec2.create_security_group(GroupName="eks-cluster-sg-prod", Description="cluster", VpcId=vpc,
                                   TagSpecifications=[{"ResourceType": "security-group",
                                                       "Tags": [{"Key": "karpenter.sh/discovery",
                                                                 "Value": "prod-cluster"}]}])["GroupId"]
    named = ec2.create_security_group(GroupName="prod-cluster-node", Description="nodes", VpcId=vpc)["GroupId"]
    ids.update(vpc=vpc, other=other, sg=sg, named=named)
    return ids


def test_reads_selectors_with_tag_filters_ids_names_and_near_misses(ec2: Any, moto_env: str) -> None:
    ids = seed(ec2)
    snap = snapshot(NODE, CLASS.replace("SUBNET_ID", ids["by-id"]), BROKEN)
    # Credentials, endpoint come from the environment (boto3's chain); the region from the node.
    facts, status = collect_aws(snap, AwsConfig())
    assert status.state is SourceState.OK, status
    assert status.detail.startswith("region us-west-2 (from node providerIDs)")
    assert facts is not None and facts.region == REGION
    gpu, new = snap.index.nodeclass["gpu"], snap.index.nodeclass["gpu-new"]

    subnets = af.answer(facts, gpu, "subnets")
    assert subnets.known
    assert sorted(s.id for s in subnets.matched) == sorted([ids["a"], ids["b"], ids["by-id"]])
    a = facts.subnets[ids["a"]]
    assert (a.zone, a.vpc_id, a.cidr, a.available_ips) == ("us-west-2a", ids["vpc"], "10.0.0.0/19", 8187)
    groups = af.answer(facts, gpu, "securityGroups")
    assert sorted(g.id for g in groups.matched) == sorted([ids["sg"], ids["named"]])

    # The broken class: the tag key is there with another value, and the id does not exist.
    broken = af.answer(facts, new, "subnets")
    assert broken.known and broken.matched == ()
    assert broken.missing_ids == ("subnet-0deadbeef0000001",)
    near = {n.resource.id: n for n in broken.near_misses}
    assert set(near) >= {ids["a"], ids["b"], ids["staging"]}
    assert near[ids["a"]].mismatched == (("network-tier", "private-gpu", "private"),)
    assert near[ids["staging"]].mismatched[0] == ("karpenter.sh/discovery", "prod-cluster", "staging")
    # Closest first: a key present with another value beats a missing key (the "public" subnet).
    assert broken.near_misses[0].resource.id in (ids["a"], ids["b"])

    ev = {e.path: e for e in af.selector_aws_evidence(with_aws(snap, facts), new, "subnets")}
    assert ev["ec2:DescribeSubnets (selector terms, region us-west-2)"].value == []
    assert ev["ec2:DescribeSubnets subnet-id=subnet-0deadbeef0000001"].value == "not found"
    staging = next(e for e in ev.values() if ids["staging"] in e.path)
    assert f"in {ids['other']}, not the cluster's VPC {ids['vpc']}" in staging.note


def test_gpu_instance_types_and_offerings_come_from_moto_data(ec2: Any, moto_env: str) -> None:
    snap = snapshot(NODE, CLASS.replace("SUBNET_ID", "subnet-0none"),
                    POOL.replace("NAME", "gpu").replace("CLASS", "gpu").replace("FAMILIES", "g5, p4d"))
    facts, status = collect_aws(snap, AwsConfig())
    assert status.state is SourceState.OK and facts is not None
    p4d = facts.instance_types["p4d.24xlarge"]
    assert (p4d.gpus, p4d.gpu_name, p4d.gpu_manufacturer, p4d.gpu_memory_mib) == (8, "A100", "NVIDIA", 40960)
    assert af.expected_accelerators(facts, "g5.12xlarge") == ("nvidia.com/gpu", 4)
    assert af.expected_accelerators(facts, "trn1.32xlarge") == ("aws.amazon.com/neuron", 16)
    assert af.expected_accelerators(facts, "m5.large") is None
    assert {"us-west-2a", "us-west-2b", "us-west-2c"} <= facts.offerings["g5.xlarge"]
    pool = snap.index.nodepool["gpu"]
    assert [t.name for t in af.candidate_types(facts, pool)] == [
        "g5.12xlarge", "g5.24xlarge", "g5.2xlarge", "g5.xlarge", "p4d.24xlarge"]
    # Karpenter's labels for a type, as NodePool requirements see them.
    labels = facts.instance_types["g5.xlarge"].labels()
    assert labels["karpenter.k8s.aws/instance-gpu-name"] == "a10g"
    assert labels["karpenter.k8s.aws/instance-category"] == "g"
    assert labels["karpenter.k8s.aws/instance-generation"] == "5"


def test_types_ec2_sells_without_a_counted_accelerator_are_not_called_unsold(ec2: Any, moto_env: str) -> None:
    # g6f reports its fractional L4 as Count 0 (LogicalGpuCount 1); dl2q carries Qualcomm cards. Both
    # are in the region: a pool of them must not read "not sold in us-west-2" (ERROR).
    ids = seed(ec2)
    pools = [POOL.replace("NAME", fam).replace("CLASS", "gpu").replace("FAMILIES", fam) for fam in ("g6f", "dl2q")]
    snap = snapshot(NODE, CLASS.replace("SUBNET_ID", ids["by-id"]), *pools)
    facts, status = collect_aws(snap, AwsConfig())
    assert status.state is SourceState.OK and facts is not None
    assert {"g6f.large", "dl2q.24xlarge"} <= facts.unmodeled_types
    assert "g6f.large" not in facts.instance_types
    (result,) = run(with_aws(snap, facts), only=["instance-type-not-offered"]).results
    assert result.findings == (), [f.title for f in result.findings]
    # A family EC2 returned nothing for is still "not sold".
    assert facts.type_queried("p6-b300.48xlarge") and not facts.type_queried("g6f.x")


def _cluster(n_classes: int, n_pools: int) -> list[str]:
    docs = [NODE]
    for i in range(n_classes):
        docs.append(CLASS.replace("name: gpu}", f"name: gpu-{i}}}").replace("SUBNET_ID", f"subnet-0{i:016x}")
                    .replace("prod-cluster-node", f"prod-cluster-node-{i}"))
    families = ["g5", "g6", "p4d", "p5", "g6e"]
    for j in range(n_pools):
        docs.append(POOL.replace("NAME", f"pool-{j}").replace("CLASS", f"gpu-{j % n_classes}")
                    .replace("FAMILIES", families[j % len(families)]))
    return docs


def test_call_count_does_not_grow_with_nodeclasses_or_nodepools(ec2: Any, moto_url: str) -> None:
    seed(ec2)

    def calls(docs: list[str]) -> int:
        c = client(moto_url)
        seen: list[str] = []
        c.meta.events.register("before-call.ec2", lambda model, **_: seen.append(model.name))
        facts, status = collect_aws(snapshot(*docs), AwsConfig(), client=c)
        assert status.state is SourceState.OK and facts is not None
        assert facts.calls == len(seen)
        return len(seen)

    small, big = calls(_cluster(1, 1)), calls(_cluster(10, 40))
    # subnets (tag-key, id, VPC), security groups (tag-key, name), instance types, offerings, spot prices
    assert big == small == 8


def test_region_comes_from_nodes_before_the_config_chain(ec2: Any, moto_env: str,
                                                         aws_env: pytest.MonkeyPatch) -> None:
    aws_env.setenv("AWS_REGION", "us-east-1")  # the shell's default region, not the cluster's
    facts, status = collect_aws(snapshot(CPU_NODE, CLASS.replace("SUBNET_ID", "subnet-0x")), AwsConfig())
    assert facts is not None and facts.region == "us-west-2"
    facts, status = collect_aws(snapshot(CPU_NODE, CLASS.replace("SUBNET_ID", "subnet-0x")),
                                AwsConfig(region="eu-west-1"))
    assert facts is not None and facts.region == "eu-west-1" and "(from --aws-region)" in status.detail
    # Without nodes: AWS_REGION (the CLI v2 name), else boto3's chain (AWS_DEFAULT_REGION, the profile).
    facts, status = collect_aws(snapshot(CLASS.replace("SUBNET_ID", "subnet-0x")), AwsConfig())
    assert facts is not None and facts.region == "us-east-1" and "(from AWS_REGION)" in status.detail
    aws_env.delenv("AWS_REGION")
    aws_env.setenv("AWS_DEFAULT_REGION", "ap-south-1")
    facts, status = collect_aws(snapshot(CLASS.replace("SUBNET_ID", "subnet-0x")), AwsConfig())
    assert facts is not None and facts.region == "ap-south-1" and "(from AWS config)" in status.detail


def test_region_detection_rules() -> None:
    nodes = snapshot("""
apiVersion: v1
kind: Node
metadata: {name: a, labels: {topology.kubernetes.io/region: ap-southeast-2}}
---
apiVersion: v1
kind: Node
metadata: {name: b}
spec: {providerID: "aws:///us-west-2-lax-1a/i-0123"}
---
apiVersion: v1
kind: Node
metadata: {name: c}
spec: {providerID: "aws:///us-west-2-lax-1a/i-0456"}
""").nodes
    assert detect_region(nodes) == ("us-west-2", "node labels")
    assert af.region_of_zone("us-gov-west-1a") == "us-gov-west-1"
    assert af.region_of_zone("eu-central-1-wl1-ber-wlz-1") == "eu-central-1"
    assert af.region_of_zone("not-a-zone") is None


def test_cache_holds_for_the_ttl_and_refetches_on_change(ec2: Any, moto_url: str) -> None:
    seed(ec2)
    now = [1000.0]
    source = AwsSource(AwsConfig(), client=client(moto_url), clock=lambda: now[0], ttl=300)
    snap = snapshot(CPU_NODE, CLASS.replace("SUBNET_ID", "subnet-0x"))
    first, _ = source.collect(snap)
    again, _ = source.collect(snap)
    assert again is first and source.fetches == 1
    now[0] += 301
    assert source.collect(snap)[0] is not first and source.fetches == 2
    changed = snapshot(CPU_NODE, CLASS.replace("SUBNET_ID", "subnet-0y"))  # a selector was edited
    source.collect(changed)
    assert source.fetches == 3
    source.collect(changed, force=True)  # the TUI's refresh
    assert source.fetches == 4


def test_unreachable_refresh_keeps_the_last_facts_as_stale(aws_env: pytest.MonkeyPatch) -> None:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    source = AwsSource(AwsConfig(), client=client(f"http://{host}:{port}"))
    snap = snapshot(CPU_NODE, CLASS.replace("SUBNET_ID", "subnet-0x"))
    facts, status = source.collect(snap)
    assert status.state is SourceState.OK
    server.stop()
    started = time.monotonic()
    stale, status = source.collect(snap, force=True)
    assert time.monotonic() - started < 15
    assert status.state is SourceState.STALE and stale is facts
    assert "Could not connect to the endpoint URL" in status.detail


def test_poller_feeds_the_store(ec2: Any, moto_url: str) -> None:
    from gputui.sources.aws import AwsPoller
    from gputui.collect.store import Store

    seed(ec2)
    snap = snapshot(CPU_NODE, CLASS.replace("SUBNET_ID", "subnet-0x"))
    store = Store()
    poller = AwsPoller(store, AwsConfig(), interval=60,
                       source=AwsSource(AwsConfig(), client=client(moto_url)))
    poller.start()
    assert store.status()["aws"].state is SourceState.LOADING  # until the Kubernetes objects are in
    for source, records in (("nodes", snap.nodes), ("nodepools", ()), ("ec2nodeclasses", snap.ec2nodeclasses)):
        store.replace(source, records)
    deadline = time.monotonic() + 10
    while store.status()["aws"].state is SourceState.LOADING and time.monotonic() < deadline:
        time.sleep(0.05)
    poller.stop()
    assert store.status()["aws"].state is SourceState.OK
    live = store.snapshot()
    assert isinstance(live.aws, af.AwsFacts)
    assert len(af.answer(live.aws, live.index.nodeclass["gpu"], "subnets").matched) == 2
