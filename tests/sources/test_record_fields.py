"""Record fields checks read instead of a record's raw `obj` (issue #23), as ingest fills them from API objects."""

from __future__ import annotations

import json

import yaml

from gputui.kube import ingest, shapes

POD = """
apiVersion: v1
kind: Pod
metadata: {name: train-0, namespace: ml}
spec:
  schedulingGates: [{name: kueue.x-k8s.io/admission}]
  tolerations:
  - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
  - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 300}
  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 10
        preference: {matchExpressions: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]}
      - weight: 50
        preference: {matchExpressions: [{key: karpenter.sh/nodepool, operator: DoesNotExist}]}
  resourceClaims:
  - {name: gpu, resourceClaimTemplateName: one-gpu}
  - {name: shared, resourceClaimName: shared-a100}
  initContainers:
  - name: fetch
    resources: {requests: {cpu: 500m}}
  containers:
  - name: trainer
    resources: {requests: {nvidia.com/gpu: "0.5"}, limits: {nvidia.com/gpu: "1"}}
status:
  phase: Pending
  podIP: 10.0.3.7
  resourceClaimStatuses: [{name: gpu, resourceClaimName: train-0-gpu-x7k2p}]
"""


def _pod_fields(raw: dict) -> tuple:
    p = ingest.pod(raw)
    return (p.resources_written, p.preferred_affinity, p.scheduling_gates, p.tolerations_written, p.claims, p.pod_ip)


def test_pod_fields_as_written() -> None:
    p = ingest.pod(yaml.safe_load(POD))
    assert [(c.section, c.name, dict(c.requests), dict(c.limits)) for c in p.resources_written] == [
        ("initContainers", "fetch", {"cpu": "500m"}, {}),
        ("containers", "trainer", {"nvidia.com/gpu": "0.5"}, {"nvidia.com/gpu": "1"})]
    assert [str(r) for r in p.preferred_affinity] == ["karpenter.sh/nodepool DoesNotExist"]  # the heaviest term
    assert p.scheduling_gates == ("kueue.x-k8s.io/admission",)
    assert [t.get("tolerationSeconds") for t in p.tolerations_written] == [None, 300]
    assert [(c.entry, c.claim, c.template) for c in p.claims] == [
        ("gpu", "train-0-gpu-x7k2p", "one-gpu"), ("shared", "shared-a100", "")]
    assert p.pod_ip == "10.0.3.7"


def test_pod_fields_same_through_the_shaped_decoder() -> None:
    """The list decoder (msgspec shapes) hands ingest the same parts as a full parse."""
    raw = yaml.safe_load(POD)
    body = json.dumps({"metadata": {}, "items": [raw]}).encode()
    shaped = shapes.list_decoder("pods")(body)["items"][0]
    assert _pod_fields(shaped) == _pod_fields(raw)


def test_bound_pod_keeps_no_preference() -> None:
    """Node affinity is kept only while a pod is unscheduled (ingest.pod): so is its heaviest preference."""
    raw = yaml.safe_load(POD)
    raw["spec"]["nodeName"] = "ip-10-0-3-7"
    assert ingest.pod(raw).preferred_affinity == ()


NODEPOOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu-train}
spec:
  limits: {cpu: 1000, nvidia.com/gpu: "64"}
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 1h}
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      terminationGracePeriod: 48h
      requirements:
      - {key: karpenter.k8s.aws/instance-gpu-count, operator: Gte, values: ["4"]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
"""


def test_nodepool_spec_as_written() -> None:
    pool = ingest.nodepool(yaml.safe_load(NODEPOOL))
    assert dict(pool.limits_spec) == {"cpu": 1000, "nvidia.com/gpu": "64"}  # quoted back as the user wrote them
    assert pool.disruption_spec["consolidateAfter"] == "1h"
    assert pool.template_spec["requirements"][0]["operator"] == "Gte"  # the parsed one reads Gt 3
    assert str(pool.requirements[0]) == "karpenter.k8s.aws/instance-gpu-count Gt [3]"
    assert pool.requirement_index("karpenter.sh/capacity-type") == 1
    assert pool.requirement_index("topology.kubernetes.io/zone") is None
    assert pool.termination_grace_period == "48h"
    assert pool.replicas is None
    assert ingest.nodepool({**yaml.safe_load(NODEPOOL), "spec": {"replicas": 2}}).replicas == 2


def test_nodeclaim_node_nodeclass_pdb_fields() -> None:
    claim = ingest.nodeclaim({"metadata": {"name": "gpu-x"}, "spec": {"expireAfter": "Never"},
                              "status": {"imageID": "ami-0abc"}})
    assert (claim.image_id, claim.expire_after, claim.termination_grace_period) == ("ami-0abc", "Never", "")
    node = ingest.node({"metadata": {"name": "n1"}, "status": {
        "nodeInfo": {"osImage": "Bottlerocket OS 1.47.0 (aws-k8s-1.34-nvidia)"},
        "addresses": [{"type": "InternalIP", "address": "10.0.1.5"}, {"type": "Hostname", "address": "n1"},
                      {"type": "ExternalIP"}],
        "runtimeHandlers": [{"name": "nvidia"}, {"name": ""}]}})
    assert node.os_image == "Bottlerocket OS 1.47.0 (aws-k8s-1.34-nvidia)"
    assert node.addresses == (("InternalIP", "10.0.1.5"), ("Hostname", "n1"))
    assert node.runtime_handlers == ("nvidia", "")
    assert ingest.node({"metadata": {"name": "n2"}}).runtime_handlers is None  # before Kubernetes 1.30
    nc = ingest.nodeclass({"metadata": {"name": "gpu"}, "spec": {
        "instanceProfile": "KarpenterNode", "tags": {"team": "ml"}, "placementGroupSelector": {"name": "pg"},
        "capacityReservationSelectorTerms": [{"id": "cr-1"}]}})
    assert (nc.spec_instance_profile, dict(nc.tags), dict(nc.placement_group_selector)) == (
        "KarpenterNode", {"team": "ml"}, {"name": "pg"})
    assert [dict(t) for t in nc.capacity_reservation_terms] == [{"id": "cr-1"}]
    pdb = ingest.pdb({"metadata": {"name": "p", "namespace": "ml"},
                      "spec": {"minAvailable": "100%", "selector": {}, "unhealthyPodEvictionPolicy": "AlwaysAllow"},
                      "status": {"disruptionsAllowed": 0, "expectedPods": 2, "currentHealthy": 2}})
    assert pdb.has_selector and pdb.unhealthy_pod_eviction_policy == "AlwaysAllow"
    assert (dict(pdb.budget), list(pdb.health)) == ({"minAvailable": "100%"}, ["currentHealthy", "expectedPods"])
    assert not ingest.pdb({"metadata": {"name": "q"}, "spec": {}}).has_selector
