"""Store.changes: the change journal the TUI's frame worker reads (what changed since its last frame)."""

from __future__ import annotations

from typing import Any

from diagnostics.snapshot import KUBE_SOURCES, SourceState, SourceStatus
from gputui.kube import ingest
from gputui.collect import store
from gputui.collect.store import Store


def pod(name: str, phase: str = "Running") -> Any:
    return ingest.record("pods", {"metadata": {"name": name, "namespace": "ml"}, "status": {"phase": phase}})


def test_first_read_is_full_then_only_what_changed() -> None:
    s = Store()
    s.replace("pods", [pod("a"), pod("b")])
    first = s.changes(-1)
    assert first.full == frozenset(KUBE_SOURCES) and first.version == s.version
    assert {p.name for p in first.snapshot.pods} == {"a", "b"}

    s.apply("pods", "MODIFIED", pod("a", "Succeeded"))
    s.apply("pods", "ADDED", pod("c"))
    s.apply("pods", "DELETED", pod("b"))
    s.touch("pods")  # no object changed: nothing to report
    delta = s.changes(first.version)
    assert delta.full == frozenset() and delta.version == s.version
    assert {k: (r.phase if r else None) for k, r in delta.records["pods"].items()} == {
        ("ml", "a"): "Succeeded", ("ml", "c"): "Running", ("ml", "b"): None}

    assert s.changes(delta.version).records == {}


def test_relists_and_cleared_sources_are_full_and_a_late_reader_starts_over(monkeypatch: Any) -> None:
    s = Store()
    v = s.changes(-1).version
    s.apply("pods", "ADDED", pod("a"))
    s.replace("nodes", [])
    s.set_status(SourceStatus("nodeclaims", SourceState.FORBIDDEN, "list nodeclaims"))
    delta = s.changes(v)
    assert delta.full == {"nodes", "nodeclaims"} and set(delta.records) == {"pods"}

    monkeypatch.setattr(store, "JOURNAL_MAX", 3)
    for i in range(5):
        s.apply("pods", "ADDED", pod(f"p{i}"))
    assert s.changes(delta.version).full == frozenset(KUBE_SOURCES)  # the journal no longer reaches back
    s.apply("pods", "ADDED", pod("x"))
    assert s.changes(0).full == frozenset(KUBE_SOURCES)  # older than the last read: another reader
