"""The debug pod manifest: pinned to one node, tolerating every taint, short-lived, labelled for cleanup."""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import Any

from gputui.debugpod.capture import DEBUG_SCRIPT

__all__ = [
    "CONTAINER",
    "DEBUG_NODE_ANNOTATION",
    "DEBUG_NODE_LABEL",
    "DEFAULT_IMAGE",
    "LABEL_SELECTOR",
    "MANAGED_BY",
    "MANAGED_BY_VALUE",
    "PodOptions",
    "build_pod",
    "debug_pod_manifest",
    "label_value",
    "pod_name",
]

DEFAULT_IMAGE = "nvidia/cuda:12.4.1-base-ubuntu22.04"
"""Fully tagged (no `latest`): sets NVIDIA_* env and has /bin/sh; nvidia-smi itself is injected or on the host."""

MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "gputui"
DEBUG_NODE_LABEL = "gputui.dev/debug-node"
DEBUG_NODE_ANNOTATION = "gputui.dev/debug-node"
"""The full node name; the label may be shortened to stay a valid label value."""
LABEL_SELECTOR = f"{MANAGED_BY}={MANAGED_BY_VALUE},{DEBUG_NODE_LABEL}"
"""Every gputui debug pod and nothing else (`--cleanup`)."""
CONTAINER = "nvidia-smi"
HOST_MOUNT = "/host"

_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # kubectl's: no vowels (no words), no look-alikes
_LABEL_OK = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$")


@dataclass(frozen=True, slots=True)
class PodOptions:
    """How the pod reaches the GPUs; see `gputui debug --help` for when to use each."""

    image: str = DEFAULT_IMAGE
    gpus: int = 0
    """0: no `nvidia.com/gpu` request, the runtime injects every GPU (works on a full node)."""
    runtime_class: str | None = None
    """Resolved RuntimeClass name (`auto` is resolved against the cluster before building)."""
    privileged: bool = False
    host_pid: bool = False
    timeout: int = 120
    """Seconds gputui waits; the pod's own dead-man switch is this plus a minute."""

    @property
    def active_deadline(self) -> int:
        return max(1, int(self.timeout)) + 60


def pod_name(node: str, random: str | None = None) -> str:
    """`gputui-debug-<first label of the node name>-<5 random chars>`, at most 63 characters."""
    suffix = random if random is not None else "".join(secrets.choice(_NAME_ALPHABET) for _ in range(5))
    short = re.sub(r"[^a-z0-9-]+", "-", node.split(".")[0].lower()).strip("-") or "node"
    room = 63 - len("gputui-debug--") - len(suffix)
    return f"gputui-debug-{short[:room].rstrip('-')}-{suffix}"


def label_value(value: str) -> str:
    """`value` if it is a valid label value, else a readable prefix plus a hash (node names reach 253 chars)."""
    if _LABEL_OK.match(value):
        return value
    digest = hashlib.sha256(value.encode()).hexdigest()[:10]
    prefix = re.sub(r"[^A-Za-z0-9._-]+", "-", value)[:52].strip("._-")
    return f"{prefix}-{digest}" if prefix else digest


def build_pod(node: str, namespace: str, name: str, options: PodOptions = PodOptions()) -> dict[str, Any]:
    """The Pod gputui creates. No `nvidia.com/gpu` request unless `options.gpus`, so it runs on a full node.

    No CPU or memory requests either (BestEffort): pinned with nodeName, the pod is admitted by the
    kubelet itself, which refuses a pod whose requests do not fit (OutOfcpu) on a node whose GPU jobs
    requested all of it - the very node one wants to look at. nvidia-smi needs a few MB.
    NVIDIA_DISABLE_REQUIRE: the image's `cuda>=` requirement would make the NVIDIA hook refuse to
    start the container on an older driver, and nvidia-smi needs no CUDA.
    """
    env = [{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility"},
           {"name": "NVIDIA_DISABLE_REQUIRE", "value": "true"}]
    resources: dict[str, Any] = {}
    if options.gpus > 0:
        # The device plugin picks the GPUs and sets NVIDIA_VISIBLE_DEVICES itself.
        resources["limits"] = {"nvidia.com/gpu": str(options.gpus)}
    else:
        env.insert(0, {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"})
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": options.image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["/bin/sh", "-c", DEBUG_SCRIPT],
        "env": env,
        "resources": resources,
    }
    spec: dict[str, Any] = {
        "nodeName": node,
        "restartPolicy": "Never",
        "activeDeadlineSeconds": options.active_deadline,
        "terminationGracePeriodSeconds": 1,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "tolerations": [{"operator": "Exists"}],
        "containers": [container],
    }
    if options.runtime_class:
        spec["runtimeClassName"] = options.runtime_class
    if options.host_pid:
        spec["hostPID"] = True
    if options.privileged:
        container["securityContext"] = {"privileged": True}
        # HostToContainer: the GPU Operator's driver root (/run/nvidia/driver) is itself a mount.
        container["volumeMounts"] = [{"name": "host", "mountPath": HOST_MOUNT, "readOnly": True,
                                      "mountPropagation": "HostToContainer"}]
        spec["volumes"] = [{"name": "host", "hostPath": {"path": "/", "type": "Directory"}}]
    else:
        # Admissible under Pod Security "baseline"; nvidia-smi only reads.
        container["securityContext"] = {"allowPrivilegeEscalation": False,
                                        "capabilities": {"drop": ["ALL"]},
                                        "seccompProfile": {"type": "RuntimeDefault"}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {MANAGED_BY: MANAGED_BY_VALUE, DEBUG_NODE_LABEL: label_value(node)},
            "annotations": {DEBUG_NODE_ANNOTATION: node},
        },
        "spec": spec,
    }


def debug_pod_manifest(node: str, namespace: str = "default", options: PodOptions | None = None) -> dict[str, Any]:
    """A preview of the pod (the TUI shows it before asking); the real one gets a fresh random suffix."""
    return build_pod(node, namespace, pod_name(node, "xxxxx"), options or PodOptions())
