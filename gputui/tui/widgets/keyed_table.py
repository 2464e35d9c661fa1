"""A DataTable kept in sync with keyed rows: changed cells are updated, rows added/removed by key.

Never clear-and-rebuild for an update: that loses the cursor and costs ~10x more than
`update_cell` with `update_width=False` (stack-notes section 1). The cursor follows its row's key
across updates. A row object passed again unchanged (the same TableRow) costs one identity check,
so a view that reuses its unchanged rows pays per change, not per row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.style import Style
from rich.text import Text
from textual._types import SegmentLines
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.cache import LRUCache
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist, ColumnKey, RowDoesNotExist, RowKey

from diagnostics.model import ObjectRef
from gputui.tui.cells import TableRow


CELL_CACHE_SIZE = 10_000
"""Rendered cells kept by value (DataTable's own cell cache holds as many)."""

REBUILD_RATIO = 80
"""Rebuild instead of removing rows one by one when removed x shown > this x rows wanted: removing
one of n rows costs about n/80 times adding one (measured with Textual 8.2 on 400 and 1,700 rows)."""


class KeyedTable(DataTable[Text]):
    """Rows are `TableRow(key, ref, cells)`; `ref_for(key)` maps a row back to its object."""

    DEFAULT_CSS = """
    KeyedTable { height: auto; }
    KeyedTable:focus { background-tint: $foreground 0%; }
    """
    """No tint on focus (DataTable's is 5%): it changes every cell's style, so each focus move (`/`, `:`,
    Enter, Tab) redrew every visible cell of two tables; focus shows in the border and the cursor row."""
    BINDINGS = [
        Binding("enter", "select_cursor", "Open", show=True),
        Binding("j", "cursor_down", "Down", show=False),  # k9s / vi
        Binding("k", "cursor_up", "Up", show=False),
    ]

    def __init__(self, columns: Sequence[str], *, id: str | None = None, classes: str | None = None,
                 show_header: bool = True, empty: str = "(none)") -> None:
        self._in_pass = False
        self._style_in_pass: Style | None = None
        self._cells_by_value: LRUCache[tuple[object, ...], tuple[object, SegmentLines]] = LRUCache(CELL_CACHE_SIZE)
        """Rendered cells keyed by where and how they are drawn, holding the value they were drawn
        from: a hit needs that very value object still in the cell (see `_render_cell`). Set first:
        DataTable clears its caches while it initialises."""
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=False,
                         show_header=show_header)
        self._columns = tuple(columns)
        self._empty = empty
        self.row_count_shown = 0
        """Rows shown after filtering (the placeholder row is not counted)."""
        self.user_moved = False
        """Until the cursor is moved (keys, mouse, code) it stays on the top row - the worst one - as
        rows arrive in whatever order; once moved, it follows its row's key."""
        self._synced_key: str | None = None
        self._shown: dict[str, TableRow] = {}
        """The row last synced under each key, in the table's order."""
        self._placeholder = TableRow(f"placeholder|{empty}", None,
                                     (Text(empty, style="dim"),) + tuple(Text("") for _ in self._columns[1:]))

    def on_mount(self) -> None:
        if not self.row_count:
            self.sync([])

    def render_lines(self, crop: Region) -> list[Strip]:
        """One render pass: DataTable asks `rich_style` (a walk over every ancestor's colours) for each
        line it draws; within a pass the styles cannot change, so it is computed once."""
        self._style_in_pass = None
        self._in_pass = True
        try:
            return super().render_lines(crop)
        finally:
            self._in_pass = False
            self._style_in_pass = None

    @property
    def rich_style(self) -> Style:
        if not self._in_pass:
            return super().rich_style
        style = self._style_in_pass
        if style is None:
            style = self._style_in_pass = super().rich_style
        return style

    def _ensure_columns(self) -> None:
        """Columns are added on first use: a screen may sync before this widget's Mount is handled."""
        if not self.columns:
            for c in self._columns:
                self.add_column(c, key=c)

    # --- reading ---
    @property
    def selected_key(self) -> str | None:
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except (CellDoesNotExist, RowDoesNotExist):
            return None
        return None if key is None or key.startswith("placeholder|") else key

    @property
    def selected_ref(self) -> ObjectRef | None:
        return self.ref_for(self.selected_key)

    def ref_for(self, key: str | None) -> ObjectRef | None:
        row = self._shown.get(key) if key else None
        return row.ref if row is not None else None

    @property
    def lines_wanted(self) -> int:
        """Lines to show every row: rows, header, top border, and the horizontal scrollbar if shown."""
        return max(1, self.row_count) + int(self.show_header) + 1 + int(self.show_horizontal_scrollbar)

    @property
    def allow_horizontal_scroll(self) -> bool:
        """Left/Right and Shift+wheel scroll a wide table even where its scrollbar is hidden to save a line."""
        return not self.disabled and self.virtual_size.width > self.scrollable_content_region.width

    def natural_widths(self) -> list[int]:
        """Each column's content width (what it needs to show every cell whole)."""
        return [c.content_width for c in self.ordered_columns]

    def refit(self) -> bool:
        """Measure every column again from the rows shown: widths otherwise only grow (`_grow`), so a
        long value that went away (a finding replaced by a shorter one) kept its column wide. O(cells):
        the overview calls it once per diagnosis, not per frame. True when a width changed."""
        changed = False
        rows = list(self._shown.values()) or [self._placeholder]
        for i, col in enumerate(self.ordered_columns):
            label = col.label.cell_len if isinstance(col.label, Text) else len(str(col.label))
            width = max([label, *(r.cells[i].cell_len for r in rows if i < len(r.cells))])
            if width != col.content_width:
                col.content_width, changed = width, True
        if changed:
            self._clear_caches()
            self._require_update_dimensions = True
            self.refresh()
        return changed

    def set_widths(self, widths: Sequence[int | None]) -> bool:
        """Cut columns to these widths (None: natural width); True when anything changed."""
        changed = False
        for col, w in zip(self.ordered_columns, widths):
            if w is None:
                if not col.auto_width:
                    col.auto_width, changed = True, True
            elif col.auto_width or col.width != w:
                col.auto_width, col.width, changed = False, w, True
        if changed:
            self._clear_caches()
            self._require_update_dimensions = True
            self.refresh()
        return changed

    def keys(self) -> list[str]:
        return [str(r.key.value) for r in self.ordered_rows]

    # --- rendering: DataTable's caches, kept across cell updates ---
    def _render_cell(self, row_index: int, column_index: int, base_style: Style, width: int,
                     cursor: bool = False, hover: bool = False) -> SegmentLines:
        """Reuse a cell's rendering while its value object is unchanged.

        DataTable keys every render cache on its update count, which `update_cell` bumps: one
        changed cell re-renders every visible cell of the table through Rich (~0.4 ms each), the
        bulk of a frame's paint during a watch burst. `sync` replaces a cell's value only when it
        changed, so identity of the value says whether the cached rendering is still right.
        """
        if column_index < 0:  # row labels (unused here): DataTable's own cache
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        column_key = self._column_locations.get_key(column_index)
        row_key = self._header_row_key if row_index < 0 else self._row_locations.get_key(row_index)
        if column_key is None or row_key is None:  # no cell of the table: DataTable's own rendering
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        value: object = self.columns[column_key].label if row_index < 0 else self._data[row_key][column_key]
        if cursor or hover:
            key: tuple[object, ...] = (row_key, column_key, row_index, column_index, base_style, width, cursor, hover,
                                       self._show_hover_cursor, self._pseudo_class_state, self.cell_padding)
        else:
            # Focus (a pseudo-class) changes only the cursor's and the hover's styles: a cell under
            # neither renders the same focused or not, so moving focus (`/`, `:`, Enter back to
            # the table) redraws the cursor row, not every visible cell. A style update (focus, a
            # theme) keeps these renderings: what they depend on, the base style, is in the key.
            key = (row_key, column_key, row_index, column_index, base_style, width, self.cell_padding)
        hit = self._cells_by_value.get(key)
        if hit is not None and hit[0] is value:
            return hit[1]
        lines = super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        self._cells_by_value[key] = (value, lines)
        return lines

    def prewarm(self, rows: int, budget: int) -> int:
        """Render into the cell cache, ahead of need, the cells of the first `rows` rows that are not
        in it yet (at most `budget` of them); returns how many were rendered.

        Maximizing a table (`:nodes`) shows a screenful of rows where the overview showed a few, and
        drawing those cells through Rich was most of that key's time. Called while the screen is idle,
        with the keys `render_line` will ask for (the table's style, each column's width, neither
        cursor nor hover), so the key finds them rendered.
        """
        if not self.row_count or not self.columns or not self.is_mounted:
            return 0
        base = self.rich_style
        skip = {self.cursor_row, self.hover_coordinate.row}
        widths = [column.get_render_width(self) for column in self.ordered_columns]
        done = 0
        for row_index in range(min(rows, self.row_count)):
            if row_index in skip:
                continue
            style = self._get_row_style(row_index, base)
            for column_index, width in enumerate(widths):
                if self._cached(row_index, column_index, style, width):
                    continue
                self._render_cell(row_index, column_index, style, width)
                done += 1
                if done >= budget:
                    return done
        return done

    def _cached(self, row_index: int, column_index: int, style: Style, width: int) -> bool:
        """A plain (neither cursor nor hover) cell's rendering is in the cache for its current value."""
        row_key = self._row_locations.get_key(row_index)
        column_key = self._column_locations.get_key(column_index)
        if row_key is None or column_key is None:
            return True
        hit = self._cells_by_value.get((row_key, column_key, row_index, column_index, style, width,
                                        self.cell_padding))
        return hit is not None and hit[0] is self._data[row_key][column_key]

    def _clear_caches(self) -> None:
        super()._clear_caches()
        self._cells_by_value.clear()

    def update_cell(self, row_key: RowKey | str, column_key: ColumnKey | str, value: Text, *,
                    update_width: bool = False) -> None:
        """A cell update keeps the rows' order and heights: carry DataTable's O(rows) layout caches
        (row order, line offsets) over to the new update count instead of rebuilding them."""
        before = self._update_count
        rows = self.row_count
        offsets = self._offset_cache.get(before)
        ordered = self._ordered_row_cache.get((rows, before))
        super().update_cell(row_key, column_key, value, update_width=update_width)
        after = self._update_count
        if update_width or after == before:
            return
        if offsets is not None:
            self._offset_cache[after] = offsets
        if ordered is not None:
            self._ordered_row_cache[(rows, after)] = ordered

    # --- writing ---
    def sync(self, rows: Sequence[TableRow]) -> None:
        """Make the table show exactly `rows`, in order, touching only what changed."""
        self._ensure_columns()
        self.row_count_shown = len(rows)
        if not rows:
            rows = [self._placeholder]
        cursor_key = self.selected_key
        if cursor_key is not None and cursor_key != self._synced_key:
            self.user_moved = True
        shown = self._shown
        wanted = {r.key: r for r in rows}
        removed = [k for k in shown if k not in wanted]
        if len(removed) * len(shown) > REBUILD_RATIO * len(rows):
            # DataTable.remove_row re-indexes every row (O(n) each): a filter that hides thousands
            # of rows is far cheaper as a fresh table; the cursor is put back on its key below.
            self.clear()
            shown.clear()
        else:
            for key in removed:
                self.remove_row(key)
                del shown[key]
        added = False
        cols = self._columns
        columns = [self.columns[ColumnKey(c)] for c in cols]
        for r in rows:
            old = shown.get(r.key)
            if old is r:
                continue
            if old is not None:
                for col, value, was in zip(cols, r.cells, old.cells):
                    if was is not value and not same(was, value):
                        self._grow(col, value)
                        self.update_cell(r.key, col, value, update_width=False)
            else:
                for column, value in zip(columns, r.cells):  # _grow, inlined: thousands of cells per filter key
                    width = value.cell_len
                    if width > column.content_width:
                        column.content_width = width
                self.add_row(*r.cells, key=r.key)
                added = True
            shown[r.key] = r
        order = list(wanted)
        if (added or removed or order != list(shown)) and self.keys() != order:
            self._reorder(order)
        self._shown = {k: wanted[k] for k in order}
        # Move the cursor only when its row moved: each move re-scans every row (DataTable's
        # ordered_rows after an update) to scroll it into view.
        if self.user_moved and cursor_key in wanted:
            row = self.get_row_index(cursor_key)
        elif not self.user_moved:
            row = 0
        else:
            row = min(self.cursor_row, max(0, self.row_count - 1))
        if row != self.cursor_row:
            self.move_cursor(row=row, animate=False)
        self._synced_key = self.selected_key

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """Only the virtual size: `sync` grows the columns for every new cell (`_grow`) and every row is
        one unlabelled line, so DataTable's measuring of each new row's cells (a console options
        object and a terminal-size call per cell: ~0.2 s when Esc brings back 400 filtered rows of
        ten cells) would find nothing more."""
        data_width = sum(column.get_render_width(self) for column in self.columns.values())
        header = self.header_height if self.show_header else 0
        self.virtual_size = Size(data_width + self._row_label_column_width, self._total_row_height + header)

    def scroll_to_cursor_from_top(self) -> None:
        self.scroll_to(y=0, animate=False, immediate=True)
        if self.row_count:
            self.move_cursor(row=self.cursor_row, animate=False, scroll=True)

    def _grow(self, column: str, cell: Text) -> None:
        """Widen a column for a new value now, in O(1), instead of DataTable's deferred re-measure.

        DataTable measures new rows on its next idle, but a frame rendered before that is cached
        with the old widths until the table changes again (seen as truncated columns). Widening the
        column before add_row/update_cell (which invalidate the caches) keeps every frame right, and
        costs nothing like `update_width=True` (~9 ms per call, stack-notes section 1).
        """
        col = self.columns[ColumnKey(column)]
        width = cell.cell_len
        if width > col.content_width:
            col.content_width = width

    def _reorder(self, order: list[str]) -> None:
        """Put rows in `order` through DataTable.sort (public API).

        sort() hands the key function cell values, not row keys; each row's first cell is a
        distinct Text object, so its identity maps back to the row key.
        """
        first = self._columns[0]
        rank = {id(self.get_cell(k, first)): i for i, k in enumerate(order)}
        self.sort(first, key=lambda cell: rank.get(id(cell), len(rank)))


def same(a: object, b: Text) -> bool:
    """Text equality including the base style (rich's `==` compares only text and spans, so a cell
    that only changes colour - a node turning red - would otherwise never be updated)."""
    return isinstance(a, Text) and a.plain == b.plain and a.style == b.style and a.spans == b.spans


def set_height(table: KeyedTable, height: int) -> None:
    """Resize a table only when its height changes (setting a style always triggers a layout).

    After a resize the table scrolls back to the top, keeping the cursor row in view: a table that
    was briefly too short to show its cursor row must not stay scrolled once it has room.
    """
    current = table.styles.height
    if current is None or not current.is_cells or current.value != height:
        table.styles.height = height
        table.call_after_refresh(table.scroll_to_cursor_from_top)
