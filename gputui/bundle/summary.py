"""SUMMARY.md: the part of a bundle a human pastes into a ticket - what is wrong, the evidence, what to do.

Rendered from the *redacted* report JSON, so nothing the redactor removed comes back through it.
Plain GitHub-flavoured Markdown: renders in GitHub, GitLab, Jira (markdown), and reads fine as text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from diagnostics.timeutil import human_age
from gputui.output.sanitize import visible

MAX_DETAILED = 15
_MARK = {"passed": "✓", "failed": "✗", "skipped": "–", "errored": "!"}


def _cell(text: Any) -> str:
    """A table cell: one line, pipes escaped, control characters shown (the text came from the cluster)."""
    return visible(" ".join(str(text).split()), limit=1000).replace("|", "\\|")


def _code(text: Any) -> str:
    s = visible(" ".join(str(text).split()), limit=1000)
    tick = "``" if "`" in s else "`"
    pad = " " if tick == "``" else ""
    return f"{tick}{pad}{s}{pad}{tick}"


def _plain(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)


def _value(v: Any, limit: int = 300) -> str:
    if isinstance(v, Mapping):
        text = ", ".join(f"{k}={_plain(x)}" for k, x in v.items())
    elif isinstance(v, (list, tuple)):
        text = ", ".join(_plain(x) for x in v)
    else:
        text = "" if v is None else str(v)
    return visible(" ".join(text.split()), limit=limit)


def evidence_line(e: Mapping[str, Any]) -> str:
    subject = f"{_code(e['subject'])} " if e.get("subject") else ""
    kind, path = e.get("kind"), e.get("path", "")
    extra = []
    if e.get("count") and e["count"] > 1:
        extra.append(f"×{e['count']}")
    if e.get("age_seconds") is not None:
        extra.append(f"{human_age(e['age_seconds'])} ago" if kind == "event" else f"for {human_age(e['age_seconds'])}")
    when = f" ({', '.join(extra)})" if extra else ""
    if kind == "absence":
        line = f"{subject}absent: {_code(path)}"
    elif kind == "event":
        line = f"{subject}{_code(path)}{when}: {_value(e.get('value'))}"
    else:
        line = f"{subject}{_code(path)} = {_value(e.get('value'))}{when}"
    if e.get("note"):
        line += f" — {_value(e['note'])}"
    return f"- {line}"


def render(report: Mapping[str, Any], manifest: Mapping[str, Any], *, filename: str) -> str:
    findings: Sequence[Mapping[str, Any]] = report.get("findings") or []
    results: Sequence[Mapping[str, Any]] = report.get("results") or []
    ctx = manifest.get("context") or {}
    out: list[str] = []
    w = out.append
    counts: dict[str, int] = {}
    for f in findings:
        counts[f["severity"]] = counts.get(f["severity"], 0) + 1
    tally = ", ".join(f"{n} {s}" for s in ("critical", "error", "warning", "info") if (n := counts.get(s)))
    w(f"# gputui diagnostic bundle: {report.get('target', 'cluster')}")
    w("")
    w(f"- **Cluster:** context {_code(ctx.get('name') or '?')}"
      + (f", Kubernetes {ctx['version']}" if ctx.get("version") else "")
      + (f", server {_code(ctx['server'])}" if ctx.get("server") else
         (f", server {_code(ctx['server_sha256'][:19] + '…')} (hashed)" if ctx.get("server_sha256") else "")))
    w(f"- **Taken at:** {report.get('taken_at', '?')} (gputui {manifest.get('gputui_version', '?')})")
    summary: Mapping[str, Any] = report.get("summary") or {}
    clear = report.get("verdict", "no problems found") == "no problems found"  # schema 1 reports had no verdict
    if summary.get("headline"):
        w(f"- **Verdict:** {_value(summary['headline'], 500)}")
    w(f"- **Result:** worst **{str(report.get('worst', 'ok')).upper()}**"
      + (f" — {len(findings)} finding{'s' if len(findings) != 1 else ''} ({tally})" if findings else
         (" — no problems found" if clear else f" — {_value(report.get('verdict'), 80)}")))
    for seen in summary.get("cannot_see") or ():
        w(f"- **Could not see:** {_value(seen, 500)}")
    w(f"- **Bundle:** `{filename}` — reopen with `gputui diagnose --bundle {filename}` "
      f"or browse with `gputui --bundle {filename}`")
    w("")
    w("## What is wrong")
    w("")
    if not findings and clear:
        w("No check found a problem. The checklist below says what was examined and what was skipped.")
    elif not findings:
        w("No check found a problem where it could look; this is not an all-clear (see what could not be seen "
          "above, and the checklist below).")
    for i, f in enumerate(findings, start=1):
        w(f"{i}. **{f['severity'].upper()}** [{f['code']} {f['check']}] {_code(f['subject'])}: "
          f"{_value(f['title'], 500)}")
    w("")
    for i, f in enumerate(findings[:MAX_DETAILED], start=1):
        w(f"## {i}. [{f['code']}] {_value(f['title'], 200)}")
        w("")
        w(f"Subject {_code(f['subject'])}, severity **{f['severity']}**, check `{f['check']}`.")
        w("")
        if f.get("evidence"):
            w("**Evidence**")
            w("")
            out.extend(evidence_line(e) for e in f["evidence"])
            w("")
        rem = f.get("remediation") or {}
        if rem:
            w("**What to do**")
            w("")
            w(_value(rem.get("text", ""), 2000))
            if rem.get("commands"):
                w("")
                w("```sh")
                out.extend(visible(c, limit=None, newlines=True) for c in rem["commands"])
                w("```")
            w("")
        if f.get("related"):
            rel = [str(r) for r in f["related"]]
            more = f" (+{len(rel) - 10} more)" if len(rel) > 10 else ""
            w(f"Affects: {', '.join(_code(r) for r in rel[:10])}{more}")
            w("")
    if len(findings) > MAX_DETAILED:
        w(f"_{len(findings) - MAX_DETAILED} more findings are in `report.json`._")
        w("")
    w("## Checklist")
    w("")
    w("| | Code | Check | Result |")
    w("|---|---|---|---|")
    for r in results:
        status = r.get("status", "")
        if status == "failed":
            n = len(r.get("findings") or [])
            worst = max((x.get("severity", "") for x in r.get("findings") or []),
                        key=lambda s: ("info", "warning", "error", "critical").index(s)
                        if s in ("info", "warning", "error", "critical") else -1, default="")
            result = f"{n} finding{'s' if n != 1 else ''} ({worst})"
        elif status == "passed":
            result = f"ok, {r['examined']} examined" if r.get("examined") else "ok"
        else:
            result = f"{status}: {r.get('reason', '')}"
        w(f"| {_MARK.get(status, '?')} | {r.get('code', '')} | {_cell(r.get('check', ''))} | {_cell(result)} |")
    w("")
    w("## What this bundle holds")
    w("")
    w("| Source | State | In the bundle |")
    w("|---|---|---|")
    collected = (manifest.get("collected") or {}).get("resources") or {}
    for name, st in sorted((manifest.get("sources") or {}).items()):
        state = st.get("state", "?") + (" (partial)" if st.get("partial") else "")
        if st.get("detail") and st.get("state") != "ok":
            state += f": {st['detail']}"
        have = collected.get(name)
        w(f"| {name} | {_cell(state)} | {have if have is not None else ''} |")
    w("")
    logs = (manifest.get("collected") or {}).get("logs") or []
    if logs:
        w(f"Logs: {len(logs)} file(s) under `logs/` (since {(manifest.get('options') or {}).get('since', '?')}).")
    denied = manifest.get("denied") or []
    if denied:
        w("RBAC denied: " + ", ".join(_code(f"{d['verb']} {d['resource']}") for d in denied) + ".")
    red = manifest.get("redaction") or {}
    if red.get("enabled"):
        total = sum((red.get("rules") or {}).values())
        w(f"Redaction: on ({total} value(s) masked; Secrets are never read; counts per rule in `manifest.json`).")
    else:
        w("Redaction: **off** (`--no-redact`): review before sharing outside your organisation.")
    caps = (manifest.get("caps") or {}).get("hit") or []
    if caps:
        w(f"Size caps hit: {len(caps)} (see `manifest.json`).")
    w("")
    # Last line of defence for anything above not passed through a helper: a terminal that `cat`s this
    # file must not meet a raw escape sequence.
    return visible("\n".join(out), limit=None, newlines=True)
