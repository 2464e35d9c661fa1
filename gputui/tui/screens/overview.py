"""The first screen: findings, GPU nodes, pending GPU pods, NodeClaims and NodePools, live."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable

from diagnostics.model import Finding, ObjectRef, Severity
from gputui import rows
from gputui.tui import cells
from gputui.tui.cells import TableRow
from gputui.tui.filtering import RowFilter
from gputui.tui.layout import allocate
from gputui.tui.objects import labels_of
from gputui.tui.screens.base import DataScreen
from gputui.tui.widgets.filter_bar import FilterBar
from gputui.tui.widgets.keyed_table import KeyedTable, set_height

# (widget id = `:` view name, title, columns), top to bottom: what explains a stuck pod comes first.
TABLES = (
    ("findings", "Findings", cells.FINDING_COLUMNS),
    ("nodes", "GPU nodes", cells.NODE_COLUMNS),
    ("pods", "Pending GPU pods", cells.PENDING_COLUMNS),
    ("nodeclaims", "NodeClaims", cells.CLAIM_COLUMNS),
    ("nodepools", "NodePools", cells.POOL_COLUMNS),
)


def worst_first(data: list[rows.Row], involved: dict[ObjectRef, Severity] | None = None) -> list[rows.Row]:
    """Rows with findings first (worst first), so a broken node is on screen even at 80x24."""
    return sorted(data, key=lambda r: -max(r.severity, (involved or {}).get(r.ref, Severity.OK)))


def claims_first(data: list[rows.Row], involved: dict[ObjectRef, Severity]) -> list[rows.Row]:
    """NodeClaims named by findings first, then those not yet ready (mid-launch or failing)."""
    stage = rows.CLAIM_COLUMNS.index("STAGE")
    return sorted(data, key=lambda r: (-max(r.severity, involved.get(r.ref, Severity.OK)),
                                       r.cells[stage] in ("GPU ready", "Ready")))


class OverviewScreen(DataScreen):
    """Every table is keyed; a new snapshot updates changed cells only (see KeyedTable.sync)."""

    BINDINGS = [
        Binding("slash", "filter", "Filter", show=True),
        Binding("d", "debug", "Debug", show=True),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]
    ALLOW_IN_MAXIMIZED_VIEW = "Header, StatusLine, FilterBar, Footer"

    def __init__(self) -> None:
        super().__init__(id="overview")
        self.row_filter = RowFilter()
        self._findings: dict[str, Finding] = {}
        self._last_table = "findings"

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="overview-body"):
            for tid, _title, columns in TABLES:
                yield KeyedTable(columns, id=tid, classes="overview-table", show_header=tid != "findings",
                                 empty="none" if tid == "findings" else "(none)")
        yield FilterBar(id="filter")

    def on_mount(self) -> None:
        for tid, title, _ in TABLES:
            self.query_one(f"#{tid}", KeyedTable).border_title = title
        super().on_mount()
        self.query_one("#findings", KeyedTable).focus()

    # --- data ---
    def render_data(self) -> None:
        app = self.gapp
        snap, report = app.snapshot, app.report
        assert snap is not None
        by_subject = cells.findings_by_subject(report)
        f = self.row_filter

        def keep(r: TableRow) -> bool:
            return not f.active or f.matches(r.cells, labels_of(snap, r.ref))

        findings = report.findings if report is not None else []
        self._findings = dict(zip(cells.finding_keys(findings), findings))
        data: dict[str, list[TableRow]] = {
            "findings": [TableRow(k, x.subject, cells.finding_cells(x)) for k, x in self._findings.items()],
            "nodes": [TableRow(r.key, r.ref, cells.node_cells(r, by_subject.get(r.ref, [])))
                      for r in worst_first(rows.node_rows(snap, report))],
            "pods": [TableRow(r.key, r.ref, cells.pending_cells(r)) for r in rows.pending_rows(snap, report)],
            "nodeclaims": [TableRow(r.key, r.ref, cells.claim_cells(r))
                           for r in claims_first(rows.claim_rows(snap, report), cells.involvement(report))],
            "nodepools": [TableRow(r.key, r.ref, cells.pool_cells(r)) for r in rows.pool_rows(snap, report)],
        }
        for tid, title, _ in TABLES:
            table = self.query_one(f"#{tid}", KeyedTable)
            all_rows = data[tid]
            shown = [r for r in all_rows if keep(r)]
            table.sync(shown)
            count = f"{len(shown)} of {len(all_rows)}" if f.active else str(len(all_rows))
            if tid == "findings":
                title_text = Text.assemble(("Findings", "bold"), " · ", cells.findings_summary(report))
                if findings:
                    title_text.append("  (⏎ evidence · f checklist)", style="dim")
                table.border_title = title_text
            else:
                table.border_title = f"{title} ({count})"
        self._relayout()
        self.call_after_refresh(self._relayout)

    def _relayout(self) -> None:
        """Give each table the height its rows need, within the screen (none when one is maximized)."""
        body = self.query_one("#overview-body")
        if self.maximized is not None:
            self.maximized.styles.height = "1fr"
            return
        ids = [tid for tid, _t, _c in TABLES]
        total = body.size.height or max(0, self.size.height - 3)
        tables = [self.query_one(f"#{tid}", KeyedTable) for tid in ids]
        heights = allocate([t.lines_wanted for t in tables], total)
        for table, h in zip(tables, heights):
            set_height(table, h)

    def on_resize(self) -> None:
        self.call_after_refresh(self._relayout)

    def watch_maximized(self) -> None:
        if self.is_mounted:
            self._relayout()

    # --- navigation ---
    def show_table(self, tid: str) -> None:
        """`:nodes` and friends: focus that table and let it fill the screen (Esc restores)."""
        table = self.query_one(f"#{tid}", KeyedTable)
        table.focus()
        if self.maximized is not None:
            self.minimize()
        self.maximize(table, container=False)

    @on(DataTable.RowSelected)
    def _open_row(self, event: DataTable.RowSelected) -> None:
        event.stop()
        table = event.data_table
        assert isinstance(table, KeyedTable)
        key = event.row_key.value
        if table.id == "findings":
            finding = self._findings.get(key or "")
            if finding is not None:
                self.gapp.open_finding(finding)
            return
        ref = table.ref_for(key)
        if ref is not None:
            self.gapp.open_ref(ref)

    def on_descendant_focus(self) -> None:
        focused = self.focused
        if isinstance(focused, KeyedTable) and focused.id:
            self._last_table = focused.id

    def focused_table(self) -> KeyedTable:
        return self.query_one(f"#{self._last_table}", KeyedTable)

    def selected_ref(self) -> ObjectRef | None:
        return self.focused_table().selected_ref

    def selected_node(self) -> str | None:
        """The node under the cursor, or the node of the selected NodeClaim/pod/finding."""
        ref = self.selected_ref()
        snap = self.gapp.snapshot
        if ref is None or snap is None:
            return None
        from gputui.related import chain

        return next((r.name for r in chain(snap, ref) if r.kind == "Node"), None)

    # --- actions ---
    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    def action_clear_filter(self) -> None:
        bar = self.query_one(FilterBar)
        if self.maximized is not None:
            self.minimize()
        elif bar.value:
            bar.action_clear_filter()

    def action_debug(self) -> None:
        node = self.selected_node()
        if node is None:
            self.notify("Select a GPU node (or an object on one) first.", severity="warning")
            return
        self.gapp.debug_node(node)

    @on(FilterBar.FilterChanged)
    def _filter_changed(self, event: FilterBar.FilterChanged) -> None:
        self.row_filter = RowFilter.parse(event.text)
        self.refresh_data()

    @on(FilterBar.FilterDone)
    def _filter_done(self) -> None:
        self.focused_table().focus()

    def action_back(self) -> None:
        self.action_clear_filter()
