"""LIST / GET / CREATE / DELETE / PATCH through the official client, over HTTP."""

from __future__ import annotations

import json

import orjson
import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from gputui.sim import SimCluster


def _names(items: list) -> list[str]:
    return [i.metadata.name for i in items]


def _pod(name: str, ns: str = "ml", **labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}


def test_list_cluster_wide_and_per_namespace(core: client.CoreV1Api) -> None:
    assert _names(core.list_node().items) == sorted(_names(core.list_node().items))
    assert "ip-10-0-12-34.ec2.internal" in _names(core.list_node().items)
    all_pods = core.list_pod_for_all_namespaces()
    assert [(p.metadata.namespace, p.metadata.name) for p in all_pods.items] == [
        ("kube-system", "karpenter-7d9f8b6c5-abcde"), ("ml", "trainer-0"), ("ml", "trainer-1")]
    assert _names(core.list_namespaced_pod("ml").items) == ["trainer-0", "trainer-1"]
    assert core.list_namespaced_pod("nope").items == []
    assert int(all_pods.metadata.resource_version) > 0


def test_raw_list_matches_apiserver_shape(core: client.CoreV1Api, custom: client.CustomObjectsApi) -> None:
    raw = orjson.loads(core.list_node(_preload_content=False).data)
    assert raw["kind"] == "NodeList" and raw["apiVersion"] == "v1"
    assert "kind" not in raw["items"][0]  # core lists omit per-item kind, like the real apiserver
    assert raw["items"][0]["metadata"]["uid"] and raw["items"][0]["metadata"]["resourceVersion"]
    ncs = custom.list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")
    assert ncs["kind"] == "NodeClaimList" and ncs["items"][0]["kind"] == "NodeClaim"  # CRD items keep it


def test_paging_visits_every_object_once(sim: SimCluster, core: client.CoreV1Api) -> None:
    sim.bulk_load([_pod(f"w-{i:03d}", "batch") for i in range(23)])
    seen, token, pages = [], None, 0
    while True:
        page = core.list_namespaced_pod("batch", limit=5, _continue=token)
        seen += _names(page.items)
        pages += 1
        if pages == 1:
            assert page.metadata.remaining_item_count == 18
        token = page.metadata._continue
        if not token:
            break
    assert pages == 5 and seen == [f"w-{i:03d}" for i in range(23)]
    # the token is a position in key order: objects created later show up only if they sort after it
    first = core.list_pod_for_all_namespaces(limit=2)
    sim.apply(_pod("aaa", "batch"))
    sim.apply(_pod("zzz", "batch"))
    rest = core.list_pod_for_all_namespaces(_continue=first.metadata._continue)
    names = _names(first.items) + _names(rest.items)
    assert "zzz" in names and "aaa" not in names and len(names) == len(set(names))
    assert rest.metadata.resource_version == first.metadata.resource_version  # pages share the first RV


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=trainer", ["trainer-0", "trainer-1"]),
        ("team==research", ["trainer-0"]),
        ("team!=research", ["karpenter-7d9f8b6c5-abcde", "trainer-1"]),
        ("team in (infra, ops)", ["trainer-1"]),
        ("team notin (infra)", ["karpenter-7d9f8b6c5-abcde", "trainer-0"]),
        ("team", ["trainer-0", "trainer-1"]),
        ("!team", ["karpenter-7d9f8b6c5-abcde"]),
        ("app=trainer,team=infra", ["trainer-1"]),
    ],
)
def test_label_selectors(core: client.CoreV1Api, selector: str, expected: list[str]) -> None:
    assert _names(core.list_pod_for_all_namespaces(label_selector=selector).items) == expected


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("spec.nodeName=ip-10-0-12-34.ec2.internal", ["trainer-1"]),
        ("spec.nodeName=", ["trainer-0"]),
        ("status.phase=Running,metadata.namespace=ml", ["trainer-1"]),
        ("status.phase!=Running", ["trainer-0"]),
        ("metadata.name==karpenter-7d9f8b6c5-abcde", ["karpenter-7d9f8b6c5-abcde"]),
    ],
)
def test_field_selectors(core: client.CoreV1Api, selector: str, expected: list[str]) -> None:
    assert _names(core.list_pod_for_all_namespaces(field_selector=selector).items) == expected


def test_event_field_selectors(core: client.CoreV1Api) -> None:
    evs = core.list_event_for_all_namespaces(field_selector="involvedObject.kind=Pod,involvedObject.name=trainer-0")
    assert [e.reason for e in evs.items] == ["FailedScheduling"]
    assert core.list_namespaced_event("ml", field_selector="involvedObject.name!=trainer-0").items == []


def test_bad_selectors_answer_400(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as err:
        core.list_pod_for_all_namespaces(field_selector="spec.bogus=1")
    assert err.value.status == 400 and "field label not supported: spec.bogus" in err.value.body
    with pytest.raises(ApiException) as err:
        core.list_node(label_selector="a in (b")
    assert err.value.status == 400


def test_get_and_not_found_status(core: client.CoreV1Api) -> None:
    pod = core.read_namespaced_pod("trainer-1", "ml")
    assert pod.spec.node_name == "ip-10-0-12-34.ec2.internal" and pod.kind == "Pod"
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod("ghost", "ml")
    body = json.loads(err.value.body)
    assert err.value.status == 404
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": 'pods "ghost" not found', "reason": "NotFound",
                    "details": {"name": "ghost", "kind": "pods"}, "code": 404}


def test_create_assigns_server_fields_and_rejects_duplicates(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_pod("ml", _pod("new-pod", app="x"))
    assert created.metadata.uid and created.metadata.resource_version and created.metadata.creation_timestamp
    assert created.status.phase == "Pending" and created.status.qos_class == "BestEffort"
    assert created.spec.restart_policy == "Always"  # apiserver defaulting
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod("ml", _pod("new-pod"))
    assert err.value.status == 409 and json.loads(err.value.body)["reason"] == "AlreadyExists"
    generated = core.create_namespaced_pod("ml", {**_pod(""), "metadata": {"generateName": "dbg-"}})
    assert generated.metadata.name.startswith("dbg-") and len(generated.metadata.name) == 9
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod("no-such-ns", _pod("x", "no-such-ns"))
    assert err.value.status == 404 and json.loads(err.value.body)["message"] == 'namespaces "no-such-ns" not found'


def test_delete_returns_the_object_and_removes_it(core: client.CoreV1Api) -> None:
    raw = core.delete_namespaced_pod("trainer-0", "ml", _preload_content=False)
    assert raw.status == 200 and orjson.loads(raw.data)["metadata"]["name"] == "trainer-0"
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod("trainer-0", "ml")
    assert err.value.status == 404
    with pytest.raises(ApiException) as err:
        core.delete_namespaced_pod("trainer-0", "ml")
    assert err.value.status == 404


def test_patch_and_replace(core: client.CoreV1Api, custom: client.CustomObjectsApi) -> None:
    node = core.patch_node("ip-10-0-40-2.ec2.internal", {"spec": {"unschedulable": True},
                                                          "metadata": {"labels": {"x": "1"}}})
    assert node.spec.unschedulable and node.metadata.labels["x"] == "1"
    # status is a subresource: a main-resource patch leaves it alone, /status changes it
    core.patch_node("ip-10-0-40-2.ec2.internal", {"status": {"capacity": {"cpu": "99"}}})
    assert core.read_node("ip-10-0-40-2.ec2.internal").status.capacity["cpu"] == "4"
    core.patch_node_status("ip-10-0-40-2.ec2.internal", {"status": {"capacity": {"cpu": "99"}}})
    assert core.read_node("ip-10-0-40-2.ec2.internal").status.capacity["cpu"] == "99"
    nc = custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "gpu-x7k2p")
    nc["metadata"]["labels"]["extra"] = "yes"
    replaced = custom.replace_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "gpu-x7k2p", nc)
    assert replaced["metadata"]["labels"]["extra"] == "yes"
    with pytest.raises(ApiException) as err:  # stale resourceVersion
        custom.replace_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "gpu-x7k2p", nc)
    assert err.value.status == 409 and json.loads(err.value.body)["reason"] == "Conflict"


def test_mutators_are_visible_to_clients(sim: SimCluster, core: client.CoreV1Api) -> None:
    sim.patch("Node", "ip-10-0-99-1.ec2.internal", {"metadata": {"labels": {"gpu": "broken"}}})
    assert _names(core.list_node(label_selector="gpu=broken").items) == ["ip-10-0-99-1.ec2.internal"]
    sim.delete("nodes", "ip-10-0-99-1.ec2.internal")
    assert sim.get("Node", "ip-10-0-99-1.ec2.internal") is None
    assert len(sim.objects("pods")) == 3


def test_discovery_documents(api: client.ApiClient) -> None:
    versions = client.CoreApi(api).get_api_versions()
    assert versions.versions == ["v1"]
    groups = {g.name: g for g in client.ApisApi(api).get_api_versions().groups}
    assert groups["karpenter.sh"].preferred_version.group_version == "karpenter.sh/v1"
    resources = client.CoreV1Api(api).get_api_resources()
    pods = next(r for r in resources.resources if r.name == "pods")
    assert pods.namespaced and "watch" in pods.verbs and "po" in pods.short_names
    assert "pods/log" in [r.name for r in resources.resources]
    assert client.VersionApi(api).get_code().git_version.startswith("v1.31")


def test_aggregated_discovery_request_gets_the_plain_format(sim: SimCluster) -> None:
    """kubectl first asks for apidiscovery.k8s.io/v2; a plain answer makes it fall back to legacy discovery."""
    import urllib.request

    accept = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
              "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json")
    for path, kind in (("/api", "APIVersions"), ("/apis", "APIGroupList")):
        resp = urllib.request.urlopen(urllib.request.Request(sim.url + path, headers={"Accept": accept}))
        assert resp.headers["Content-Type"] == "application/json"
        assert json.loads(resp.read())["kind"] == kind
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(sim.url + "/openapi/v2")
    assert err.value.code == 404
