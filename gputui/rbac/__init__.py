"""The RBAC gputui needs, shipped as package data: a read-only ClusterRole and the opt-in debug-pod Role."""

from __future__ import annotations

import sys
from importlib import resources
from typing import Any, TextIO

import yaml

READONLY = "clusterrole-readonly.yaml"
"""ClusterRole `gputui-readonly`: get/list/watch on what gputui reads, services(+proxy) and pods/log."""
DEBUG_POD = "role-debug-pod.yaml"
"""Role `gputui-debug-pod`: create/delete/get/list/watch pods and get pods/log, in one namespace."""
MANIFESTS = (READONLY, DEBUG_POD)

__all__ = ["DEBUG_POD", "MANIFESTS", "READONLY", "load", "print_manifests", "text"]


def text(name: str) -> str:
    """The manifest's YAML, comments included (what a user applies)."""
    if name not in MANIFESTS:
        raise KeyError(f"unknown RBAC manifest {name!r} (have: {', '.join(MANIFESTS)})")
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")


def load(name: str) -> dict[str, Any]:
    """The manifest as a Kubernetes object."""
    obj = yaml.safe_load(text(name))
    if not isinstance(obj, dict):
        raise ValueError(f"{name} is not a Kubernetes object")
    return obj


def print_manifests(names: tuple[str, ...] = MANIFESTS, out: TextIO | None = None) -> None:
    """Write the manifests as one multi-document YAML stream (`... | kubectl apply -f -`)."""
    stream = out or sys.stdout
    for i, name in enumerate(names):
        if i:
            stream.write("---\n")
        stream.write(text(name))
