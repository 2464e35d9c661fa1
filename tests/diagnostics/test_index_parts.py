"""The index's pod and event parts: a patch from the previous snapshot gives exactly what a full build gives."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from diagnostics.index_parts import EventsPart, PodsPart, build_events, build_pods, changes
from diagnostics.records import Event, Pod
from gputui import ingest


def _pod(i: int, rng: random.Random) -> Pod:
    phase = rng.choice(("Pending", "Running", "Running", "Succeeded"))
    md: dict[str, Any] = {"name": f"p{i}", "namespace": rng.choice(("a", "b")), "uid": f"u{i}-{rng.random()}"}
    if rng.random() < 0.1:
        md["deletionTimestamp"] = "2026-08-21T10:00:00Z"
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}
    if phase != "Pending" or rng.random() < 0.2:
        spec["nodeName"] = f"node-{rng.randrange(6)}"
    return ingest.record("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec,
                                  "status": {"phase": phase}})


def _event(i: int, rng: random.Random) -> Event:
    obj: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": f"e{i}", "namespace": "a"},
        "involvedObject": {"kind": "Pod", "name": f"p{rng.randrange(8)}", "namespace": rng.choice(("a", ""))},
        "reason": "FailedScheduling", "message": f"m{i}", "type": "Warning", "count": 1}
    if rng.random() > 0.1:  # ties keep source order; some events carry no timestamp at all
        obj["lastTimestamp"] = obj["firstTimestamp"] = f"2026-08-21T10:00:0{rng.randrange(5)}Z"
    return ingest.record("events", obj)


def _same_pods(a: PodsPart, b: PodsPart) -> None:
    assert a.by_key.keys() == b.by_key.keys() and all(a.by_key[k] is b.by_key[k] for k in a.by_key)
    assert a.by_node.keys() == b.by_node.keys()
    for k in a.by_node:
        assert [id(p) for p in a.by_node[k]] == [id(p) for p in b.by_node[k]], k
    assert [id(p) for p in a.pending] == [id(p) for p in b.pending]


def _same_events(a: EventsPart, b: EventsPart) -> None:
    assert a.by_object.keys() == b.by_object.keys() and a.untimed.keys() == b.untimed.keys()
    for k in a.by_object:
        assert [id(e) for e in a.by_object[k]] == [id(e) for e in b.by_object[k]], k
        if k in a.untimed:
            assert a.untimed[k] is a.by_object[k]


def _mutate(items: list[Any], make: Any, rng: random.Random, n: int) -> None:
    for _ in range(n):
        roll = rng.random()
        if roll < 0.5 and items:
            items[rng.randrange(len(items))] = make(rng.randrange(10_000), rng)  # replaced in place
        elif roll < 0.75 and items:
            del items[rng.randrange(len(items))]
        else:
            items.append(make(rng.randrange(10_000, 20_000), rng))


@pytest.mark.parametrize("seed", range(20))
def test_patched_parts_equal_full_builds(seed: int) -> None:
    rng = random.Random(seed)
    pods = [_pod(i, rng) for i in range(300)]
    events = [_event(i, rng) for i in range(200)]
    pod_part, event_part = build_pods(tuple(pods)), build_events(tuple(events))
    for _ in range(15):
        _mutate(pods, _pod, rng, rng.choice((1, 2, 5)))
        _mutate(events, _event, rng, rng.choice((1, 2, 5)))
        pod_part = build_pods(tuple(pods), pod_part)
        event_part = build_events(tuple(events), event_part)
        if len({p.meta.name for p in pods}) == len(pods):  # replacements may reuse a name: then the patch bows out
            _same_pods(pod_part, build_pods(tuple(pods)))
        _same_events(event_part, build_events(tuple(events)))


def test_untouched_groups_keep_their_list_objects() -> None:
    rng = random.Random(1)
    pods = [_pod(i, rng) for i in range(100)]
    part = build_pods(tuple(pods))
    target = next(p for p in pods if p.node_name)
    pods[pods.index(target)] = replace(target, phase="Failed")
    patched = build_pods(tuple(pods), part)
    for node, items in patched.by_node.items():
        assert (items is part.by_node[node]) is (node != target.node_name)


def test_changes_finds_replaced_removed_and_added_records() -> None:
    a, b, c, d = object(), object(), object(), object()
    assert changes((a, b, c), (a, d, c)) == ([b], [d])
    assert changes((a, b, c), (a, c, d)) == ([b, c], [c, d])  # a shift: c is removed and added again
    assert changes((a, b, c), (a, c)) == ([b], [])
    assert changes((a, b), (a, b, a)) is None  # the same object twice: only a full build is right
