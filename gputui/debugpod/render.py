"""Rich rendering of a debug result: the live log as a reader sees it, the per-GPU table, flags, failures."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from gputui.debugpod.capture import EXIT_MEANINGS
from gputui.debugpod.failures import DebugFailure
from gputui.debugpod.health import HealthFlag
from gputui.debugpod.nvidia_smi.report import GpuReport, GpuRow
from gputui.output.sanitize import visible

__all__ = ["display_line", "render_failure", "render_flags", "render_report", "render_result"]

# The marker protocol of gputui.debugpod.capture (`=== gputui:VERB ARGS ===`).
_MARKER = re.compile(r"^=== gputui:(?P<verb>[a-z-]+)(?: (?P<args>.*?))? ===\s*$")
_COMMANDS = {
    "nvidia-smi": "nvidia-smi",
    "query-gpu": "nvidia-smi --query-gpu=… --format=csv,noheader,nounits",
    "query-compute-apps": "nvidia-smi --query-compute-apps=… --format=csv,noheader,nounits",
    "list": "nvidia-smi -L",
}
SEVERITY_STYLE = {"critical": "bold white on red", "error": "bold red", "warning": "bold yellow"}


def display_line(raw: str) -> tuple[str, str] | None:
    """A debug pod log line as shown live: (text, style); marker lines become short headers or vanish."""
    match = _MARKER.match(raw)
    if match is None:
        return visible(raw.rstrip("\r\n")), ""  # pod output: shown, never interpreted by the terminal
    verb, args = match["verb"], match["args"] or ""
    if verb == "section":
        name = args.split(" ", 1)[0]
        return f"$ {_COMMANDS.get(name, name)}", "bold cyan"
    if verb == "exit":
        code = args.rpartition(" ")[2]
        if code == "0" or not code.lstrip("-").isdigit():
            return None
        return f"(exit {code}: {EXIT_MEANINGS.get(int(code), 'unknown exit code')})", "yellow"
    if verb == "info" and args.startswith("command "):
        return f"# running {visible(args[len('command '):])}", "dim"
    return None


# --------------------------------------------------------------------------------------------
# Cells


def _na(gpu: GpuRow, field: str) -> str:
    reason = gpu.unavailable.get(field)
    return reason.strip("[]") if reason else "-"


def _yes_no(value: bool | None, gpu: GpuRow, field: str) -> Text:
    if value is None:
        return Text(_na(gpu, field), style="dim")
    return Text("Yes", style="bold red") if value else Text("No")


def _memory(gpu: GpuRow) -> str:
    if gpu.memory_total_mib is None:
        return _na(gpu, "memory.total")
    used = "?" if gpu.memory_used_mib is None else str(gpu.memory_used_mib)
    return f"{used}/{gpu.memory_total_mib} MiB"


def _power(gpu: GpuRow) -> str:
    if gpu.power_w is None:
        return _na(gpu, "power.draw")
    limit = f"/{gpu.power_limit_w:.0f}" if gpu.power_limit_w is not None else ""
    return f"{gpu.power_w:.0f}{limit} W"


def _pcie(gpu: GpuRow) -> Text:
    if gpu.pcie_gen_current is None and gpu.pcie_width_current is None:
        return Text(_na(gpu, "pcie.link.width.current"), style="dim")
    cur = f"Gen{gpu.pcie_gen_current or '?'} x{gpu.pcie_width_current or '?'}"
    top = f"Gen{gpu.pcie_gen_max or '?'} x{gpu.pcie_width_max or '?'}"
    degraded = (gpu.pcie_width_current is not None and gpu.pcie_width_max is not None
                and gpu.pcie_width_current < gpu.pcie_width_max)
    if cur == top:
        return Text(f"{cur} = max")
    return Text(f"{cur} < {top}", style="bold yellow" if degraded else "")


def _ecc(gpu: GpuRow) -> Text:
    if gpu.ecc_uncorrected_volatile is None:
        return Text(_na(gpu, "ecc.errors.uncorrected.volatile.total"), style="dim")
    return Text(str(gpu.ecc_uncorrected_volatile), style="bold red" if gpu.ecc_uncorrected_volatile else "")


def _mig(gpu: GpuRow) -> str:
    mode = gpu.mig_mode or _na(gpu, "mig.mode.current")
    return f"{mode} ({len(gpu.mig_devices)})" if gpu.mig_devices else mode


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value}"


def _gpu_label(index: int | None) -> str:
    return "?" if index is None else str(index)


# --------------------------------------------------------------------------------------------
# Blocks


def _add(table: Table, *cells: str | Text) -> None:
    """A row whose text came from nvidia-smi output or a paste: plain strings are never read as Rich
    markup, and control characters are shown, not sent to the terminal."""
    table.add_row(*(Text(visible(c, limit=200)) if isinstance(c, str) else c for c in cells))


def render_report(report: GpuReport, title: str = "") -> RenderableType:
    """Per-GPU tables as nvidia-smi groups them: identity, health counters, then processes."""
    head = [title] if title else []
    if report.driver_version:
        head.append(f"driver {report.driver_version}")
    if report.cuda_version:
        head.append(f"CUDA {report.cuda_version}")
    head.append(f"{len(report.gpus)} GPU(s)")

    # A line of its own, not the table's title: Rich wraps a title to the table's width, so at 160 columns
    # "· CUDA 13.1 · 7 GPU(s)" fell onto a second line beside a narrow identity table.
    heading = Text(visible(" · ".join(head), limit=300), style="bold")
    ident = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    ident.add_column("GPU", justify="right", no_wrap=True)
    ident.add_column("Name", no_wrap=True, overflow="ellipsis")
    ident.add_column("UUID", overflow="fold")
    ident.add_column("Bus id", no_wrap=True)
    ident.add_column("MIG", no_wrap=True)

    health = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for name, right in (("GPU", True), ("Memory\nused/total", True), ("Util", True), ("Temp", True),
                        ("Power\ndraw/cap", True), ("ECC\nunc.", True), ("Retired\npending", False),
                        ("Remapped\npend./fail", False), ("PCIe link\nnow vs max", False)):
        health.add_column(name, justify="right" if right else "left", no_wrap=True, overflow="ellipsis")

    migs = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for name, justify in (("GPU", "right"), ("MIG\ndev", "right"), ("Profile", "left"), ("GI/CI", "left"),
                          ("Memory\nused/total", "right"), ("ECC\nunc.", "right"), ("MIG UUID", "left")):
        migs.add_column(name, justify=justify, no_wrap=name != "MIG UUID", overflow="fold")  # type: ignore[arg-type]

    procs = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for name, justify in (("GPU", "right"), ("GI/CI", "left"), ("PID", "right"), ("Process", "left"),
                          ("GPU memory", "right")):
        procs.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]

    for gpu in report.gpus:
        label = _gpu_label(gpu.index)
        _add(ident, label, Text(visible(gpu.name or "?", limit=200), style="bold"), gpu.uuid or "-", gpu.bus_id or "-", _mig(gpu))
        remap = Text()
        remap.append_text(_yes_no(gpu.remapped_rows_pending, gpu, "remapped_rows.pending"))
        remap.append(" / ")
        remap.append_text(_yes_no(gpu.remapped_rows_failure, gpu, "remapped_rows.failure"))
        _add(
            health,
            label,
            _memory(gpu),
            f"{gpu.utilization_pct} %" if gpu.utilization_pct is not None else _na(gpu, "utilization.gpu"),
            f"{gpu.temperature_c} °C" if gpu.temperature_c is not None else _na(gpu, "temperature.gpu"),
            _power(gpu),
            _ecc(gpu),
            _yes_no(gpu.retired_pages_pending, gpu, "retired_pages.pending"),
            remap,
            _pcie(gpu),
        )
        for m in gpu.mig_devices:
            memory = f"{_mib(m.memory_used_mib)}/{_mib(m.memory_total_mib)} MiB"
            instance = f"{_mib(m.gpu_instance_id)}/{_mib(m.compute_instance_id)}"
            _add(migs, label, _mib(m.index), m.profile or "-", instance, memory, _mib(m.ecc_uncorrected_volatile),
                         m.uuid or "-")
        for p in gpu.processes or tuple(p for p in report.processes if p.gpu_index == gpu.index):
            mig = (f"{p.gpu_instance_id}/{p.compute_instance_id}"
                   if p.gpu_instance_id is not None or p.compute_instance_id is not None else "-")
            _add(procs, label, mig, str(p.pid) if p.pid is not None else "?", p.name or "?",
                          f"{p.used_memory_mib} MiB" if p.used_memory_mib is not None else "-")
    parts: list[RenderableType] = [heading, ident, health]
    if migs.row_count:
        parts.append(migs)
    if procs.row_count:
        parts.append(procs)
    else:
        parts.append(Text("No processes are using the GPUs.", style="dim"))
    for warning in report.warnings:
        parts.append(Text(f"note: {visible(warning)}", style="dim"))
    return Group(*parts)


def render_flags(flags: Sequence[HealthFlag], gpus: int, expected: int | None = None,
                 source: str = "") -> RenderableType:
    """The flags, worst first; "✓" only when there are none (callers pass no empty list unless every GPU was read),
    or a yellow, qualified one when the only flag is what the input could not show."""
    if flags and all(f.code == "health-not-shown" for f in flags):
        what = {"table": "the table"}.get(source, "nvidia-smi's output")
        count = f"{gpus} of {expected}" if expected else str(gpus)
        unseen = visible(flags[0].value or "")
        return Group(Text(f"✓ no problem in what {what} shows ({count} GPU(s)); not shown: {unseen}",
                          style="bold yellow"),
                     Text(f"  → {visible(flags[0].message.split('; ', 1)[-1])}", style="cyan"))
    if not flags:
        if expected:
            return Text(f"✓ no GPU health problems found ({gpus} of {expected} GPU(s) checked)", style="green")
        # Nothing says how many GPUs there should be: say what the verdict covers.
        return Text(f"✓ no GPU health problems found on the {gpus} GPU(s) nvidia-smi lists (how many the node "
                    "has is not known here)", style="green")
    lines = []
    for f in flags:
        where = f"GPU {f.gpu_index}" if f.gpu_index is not None else "node"
        line = Text()
        line.append(f" {f.severity.upper()} ", style=SEVERITY_STYLE.get(f.severity, ""))
        line.append(f" {where} [{f.code}] ", style="bold")
        line.append(visible(f.message))
        lines.append(line)
    return Group(*lines)


def render_failure(failure: DebugFailure) -> RenderableType:
    style = "bold red" if failure.stage != "route" else "bold yellow"
    parts: list[RenderableType] = [Text(f"✗ {visible(failure.title)}", style=style)]
    if failure.detail:  # a termination message or event text: anything the workload wrote
        parts.append(Text(f"  {visible(failure.detail, newlines=True)}"))
    for hint in failure.hints:
        parts.append(Text(f"  → {visible(hint, newlines=True)}", style="cyan"))
    return Group(*parts)


class RenderedResult(Protocol):
    """What `render_result` reads of a `gputui.debugpod.result.DebugResult`. A protocol, not an import: the
    result's own `render()` imports this module, and the two must not import each other."""

    @property
    def node(self) -> str: ...
    @property
    def namespace(self) -> str | None: ...
    @property
    def pod(self) -> str | None: ...
    @property
    def source(self) -> str: ...
    @property
    def report(self) -> GpuReport | None: ...
    @property
    def failure(self) -> DebugFailure | None: ...
    @property
    def flags(self) -> tuple[HealthFlag, ...]: ...
    @property
    def expected_gpus(self) -> int | None: ...
    @property
    def deleted(self) -> bool | None: ...
    @property
    def healthy(self) -> bool: ...


def render_result(result: RenderedResult) -> RenderableType:
    parts: list[RenderableType] = []
    where = f" via pod {result.namespace}/{result.pod}" if result.pod else ""
    title = f"node {result.node}{where}" if result.node else visible(result.source)
    if result.report is not None and result.report.gpus:
        parts.append(render_report(result.report, title))
    if result.failure is not None:
        parts.append(render_failure(result.failure))
    if result.flags:
        parts.append(render_flags(result.flags, len(result.report.gpus) if result.report else 0,
                                  result.expected_gpus or (result.report.attached_gpus if result.report else None),
                                  result.report.source_format if result.report else ""))
    elif result.healthy and result.report is not None:
        parts.append(render_flags((), len(result.report.gpus), result.expected_gpus or result.report.attached_gpus))
    if result.deleted is False:
        parts.append(Text(f"! could not delete pod {visible(result.namespace)}/{visible(result.pod)}: run `gputui debug --cleanup`",
                          style="bold yellow"))
    return Group(*parts)
