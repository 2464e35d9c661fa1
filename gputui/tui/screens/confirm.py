"""A yes/no modal that shows exactly what will happen (e.g. the debug pod it will create)."""

from __future__ import annotations

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from rich.text import Text
from textual.widgets import Button, Static


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [
        Binding("escape,n", "answer(False)", "Cancel", show=True),
        Binding("y", "answer(True)", "Confirm", show=True),
    ]

    def __init__(self, title: str, body: RenderableType, confirm: str = "Create") -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.confirm = confirm

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box", classes="modal-box"):
            yield Static(Text(self.title_text), id="confirm-title", classes="modal-title")
            with VerticalScroll(id="confirm-body"):
                yield Static(self.body)
            with Horizontal(id="confirm-buttons"):
                yield Button(f"{self.confirm} (y)", variant="warning", id="yes", compact=True)
                yield Button("Cancel (n)", variant="primary", id="no", compact=True)

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
