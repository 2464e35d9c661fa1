"""Read any nvidia-smi output gputui meets: detect the format, parse it, merge, build the report."""

from __future__ import annotations

import re
import textwrap

from gputui.debugpod.capture import capture_sections
from gputui.debugpod.nvidia_smi.capture_bundle import parse_capture
from gputui.debugpod.nvidia_smi.cells import is_sentinel, normalize_bus_id, parse_number
from gputui.debugpod.nvidia_smi.debug_log import parse_debug_log
from gputui.debugpod.nvidia_smi.failures import XID_RE, scan_failures
from gputui.debugpod.nvidia_smi.formats import guarded
from gputui.debugpod.nvidia_smi.gpu_list import LIST_GPU_RE
from gputui.debugpod.nvidia_smi.merge import build, merge
from gputui.debugpod.nvidia_smi.query_csv import csv_header
from gputui.debugpod.nvidia_smi.report import GpuReport, KernelXid, SmiFailure

_DEBUG_MARKER_RE = re.compile(r"^=== gputui:[a-z-]+.* ===\s*$", re.MULTILINE)


_LINE_PREFIXES = (
    re.compile(r"^\[pod/[^\]\s]+\] ?"),
    re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}) ?"),
    re.compile(r"^\([^()]*\bpid=\d+[^()]*\) ?"),
)
"""What log tools put before every line: `kubectl logs --prefix` (`[pod/NAME/CONTAINER] `), `kubectl logs
--timestamps` (RFC 3339, blank lines too), and Ray's `(task, pid=N) `, in the order they nest."""


def _unquote(text: str) -> str:
    """Text pasted into a ticket or chat: `> `-quoted (e-mail, Markdown), prefixed by the log tool that
    printed it, or indented as a block."""
    lines = text.splitlines()
    body = [line for line in lines if line.strip()]
    if body and all(line.lstrip().startswith(">") for line in body):
        lines = [re.sub(r"^\s*>+ ?", "", line) for line in lines]
    for prefix in _LINE_PREFIXES:
        body = [line for line in lines if line.strip()]
        if body and all(prefix.match(line) for line in body):
            lines = [prefix.sub("", line, count=1) for line in lines]
    return textwrap.dedent("\n".join(lines)) + ("\n" if text.endswith("\n") else "")


def _detect(text: str) -> str:
    if _DEBUG_MARKER_RE.search(text):
        return "debug-pod"
    commands = [s for s in capture_sections(text) if s.command and s.command.startswith("nvidia-smi")]
    if commands:
        return "capture"
    if "NVSMI LOG" in text or re.search(r"^Attached GPUs\s+:", text, re.MULTILINE):
        return "query"
    if re.search(r"\|\s*GPU\s+Name\b|NVIDIA-SMI \d|^\|\s*Processes:", text, re.MULTILINE):
        return "table"
    if LIST_GPU_RE.search(text) or re.search(r"^GPU \d+: .*\(UUID:", text, re.MULTILINE):
        return "list"
    lines = [line for line in text.splitlines() if line.strip()]
    if lines and any(XID_RE.search(line) for line in lines):
        return "kernel-log"  # dmesg lines have commas, but they are no CSV
    if lines and (csv_header(lines[0]) is not None or _looks_like_rows(lines)):
        return "csv"
    return "text" if text.strip() else "empty"


def _looks_like_rows(lines: list[str]) -> bool:
    """nvidia-smi CSV rows, not prose with commas: every line has the same number of cells, and some
    cell is a number, a sentinel or a GPU UUID."""
    widths = {line.count(",") for line in lines}
    if len(widths) != 1 or 0 in widths:
        return False
    cells = [c.strip() for line in lines for c in line.split(",")]
    return any(parse_number(c) is not None or is_sentinel(c) or c.startswith("GPU-") for c in cells)


def parse(text: str) -> GpuReport:
    """Read any nvidia-smi output gputui meets; never raises."""
    text = _unquote(text if isinstance(text, str) else str(text))
    kind = _detect(text)
    failures: list[SmiFailure] = []
    exit_codes: dict[str, int | None] = {}
    warnings: list[str] = []
    complete = True

    if kind == "debug-pod":
        log = parse_debug_log(text)
        parsed, complete, exit_codes = log.parsed, log.complete, log.exit_codes
        warnings.extend(log.warnings)
        failures.extend(log.failures)
    elif kind == "capture":
        parsed = merge(parse_capture(text))
        failures.extend(scan_failures(text, None, None))
    else:
        single = guarded(kind, text)
        parsed = merge([single])
        failures.extend(scan_failures(text, None, None))
        if kind == "csv":
            kind = single.kind or "csv"
        elif kind in ("text", "kernel-log") and not failures:
            warnings.append("no nvidia-smi output recognised in the input")

    warnings.extend(parsed.warnings)
    gpus, processes = build(parsed, warnings)
    failures = _dedup_failures(failures)
    xids = tuple(dict.fromkeys(
        KernelXid(m["bus"], int(m["xid"]), m.group(0).strip()) for m in map(XID_RE.search, text.splitlines()) if m))
    return GpuReport(
        source_format=kind,
        gpus=tuple(gpus),
        driver_version=parsed.driver_version,
        cuda_version=parsed.cuda_version,
        processes=tuple(processes),
        errors=tuple(dict.fromkeys(f.message for f in failures)),
        failures=tuple(failures),
        exit_codes=exit_codes,
        warnings=tuple(dict.fromkeys(warnings)),
        complete=complete,
        attached_gpus=parsed.attached,
        xids=xids,
    )


def _dedup_failures(failures: list[SmiFailure]) -> list[SmiFailure]:
    """The same failure printed by every section counts once (first section wins)."""
    seen: set[tuple[str, str | None]] = set()
    out = []
    for failure in failures:
        key = (failure.code, normalize_bus_id(failure.bus_id) or failure.bus_id)
        if key not in seen:
            seen.add(key)
            out.append(failure)
    return out
