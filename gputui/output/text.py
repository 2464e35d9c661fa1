"""Rich renderables for a Report: findings first (worst first), then the checklist.

Readable at 80 columns and when piped (Rich drops colour codes when stdout is not a terminal).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.text import Text

from diagnostics.model import CheckStatus, Evidence, EvidenceKind, Finding, Report, Severity
from diagnostics.timeutil import human_age
from gputui.output.sanitize import visible

SEVERITY_STYLE = {
    Severity.CRITICAL: "bold white on red",
    Severity.ERROR: "bold red",
    Severity.WARNING: "bold yellow",
    Severity.INFO: "cyan",
    Severity.OK: "green",
}
STATUS_MARK = {
    CheckStatus.PASSED: ("✓", "green"),
    CheckStatus.FAILED: ("✗", "red"),
    CheckStatus.SKIPPED: ("-", "dim"),
    CheckStatus.ERRORED: ("!", "magenta"),
}


def short(value: Any, limit: int = 300) -> str:
    if isinstance(value, dict):
        text = ", ".join(f"{k}={v}" for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        text = ", ".join(str(v) for v in value)
    else:
        text = "" if value is None else str(value)
    return visible(text, limit=limit)  # cluster text: escapes shown, never interpreted


def evidence_line(e: Evidence) -> Text:
    t = Text("  • ")
    if e.subject is not None:
        t.append(f"{visible(e.subject)} ", style="bold")
    if e.kind is EvidenceKind.EVENT:
        t.append(visible(e.path), style="cyan")
        extra = []
        if e.count and e.count > 1:
            extra.append(f"x{e.count}")
        if e.age_seconds is not None:
            extra.append(f"{human_age(e.age_seconds)} ago")
        if extra:
            t.append(f" ({', '.join(extra)})", style="dim")
        t.append(f": {short(e.value)}")
    elif e.kind is EvidenceKind.ABSENCE:
        t.append("absent: ", style="yellow")
        t.append(visible(e.path))
    else:
        t.append(visible(e.path), style="cyan")
        t.append(" = ")
        t.append(short(e.value))
        if e.age_seconds is not None:
            t.append(f" (for {human_age(e.age_seconds)})", style="dim")
    if e.note:
        t.append(f"  — {visible(e.note)}", style="dim")
    return t


def finding_block(f: Finding) -> RenderableType:
    sev = f.severity or Severity.OK
    head = Text()
    head.append(f"{sev.label.upper():8}", style=SEVERITY_STYLE[sev])
    head.append(f" {f.code} {f.check}", style="bold")
    head.append(f"  {visible(f.subject)}")
    parts: list[RenderableType] = [head, Text("  " + visible(f.title))]
    if f.evidence:
        parts.append(Text("  Evidence:", style="bold"))
        parts.extend(evidence_line(e) for e in f.evidence)
    if f.remediation:
        parts.append(Text.assemble(("  Fix: ", "bold green"), visible(f.remediation.text, newlines=True)))
        parts.extend(Text(f"    $ {visible(c, limit=None, newlines=True)}", style="green") for c in f.remediation.commands)
    if f.related:
        names = [visible(r, limit=300) for r in f.related]
        more = f" (+{len(names) - 8} more)" if len(names) > 8 else ""
        parts.append(Text(f"  Affects: {', '.join(names[:8])}{more}", style="dim"))
    parts.append(Text(""))
    return Group(*parts)


def checklist(report: Report) -> Iterable[RenderableType]:
    counts = {s: sum(1 for r in report.results if r.status is s) for s in CheckStatus}
    yield Text.assemble(("Checklist", "bold"), f" ({len(report.results)} checks: "
                        f"{counts[CheckStatus.FAILED]} failed, {counts[CheckStatus.PASSED]} passed, "
                        f"{counts[CheckStatus.SKIPPED]} skipped, {counts[CheckStatus.ERRORED]} errored)")
    for r in report.results:
        mark, style = STATUS_MARK[r.status]
        t = Text(f"  {mark} ", style=style)
        t.append(f"{r.code} {r.check:34}")
        if r.status is CheckStatus.FAILED:
            n = len(r.findings)
            t.append(f" {n} finding{'s' if n != 1 else ''} ({r.worst.label})", style=SEVERITY_STYLE[r.worst])
        elif r.status is CheckStatus.PASSED:
            t.append(f" ok, {r.examined} examined" if r.examined else " ok", style="dim")
        else:
            t.append(f" {r.status.value}: {visible(r.reason)}", style=style)
        yield t


def sources_line(report: Report) -> Text:
    t = Text("Sources: ", style="bold")
    first = True
    for name, st in report.sources.items():
        if not first:
            t.append(" · ", style="dim")
        first = False
        state = st.get("state", "?")
        style = "green" if state == "ok" else ("yellow" if state in ("stale", "not configured") else "red")
        t.append(f"{name} ")
        t.append(state + (" (partial)" if st.get("partial") else ""), style=style)
        if state not in ("ok",) and st.get("detail"):
            t.append(f" ({visible(st['detail'])})", style="dim")
    return t


def render_report(report: Report, console: Console) -> None:
    ctx = report.cluster.get("context", "")
    console.print(Text.assemble(("gputui diagnose ", "bold"), (visible(report.target), "bold cyan"),
                                f" — context {visible(ctx)}" if ctx else "",
                                f" — {report.taken_at.strftime('%Y-%m-%d %H:%M:%SZ')}"))
    console.print(sources_line(report))
    console.print()
    findings = report.findings
    if not findings:
        console.print(Text("No problems found.", style="bold green"))
        console.print()
    for f in findings:
        console.print(finding_block(f))
    for line in checklist(report):
        console.print(line)
