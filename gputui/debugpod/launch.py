"""The debug pod's API calls: check the node and namespace, pick a RuntimeClass, create, read, delete, sweep."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gputui.debugpod.pod_spec import CONTAINER, LABEL_SELECTOR
from gputui.kube.api import Api, KubeError, Unreachable

__all__ = [
    "CleanupResult",
    "DebugUsageError",
    "cleanup",
    "create_pod",
    "delete_pod",
    "get_node",
    "get_pod",
    "pod_events",
    "resolve_namespace",
    "resolve_runtime_class",
    "stream_log",
]

NVIDIA_RUNTIME_CLASS = "nvidia"
"""The RuntimeClass the GPU Operator creates (handler `nvidia`)."""


class DebugUsageError(ValueError):
    """A one-line user error: unknown node or namespace, bad option (the CLI exits 2)."""


def _pods(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods"


def get_node(api: Api, node: str) -> tuple[dict[str, Any] | None, str | None]:
    """The Node, or (None, note) when it may not be read; raises DebugUsageError when it does not exist."""
    try:
        return api.get(f"/api/v1/nodes/{node}"), None
    except KubeError as exc:
        if exc.status == 404:
            raise DebugUsageError(f'node "{node}" not found') from None
        if exc.status == 403:
            return None, f"cannot read node {node} (forbidden): creating the pod without checking it"
        raise


def not_nvidia(node: str, obj: dict[str, Any]) -> str:
    """Why nvidia-smi does not apply to this node ("" when it may): its accelerators are AWS Neuron or AMD.

    A debug pod there would at best print nothing of its devices; at worst (a default RuntimeClass) an
    unrelated GPU reading would be taken for the node's.
    """
    from diagnostics.facts.accelerator_stack import AMD, NEURON, node_vendor
    from gputui.kube.ingest import node as node_record

    record = node_record(obj)
    vendor = node_vendor(record)
    kind = f" ({record.instance_type})" if record.instance_type else ""
    if vendor == NEURON:
        return (f"node {node}{kind} has AWS Neuron devices, not NVIDIA GPUs: nvidia-smi does not apply "
                "(the Neuron SDK's neuron-ls and neuron-top read them)")
    if vendor == AMD:
        return (f"node {node}{kind} has AMD GPUs, not NVIDIA GPUs: nvidia-smi does not apply "
                "(amd-smi or rocm-smi read them)")
    return ""


def resolve_namespace(api: Api, namespace: str | None, context_namespace: str | None) -> tuple[str, str | None]:
    """`namespace` if given (it must exist), else the context's namespace if it exists, else `default`."""
    if namespace:
        if _namespace_exists(api, namespace) is False:
            raise DebugUsageError(f'namespace "{namespace}" not found')
        return namespace, None
    candidate = context_namespace or "default"
    if candidate != "default" and _namespace_exists(api, candidate) is False:
        return "default", f'namespace "{candidate}" of the current context does not exist: using "default"'
    return candidate, None


def _namespace_exists(api: Api, namespace: str) -> bool | None:
    """True/False, or None when we may not look (then creating the pod will tell)."""
    try:
        api.get(f"/api/v1/namespaces/{namespace}")
        return True
    except KubeError as exc:
        if exc.status == 404:
            return False
        if exc.status == 403:
            return None
        raise


def resolve_runtime_class(api: Api, wanted: str) -> tuple[str | None, str | None]:
    """`auto`: RuntimeClass `nvidia` (or one whose handler is `nvidia`) when the cluster has it; `none`: none."""
    if wanted == "none":
        return None, None
    if wanted != "auto":
        return wanted, None
    try:
        listing = api.get("/apis/node.k8s.io/v1/runtimeclasses")
    except KubeError as exc:
        if exc.status == 403:
            return None, ("cannot list runtimeclasses (forbidden): not setting a RuntimeClass; "
                          "pass --runtime-class nvidia if the cluster has one")
        if exc.status == 404:
            return None, None
        raise
    items = [i for i in listing.get("items") or [] if isinstance(i, dict)]
    names = {(i.get("metadata") or {}).get("name"): i.get("handler") for i in items}
    if NVIDIA_RUNTIME_CLASS in names:
        return NVIDIA_RUNTIME_CLASS, None
    by_handler = sorted(n for n, h in names.items() if n and h == NVIDIA_RUNTIME_CLASS)
    if by_handler:
        return by_handler[0], None
    return None, None


def create_pod(api: Api, pod: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = api.post(_pods(pod["metadata"]["namespace"]), pod)
    return result


def get_pod(api: Api, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        pod: dict[str, Any] = api.get(f"{_pods(namespace)}/{name}")
        return pod
    except KubeError as exc:
        if exc.status == 404:
            return None
        raise


def pod_events(api: Api, namespace: str, name: str) -> list[dict[str, Any]]:
    """Events about the pod, oldest first; [] when events may not be read."""
    try:
        listing = api.get(f"/api/v1/namespaces/{namespace}/events",
                          [("fieldSelector", f"involvedObject.kind=Pod,involvedObject.name={name}")])
    except KubeError:
        return []
    items = [e for e in listing.get("items") or [] if isinstance(e, dict)]
    return sorted(items, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or
                                           (e.get("metadata") or {}).get("creationTimestamp") or ""))


def stream_log(api: Api, namespace: str, name: str, read_timeout: float) -> Iterator[str]:
    """Follow the container's log; ends when the container stops. Raises Unreachable on a quiet `read_timeout`."""
    query = [("container", CONTAINER), ("follow", "true")]
    for line in api.stream(f"{_pods(namespace)}/{name}/log", query, read_timeout, keep_blank=True):
        yield line.decode("utf-8", "replace")


DELETE_ATTEMPTS = (0.0, 0.5, 1.5)
"""Delays before each delete attempt: an API blip at the moment of cleanup must not leave a pod."""


def delete_pod(api: Api, namespace: str, name: str, attempts: tuple[float, ...] = DELETE_ATTEMPTS) -> bool:
    """Delete now (grace 0: the pod only reads, and a dead node must not keep it Terminating). True if gone.

    Retried on 5xx, 429 and connection errors (a few seconds at most); 403 and the like are final.
    """
    for i, delay in enumerate(attempts):
        if delay:
            time.sleep(delay)
        try:
            api.delete(f"{_pods(namespace)}/{name}", {"apiVersion": "v1", "kind": "DeleteOptions",
                                                      "gracePeriodSeconds": 0, "propagationPolicy": "Background"})
        except KubeError as exc:
            if exc.status == 404:
                return True
            retryable = isinstance(exc, Unreachable) or exc.status == 429 or exc.status >= 500
            if not retryable or i == len(attempts) - 1:
                return False
            continue
        return True
    return False


@dataclass
class CleanupResult:
    """What `gputui debug --cleanup` found and removed."""

    deleted: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    scope: str = "all namespaces"


def cleanup(api: Api, fallback_namespace: str) -> CleanupResult:
    """Delete every gputui debug pod (by label) across namespaces; only `fallback_namespace` if listing all is
    forbidden."""
    query = [("labelSelector", LABEL_SELECTOR)]
    result = CleanupResult()
    try:
        listing = api.get("/api/v1/pods", query)
    except KubeError as exc:
        if exc.status != 403:
            raise
        result.scope = f"namespace {fallback_namespace} (listing pods in all namespaces is forbidden)"
        listing = api.get(_pods(fallback_namespace), query)
    for pod in listing.get("items") or []:
        md = pod.get("metadata") or {}
        ns, name = md.get("namespace") or fallback_namespace, md.get("name") or ""
        (result.deleted if delete_pod(api, ns, name) else result.failed).append(f"{ns}/{name}")
    return result
