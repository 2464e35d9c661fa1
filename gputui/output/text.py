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


def _num(v: Any) -> str:
    """`8`, not `8.0`: quantities are floats in records, whole numbers in what users type."""
    return f"{v:g}" if isinstance(v, float) and v.is_integer() and abs(v) < 1e15 else str(v)


def _nested(v: Any) -> str:
    """A value inside a mapping or list: `{k=v, ...}` / `[a, b]`, never Python's repr (`{'tags': ...}`)."""
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}={_nested(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_nested(x) for x in v) + "]"
    return _num(v)


def short(value: Any, limit: int = 300) -> str:
    if isinstance(value, dict):
        text = ", ".join(f"{k}={_nested(v)}" for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        text = ", ".join(_nested(v) for v in value)
    else:
        text = "" if value is None else _num(value)
    if value is not None and not text:  # `status.subnets = ` read as a cut-off line
        text = "(empty)"
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
    elif isinstance(e.value, str) and "\n" in e.value.strip():
        # A log tail: its last lines, one per line (cut from the front, the error is at the end).
        t.append(visible(e.path), style="cyan")
        if e.note:
            t.append(f"  — {visible(e.note)}", style="dim")
        for line in [ln for ln in e.value.strip().splitlines() if ln.strip()][-_TAIL_LINES:]:
            t.append("\n      │ ", style="dim")
            t.append(visible(line.rstrip(), limit=_TAIL_WIDTH))
        return t
    else:
        t.append(visible(e.path), style="cyan")
        t.append(" = ")
        t.append(short(e.value))
        if e.age_seconds is not None:
            t.append(f" (for {human_age(e.age_seconds)})", style="dim")
    if e.note:
        t.append(f"  — {visible(e.note)}", style="dim")
    return t


_TAIL_LINES = 6
_TAIL_WIDTH = 240


def finding_block(f: Finding) -> RenderableType:
    sev = f.severity or Severity.OK
    head = Text()
    head.append(f"{sev.label.upper():8}", style=SEVERITY_STYLE[sev])
    head.append(f" {f.code} {f.check}", style="bold")
    head.append(f"  {visible(f.subject)}")
    radius = f.impact.text() if f.impact is not None else ""
    if radius:
        head.append(f"  — {radius}", style="bold")
    parts: list[RenderableType] = [head, Text("  " + visible(f.title))]
    if f.evidence:
        parts.append(Text("  Evidence:", style="bold"))
        parts.extend(evidence_line(e) for e in f.evidence)
    if f.remediation:
        parts.append(Text.assemble(("  Fix: ", "bold green"), visible(f.remediation.text, newlines=True)))
        # One line however narrow the terminal: a hard wrap would paste as two commands (the terminal's own
        # soft wrap copies as one).
        parts.extend(Text(f"    $ {visible(c, limit=None, newlines=True)}", style="green", no_wrap=True,
                          overflow="ignore") for c in f.remediation.commands)
    if f.related:
        names = [visible(r, limit=300) for r in f.related]
        more = f" (+{len(names) - 8} more)" if len(names) > 8 else ""
        parts.append(Text(f"  Affects: {', '.join(names[:8])}{more}", style="dim"))
    parts.append(Text(""))
    return Group(*parts)


def checklist(report: Report, verbose: bool = True) -> Iterable[RenderableType]:
    """The checklist; unless `verbose`, the passed checks fold into one line."""
    counts = {s: sum(1 for r in report.results if r.status is s) for s in CheckStatus}
    yield Text.assemble(("Checklist", "bold"), f" ({len(report.results)} checks: "
                        f"{counts[CheckStatus.FAILED]} failed, {counts[CheckStatus.PASSED]} passed, "
                        f"{counts[CheckStatus.SKIPPED]} skipped, {counts[CheckStatus.ERRORED]} errored)")
    from diagnostics.verdict import kept_from_looking

    passed = [r for r in report.results if r.status is CheckStatus.PASSED]
    absent: dict[str, list[str]] = {}  # skipped because a component is not there: folded by reason
    for r in report.results:
        if r.status is CheckStatus.PASSED and not verbose:
            continue
        if r.status is CheckStatus.SKIPPED and not verbose and not kept_from_looking(r):
            absent.setdefault(r.reason, []).append(r.code)
            continue
        mark, style = STATUS_MARK[r.status]
        t = Text(f"  {mark} ", style=style)
        t.append(f"{r.code} {r.check:34}")
        if r.status is CheckStatus.FAILED and not r.findings:
            # Failed on other objects than the target, or folded into another check's finding: never "ok".
            why = (f" {r.elsewhere} finding{'s' if r.elsewhere != 1 else ''} elsewhere in the cluster"
                   if r.elsewhere else f" {visible(r.reason)}")
            t.append(why, style="red")
        elif r.status is CheckStatus.FAILED:
            n = len(r.findings)
            t.append(f" {n} finding{'s' if n != 1 else ''} ({r.worst.label})", style=SEVERITY_STYLE[r.worst])
            if r.elsewhere:
                t.append(f", {r.elsewhere} elsewhere", style="dim")
        elif r.status is CheckStatus.PASSED:
            t.append(f" ok, {r.examined} examined" if r.examined else " ok", style="dim")
        else:
            t.append(f" {r.status.value}: {visible(r.reason)}", style=style)
        yield t
    for reason, codes in absent.items():
        yield Text(f"  - {len(codes)} skipped ({' '.join(codes)}): {visible(reason)}", style="dim")
    if passed and not verbose:
        yield Text(f"  ✓ {len(passed)} passed: " + " ".join(r.code for r in passed) + "  (-v lists them)",
                   style="green")


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


def verdict_lines(report: Report) -> Iterable[Text]:
    """The verdict first (`diagnostics.verdict.judge`), then what could not be seen and, for a pending pod
    nothing explains, what the schedulers said and what was checked."""
    from diagnostics.verdict import EXPLAINED, NO_PROBLEMS, PROBLEMS, judge

    v = report.verdict or judge(report)
    worst = max(report.worst, v.floor)
    style = "bold green" if v.verdict == NO_PROBLEMS else SEVERITY_STYLE.get(worst, "bold yellow")
    if v.verdict not in (EXPLAINED, PROBLEMS, NO_PROBLEMS) and worst < Severity.WARNING:
        style = "bold"
    yield Text(visible(v.headline, limit=None), style=style)
    for b in v.blind:
        yield Text("  could not see: " + visible(b), style="yellow")
    for m in v.messages:
        yield Text("  said: " + visible(m), style="dim")
    for c in v.checked:
        yield Text("  checked: " + visible(c), style="dim")


def render_report(report: Report, console: Console, *, verbose: bool = True) -> None:
    from diagnostics.relations import elsewhere_line

    for line in verdict_lines(report):
        console.print(line)
    ctx = report.cluster.get("context", "")
    console.print(Text.assemble(("gputui diagnose ", "bold"), (visible(report.target), "bold cyan"),
                                f" — context {visible(ctx)}" if ctx else "",
                                f" — {report.taken_at.strftime('%Y-%m-%d %H:%M:%SZ')}"))
    console.print(sources_line(report))
    console.print()
    findings = report.findings
    for f in findings:
        console.print(finding_block(f), crop=False)  # commands stay whole lines (finding_block)
    more = elsewhere_line(report)
    if more:
        console.print(Text(more, style="bold"))
        console.print()
    for item in checklist(report, verbose):
        console.print(item)
