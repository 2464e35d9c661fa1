"""`gputui`: the live TUI (Textual is imported only here, never on the one-shot paths)."""

from __future__ import annotations

import argparse


def run(args: argparse.Namespace, title: str = "") -> int:
    from gputui.tui.app import run_app

    return run_app(args, title=title)
