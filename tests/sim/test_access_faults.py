"""RBAC denials, uninstalled CRDs and injected HTTP faults, as the official client sees them."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from gputui.sim import SimCluster

from .conftest import DATA, SMALL


def test_forbidden_list_get_and_watch_read_like_rbac(sim: SimCluster, custom: client.CustomObjectsApi) -> None:
    sim.forbid("nodeclaims.karpenter.sh")
    with pytest.raises(ApiException) as err:
        custom.list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")
    body = json.loads(err.value.body)
    assert err.value.status == 403 and body["reason"] == "Forbidden"
    assert body["message"] == ('nodeclaims.karpenter.sh is forbidden: User "system:serviceaccount:default:gputui" '
                               'cannot list resource "nodeclaims" in API group "karpenter.sh" at the cluster scope')
    assert body["details"] == {"group": "karpenter.sh", "kind": "nodeclaims"}
    with pytest.raises(ApiException) as err:
        custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "gpu-x7k2p")
    assert json.loads(err.value.body)["message"].startswith('nodeclaims.karpenter.sh "gpu-x7k2p" is forbidden: User')
    with pytest.raises(ApiException) as err:
        list(watch.Watch().stream(custom.list_cluster_custom_object, "karpenter.sh", "v1", "nodeclaims",
                                  timeout_seconds=1))
    assert err.value.status == 403
    assert custom.list_cluster_custom_object("karpenter.sh", "v1", "nodepools")["items"]  # others unaffected
    sim.allow("nodeclaims.karpenter.sh")
    assert custom.list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")["items"]


def test_forbidden_namespaced_message_and_access_review(sim: SimCluster, api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    sim.forbid("pods")
    with pytest.raises(ApiException) as err:
        core.list_namespaced_pod("ml")
    assert json.loads(err.value.body)["message"] == (
        'pods is forbidden: User "system:serviceaccount:default:gputui" cannot list resource "pods" in API group "" '
        'in the namespace "ml"')
    authz = client.AuthorizationV1Api(api)
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "ml"}}}
    assert authz.create_self_subject_access_review(review).status.allowed is False
    review["spec"]["resourceAttributes"] = {"verb": "list", "resource": "nodes"}
    assert authz.create_self_subject_access_review(review).status.allowed is True


def test_scenario_forbidden_and_absent(tmp_path: Path) -> None:
    text = SMALL.read_text().replace("  forbidden: []", '  forbidden: ["nodeclaims.karpenter.sh"]').replace(
        "  absent: []", '  absent: ["ec2nodeclasses.karpenter.k8s.aws"]')
    path = tmp_path / "restricted.yaml"
    path.write_text(text)
    with SimCluster(path) as sim:
        custom = client.CustomObjectsApi(config.new_client_from_config(str(sim.write_kubeconfig(tmp_path / "kc"))))
        with pytest.raises(ApiException) as err:
            custom.list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")
        assert err.value.status == 403
        with pytest.raises(ApiException) as err:
            custom.list_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses")
        assert err.value.status == 404
        assert json.loads(err.value.body)["message"] == "the server could not find the requested resource"
        groups = json.loads(urllib.request.urlopen(f"{sim.url}/apis").read())["groups"]
        assert "karpenter.k8s.aws" not in [g["name"] for g in groups] and "karpenter.sh" in [g["name"] for g in groups]
        with pytest.raises(urllib.error.HTTPError) as http_err:
            urllib.request.urlopen(f"{sim.url}/apis/karpenter.k8s.aws/v1")
        assert http_err.value.code == 404
        sim.set_absent("ec2nodeclasses.karpenter.k8s.aws", False)  # installed again
        assert custom.list_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses")["items"]


def test_injected_500_then_recovery(sim: SimCluster, core: client.CoreV1Api) -> None:
    sim.fail_requests(2, 500, path_contains="/nodes")
    for _ in range(2):
        with pytest.raises(ApiException) as err:
            core.list_node()
        body = json.loads(err.value.body)
        assert err.value.status == 500 and body["reason"] == "InternalError"
    assert core.list_namespaced_pod("ml").items  # other paths were never affected
    assert core.list_node().items


@pytest.mark.slow
def test_throttling_sends_retry_after(sim: SimCluster, core: client.CoreV1Api) -> None:
    sim.throttle(1, retry_after=1)
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"{sim.url}/api/v1/nodes")
    assert err.value.code == 429 and err.value.headers["Retry-After"] == "1"
    assert json.loads(err.value.read())["details"]["retryAfterSeconds"] == 1
    sim.throttle(1, retry_after=1)
    start = time.monotonic()
    assert core.list_node().items  # urllib3 under the official client honours Retry-After on GETs
    assert time.monotonic() - start >= 0.9 and sim.faults.hits[429] == 2


def test_latency_and_unauthorized(sim: SimCluster, core: client.CoreV1Api) -> None:
    sim.set_latency(0.3, path_contains="/api/v1/nodes")
    start = time.monotonic()
    core.list_node()
    assert time.monotonic() - start >= 0.3
    sim.set_latency(0)
    sim.fail_requests(1, 401)
    with pytest.raises(ApiException) as err:
        core.list_node()
    assert err.value.status == 401 and json.loads(err.value.body)["message"] == "Unauthorized"


def test_token_is_checked_when_configured(tmp_path: Path) -> None:
    with SimCluster(DATA / "small.yaml", token="s3cret") as sim:
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"{sim.url}/api/v1/nodes")
        assert err.value.code == 401
        core = client.CoreV1Api(config.new_client_from_config(str(sim.write_kubeconfig(tmp_path / "kc"))))
        assert core.list_node().items
