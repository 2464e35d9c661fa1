"""`:findings`: findings grouped by severity, then the checklist (passed / failed / skipped + why)."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable

from diagnostics.model import CheckStatus, Finding, ObjectRef
from gputui.tui import cells, honesty
from gputui.tui.filtering import RowFilter
from gputui.tui.layout import allocate
from gputui.tui.screens.base import DataScreen
from gputui.tui.widgets.filter_bar import FilterBar
from gputui.tui.widgets.keyed_table import KeyedTable, set_height


class FindingsScreen(DataScreen):
    BINDINGS = [Binding("slash", "filter", "Filter", show=True)]
    ALLOW_IN_MAXIMIZED_VIEW = "Header, StatusLine, FilterBar, Footer, JumpBar"
    ESCAPE_TO_MINIMIZE = False

    def __init__(self) -> None:
        super().__init__(id="findings-screen")
        self.row_filter = RowFilter()
        self._findings: dict[str, Finding] = {}

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="findings-body"):
            yield KeyedTable(cells.FINDING_COLUMNS, id="findings-list", empty="(none)")
            yield KeyedTable(cells.CHECK_COLUMNS, id="checklist", empty="(none)")
        yield FilterBar(id="filter")

    def on_mount(self) -> None:
        super().on_mount()
        table = self.query_one("#findings-list", KeyedTable)
        table.focus()
        if table.row_count > 1 and table.keys()[0].startswith("group|"):
            table.move_cursor(row=1, animate=False)  # the worst finding, not its group header

    def render_data(self) -> None:
        report = self.gapp.report
        if report is None:
            return
        f = self.row_filter
        findings = [x for x in report.findings
                    if not f.active or f.matches(cells.finding_cells(x))]
        self._findings = dict(zip(cells.finding_keys(findings), findings))
        flist = self.query_one("#findings-list", KeyedTable)
        flist.sync(cells.grouped_finding_rows(findings))
        summary = honesty.findings_summary(report, self.gapp.report_snapshot)
        if f.active:
            summary = Text.assemble((f"filter shows {len(findings)} of {len(report.findings)} · ", "bold yellow"),
                                    summary)
        flist.border_title = Text.assemble(summary, ("  (⏎ evidence and fix)", "dim"))
        checks = [r for r in cells.check_rows(report) if not f.active or f.matches(r.cells)]
        table = self.query_one("#checklist", KeyedTable)
        table.sync(checks)
        counts = {s: sum(1 for r in report.results if r.status is s) for s in CheckStatus}
        table.border_title = (f"Checklist: {len(report.results)} checks · {counts[CheckStatus.FAILED]} failed · "
                              f"{counts[CheckStatus.PASSED]} passed · {counts[CheckStatus.SKIPPED]} skipped"
                              + (f" · {counts[CheckStatus.ERRORED]} errored" if counts[CheckStatus.ERRORED] else ""))
        self._relayout()
        self.call_after_refresh(self._relayout)

    def _relayout(self) -> None:
        if self.maximized is not None:
            self.maximized.styles.height = "1fr"
            return
        body = self.query_one("#findings-body")
        total = body.size.height or max(0, self.size.height - 3)
        tables = [self.query_one(tid, KeyedTable) for tid in ("#findings-list", "#checklist")]
        for table, h in zip(tables, allocate([t.lines_wanted for t in tables], total, minimum=4)):
            set_height(table, h)

    def on_resize(self) -> None:
        self.call_after_refresh(self._relayout)

    def watch_maximized(self) -> None:
        if self.is_mounted:
            self._relayout()

    @on(DataTable.RowSelected, "#findings-list")
    def _open(self, event: DataTable.RowSelected) -> None:
        """Enter on a finding opens it; on a severity header, the group's first finding."""
        event.stop()
        table = event.data_table
        assert isinstance(table, KeyedTable)
        keys = table.keys()
        key = event.row_key.value or ""
        if key.startswith("group|") and key in keys:
            following = keys[keys.index(key) + 1:]
            key = following[0] if following else ""
        finding = self._findings.get(key)
        if finding is not None:
            self.gapp.open_finding(finding)

    @on(DataTable.RowSelected, "#checklist")
    def _explain(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value or ""
        code = key.split("|", 1)[1] if "|" in key else ""
        report = self.gapp.report
        result = next((r for r in report.results if r.code == code), None) if report else None
        if result is not None and result.findings:
            self.gapp.open_finding(result.findings[0])
        elif result is not None:
            self.gapp.explain_check(result.check)

    def selected_ref(self) -> ObjectRef | None:
        return self.query_one("#findings-list", KeyedTable).selected_ref

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    @on(FilterBar.FilterChanged)
    def _filter_changed(self, event: FilterBar.FilterChanged) -> None:
        self.row_filter = RowFilter.parse(event.text)
        self.refresh_data()

    @on(FilterBar.FilterDone)
    def _filter_done(self) -> None:
        self.query_one("#findings-list", KeyedTable).focus()
