"""A confirmation modal that shows exactly what will happen (e.g. the debug pod it will create).

Its default is Cancel (focused, Enter and Esc and `n` answer no). An action that creates something
in the cluster asks for the object's name to be typed (`require=`): a reflex key sequence - k9s's
`d` then `y` - can never create a pod.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from gputui.output.sanitize import visible


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [Binding("escape", "answer(False)", "Cancel", show=True)]

    def __init__(self, title: str, body: RenderableType, confirm: str = "Create", *,
                 require: str | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.confirm = confirm
        self.require = require
        """Text the user must type (a node name) before the action runs; None: a plain yes/no."""

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box", classes="modal-box"):
            yield Static(Text(self.title_text), id="confirm-title", classes="modal-title")
            with VerticalScroll(id="confirm-body"):
                yield Static(self.body)
            if self.require is not None:
                yield Static(Text.assemble("Type ", (visible(self.require), "bold"), " and press Enter to ",
                                           self.confirm.lower(), "; Esc cancels."), id="confirm-hint")
                yield Input(placeholder=visible(self.require), id="confirm-input")
            with Horizontal(id="confirm-buttons"):
                yield Button(self.confirm, variant="warning", id="yes", compact=True,
                             disabled=self.require is not None)
                yield Button("Cancel (Esc)", variant="primary", id="no", compact=True)

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_one("#yes", Button).disabled = event.value.strip() != self.require

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.value.strip() == self.require:
            self.dismiss(True)
        else:
            self.notify("That is not the node name: nothing was created.", severity="warning")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def on_key(self, event: object) -> None:
        """`n` answers no unless it is being typed into the name field."""
        key = getattr(event, "key", "")
        if key == "n" and not isinstance(self.focused, Input):
            self.dismiss(False)

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
