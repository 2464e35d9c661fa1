"""Facts about the machine and software a benchmark ran on, recorded next to its numbers."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _run(cmd: list[str], cwd: Path | None = None) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20, cwd=cwd).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def machine_facts(kubectl: str | None) -> dict[str, Any]:
    """CPU, cores, memory, OS, Python, library and kubectl versions, git commit, date, load."""
    repo = Path(__file__).resolve().parents[3]
    kubectl_version = ""
    if kubectl:
        out = _run([kubectl, "version", "--client", "-o", "json"])
        try:
            import json

            kubectl_version = json.loads(out)["clientVersion"]["gitVersion"]
        except (ValueError, KeyError):
            kubectl_version = out.splitlines()[0] if out else ""
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gb": _mem_total_gb(),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "packages": {d: _version(d) for d in ("textual", "rich", "kubernetes", "orjson", "msgspec", "aiohttp",
                                              "urllib3")},
        "kubectl": kubectl_version,
        "git_commit": _run(["git", "rev-parse", "--short", "HEAD"], cwd=repo),
        "load_average_start": load_average(),
    }
