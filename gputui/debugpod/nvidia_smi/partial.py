"""What one format said, as cell text, before the formats are merged (see `merge`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gputui.debugpod.nvidia_smi.cells import is_sentinel, normalize_bus_id

@dataclass
class GpuCells:
    cells: dict[str, str] = field(default_factory=dict)
    raw: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    mig: dict[int, dict[str, Any]] = field(default_factory=dict)

    def key(self) -> tuple[str | None, str | None, str | None]:
        uuid = self.cells.get("uuid")
        return (
            normalize_bus_id(self.cells.get("pci.bus_id")),
            uuid if uuid and not is_sentinel(uuid) else None,
            self.cells.get("index"),
        )


@dataclass
class Parsed:
    gpus: list[GpuCells] = field(default_factory=list)
    processes: list[dict[str, Any]] = field(default_factory=list)
    driver_version: str | None = None
    cuda_version: str | None = None
    warnings: list[str] = field(default_factory=list)
    kind: str = ""
    attached: int | None = None
    """`-q`'s `Attached GPUs`: how many GPU sections a complete output has."""
