"""The log of a gputui debug pod: `=== gputui:<section> ===` blocks, one per nvidia-smi call, with exit codes."""

from __future__ import annotations

from dataclasses import dataclass, field

from gputui.debugpod.capture import read_log
from gputui.debugpod.nvidia_smi.failures import scan_failures
from gputui.debugpod.nvidia_smi.formats import guarded, rank
from gputui.debugpod.nvidia_smi.merge import merge
from gputui.debugpod.nvidia_smi.partial import Parsed
from gputui.debugpod.nvidia_smi.report import SmiFailure


@dataclass
class DebugLog:
    """What the log's sections said, merged, and what the log says about the run itself."""

    parsed: Parsed
    complete: bool
    """The log reached its end marker (else the pod was killed or is still running)."""
    exit_codes: dict[str, int | None] = field(default_factory=dict)
    failures: list[SmiFailure] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def parse_debug_log(text: str) -> DebugLog:
    log = read_log(text)
    warnings = [] if log.complete else ["debug pod log has no end marker: the pod was killed or is still running"]
    failures: list[SmiFailure] = []
    if log.preamble:
        failures.extend(scan_failures(log.preamble, None, None))
    exit_codes = {name: section.exit_code for name, section in log.sections.items()}
    parts: list[Parsed] = []
    for section in sorted(log.sections.values(), key=lambda s: rank(s.name)):
        failures.extend(scan_failures(section.text, section.name, section.exit_code))
        body = section.text
        if section.name in ("query-gpu", "query-compute-apps"):
            # A failing query prints its error instead of (or between) the CSV rows.
            body = _csv_lines_only(body, len(section.fields) if section.exit_code not in (None, 0) else None)
        parts.append(guarded(section.name, body, section.fields or None, section.dropped))
    return DebugLog(merge(parts), log.complete, exit_codes, failures, warnings)


def _csv_lines_only(text: str, width: int | None) -> str:
    """Drop nvidia-smi failure messages; with `width`, also lines that are not rows of that width."""
    keep = []
    for line in text.splitlines():
        if scan_failures(line, None, None):
            continue
        if width is not None and (width == 0 or len(line.split(",")) != width):
            continue
        keep.append(line)
    return "\n".join(keep)
