"""`gputui diagnose [TARGET]`: collect once, run the checks, print, exit by worst severity."""

from __future__ import annotations

import argparse
import importlib
import sys
from concurrent.futures import ThreadPoolExecutor

from diagnostics import run as run_checks
from diagnostics.model import Report, Severity
from diagnostics.registry import RegistryError, all_checks
from gputui import clock
from gputui.cli.program import skip_teardown
from gputui.errors import UsageError
from gputui.errors import ExitCode, for_severity
from gputui.targets import Target, TargetError, in_namespace, parse_target


def run(args: argparse.Namespace) -> int:
    try:
        target = parse_target(args.target, getattr(args, "namespace", None))
    except TargetError as exc:
        raise UsageError(str(exc)) from None
    bundle = getattr(args, "bundle", None)
    if bundle:
        from gputui.bundle.read import BundleError, open_bundle

        try:
            opened = open_bundle(bundle)
            if target.ref is None and opened.target_ref is not None:
                target = Target(opened.target_ref)  # a bundle made for a target answers for it
            snap = opened.snapshot(target=target.ref)
        except BundleError as exc:
            raise UsageError(str(exc)) from None
    else:
        from gputui.collect.one_shot import TargetNotFound, collect
        from gputui.cli.connect import connect
        from gputui.kube.api import Unreachable

        from gputui.cli.config import aws_config, prometheus_settings

        api, info = connect(args)
        target = in_namespace(target, args.target, getattr(args, "namespace", None), info.namespace)
        prometheus, aws = prometheus_settings(args), aws_config(args)
        try:
            with ThreadPoolExecutor(max_workers=1) as background:
                background.submit(_warm_up, args.output)
                snap = collect(api, info, target.ref, now=clock.now, prometheus=prometheus, aws=aws, scoped=True)
        except TargetNotFound as exc:
            raise UsageError(str(exc)) from None
        except Unreachable as exc:
            from gputui.output.sanitize import visible  # the server's own words: shown, never interpreted

            print(f"gputui: error: cluster unreachable: {visible(str(exc), limit=1000)}", file=sys.stderr)
            return ExitCode.UNREACHABLE
    try:
        report = run_checks(snap, only=args.only, ignore=args.ignore)
    except RegistryError as exc:
        raise UsageError(str(exc)) from None
    from gputui.bundle.judge import judged

    report = judged(report, snap, target.ref)
    emit(report, args.output, verbose=getattr(args, "verbose", False))
    code = exit_code(report)
    skip_teardown()  # everything is printed; nothing but atexit handlers is left to clean up
    return code


def _warm_up(output: str) -> None:
    """Import the checks and the renderer while the API server answers (a one-shot is mostly imports).

    Nothing else registers checks meanwhile: the diagnostics modules `collect` uses were imported
    with it, before this runs.
    """
    all_checks()
    for name in ("gputui.output.json",) if output == "json" else ("gputui.output.console", "gputui.output.text"):
        importlib.import_module(name)


def exit_code(report: Report) -> int:
    """By worst severity, but never better than the verdict allows (`diagnostics.verdict.judge`): a run that
    could not see everything it needed, or a pending pod nothing explains, is not an all-clear (4)."""
    from diagnostics.model import CheckStatus
    from diagnostics.verdict import judge

    verdict = report.verdict or judge(report)
    if report.results and all(r.status is CheckStatus.SKIPPED for r in report.results):
        print("gputui: warning: no check could run (every source they need is forbidden, absent or "
              "unreachable); see the reasons above", file=sys.stderr)
        return int(for_severity(max(report.worst, Severity.WARNING)))
    if verdict.floor > report.worst:
        from gputui.output.sanitize import visible

        print(f"gputui: warning: {visible(verdict.headline, limit=1000)}", file=sys.stderr)
    return int(for_severity(max(report.worst, verdict.floor)))


def emit(report: Report, output: str, *, verbose: bool = False) -> None:
    from gputui.output.console import reader_may_leave, stdout_console

    with reader_may_leave():
        if output == "json":
            from gputui.output.json import dumps, report_json

            sys.stdout.write(dumps(report_json(report)))
            sys.stdout.flush()
            return
        from gputui.output.text import render_report

        render_report(report, stdout_console(), verbose=verbose)
