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


def versioned(name: str, rv: str, uid: str = "u-1", phase: str = "Pending") -> Any:
    return ingest.record("pods", {"metadata": {"name": name, "namespace": "ml", "uid": uid, "resourceVersion": rv},
                                  "status": {"phase": phase}})


def test_a_preloaded_part_is_partial_until_the_full_list_supersedes_it() -> None:
    s = Store()
    assert s.preload("pods", [versioned("a", "5"), versioned("b", "6")])
    st = s.status()["pods"]
    assert st.state is SourceState.OK and st.partial and st.detail == store.PENDING_ONLY
    snap = s.snapshot()
    assert snap.pods_read_on == frozenset() and not snap.all_pods_read_on("any-node")
    assert s.changes(-1).full == frozenset(KUBE_SOURCES)

    assert s.apply_preloaded("pods", "MODIFIED", versioned("a", "4", phase="Unknown"))  # older: not taken
    assert s.get("pods", "a", "ml").phase == "Pending"
    assert s.apply_preloaded("pods", "DELETED", versioned("b", "7", uid="another"))  # another object of that name
    assert s.get("pods", "b", "ml") is not None
    assert s.apply_preloaded("pods", "DELETED", versioned("b", "8", phase="Running"))  # it left Pending
    assert s.get("pods", "b", "ml") is None

    s.replace("pods", [versioned("a", "9", phase="Running"), versioned("c", "3", phase="Running")])
    st = s.status()["pods"]
    assert st.state is SourceState.OK and not st.partial and s.snapshot().pods_read_on is None
    assert {p.name: p.phase for p in s.snapshot().pods} == {"a": "Running", "c": "Running"}
    # The part's watch may still deliver an event: it is refused, and the part's reader stops.
    assert not s.apply_preloaded("pods", "DELETED", versioned("a", "10"))
    assert not s.preload("pods", [versioned("z", "11")])
    assert {p.name for p in s.snapshot().pods} == {"a", "c"}
