"""Pods parsed to the fields gputui keeps: the records are the ones a full parse gives, only cheaper."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from diagnostics.records import Condition
from gputui.kube import ingest, shapes
from gputui.dev.bench.fleet import Fleet
from gputui.sim.scenario import list_scenarios, load_scenario
from tests.sources.test_ingest_sharing import raw_pod


def all_pods() -> list[dict[str, Any]]:
    """Every pod of every shipped scenario and of the synthetic fleet's smallest scale."""
    pods = [o for s in list_scenarios() for o in load_scenario(s.path).objects.get("Pod", [])]
    pods += [o for o in Fleet("S").objects() if o.get("kind") == "Pod"]
    with_init = raw_pod("with-init")
    with_init["spec"]["initContainers"] = [{"name": "fetch", "image": "fetch:1", "env": [{"name": "B"}],
                                            "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": "2"}}}]
    with_init["status"]["initContainerStatuses"] = [
        {"name": "fetch", "ready": False, "restartCount": 3, "image": "fetch:1",
         "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s"}},
         "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}]
    crashed = raw_pod("crashed")
    crashed["status"] = {
        "phase": "Running", "startTime": "2026-08-21T09:00:05Z",
        "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady",
                        "message": "containers with unready status: [main]", "lastProbeTime": None,
                        "lastTransitionTime": "2026-08-21T09:03:00.123456+02:00"},
                       {"type": "", "status": "True"},  # no type: not a condition
                       {"type": "Heartbeat", "status": "True", "lastHeartbeatTime": "2026-08-21T09:04:00Z"}],
        "containerStatuses": [
            {"name": "main", "ready": False, "restartCount": 7, "image": "trainer:1", "started": False,
             "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "signal": 9,
                                      "startedAt": "2026-08-21T09:01:00Z", "finishedAt": "2026-08-21T09:02:00Z"}},
             "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}},
            {"name": "side", "ready": True, "restartCount": 0,
             "state": {"running": {"startedAt": "2026-08-21T09:00:06Z"}}, "lastState": {}},
            {"name": "bare"}]}
    return [*pods, with_init, crashed]


def page(items: list[dict[str, Any]]) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "PodList",
                         "metadata": {"resourceVersion": "7", "continue": "abc"}, "items": items})


@pytest.mark.slow
def test_every_pod_record_is_the_one_a_full_parse_gives() -> None:
    pods = all_pods()
    assert len(pods) > 500
    raw = page(pods)
    full = [ingest.pod(o) for o in orjson.loads(raw)["items"]]
    shaped_body = shapes.list_decoder("pods")(raw)
    assert isinstance(shaped_body["items"][-1]["status"]["conditions"][0], Condition)  # not the fallback
    shaped = [ingest.pod(o) for o in shaped_body["items"]]
    assert shaped == full  # every record field, and the slim object shown in YAML and bundles
    assert [p.obj for p in shaped] == [p.obj for p in full]
    assert shaped_body["metadata"] == {"resourceVersion": "7", "continue": "abc"}


def test_what_no_one_reads_is_not_parsed() -> None:
    body = shapes.list_decoder("pods")(page([raw_pod("a")]))
    pod = body["items"][0]
    assert "managedFields" not in pod["metadata"]
    assert "volumes" not in pod["spec"]
    assert "env" not in pod["spec"]["containers"][0]
    assert pod["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "1"}}


@pytest.mark.parametrize("odd", [
    {"spec": None},  # a null where a map was expected
    {"spec": {"containers": {"not": "a list"}}},
    {"status": "Failure"},
])
def test_a_body_that_does_not_fit_the_shape_parses_in_full(odd: dict[str, Any]) -> None:
    obj = {**raw_pod("a"), **odd}
    raw = page([obj])
    assert shapes.list_decoder("pods")(raw) == orjson.loads(raw)


@pytest.mark.parametrize("status", [
    {"conditions": [{"type": "Ready", "status": "True", "reason": None}]},  # null where a string was expected
    {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-08-21T09:00:00"}]},  # no zone
    {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "yesterday"}]},
    {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "",
                     "lastHeartbeatTime": "2026-08-21T09:00:00Z"}]},
    {"conditions": ["Ready"]},
    {"containerStatuses": [{"name": "main", "state": {"running": None}}]},
    {"containerStatuses": [{"name": "main", "restartCount": "3", "state": {"waiting": {}}}]},
    {"containerStatuses": [{"name": "main", "state": {"terminated": {"exitCode": True}}}]},
    {"initContainerStatuses": [{"name": "init", "ready": None, "state": {}}]},
])
def test_odd_statuses_give_the_record_a_full_parse_gives(status: dict[str, Any]) -> None:
    obj = raw_pod("a")
    obj["status"] = {"phase": "Running", **status}
    raw = page([obj])
    shaped = ingest.pod(shapes.list_decoder("pods")(raw)["items"][0])
    assert shaped == ingest.pod(orjson.loads(raw)["items"][0])


def test_watch_events_keep_what_the_informer_reads() -> None:
    decode = shapes.event_decoder("pods")
    gone = {"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                        "status": "Failure", "message": "too old resource version",
                                        "reason": "Expired", "code": 410}}
    assert decode(orjson.dumps(gone))["object"]["code"] == 410
    bookmark = {"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1",
                                               "metadata": {"resourceVersion": "99"}}}
    assert decode(orjson.dumps(bookmark)) == bookmark
    modified = decode(orjson.dumps({"type": "MODIFIED", "object": raw_pod("a")}))
    assert ingest.pod(modified["object"]) == ingest.pod(raw_pod("a"))
    with pytest.raises(orjson.JSONDecodeError):  # a torn line still reads as one
        decode(orjson.dumps({"type": "MODIFIED", "object": raw_pod("a")})[:-9])


def test_kinds_without_a_shape_are_parsed_whole() -> None:
    node = {"kind": "Node", "metadata": {"name": "n"}, "status": {"images": [{"names": ["x"]}], "new": 1}}
    raw = orjson.dumps({"items": [node]})
    assert shapes.list_decoder("nodes")(raw) == {"items": [node]}
