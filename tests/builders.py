"""Build Snapshots for check tests from real-shaped YAML (kubectl -o yaml style), through gputui's ingest."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

import yaml

from diagnostics.snapshot import KUBE_SOURCES, Snapshot, SourceState, SourceStatus
from gputui.kube import ingest
from gputui.sim.kinds import _KINDS

NOW = datetime(2026, 8, 21, 10, 0, 0, tzinfo=timezone.utc)
"""Tests write timestamps relative to this instant (the demo scenarios' referenceTime)."""

SOURCE_OF_KIND = {v: k for k, v in ingest.KIND_OF_SOURCE.items()}
NOT_READ = {k.kind for k in _KINDS} - set(SOURCE_OF_KIND)
"""Kinds scenarios carry that gputui does not list (ConfigMap, DeviceClass, ResourceClaim...): skipped; any
other unknown kind is a typo and fails."""


def objects(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def snapshot(*docs: str | Mapping[str, Any] | Iterable[Mapping[str, Any]],
             sources: Mapping[str, SourceState] | None = None, taken_at: datetime = NOW,
             **extra: Any) -> Snapshot:
    """Snapshot from YAML strings / dicts. Every Kubernetes source is OK unless `sources` says otherwise."""
    by_source: dict[str, list[Any]] = {s: [] for s in KUBE_SOURCES}
    for d in docs:
        items: list[Mapping[str, Any]]
        if isinstance(d, str):
            items = objects(d)
        elif isinstance(d, Mapping):
            items = [d]
        else:
            items = list(d)
        for obj in items:
            if obj.get("kind") == "Scenario" or obj.get("kind") in NOT_READ:
                continue
            src = SOURCE_OF_KIND[obj["kind"]]
            by_source[src].append(ingest.record(src, dict(obj)))
    statuses = {s: SourceStatus(s, SourceState.OK, updated_at=taken_at) for s in KUBE_SOURCES}
    for s, state in (sources or {}).items():
        statuses[s] = SourceStatus(s, state, detail=f"list {s}" if state is SourceState.FORBIDDEN else "")
    return Snapshot(taken_at=taken_at, sources=statuses, **{k: tuple(v) for k, v in by_source.items()}, **extra)
