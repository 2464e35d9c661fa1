"""KeyedTable: rows follow their keys across updates (no clear-and-rebuild), and so does the cursor."""

from __future__ import annotations

import re

from rich.text import Text
from textual.app import App, ComposeResult

from gputui.tui.cells import TableRow
from gputui.tui.widgets.keyed_table import KeyedTable


def row(key: str, *cells: str) -> TableRow:
    return TableRow(key, None, tuple(Text(c) for c in (key, *cells)))


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield KeyedTable(("NAME", "STATE"), id="t")


async def test_sync_updates_cells_moves_rows_and_keeps_the_cursor_on_its_row() -> None:
    app = TableApp()
    async with app.run_test(size=(60, 10)) as pilot:
        table = app.query_one(KeyedTable)
        assert table.keys() == ["placeholder|(none)"] and table.selected_key is None
        table.sync([row("a", "ok"), row("b", "ok"), row("c", "ok")])
        await pilot.pause()
        table.move_cursor(row=2)
        assert table.selected_key == "c"
        before = table.rows  # DataTable's own Row objects: kept when a row is only updated
        b_row = before[next(k for k in before if k.value == "b")]

        table.sync([row("c", "ok"), row("b", "broken"), row("d", "new")])
        await pilot.pause()
        assert table.keys() == ["c", "b", "d"]
        assert str(table.get_cell("b", "STATE")) == "broken"
        assert table.selected_key == "c" and table.cursor_row == 0  # the cursor followed its row
        assert table.rows[next(k for k in table.rows if k.value == "b")] is b_row

        table.sync([row("d", "new"), row("c", "ok")])
        await pilot.pause()
        assert table.keys() == ["d", "c"] and table.selected_key in ("d", "c")
        table.sync([])
        await pilot.pause()
        assert table.keys() == ["placeholder|(none)"] and table.row_count_shown == 0


async def test_columns_grow_for_longer_values_at_once() -> None:
    app = TableApp()
    async with app.run_test(size=(80, 10)) as pilot:
        table = app.query_one(KeyedTable)
        table.sync([row("a", "ok")])
        table.sync([row("a", "a much longer state than before")])
        await pilot.pause()
        widths = {c.label.plain: c.content_width for c in table.columns.values()}
        assert widths["STATE"] == len("a much longer state than before")


async def test_a_change_of_colour_alone_is_applied() -> None:
    app = TableApp()
    async with app.run_test(size=(60, 10)) as pilot:
        table = app.query_one(KeyedTable)
        table.sync([TableRow("n", None, (Text("node-1"), Text("Ready", style="green")))])
        table.sync([TableRow("n", None, (Text("node-1"), Text("Ready", style="bold red")))])
        await pilot.pause()
        assert str(table.get_cell("n", "STATE").style) == "bold red"


def screen_lines(table: KeyedTable) -> list[str]:
    return [table.render_line(y).text.rstrip() for y in range(table.size.height)]


async def test_an_updated_cell_is_redrawn_and_the_others_are_reused() -> None:
    """Rendered cells are cached by value: a change shows at once, unchanged cells are not re-rendered."""
    app = TableApp()
    async with app.run_test(size=(60, 10)) as pilot:
        table = app.query_one(KeyedTable)
        table.sync([row("a", "ok"), row("b", "ok"), row("c", "ok")])
        await pilot.pause()
        assert [ln.split() for ln in screen_lines(table)[1:4]] == [["a", "ok"], ["b", "ok"], ["c", "ok"]]

        rendered: list[object] = []
        console = app.console
        real = console.render_lines

        def counting(renderable: object, *args: object, **kwargs: object) -> object:
            rendered.append(renderable)
            return real(renderable, *args, **kwargs)  # type: ignore[arg-type]

        console.render_lines = counting  # type: ignore[method-assign]
        table.sync([row("a", "ok"), row("b", "no"), row("c", "ok")])  # same width: no column resize
        await pilot.pause()
        assert [ln.split() for ln in screen_lines(table)[1:4]] == [["a", "ok"], ["b", "no"], ["c", "ok"]]
        assert len(rendered) == 2  # only b's STATE cell went through Rich again (Styled, then its Text)

        table.sync([row("c", "ok"), row("a", "ok"), row("b", "broken")])  # reordered and wider
        await pilot.pause()
        assert [ln.split() for ln in screen_lines(table)[1:4]] == [["c", "ok"], ["a", "ok"], ["b", "broken"]]
        table.move_cursor(row=2)
        await pilot.pause()
        cursor_style = table.get_component_rich_style("datatable--cursor")
        assert table.render_line(3).text.split() == ["b", "broken"]
        assert any(seg.style and seg.style.bgcolor == cursor_style.bgcolor for seg in table.render_line(3))


async def test_rows_rendered_ahead_are_the_ones_a_taller_table_draws() -> None:
    """prewarm fills the cell cache with exactly what render_line asks for when more rows come into
    view (a maximize): no cell is drawn through Rich again, and the screen is what it would be."""
    from textual.widgets import DataTable

    rows = [row(f"r{i:02}", "ok" if i % 3 else "broken") for i in range(30)]

    async def shown(prewarm: bool) -> tuple[str, int]:
        app = TableApp()
        async with app.run_test(size=(60, 40)) as pilot:
            table = app.query_one(KeyedTable)
            table.styles.height = 6
            table.sync(rows)
            await pilot.pause()
            rendered = table.prewarm(40, budget=1000) if prewarm else 0
            calls = 0
            original = DataTable._render_cell

            def counting(*args: object, **kwargs: object) -> object:
                nonlocal calls
                calls += 1
                return original(*args, **kwargs)  # type: ignore[arg-type]

            DataTable._render_cell = counting  # KeyedTable's override stays: count what reaches Rich  # type: ignore[assignment,method-assign]
            try:
                table.styles.height = 32  # now 30 rows and the header show
                await pilot.pause()
                await pilot.pause()
            finally:
                DataTable._render_cell = original  # type: ignore[method-assign]
            assert not prewarm or rendered > 0
            return app.export_screenshot(), calls

    cold_screen, cold_calls = await shown(prewarm=False)
    warm_screen, warm_calls = await shown(prewarm=True)
    assert cold_calls >= 40 and warm_calls == 0  # the cursor row was on screen before
    ids = re.compile(r"terminal-\d+")  # export ids differ per run
    assert ids.sub("", warm_screen) == ids.sub("", cold_screen)
