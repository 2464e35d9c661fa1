"""spot-capacity-shortage: scenario C (ICE churn), quota and subnet-IP variants, fallback severity, pass and skip."""

from __future__ import annotations

import pytest

import yaml

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.snapshot import SourceState
from tests.builders import snapshot

POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu-spot}
spec:
  weight: 50
  limits: {nvidia.com/gpu: "64"}
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [p4d.24xlarge, p5.48xlarge]}
      taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
status:
  conditions:
  - {type: Ready, status: "True", reason: Ready}
  - type: NodeRegistrationHealthy
    status: "False"
    reason: LaunchFailed
    message: Instance launch failed
    lastTransitionTime: "2026-08-21T09:40:00Z"
"""

CLASS = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu}
spec: {subnetSelectorTerms: [{tags: {karpenter.sh/discovery: prod-cluster}}]}
status:
  subnets: [{id: subnet-0a1, zone: us-east-1a}, {id: subnet-0b2, zone: us-east-1b}]
  conditions: [{type: Ready, status: "True", reason: Ready}]
"""

# The claim that failed last is still visible (deletion in progress); the earlier one is gone.
CLAIM = """
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: gpu-spot-r4t7w
  creationTimestamp: "2026-08-21T09:59:07Z"
  deletionTimestamp: "2026-08-21T09:59:10Z"
  labels: {karpenter.sh/nodepool: gpu-spot}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
  requirements:
  - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
  - {key: node.kubernetes.io/instance-type, operator: In, values: [p4d.24xlarge, p5.48xlarge]}
  - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a, us-east-1b]}
  resources: {requests: {nvidia.com/gpu: "8"}}
status:
  conditions:
  - {type: Launched, status: Unknown, reason: AwaitingReconciliation, message: object is awaiting reconciliation}
"""


def _ice(claim: str, text: str, at: str, count: int = 1) -> str:
    return f"""
apiVersion: v1
kind: Event
metadata: {{name: {claim}.18a1, namespace: default}}
involvedObject: {{apiVersion: karpenter.sh/v1, kind: NodeClaim, name: {claim}}}
reason: InsufficientCapacityError
type: Warning
source: {{component: karpenter}}
count: {count}
firstTimestamp: "{at}"
lastTimestamp: "{at}"
message: "NodeClaim {claim} event: creating instance, insufficient capacity, {text}"
"""


ICE_EVENTS = "---".join([
    _ice("gpu-spot-q8m2n", "with fleet error(s), InsufficientInstanceCapacity: There is no Spot capacity available "
                           "that matches your request.", "2026-08-21T09:58:04Z"),
    _ice("gpu-spot-r4t7w", "all requested instance types were unavailable during launch", "2026-08-21T09:59:10Z"),
    # Two hours old: outside the 30-minute window, must not be counted.
    _ice("gpu-spot-old01", "with fleet error(s), InsufficientInstanceCapacity: There is no Spot capacity available "
                           "that matches your request.", "2026-08-21T08:00:00Z", count=5),
])

POD = """
apiVersion: v1
kind: Pod
metadata: {name: llm-train-0, namespace: research}
spec:
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  containers: [{name: main, image: nvcr.io/nvidia/pytorch:25.01-py3, resources: {limits: {nvidia.com/gpu: "8"}}}]
status:
  phase: Pending
  conditions: [{type: PodScheduled, status: "False", reason: Unschedulable}]
---
apiVersion: v1
kind: Event
metadata: {name: llm-train-0.1, namespace: research}
involvedObject: {kind: Pod, name: llm-train-0, namespace: research}
reason: Nominated
type: Normal
source: {component: karpenter}
lastTimestamp: "2026-08-21T09:58:01Z"
message: "Pod should schedule on: nodeclaim/gpu-spot-q8m2n"
---
apiVersion: v1
kind: Event
metadata: {name: llm-train-0.2, namespace: research}
involvedObject: {kind: Pod, name: llm-train-0, namespace: research}
reason: Nominated
type: Normal
source: {component: karpenter}
lastTimestamp: "2026-08-21T09:59:07Z"
message: "Pod should schedule on: nodeclaim/gpu-spot-r4t7w"
---
apiVersion: v1
kind: Event
metadata: {name: llm-train-0.3, namespace: research}
involvedObject: {kind: Pod, name: llm-train-0, namespace: research}
reason: FailedScheduling
type: Warning
source: {component: karpenter}
count: 3
lastTimestamp: "2026-08-21T09:59:40Z"
message: >-
  Failed to schedule pod, no instance type has the required offering, requirements=karpenter.sh/capacity-type In
  [spot], karpenter.sh/nodepool In [gpu-spot], node.kubernetes.io/instance-type In [p4d.24xlarge p5.48xlarge],
  resources={"cpu":"1","nvidia.com/gpu":"8","pods":"1"}
"""


def test_spot_only_pool_without_fallback_is_critical() -> None:
    (result,) = run(snapshot(POOL, CLASS, CLAIM, ICE_EVENTS, POD), only=["spot-capacity-shortage"]).results
    assert result.status is CheckStatus.FAILED
    (f,) = result.findings
    assert f.code == "GT104"
    assert f.severity is Severity.CRITICAL
    assert f.subject == ObjectRef("NodePool", "gpu-spot")
    assert f.title.startswith("NodePool gpu-spot: no EC2 capacity for its instance types "
                              "(InsufficientInstanceCapacity, UnavailableOfferings), 2 NodeClaim(s) failed in 30m, "
                              "spot p4d.24xlarge, p5.48xlarge")
    ice = next(e for e in f.evidence if e.path == "event Warning/InsufficientCapacityError")
    assert ice.count == 2  # the 5 events from 08:00 are outside the window
    assert "all requested instance types were unavailable during launch" in ice.value
    by_path = {e.path: e for e in f.evidence}
    assert by_path["event Normal/Nominated"].note == (
        "nominated to 2 different NodeClaims: gpu-spot-q8m2n, gpu-spot-r4t7w")
    assert by_path["event Warning/FailedScheduling"].subject == ObjectRef("Pod", "llm-train-0", "research")
    assert by_path["zones"].value == ["us-east-1a", "us-east-1b"]
    assert by_path["capacity types"].value == ["spot"]
    assert by_path["status.conditions[NodeRegistrationHealthy]"].value["status"] == "False"
    assert "on-demand NodePool that could serve these pods" in by_path
    assert ObjectRef("Pod", "llm-train-0", "research") in f.related
    # The fallback NodePool is an apply-able copy of the pool with on-demand and a lower weight.
    heredoc = next(c for c in f.remediation.commands if c.startswith("kubectl apply -f - <<'EOF'"))
    doc = yaml.safe_load(heredoc.split("\n", 1)[1].rsplit("\nEOF", 1)[0])
    assert doc["metadata"]["name"] == "gpu-spot-on-demand"
    assert doc["spec"]["weight"] == 10
    reqs = doc["spec"]["template"]["spec"]["requirements"]
    assert {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]} in reqs
    assert doc["spec"]["template"]["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "true",
                                                          "effect": "NoSchedule"}]
    assert doc["spec"]["limits"] == {"nvidia.com/gpu": "64"}


def test_the_fallback_pool_keeps_the_pools_disruption_and_node_lifetime() -> None:
    # Without them the copy gets Karpenter's defaults: consolidating at once, which can evict training pods.
    pool = POOL.replace("  weight: 50\n", "  weight: 50\n  disruption: {consolidationPolicy: WhenEmpty, "
                                            "consolidateAfter: 30m, budgets: [{nodes: '1'}]}\n").replace(
        "      taints: [", "      expireAfter: 720h\n      taints: [")
    assert pool.count("WhenEmpty") == 1 and "720h" in pool
    (f,) = run(snapshot(pool, CLASS, CLAIM, ICE_EVENTS, POD), only=["spot-capacity-shortage"]).results[0].findings
    heredoc = next(c for c in f.remediation.commands if c.startswith("kubectl apply -f - <<'EOF'"))
    doc = yaml.safe_load(heredoc.split("\n", 1)[1].rsplit("\nEOF", 1)[0])
    assert doc["spec"]["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30m",
                                         "budgets": [{"nodes": "1"}]}
    assert doc["spec"]["template"]["spec"]["expireAfter"] == "720h"


def test_on_demand_fallback_keeps_it_an_error() -> None:
    fallback = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu-on-demand}
spec:
  weight: 10
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [p4d, p5]}
      taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
status:
  conditions: [{type: Ready, status: "True", reason: Ready}]
"""
    (result,) = run(snapshot(POOL, fallback, CLASS, CLAIM, ICE_EVENTS, POD), only=["spot-capacity-shortage"]).results
    (f,) = result.findings
    assert f.severity is Severity.ERROR
    assert {e.path: e for e in f.evidence}["on-demand fallback"].value == ["gpu-on-demand"]
    assert not any(c.startswith("kubectl apply") for c in f.remediation.commands)


def test_spot_quota_is_named_with_the_service_quota() -> None:
    quota = _ice("gpu-spot-zz9k1", "with fleet error(s), MaxSpotInstanceCountExceeded: Max spot instance count "
                                   "exceeded", "2026-08-21T09:55:00Z", count=4)
    (result,) = run(snapshot(POOL, CLASS, quota), only=["spot-capacity-shortage"]).results
    (f,) = result.findings
    assert "an EC2 quota is exhausted (MaxSpotInstanceCountExceeded)" in f.title
    # p4d/p5 on spot: the "All P Spot Instance Requests" quota.
    assert any("--quota-code L-7212CCBC" in c and c.startswith("aws service-quotas get-service-quota")
               for c in f.remediation.commands)
    assert not any("L-3819A6DF" in c for c in f.remediation.commands)


def _on_demand_pool(name: str, family: str, instance_type: str) -> tuple[str, str]:
    """A NodePool of one instance family and an on-demand NodeClaim of it that failed a second after creation."""
    pool = f"""
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: {name}}}
spec:
  template:
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}}
      requirements: [{{key: karpenter.k8s.aws/instance-family, operator: In, values: [{family}]}}]
"""
    claim = f"""
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: {name}-8fj2k
  creationTimestamp: "2026-08-21T09:50:00Z"
  deletionTimestamp: "2026-08-21T09:50:02Z"
  labels: {{karpenter.sh/nodepool: {name}}}
spec:
  requirements:
  - {{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}}
  - {{key: node.kubernetes.io/instance-type, operator: In, values: [{instance_type}]}}
"""
    return pool, claim


VCPU_LIMIT = ("with fleet error(s), VcpuLimitExceeded: You have requested more vCPU capacity than your current vCPU "
              "limit of 64 allows for the instance bucket that the specified instance type belongs to. Please visit "
              "http://aws.amazon.com/contact-us/ec2-request to request an adjustment to this limit.")


@pytest.mark.parametrize("name, family, instance_type, code, not_codes", [
    ("inference", "g5, g6", "g5.12xlarge", "L-DB2E81BA", ()),  # Running On-Demand G and VT instances
    # Inferentia has its own bucket: not the G/VT or P codes.
    ("neuron", "inf2", "inf2.24xlarge", "L-1945791B", ("L-DB2E81BA", "L-417A185B")),
])
def test_vcpu_quota_names_the_instance_bucket(name: str, family: str, instance_type: str, code: str,
                                               not_codes: tuple[str, ...]) -> None:
    pool, claim = _on_demand_pool(name, family, instance_type)
    ev = _ice(f"{name}-8fj2k", VCPU_LIMIT, "2026-08-21T09:50:02Z")
    (result,) = run(snapshot(pool, CLASS, claim, ev), only=["spot-capacity-shortage"]).results
    (f,) = result.findings
    assert f.severity is Severity.ERROR  # the pool allows on-demand (the default)
    assert "(VcpuLimitExceeded)" in f.title and f"on-demand {instance_type}" in f.title
    assert any(f"--quota-code {code}" in c for c in f.remediation.commands)
    assert not any(other in c for c in f.remediation.commands for other in not_codes)


def test_subnet_out_of_ips() -> None:
    ev = _ice("gpu-spot-ip001", "with fleet error(s), InsufficientFreeAddressesInSubnet: There are not enough free "
                                "addresses in subnet 'subnet-0a1' to satisfy the requested number of instances.",
              "2026-08-21T09:45:00Z")
    (result,) = run(snapshot(POOL, CLASS, ev), only=["spot-capacity-shortage"]).results
    (f,) = result.findings
    assert "its subnets ran out of free IP addresses (InsufficientFreeAddressesInSubnet)" in f.title
    # --region from the NodeClass's subnets: the user's CLI default region may be another.
    assert any(c.startswith("aws ec2 describe-subnets --region us-east-1 --subnet-ids subnet-0a1 subnet-0b2") for c in
               f.remediation.commands)


def test_type_not_sold_in_the_zone_is_not_called_a_shortage() -> None:
    ev = _ice("gpu-spot-un001", "with fleet error(s), Unsupported: Your requested instance type (p5.48xlarge) is not "
                                "supported in your requested Availability Zone (us-east-1e). Please retry your "
                                "request by not specifying an Availability Zone or choosing us-east-1a, us-east-1b.",
              "2026-08-21T09:55:00Z", count=3)
    (result,) = run(snapshot(POOL, CLASS, ev), only=["spot-capacity-shortage"]).results
    (f,) = result.findings
    assert "EC2 does not offer an instance type it tried in that zone (Unsupported)" in f.title
    assert "no EC2 capacity" not in f.title
    assert any(c.startswith("aws ec2 describe-instance-type-offerings --region us-east-1 --location-type "
                            "availability-zone")
               for c in f.remediation.commands)
    assert "waiting does not help" in f.remediation.text and "on-demand fallback" not in f.remediation.text


def test_churn_without_events_is_enough() -> None:
    # Events expired or unreadable detail: two claims deleted within seconds of creation still show churn.
    second = CLAIM.replace("gpu-spot-r4t7w", "gpu-spot-k2p9d").replace("09:59:07Z", "09:57:00Z").replace(
        "09:59:10Z", "09:57:03Z")
    (result,) = run(snapshot(POOL, CLASS, CLAIM, second), only=["spot-capacity-shortage"]).results
    (f,) = result.findings
    churn = {e.path: e for e in f.evidence}["NodeClaims deleted within 60s of creation"]
    assert churn.value == 2
    assert "lifetimes 3s, 3s" in churn.note


def test_pre_v1_5_offering_message_names_the_pool() -> None:
    # Before v1.5 each per-NodePool error carried an 'incompatible with nodepool "<name>"' prefix.
    event = """
apiVersion: v1
kind: Event
metadata: {name: llm-train-0.9, namespace: research}
involvedObject: {kind: Pod, name: llm-train-0, namespace: research}
reason: FailedScheduling
type: Warning
source: {component: karpenter}
lastTimestamp: "2026-08-21T09:59:40Z"
message: >-
  Failed to schedule pod, incompatible with nodepool "gpu-spot", daemonset overhead={"cpu":"350m","pods":"4"},
  no instance type has the required offering, requirements=karpenter.sh/capacity-type In [spot],
  resources={"cpu":"1","nvidia.com/gpu":"8","pods":"1"}
"""
    pod = POD.split("---")[0]
    (result,) = run(snapshot(POOL, CLASS, pod, event), only=["spot-capacity-shortage"]).results
    (f,) = result.findings
    assert f.subject == ObjectRef("NodePool", "gpu-spot")
    assert f.severity is Severity.CRITICAL
    assert f.related == (ObjectRef("Pod", "llm-train-0", "research"),)


def test_passes_when_only_old_events_and_skips_without_events() -> None:
    old = _ice("gpu-spot-old01", "with fleet error(s), InsufficientInstanceCapacity: There is no Spot capacity "
                                 "available that matches your request.", "2026-08-21T08:00:00Z", count=5)
    (result,) = run(snapshot(POOL, CLASS, old), only=["spot-capacity-shortage"]).results
    assert result.status is CheckStatus.PASSED
    assert result.examined == 1
    (result,) = run(snapshot(POOL, sources={"events": SourceState.FORBIDDEN}),
                    only=["spot-capacity-shortage"]).results
    assert result.status is CheckStatus.SKIPPED
    assert "events: forbidden" in result.reason
