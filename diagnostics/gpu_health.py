"""What one nvidia-smi run on a node found: the types gputui's debug pod produces and GT801 reads.

The debug pod (gputui.debugpod) builds `HealthFlag`s and a `DebugFailure` as it reads nvidia-smi. Its
result travels as plain JSON (`gputui.debugpod.result.DebugResult.as_json`) in
`Snapshot.gpu_reports[node]`, because the live store, bundles and demo scenarios all carry it as JSON.
`GpuHealth.from_json` reads that JSON back into these types, defensively: a bundle or a scenario file
may hold anything, and what it cannot read is left out rather than guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from diagnostics.timeutil import parse_timestamp

FlagSeverity = Literal["warning", "error", "critical"]
_SEVERITIES: dict[str, FlagSeverity] = {"warning": "warning", "error": "error", "critical": "critical"}


@dataclass(frozen=True, slots=True)
class HealthFlag:
    """One problem on one GPU (or the node's driver when `gpu_index` is None), with what to do."""

    gpu_index: int | None
    code: str
    severity: FlagSeverity
    message: str
    field: str | None = None
    """The nvidia-smi field (or `nvidia-smi`/section name for failures) the flag was read from."""
    value: str | None = None
    """The value as nvidia-smi printed it (or its failure message)."""


@dataclass(frozen=True, slots=True)
class DebugFailure:
    """Why a run gave no (complete) reading: `title` is the line a tired human reads first, `hints` what to do next."""

    code: str
    stage: str
    """pod: the pod never ran nvidia-smi; route: it ran but could not reach the GPUs this way; gpu: the GPUs'
    fault; input: saved output (`gputui debug --parse`) that does not hold a complete nvidia-smi reading."""
    title: str
    detail: str = ""
    """The cluster's or nvidia-smi's own words (condition/event/status message), verbatim, trimmed."""
    reason: str = ""
    """The Kubernetes reason or nvidia-smi exit code it was read from (`ImagePullBackOff`, `exit 9`)."""
    hints: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "stage": self.stage, "title": self.title, "detail": self.detail,
                "reason": self.reason, "hints": list(self.hints)}


@dataclass(frozen=True, slots=True)
class ListedGpu:
    """A GPU nvidia-smi listed, by the identity a finding quotes (the rest of its row stays in the JSON)."""

    index: int | None
    name: str | None = None
    uuid: str | None = None
    bus_id: str | None = None


@dataclass(frozen=True, slots=True)
class Route:
    """How the debug pod reached the GPUs."""

    gpus: int | None
    """GPUs the pod requested; none (0) means the runtime injected every GPU, so nvidia-smi should list all."""
    privileged: bool
    runtime_class: str


@dataclass(frozen=True, slots=True)
class GpuHealth:
    """One node's nvidia-smi result: the GPUs it listed, the flags raised on them, and why a run fell short."""

    node: str
    taken_at: datetime | None
    pod: str
    """`namespace/name` of the debug pod, '' when none ran (a pasted reading)."""
    gpus: tuple[ListedGpu, ...]
    flags: tuple[HealthFlag, ...]
    failure: DebugFailure | None
    route: Route | None

    def gpu(self, index: int | None) -> ListedGpu | None:
        return next((g for g in self.gpus if g.index == index), None)

    @property
    def sees_all_gpus(self) -> bool:
        """nvidia-smi ran without a GPU request (or on the host), so it should list every GPU."""
        return self.route is None or not self.route.gpus

    @property
    def privileged(self) -> bool:
        return self.route.privileged if self.route is not None else True

    @property
    def stage(self) -> str:
        """The failure's stage, '' when the run did not fail."""
        return self.failure.stage if self.failure is not None else ""

    @classmethod
    def from_json(cls, node: str, raw: Any) -> GpuHealth | None:
        """The result, or None when nvidia-smi produced nothing to judge (`report` null: the pod never ran it)
        or the JSON is not ours. Flags with an unknown severity or no code are left out. Reads only::

            {"node": str, "taken_at": RFC3339 | null, "pod": {"name", "namespace"} | null,
             "route": {"gpus": int, "privileged": bool, "runtime_class": str | null} | null,
             "report": {"gpus": [{"index": int | null, "name", "uuid", "bus_id": str | null}]} | null,
             "flags": [{"gpu_index", "code", "severity", "message", "field", "value"}],
             "failure": {"code", "stage", "title", "detail", "reason", "hints": [str]} | null}
        """
        data = _map(raw)
        report = data.get("report")
        if not isinstance(report, Mapping):
            return None
        flags = []
        for f in data.get("flags") or []:
            f = _map(f)
            severity = _SEVERITIES.get(str(f.get("severity", "")).lower())
            if severity is None or not f.get("code"):
                continue
            flags.append(HealthFlag(_int(f.get("gpu_index")), str(f["code"]), severity, str(f.get("message") or ""),
                                    _text(f.get("field")), _text(f.get("value"))))
        pod = _map(data.get("pod"))
        route = _map(data.get("route"))
        return cls(
            node=str(data.get("node") or node),
            taken_at=parse_timestamp(data.get("taken_at")),
            pod=f"{pod.get('namespace')}/{pod.get('name')}" if pod.get("name") else "",
            gpus=tuple(ListedGpu(_int(g.get("index")), _opt_str(g.get("name")), _opt_str(g.get("uuid")),
                                 _opt_str(g.get("bus_id")))
                       for g in report.get("gpus") or [] if isinstance(g, Mapping)),
            flags=tuple(flags),
            failure=_failure(_map(data.get("failure"))),
            route=Route(_int(route.get("gpus")), bool(route.get("privileged")), str(route.get("runtime_class") or ""))
            if route else None,
        )


def _failure(f: Mapping[str, Any]) -> DebugFailure | None:
    if not f:
        return None
    hints = f.get("hints")
    return DebugFailure(str(f.get("code") or ""), str(f.get("stage") or ""), str(f.get("title") or ""),
                        str(f.get("detail") or ""), str(f.get("reason") or ""),
                        tuple(str(h) for h in hints) if isinstance(hints, list) else ())


def _map(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    try:
        return int(str(v))
    except (TypeError, ValueError):
        return None


def _opt_str(v: Any) -> str | None:
    return None if v is None else str(v)


def _text(v: Any) -> str | None:
    """A flag's field or value as text; None when empty (the check shows a default then)."""
    return str(v) if v else None
