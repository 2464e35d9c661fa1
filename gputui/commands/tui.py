"""`gputui`: the live TUI (Textual is imported only here)."""

from __future__ import annotations

import argparse

from gputui.exit_codes import ExitCode


def run(args: argparse.Namespace, title: str = "") -> int:
    try:
        from gputui.tui.app import run_app
    except ImportError:
        return _plain(args)
    return run_app(args, title=title)


def _plain(args: argparse.Namespace) -> int:
    """Until the TUI exists: a plain live summary, refreshed from the watch cache."""
    import time

    from rich.console import Console

    from diagnostics import run as run_checks
    from gputui.commands.connect import connect
    from gputui.live import LiveSession
    from gputui.summary import render_summary

    api, info = connect(args)
    session = LiveSession(api, info)
    session.start()
    console = Console()
    try:
        session.wait_synced(30)
        while True:
            snap = session.snapshot()
            console.clear()
            render_summary(snap, run_checks(snap), console)
            time.sleep(2)
    except KeyboardInterrupt:
        return ExitCode.OK
    finally:
        session.stop()
