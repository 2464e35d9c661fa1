"""Object details: key fields, findings, related objects (navigable), conditions and recent events.

One base screen; the per-kind screens below only add their keys. What to show for each kind lives
in gputui.tui.objects (pure), so this module is layout and navigation only.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from diagnostics.model import Finding, ObjectRef
from gputui.output.sanitize import safe_text, visible
from gputui.tui import badges, cells, objects
from gputui.tui.cells import TableRow
from gputui.tui.screens.base import DataScreen
from gputui.tui.widgets.keyed_table import KeyedTable

FIELD_LIMIT = 1000
"""Characters of one field or message shown on a detail page (`y` shows the whole object)."""
RELATED_COLUMNS = ("OBJECT", "RELATION", "HEALTH")
CONDITION_COLUMNS = ("TYPE", "STATUS", "REASON", "AGE", "MESSAGE")
EVENT_COLUMNS = ("TYPE", "REASON", "COUNT", "LAST SEEN", "FROM", "MESSAGE")


def fields_table(fields: list[tuple[str, str]]) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold dim", no_wrap=True)
    grid.add_column(overflow="fold")
    for label, value in fields:
        grid.add_row(label, safe_text(value, limit=FIELD_LIMIT))  # a str would be read as Rich markup
    return grid


class DetailScreen(DataScreen):
    """Detail of one object; follows it across snapshots and says so when it disappears."""

    KIND = ""

    def __init__(self, ref: ObjectRef) -> None:
        super().__init__()
        self.ref = ref
        self._findings: dict[str, Finding] = {}
        self.missing = False
        """The object is not in the cache: the header says so and no debug pod is offered."""

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="detail-body"):
            yield Static("", id="detail-head")
            yield Static("", id="fields")
            yield KeyedTable(cells.FINDING_COLUMNS, id="detail-findings", classes="detail-table",
                             empty="(none)")
            yield KeyedTable(RELATED_COLUMNS, id="related", classes="detail-table", empty="(none)")
            yield KeyedTable(CONDITION_COLUMNS, id="conditions", classes="detail-table", empty="(none)")
            yield KeyedTable(EVENT_COLUMNS, id="events", classes="detail-table", empty="(none)")

    def on_mount(self) -> None:
        super().on_mount()
        has_findings = self.query_one("#detail-findings", KeyedTable).row_count_shown > 0
        self.query_one("#detail-findings" if has_findings else "#related", KeyedTable).focus()

    def render_data(self) -> None:
        app = self.gapp
        snap, report = app.detail_snapshot, app.report
        assert snap is not None
        rec = objects.find(snap, self.ref)
        mine = report.for_subject(self.ref) if report is not None else []
        head = Text()
        head.append(f"{self.ref.kind} ", style="bold cyan")
        head.append(visible(f"{self.ref.namespace}/{self.ref.name}" if self.ref.namespace else self.ref.name,
                            limit=300), style="bold")
        head.append("  ")
        head.append_text(badges.badge(mine, rec, missing=rec is None))
        if rec is None:
            head.append(f"\nNo {self.ref.kind} named {visible(self.ref.name, limit=120)} in the cache: "
                        "deleted, never existed, or its source is forbidden / not installed (see the status line).",
                        style="yellow")
            near = objects.similar_names(snap, self.ref)
            if near:
                head.append(f"\nDid you mean: {', '.join(visible(n, limit=120) for n in near)}?", style="yellow")
        self.missing = rec is None
        self.query_one("#detail-head", Static).update(head)
        if rec is not None:
            self.query_one("#fields", Static).update(fields_table(objects.key_fields(snap, self.ref, rec)))

        self._findings = dict(zip(cells.finding_keys(mine), mine))
        ftable = self.query_one("#detail-findings", KeyedTable)
        ftable.sync([TableRow(k, f.subject, cells.finding_cells(f)) for k, f in self._findings.items()])
        ftable.border_title = f"Findings ({len(mine)})"

        by_subject = cells.findings_by_subject(report)
        rel = objects.related_objects(snap, self.ref, report)
        rtable = self.query_one("#related", KeyedTable)
        rtable.sync([TableRow(str(r), r, (safe_text(r, style="bold" if r.kind != "Pod" else ""),
                                          safe_text(how, style="dim"),
                                          badges.badge(by_subject.get(r, []), objects.find(snap, r))))
                     for r, how in rel])
        rtable.border_title = f"Related ({len(rel)}) · ⏎ opens"

        if rec is not None:
            conds = objects.condition_rows(snap, rec)
            ctable = self.query_one("#conditions", KeyedTable)
            ctable.sync([TableRow(k, None, (safe_text(t), safe_text(st, style="green" if st == "True" else "bold red"
                                                                     if st == "False" else "yellow"),
                                            safe_text(reason), Text(age), safe_text(msg, limit=FIELD_LIMIT)))
                         for k, (t, st, reason, age, msg) in conds])
            ctable.border_title = f"Conditions ({len(conds)})"
        evs = objects.event_rows(snap, self.ref)
        etable = self.query_one("#events", KeyedTable)
        etable.sync([TableRow(k, None, (safe_text(v[0], style="yellow" if v[0] == "Warning" else "dim"),
                                        *(safe_text(x, limit=FIELD_LIMIT) for x in v[1:]))) for k, v in evs])
        etable.border_title = f"Recent events ({len(evs)})"

    @on(DataTable.RowSelected, "#related")
    def _open_related(self, event: DataTable.RowSelected) -> None:
        event.stop()
        table = event.data_table
        assert isinstance(table, KeyedTable)
        ref = table.ref_for(event.row_key.value)
        if ref is not None:
            self.gapp.open_ref(ref)

    @on(DataTable.RowSelected, "#detail-findings")
    def _open_finding(self, event: DataTable.RowSelected) -> None:
        event.stop()
        finding = self._findings.get(event.row_key.value or "")
        if finding is not None:
            self.gapp.open_finding(finding)

    @on(DataTable.RowSelected, "#conditions, #events")
    def _ignore(self, event: DataTable.RowSelected) -> None:
        event.stop()

    def selected_ref(self) -> ObjectRef | None:
        """`y` shows this object's YAML unless a related object is under the cursor."""
        focused = self.focused
        if isinstance(focused, KeyedTable) and focused.id == "related" and focused.selected_ref is not None:
            return focused.selected_ref
        return self.ref

    def node_name(self) -> str | None:
        snap = self.gapp.detail_snapshot
        if snap is None:
            return None
        from diagnostics.relations import chain

        return next((r.name for r in chain(snap, self.ref) if r.kind == "Node"), None)

    def action_debug(self) -> None:
        if self.missing:
            self.notify(f"{self.ref} is not in the cache: nothing to debug.", severity="warning")
            return
        node = self.node_name()
        if node is None:
            self.notify(f"No node for {self.ref} yet: nothing to debug.", severity="warning")
            return
        self.gapp.debug_node(node)


class NodeScreen(DetailScreen):
    KIND = "Node"


class PodScreen(DetailScreen):
    KIND = "Pod"


class NodeClaimScreen(DetailScreen):
    KIND = "NodeClaim"


class NodePoolScreen(DetailScreen):
    KIND = "NodePool"


class EC2NodeClassScreen(DetailScreen):
    KIND = "EC2NodeClass"


DETAIL_SCREENS: dict[str, type[DetailScreen]] = {
    cls.KIND: cls for cls in (NodeScreen, PodScreen, NodeClaimScreen, NodePoolScreen, EC2NodeClassScreen)
}


def detail_screen(ref: ObjectRef) -> DetailScreen:
    return DETAIL_SCREENS.get(ref.kind, DetailScreen)(ref)
