"""`:pods`: every GPU pod, running and pending, with its own state; Ctrl+Z (k9s: faults) or `:pending`
keeps only the pods that are not running ready."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable

from diagnostics.model import ObjectRef
from gputui.output import rows
from gputui.output.sanitize import safe_text
from gputui.tui import badges, cells
from gputui.tui.cells import TableRow
from gputui.tui.filtering import RowFilter
from gputui.tui.screens.base import DataScreen
from gputui.tui.table_view import Sort, sort_rows
from gputui.tui.widgets.filter_bar import FilterBar
from gputui.tui.widgets.keyed_table import KeyedTable

POD_COLUMNS = ("NAMESPACE/NAME", "STATUS", "GPUS", "NODE", "RESTARTS", "AGE", "WHY")


class PodsScreen(DataScreen):
    BINDINGS = [
        Binding("slash", "filter", "Filter", show=True),
        Binding("ctrl+z", "toggle_pending", "Pending only", show=True),
        Binding("N,shift+n", "sort('name')", "Sort name", show=False),
        Binding("A,shift+a", "sort('age')", "Sort age", show=False),
        Binding("S,shift+s", "sort('status')", "Sort status", show=False),
    ]

    def __init__(self, pending_only: bool = False) -> None:
        super().__init__(id="pods-screen")
        self.pending_only = pending_only
        self.row_filter = RowFilter()
        self.sort = Sort()

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="pods-body"):
            yield KeyedTable(POD_COLUMNS, id="gpu-pods", empty="(none)")
        yield FilterBar(id="filter")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#gpu-pods", KeyedTable).focus()

    def render_data(self) -> None:
        app = self.gapp
        snap, report = app.detail_snapshot, app.report
        if snap is None:
            return
        by_subject = cells.findings_by_subject(report)
        explained = rows.explained_by(report)
        now = snap.taken_at
        out: list[TableRow] = []
        total = 0
        ns = app.namespace
        for p in snap.pods:
            if not p.wants_accelerator or p.terminal or (ns and p.namespace != ns):
                continue
            total += 1
            pending = p.phase == "Pending" or not p.node_name
            if self.pending_only and not pending:
                continue
            mine = by_subject.get(p.ref, [])
            restarts = sum(c.restart_count for c in p.containers)
            why = explained.get(p.ref, "")
            r = TableRow(f"{p.namespace}/{p.name}", p.ref, (
                safe_text(f"{p.namespace}/{p.name}"), badges.badge(mine, p), Text(rows.gpus_text(p.gpus)),
                safe_text(p.node_name or "-"), Text(str(restarts), style="yellow" if restarts else ""),
                Text(rows.age(now, p.meta.created)), safe_text(why, "yellow" if why else "")))
            if self.row_filter.active and not self.row_filter.matches(r.cells, p.meta.labels):
                continue
            out.append(r)
        out.sort(key=lambda r: (-_severity(r), r.key))
        if self.sort.by:
            out = sort_rows(out, POD_COLUMNS, self.sort)
        table = self.query_one("#gpu-pods", KeyedTable)
        table.sync(out)
        what = "Pending GPU pods" if self.pending_only else "GPU pods (running and pending)"
        if ns:
            what += f" in {ns}"
        from gputui.tui.screens.overview import unseen

        blind = unseen(snap, "pods")
        table.border_title = Text.assemble(
            (f"{what} (not seen: {blind})", "bold yellow") if blind else
            f"{what} ({len(out)} of {total})" if len(out) != total else f"{what} ({total})",
            (self.sort.label(), "dim"),
            ("  Ctrl+Z: all" if self.pending_only else "  Ctrl+Z: pending only", "dim"))

    def selected_ref(self) -> ObjectRef | None:
        return self.query_one("#gpu-pods", KeyedTable).selected_ref

    @on(DataTable.RowSelected, "#gpu-pods")
    def _open(self, event: DataTable.RowSelected) -> None:
        event.stop()
        ref = self.selected_ref()
        if ref is not None:
            self.gapp.open_ref(ref)

    def action_toggle_pending(self) -> None:
        self.pending_only = not self.pending_only
        self.refresh_data()

    def action_sort(self, by: str) -> None:
        self.sort = self.sort.next(by)
        self.refresh_data()

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    @on(FilterBar.FilterChanged)
    def _filter_changed(self, event: FilterBar.FilterChanged) -> None:
        self.row_filter = RowFilter.parse(event.text)
        self.refresh_data()

    @on(FilterBar.FilterDone)
    def _filter_done(self) -> None:
        self.query_one("#gpu-pods", KeyedTable).focus()

    def action_debug(self) -> None:
        ref = self.selected_ref()
        snap = self.gapp.detail_snapshot
        pod = snap.index.pod.get((ref.namespace or "", ref.name)) if ref is not None and snap is not None else None
        if pod is None or not pod.node_name:
            self.notify("Select a pod that runs on a node first.", severity="warning")
            return
        self.gapp.debug_node(pod.node_name)


def _severity(r: TableRow) -> int:
    """Bad first: the STATUS badge's mark (✗ before ! before the rest)."""
    mark = r.cells[1].plain[:1]
    return {"✗": 3, "?": 2, "!": 1}.get(mark, 0)
