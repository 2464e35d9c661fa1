"""Resolve the optional sources' settings (Prometheus, AWS) from flags and the environment."""

from __future__ import annotations

import argparse
from typing import Any


def prometheus_settings(args: argparse.Namespace, **kw: Any) -> Any:
    from gputui.errors import UsageError
    from gputui.sources.prometheus import PrometheusSettings, SelectorError

    try:
        return PrometheusSettings.from_env(getattr(args, "prometheus_url", None),
                                           selector=getattr(args, "prometheus_selector", None), **kw)
    except SelectorError as exc:
        raise UsageError(str(exc)) from None


def aws_config(args: argparse.Namespace) -> Any:
    """None when the AWS source is not available in this build."""
    try:
        from gputui.sources.aws import AwsConfig
    except ImportError:
        return None
    return AwsConfig.from_args(args) if hasattr(AwsConfig, "from_args") else AwsConfig(
        profile=getattr(args, "aws_profile", None), region=getattr(args, "aws_region", None))
