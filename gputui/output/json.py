"""Stable, versioned JSON for `-o json` (schema documented in README)."""

from __future__ import annotations

from typing import Any

import orjson

from diagnostics.model import Report


def report_json(report: Report) -> dict[str, Any]:
    from diagnostics.relations import root_causes
    from diagnostics.verdict import judge

    out = report.to_json()
    out["findings"] = [f.to_json() for f in report.findings]  # worst first, for scripts that take [0]
    verdict = report.verdict or judge(report)
    out["verdict"] = verdict.verdict
    out["summary"] = verdict.to_json()
    out["root_causes"] = {str(p): {"check": f.check, "code": f.code, "subject": str(f.subject)}
                          for p, f in root_causes(report).items()}
    return out


def dumps(data: Any) -> str:
    return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n"
