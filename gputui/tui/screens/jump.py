"""`:` jump to a view, k9s-style: `:nodes`, `:nodeclaims`, `:pods`, `:nodepools`, `:findings`, `:node NAME`,
`:ctx [NAME]` and `:ns [NAME]` (switch context / namespace live, as k9s's `:ctx` and `:ns`)."""

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
    "ctx": "ctx", "context": "ctx", "contexts": "ctx", "ns": "ns", "namespace": "ns", "namespaces": "ns",
    "q": "quit", "quit": "quit", "q!": "quit",
    "nodepools": "nodepools", "nodepool": "nodepools", "np": "nodepools", "pools": "nodepools",
    "findings": "findings", "finding": "findings", "checks": "findings", "checklist": "findings",
    "overview": "overview", "home": "overview",
}
HELP = "views: nodes · nodeclaims · pods · pending · nodepools · findings · ctx · ns · or `node NAME`, `pod NS/NAME`"
"""The line above the `:` prompt."""
SUGGESTIONS = ["nodes", "nodeclaims", "pods", "pending", "nodepools", "findings", "overview", "ctx", "ns",
               "node ", "pod ", "nodeclaim ", "nodepool ", "ec2nodeclass "]


def resolve(text: str) -> tuple[str, str] | None:
    """`nodes` -> ("nodes", ""); `node ip-1` -> ("object", "node/ip-1"); None if unknown."""
    text = text.strip().lstrip(":").strip()
    if not text:
        return None
    head, _, rest = text.partition(" ")
    rest = rest.strip()
    view = VIEWS.get(head.lower())
    if view in ("ctx", "ns"):
        return (view, rest)
    if head.lower() == "pending" and not rest:
        return ("pods", "pending")
    if view == "pods" and rest.lower() in ("pending", "/pending"):
        return ("pods", "pending")
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

    def __init__(self, prefill: str = "") -> None:
        super().__init__()
        self.prefill = prefill
        """What a pasted `:pods` brought along (the `:` itself opened this prompt)."""

    def compose(self) -> ComposeResult:
        yield Label(HELP, id="jump-help")
        yield Input(value=self.prefill, placeholder=":", id="jump-input",
                    suggester=SuggestFromList(SUGGESTIONS, case_sensitive=False))

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
