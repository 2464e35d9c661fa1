"""The fixed check set that golden reports, SVG snapshots and README screenshots are produced with.

Every check adds a row to every report and to the TUI's checklist, so outputs that list each
check's result would change with each new check. They run with this set instead (`--only` for the
CLI, `build_app(checks=...)` for the TUI): adding a check then touches its own file, its test module
and README's generated table, nothing else (`python -m gputui.dev.new_check_drill` proves it). Add a
code here only when those outputs should show the check, and regenerate them in the same commit.
"""

from __future__ import annotations

PINNED_CHECKS: tuple[str, ...] = (
    "GT101", "GT102", "GT103", "GT104", "GT105", "GT106",
    "GT201", "GT202", "GT203", "GT204",
    "GT301", "GT302", "GT303",
    "GT401", "GT402", "GT403", "GT404", "GT405", "GT406", "GT407",
    "GT501", "GT502", "GT503",
    "GT601", "GT602", "GT603",
    "GT701", "GT702", "GT703", "GT704", "GT705", "GT706", "GT707", "GT708", "GT709",
    "GT801",
)
"""Codes, not slugs: a code never changes meaning (slugs may gain aliases)."""


def only_args(checks: tuple[str, ...] = PINNED_CHECKS) -> list[str]:
    """`gputui diagnose` arguments that run exactly `checks`: ["--only", "GT101", "--only", ...]."""
    return [arg for code in checks for arg in ("--only", code)]
