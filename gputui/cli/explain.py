"""`gputui explain SLUG`: a check's documentation, from its docstring (the same text README shows)."""

from __future__ import annotations

import argparse
import inspect

from diagnostics.registry import all_checks, find
from gputui.errors import UsageError
from gputui.errors import ExitCode


def run(args: argparse.Namespace) -> int:
    if args.list or not args.check:
        for each in all_checks():
            print(f"{each.code}  {each.slug:36} {each.severity.label:8} {each.title}")
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
