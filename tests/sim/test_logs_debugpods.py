"""Pod logs (plain, filtered, followed) and the gputui debug pod lifecycle."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from gputui.sim import SimCluster
from gputui.sim.validate import model_error, scenario_errors
from gputui.sim import load_scenario

from .conftest import SMALL

KARPENTER = ("karpenter-7d9f8b6c5-abcde", "kube-system")
IMAGE = "nvidia/cuda:12.4.1-base-ubuntu22.04"


def _debug_pod(name: str, node: str, **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default",
                         "labels": {"app.kubernetes.io/managed-by": "gputui", "gputui.dev/debug-node": node}},
            "spec": {"nodeName": node, "restartPolicy": "Never",
                     "containers": [{"name": "smi", "image": IMAGE, "command": ["sh", "-c", "nvidia-smi"]}], **spec}}


def _phase_when_settled(sim: SimCluster, name: str, phases: tuple[str, ...] = ("Succeeded", "Failed")) -> dict:
    assert sim.wait_for(lambda: (sim.get("pods", name, "default") or {}).get("status", {}).get("phase") in phases, 5)
    return sim.get("pods", name, "default") or {}


def test_scenario_log_with_tail_and_since(core: client.CoreV1Api) -> None:
    text = core.read_namespaced_pod_log(*KARPENTER)
    assert text.splitlines()[-1].endswith('"message":"failed launching nodeclaim"}')
    assert len(text.splitlines()) == 2
    assert "failed launching" in core.read_namespaced_pod_log(*KARPENTER, tail_lines=1)
    assert "discovered" not in core.read_namespaced_pod_log(*KARPENTER, tail_lines=1)
    # times were shifted to now: the ERROR line is 30 s old, the INFO line 10 min old
    recent = core.read_namespaced_pod_log(*KARPENTER, since_seconds=120)
    assert "failed launching" in recent and "discovered" not in recent
    stamped = core.read_namespaced_pod_log(*KARPENTER, timestamps=True)
    assert stamped.splitlines()[0].split(" ", 1)[0].endswith("000Z")


def test_previous_log_of_a_restarted_container(core: client.CoreV1Api) -> None:
    assert core.read_namespaced_pod_log(*KARPENTER, previous=True).startswith("panic: runtime error")
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log("trainer-1", "ml", previous=True)
    assert err.value.status == 400
    assert json.loads(err.value.body)["message"] == 'previous terminated container "trainer" in pod "trainer-1" not found'


def test_log_errors_are_statuses(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log("ghost", "ml")
    assert err.value.status == 404 and json.loads(err.value.body)["reason"] == "NotFound"
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log(*KARPENTER, container="nope")
    assert err.value.status == 400
    assert core.read_namespaced_pod_log("trainer-1", "ml") == ""  # running, printed nothing


def test_follow_streams_new_lines_and_ends_with_the_pod(sim: SimCluster, core: client.CoreV1Api) -> None:
    def follow() -> list[str]:
        return list(watch.Watch().stream(core.read_namespaced_pod_log, *KARPENTER, follow=True))

    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(follow)
        assert sim.wait_for(lambda: sim.call(lambda: len(sim.logs._followers)) == 1, 5)
        sim.append_log("kube-system", KARPENTER[0], '{"level":"INFO","message":"new line"}\n')
        sim.patch("pods", KARPENTER[0], {"status": {"phase": "Failed"}}, namespace="kube-system")
        lines = fut.result(10)
    assert len(lines) == 3 and lines[-1] == '{"level":"INFO","message":"new line"}'


@pytest.mark.slow
def test_debug_pod_runs_to_completion_with_watch_events(sim: SimCluster, core: client.CoreV1Api) -> None:
    rv = core.list_namespaced_pod("default").metadata.resource_version
    core.create_namespaced_pod("default", _debug_pod("gputui-debug-ok", "ip-10-0-40-2.ec2.internal"))
    pod = _phase_when_settled(sim, "gputui-debug-ok")
    assert pod["status"]["phase"] == "Succeeded" and model_error(pod) is None
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    events = [(ev["type"], ev["raw_object"]["status"].get("phase")) for ev in watch.Watch().stream(
        core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=1)]
    assert events[0] == ("ADDED", "Pending")
    assert [p for _, p in events] == ["Pending", "Pending", "Running", "Succeeded"]
    log = core.read_namespaced_pod_log("gputui-debug-ok", "default")
    assert "nvidia-smi" in log and "H100" in log  # the scenario's default capture (h100)
    reasons = [e.reason for e in core.list_namespaced_event(
        "default", field_selector="involvedObject.name=gputui-debug-ok").items]
    assert reasons == ["Pulled", "Created", "Started"]


def test_debug_pod_fails_with_the_nodes_exit_code(sim: SimCluster, core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", _debug_pod("dbg-broken", "ip-10-0-12-34.ec2.internal"))
    pod = _phase_when_settled(sim, "dbg-broken")
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert pod["status"]["phase"] == "Failed" and terminated["exitCode"] == 9 and terminated["reason"] == "Error"
    assert "couldn't communicate with the NVIDIA driver" in core.read_namespaced_pod_log("dbg-broken", "default")


@pytest.mark.slow
def test_debug_pod_image_pull_backoff_then_deadline(sim: SimCluster, core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", _debug_pod("dbg-pull", "ip-10-0-99-1.ec2.internal",
                                                     activeDeadlineSeconds=1))
    assert sim.wait_for(lambda: "ImagePullBackOff" in json.dumps(sim.get("pods", "dbg-pull", "default")), 5)
    pod = core.read_namespaced_pod("dbg-pull", "default")
    waiting = pod.status.container_statuses[0].state.waiting
    assert pod.status.phase == "Pending" and waiting.reason == "ImagePullBackOff"
    assert waiting.message == f'Back-off pulling image "{IMAGE}"'
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log("dbg-pull", "default")
    assert err.value.status == 400 and "is waiting to start: trying and failing to pull image" in err.value.body
    pod_after = _phase_when_settled(sim, "dbg-pull")
    assert pod_after["status"]["phase"] == "Failed" and pod_after["status"]["reason"] == "DeadlineExceeded"


def test_debug_pod_unschedulable_and_missing_node(sim: SimCluster, core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", _debug_pod("dbg-unreach", "ip-10-0-77-7.ec2.internal"))
    core.create_namespaced_pod("default", _debug_pod("dbg-ghost", "ip-10-9-9-9.ec2.internal"))

    def scheduled(name: str) -> dict:
        conds = (sim.get("pods", name, "default") or {}).get("status", {}).get("conditions") or []
        return next((c for c in conds if c["type"] == "PodScheduled"), {})

    assert sim.wait_for(lambda: scheduled("dbg-unreach") and scheduled("dbg-ghost"), 5)
    cond = scheduled("dbg-unreach")
    assert cond["status"] == "False" and cond["reason"] == "Unschedulable"
    assert "1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }" in cond["message"]
    assert "didn't match Pod's node affinity/selector" in scheduled("dbg-ghost")["message"]
    events = core.list_namespaced_event("default", field_selector="reason=FailedScheduling").items
    assert {e.involved_object.name for e in events} == {"dbg-unreach", "dbg-ghost"}
    assert all(e.source.component == "default-scheduler" and e.type == "Warning" for e in events)
    assert sim.get("pods", "dbg-ghost", "default")["status"]["phase"] == "Pending"


@pytest.mark.slow
def test_hanging_nvidia_smi_is_killed_by_the_deadline(sim: SimCluster, core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", _debug_pod("dbg-hang", "ip-10-0-55-5.ec2.internal",
                                                     activeDeadlineSeconds=1))
    assert sim.wait_for(lambda: sim.get("pods", "dbg-hang", "default")["status"].get("phase") == "Running", 5)
    pod = _phase_when_settled(sim, "dbg-hang")
    assert pod["status"]["reason"] == "DeadlineExceeded"
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137


def test_small_scenario_objects_fit_the_official_models() -> None:
    assert scenario_errors(load_scenario(SMALL)) == []


def test_create_error_state(tmp_path: Path) -> None:
    with SimCluster(SMALL, debug_pod_delay=0) as sim:
        sim.set_nvidia_smi("ip-10-0-40-2.ec2.internal", {"state": "CreateContainerError"})
        core = client.CoreV1Api(config.new_client_from_config(str(sim.write_kubeconfig(tmp_path / "kc"))))
        core.create_namespaced_pod("default", _debug_pod("dbg-cce", "ip-10-0-40-2.ec2.internal"))
        assert sim.wait_for(lambda: "CreateContainerError" in json.dumps(sim.get("pods", "dbg-cce", "default")), 5)
        waiting = core.read_namespaced_pod("dbg-cce", "default").status.container_statuses[0].state.waiting
        assert waiting.reason == "CreateContainerError" and "not a shared or slave mount" in waiting.message
