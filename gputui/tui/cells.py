"""Pure: rows.Row (plain strings) -> the TUI's styled cells, in the TUI's column order.

The TUI puts what an on-call engineer scans for first (health, readiness, GPU counts, the pending
reason) at the left so it stays visible at 80 columns; the plain summary keeps rows.py's order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text

from diagnostics.model import CheckStatus, Finding, ObjectRef, Report, Severity
from gputui.output import rows
from gputui.output.sanitize import safe_text
from gputui.output.text import SEVERITY_STYLE  # one palette for the CLI, bundles and the TUI

SEVERITY_MARK = {
    Severity.CRITICAL: "✗✗",
    Severity.ERROR: "✗",
    Severity.WARNING: "!",
    Severity.INFO: "i",
    Severity.OK: "✓",
}
STATUS_MARK = {
    CheckStatus.PASSED: ("✓ passed", "green"),
    CheckStatus.FAILED: ("✗ failed", "bold red"),
    CheckStatus.SKIPPED: ("- skipped", "dim"),
    CheckStatus.ERRORED: ("! errored", "magenta"),
}

CELL_LIMIT = 500
"""Characters of one cluster string kept in a cell (a 100 KB message is noise; `y` shows it all)."""
Cell = Text
Cells = tuple[Text, ...]


@dataclass(frozen=True, slots=True)
class TableRow:
    """A keyed row ready for a KeyedTable, with what the filter needs."""

    key: str
    ref: ObjectRef | None
    cells: Cells


def sev_of(f: Finding) -> Severity:
    return f.severity or Severity.OK


def severity_badge(sev: Severity) -> Text:
    return Text(f"{SEVERITY_MARK[sev]} {sev.label.upper()}", style=SEVERITY_STYLE[sev])


def findings_by_subject(report: Report | None) -> dict[ObjectRef, list[Finding]]:
    """Findings about each subject, worst first (the report is already sorted worst first)."""
    out: dict[ObjectRef, list[Finding]] = {}
    for f in report.findings if report is not None else ():
        out.setdefault(f.subject, []).append(f)
    return out


def involvement(report: Report | None) -> dict[ObjectRef, Severity]:
    """Worst severity of the findings each object is the subject of *or affected by* (`related`).

    A stuck NodeClaim is rarely a finding's subject (the node or the pod is), but it is named as
    related; this lets the NodeClaims table bring it to the top.
    """
    out: dict[ObjectRef, Severity] = {}
    for f in report.findings if report is not None else ():
        for ref in (f.subject, *f.related):
            if sev_of(f) > out.get(ref, Severity.OK):
                out[ref] = sev_of(f)
    return out


def health(findings: Sequence[Finding]) -> Text:
    """`✗ gpu-not-advertised +1`: the worst finding's check names the problem in words."""
    if not findings:
        return Text("✓ ok", style="green")
    worst = findings[0]
    sev = sev_of(worst)
    if sev <= Severity.INFO:
        return Text(f"i {worst.check}", style=SEVERITY_STYLE[sev])
    more = f" +{len(findings) - 1}" if len(findings) > 1 else ""
    return Text(f"{SEVERITY_MARK[sev]} {worst.check}{more}", style=SEVERITY_STYLE[sev])


def _name(text: str, sev: Severity) -> Text:
    style = SEVERITY_STYLE[sev] if sev >= Severity.WARNING else ""
    return _t(text, style)


def _t(text: object, style: str = "") -> Text:
    """Cluster text as a cell: escape sequences shown (never interpreted), never read as markup."""
    t = safe_text(text, style, limit=CELL_LIMIT)
    t.no_wrap, t.overflow = True, "ellipsis"  # a column cut to fit the screen ends in `…` (Ctrl+W: all)
    return t


def _idx(columns: tuple[str, ...], *names: str) -> list[int]:
    return [columns.index(n) for n in names]


NODE_COLUMNS = ("NAME", "HEALTH", "READY", "GPUS C/A/R", "GPU", "TYPE", "CAPACITY", "NODEPOOL", "ZONE", "AGE")
_N = _idx(rows.NODE_COLUMNS, "NAME", "READY", "CAP", "ALLOC", "USED", "GPU", "TYPE", "CAPACITY", "NODEPOOL",
          "ZONE", "AGE")


def node_cells(row: rows.Row, findings: Sequence[Finding]) -> Cells:
    name, ready, cap, alloc, used, model, itype, ctype, pool, zone, age = (row.cells[i] for i in _N)
    ready_t = Text(ready, style="green" if ready == "Ready" else "bold red")
    badge = health(findings)
    if not findings and ready != "Ready":  # the node's own state, when no check named it (never "✓ ok")
        badge = Text(f"{SEVERITY_MARK[Severity.ERROR]} {ready or 'Ready unknown'}", style=SEVERITY_STYLE[Severity.ERROR])
    return (_name(name, row.severity), badge, ready_t, gpus_cell(cap, alloc, used), _t(model),
            _t(itype), _t(ctype), _t(pool), _t(zone), Text(age))


UNKNOWN_USED = "?"
"""The requested part of `8/8/?` while only the pending pods are read: not known yet, not zero."""


def unconfirmed(badge: Text) -> Text:
    """A node's HEALTH while only the pending pods are read: no `✓ ok`, since the checks that judge a
    node by the pods on it have not run yet; a problem already found stays as it is."""
    return Text("? checks wait for all pods", style="yellow") if badge.plain == "✓ ok" else badge


def gpus_cell(cap: str, alloc: str, used: str) -> Text:
    """`8/8/6`: capacity, allocatable, requested; red when the node advertises none of its GPUs."""
    gpus = Text(f"{cap}/{alloc}/{used}")
    if alloc in ("0", "") and cap not in ("0", ""):
        gpus.stylize("bold red")
    elif used == UNKNOWN_USED:
        gpus.stylize("bold yellow", len(gpus) - len(used))
    return gpus


def with_used(cells: Cells, row: rows.Row) -> Cells:
    """`node_cells` of a row that differs from the one `cells` were made from only in USED."""
    i = NODE_COLUMNS.index("GPUS C/A/R")
    cap, alloc, used = (row.cells[j] for j in _N[2:5])
    return (*cells[:i], gpus_cell(cap, alloc, used), *cells[i + 1:])


CLAIM_COLUMNS = ("NAME", "STAGE", "AGE", "REASON", "NODE", "NODEPOOL", "TYPE", "CAPACITY", "ZONE")
_C = _idx(rows.CLAIM_COLUMNS, "NAME", "STAGE", "AGE", "REASON", "NODE", "NODEPOOL", "TYPE", "CAPACITY", "ZONE")
_STAGES = ("Created", "Launched", "Registered", "Initialized")


def stage_cell(stage: str) -> Text:
    """`▰▰▱▱ Registered`: Launched -> Registered -> Initialized -> GPU ready at a glance."""
    if stage in ("GPU ready", "Ready"):
        return Text(f"▰▰▰▰ {stage}", style="green")
    if stage == "Deleting":
        return Text(f"──── {stage}", style="dim")
    done = _STAGES.index(stage) if stage in _STAGES else 0
    return Text(f"{'▰' * done}{'▱' * (4 - done)} {stage}", style="yellow")


def claim_cells(row: rows.Row) -> Cells:
    name, stage, age, reason, node, pool, itype, ctype, zone = (row.cells[i] for i in _C)
    return (_name(name, row.severity), stage_cell(stage), Text(age),
            _t(reason, "red" if reason else ""), _t(node), _t(pool), _t(itype), _t(ctype), _t(zone))


PENDING_COLUMNS = ("NAMESPACE/NAME", "GPUS", "AGE", "WHY")


def pending_cells(row: rows.Row) -> Cells:
    name, gpus, age, why = row.cells
    sev = row.severity
    return (_name(name, sev), Text(gpus), Text(age), _t(why, SEVERITY_STYLE[sev] if sev >= Severity.WARNING
                                                     else "yellow"))


POOL_COLUMNS = rows.POOL_COLUMNS


def pool_cells(row: rows.Row) -> Cells:
    name, bar, nodes, weight, cons, budget, ready = row.cells
    full = "█" in bar and "░" not in bar
    return (_name(name, row.severity), Text(bar, style="bold red" if full else "cyan"), Text(nodes), Text(weight),
            _t(cons), _t(budget), _t(ready, "green" if ready == "True" else "bold red"))


FINDING_COLUMNS = ("SEVERITY", "FINDING", "CHECK", "SUBJECT")


def finding_key(f: Finding, seq: int = 0) -> str:
    """Stable across refreshes: titles carry counts and ages, so keying by them re-added rows every frame."""
    return f"{f.code}|{f.subject}|{seq}"


def finding_keys(findings: Sequence[Finding]) -> list[str]:
    """Keys for findings in order; several findings of one check on one subject are numbered."""
    seen: dict[tuple[str, str], int] = {}
    keys = []
    for f in findings:
        k = (f.code, str(f.subject))
        seen[k] = seen.get(k, -1) + 1
        keys.append(finding_key(f, seen[k]))
    return keys


def finding_cells(f: Finding) -> Cells:
    sev = sev_of(f)
    return (severity_badge(sev), _t(f.title), Text(f"{f.code} {f.check}", style="dim"), _t(f.subject))


CHECK_COLUMNS = ("RESULT", "CHECK", "DETAIL", "TITLE")


def check_rows(report: Report) -> list[TableRow]:
    out = []
    for r in report.results:
        mark, style = STATUS_MARK[r.status]
        if r.status is CheckStatus.FAILED:
            n = len(r.findings)
            detail = Text(f"{n} finding{'s' if n != 1 else ''} ({r.worst.label})", style=SEVERITY_STYLE[r.worst])
        elif r.status is CheckStatus.PASSED:
            detail = Text(f"ok, {r.examined} examined" if r.examined else "ok", style="dim")
        else:
            detail = _t(r.reason, style)
        out.append(TableRow(f"check|{r.code}", None, (Text(mark, style=style), Text(f"{r.code} {r.check}"),
                                                      detail, Text(r.title, style="dim"))))
    return out


def grouped_finding_rows(findings: Sequence[Finding]) -> list[TableRow]:
    """Findings grouped by severity, each group under a header row (key `group|<severity>`)."""
    out: list[TableRow] = []
    current: Severity | None = None
    ordered = sorted(findings, key=lambda f: -sev_of(f))
    for f, key in zip(ordered, finding_keys(ordered)):
        sev = sev_of(f)
        if sev != current:
            current = sev
            n = sum(1 for g in findings if sev_of(g) == sev)
            out.append(TableRow(f"group|{sev.label}", None, (
                Text(f"── {sev.label.upper()} ({n})", style=SEVERITY_STYLE[sev]), Text(""), Text(""), Text(""))))
        out.append(TableRow(key, f.subject, finding_cells(f)))
    return out


def finding_counts(report: Report) -> Text:
    """`3 findings: 2 error · 1 warning` for a report with findings. Whether no findings is an all-clear
    is `honesty.findings_summary`'s call alone (it knows which checks could not look)."""
    findings = report.findings
    skipped = sum(1 for r in report.results if r.status is CheckStatus.SKIPPED)
    t = Text(f"{len(findings)} finding{'s' if len(findings) != 1 else ''}: ")
    first = True
    for sev in sorted({sev_of(f) for f in findings}, reverse=True):
        if not first:
            t.append(" · ", style="dim")
        first = False
        t.append(f"{sum(1 for f in findings if sev_of(f) == sev)} {sev.label}", style=SEVERITY_STYLE[sev])
    if skipped:
        t.append(f" · {skipped} check{'s' if skipped != 1 else ''} skipped", style="dim")
    return t
