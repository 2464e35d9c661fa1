"""`:` jump to a view, k9s-style: `:nodes`, `:nodeclaims`, `:pods`, `:nodepools`, `:findings`, `:node NAME`."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Input, Label

VIEWS = {
    "nodes": "nodes", "node": "nodes", "no": "nodes",
    "nodeclaims": "nodeclaims", "nodeclaim": "nodeclaims", "nc": "nodeclaims", "claims": "nodeclaims",
    "pods": "pods", "pod": "pods", "po": "pods", "pending": "pods",
    "nodepools": "nodepools", "nodepool": "nodepools", "np": "nodepools", "pools": "nodepools",
    "findings": "findings", "finding": "findings", "checks": "findings", "checklist": "findings",
    "overview": "overview", "home": "overview",
}
SUGGESTIONS = ["nodes", "nodeclaims", "pods", "nodepools", "findings", "overview", "node ", "pod ",
               "nodeclaim ", "nodepool ", "ec2nodeclass "]


def resolve(text: str) -> tuple[str, str] | None:
    """`nodes` -> ("nodes", ""); `node ip-1` -> ("object", "node/ip-1"); None if unknown."""
    text = text.strip().lstrip(":").strip()
    if not text:
        return None
    head, _, rest = text.partition(" ")
    rest = rest.strip()
    if "/" in head and not rest:
        return ("object", head)
    if rest:
        from gputui.targets import KINDS

        if head.lower() in KINDS:
            return ("object", f"{head.lower()}/{rest}")
        return None
    view = VIEWS.get(head.lower())
    return (view, "") if view else None


class JumpScreen(ModalScreen[str | None]):
    """A one-line prompt at the bottom; returns what was typed (the app resolves it)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", show=False)]

    def compose(self) -> ComposeResult:
        yield Label("views: nodes · nodeclaims · pods · nodepools · findings · or `node NAME`, `pod NS/NAME`",
                    id="jump-help")
        yield Input(placeholder=":", id="jump-input", suggester=SuggestFromList(SUGGESTIONS, case_sensitive=False))

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
