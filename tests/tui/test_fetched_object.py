"""The YAML and describe views show an API's refusal as text, never as terminal control sequences."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from textual.app import App

from diagnostics.model import ObjectRef
from gputui.kube.api import KubeError
from gputui.tui.screens.describe_view import DescribeScreen
from gputui.tui.screens.fetched import FetchedObjectScreen
from gputui.tui.screens.yaml_view import YamlScreen
from tests.tui.conftest import screen_text

REF = ObjectRef("Node", "gpu-1")
HOSTILE = "denied by webhook \x1b]0;owned\x07 [bold]policy[/bold]"


def refuse() -> Any:
    raise KubeError(403, "Forbidden", HOSTILE)


@pytest.mark.parametrize("make", [
    lambda: YamlScreen(REF, refuse, {"metadata": {"name": "gpu-1"}}),
    lambda: DescribeScreen(REF, refuse, {"metadata": {"name": "gpu-1"}}, [], datetime.now()),
], ids=["yaml", "describe"])
async def test_refusal_is_shown_not_interpreted(make: Any) -> None:
    app: App[None] = App()
    async with app.run_test(size=(160, 20)) as pilot:
        screen: FetchedObjectScreen = make()
        await app.push_screen(screen)
        for _ in range(100):
            if not screen.busy:
                break
            await pilot.pause(0.05)
        await pilot.pause()
        text = screen_text(app)  # type: ignore[arg-type]
        assert "could not fetch" in text and "showing the cached copy" in text
        assert "\\x1b]0;owned\\x07" in text  # the escape is spelled out, not sent to the terminal
        assert "[bold]policy[/bold]" in text  # markup stays text
