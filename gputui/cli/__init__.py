"""The command line: `main` parses, and each command's module (imported only when it runs) has `run(args)`."""

from __future__ import annotations

import argparse
import importlib

# command name -> module under gputui.cli; None is bare `gputui` (the TUI)
COMMANDS: dict[str | None, str] = {
    None: "tui",
    "diagnose": "diagnose",
    "explain": "explain",
    "demo": "demo",
    "debug": "debug",
    "bundle": "bundle",
}


def run_command(args: argparse.Namespace) -> int:
    module = importlib.import_module(f"gputui.cli.{COMMANDS[args.command]}")
    return int(module.run(args))
