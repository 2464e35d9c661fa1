"""The command line: `program` parses and dispatches; each command's module (imported only when it runs)
has `run(args)`. `main` is the console script's entry point (`gputui.cli:main`)."""

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


def main(argv: list[str] | None = None) -> int:
    from gputui.cli.program import main as program_main

    return program_main(argv)
