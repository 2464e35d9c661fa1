"""`gputui`: the live TUI (Textual is imported only here, never on the one-shot paths)."""

from __future__ import annotations

import argparse
import contextlib
import threading
from typing import Any


def run(args: argparse.Namespace, title: str = "") -> int:
    session = None if getattr(args, "bundle", None) else start_early(args)
    from gputui.tui.app import run_app

    return run_app(args, title=title, session=session, new_session=session_factory(args))


def session_factory(args: argparse.Namespace) -> Any:
    """(context, namespace) -> a new LiveSession with the same kubeconfig, Prometheus and AWS settings
    (`:ctx` / `:ns` in the TUI). A bad context raises UsageError, shown as one line."""
    import copy

    def new_session(context: str | None, namespace: str | None) -> Any:
        from gputui.cli.connect import connect
        from gputui.cli.config import aws_config, prometheus_settings
        from gputui.collect.live import LiveSession

        a = copy.copy(args)
        a.context, a.namespace = context, namespace
        api, info = connect(a)
        return LiveSession(api, info, prometheus=prometheus_settings(a), aws=aws_config(a), namespace=namespace,
                           pending_first=True)

    return new_session


def start_early(args: argparse.Namespace) -> Any:
    """Connect and start the informers before Textual is imported (~0.3 s): the first lists are on
    their way while it loads. A bad kubeconfig is still a one-line error (UsageError) from here."""
    from gputui.cli.connect import connect
    from gputui.cli.config import aws_config, prometheus_settings
    from gputui.collect.live import LiveSession

    api, info = connect(args)
    session = LiveSession(api, info, prometheus=prometheus_settings(args), aws=aws_config(args),
                          namespace=getattr(args, "namespace", None), pending_first=True)

    def start() -> None:
        with contextlib.suppress(Exception):  # the app starts it again on mount, and shows what fails
            session.start()

    threading.Thread(target=start, name="session-start", daemon=True).start()
    return session
