"""The index's pod and event parts: a patch from the previous snapshot gives exactly what a full build gives."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from diagnostics.index_parts import EventsPart, PodsPart, build_events, build_pods, changes
from diagnostics.records import Event, Pod
from gputui.kube import ingest


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


# --- a live cache's churn: records replaced in their slots --------------------------------------------------

def _touch(p: Pod, rng: random.Random) -> Pod:
    """The same pod, changed the way a watch burst changes it (phase, annotations): a new record, same name."""
    choice = rng.random()
    if choice < 0.4:
        return replace(p, phase=rng.choice(("Running", "Succeeded", "Failed")) if p.node_name else p.phase)
    if choice < 0.6 and not p.node_name:
        return replace(p, node_name=f"node-{rng.randrange(6)}", phase="Running")  # bound: moves groups
    return replace(p, meta=replace(p.meta, annotations={"seq": str(rng.random())}))


def _pending_pod(i: int) -> Pod:
    return ingest.record("pods", {"apiVersion": "v1", "kind": "Pod",
                                  "metadata": {"name": f"w{i}", "namespace": "a", "uid": f"w{i}"},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]},
                                  "status": {"phase": "Pending"}})


@pytest.mark.parametrize("seed", range(10))
def test_slot_by_slot_patches_equal_full_builds(seed: int) -> None:
    # Replacements in place (what the live cache does): same-key ones are put where the old record was,
    # the rest (a pod bound to a node) move groups. Over 64 pending pods exercises the indexed path.
    rng = random.Random(seed)
    pods = [_pod(i, rng) for i in range(300)] + [_pending_pod(i) for i in range(100)]
    rng.shuffle(pods)
    part = build_pods(tuple(pods))
    for _ in range(20):
        for _ in range(rng.choice((1, 3, 8))):
            i = rng.randrange(len(pods))
            pods[i] = _touch(pods[i], rng)
        before = part
        part = build_pods(tuple(pods), part)
        full = build_pods(tuple(pods))
        if not full.unique:
            continue
        _same_pods(part, full)
        changed = {k for k in before.by_node.keys() | part.by_node.keys()
                   if before.by_node.get(k) is not part.by_node.get(k)}
        assert set(part.nodes_changed_since(before.by_node)) == changed
        assert part.nodes_changed_since(part.by_node) == ()


def test_nodes_changed_since_an_older_part_compares_the_maps() -> None:
    rng = random.Random(3)
    pods = [_pod(i, rng) for i in range(200)]
    first = build_pods(tuple(pods))
    part = first
    for _ in range(3):
        i = next(i for i, p in enumerate(pods) if p.node_name)
        pods[i] = replace(pods[i], phase="Failed")
        part = build_pods(tuple(pods), part)
    changed = {k for k in first.by_node.keys() | part.by_node.keys() if first.by_node.get(k) is not part.by_node.get(k)}
    assert set(part.nodes_changed_since(first.by_node)) == changed != set()


def test_pod_keys_follow_a_dict_through_patches_and_folds() -> None:
    rng = random.Random(5)
    pods = [_pod(i, rng) for i in range(400)]
    pods = list({(p.meta.namespace, p.meta.name): p for p in pods}.values())
    part = build_pods(tuple(pods))
    fresh = iter(range(10_000, 20_000))
    for _ in range(40):  # enough changes to fold the overlay into a new dict more than once
        for _ in range(rng.choice((1, 5, 20))):
            i = rng.randrange(len(pods))
            roll = rng.random()
            if roll < 0.6:
                pods[i] = _touch(pods[i], rng)
            elif roll < 0.8:
                pods[i] = _pending_pod(next(fresh))  # another pod in its slot: the old name is gone
            else:
                del pods[i]
                pods.append(_pending_pod(next(fresh)))
        part = build_pods(tuple(pods), part)
        assert part.base_by_node is not None  # patched: no name appears twice, so no full build was needed
        want = {(p.meta.namespace or "", p.meta.name): p for p in pods}
        keys = part.by_key
        assert len(keys) == len(want) and set(keys) == set(want)
        assert all(keys[k] is p and keys.get(k) is p and k in keys for k, p in want.items())
        assert ("nowhere", "nobody") not in keys and keys.get(("nowhere", "nobody")) is None


def test_first_match_follows_the_changed_slots() -> None:
    rng = random.Random(11)
    pods = [_pod(i, rng) for i in range(200)]
    part = build_pods(tuple(pods))

    def marked(p: Pod) -> bool:
        return p.meta.annotations.get("mark") == "yes"

    answer = (part.items, part.first_match(None, marked))
    for _ in range(60):
        # Often the pod found last time: then the next match may be anywhere after it.
        i = answer[1] if answer[1] is not None and rng.random() < 0.4 else rng.randrange(len(pods))
        pods[i] = replace(pods[i], meta=replace(pods[i].meta, annotations={"mark": rng.choice(("yes", "no"))}))
        part = build_pods(tuple(pods), part)
        answer = (part.items, part.first_match(answer, marked))
        assert answer[1] == next((j for j, p in enumerate(pods) if marked(p)), None)


@pytest.mark.parametrize("seed", range(30))
def test_a_deletion_that_shifts_the_last_slots_is_patched_right(seed: int) -> None:
    # A deletion shifts the records after it by one slot; with an addition the length stays the same, so
    # records that only moved are paired with other records, removed at one slot and added at the next.
    rng = random.Random(seed)
    pods = [_pod(i, rng) for i in range(40)]
    part = build_pods(tuple(pods))
    for _ in range(10):
        del pods[rng.randrange(len(pods) - 8, len(pods))]
        pods.append(_pod(rng.randrange(10_000, 20_000), rng))
        for _ in range(2):
            i = rng.randrange(len(pods))
            pods[i] = _touch(pods[i], rng)
        part = build_pods(tuple(pods), part)
        full = build_pods(tuple(pods))
        if full.unique:
            _same_pods(part, full)
