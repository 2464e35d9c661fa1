"""`?`: every key, what the colours mean, and where to start when a GPU pod is stuck."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from diagnostics.model import Severity
from gputui.tui.cells import SEVERITY_STYLE, health

KEYS: tuple[tuple[str, str], ...] = (
    (":", "jump to a view: nodes, nodeclaims, pods (every GPU pod), pending, nodepools, findings, "
          "`node NAME`, `pod NS/NAME`; `ctx [NAME]` / `ns [NAME]` switch context / namespace"),
    ("/", "filter the tables: text, or a label `key=value` (`karpenter.sh/nodepool=gpu`); Esc clears"),
    ("Enter", "drill down: finding -> evidence and fix; row -> details; related object -> its details"),
    ("Esc", "clear the filter first, then restore a maximized table, then back"),
    ("j / k", "down / up (as in k9s and vi)"),
    ("Tab / Shift+Tab", "next / previous table"),
    ("Left / Right", "scroll a wide table sideways"),
    ("d", "describe the selected object and its events (as kubectl describe)"),
    ("y", "full YAML of the selected object (fetched from the API)"),
    ("l", "logs: a pod's container; a node's GPU plugin pods and Karpenter's lines about it (p previous)"),
    ("Shift+N/A/S", "sort by name / age / status (again reverses, a third time: worst first)"),
    ("Ctrl+W", "wide: every column whole"),
    ("Ctrl+D", "debug pod on the selected node: runs nvidia-smi there (type the node name; hidden with --read-only)"),
    ("f", "findings and the checklist (passed / failed / skipped and why)"),
    ("r", "re-run diagnostics now (and poll Prometheus / AWS)"),
    ("e", "export a diagnostic bundle (redacted) to attach to a ticket"),
    ("c", "on a finding: copy its commands to the clipboard"),
    ("o", "on a finding: open the object it is about"),
    ("Ctrl+P", "command palette: every action by name"),
    ("?", "this help"),
    ("q / Ctrl+C", "quit"),
)


def help_text(read_only: bool = False) -> RenderableType:
    keys = Table.grid(padding=(0, 2))
    keys.add_column(style="bold cyan", no_wrap=True)
    keys.add_column()
    for key, what in KEYS:
        keys.add_row(key, what)
    legend = Text()
    for sev in (Severity.CRITICAL, Severity.ERROR, Severity.WARNING, Severity.INFO):
        legend.append(f" {sev.label} ", style=SEVERITY_STYLE[sev])
        legend.append("  ")
    legend.append_text(health([]))
    start = Text.assemble(
        ("Where to start. ", "bold"),
        "The Findings table at the top lists root causes first (EC2NodeClass / NodePool / node problems), "
        "then their symptoms (pending pods). A pending pod's WHY column names the finding that explains it; "
        "the HEALTH column marks the node or NodeClaim at fault. Enter on a finding shows its evidence and "
        "the commands that fix it.")
    parts: list[RenderableType] = [start, Text(""), Text("Keys", style="bold underline"), keys, Text(""),
                                   Text("Health colours", style="bold underline"), legend]
    if read_only:
        parts += [Text(""), Text("Read-only mode: nothing will be created in the cluster (no debug pods, Ctrl+D hidden).",
                                 style="yellow")]
    return Group(*parts)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close", show=True)]

    def __init__(self, read_only: bool = False) -> None:
        super().__init__()
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box", classes="modal-box"):
            yield Static("gputui help (Esc closes)", classes="modal-title")
            with VerticalScroll(id="help-body"):
                yield Static(help_text(self.read_only))

    def on_mount(self) -> None:
        self.query_one("#help-body").focus()

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)
