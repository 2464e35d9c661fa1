"""`d`: describe the selected object and its events, as `kubectl describe` (k9s's `d`).

The cached (slimmed) object shows at once; the full object is fetched in a worker, never on the UI
thread. Events come from the live cache (per namespace for a namespace-limited user).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from diagnostics.model import ObjectRef
from diagnostics.records import Event
from gputui.output.sanitize import visible
from gputui.tui.describe import describe
from gputui.tui.screens.yaml_view import clean


class DescribeScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", show=True),
        Binding("y", "yaml", "YAML", show=True),
        Binding("c", "copy", "Copy", show=True),
    ]

    def __init__(self, ref: ObjectRef, fetch: Callable[[], Any] | None, cached: Any,
                 events: Sequence[Event], now: datetime) -> None:
        super().__init__()
        self.ref = ref
        self.fetch = fetch
        self.cached = cached
        self.events = events
        self.now = now
        self.text = ""
        self.busy = fetch is not None
        """True until the API answered (tests wait for it)."""

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="describe-body"):
            yield Static(Text(f"loading {visible(self.ref)}…", style="dim"), id="describe")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one("#describe-body").focus()
        if self.cached is not None:
            self.show(self.cached, "cached copy (slimmed); fetching the full object…" if self.fetch else
                      "as stored in the bundle (slimmed: gputui keeps what it shows and checks)")
        elif self.fetch is None:
            self.show(None, f"{self.ref} is not in this snapshot", error=True)
        if self.fetch is not None:
            self.load()

    @work(thread=True, exclusive=True, group="describe", exit_on_error=False)
    def load(self) -> None:
        from gputui.kubeapi import KubeError

        assert self.fetch is not None
        try:
            obj = self.fetch()
        except KubeError as exc:
            note = f"could not fetch {self.ref}: HTTP {exc.status} {exc.reason}: {exc.message}"[:300]
            self.app.call_from_thread(self.show, self.cached, note, True)
        else:
            self.app.call_from_thread(self.show, obj, "")
        self.busy = False

    def show(self, obj: Any, note: str, error: bool = False) -> None:
        parts: list[RenderableType] = []
        if note:
            parts.append(Text(visible(note), style="bold red" if error else "dim"))
        if obj is not None:
            self.text = describe(clean(obj), self.events, self.now)
            parts.append(Text(self.text))  # already made visible; Text, so never read as markup
        self.query_one("#describe", Static).update(Group(*parts))

    def action_yaml(self) -> None:
        from gputui.tui.app import GputuiApp

        app = self.app
        if isinstance(app, GputuiApp):
            app.show_yaml(self.ref)

    def action_copy(self) -> None:
        if self.text:
            self.app.copy_to_clipboard(self.text)
            self.notify(f"Copied the description of {self.ref}.")
