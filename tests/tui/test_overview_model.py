"""The incremental overview model shows exactly what a full rebuild from a snapshot shows.

Each case loads a cluster into a Store, then makes seeded random changes of the kinds a watch
delivers (pods binding, finishing, disappearing; NodeClaims moving between nodes and provider IDs;
nodes relabelled; events added), and after every batch compares the model's tables with the rows
`gputui.output.rows` builds from a fresh snapshot and the same report, ordered as the overview orders them.
"""

from __future__ import annotations

import copy
import random
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from diagnostics import run
from diagnostics.model import ObjectRef, Report, Severity
from diagnostics.snapshot import KUBE_SOURCES, Snapshot
from gputui.kube import ingest
from gputui.output import rows
from gputui.sim.scenario import load_scenario
from gputui.collect.store import Store
from gputui.tui import cells
from gputui.tui.overview_model import Diagnosis, Frame, OverviewModel, findings_title, store_labels

SOURCE_OF_KIND = {v: k for k, v in ingest.KIND_OF_SOURCE.items()}
NOW = datetime(2026, 8, 21, 10, 0, 0, tzinfo=timezone.utc)


def worst_first(data: list[rows.Row], involved: dict[ObjectRef, Severity] | None = None) -> list[rows.Row]:
    """The overview's order before the model: rows with findings first (worst first)."""
    return sorted(data, key=lambda r: -max(r.severity, (involved or {}).get(r.ref, Severity.OK)))


def claims_first(data: list[rows.Row], involved: dict[ObjectRef, Severity]) -> list[rows.Row]:
    """NodeClaims named by findings first, then those not yet ready (mid-launch or failing)."""
    stage = rows.CLAIM_COLUMNS.index("STAGE")
    return sorted(data, key=lambda r: (-max(r.severity, involved.get(r.ref, Severity.OK)),
                                       r.cells[stage] in ("GPU ready", "Ready")))


def expected(snap: Snapshot, report: Report | None) -> dict[str, list[Any]]:
    """The overview's tables as the full rebuild computes them (the behaviour to keep)."""
    by_subject = cells.findings_by_subject(report)
    findings = report.findings if report is not None else []
    tables = {
        "findings": [(k, f.subject, cells.finding_cells(f))
                     for k, f in zip(cells.finding_keys(findings), findings)],
        "nodes": [(r.key, r.ref, cells.node_cells(r, by_subject.get(r.ref, [])))
                  for r in worst_first(rows.node_rows(snap, report))],
        "pods": [(r.key, r.ref, cells.pending_cells(r)) for r in rows.pending_rows(snap, report)],
        "nodeclaims": [(r.key, r.ref, cells.claim_cells(r))
                       for r in claims_first(rows.claim_rows(snap, report), cells.involvement(report))],
        "nodepools": [(r.key, r.ref, cells.pool_cells(r)) for r in rows.pool_rows(snap, report)],
    }
    return {t: [(k, ref, plain(c)) for k, ref, c in v] for t, v in tables.items()}


def plain(cs: Any) -> tuple[Any, ...]:
    return tuple((c.plain, str(c.style), tuple(c.spans)) for c in cs)


def shown(frame: Frame) -> dict[str, list[Any]]:
    return {t: [(r.key, r.ref, plain(r.cells)) for r in v] for t, v in frame.tables.items()}


class Cluster:
    """Raw objects per source plus the Store fed from them, changed the way a watch would."""

    def __init__(self, docs: list[dict[str, Any]], clock: Any) -> None:
        self.objs: dict[str, dict[tuple[str | None, str], dict[str, Any]]] = {s: {} for s in KUBE_SOURCES}
        for d in docs:
            src = SOURCE_OF_KIND.get(d.get("kind", ""))
            if src is None or src == "namespaces":
                continue
            md = d["metadata"]
            self.objs[src][(md.get("namespace"), md["name"])] = d
        self.store = Store(clock=clock)
        for src, objs in self.objs.items():
            self.store.replace(src, [ingest.record(src, o) for o in objs.values()])

    def put(self, src: str, obj: dict[str, Any]) -> None:
        md = obj["metadata"]
        key = (md.get("namespace"), md["name"])
        etype = "MODIFIED" if key in self.objs[src] else "ADDED"
        self.objs[src][key] = obj
        self.store.apply(src, etype, ingest.record(src, obj))

    def delete(self, src: str, key: tuple[str | None, str]) -> None:
        obj = self.objs[src].pop(key)
        self.store.apply(src, "DELETED", ingest.record(src, obj))

    def mutate(self, rng: random.Random, n: int) -> None:
        for _ in range(n):
            src = rng.choice(("pods", "pods", "pods", "nodeclaims", "nodes", "events", "nodepools"))
            objs = self.objs[src]
            if not objs:
                continue
            key = rng.choice(sorted(objs, key=str))
            obj = copy.deepcopy(objs[key])
            action = rng.random()
            if action < 0.1:
                self.delete(src, key)
                continue
            if action < 0.2 and src in ("pods", "events", "nodeclaims"):
                obj["metadata"]["name"] += f"-x{rng.randrange(1000)}"  # a new object like an old one
            if src == "pods":
                st = obj.setdefault("status", {})
                choice = rng.random()
                if choice < 0.3:
                    st["phase"] = rng.choice(("Running", "Succeeded", "Pending", "Failed"))
                elif choice < 0.6:
                    obj.setdefault("spec", {})["nodeName"] = rng.choice(
                        ["", *(k[1] for k in sorted(self.objs["nodes"], key=str))][:6])
                    st["phase"] = "Pending" if not obj["spec"]["nodeName"] else "Running"
                else:
                    obj["metadata"].setdefault("annotations", {})["touch"] = str(rng.random())
            elif src == "nodeclaims":
                st = obj.setdefault("status", {})
                nodes = [k[1] for k in sorted(self.objs["nodes"], key=str)]
                if rng.random() < 0.5 and nodes:
                    st["nodeName"] = rng.choice(["", *nodes])
                else:
                    st["providerID"] = rng.choice(["", *(n.get("spec", {}).get("providerID", "")
                                                        for n in list(self.objs["nodes"].values())[:5])])
            elif src == "nodes":
                labels = obj["metadata"].setdefault("labels", {})
                if rng.random() < 0.5:
                    labels["karpenter.sh/nodepool"] = rng.choice(
                        [k[1] for k in sorted(self.objs["nodepools"], key=str)] or ["x"])
                else:
                    labels.pop("nvidia.com/gpu.count", None)
                    obj.setdefault("status", {}).setdefault("capacity", {}).pop("nvidia.com/gpu", None)
            elif src == "events":
                pods = [k for k in sorted(self.objs["pods"], key=str)][:20]
                if pods:
                    ns, name = rng.choice(pods)
                    obj["involvedObject"] = {"kind": "Pod", "name": name, "namespace": ns}
                obj["reason"] = rng.choice(("FailedScheduling", "Nominated", "Scheduled"))
                obj["message"] = f"message {rng.random()}"
                obj["lastTimestamp"] = rng.choice(("2026-08-21T09:50:00Z", "2026-08-21T09:55:00Z"))
            elif src == "nodepools":
                obj.setdefault("spec", {})["weight"] = rng.randrange(0, 3)
            self.put(src, obj)


def check(model: OverviewModel, cluster: Cluster, diagnosis: Diagnosis | None) -> Frame:
    frame = model.update(cluster.store.changes(model.version), diagnosis)
    report = diagnosis.report if diagnosis is not None else None
    want = expected(frame.snapshot, report)
    got = shown(frame)
    for t in want:
        assert got[t] == want[t], t
    assert frame.findings_title.plain == findings_title(report).plain
    return frame


@pytest.mark.parametrize("scenario", ["incident", "healthy", "gpu-not-advertised", "spot-shortage",
                                      "consolidation-blocked", "untolerated-taint", "subnets-not-found"])
def test_model_matches_full_rebuild_under_changes(scenario: str) -> None:
    sc = load_scenario(scenario)
    now = sc.reference_time or NOW
    cluster = Cluster(sc.all_objects(), clock=lambda: now)
    model = OverviewModel(store_labels(cluster.store))
    check(model, cluster, None)
    rng = random.Random(scenario)
    diagnosis = None
    for step in range(40):
        cluster.mutate(rng, rng.choice((1, 3, 10)))
        if step % 3 == 0:
            snap = cluster.store.snapshot()
            diagnosis = Diagnosis(snap, run(snap), cluster.store.version)
        check(model, cluster, diagnosis)  # the report may be older than the rows: it runs apart


def test_model_matches_on_a_bench_fleet() -> None:
    from gputui.dev.bench.fleet import Fleet

    cluster = Cluster(Fleet("S", now=NOW).all_objects(), clock=lambda: NOW)
    model = OverviewModel(store_labels(cluster.store))
    snap = cluster.store.snapshot()
    frame = check(model, cluster, Diagnosis(snap, run(snap), cluster.store.version))
    assert len(frame.tables["nodes"]) == 40
    rng = random.Random(1)
    for _ in range(10):
        cluster.mutate(rng, 50)
        before = {r.key: r for r in frame.tables["nodes"]}
        frame = check(model, cluster, frame.diagnosis)
        reused = sum(before.get(r.key) is r for r in frame.tables["nodes"])
        assert reused >= len(frame.tables["nodes"]) // 2  # unchanged rows are the same objects


def test_ages_follow_the_clock_and_relists_rebuild() -> None:
    sc = load_scenario("incident")
    clock = [sc.reference_time or NOW]
    cluster = Cluster(sc.all_objects(), clock=lambda: clock[0])
    model = OverviewModel(store_labels(cluster.store))
    check(model, cluster, None)
    for seconds in (0.5, 1, 30, 90, 3600, 86400 * 3):
        clock[0] += timedelta(seconds=seconds)
        check(model, cluster, None)
    # A relist replaces a whole source: the model reloads it.
    pods = list(cluster.objs["pods"].values())[::2]
    cluster.objs["pods"] = {(o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in pods}
    cluster.store.replace("pods", [ingest.record("pods", o) for o in pods])
    check(model, cluster, None)
