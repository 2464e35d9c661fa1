"""What a debug pod run (or `--parse` of saved output) produced, and the JSON the store and GT801 read."""

from __future__ import annotations

from gputui.errors import ExitCode

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from gputui.debugpod.failures import DebugFailure, from_report
from gputui.debugpod.health import HealthFlag, health_flags
from gputui.debugpod.nvidia_smi import GpuReport, GpuRow, parse, to_json
from gputui.debugpod.pod_spec import PodOptions

if TYPE_CHECKING:
    from rich.console import RenderableType

__all__ = [
    "DEBUG_POD_FAILED",
    "JSON_KIND",
    "DebugResult",
    "result_from_text",
]

JSON_KIND = "GpuHealth"
JSON_API_VERSION = "gputui.dev/v1alpha1"
DEBUG_POD_FAILED = int(ExitCode.DEBUG_POD_FAILED)
"""Exit code: the debug pod never ran nvidia-smi, or could not reach the GPUs (health unknown)."""

_EXIT_BY_SEVERITY = {"critical": 3, "error": 3, "warning": 4}
_RANK = {"critical": 3, "error": 2, "warning": 1}


@dataclass(frozen=True, slots=True)
class DebugResult:
    """One node's nvidia-smi run. `report` is None when nothing was read; `failure` says why."""

    node: str
    namespace: str | None = None
    pod: str | None = None
    phase: str | None = None
    """The pod's last phase gputui saw (Pending/Running/Succeeded/Failed)."""
    log: str = ""
    report: GpuReport | None = None
    flags: tuple[HealthFlag, ...] = ()
    failure: DebugFailure | None = None
    options: PodOptions | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    deleted: bool | None = None
    """True once the pod is gone; False if deleting failed (`gputui debug --cleanup`); None: never created."""
    notes: tuple[str, ...] = field(default=())
    """What gputui decided on the way (namespace, RuntimeClass), for the record."""
    source: str = "debug-pod"
    """`debug-pod`, or the file name `--parse` read."""
    expected_gpus: int | None = None
    """How many GPUs the node has (diagnostics.facts.gpu_count), when known: the verdict covers all of them or fails."""
    expected_from: str = ""
    """Where `expected_gpus` was read (`metadata.labels[karpenter.k8s.aws/instance-gpu-count]`)."""

    @property
    def worst(self) -> str:
        """`critical`, `error`, `warning` or `ok` over the health flags (and a GPU-side failure)."""
        worst = max((f.severity for f in self.flags), key=lambda s: _RANK[s], default=None)
        if self.failure is not None and self.failure.stage == "gpu" and (worst is None or _RANK[worst] < 2):
            worst = "error"
        return worst or "ok"

    @property
    def exit_code(self) -> int:
        """0 healthy, 3 health error, 4 warnings only (also: a reading that does not show every health value,
        a `health-not-shown` / `health-unreadable` flag), 6 the pod did not run / could not reach the GPUs, or
        (`--parse`) the input holds no complete reading and nothing in it is an error by itself."""
        if self.failure is not None and self.failure.stage in ("pod", "route"):
            return DEBUG_POD_FAILED
        if self.failure is not None and self.failure.stage == "input" and _RANK.get(self.worst, 0) < 2:
            return DEBUG_POD_FAILED
        return _EXIT_BY_SEVERITY.get(self.worst, 0)

    @property
    def healthy(self) -> bool:
        """The only state that may print "no GPU health problems": every GPU read, nothing flagged, no failure."""
        return self.failure is None and not self.flags and self.report is not None and bool(self.report.gpus)

    @property
    def summary(self) -> str:
        """One line for a notification."""
        if self.failure is not None:
            return self.failure.title
        gpus = len(self.report.gpus) if self.report else 0
        problems = [f for f in self.flags if f.severity != "warning"]
        if problems:
            return f"{self.node}: {len(problems)} GPU health problem(s): {problems[0].message}"[:300]
        if self.flags:
            return f"{self.node}: {gpus} GPU(s), {len(self.flags)} warning(s): {self.flags[0].message}"[:300]
        if not self.healthy:
            return f"{self.node}: could not read GPU health"
        return f"{self.node}: {gpus} GPU(s), no health problems found"

    def as_json(self) -> dict[str, Any]:
        """Plain JSON: `store.set_gpu_report(node, result.as_json())`; read by GT801 and `-o json`."""
        opts = self.options
        taken = self.finished_at or self.started_at
        return {
            "apiVersion": JSON_API_VERSION,
            "kind": JSON_KIND,
            "node": self.node,
            "source": self.source,
            "taken_at": taken.astimezone(timezone.utc).isoformat().replace("+00:00", "Z") if taken else None,
            "pod": None if self.pod is None else {
                "name": self.pod, "namespace": self.namespace, "phase": self.phase, "deleted": self.deleted},
            "route": None if opts is None else {
                "image": opts.image, "gpus": opts.gpus, "runtime_class": opts.runtime_class,
                "privileged": opts.privileged, "host_pid": opts.host_pid},
            "report": to_json(self.report) if self.report is not None else None,
            "flags": [dataclasses.asdict(f) for f in self.flags],
            "failure": self.failure.to_json() if self.failure is not None else None,
            "worst": self.worst,
            "exit_code": self.exit_code,
            "expected_gpus": self.expected_gpus,
            "expected_from": self.expected_from or None,
            "notes": list(self.notes),
        }

    def render(self) -> RenderableType:
        from gputui.debugpod.render import render_result

        return render_result(self)

    def __rich__(self) -> RenderableType:
        return self.render()


def result_from_text(text: str, *, node: str = "", source: str = "file") -> DebugResult:
    """Parse saved nvidia-smi output (any format `parse` reads) into a result, as `--parse` does.

    Input that holds no GPU reading (empty, other text, a kernel log, CSV whose columns are unknown) or
    fewer GPUs than it says are attached (`-q` cut off) is an `input` failure, never a clean bill of health.
    """
    report = parse(text)
    flags = tuple(health_flags(report))
    failure = from_report(report, flags, node=node or "this node", privileged=True, gpus=0, runtime_class=None)
    if failure is None:
        failure = _unread(report, source)
    now = datetime.now(timezone.utc)
    return DebugResult(node=node, log=text, report=report, flags=flags, failure=failure, started_at=now,
                       finished_at=now, source=source)


def _recognised(report: GpuReport) -> str:
    """What the parser did make of the input, for the line that says it is not enough."""
    said = {"empty": "the input is empty", "text": "no nvidia-smi output in it",
            "kernel-log": f"only kernel log lines ({len(report.xids)} Xid line(s)), no nvidia-smi output"}
    parts = [said.get(report.source_format, f"read as {report.source_format}, with no GPU in it")]
    parts += [w for w in report.warnings if w != "no nvidia-smi output recognised in the input"]
    return "; ".join(parts)


def _unread(report: GpuReport, source: str) -> DebugFailure | None:
    """An `input` failure when saved output covers no GPU, or fewer than it says are attached."""
    if not report.gpus:
        return DebugFailure("unreadable-input", "input", f"could not read GPU health from {source}",
                            _recognised(report), report.source_format,
                            ("Paste the whole output of `nvidia-smi`, `nvidia-smi -q` or `nvidia-smi --query-gpu=... "
                             "--format=csv` (with its header), or the log of a gputui debug pod.",))
    if not any(_health_read(g) for g in report.gpus):
        return DebugFailure("no-health-values", "input",
                            f"could not read GPU health from {source}: it lists {len(report.gpus)} GPU(s) but no health "
                            "value (temperature, ECC, remapped rows, retired pages, power)",
                            f"read as {report.source_format}", report.source_format,
                            ("`nvidia-smi -L` and process lists name GPUs without judging them: attach `nvidia-smi` "
                             "or `nvidia-smi -q`.",))
    if not report.complete:
        done = ", ".join(name for name, code in report.exit_codes.items() if code is not None) or "none"
        return DebugFailure("truncated-input", "input",
                            f"could not read all of the GPU health in {source}: the debug pod log stops before its "
                            "end marker", f"sections finished: {done}", "truncated",
                            ("The pod was killed, or the log was cut when it was saved: attach the whole log, or run "
                             "`gputui debug node/NAME` again.",))
    attached = report.attached_gpus
    if attached and len(report.gpus) < attached:
        read = ", ".join(str(g.index) for g in report.gpus if g.index is not None)
        return DebugFailure("truncated-input", "input",
                            f"could not read GPU health of {attached - len(report.gpus)} of {attached} GPUs: {source} "
                            f"says {attached} GPUs are attached but holds {len(report.gpus)}",
                            f"Attached GPUs : {attached}; GPU section(s) read: {read or len(report.gpus)}",
                            "truncated",
                            ("The output was cut off (a size limit of the ticket or chat?), or `nvidia-smi -q -i N` "
                             "picked one GPU: attach the whole `nvidia-smi -q` of the node.",))
    return None


_HEALTH_FIELDS = ("temperature.gpu", "power.draw", "ecc.mode.current", "ecc.errors.uncorrected.volatile.total",
                  "retired_pages.pending", "remapped_rows.pending", "remapped_rows.failure")


def _health_read(gpu: GpuRow) -> bool:
    """nvidia-smi said something about this GPU's health (a value, or why it has none)."""
    values = (gpu.temperature_c, gpu.power_w, gpu.ecc_mode, gpu.ecc_uncorrected_volatile, gpu.retired_pages_pending,
              gpu.remapped_rows_pending, gpu.remapped_rows_failure)
    return any(v is not None for v in values) or any(f in gpu.unavailable for f in _HEALTH_FIELDS)
