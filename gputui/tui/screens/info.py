"""A read-only modal for text that needs reading, not a toast: a check's documentation, a debug result."""

from __future__ import annotations

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from rich.text import Text
from textual.widgets import Static


class InfoScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,enter", "close", "Close", show=True)]

    def __init__(self, title: str, body: RenderableType) -> None:
        super().__init__()
        self.title_text = title
        self.body = body

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box"):
            yield Static(Text(self.title_text), classes="modal-title")
            with VerticalScroll(id="info-body"):
                yield Static(self.body, id="info-text")

    def on_mount(self) -> None:
        self.query_one("#info-body").focus()

    def action_close(self) -> None:
        self.dismiss(None)
