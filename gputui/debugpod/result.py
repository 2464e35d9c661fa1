"""What a debug pod run (or `--parse` of saved output) produced, and the JSON the store and GT801 read."""

from __future__ import annotations

from gputui.exit_codes import ExitCode

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from gputui.debugpod.failures import DebugFailure, from_report
from gputui.debugpod.health import HealthFlag, health_flags
from gputui.debugpod.nvidia_smi import GpuReport, parse, to_json
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

    @property
    def worst(self) -> str:
        """`critical`, `error`, `warning` or `ok` over the health flags (and a GPU-side failure)."""
        worst = max((f.severity for f in self.flags), key=lambda s: _RANK[s], default=None)
        if self.failure is not None and self.failure.stage == "gpu" and (worst is None or _RANK[worst] < 2):
            worst = "error"
        return worst or "ok"

    @property
    def exit_code(self) -> int:
        """0 healthy, 3 health error, 4 warnings only, 6 the pod did not run / could not reach the GPUs."""
        if self.failure is not None and self.failure.stage in ("pod", "route"):
            return DEBUG_POD_FAILED
        return _EXIT_BY_SEVERITY.get(self.worst, 0)

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
            "notes": list(self.notes),
        }

    def render(self) -> RenderableType:
        from gputui.debugpod.render import render_result

        return render_result(self)

    def __rich__(self) -> RenderableType:
        return self.render()


def result_from_text(text: str, *, node: str = "", source: str = "file") -> DebugResult:
    """Parse saved nvidia-smi output (any format `parse` reads) into a result, as `--parse` does."""
    report = parse(text)
    flags = tuple(health_flags(report))
    failure = from_report(report, flags, node=node or "this node", privileged=True, gpus=0, runtime_class=None)
    now = datetime.now(timezone.utc)
    return DebugResult(node=node, log=text, report=report, flags=flags, failure=failure, started_at=now,
                       finished_at=now, source=source)
