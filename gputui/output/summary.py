"""Plain (non-TUI) summary of a snapshot: GPU nodes, NodeClaims, pending GPU pods, top findings."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from diagnostics.model import Report
from diagnostics.snapshot import Snapshot
from gputui.output import rows
from gputui.output.sanitize import visible
from gputui.output.text import SEVERITY_STYLE


_PROSE = ("REASON", "WHY")
"""Columns of free text: the only ones that wrap. Names are copied into kubectl, so a narrow
terminal wraps the reason, never a node or NodeClaim name."""


def _table(title: str, columns: tuple[str, ...], data: list[rows.Row]) -> Table:
    t = Table(title=title, title_justify="left", title_style="bold", box=None, pad_edge=False,
              header_style="bold dim")
    for c in columns:
        t.add_column(c, overflow="fold", no_wrap=c not in _PROSE)
    for r in data:
        t.add_row(*(Text(visible(c, limit=300)) for c in r.cells))  # cluster text: never markup or escapes
    if not data:
        t.add_row("(none)", *([""] * (len(columns) - 1)))
    return t


def render_summary(snap: Snapshot, report: Report, console: Console) -> None:
    ctx = snap.cluster.get("context", "")
    console.print(Text.assemble(("gputui ", "bold"), f"{visible(ctx)} ", (f"{snap.taken_at:%Y-%m-%d %H:%M:%SZ}", "dim")))
    console.print(_table("GPU nodes", rows.NODE_COLUMNS, rows.node_rows(snap, report)))
    console.print()
    console.print(_table("NodeClaims", rows.CLAIM_COLUMNS, rows.claim_rows(snap, report)))
    console.print()
    console.print(_table("Pending GPU pods", rows.PENDING_COLUMNS, rows.pending_rows(snap, report)))
    console.print()
    console.print(_table("NodePools", rows.POOL_COLUMNS, rows.pool_rows(snap, report)))
    console.print()
    findings = report.findings
    console.print(Text(f"Findings ({len(findings)})", style="bold"))
    for f in findings[:15]:
        sev = f.severity
        assert sev is not None
        console.print(Text.assemble((f"{sev.label.upper():8}", SEVERITY_STYLE[sev]), f" {f.check:30} ",
                                    (visible(f.subject), "bold"), f"  {visible(f.title)}"))
    if len(findings) > 15:
        console.print(Text(f"... {len(findings) - 15} more: gputui diagnose", style="dim"))
