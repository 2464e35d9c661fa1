"""`gputui diagnose [TARGET]`: collect once, run the checks, print, exit by worst severity."""

from __future__ import annotations

import argparse
import importlib
import sys
from concurrent.futures import ThreadPoolExecutor

from diagnostics import run as run_checks
from diagnostics.model import Report
from diagnostics.registry import RegistryError, all_checks
from gputui import clock
from gputui.cli import UsageError
from gputui.exit_codes import ExitCode, for_severity
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
        from gputui.collect import TargetNotFound, collect
        from gputui.commands.connect import connect
        from gputui.kubeapi import Unreachable

        from gputui.config import aws_config, prometheus_settings

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
            print(f"gputui: error: cluster unreachable: {exc}", file=sys.stderr)
            return ExitCode.UNREACHABLE
    try:
        report = run_checks(snap, only=args.only, ignore=args.ignore)
    except RegistryError as exc:
        raise UsageError(str(exc)) from None
    if target.ref is not None:
        report = focus(report, snap, target.ref)
    emit(report, args.output)
    return exit_code(report)


def _warm_up(output: str) -> None:
    """Import the checks and the renderer while the API server answers (a one-shot is mostly imports).

    Nothing else registers checks meanwhile: the diagnostics modules `collect` uses were imported
    with it, before this runs.
    """
    all_checks()
    for name in ("gputui.output.json",) if output == "json" else ("gputui.output.console", "gputui.output.text"):
        importlib.import_module(name)


def exit_code(report: Report) -> int:
    """By worst severity; but a run in which no check could look at anything is not "all clear"."""
    from diagnostics.model import CheckStatus

    if report.results and all(r.status is CheckStatus.SKIPPED for r in report.results):
        print("gputui: warning: no check could run (every source they need is forbidden, absent or "
              "unreachable); see the reasons above", file=sys.stderr)
        return max(int(for_severity(report.worst)), int(ExitCode.FINDINGS_WARNING))
    # Nothing found, but most of the checklist was kept from looking (RBAC, an unreachable source): not an
    # all-clear. Checks skipped because Karpenter or Prometheus is simply not there do not count.
    blind = sum(r.status is CheckStatus.SKIPPED and (": forbidden" in r.reason or ": unreachable" in r.reason)
                for r in report.results)
    if not report.findings and blind * 2 > len(report.results):
        print(f"gputui: warning: {blind} of {len(report.results)} checks could not run (their sources are "
              "forbidden or unreachable): no problems found is not an all-clear", file=sys.stderr)
        return max(int(for_severity(report.worst)), int(ExitCode.FINDINGS_WARNING))
    return for_severity(report.worst)


def focus(report: Report, snap, ref) -> Report:  # type: ignore[no-untyped-def]
    """Keep the findings about the target's chain (pod -> claim -> node -> pool -> class), or that name
    the target, its claim or its node among the objects they affect.

    A NodePool or EC2NodeClass above the target is shared with many other objects: a finding about
    another pool's NodeClaim that merely lists the shared class is not about this pod or node (a
    healthy pod must not exit with another pool's errors). Findings about the pool or class itself
    are kept, since they are in the chain.
    """
    from dataclasses import replace

    from diagnostics.model import CheckStatus
    from gputui.related import chain

    keep = set(chain(snap, ref))
    own = {x for x in keep if x == ref or x.kind not in ("NodePool", "EC2NodeClass")}
    results = []
    for r in report.results:
        fs = tuple(f for f in r.findings if f.subject in keep or any(x in own for x in f.related))
        if r.status is CheckStatus.FAILED and not fs:
            r = replace(r, status=CheckStatus.PASSED, findings=())
        else:
            r = replace(r, findings=fs)
        results.append(r)
    return replace(report, results=tuple(results))


def emit(report: Report, output: str) -> None:
    from gputui.output.console import reader_may_leave, stdout_console

    with reader_may_leave():
        if output == "json":
            from gputui.output.json import dumps, report_json

            sys.stdout.write(dumps(report_json(report)))
            sys.stdout.flush()
            return
        from gputui.output.text import render_report

        render_report(report, stdout_console())
