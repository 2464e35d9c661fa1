"""Data carried across snapshots (diagnostics.carry): reused only while its records are the same objects.

The TUI re-runs every check on a new Snapshot of the live cache every few seconds; checks carry
what they derived from unchanged records. The contract tested here: a run on a snapshot gives the
same report whether the caches are warm from earlier snapshots or cold (`forget()`), whatever
changed in between - records replaced, added or deleted, or only the clock.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from diagnostics import run
from diagnostics.model import Report
from diagnostics.carry import CARRIED, Carried, Generations, PerItem, canonical, forget, same_items
from diagnostics.snapshot import KUBE_SOURCES
from gputui.kube import ingest
from gputui.dev.bench.fleet import Fleet
from gputui.sim.scenario import list_scenarios, load_scenario
from gputui.collect.store import Store
from tests.builders import NOW, snapshot

SOURCE_OF_KIND = {v: k for k, v in ingest.KIND_OF_SOURCE.items()}
Obj = dict[str, Any]


@pytest.fixture(autouse=True)
def _cold() -> Iterator[None]:
    forget()
    yield
    forget()


# --- the building blocks ----------------------------------------------------------------------------

def test_same_items_is_identity_not_equality() -> None:
    a, b = [1000.5], [1000.5]
    assert same_items((a, b), (a, b))
    assert not same_items((a, b), (a, [1000.5]))  # equal, not the same object
    assert not same_items((a,), (a, b))


def test_canonical_returns_the_earlier_tuple_while_items_are_the_same() -> None:
    x, y = object(), object()
    first = canonical("test-source", (x, y))
    assert canonical("test-source", (x, y)) is first
    changed = (x, object())
    assert canonical("test-source", changed) is changed


def test_carried_recomputes_when_an_input_is_replaced() -> None:
    carried = Carried()
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return len(calls)

    rec = object()
    assert carried.get("k", (rec,), compute) == 1
    assert carried.get("k", (rec,), compute) == 1
    assert carried.get("k", (object(),), compute) == 2


def test_carried_stable_keeps_an_equal_value_object() -> None:
    first = ("reason", 1.0)
    assert CARRIED.stable("test-stable", first) is first
    assert CARRIED.stable("test-stable", ("reason", 1.0)) is first
    other = ("reason", 2.0)
    assert CARRIED.stable("test-stable", other) is other


class _Epoch:
    """Stands for a snapshot's index (weakly referenced by Generations)."""


def test_generations_keep_entries_of_the_previous_snapshot_only() -> None:
    gen: Generations[str] = Generations()
    s1, s2, s3, s4, s5 = (_Epoch() for _ in range(5))
    rec = object()
    assert gen.of(s1, rec, (), lambda: "first") == "first"
    assert gen.of(s2, rec, (), lambda: "second") == "first"  # used by s2: kept
    gen.of(s3, object(), (), lambda: "other")
    assert gen.of(s3, rec, (), lambda: "third") == "first"  # s2 is s3's previous generation
    gen.of(s4, object(), (), lambda: "x")
    gen.of(s5, object(), (), lambda: "y")
    assert gen.of(s5, rec, (), lambda: "fresh") == "fresh"  # unused for two snapshots: dropped


def test_per_item_looks_again_only_at_the_groups_that_changed() -> None:
    per: PerItem[str, str, tuple[str, object]] = PerItem()
    items = ["n1", "n2", "n3"]
    groups: dict[str, object] = {"n1": object(), "n2": object(), "n3": object()}
    calls: list[str] = []

    def values(fixed: tuple[object, ...] = ()) -> list[tuple[str, object]]:
        now = groups

        def changed(earlier: dict[str, object]) -> set[str]:
            return {k for k in now if earlier.get(k) is not now[k]}

        def compute(item: str) -> tuple[str, object]:
            calls.append(item)
            return item, now[item]

        return per.values("k", items, fixed, now, lambda i: i, changed, lambda i: (i, now[i]), compute)

    first = values()
    assert calls == ["n1", "n2", "n3"] and [v[1] for v in first] == [groups[i] for i in items]
    assert values() is first  # the same groups: nothing looked at
    calls.clear()
    groups = {**groups, "n2": object()}
    second = values()
    assert calls == ["n2"] and second[1][1] is groups["n2"] and second[0] is first[0] and second[2] is first[2]
    calls.clear()
    groups = {**groups, "n3": object()}
    third = values(fixed=(object(),))  # something besides the groups changed: every item's inputs are compared
    assert calls == ["n3"] and third[0] is first[0] and third[1] is second[1]


def test_per_item_patches_from_the_items_earlier_value() -> None:
    per: PerItem[str, str, list[int]] = PerItem()
    items = ["n1"]
    pods = {"n1": (1, 2, 3)}
    seen: list[tuple[object, ...]] = []

    def patch(item: str, earlier: tuple[object, ...], was: list[int]) -> list[int]:
        seen.append(earlier)
        return [*was, *(x for x in pods[item] if x not in was)]

    def run() -> list[list[int]]:
        now = pods
        return per.values(None, items, (), now, lambda i: i, lambda e: {k for k in now if e.get(k) is not now[k]},
                          lambda i: (i, now[i]), lambda i: list(now[i]), patch)

    assert run() == [[1, 2, 3]] and not seen
    old = pods["n1"]
    pods = {"n1": (1, 2, 3, 4)}
    assert run() == [[1, 2, 3, 4]] and seen == [("n1", old)]


# --- the index ------------------------------------------------------------------------------------

POD = """
apiVersion: v1
kind: Pod
metadata: {name: trainer-0, namespace: ml, uid: u1, creationTimestamp: "2026-08-21T09:00:00Z"}
spec: {containers: [{name: c, image: x}]}
status: {phase: Pending}
"""


def test_index_is_shared_while_records_are_the_same_and_rebuilt_when_one_changes() -> None:
    snap = snapshot(POD)
    later = replace(snap, taken_at=snap.taken_at + timedelta(seconds=5))
    assert later.index is not snap.index
    assert later.index.pod is snap.index.pod and later.index.pending is snap.index.pending
    changed = replace(snap, pods=snapshot(POD).pods)  # same object, newly ingested: a new record
    assert changed.index.pod is not snap.index.pod
    assert changed.index.pending == [changed.pods[0]]
    assert changed.index.pending[0] is changed.pods[0]


def _event(name: str, seen: str | None) -> str:
    stamps = f"lastTimestamp: '{seen}'\nfirstTimestamp: '{seen}'\n" if seen else ""
    return f"""
apiVersion: v1
kind: Event
metadata: {{name: {name}, namespace: ml}}
involvedObject: {{kind: Pod, name: trainer-0, namespace: ml}}
reason: {name}
message: m
type: Normal
{stamps}"""


def test_events_without_timestamps_sort_as_of_each_snapshots_time() -> None:
    # An event with no timestamp sorts at taken_at: before a later-stamped event, then after it.
    docs = (_event("Untimed", None), _event("Stamped", "2026-08-21T10:00:30Z"))
    early = snapshot(*docs, taken_at=NOW)
    assert [e.reason for e in early.index.events("Pod", "trainer-0", "ml")] == ["Untimed", "Stamped"]
    late = replace(early, taken_at=NOW + timedelta(minutes=1))
    assert [e.reason for e in late.index.events("Pod", "trainer-0", "ml")] == ["Stamped", "Untimed"]
    assert [e.reason for e in early.index.events("Pod", "trainer-0", "ml")] == ["Untimed", "Stamped"]


# --- warm equals cold -------------------------------------------------------------------------------

class Cluster:
    """Raw objects plus a Store fed from them the way informers feed it: a change replaces one record."""

    def __init__(self, objects: list[Obj], now: datetime) -> None:
        self.objects: dict[tuple[str, str | None, str], Obj] = {}
        self.now = now
        self.store = Store(clock=lambda: self.now)
        by_source: dict[str, list[Any]] = {s: [] for s in KUBE_SOURCES}
        for obj in objects:
            src = SOURCE_OF_KIND.get(obj.get("kind", ""))
            if src is None:
                continue
            self.objects[self._key(src, obj)] = obj
            by_source[src].append(ingest.record(src, obj))
        for src, recs in by_source.items():
            self.store.replace(src, recs)

    @staticmethod
    def _key(src: str, obj: Obj) -> tuple[str, str | None, str]:
        md = obj.get("metadata") or {}
        return src, md.get("namespace"), md.get("name", "")

    def of(self, src: str, pred: Callable[[Obj], bool] = lambda o: True) -> list[Obj]:
        return [o for (s, _, _), o in self.objects.items() if s == src and pred(o)]

    def put(self, src: str, obj: Obj) -> None:
        self.objects[self._key(src, obj)] = obj
        self.store.apply(src, "MODIFIED", ingest.record(src, obj))

    def delete(self, src: str, obj: Obj) -> None:
        self.objects.pop(self._key(src, obj), None)
        self.store.apply(src, "DELETED", ingest.record(src, obj))

    def assert_warm_equals_cold(self, after: str = "start") -> Report:
        warm = run(self.store.snapshot())
        forget()
        cold = run(self.store.snapshot())
        assert warm.results == cold.results, after
        assert warm.to_json() == cold.to_json(), after
        return warm


def _is_pending_gpu(o: Obj) -> bool:
    return (o.get("status") or {}).get("phase") == "Pending" and "gpu" in str(o.get("spec", {}).get("containers"))


def _mutations(c: Cluster) -> Iterator[str]:
    """Change the cluster one way at a time (yielding what changed), each a case for warm == cold."""
    c.now += timedelta(seconds=61)
    yield "clock +61s"
    for src in KUBE_SOURCES:
        for obj in c.of(src)[:2]:
            c.put(src, copy.deepcopy(obj))  # same content, new record
            yield f"{src} re-ingested unchanged"
    for pod in c.of("pods", _is_pending_gpu)[:3]:
        new = copy.deepcopy(pod)
        new["spec"]["tolerations"] = [{"operator": "Exists"}]
        c.put("pods", new)
        yield f"pod {pod['metadata']['name']} tolerates everything"
        new = copy.deepcopy(new)
        new["spec"]["nodeSelector"] = {"team": "nobody"}
        c.put("pods", new)
        yield f"pod {pod['metadata']['name']} selects a label no pool has"
        c.delete("pods", new)
        yield f"pod {pod['metadata']['name']} deleted"
    for pool in c.of("nodepools")[:3]:
        new = copy.deepcopy(pool)
        new.setdefault("spec", {})["limits"] = {"nvidia.com/gpu": "1", "cpu": "1"}
        new.setdefault("status", {})["conditions"] = [{
            "type": "Ready", "status": "False", "reason": "NodeClassNotReady",
            "lastTransitionTime": "2026-08-21T09:00:00Z"}]
        c.put("nodepools", new)
        yield f"nodepool {pool['metadata']['name']} limited and not Ready"
    for src in ("events", "nodes", "nodeclaims", "ec2nodeclasses"):
        for obj in c.of(src)[:2]:
            c.delete(src, obj)
            yield f"{src} {obj['metadata']['name']} deleted"
    for hours in (1, 7):
        c.now += timedelta(hours=hours)
        yield f"clock +{hours}h"


@pytest.mark.parametrize("name", [s.name for s in list_scenarios()])
def test_scenario_warm_runs_equal_cold_runs_through_changes(name: str) -> None:
    sc = load_scenario(name)
    c = Cluster(sc.all_objects(), sc.reference_time or NOW)
    c.assert_warm_equals_cold()
    for what in _mutations(c):
        c.assert_warm_equals_cold(after=what)


@pytest.mark.slow
def test_fleet_warm_runs_equal_cold_runs_through_random_changes() -> None:
    # Replicas of a workload share fits by shape: changing one pending replica must not leak to the others.
    now = datetime(2026, 8, 21, 12, 0, 0, tzinfo=timezone.utc)
    c = Cluster(Fleet("S", now=now).all_objects(), now)
    c.assert_warm_equals_cold()
    for what in _mutations(c):
        c.assert_warm_equals_cold(after=what)
    rng = random.Random(7)
    for _ in range(6):
        pods = c.of("pods", _is_pending_gpu)
        for pod in rng.sample(pods, 3):
            new = copy.deepcopy(pod)
            new["spec"]["tolerations"] = list(new["spec"].get("tolerations") or ())[1:]
            c.put("pods", new)
        c.now += timedelta(seconds=rng.choice((3, 60, 900)))
        c.assert_warm_equals_cold(after="three pending pods lost a toleration")


def _bound_gpu_pod(o: Obj) -> bool:
    spec = o.get("spec") or {}
    return bool(spec.get("nodeName")) and "nvidia.com/gpu" in str([c.get("resources") for c in spec.get("containers", [])])


@pytest.mark.slow
def test_fleet_warm_runs_equal_cold_runs_through_a_watch_burst() -> None:
    # What a watch burst does to the live cache: bound pods replaced in their slots (GPU pods finishing
    # and starting again, annotations coming and going). Per-node data carried across snapshots (idle
    # GPU nodes, job pods per node, requests per node, the free-accelerator index) is patched for the
    # nodes whose pods changed; a patch that misses a node shows up as a warm run that differs from a cold one.
    now = datetime(2026, 8, 21, 12, 0, 0, tzinfo=timezone.utc)
    c = Cluster(Fleet("S", now=now).all_objects(), now)
    c.assert_warm_equals_cold()
    rng = random.Random(11)
    found: set[str] = set()
    for step in range(12):
        if step in (2, 7):  # every GPU pod on a few nodes finishes: idle GPU nodes
            nodes = rng.sample(sorted({p["spec"]["nodeName"] for p in c.of("pods", _bound_gpu_pod)}), 6)
            for pod in c.of("pods", lambda o: _bound_gpu_pod(o) and o["spec"]["nodeName"] in nodes):  # noqa: B023 - used at once
                new = copy.deepcopy(pod)
                new["status"]["phase"] = "Succeeded"
                c.put("pods", new)
        for pod in rng.sample(c.of("pods", _bound_gpu_pod), 40):
            new = copy.deepcopy(pod)
            new["status"]["phase"] = "Succeeded" if pod["status"].get("phase") == "Running" else "Running"
            c.put("pods", new)
        for pod in rng.sample(c.of("pods", lambda o: bool((o.get("spec") or {}).get("nodeName"))), 15):
            new = copy.deepcopy(pod)
            annotations = new["metadata"].setdefault("annotations", {})
            value = rng.choice(("true", "30m", "100h", "bogus", None))
            if value is None:
                annotations.pop("karpenter.sh/do-not-disrupt", None)
            else:
                annotations["karpenter.sh/do-not-disrupt"] = value
            c.put("pods", new)
        if step % 3 == 0:  # the Karpenter controller's pod moves (its namespace is in some remediations)
            for pod in c.of("pods", lambda o: (o["metadata"].get("labels") or {}).get("app.kubernetes.io/name")
                            == "karpenter"):
                new = copy.deepcopy(pod)
                del new["metadata"]["labels"]["app.kubernetes.io/name"]
                c.put("pods", new)
            new = copy.deepcopy(rng.choice(c.of("pods")))
            new["metadata"].setdefault("labels", {})["app.kubernetes.io/name"] = "karpenter"
            c.put("pods", new)
        if step % 3 == 2:
            c.delete("pods", rng.choice(c.of("pods", _bound_gpu_pod)))  # slots shift: the general patch
        c.now += timedelta(seconds=rng.choice((5, 900, 4000, 30000)))
        report = c.assert_warm_equals_cold(after=f"burst step {step}")
        found |= {r.check for r in report.results if r.findings}
        found |= {"logs-command" for f in report.findings if any("kubectl logs -n" in c for c in f.remediation.commands)}
    assert {"consolidation-blocked", "gpu-nodepool-practices", "logs-command"} <= found


def test_first_pod_follows_records_replaced_between_snapshots() -> None:
    # Index.first_pod is carried and, when only some pods changed, tests only those (and, if the pod it
    # had found was replaced, the pods after it): it must still name the first matching pod of each snapshot.
    now = datetime(2026, 8, 21, 12, 0, 0, tzinfo=timezone.utc)
    c = Cluster(Fleet("S", now=now).all_objects(), now)
    rng = random.Random(3)

    def marked(p: Any) -> bool:
        return p.meta.labels.get("test-mark") == "yes"

    for _ in range(30):
        for pod in rng.sample(c.of("pods"), 3):
            new = copy.deepcopy(pod)
            new["metadata"].setdefault("labels", {})["test-mark"] = rng.choice(("yes", "no", "no"))
            c.put("pods", new)
        snap = c.store.snapshot()
        assert snap.index.first_pod("test-mark", marked) is next((p for p in snap.pods if marked(p)), None)


# --- what a watch burst replaces: pods on GPU nodes, seconds apart -----------------------------------------

def _node_fits_by_pod(snap: Any) -> dict[str, tuple[Any, ...]]:
    from diagnostics.facts.pending import placeable

    return {t.pod.name: pf.nodes for t, pf in placeable(snap)[1]}


def test_node_fits_follow_requests_on_gpu_nodes_through_a_burst() -> None:
    # A pending pod's candidate nodes are patched for the nodes whose requests changed (by value: a pod whose
    # labels changed leaves its node's requests, and so its fits, alone); warm must equal cold at every step.
    now = datetime(2026, 8, 21, 12, 0, 0, tzinfo=timezone.utc)
    c = Cluster(Fleet("S", now=now).all_objects(), now)
    rng = random.Random(5)
    seen_candidates = 0
    freed = rng.sample(sorted({p["spec"]["nodeName"] for p in c.of("pods", _bound_gpu_pod)}), 10)
    for step in range(10):
        bound = c.of("pods", _bound_gpu_pod)
        if step in (0, 5):  # every GPU pod on a few nodes finishes: candidates for the pending pods
            for pod in [p for p in bound if p["spec"]["nodeName"] in freed]:
                new = copy.deepcopy(pod)
                new["status"]["phase"] = "Succeeded"
                c.put("pods", new)
        on_freed = [p for p in bound if p["spec"]["nodeName"] in freed]
        for pod in rng.sample(on_freed, min(4, len(on_freed))) + rng.sample(bound, 8):  # GPUs freed, taken again
            new = copy.deepcopy(pod)
            new["status"]["phase"] = "Succeeded" if pod["status"].get("phase") == "Running" else "Running"
            c.put("pods", new)
        for pod in rng.sample(bound, 12):  # labels only: the node's requests stay as they were
            new = copy.deepcopy(pod)
            new["metadata"].setdefault("labels", {})["burst"] = str(step)
            c.put("pods", new)
        c.now += timedelta(seconds=rng.choice((1, 2, 61)))
        warm = _node_fits_by_pod(c.store.snapshot())
        c.assert_warm_equals_cold(after=f"step {step}")
        forget()
        cold = _node_fits_by_pod(c.store.snapshot())
        assert warm == cold, f"step {step}"
        seen_candidates += sum(len(fits) for fits in warm.values())
    assert seen_candidates  # some pending pod had candidate nodes: the patch was exercised


def _disruption_event(node: str, n: int, message: str, seen: datetime) -> Obj:
    stamp = seen.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"apiVersion": "v1", "kind": "Event", "type": "Normal", "reason": "DisruptionBlocked", "count": 1,
            "message": message, "firstTimestamp": stamp, "lastTimestamp": stamp,
            "source": {"component": "karpenter"},
            "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": node},
            "metadata": {"name": f"{node}.blocked{n}", "namespace": "default"}}


def test_idle_node_findings_follow_the_clock_and_their_events() -> None:
    # Idle GPU nodes' findings are reused while what they show (idle time, GPU-hours, blockers) is unchanged;
    # their events are sorted into "dismissed by text" once per node. Small clock steps keep most findings,
    # larger ones change the texts and let events age out; warm must equal cold throughout.
    now = datetime(2026, 8, 21, 12, 0, 0, tzinfo=timezone.utc)
    c = Cluster(Fleet("S", now=now).all_objects(), now)
    nodes = sorted({p["spec"]["nodeName"] for p in c.of("pods", _bound_gpu_pod)})[:8]
    for pod in c.of("pods", lambda o: _bound_gpu_pod(o) and o["spec"]["nodeName"] in nodes):
        new = copy.deepcopy(pod)
        new["status"]["phase"] = "Succeeded"
        c.put("pods", new)
    messages = ("Node is nominated for a pending pod", "Cannot disrupt Node: state node is nominated for a pending pod",
                "No allowed disruptions for disruption reason Underutilized due to blocking budget",
                'Cannot disrupt Node: pod "team-a/job-0" has "karpenter.sh/do-not-disrupt" annotation',
                "Cannot disrupt Node: PodDisruptionBudget=[team-a/pdb-x] prevents pod evictions",
                "Cannot disrupt Node: consolidation policy WhenEmpty")
    for i, node in enumerate(nodes):
        for j, message in enumerate(messages[i % 3:i % 3 + 3]):
            c.put("events", _disruption_event(node, j, message, c.now + timedelta(minutes=40)))
    rng = random.Random(9)
    shown: set[str] = set()
    for step in range(14):
        c.now += timedelta(seconds=rng.choice((1, 3, 45, 61, 900, 2400)))
        if step in (5, 9):  # Karpenter says something new about some idle nodes
            for i, node in enumerate(nodes[step % 2::2]):
                c.put("events", _disruption_event(node, 10 + step, messages[(i + step) % len(messages)], c.now))
        if step % 4 == 3:  # a DaemonSet-free pod on an idle node gets (or drops) do-not-disrupt
            pods = c.of("pods", lambda o: (o.get("spec") or {}).get("nodeName") in nodes)
            if pods:
                new = copy.deepcopy(rng.choice(pods))
                new["metadata"].setdefault("annotations", {})["karpenter.sh/do-not-disrupt"] = rng.choice(
                    ("true", "1m", "bogus"))
                c.put("pods", new)
        report = c.assert_warm_equals_cold(after=f"step {step}")
        shown |= {f.title for r in report.results if r.check == "consolidation-blocked" for f in r.findings}
    assert len(shown) > 8  # idle times moved on and findings were built again


def test_waiting_pod_findings_follow_the_clock_and_their_nodeclaims() -> None:
    # The time-independent part of a waiting pod's finding is kept per triaged pod; ages, "stuck" and the
    # remedy follow the clock, and a NodeClaim that moves on to its next stage is read again.
    now = datetime(2026, 8, 21, 12, 0, 0, tzinfo=timezone.utc)
    c = Cluster(Fleet("S", now=now).all_objects(), now)
    first = c.assert_warm_equals_cold()
    waiting = [r for r in first.results if r.check == "pod-waiting-for-nodeclaim"][0]
    assert waiting.findings
    severities: set[object] = set()
    for step, seconds in enumerate((1, 30, 61, 300, 600, 3600)):
        c.now += timedelta(seconds=seconds)
        if step == 2:  # the claims still coming up move on (their stage starts again)
            for claim in c.of("nodeclaims", lambda o: any(
                    cond.get("status") != "True" for cond in (o.get("status") or {}).get("conditions") or ())):
                new = copy.deepcopy(claim)
                for cond in (new.get("status") or {}).get("conditions") or ():
                    cond["lastTransitionTime"] = c.now.strftime("%Y-%m-%dT%H:%M:%SZ")
                c.put("nodeclaims", new)
        report = c.assert_warm_equals_cold(after=f"clock +{seconds}s")
        severities |= {f.severity for r in report.results if r.check == "pod-waiting-for-nodeclaim"
                       for f in r.findings}
    assert len(severities) == 2  # on its way, then stuck


def test_events_dismissed_by_text_give_no_blocker_whatever_else_holds() -> None:
    # blockers_for drops, once per node, the events _event_blocker turns into nothing by their text alone:
    # every dropped text must give no blocker, the others must still reach _event_blocker.
    from diagnostics.facts.disruption import NodeDisruption, _dismissed, _event_blocker
    node = """
apiVersion: v1
kind: Node
metadata: {name: gpu-1, labels: {karpenter.sh/nodepool: gpu}}
"""
    pool = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu}
spec: {template: {spec: {nodeClassRef: {name: default}}}}
"""
    texts = ("Node is nominated for a pending pod", "Cannot disrupt Node: state node isn't initialized",
             "Cannot disrupt Node: state node is marked for deletion, deleting",
             'Cannot disrupt Node: node has "karpenter.sh/do-not-disrupt" annotation',
             "(combined from similar events): Cannot disrupt Node: consolidation policy WhenEmpty",
             "Cannot disrupt Node: consolidation disabled",
             'Cannot disrupt Node: pod "ml/job-0" has "karpenter.sh/do-not-disrupt" annotation',
             "Cannot disrupt Node: PodDisruptionBudget=[ml/pdb-x] prevents pod evictions",
             "No allowed disruptions for disruption reason Drifted due to blocking budget",
             "Can't replace with a cheaper node", "Unconsolidatable: SpotToSpotConsolidation is disabled")
    snap = snapshot(node, pool, *(_disruption_event("gpu-1", i, t, NOW) for i, t in enumerate(texts)), taken_at=NOW)
    assert len(snap.events) == len(texts)
    dropped = 0
    for pool_known in (True, False):
        nd = NodeDisruption(snap.nodes[0], None, snap.nodepools[0] if pool_known else None, [])
        for e in snap.events:
            text = e.message
            if _dismissed(text, pool_known):
                dropped += 1
                assert _event_blocker(snap, nd, e, set(), set()) == [], text
            elif pool_known or ("WhenEmpty" not in text and "disabled" not in text):
                assert _event_blocker(snap, nd, e, set(), set()), text
    assert dropped == 6 + 4  # the pool-policy texts are kept when the pool is unknown
