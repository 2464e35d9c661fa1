"""A finding rendered for reading: title, evidence (paths, values, counts, ages), fix and commands."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text
from textual.widgets import Static

from diagnostics.model import Finding, Severity
from gputui.output.sanitize import safe_text, visible
from gputui.output.text import evidence_line
from gputui.tui.cells import SEVERITY_STYLE, sev_of


def render_finding(f: Finding, *, doc_why: str = "") -> RenderableType:
    sev = sev_of(f)
    parts: list[RenderableType] = []
    head = Text()
    head.append(f" {sev.label.upper()} ", style=SEVERITY_STYLE[sev] if sev >= Severity.CRITICAL
                else f"reverse {SEVERITY_STYLE[sev]}")
    head.append(f"  {f.code} {f.check}", style="bold")
    head.append(f"  {visible(f.subject)}", style="cyan")
    parts += [head, Text(""), safe_text(f.title, "bold"), Text("")]
    if doc_why:
        parts += [Text("Why it matters", style="bold underline"), Text(doc_why), Text("")]
    parts.append(Text("Evidence", style="bold underline"))
    if f.evidence:
        parts.extend(evidence_line(e) for e in f.evidence)
    else:
        parts.append(Text("  (none recorded)", style="dim"))
    parts.append(Text(""))
    if f.remediation is not None:
        parts.append(Text("Fix", style="bold underline"))
        parts.append(safe_text(f.remediation.text, newlines=True))
        if f.remediation.commands:
            parts.append(Text(""))
            parts.append(Text("Commands (c copies them all; select text with the mouse to copy one):",
                              style="dim"))
            for cmd in f.remediation.commands:
                parts.append(safe_text(f"  $ {cmd}", "green"))
        parts.append(Text(""))
    if f.related:
        names = [str(r) for r in f.related]
        more = f" (+{len(names) - 20} more)" if len(names) > 20 else ""
        parts.append(Text("Affects", style="bold underline"))
        parts.append(safe_text(", ".join(names[:20]) + more))
    return Group(*parts)


def commands_text(f: Finding) -> str:
    """What `c` copies: the commands, one per line, ready to paste into a shell."""
    return "\n".join(f.remediation.commands) if f.remediation else ""


class EvidencePanel(Static):
    """Static so the text is selectable with the mouse (copy one command) and wraps at any width."""

    DEFAULT_CSS = """
    EvidencePanel { padding: 1 2; height: auto; }
    """

    def show(self, finding: Finding, doc_why: str = "") -> None:
        self.update(render_finding(finding, doc_why=doc_why))
