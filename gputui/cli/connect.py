"""Resolve --kubeconfig/--context into an Api, turning config problems into one-line usage errors."""

from __future__ import annotations

import argparse

from gputui.errors import UsageError
from gputui.kube.api import Api, ClusterInfo, ConfigError, load


def connect(args: argparse.Namespace) -> tuple[Api, ClusterInfo]:
    try:
        client, info = load(getattr(args, "kubeconfig", None), getattr(args, "context", None))
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    return Api(client), info
