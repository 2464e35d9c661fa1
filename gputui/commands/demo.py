"""`gputui demo`: the whole product on an embedded simulated cluster (no cloud account needed)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
from pathlib import Path

from gputui.cli import UsageError
from gputui.exit_codes import ExitCode


def run(args: argparse.Namespace) -> int:
    from gputui.sim.scenario import ScenarioError, list_scenarios

    if args.list_scenarios:
        for sc in list_scenarios():
            print(f"{sc.name:24} {sc.description}")
        return ExitCode.OK
    names = [sc.name for sc in list_scenarios()]
    if args.scenario not in names:
        raise UsageError(f"unknown scenario {args.scenario!r} (have: {', '.join(names)})")
    from gputui.sim.cluster import SimCluster

    try:
        cluster = SimCluster(args.scenario, shift_to_now=True)
    except ScenarioError as exc:
        raise UsageError(str(exc)) from None
    cluster.start()
    try:
        if args.serve:
            return _serve(cluster, args)
        tmp = tempfile.mkdtemp(prefix="gputui-demo-")
        kubeconfig = os.path.join(tmp, "kubeconfig")
        cluster.write_kubeconfig(kubeconfig)
        args.kubeconfig = kubeconfig
        args.context = None
        if args.headless:
            return _headless(args)
        from gputui.commands.tui import run as run_tui

        return run_tui(args, title=f"demo: {args.scenario}")
    finally:
        cluster.stop()


def _headless(args: argparse.Namespace) -> int:
    from rich.console import Console

    from diagnostics import run as run_checks
    from gputui import clock
    from gputui.collect import collect
    from gputui.commands.connect import connect
    from gputui.summary import render_summary

    api, info = connect(args)
    snap = collect(api, info, None, now=clock.now)
    report = run_checks(snap)
    render_summary(snap, report, Console(width=None if sys.stdout.isatty() else 160))
    return ExitCode.OK


def _serve(cluster, args: argparse.Namespace) -> int:  # type: ignore[no-untyped-def]
    out = Path(args.kubeconfig_out or "gputui-demo.kubeconfig").resolve()
    cluster.write_kubeconfig(str(out))  # written atomically, only now that the server listens
    print(f"gputui demo cluster ({args.scenario}) on {cluster.url}")
    print(f"export KUBECONFIG={out}")
    print("Ctrl-C to stop.", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    return ExitCode.OK
