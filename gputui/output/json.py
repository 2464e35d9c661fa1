"""Stable, versioned JSON for `-o json` (schema documented in README)."""

from __future__ import annotations

from typing import Any

import orjson

from diagnostics.model import Report


def report_json(report: Report) -> dict[str, Any]:
    out = report.to_json()
    out["findings"] = [f.to_json() for f in report.findings]  # worst first, for scripts that take [0]
    return out


def dumps(data: Any) -> str:
    return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n"
