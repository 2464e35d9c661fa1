"""The overview's table rows, kept current from the Store's change journal (pure: no Textual widgets).

A watch burst changes a few objects per frame, but rebuilding the tables from a snapshot costs
O(cluster) every time (an Index over every pod, then every row). This model mirrors only what the
rows read (GPUs held per node, NodeClaims per node and provider ID, scheduling events per pod,
nodes per pool), marks the rows whose inputs changed, rebuilds just those with `gputui.output.rows`, and hands back
the other row objects unchanged, so the table widget skips them by identity. The rows equal what
`gputui.output.rows` builds from the same snapshot and report (tests compare them); the one difference
is that the ages of rows that did not change are brought up to date once a second, not per frame.
Runs in one worker thread at a time; the UI thread only reads the frames it returns.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rich.text import Text

from diagnostics.model import Finding, ObjectRef, Report, Severity
from diagnostics.records import Event, Node, NodeClaim, NodePool, Pod
from diagnostics.snapshot import Snapshot, is_gpu_node
from gputui.output import rows
from gputui.collect.store import Changes
from gputui.tui import cells, early, honesty
from gputui.tui.cells import TableRow

Key = tuple[str | None, str]
TABLE_IDS = ("findings", "nodes", "pods", "nodeclaims", "nodepools")
AGE_SWEEP_S = 1.0
"""Seconds between bringing every row's age (and budget window) up to date."""
_AGE = {"nodes": rows.NODE_COLUMNS.index("AGE"), "pods": rows.PENDING_COLUMNS.index("AGE"),
        "nodeclaims": rows.CLAIM_COLUMNS.index("AGE")}
_STAGE = rows.CLAIM_COLUMNS.index("STAGE")
_USED = rows.NODE_COLUMNS.index("USED")
_NO_FINDINGS: tuple[Finding, ...] = ()


@dataclass(frozen=True, slots=True, repr=False)  # a snapshot's repr is megabytes
class Diagnosis:
    """One diagnostics run: the snapshot it read (cut at store `version`) and its report."""

    snapshot: Snapshot
    report: Report | None
    """None when the checks raised (`error` says why): the tables keep the last good findings."""
    version: int
    forced: bool = False
    error: str = ""


@dataclass(frozen=True, slots=True, repr=False)
class Frame:
    """What the overview shows: every table's rows in order, at store `version`."""

    version: int
    snapshot: Snapshot
    """Cut with the rows: the status line reads its sources."""
    diagnosis: Diagnosis | None
    """The newest diagnostics run (its report may be older than the rows: it runs on its own cadence)."""
    report: Report | None
    """The last good report the rows' health and order come from."""
    tables: Mapping[str, Sequence[TableRow]]
    findings: Mapping[str, Finding]
    """Findings by row key, for opening one."""
    findings_title: Text
    labels: Callable[[ObjectRef | None], Mapping[str, str]]
    """An object's labels, for the `/` filter's key=value terms."""
    provisional: bool = False
    """Only the pending pods are read so far: the GPUs in use per node are not known (shown as `?`)."""


class OverviewModel:
    """Feed it `Changes` (live) or a snapshot (static) with the newest diagnosis; get a Frame."""

    def __init__(self, labels: Callable[[ObjectRef | None], Mapping[str, str]]) -> None:
        self.version = -1
        """The store version the last frame showed (what to ask `Store.changes` from)."""
        self._labels = labels
        self._seq = itertools.count()
        # Mirrors of what the rows read. Sequence numbers follow the Store's dict order (a modified
        # record keeps its place, a re-added one goes last), which the Index's ties depend on.
        self._nodes: dict[str, Node] = {}
        self._nodes_by_provider: dict[str, set[str]] = {}
        self._pool_nodes: Counter[str] = Counter()
        self._claims: dict[str, tuple[int, NodeClaim]] = {}
        self._claims_on_node: dict[str, set[str]] = {}
        self._claims_by_provider: dict[str, set[str]] = {}
        self._pools: dict[str, NodePool] = {}
        self._gpus_on_node: dict[str, dict[Key, float]] = {}
        """Accelerators held by each node's non-terminal pods (pods holding none are left out)."""
        self._pod_node: dict[Key, str] = {}
        self._pending: dict[Key, Pod] = {}
        self._pod_events: dict[Key, dict[Key, tuple[int, Event]]] = {}
        self._event_pod: dict[Key, tuple[Key, int]] = {}
        # Rows: the plain row (for comparisons and order), its styled row, and what must be rebuilt.
        self._plain: dict[str, dict[str, rows.Row]] = {t: {} for t in TABLE_IDS}
        self._rows: dict[str, dict[str, TableRow]] = {t: {} for t in TABLE_IDS}
        self._sort: dict[str, dict[str, Any]] = {t: {} for t in TABLE_IDS}
        self._dirty: dict[str, set[str]] = {t: set() for t in TABLE_IDS}
        self._ordered: dict[str, list[TableRow]] = {t: [] for t in TABLE_IDS}
        self._pos: dict[str, dict[str, int]] = {t: {} for t in TABLE_IDS}
        """Each row's index in `_ordered` (valid until the table is sorted again)."""
        self._resort: set[str] = set()
        """Tables whose order may have changed: rows added, removed, or with a new sort key."""
        self._swept: datetime | None = None
        self._node_inputs: dict[str, tuple[Any, ...]] = {}
        """What each node row was built from besides the GPUs in use (node, claim, severity,
        findings, age): when only those GPUs change, only that cell is rebuilt."""
        # Report-derived lookups.
        self._diagnosis: Diagnosis | None = None
        self._report: Report | None = None
        self._worst: dict[ObjectRef, Severity] = {}
        self._by_subject: dict[ObjectRef, list[Finding]] = {}
        self._explained: dict[ObjectRef, str] = {}
        self._involved: dict[ObjectRef, Severity] = {}
        self._findings: dict[str, Finding] = {}
        self._findings_title = findings_title(None)
        self._provisional = False
        """Only the pending pods are read (gputui.tui.early): the USED cells say `?`, not a number."""

    # --- input ---
    def update(self, changes: Changes, diagnosis: Diagnosis | None) -> Frame:
        snap = changes.snapshot
        provisional = early.pending_only(snap)
        if provisional != self._provisional:
            self._provisional = provisional
            self._dirty["nodes"].update(self._nodes)
        for source in ("nodes", "nodeclaims", "nodepools", "pods", "events"):
            if source in changes.full:
                self._reload(source, getattr(snap, source))
            else:
                for key, rec in changes.records.get(source, {}).items():
                    self._apply(source, key, rec)
        if diagnosis is not self._diagnosis:
            self._set_diagnosis(diagnosis)
        now = snap.taken_at
        if self._swept is None or abs((now - self._swept).total_seconds()) >= AGE_SWEEP_S:
            self._sweep(now)
        self.version = changes.version
        return self._frame(changes.version, snap, now)

    def _reload(self, source: str, records: Iterable[Any]) -> None:
        """A relist (or the first frame): drop the source's mirror and apply its whole content."""
        if source == "nodes":
            for name in list(self._nodes):
                self._apply("nodes", (None, name), None)
        elif source == "nodeclaims":
            for name in list(self._claims):
                self._apply("nodeclaims", (None, name), None)
        elif source == "nodepools":
            for name in list(self._pools):
                self._apply("nodepools", (None, name), None)
        elif source == "pods":
            for key in list(self._pod_node) + list(self._pending):
                self._apply("pods", key, None)
        elif source == "events":
            for key in list(self._event_pod):
                self._apply("events", key, None)
        for rec in records:
            self._apply(source, (rec.meta.namespace, rec.meta.name), rec)

    def _apply(self, source: str, key: Key, rec: Any) -> None:
        getattr(self, f"_apply_{source}")(key, rec)

    def _apply_nodes(self, key: Key, n: Node | None) -> None:
        name = key[1]
        old = self._nodes.pop(name, None)
        if old is not None:
            if old.provider_id:
                self._nodes_by_provider.get(old.provider_id, set()).discard(name)
            if old.nodepool:
                self._pool_nodes[old.nodepool] -= 1
                self._dirty["nodepools"].add(old.nodepool)
        if n is not None:
            self._nodes[name] = n
            if n.provider_id:
                self._nodes_by_provider.setdefault(n.provider_id, set()).add(name)
            if n.nodepool:
                self._pool_nodes[n.nodepool] += 1
                self._dirty["nodepools"].add(n.nodepool)
        self._dirty["nodes"].add(name)

    def _apply_nodeclaims(self, key: Key, c: NodeClaim | None) -> None:
        name = key[1]
        old = self._claims.pop(name, None)
        if old is not None:
            self._index_claim(old[1], remove=True)
        if c is not None:
            self._claims[name] = (old[0] if old is not None else next(self._seq), c)
            self._index_claim(c)
        self._dirty["nodeclaims"].add(name)

    def _index_claim(self, c: NodeClaim, remove: bool = False) -> None:
        """(Un)index a claim by node name and provider ID, marking the nodes it may belong to."""
        for index, value in ((self._claims_on_node, c.node_name), (self._claims_by_provider, c.provider_id)):
            if not value:
                continue
            if remove:
                index.get(value, set()).discard(c.name)
            else:
                index.setdefault(value, set()).add(c.name)
        dirty = self._dirty["nodes"]
        if c.node_name:
            dirty.add(c.node_name)
        if c.provider_id:
            dirty.update(self._nodes_by_provider.get(c.provider_id, ()))

    def _apply_nodepools(self, key: Key, p: NodePool | None) -> None:
        name = key[1]
        if p is None:
            self._pools.pop(name, None)
        else:
            self._pools[name] = p
        self._dirty["nodepools"].add(name)

    def _apply_pods(self, key: Key, p: Pod | None) -> None:
        # A bound pod matters to its node's row only through the accelerators it holds: status
        # churn on a running pod (most of a busy cluster's watch traffic) leaves the row alone.
        node = self._pod_node.pop(key, None)
        held = self._gpus_on_node[node].pop(key, None) if node is not None else None
        if self._pending.pop(key, None) is not None:
            self._dirty["pods"].add(_pod_key(key))
        new_node, new_held = None, None
        if p is not None:
            if p.node_name:
                gpus = p.gpus
                if gpus and not p.terminal:
                    new_node, new_held = p.node_name, gpus
                    self._gpus_on_node.setdefault(new_node, {})[key] = gpus
                    self._pod_node[key] = new_node
            elif p.phase == "Pending" and not p.meta.deleting and p.wants_accelerator:
                self._pending[key] = p
                self._dirty["pods"].add(_pod_key(key))
        if (node, held) != (new_node, new_held):
            if node is not None:
                self._dirty["nodes"].add(node)
            if new_node is not None:
                self._dirty["nodes"].add(new_node)

    def _apply_events(self, key: Key, e: Event | None) -> None:
        old = self._event_pod.pop(key, None)
        if old is not None:
            pod = old[0]
            self._pod_events[pod].pop(key, None)
            self._dirty["pods"].add(_pod_key(pod))
        if e is None or e.involved_kind != "Pod" or e.reason not in rows.SCHEDULING_REASONS:
            return  # the only events a pending pod's row reads
        pod = (e.involved_namespace or None, e.involved_name)
        seq = old[1] if old is not None else next(self._seq)
        self._pod_events.setdefault(pod, {})[key] = (seq, e)
        self._event_pod[key] = (pod, seq)
        self._dirty["pods"].add(_pod_key(pod))

    def _set_diagnosis(self, diagnosis: Diagnosis | None) -> None:
        self._diagnosis = diagnosis
        report = diagnosis.report if diagnosis is not None else None
        if report is None or report is self._report:
            return  # a failed run keeps the last good findings
        self._report = report
        findings = report.findings
        read_by_rows = (rows.worst_by_subject(report), cells.findings_by_subject(report),
                        rows.explained_by(report), cells.involvement(report))
        for ref in _changed_keys(zip((self._worst, self._by_subject, self._explained, self._involved),
                                     read_by_rows)):
            self._mark(ref)  # only rows whose findings changed: a rebuilt row that moves re-sorts its table
        self._worst, self._by_subject, self._explained, self._involved = read_by_rows
        self._findings = dict(zip(cells.finding_keys(findings), findings))
        self._findings_title = findings_title(report, diagnosis.snapshot if diagnosis is not None else None)
        before = self._rows["findings"]
        after: dict[str, TableRow] = {}
        for k, f in self._findings.items():
            tr = TableRow(k, f.subject, cells.finding_cells(f))
            prev = before.get(k)
            after[k] = prev if prev is not None and prev.ref == tr.ref and _same_cells(prev, tr) else tr
        self._rows["findings"] = after  # unchanged findings keep their row object: the table skips them
        self._ordered["findings"] = list(after.values())

    def _mark(self, ref: ObjectRef) -> None:
        table = {"Node": "nodes", "NodeClaim": "nodeclaims", "NodePool": "nodepools"}.get(ref.kind)
        if table is not None:
            self._dirty[table].add(ref.name)
        elif ref.kind == "Pod":
            self._dirty["pods"].add(_pod_key((ref.namespace, ref.name)))

    def _sweep(self, now: datetime) -> None:
        """Mark rows whose age text moved, and every pool (scheduled budgets open and close)."""
        self._swept = now
        for name in self._plain["nodes"]:
            n = self._nodes.get(name)
            if n is not None and rows.age(now, n.meta.created) != self._plain["nodes"][name].cells[_AGE["nodes"]]:
                self._dirty["nodes"].add(name)
        for name, row in self._plain["nodeclaims"].items():
            c = self._claims.get(name)
            if c is not None and rows.age(now, c[1].meta.created) != row.cells[_AGE["nodeclaims"]]:
                self._dirty["nodeclaims"].add(name)
        for key, p in self._pending.items():
            pod_row = self._plain["pods"].get(_pod_key(key))
            if pod_row is not None and rows.age(now, p.meta.created) != pod_row.cells[_AGE["pods"]]:
                self._dirty["pods"].add(pod_row.key)
        self._dirty["nodepools"].update(self._pools)

    # --- rows ---
    def _claim_of(self, n: Node) -> NodeClaim | None:
        """Index.nodeclaim_by_node: the last claim (in store order) naming the node, else by provider ID."""
        names = self._claims_on_node.get(n.name)
        if not names and n.provider_id:
            names = self._claims_by_provider.get(n.provider_id)
        if not names:
            return None
        return max((self._claims[c] for c in names), key=lambda sc: sc[0])[1]

    def _build(self, table: str, key: str, now: datetime) -> tuple[rows.Row, TableRow, tuple[Any, ...]] | None:
        """The row for `key` now (None: no row) and its sort key, the overview's order: nodes worst
        first, then by name (a broken node is on screen even at 80x24); NodeClaims named by findings
        (as subject or affected) first, then those not yet ready (mid-launch or failing), then by
        pool and name; pending pods by namespace and name; pools by weight, then name."""
        if table == "nodes":
            n = self._nodes.get(key)
            if n is None:
                return None
            claim = self._claim_of(n)
            ref = n.ref
            sev = self._worst.get(ref)
            findings = self._by_subject.get(ref, _NO_FINDINGS)
            provisional = self._provisional
            inputs = (n, claim, sev, findings, rows.age(now, n.meta.created), provisional)
            used = sum(self._gpus_on_node.get(key, {}).values())
            old = self._rows["nodes"].get(key)
            if old is not None and self._node_inputs.get(key) == inputs:
                # Only the GPUs its pods hold moved (a burst of pods starting and finishing).
                prev = self._plain["nodes"][key]
                r = rows.Row(prev.key, prev.ref, (*prev.cells[:_USED], _used_text(used, provisional),
                                                  *prev.cells[_USED + 1:]), prev.severity)
                tr = TableRow(r.key, r.ref, cells.with_used(old.cells, r))
            elif is_gpu_node(n, claim):
                r = rows.node_row(n, claim, used, now, sev)
                tr = TableRow(r.key, r.ref, cells.node_cells(r, findings))
                if provisional:
                    r = rows.Row(r.key, r.ref, (*r.cells[:_USED], cells.UNKNOWN_USED, *r.cells[_USED + 1:]),
                                 r.severity)
                    styled = cells.node_cells(r, findings)
                    tr = TableRow(r.key, r.ref, (styled[0], cells.unconfirmed(styled[1]), *styled[2:]))
            else:
                return None
            self._node_inputs[key] = inputs
            return r, tr, (-r.severity, key)
        if table == "nodeclaims":
            sc = self._claims.get(key)
            if sc is None:
                return None
            c = sc[1]
            r = rows.claim_row(c, now, self._worst.get(c.ref))
            ready = r.cells[_STAGE] in ("GPU ready", "Ready")
            order = (-max(r.severity, self._involved.get(r.ref, Severity.OK)), ready, c.nodepool, c.name)
            return r, TableRow(r.key, r.ref, cells.claim_cells(r)), order
        if table == "pods":
            ns, _, name = key.partition("/")
            pk = (ns or None, name)
            p = self._pending.get(pk)
            if p is None:
                return None
            evs = self._pod_events.get(pk, {})
            events = [e for _s, e in sorted(evs.values(), key=lambda se: se[0])] if evs else []
            if len(events) > 1:
                events.sort(key=lambda e: e.last_seen or e.first_seen or now)
            r = rows.pending_row(p, events, now, self._explained, self._worst.get(p.ref))
            return r, TableRow(r.key, r.ref, cells.pending_cells(r)), (p.namespace, p.name)
        pool = self._pools.get(key)
        if pool is None:
            return None
        r = rows.pool_row(pool, self._pool_nodes.get(key, 0), now, self._worst.get(pool.ref))
        return r, TableRow(r.key, r.ref, cells.pool_cells(r)), (-pool.weight, pool.name)

    def _rebuild(self, table: str, now: datetime) -> list[str]:
        """Rebuild the dirty rows of one table; returns the keys whose row changed in place (a row
        added, removed or moving in the order marks the table for sorting instead)."""
        dirty = self._dirty[table]
        if not dirty:
            return []
        self._dirty[table] = set()
        plain, styled, sort = self._plain[table], self._rows[table], self._sort[table]
        changed = []
        for key in dirty:
            built = self._build(table, key, now)
            if built is None:
                self._node_inputs.pop(key, None)
                if plain.pop(key, None) is not None:
                    del styled[key], sort[key]
                    self._resort.add(table)
                continue
            r, tr, order = built
            old = styled.get(key)
            if old is not None and plain[key] == r and sort[key] == order and _same_cells(old, tr):
                continue
            if old is None or sort[key] != order:
                self._resort.add(table)
            else:
                changed.append(key)
            plain[key], styled[key], sort[key] = r, tr, order
        return changed

    def _frame(self, version: int, snap: Snapshot, now: datetime) -> Frame:
        for table in ("nodes", "pods", "nodeclaims", "nodepools"):
            changed = self._rebuild(table, now)
            styled = self._rows[table]
            if table in self._resort:
                self._resort.discard(table)
                keys = sorted(styled, key=self._sort[table].__getitem__)
                self._pos[table] = {k: i for i, k in enumerate(keys)}
                self._ordered[table] = [styled[k] for k in keys]
            elif changed:
                # Same order: patch a copy (the last frame's list is the UI's to read).
                ordered = list(self._ordered[table])
                pos = self._pos[table]
                for key in changed:
                    ordered[pos[key]] = styled[key]
                self._ordered[table] = ordered
        tables = {t: self._ordered[t] for t in TABLE_IDS}
        return Frame(version, snap, self._diagnosis, self._report, tables, self._findings, self._findings_title,
                     self._labels, self._provisional)


def findings_title(report: Report | None, snap: Snapshot | None = None) -> Text:
    """`Findings · 3 findings: 2 error · 1 warning  (⏎ evidence · f checklist)`; never an all-clear
    the sources behind `snap` (the diagnosed snapshot) could not back (gputui.tui.honesty)."""
    title = Text.assemble(("Findings", "bold"), " · ", honesty.findings_summary(report, snap))
    if report is not None and report.findings:
        title.append("  (⏎ evidence · f checklist)", style="dim")
    return title


def _used_text(used: float, provisional: bool) -> str:
    """A node's USED cell: what its pods hold, `?` while only the pending pods are read."""
    return cells.UNKNOWN_USED if provisional else rows.gpus_text(used)


def _pod_key(key: Key) -> str:
    return f"{key[0] or ''}/{key[1]}"


def _changed_keys(pairs: Iterable[tuple[Mapping[ObjectRef, Any], Mapping[ObjectRef, Any]]]) -> set[ObjectRef]:
    """The keys whose value differs between the old and the new map of each pair (or is in one
    only). Findings a run did not change are the same objects, so equal values are mostly `is`."""
    out: set[ObjectRef] = set()
    for old, new in pairs:
        for ref, value in new.items():
            was = old.get(ref, _ABSENT)
            if was is not value and was != value:
                out.add(ref)
        out.update(ref for ref in old if ref not in new)
    return out


_ABSENT = object()


def _same_cells(a: TableRow, b: TableRow) -> bool:
    return all(x.plain == y.plain and x.style == y.style and x.spans == y.spans for x, y in zip(a.cells, b.cells))


STORE_SOURCE = {"Pod": "pods", "Node": "nodes", "NodeClaim": "nodeclaims", "NodePool": "nodepools",
                "EC2NodeClass": "ec2nodeclasses"}


def store_labels(store: Any) -> Callable[[ObjectRef | None], Mapping[str, str]]:
    """Labels of an object as the live cache has it now (what `objects.labels_of` reads from a snapshot)."""
    def labels(ref: ObjectRef | None) -> Mapping[str, str]:
        source = STORE_SOURCE.get(ref.kind) if ref is not None else None
        if ref is None or source is None:
            return {}
        rec = store.get(source, ref.name, ref.namespace if source == "pods" else None)
        return rec.meta.labels if rec is not None else {}
    return labels
