"""Records as the cache keeps them: what objects of a kind repeat is shared, a pod's slim object is rebuilt
on read, and nothing anyone reads changes (nor the raw object ingest was given)."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any

import orjson

from diagnostics.records import Pod
from gputui.kube import ingest


def raw_pod(name: str, **labels: str) -> dict[str, Any]:
    return {
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {
            "name": name, "generateName": "train-", "namespace": "ml", "uid": f"uid-{name}",
            "resourceVersion": "42", "creationTimestamp": "2026-08-21T09:00:00Z",
            "labels": labels or {"app": "train", "pod-template-hash": "5d8f"},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "team": "ml"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "train-5d8f", "uid": "rs"}],
            "managedFields": [{"manager": "kubectl"}],
        },
        "spec": {
            "volumes": [{"name": "data"}],
            "containers": [{"name": "main", "image": "trainer:1", "env": [{"name": "A", "value": "1"}],
                            "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
            "schedulerName": "default-scheduler",
            "nodeSelector": {"karpenter.sh/nodepool": "gpu"},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
            "priority": 0,
        },
        "status": {
            "phase": "Pending", "qosClass": "BestEffort",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        },
    }


SLIM = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {
        "name": "p1", "generateName": "train-", "namespace": "ml", "uid": "uid-p1", "resourceVersion": "42",
        "creationTimestamp": "2026-08-21T09:00:00Z", "labels": {"app": "train", "pod-template-hash": "5d8f"},
        "annotations": {"team": "ml"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "train-5d8f", "uid": "rs"}],
    },
    "spec": {
        "nodeSelector": {"karpenter.sh/nodepool": "gpu"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "schedulerName": "default-scheduler", "priority": 0,
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
        "containers": [{"name": "main", "image": "trainer:1", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
    },
    "status": {"phase": "Pending", "qosClass": "BestEffort"},
}


def test_obj_is_the_slim_object_with_its_key_order() -> None:
    p = ingest.pod(raw_pod("p1"))
    # Byte-equal JSON: same keys, values and order (YAML views and bundles print them in this order).
    assert orjson.dumps(p.obj) == orjson.dumps(SLIM)
    assert type(p.obj) is dict and p.obj is not p.obj  # a fresh dict per read: readers may keep or change it
    assert p.meta.labels is p.obj["metadata"]["labels"]


def test_a_packed_pod_behaves_as_a_pod() -> None:
    p = ingest.pod(raw_pod("p1"))
    assert isinstance(p, Pod)
    assert p == ingest.pod(raw_pod("p1")) and p != ingest.pod(raw_pod("p2"))
    for other in (pickle.loads(pickle.dumps(p)), copy.copy(p), dataclasses.replace(p)):
        assert other == p and other.obj == SLIM
    moved = dataclasses.replace(p, phase="Running")
    assert moved.phase == "Running" and moved.obj == SLIM


def test_pods_of_one_workload_share_labels_node_selector_and_owners() -> None:
    a, b = ingest.pod(raw_pod("p1")), ingest.pod(raw_pod("p2"))
    assert a.meta.labels is b.meta.labels and a.node_selector is b.node_selector
    assert a.meta.owners is b.meta.owners
    c = ingest.pod(raw_pod("p3", **{"pod-template-hash": "5d8f", "app": "train"}))  # same items, other order
    assert c.meta.labels == a.meta.labels and c.meta.labels is not a.meta.labels
    assert list(c.obj["metadata"]["labels"]) == ["pod-template-hash", "app"]


def test_labels_that_are_not_all_strings_are_read_as_before() -> None:
    raw = raw_pod("p1")
    raw["metadata"]["labels"] = {"n": 1, "s": "x"}
    p = ingest.pod(raw)
    assert p.meta.labels == {"n": "1", "s": "x"}
    assert p.obj["metadata"]["labels"] == {"n": 1, "s": "x"}


def raw_node(name: str) -> dict[str, Any]:
    zone = "".join(("us-east-", "1a"))  # a string of its own, as each parsed object has
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "managedFields": [{"manager": "kubelet"}],
                     "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone,
                                "node.kubernetes.io/instance-type": "p5.48xlarge", "count": 8}},
        "spec": {"providerID": f"aws:///{zone}/i-{name}"},
        "status": {"capacity": {"cpu": "192", "nvidia.com/gpu": "8"},
                   "allocatable": {"cpu": "191", "nvidia.com/gpu": "8"},
                   "conditions": [{"type": "Ready", "status": "True"}], "images": [{"names": ["x"]}],
                   "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                   "nodeInfo": {"bootID": f"boot-{name}", "kubeletVersion": "v1.31.4"}},
    }


def raw_claim(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "gpu", "instance-type": "p5.48xlarge"}},
        "spec": {"nodeClassRef": {"kind": "EC2NodeClass", "name": "default"},
                 "requirements": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gpu"]}],
                 "resources": {"requests": {"nvidia.com/gpu": "8"}}, "expireAfter": "720h"},
        "status": {"nodeName": f"node-{name}", "capacity": {"nvidia.com/gpu": "8"},
                   "allocatable": {"nvidia.com/gpu": "8"}, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def test_nodes_share_what_nodes_of_a_type_repeat_and_keep_their_object() -> None:
    raws = [raw_node("a"), raw_node("b")]
    before = copy.deepcopy(raws)
    a, b = (ingest.node(r) for r in raws)
    assert raws == before  # the caller's objects are left alone
    want = copy.deepcopy(raws[0])
    del want["metadata"]["managedFields"], want["status"]["images"], want["status"]["conditions"]
    assert orjson.dumps(a.obj) == orjson.dumps(want)
    assert a.allocatable is b.allocatable and a.capacity is b.capacity
    assert a.obj["status"]["capacity"] is b.obj["status"]["capacity"]
    zone = "topology.kubernetes.io/zone"
    assert raws[0]["metadata"]["labels"][zone] is not raws[1]["metadata"]["labels"][zone]
    assert a.meta.labels[zone] is b.meta.labels[zone] is b.obj["metadata"]["labels"][zone]
    assert a.obj["metadata"]["labels"]["count"] == 8 and a.meta.labels["count"] == "8"  # as before


def test_nodeclaims_of_one_pool_share_labels_spec_and_capacity() -> None:
    raws = [raw_claim("x"), raw_claim("y")]
    before = copy.deepcopy(raws)
    x, y = (ingest.nodeclaim(r) for r in raws)
    assert raws == before
    assert orjson.dumps(x.obj) == orjson.dumps(raws[0])
    assert x.meta.labels is y.meta.labels and x.requests is y.requests and x.capacity is y.capacity
    assert x.obj["spec"]["requirements"] is y.obj["spec"]["requirements"]
    assert x.node_name == "node-x" and y.node_name == "node-y"


def test_events_with_the_same_labels_share_them() -> None:
    def ev(name: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "namespace": "ml", "labels": {"source": "karpenter"}},
                "involvedObject": {"kind": "Pod", "name": "p", "namespace": "ml"}, "reason": "Nominated"}

    a, b = ingest.event(ev("e1")), ingest.event(ev("e2"))
    assert a.meta.labels == {"source": "karpenter"} and a.meta.labels is b.meta.labels
