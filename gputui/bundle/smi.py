"""`--with-nvidia-smi`: run gputui's debug pod on the affected GPU nodes, one after the other.

Sequential on purpose: each run creates a pod and must delete it on every exit path (Ctrl-C included),
which `run_debug` guarantees per call; a handful of nodes at ~10 s each is fine for a bundle.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gputui.kube.api import Api


@dataclass
class SmiRuns:
    results: dict[str, Any] = field(default_factory=dict)
    """Node -> DebugResult."""
    errors: list[dict[str, str]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def run_on_nodes(api: Api, nodes: Sequence[str], *, max_nodes: int, namespace: str | None,
                 context_namespace: str | None, timeout: int,
                 on_status: Callable[[str], None] | None = None) -> SmiRuns:
    from gputui.debugpod.run import DebugUsageError, run_debug  # lazy: only when asked for

    out = SmiRuns(skipped=list(nodes[max_nodes:]))
    for node in nodes[:max_nodes]:
        if on_status is not None:
            on_status(f"running nvidia-smi on {node}")
        try:
            out.results[node] = run_debug(api, node, namespace=namespace, context_namespace=context_namespace,
                                          timeout=timeout, on_status=None)
        except DebugUsageError as exc:
            out.errors.append({"node": node, "detail": str(exc)[:300]})
    return out
