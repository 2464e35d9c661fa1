"""The facts seam (diagnostics.facts.provider): derived data cached on what it declares it reads, and nothing else.

A provider's value is reused across snapshots while its declared sources hold the same records; the view it
is handed refuses every read it did not declare, so a stale cached value cannot come from an undeclared input.
Checks reach caches only through providers: no cache module imports, no module-level caches.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from diagnostics.facts.provider import UndeclaredRead, derived, facts, forget, per_node, per_snapshot, previous
from diagnostics.records import Node, Pod
from diagnostics.snapshot import Snapshot
from tests.builders import snapshot

ROOT = Path(__file__).resolve().parents[2]

NODE = """
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{karpenter.sh/nodepool: gpu}}}}
status: {{allocatable: {{nvidia.com/gpu: "8"}}, capacity: {{nvidia.com/gpu: "8"}}}}
"""
POD = """
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: ml, uid: {name}}}
spec: {{nodeName: {node}, containers: [{{name: c, image: x}}]}}
status: {{phase: Running}}
"""
EVENT = """
apiVersion: v1
kind: Event
metadata: {name: e1, namespace: default}
involvedObject: {kind: Node, name: gpu-1}
reason: Something
message: m
"""


@pytest.fixture(autouse=True)
def _cold() -> Iterator[None]:
    forget()
    yield
    forget()


def _snap() -> Snapshot:
    return snapshot(NODE.format(name="gpu-1"), NODE.format(name="gpu-2"), POD.format(name="a", node="gpu-1"),
                    POD.format(name="b", node="gpu-2"), EVENT)


calls: list[str] = []


@facts(reads=("nodes",))
def _node_names(snap: Snapshot) -> list[str]:
    calls.append("names")
    return [n.name for n in snap.nodes]


def test_a_provider_is_reused_while_its_sources_are_the_same_records() -> None:
    calls.clear()
    snap = _snap()
    first = _node_names(snap)
    assert first == ["gpu-1", "gpu-2"]
    later = replace(snap, taken_at=snap.taken_at + timedelta(minutes=5), pods=snap.pods[:1], events=())
    assert _node_names(later) is first  # the clock, pods and events changed; nodes did not
    assert calls == ["names"]
    renewed = replace(snap, nodes=_snap().nodes)  # equal nodes, newly ingested: new records
    assert _node_names(renewed) == first and _node_names(renewed) is not first
    assert calls == ["names", "names"]


@facts(reads=("nodes",))
def _reads_pods(snap: Snapshot) -> int:
    return len(snap.pods)


@facts(reads=("nodes",))
def _reads_the_clock(snap: Snapshot) -> object:
    return snap.taken_at


@facts(reads=("nodes",))
def _reads_events_through_the_index(snap: Snapshot) -> object:
    return snap.index.events("Node", "gpu-1")


@facts(reads=("nodes",))
def _reads_a_status(snap: Snapshot) -> object:
    return snap.status("nodes")


@pytest.mark.parametrize("provider, what", [
    (_reads_pods, "snapshot.pods"), (_reads_the_clock, "snapshot.taken_at"),
    (_reads_events_through_the_index, "index.events"), (_reads_a_status, "snapshot.status")])
def test_an_undeclared_read_raises(provider: object, what: str) -> None:
    with pytest.raises(UndeclaredRead, match=what.replace(".", r"\.")):
        provider(_snap())  # type: ignore[operator]


@facts(reads=("pods",))
def _pending_count(snap: Snapshot) -> int:
    return len(snap.index.pending)


@facts(reads=("nodes",))
def _calls_a_provider_of_pods(snap: Snapshot) -> int:
    return _pending_count(snap)


@facts(reads=("nodes", "pods"))
def _declares_what_it_calls(snap: Snapshot) -> int:
    return _pending_count(snap) + len(snap.index.node)


def test_a_provider_calling_another_must_declare_what_the_other_reads() -> None:
    snap = _snap()
    with pytest.raises(UndeclaredRead, match="_pending_count, which reads"):
        _calls_a_provider_of_pods(snap)
    assert _declares_what_it_calls(snap) == 2


def test_an_unknown_source_is_refused_at_declaration() -> None:
    with pytest.raises(ValueError, match="unknown source"):
        facts(reads=("node",))(lambda snap: 0)


@facts(reads=("nodes",))
def _grows(snap: Snapshot) -> list[str]:
    return [*(previous(snap) or []), *(n.name for n in snap.nodes)]


def test_a_provider_sees_its_previous_value() -> None:
    snap = _snap()
    assert _grows(snap) == ["gpu-1", "gpu-2"]
    assert _grows(replace(snap, nodes=_snap().nodes)) == ["gpu-1", "gpu-2", "gpu-1", "gpu-2"]


def test_keyed_values_are_kept_per_key() -> None:
    @facts(reads=("nodes",))
    def named(snap: Snapshot, name: str) -> Node | None:
        calls.append(name)
        return snap.index.node.get(name)

    calls.clear()
    snap = _snap()
    assert named(snap, "gpu-1") is snap.nodes[0] and named(snap, "gpu-2") is snap.nodes[1]
    assert named(snap, "gpu-1") is snap.nodes[0]
    assert calls == ["gpu-1", "gpu-2"]


def test_per_node_values_are_computed_again_only_for_nodes_whose_pods_changed() -> None:
    seen: list[str] = []

    @per_node(reads=("nodes", "pods"))
    def pod_names(snap: Snapshot, node: Node, pods: Sequence[Pod]) -> list[str]:
        seen.append(node.name)
        return [p.name for p in pods]

    snap = _snap()
    assert pod_names(snap, "pool", snap.nodes) == [["a"], ["b"]] and seen == ["gpu-1", "gpu-2"]
    moved = replace(snap, pods=(snap.pods[0], snapshot(POD.format(name="c", node="gpu-2")).pods[0]))
    assert pod_names(moved, "pool", moved.nodes) == [["a"], ["c"]]
    assert seen == ["gpu-1", "gpu-2", "gpu-2"]


def test_per_node_extra_inputs_read_only_what_is_declared() -> None:
    @per_node(reads=("nodes", "pods"), extra=lambda snap, node: (snap.index.nodepool.get(node.nodepool),))
    def nothing(snap: Snapshot, node: Node, pods: Sequence[Pod]) -> None:
        return None

    snap = _snap()
    with pytest.raises(UndeclaredRead, match="index.nodepool"):
        nothing(snap, "pool", snap.nodes)


def test_derived_values_follow_the_identity_of_their_arguments() -> None:
    @derived
    def size(items: tuple[int, ...]) -> int:
        calls.append("size")
        return len(items)

    calls.clear()
    snap = _snap()
    a, b = (1, 2), (1, 2, 3)
    assert size(snap, a) == 2 and size(snap, a) == 2 and size(snap, b) == 3
    assert calls == ["size", "size"]


@per_snapshot
def _clock_note(snap: Snapshot) -> tuple[object, object]:
    calls.append("clock")
    return snap.taken_at, previous(snap)


@facts(reads=("nodes",))
def _carried_reads_the_clock_through_another(snap: Snapshot) -> object:
    return _clock_note(snap)


def test_per_snapshot_values_follow_the_snapshot_and_cannot_be_carried() -> None:
    calls.clear()
    snap = _snap()
    first = _clock_note(snap)
    assert first == (snap.taken_at, None) and _clock_note(snap) is first and calls == ["clock"]
    later = replace(snap, taken_at=snap.taken_at + timedelta(seconds=5))
    assert _clock_note(later) == (later.taken_at, first)  # computed again, and sees the last value
    with pytest.raises(UndeclaredRead, match="worked out per snapshot"):
        _carried_reads_the_clock_through_another(snap)


WARMING_NODE = """
apiVersion: v1
kind: Node
metadata: {name: gpu-1, labels: {karpenter.sh/nodepool: gpu}}
spec:
  taints: [{key: node.example.com/gpu-warmup, value: "true", effect: NoSchedule}]
status:
  allocatable: {nvidia.com/gpu: "8", cpu: "32", memory: 128Gi, pods: "58"}
  capacity: {nvidia.com/gpu: "8", cpu: "32", memory: 128Gi, pods: "58"}
  conditions: [{type: Ready, status: "True", reason: KubeletReady}]
"""


def test_node_fits_follow_a_nodepool_change_when_nodes_and_pods_stay() -> None:
    # A node verdict reads the node's NodePool (its startupTaints: a node still warming up is no candidate).
    # Declaring that read makes a NodePool change reach the shape's node fits even though nodes and pods are
    # the same records; they used to be kept on nodes and pods alone.
    from diagnostics.facts.pod_fit import fit
    from tests.diagnostics.pending_objects import GPU_POOL, NODECLASS, pod

    snap = snapshot(GPU_POOL, NODECLASS, WARMING_NODE, pod())
    pending = snap.index.pending[0]
    assert fit(snap, pending).nodes == ()  # its taint is a startup taint of the pool: still initializing
    no_startup = GPU_POOL.replace("      startupTaints:\n      - {key: node.example.com/gpu-warmup, value: \"true\", "
                                  "effect: NoSchedule}\n", "")
    assert no_startup != GPU_POOL
    changed = replace(snap, nodepools=snapshot(no_startup).nodepools)
    warm = fit(changed, pending).nodes
    forget()
    assert warm == fit(replace(changed), pending).nodes  # a new snapshot: nothing kept from the warm run
    assert [n.node.name for n in warm] == ["gpu-1"] and warm[0].kinds == {"taint"}


# --- the guardrail: checks reach caches only through the seam ---------------------------------------

CACHE_MODULES = {"diagnostics.carry", "diagnostics.snapshot_memo", "diagnostics.index_parts"}
CACHE_TYPES = {"Generations", "PerItem", "Carried", "WeakValueDictionary", "WeakKeyDictionary", "defaultdict",
               "OrderedDict", "lru_cache", "cache", "dict", "set", "list"}


def _cache_offences(path: Path) -> list[str]:
    """Imports of a cache module, module-level containers or cache objects, and module state written from functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = {node.module} | {f"{node.module}.{a.name}" for a in node.names}
            out += [f"imports {m}" for m in sorted(names & CACHE_MODULES)]
        elif isinstance(node, ast.Import):
            out += [f"imports {a.name}" for a in node.names if a.name in CACHE_MODULES]
        elif isinstance(node, ast.Global):
            out.append(f"writes module state ({', '.join(node.names)}) at line {node.lineno}")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                name = ast.unparse(d.func if isinstance(d, ast.Call) else d).split(".")[-1]
                if name in ("lru_cache", "cache", "cached_property"):
                    out.append(f"{node.name} is cached with @{name}")
    for stmt in tree.body:
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
        if value is None:
            continue
        target = ast.unparse(stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target)
        if isinstance(value, (ast.Dict, ast.List, ast.Set)) and not (
                value.keys if isinstance(value, ast.Dict) else value.elts):
            out.append(f"{target} is an empty module-level container at line {stmt.lineno}")
        elif isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1] in CACHE_TYPES:
            out.append(f"{target} = {ast.unparse(value.func)}(...) at line {stmt.lineno}")
    return out


def test_checks_import_no_cache_module_and_define_no_module_level_cache() -> None:
    offences = {p.name: o for p in sorted((ROOT / "diagnostics" / "checks").glob("*.py")) if (o := _cache_offences(p))}
    assert offences == {}


ALLOWED = ("diagnostics.model", "diagnostics.registry", "diagnostics.snapshot", "diagnostics.records",
           "diagnostics.gpu_health", "diagnostics.wording", "diagnostics.timeutil", "diagnostics.facts")
"""The domain (records, and the nvidia-smi result type beside them), the check API and the shared facts."""


def test_checks_import_only_the_domain_and_the_facts() -> None:
    # A check reads the snapshot's records and shared facts: no other check, no engine or relation internals.
    out: dict[str, list[str]] = {}
    for path in sorted((ROOT / "diagnostics" / "checks").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [
                a.name for a in node.names] if isinstance(node, ast.Import) else []
            bad = [n for n in names if n.split(".")[0] == "diagnostics"
                   and not any(n == a or n.startswith(a + ".") for a in ALLOWED)]
            if bad:
                out.setdefault(path.name, []).extend(bad)
    assert out == {}


def test_the_guard_catches_what_it_looks_for(tmp_path: Path) -> None:
    # The guard above must be able to fail: a check written the old way is caught on every count.
    bad = tmp_path / "bad_check.py"
    bad.write_text("from diagnostics.carry import Generations\nimport diagnostics.snapshot_memo\n"
                   "from functools import lru_cache\n_SEEN: dict[str, int] = {}\n_GEN = Generations()\n"
                   "@lru_cache\ndef f(x):\n    global _SEEN\n    return x\n", encoding="utf-8")
    offences = _cache_offences(bad)
    assert len(offences) == 6, offences
