"""One finding: evidence with exact paths and values, the fix, and commands to copy."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from diagnostics.model import Finding, ObjectRef
from diagnostics.registry import find
from gputui.tui.screens.base import DataScreen
from gputui.tui.widgets.evidence_panel import EvidencePanel, commands_text


class FindingScreen(DataScreen):
    """Follows its finding across snapshots (by code, subject and title) and says when it is resolved."""

    BINDINGS = [
        Binding("c", "copy", "Copy commands", show=True),
        Binding("o", "open_subject", "Open subject", show=True),
    ]

    def __init__(self, finding: Finding) -> None:
        super().__init__()
        self.finding = finding
        self.key = (finding.code, str(finding.subject))
        self.resolved = False

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="finding-body"):
            yield Static("", id="resolved")
            yield EvidencePanel(id="evidence")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#finding-body").focus()

    def render_data(self) -> None:
        report = self.gapp.report
        if report is not None:
            # The same finding in the new report: same check and subject (its title may carry new counts).
            same = [f for f in report.findings if (f.code, str(f.subject)) == self.key]
            current = next((f for f in same if f.title == self.finding.title), same[0] if same else None)
            self.resolved = current is None
            if current is not None:
                self.finding = current
        banner = self.query_one("#resolved", Static)
        banner.display = self.resolved
        if self.resolved:
            banner.update(Text("✓ No longer reported by the latest diagnostics run: this is what it said.",
                               style="bold green"))
        spec = find(self.finding.check) if self.finding.check else None
        self.query_one(EvidencePanel).show(self.finding, spec.section("Why it matters") if spec else "")

    def selected_ref(self) -> ObjectRef | None:
        return self.finding.subject

    def action_copy(self) -> None:
        text = commands_text(self.finding)
        if not text:
            self.notify("This finding has no commands to copy.", severity="warning")
            return
        self.app.copy_to_clipboard(text)
        n = len(text.splitlines())
        self.notify(f"Copied {n} command{'s' if n != 1 else ''} to the clipboard.")

    def action_open_subject(self) -> None:
        self.gapp.open_ref(self.finding.subject)
