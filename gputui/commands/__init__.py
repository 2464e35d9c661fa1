"""Subcommand implementations, imported only when their command runs."""

from __future__ import annotations

import argparse

from gputui.exit_codes import ExitCode


def run_command(args: argparse.Namespace) -> int:
    cmd = args.command
    if cmd == "diagnose":
        from gputui.commands.diagnose import run

        return run(args)
    if cmd == "explain":
        from gputui.commands.explain import run

        return run(args)
    if cmd == "demo":
        from gputui.commands.demo import run

        return run(args)
    if cmd is None:
        from gputui.commands.tui import run

        return run(args)
    handler = getattr(args, "handler", None)
    if handler is not None:
        return int(handler(args))
    return ExitCode.USAGE
