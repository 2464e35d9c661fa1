"""AWS unusable is a status, never a hang or a crash: AWS checks skip with the reason, Kubernetes checks run.

Denied permissions and expired credentials cannot be produced by moto, so those cases use
botocore's Stubber with the error codes EC2 returns (UnauthorizedOperation, RequestExpired).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import boto3
import botocore.exceptions as bex
import pytest
from botocore.stub import Stubber

from diagnostics import CheckStatus, run
from diagnostics.snapshot import SourceState
from gputui.sources.aws import AwsConfig, collect_aws
from tests.aws.shapes import TYPES, group, subnet, with_aws
from tests.builders import snapshot

CLASS = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu}
spec:
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: prod-cluster}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: prod-cluster}}]
status:
  subnets: [{id: subnet-0aaa, zone: us-west-2a}]
  conditions:
  - {type: SubnetsReady, status: "False", reason: SubnetsNotFound, message: SubnetSelector did not match any Subnets}
"""

NODE = """
apiVersion: v1
kind: Node
metadata: {name: ip-10-0-3-142.us-west-2.compute.internal, labels: {node.kubernetes.io/instance-type: m6i.2xlarge}}
spec: {providerID: "aws:///us-west-2a/i-0ec17bbc9068102fb"}
"""

GPU_POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [p5.48xlarge]}
"""

AWS_CHECKS = ["subnet-ips-exhausted", "instance-type-not-offered"]


def _results(snap: Any, facts: Any, status: Any) -> dict[str, Any]:
    full = with_aws(snap, facts, status.state, status.detail)
    return {r.check: r for r in run(full, only=[*AWS_CHECKS, "nodeclass-subnets-not-found"]).results}


def _assert_skipped_with(results: dict[str, Any], reason: str) -> None:
    for name in AWS_CHECKS:
        assert results[name].status is CheckStatus.SKIPPED and results[name].reason == reason, results[name]
    # The Kubernetes check is unaffected: it still reports the broken selector from the cluster's data.
    assert results["nodeclass-subnets-not-found"].status is CheckStatus.FAILED


@pytest.fixture
def imds_trap(aws_env: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    """A listener standing in for the instance-metadata address: nothing may connect to it."""
    trap = socket.socket()
    trap.bind(("127.0.0.1", 0))
    trap.listen(1)
    trap.setblocking(False)
    aws_env.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", f"http://127.0.0.1:{trap.getsockname()[1]}/")
    yield trap
    trap.close()


def test_no_credentials_is_not_configured_and_never_dials_metadata(imds_trap: socket.socket) -> None:
    snap = snapshot(NODE, CLASS)
    started = time.monotonic()
    facts, status = collect_aws(snap, AwsConfig())
    assert time.monotonic() - started < 5
    assert facts is None
    assert status.state is SourceState.NOT_CONFIGURED
    assert status.detail.startswith("no AWS credentials: set AWS_PROFILE or --aws-profile")
    with pytest.raises(BlockingIOError):
        imds_trap.accept()  # AWS_EC2_METADATA_DISABLED=true: the chain never tried instance metadata
    _assert_skipped_with(_results(snap, facts, status), f"aws: not configured ({status.detail})")


def test_unknown_profile_is_not_configured(aws_env: pytest.MonkeyPatch) -> None:
    facts, status = collect_aws(snapshot(NODE, CLASS), AwsConfig(profile="prod-readonly"))
    assert facts is None and status.state is SourceState.NOT_CONFIGURED
    assert status.detail == "AWS profile 'prod-readonly' not found in ~/.aws/config"


def _stubbed() -> tuple[Any, Stubber]:
    ec2 = boto3.client("ec2", region_name="us-west-2", aws_access_key_id="AKIDEXAMPLE",
                       aws_secret_access_key="secret")
    return ec2, Stubber(ec2)


def test_access_denied_names_the_missing_permission() -> None:
    ec2, stub = _stubbed()
    stub.add_client_error(
        "describe_subnets", "UnauthorizedOperation", http_status_code=403,
        service_message="You are not authorized to perform this operation. User: "
                        "arn:aws:sts::123456789012:assumed-role/oncall/jane is not authorized to perform: "
                        "ec2:DescribeSubnets because no identity-based policy allows the ec2:DescribeSubnets action")
    stub.add_response("describe_security_groups", {"SecurityGroups": [
        group("sg-0a1", "eks-cluster-sg-prod", tags={"karpenter.sh/discovery": "prod-cluster"})]})
    snap = snapshot(NODE, CLASS)
    with stub:
        facts, status = collect_aws(snap, AwsConfig(), client=ec2, workers=1)
    stub.assert_no_pending_responses()
    assert facts is None
    assert (status.state, status.detail) == (SourceState.FORBIDDEN, "ec2:DescribeSubnets")
    _assert_skipped_with(_results(snap, facts, status), "aws: forbidden (ec2:DescribeSubnets)")


def test_denied_offerings_skip_only_the_check_that_needs_them() -> None:
    ec2, stub = _stubbed()
    stub.add_response("describe_subnets", {"Subnets": [subnet("subnet-0aaa", "us-west-2a", 12)]})
    stub.add_response("describe_security_groups", {"SecurityGroups": [
        group("sg-0a1", "eks-cluster-sg-prod", tags={"karpenter.sh/discovery": "prod-cluster"})]})
    stub.add_response("describe_instance_types", {"InstanceTypes": TYPES})
    stub.add_response("describe_subnets", {"Subnets": [subnet("subnet-0aaa", "us-west-2a", 12)]})  # the VPC's
    stub.add_client_error("describe_instance_type_offerings", "UnauthorizedOperation", http_status_code=403)
    stub.add_client_error("describe_spot_price_history", "UnauthorizedOperation", http_status_code=403)
    snap = snapshot(NODE, CLASS, GPU_POOL)
    with stub:
        facts, status = collect_aws(snap, AwsConfig(), client=ec2, workers=1)
    stub.assert_no_pending_responses()
    assert status.state is SourceState.OK and facts is not None
    assert "offerings: forbidden (ec2:DescribeInstanceTypeOfferings)" in status.detail
    assert "spot prices: forbidden (ec2:DescribeSpotPriceHistory)" in status.detail
    results = _results(snap, facts, status)
    assert results["subnet-ips-exhausted"].status is CheckStatus.FAILED  # 12 free addresses: it still judges
    assert results["instance-type-not-offered"].status is CheckStatus.SKIPPED
    assert results["instance-type-not-offered"].reason == "aws: forbidden (ec2:DescribeInstanceTypeOfferings)"


def test_a_read_timeout_on_one_call_loses_only_that_part() -> None:
    # EC2 took the connection but not this call in time (a slow DescribeSpotPriceHistory): the parts
    # already read (subnets, security groups) must stay; an endpoint that cannot be reached stops all.
    from gputui.sources.aws import classify

    slow = classify(bex.ReadTimeoutError(endpoint_url="https://ec2.us-west-2.amazonaws.com/"),
                    "DescribeSpotPriceHistory")
    assert slow.fatal is False and slow.state is SourceState.UNREACHABLE
    assert slow.detail.startswith("ec2:DescribeSpotPriceHistory: no answer in time")
    down = classify(bex.EndpointConnectionError(endpoint_url="https://ec2.us-west-2.amazonaws.com/"),
                    "DescribeSubnets")
    assert down.fatal is True


def test_expired_credentials_stop_at_the_first_call() -> None:
    ec2, stub = _stubbed()
    stub.add_client_error("describe_subnets", "RequestExpired", "Request has expired.", http_status_code=400)
    snap = snapshot(NODE, CLASS)
    with stub:  # no response queued for the security groups: the source must not even try
        facts, status = collect_aws(snap, AwsConfig(profile="prod"), client=ec2, workers=1)
    stub.assert_no_pending_responses()
    assert facts is None and status.state is SourceState.FORBIDDEN
    assert status.detail == "AWS credentials expired (RequestExpired): refresh them, e.g. aws sso login --profile prod"
    _assert_skipped_with(_results(snap, facts, status), f"aws: forbidden ({status.detail})")


def test_endpoint_down_is_unreachable_within_seconds(aws_env: pytest.MonkeyPatch) -> None:
    aws_env.setenv("AWS_ACCESS_KEY_ID", "testing")
    aws_env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    snap = snapshot(NODE, CLASS)
    started = time.monotonic()
    facts, status = collect_aws(snap, AwsConfig(endpoint_url=f"http://127.0.0.1:{port}"))
    assert time.monotonic() - started < 15  # 3 attempts with standard backoff, then it gives up
    assert facts is None and status.state is SourceState.UNREACHABLE
    assert f'Could not connect to the endpoint URL: "http://127.0.0.1:{port}/"' in status.detail
    _assert_skipped_with(_results(snap, facts, status), f"aws: unreachable ({status.detail})")




def test_a_throttled_call_keeps_its_check_from_looking() -> None:
    """EC2 throttling one call (RequestLimitExceeded) is no fact about the cluster: the check it skips is kept
    from looking (the engine's flag, not a word in the reason), so the verdict is no all-clear."""
    from diagnostics.verdict import kept_from_looking

    ec2, stub = _stubbed()
    stub.add_response("describe_subnets", {"Subnets": [subnet("subnet-0aaa", "us-west-2a", 12)]})
    stub.add_response("describe_security_groups", {"SecurityGroups": [
        group("sg-0a1", "eks-cluster-sg-prod", tags={"karpenter.sh/discovery": "prod-cluster"})]})
    stub.add_response("describe_instance_types", {"InstanceTypes": TYPES})
    stub.add_response("describe_subnets", {"Subnets": [subnet("subnet-0aaa", "us-west-2a", 12)]})
    stub.add_client_error("describe_instance_type_offerings", "RequestLimitExceeded", "Request limit exceeded.",
                          http_status_code=503)
    stub.add_response("describe_spot_price_history", {"SpotPriceHistory": []})
    snap = snapshot(NODE, CLASS, GPU_POOL)
    with stub:
        facts, status = collect_aws(snap, AwsConfig(), client=ec2, workers=1)
    result = _results(snap, facts, status)["instance-type-not-offered"]
    assert result.status is CheckStatus.SKIPPED and "RequestLimitExceeded" in result.reason
    assert kept_from_looking(result)
