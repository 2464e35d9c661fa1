"""TUI test fixtures: a simulator per test, time frozen at the scenario's referenceTime, screen text."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gputui.sim.cluster import SimCluster
from gputui.sim.scenario import load_scenario
from gputui.tui.app import GputuiApp

SCENARIO = "incident"
"""The demo scenario the navigation tests run on (`gputui demo` opens it by default)."""


def reference_now(scenario: str) -> str:
    ref = load_scenario(scenario).reference_time
    assert ref is not None
    return ref.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture()
def frozen(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Freeze gputui's clock at a scenario's referenceTime (the simulator does not shift times)."""
    def freeze(scenario: str) -> None:
        monkeypatch.setenv("GPUTUI_NOW", reference_now(scenario))

    return freeze


@pytest.fixture()
def start_sim(tmp_path: Path, frozen: Callable[[str], None]) -> Iterator[Callable[..., tuple[SimCluster, Path]]]:
    """`start_sim(scenario, forbid=[...])` -> (running simulator, kubeconfig path); stopped after the test."""
    started: list[SimCluster] = []

    def start(scenario: str = SCENARIO, forbid: tuple[str, ...] = ()) -> tuple[SimCluster, Path]:
        frozen(scenario)
        sim = SimCluster(scenario)
        for resource in forbid:
            sim.forbid(resource)
        sim.start()
        started.append(sim)
        return sim, sim.write_kubeconfig(tmp_path / f"kubeconfig-{len(started)}")

    yield start
    for sim in started:
        sim.stop()


def table_column(app: GputuiApp, table_id: str, column: str) -> list[str]:
    """Plain text of one column of a KeyedTable on the current screen, top to bottom."""
    from gputui.tui.widgets.keyed_table import KeyedTable

    table = app.screen.query_one(f"#{table_id}", KeyedTable)
    return [str(table.get_cell(k, column)) for k in table.keys()]


_SVG_TEXT = re.compile(r'<text[^>]*?x="([\d.]+)"[^>]*clip-path="url\(#terminal-\d+-line-(\d+)\)"[^>]*>(.*?)</text>',
                       re.DOTALL)
_CHAR_WIDTH = 12.2
"""Rich's SVG export places each run of text at x = column * 0.61 * font size (20)."""


def screen_text(app: GputuiApp) -> str:
    """What the terminal shows, as plain lines (rebuilt from the public SVG export by column)."""
    lines: dict[int, dict[int, str]] = {}
    for x, line, text in _SVG_TEXT.findall(app.export_screenshot()):
        col = round(float(x) / _CHAR_WIDTH)
        row = lines.setdefault(int(line), {})
        for i, ch in enumerate(html.unescape(text).replace("\n", "").replace("\xa0", " ")):
            row[col + i] = ch
    return "\n".join("".join(row.get(c, " ") for c in range(max(row, default=-1) + 1)).rstrip()
                     for _, row in sorted(lines.items()))
