"""`d`: describe the selected object and its events, as `kubectl describe` (k9s's `d`).

The cached (slimmed) object shows at once; the full object is fetched in a worker, never on the UI
thread. Events come from the live cache (per namespace for a namespace-limited user).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from rich.console import RenderableType
from rich.text import Text
from textual.binding import Binding

from diagnostics.model import ObjectRef
from diagnostics.records import Event
from gputui.tui.describe import describe
from gputui.tui.screens.fetched import FetchedObjectScreen
from gputui.tui.screens.yaml_view import clean


class DescribeScreen(FetchedObjectScreen):
    KIND = "describe"
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", show=True),
        Binding("y", "yaml", "YAML", show=True),
        Binding("c", "copy", "Copy", show=True),
    ]

    def __init__(self, ref: ObjectRef, fetch: Callable[[], Any] | None, cached: Any,
                 events: Sequence[Event], now: datetime) -> None:
        super().__init__(ref, fetch, cached)
        self.events = events
        self.now = now

    def render_object(self, obj: Any) -> tuple[str, RenderableType]:
        text = describe(clean(obj), self.events, self.now)
        return text, Text(text)  # already made visible; Text, so never read as markup

    def action_yaml(self) -> None:
        show_yaml = getattr(self.app, "show_yaml", None)  # the screens never import the app (no cycle)
        if show_yaml is not None:
            show_yaml(self.ref)

    def action_copy(self) -> None:
        if self.text:
            self.app.copy_to_clipboard(self.text)
            self.notify(f"Copied the description of {self.ref}.")
