"""`gputui explain SLUG`: a check's documentation, from its docstring (the same text README shows)."""

from __future__ import annotations

import argparse
import inspect

from diagnostics.registry import all_checks, find
from gputui.cli import UsageError
from gputui.exit_codes import ExitCode


def run(args: argparse.Namespace) -> int:
    if args.list or not args.check:
        for spec in all_checks():
            print(f"{spec.code}  {spec.slug:36} {spec.severity.label:8} {spec.title}")
        return ExitCode.OK
    spec = find(args.check)
    if spec is None:
        raise UsageError(f"unknown check {args.check!r} (see `gputui explain --list`)")
    print(f"{spec.code} {spec.slug} ({spec.severity.label}) — {spec.title}")
    print(f"needs: {', '.join(spec.requires)}" + (f"; uses if present: {', '.join(spec.optional)}"
                                                  if spec.optional else ""))
    print()
    print(inspect.cleandoc(spec.doc))
    return ExitCode.OK
