"""TUI test fixtures: a simulator per test, time frozen at the scenario's referenceTime, screen text."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

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


@dataclass(frozen=True, slots=True)
class Live:
    """gputui running under Textual's `run_test` on a simulated cluster, settled on its first data."""

    app: GputuiApp
    pilot: Pilot[Any]
    sim: SimCluster
    """The running simulator: `apply`, `patch`, `fail_requests`... change the cluster under the app."""
    kubeconfig: Path


_LIVE_OPTIONS = {"size": (120, 40), "forbid": (), "read_only": False}


@pytest.fixture()
async def live_app(request: pytest.FixtureRequest,
                   start_sim: Callable[..., tuple[SimCluster, Path]]) -> AsyncIterator[Live]:
    """What `gputui` shows on a simulator: started as `gputui demo` starts it and settled on its first data.

    The scenario is SCENARIO unless the test parametrizes the fixture
    (`@pytest.mark.parametrize("live_app", ["healthy"], indirect=True)`); the terminal size, the
    resources the simulator forbids and read-only come from `@pytest.mark.live_app(size=(160, 40),
    forbid=("nodeclaims.karpenter.sh",), read_only=True)`. The app stops after the test.
    """
    from gputui.dev.screenshots import build_app, settle

    marker = request.node.get_closest_marker("live_app")
    given = dict(marker.kwargs) if marker is not None else {}
    if unknown := set(given) - set(_LIVE_OPTIONS):
        raise TypeError(f"live_app marker: unknown options {sorted(unknown)}")
    options = {**_LIVE_OPTIONS, **given}
    sim, kubeconfig = start_sim(getattr(request, "param", SCENARIO), forbid=tuple(options["forbid"]))
    app = build_app(kubeconfig, title="test", read_only=bool(options["read_only"]))
    async with app.run_test(size=options["size"]) as pilot:
        await settle(pilot)
        yield Live(app, pilot, sim, kubeconfig)


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
