"""The first screen: findings, GPU nodes, pending GPU pods, NodeClaims and NodePools, live."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.css.query import NoMatches
from textual.timer import Timer
from textual.widgets import DataTable

from diagnostics.model import Finding, ObjectRef
from diagnostics.snapshot import Snapshot
from gputui.tui import cells
from gputui.tui.cells import TableRow
from gputui.tui.filtering import RowFilter
from gputui.tui.layout import allocate
from gputui.tui.table_view import Sort, fit_widths, sort_rows
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


TABLE_SOURCE = {"findings": "", "nodes": "nodes", "pods": "pods", "nodeclaims": "nodeclaims",
                "nodepools": "nodepools"}
"""The source each table's rows come from."""
CATCH_UP_S = 0.5
"""A bundle has no frames: tables a key left behind catch up this long after the last key."""
PREWARM_AFTER = 0.2
"""Seconds after a frame before cells are rendered ahead of a maximize (a burst keeps deferring it)."""
KEY_SETTLE = 0.15
"""Seconds after a key before rendering ahead resumes (the key's own repaints come first)."""
PREWARM_SLICE = 40
"""Cells rendered ahead per step (a few ms): the longest a key waits for this work."""


def unseen(snap: Snapshot, source: str) -> str:
    """`pods forbidden` when a table's source could not be read (stale data is still shown)."""
    st = snap.sources.get(source) if source else None
    if st is None or st.state.usable:
        return ""
    return f"{source} {st.state.value}"


class OverviewScreen(DataScreen):
    """Every table is keyed; a new frame updates changed cells only (see KeyedTable.sync)."""

    FOLLOWS_FRAMES = True

    BINDINGS = [
        Binding("slash", "filter", "Filter", show=True),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("ctrl+w", "wide", "Wide", show=True),
        Binding("N,shift+n", "sort('name')", "Sort name", show=False),
        Binding("A,shift+a", "sort('age')", "Sort age", show=False),
        Binding("S,shift+s", "sort('status')", "Sort status", show=False),
    ]
    ALLOW_IN_MAXIMIZED_VIEW = "Header, StatusLine, FilterBar, Footer, JumpBar"
    ESCAPE_TO_MINIMIZE = False
    """Esc is ours: it clears the filter first, then leaves the maximized table (k9s's order)."""

    def __init__(self) -> None:
        super().__init__(id="overview")
        self.row_filter = RowFilter()
        self._findings: Mapping[str, Finding] = {}
        self._last_table = "findings"
        self._titles: dict[str, str | Text] = {}
        """The border title last set on each table: setting one, even to the same text, repaints it."""
        self._matches: dict[str, dict[str, tuple[TableRow, bool]]] = {}
        """Per table, per row key: the row last tested against the filter and the verdict."""
        self.sorts: dict[str, Sort] = {}
        """Per table: the user's sort (Shift+N/A/S), else gputui's worst-first order."""
        self._fitted_for: object = None
        """The diagnosis the columns were last measured for (see KeyedTable.refit)."""
        self.wide = False
        """Ctrl+W: every column at full width (scroll sideways), as k9s's wide toggle."""
        self._stale: set[str] = set()
        """Tables not brought up to date with the filter, sort or frame (hidden, or not focused at a key)."""
        self._catch_up: Timer | None = None
        self._prewarm_timer: Timer | None = None
        self._done: dict[str, tuple[Sequence[TableRow], tuple[object, ...], int]] = {}
        """Per table: the frame's row list last synced, with the filter, sort, wide mode, width and namespace
        it was shown with, and how many rows that showed (a frame that changed none of them costs nothing)."""
        self._fitted_rows: dict[str, Sequence[TableRow]] = {}
        """Per table: the row list its columns were last measured for (see KeyedTable.refit)."""

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="overview-body"):
            for tid, _title, columns in TABLES:
                yield KeyedTable(columns, id=tid, classes="overview-table", show_header=tid != "findings",
                                 empty="none" if tid == "findings" else "(none)")
        yield FilterBar(id="filter")

    def on_mount(self) -> None:
        for tid, title, _ in TABLES:
            self.query_one(f"#{tid}", KeyedTable).border_title = self._titles[tid] = title
        super().on_mount()
        self.query_one("#findings", KeyedTable).focus()

    # --- data ---
    def render_data(self) -> None:
        """Show the app's newest frame in every table on screen (only the maximized one when one is:
        the others catch up when shown). Rows come ready-made (unchanged ones as the same objects,
        which KeyedTable skips), so this costs O(rows changed), plus O(rows) with a filter on."""
        self._sync_tables(self._shown_tables())
        if self._prewarm_timer is not None:
            self._prewarm_timer.stop()
        self._prewarm_timer = self.set_timer(PREWARM_AFTER, self._prewarm)

    def _prewarm(self) -> None:
        """While nothing happens, render a screenful of each table's rows ahead of a maximize (see
        KeyedTable.prewarm), a slice at a time so that a key never waits for more than one slice."""
        self._prewarm_timer = None
        if not self.is_current or self.maximized is not None:
            return
        if time.monotonic() - self.gapp.last_key_at < KEY_SETTLE:
            self._prewarm_timer = self.set_timer(KEY_SETTLE, self._prewarm)
            return
        rows = self.size.height
        order = [self._last_table] + [t for t in TABLE_SOURCE if t != self._last_table]
        for tid in order:
            try:
                table = self.query_one(f"#{tid}", KeyedTable)
            except NoMatches:
                return  # the screen is being torn down
            if table.prewarm(rows, PREWARM_SLICE):
                self._prewarm_timer = self.set_timer(0.02, self._prewarm)
                return

    def _shown_tables(self) -> list[str]:
        maximized = self.maximized
        if maximized is not None and maximized.id in TABLE_SOURCE:
            return [maximized.id]
        return [tid for tid, _t, _c in TABLES]

    def _render_focused(self) -> None:
        """A key that changes what the tables show (filter, sort, wide): the focused table now, with
        its layout; the others are marked and catch up with the next frame (or when shown), so a
        keystroke costs one table, not five."""
        tid = self._last_table
        self._sync_tables([tid], relayout=False)
        self._stale.update(t for t in TABLE_SOURCE if t != tid)
        if self.gapp.session is None:  # no frames come from a bundle: catch up once the keys pause
            if self._catch_up is not None:
                self._catch_up.stop()
            self._catch_up = self.set_timer(CATCH_UP_S, self.refresh_data)

    def _sync_tables(self, tids: Sequence[str], relayout: bool = True) -> None:
        frame = self.gapp.frame
        if frame is None:
            return
        f = self.row_filter
        self._findings = frame.findings
        width = max(20, self.size.width - 2)
        refit = frame.diagnosis is not self._fitted_for and len(tids) == len(TABLES)
        if refit:
            self._fitted_for = frame.diagnosis
        self._stale.difference_update(tids)
        for tid, title, columns in TABLES:
            if tid not in tids:
                continue
            table = self.query_one(f"#{tid}", KeyedTable)
            rows = frame.tables[tid]
            all_rows = rows
            ns = self.gapp.namespace
            if tid == "pods" and ns:  # `-n` / `:ns`: that namespace's pods, as kubectl and k9s show them
                all_rows = [r for r in all_rows if r.ref is not None and r.ref.namespace == ns]
            sort = self.sorts.get(tid)
            inputs = (f, sort, self.wide, width, ns)
            fit = refit and self._fitted_rows.get(tid) is not rows
            done = self._done.get(tid)
            if done is not None and done[0] is rows and done[1] == inputs and not fit and not f.labels:
                n_shown = done[2]  # the same rows, filter, sort and width: the table shows them already
            else:
                shown = self._filtered(tid, all_rows, frame.labels) if f.active else all_rows
                if sort is not None and sort.by:
                    shown = sort_rows(shown, columns, sort)
                table.sync(shown)
                if fit:  # columns fit what is shown now, not the widest value ever shown
                    table.refit()
                    self._fitted_rows[tid] = rows
                table.set_widths([None] * len(columns) if self.wide
                                 else fit_widths(columns, table.natural_widths(), width))
                n_shown = len(shown)
                self._done[tid] = (rows, inputs, n_shown)
            if tid == "findings":
                label: str | Text = frame.findings_title
                if f.active:  # a leftover filter must not hide the root cause silently
                    label = Text.assemble((f"Findings · filter /{f.text} shows {n_shown} of {len(all_rows)}",
                                           "bold yellow"), " · Esc clears")
            else:
                count = f"{n_shown} of {len(all_rows)}" if f.active else str(len(all_rows))
                where = f" in {ns}" if tid == "pods" and ns else ""
                label = f"{title}{where} ({count}){sort.label() if sort is not None else ''}"
                if tid == "nodes" and frame.provisional:
                    label += " · GPUs in use: ? until every pod is read"
                blind = unseen(frame.snapshot, TABLE_SOURCE[tid])
                if blind:  # "(0)" would claim there is nothing; say that nothing could be seen
                    label = Text.assemble(f"{title} ", (f"(not seen: {blind})", "bold yellow"))
            if self._titles.get(tid) != label:  # assigning even an equal title repaints the table
                self._titles[tid] = label
                table.border_title = label
        if relayout:
            self._relayout()
            self.call_after_refresh(self._relayout)

    def _filtered(self, tid: str, rows: Sequence[TableRow],
                  labels: Callable[[ObjectRef | None], Mapping[str, str]]) -> list[TableRow]:
        """Rows the filter keeps; a text-only filter's verdict is kept per row object (rows that did
        not change are the same objects, so a burst costs one test per changed row)."""
        f = self.row_filter
        if f.labels:  # labels can change without the row's cells changing: test every row
            return [r for r in rows if f.matches(r.cells, labels(r.ref))]
        seen = self._matches.setdefault(tid, {})
        out = []
        for r in rows:
            hit = seen.get(r.key)
            if hit is None or hit[0] is not r:
                hit = seen[r.key] = (r, f.matches(r.cells))
            if hit[1]:
                out.append(r)
        return out

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
        if not self.is_mounted:
            return
        behind = [t for t in self._shown_tables() if t in self._stale]
        if behind:
            self._sync_tables(behind)  # shown again (or alone): catch up first
        else:
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
            if focused.id in self._stale:
                self._sync_tables([focused.id], relayout=False)

    def focused_table(self) -> KeyedTable:
        return self.query_one(f"#{self._last_table}", KeyedTable)

    def selected_ref(self) -> ObjectRef | None:
        return self.focused_table().selected_ref

    def selected_node(self) -> str | None:
        """The node under the cursor, or the node of the selected NodeClaim/pod/finding."""
        ref = self.selected_ref()
        snap = self.gapp.detail_snapshot
        if ref is None or snap is None:
            return None
        from diagnostics.relations import chain

        return next((r.name for r in chain(snap, ref) if r.kind == "Node"), None)

    # --- actions ---
    def action_sort(self, by: str) -> None:
        tid = self._last_table
        self.sorts[tid] = self.sorts.get(tid, Sort()).next(by)
        self._sync_tables([tid], relayout=False)

    def action_wide(self) -> None:
        self.wide = not self.wide
        self.set_class(self.wide, "-wide")
        self.notify("Wide: every column at full width (Left/Right scroll)." if self.wide
                    else "Columns fitted to the screen (Ctrl+W for every column whole).", timeout=2)
        self.refresh_data()

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    def action_clear_filter(self) -> None:
        """Esc as in k9s: clear the filter first, then leave the maximized view."""
        if not self.clear_filter() and self.maximized is not None:
            self.minimize()

    def action_debug(self) -> None:
        node = self.selected_node()
        if node is None:
            self.notify("Select a GPU node (or an object on one) first.", severity="warning")
            return
        self.gapp.debug_node(node)

    @on(FilterBar.FilterChanged)
    def _filter_changed(self, event: FilterBar.FilterChanged) -> None:
        rf = RowFilter.parse(event.text)
        if rf == self.row_filter:
            return  # a space, a trailing comma: the same filter
        self.row_filter = rf
        self._matches.clear()
        self._render_focused()

    @on(FilterBar.FilterDone)
    def _filter_done(self) -> None:
        self.focused_table().focus()

    def action_back(self) -> None:
        self.action_clear_filter()
