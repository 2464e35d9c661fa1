"""Log tails of the accelerator-stack containers that keep GPU nodes from advertising their GPUs.

The kubelet keeps a crashed container's output only when its `terminationMessagePolicy` is
`FallbackToLogsOnError` (device plugins and GPU Operator operands use `File`), so the line that
names the cause (`Failed to initialize NVML: ERROR_LIBRARY_NOT_FOUND`, `Could not resolve Linux
kernel version`) is only in the log. The one-shot `diagnose` reads those few tails (at most 8,
20 lines each) after the lists, and the checks show them as evidence.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from diagnostics.facts.accelerator_stack import logs_to_read
from diagnostics.snapshot import Snapshot
from gputui.kube.api import KubeError, Unreachable
from gputui.kube.resources import RESOURCES

TAIL_LINES = 20
LIMIT_BYTES = 64 * 1024


def with_stack_logs(api: Any, snap: Snapshot, workers: int = 4) -> Snapshot:
    """`snap` with `pod_logs` filled for the containers `logs_to_read` names; a log that cannot be read is left out
    (the finding then shows what the kubelet kept, and its `kubectl logs` command)."""
    if not snap.status("pods").state.usable or not snap.status("daemonsets").state.usable:
        return snap
    wanted = logs_to_read(snap)
    if not wanted:
        return snap

    def fetch(w: tuple[str, str, str, bool]) -> tuple[str, str | None]:
        ns, pod, container, previous = w
        query: list[tuple[str, Any]] = [("container", container), ("tailLines", TAIL_LINES),
                                        ("limitBytes", LIMIT_BYTES)]
        if previous:
            query.append(("previous", "true"))
        path = f"{RESOURCES['pods'].path(ns, pod)}/log"
        # A crash-looping container's current log is its last run's on most kubelets; ask for the previous run
        # first and fall back to the current one.
        for q in ([query, query[:-1]] if previous else [query]):
            try:
                text = api.get_bytes(path, q, timeout=10).decode("utf-8", "replace")
                if text.strip():
                    return f"{ns}/{pod}/{container}", text
            except Unreachable:
                break
            except KubeError:
                continue  # forbidden (pods/log), gone, or no previous run: the kubelet's message remains
        return f"{ns}/{pod}/{container}", None

    with ThreadPoolExecutor(max_workers=min(workers, len(wanted))) as pool:
        got = {k: v for k, v in pool.map(fetch, wanted) if v}
    return replace(snap, pod_logs={**snap.pod_logs, **got}) if got else snap
