"""k9s habits (issue #22): `d` describe, `l` logs (`p` previous), Ctrl+D debug behind a typed name,
Ctrl+C quits, j/k, Shift-letter sort, Ctrl+W wide, `:pods` with a pending filter, `:ctx` / `:ns`,
and the `/` filter and `:` prompt that show what is typed. Each asserts what the screen shows."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from textual import events

from diagnostics.model import ObjectRef
from gputui.dev.screenshots import build_app, settle
from gputui.sim.cluster import SimCluster
from gputui.tui.screens.describe_view import DescribeScreen
from gputui.tui.screens.logs import LogsScreen, PickScreen
from gputui.tui.screens.overview import OverviewScreen
from gputui.tui.screens.pods import PodsScreen
from gputui.tui.widgets.keyed_table import KeyedTable
from textual.widgets import Log
from tests.tui.conftest import screen_text, table_column
from tests.tui.test_navigation import wait_for

pytestmark = pytest.mark.slow  # pilot tests of the key bindings, each on its own simulated cluster

StartSim = Callable[..., tuple[SimCluster, Path]]
DEAD = "ip-10-0-31-203.ec2.internal"
"""The incident's node whose device plugin crash-loops."""


def focus_row(app: object, table_id: str, name: str) -> KeyedTable:
    table = app.screen.query_one(f"#{table_id}", KeyedTable)  # type: ignore[attr-defined]
    table.focus()
    table.move_cursor(row=next(i for i, k in enumerate(table.keys()) if name in k))
    return table


async def test_d_describes_the_object_with_its_events_like_kubectl(start_sim: StartSim) -> None:
    _sim, kubeconfig = start_sim()
    app = build_app(kubeconfig, title="test")
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        focus_row(app, "nodes", DEAD)
        await pilot.press("d")
        screen = app.screen
        assert isinstance(screen, DescribeScreen)
        await wait_for(pilot, lambda: not screen.busy)
        await pilot.pause(0.1)
        assert f"Name:        {DEAD}" in screen_text(app)
        text = screen.text  # the whole page (it scrolls)
        assert "Labels:      " in text and "Kind:        Node" in text
        assert "Capacity:" in text and "Conditions:" in text
        assert "Events:" in text and "Type" in text and "Reason" in text and "Message" in text
        assert "managedFields" not in screen.text
        await pilot.press("escape")
        assert isinstance(app.screen, OverviewScreen)


async def test_l_follows_the_device_plugin_log_p_shows_the_previous_run(start_sim: StartSim) -> None:
    sim, kubeconfig = start_sim()
    app = build_app(kubeconfig, title="test")
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        app.open_ref(ObjectRef("Node", DEAD))
        await settle(pilot)
        await pilot.press("l")  # a node: its device plugin pod, and Karpenter's lines about it
        assert isinstance(app.screen, PickScreen)
        labels = app.screen.labels
        plugin = next(i for i, label in enumerate(labels) if "device plugin" in label)
        assert any("Karpenter" in label for label in labels)
        app.screen.dismiss(plugin)
        await pilot.pause(0.1)
        logs = app.screen
        assert isinstance(logs, LogsScreen)
        lines = lambda: "\n".join(str(x) for x in logs.query_one(Log).lines)  # noqa: E731 - the whole log
        await wait_for(pilot, lambda: "Loading configuration." in lines())
        assert "Failed to initialize NVML: Driver Not Loaded." in screen_text(app)  # the tail, on screen
        assert screen_text(app).splitlines()[1].startswith(" current run · ")
        src = logs.source
        sim.append_log(src.namespace, src.pod, "\x1b[31mI0821 10:00:01 new line after open\n", src.container)
        if "following" in screen_text(app).splitlines()[1]:  # a running container: new lines arrive
            await wait_for(pilot, lambda: "new line after open" in screen_text(app))
            assert "\\x1b[31mI0821 10:00:01 new line after open" in screen_text(app)  # shown, not interpreted
        await pilot.press("p")
        await wait_for(pilot, lambda: "previous run" in screen_text(app) and not logs.busy)
        status = screen_text(app).splitlines()[1]
        assert "new line after open" not in lines()
        assert status.startswith(" previous run · read") or status.startswith(" previous run · could not read"), status
        await pilot.press("escape")
        assert not isinstance(app.screen, LogsScreen)


async def test_ctrl_c_quits(start_sim: StartSim) -> None:
    _sim, kubeconfig = start_sim("healthy")
    app = build_app(kubeconfig, title="test")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+c")
        await pilot.pause(0.1)
    assert app.return_value == 0


async def test_j_k_move_and_shift_letters_sort_like_k9s(start_sim: StartSim) -> None:
    _sim, kubeconfig = start_sim()
    app = build_app(kubeconfig, title="test")
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#nodes", KeyedTable)
        table.focus()
        await pilot.press("j", "j")
        assert table.cursor_row == 2
        await pilot.press("k")
        assert table.cursor_row == 1
        worst_first = table_column(app, "nodes", "NAME")
        await pilot.press("N")
        await pilot.pause()
        assert table_column(app, "nodes", "NAME") == sorted(worst_first)
        assert "GPU nodes (13) · sorted by name ↑" in screen_text(app)
        await pilot.press("N")
        await pilot.pause()
        assert table_column(app, "nodes", "NAME") == sorted(worst_first, reverse=True)
        await pilot.press("N")  # a third time: gputui's order again, worst first
        await pilot.pause()
        assert table_column(app, "nodes", "NAME") == worst_first


async def test_ctrl_w_shows_every_column_whole(start_sim: StartSim) -> None:
    _sim, kubeconfig = start_sim()
    app = build_app(kubeconfig, title="test")
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        assert app.report is not None
        top = app.report.findings[0]
        def findings_table() -> str:
            text = screen_text(app)
            return text[text.index("▔Findings"):text.index("▔GPU nodes")]

        # Fitted: the long title gives way (cut with a marker) so CHECK and SUBJECT stay on screen.
        text = findings_table()
        assert f"{top.code} {top.check}" in text and top.title[:100] not in text
        assert "…" in next(line for line in text.splitlines() if top.title[:20] in line)
        await pilot.press("ctrl+w")
        await pilot.pause(0.2)
        assert top.title[:100] in findings_table()  # whole (the rest scrolls sideways)
        await pilot.press("ctrl+w")
        await pilot.pause(0.2)
        assert top.title[:100] not in findings_table() and f"{top.code} {top.check}" in findings_table()


async def test_pods_view_lists_running_and_pending_gpu_pods_with_a_pending_filter(start_sim: StartSim) -> None:
    _sim, kubeconfig = start_sim()
    app = build_app(kubeconfig, title="test")
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        pending = len(table_column(app, "pods", "NAMESPACE/NAME"))
        app.post_message(events.Paste(":pods"))  # pasted (the terminal sends it to the app), as from a runbook
        await pilot.pause(0.2)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, PodsScreen)
        statuses = table_column(app, "gpu-pods", "STATUS")
        assert len(statuses) > pending
        assert any(s.startswith("! Pending") for s in statuses) and any(s == "✓ ok" for s in statuses)
        await pilot.press("ctrl+z")
        await pilot.pause()
        assert len(table_column(app, "gpu-pods", "STATUS")) == pending
        assert "Pending GPU pods" in screen_text(app)


async def test_filter_text_is_visible_while_typing_and_esc_clears_it_before_leaving(start_sim: StartSim) -> None:
    _sim, kubeconfig = start_sim()
    app = build_app(kubeconfig, title="test")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("colon", *"no", "enter")
        await pilot.pause()
        assert app.screen.maximized is not None
        await pilot.press("slash", *"31-203")
        await pilot.pause()
        assert any(line.strip().startswith("31-203") for line in screen_text(app).splitlines())
        await pilot.press("enter", "escape")  # k9s: the first Esc clears the filter ...
        await pilot.pause()
        assert app.screen.maximized is not None and len(table_column(app, "nodes", "NAME")) == 13
        await pilot.press("escape")  # ... the second one leaves the view
        await pilot.pause()
        assert app.screen.maximized is None


async def test_a_leftover_filter_says_how_many_findings_it_hides(start_sim: StartSim) -> None:
    _sim, kubeconfig = start_sim()
    app = build_app(kubeconfig, title="test")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.report is not None
        total = len(app.report.findings)
        await pilot.press("slash", *"notebooks", "enter")
        await pilot.pause()
        shown = len([k for k in app.screen.query_one("#findings", KeyedTable).keys() if "|" in k
                     and not k.startswith("placeholder")])
        assert f"Findings · filter /notebooks shows {shown} of {total} · Esc clears" in screen_text(app)


def two_context_kubeconfig(a: Path, b: Path, out: Path) -> Path:
    """One kubeconfig holding both simulators' contexts, named `incident` and `healthy`."""
    ca, cb = yaml.safe_load(a.read_text()), yaml.safe_load(b.read_text())
    merged = dict(ca)
    for key in ("clusters", "users", "contexts"):
        merged[key] = []
        for cfg, name in ((ca, "incident"), (cb, "healthy")):
            item = dict(cfg[key][0])
            item["name"] = name
            if key == "contexts":
                item["context"] = dict(item["context"], cluster=name, user=name)
            merged[key].append(item)
    merged["current-context"] = "incident"
    out.write_text(yaml.safe_dump(merged))
    return out


async def test_ctx_and_ns_switch_live(start_sim: StartSim, tmp_path: Path) -> None:
    _a, ka = start_sim()
    _b, kb = start_sim("healthy")
    kubeconfig = two_context_kubeconfig(ka, kb, tmp_path / "both")
    app = build_app(kubeconfig, title="test")
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        assert "ip-10-0-31-203.ec2.internal" in table_column(app, "nodes", "NAME")
        await pilot.press("colon", *"ctx", "enter")
        assert isinstance(app.screen, PickScreen) and app.screen.labels == ["incident", "healthy"]
        await pilot.press("escape", "colon", *"ctx healthy", "enter")
        await wait_for(pilot, lambda: app.session is not None and app.session.info.context == "healthy")
        await settle(pilot)
        assert "context healthy" in screen_text(app)
        assert "ip-10-0-31-203.ec2.internal" not in table_column(app, "nodes", "NAME")
        assert "✓ no problems found" in screen_text(app)
        await pilot.press("colon", *"ctx incident", "enter")
        await wait_for(pilot, lambda: app.session is not None and app.session.info.context == "incident")
        await settle(pilot)
        await pilot.press("colon", *"ns ml", "enter")
        await wait_for(pilot, lambda: app.namespace == "ml")
        await settle(pilot)
        pods = table_column(app, "pods", "NAMESPACE/NAME")
        assert pods and all(p.startswith("ml/") for p in pods)
        assert "Pending GPU pods in ml" in screen_text(app)
