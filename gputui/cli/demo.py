"""`gputui demo`: the whole product on an embedded simulated cluster (no cloud account needed)."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from gputui.errors import UsageError
from gputui.errors import ExitCode

if TYPE_CHECKING:
    from gputui.sim.cluster import SimCluster


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
    _leave_on_signals()
    cluster.start()
    from gputui import clock
    from gputui.sim.pulse import EventPulse

    pulse = EventPulse(cluster, clock.now()).start(clock.now)  # recent events stay recent while it runs
    extras = DemoExtras()
    tmp = ""
    try:
        extras = DemoExtras.start(cluster)
        extras.apply(args)
        if args.serve:
            return _serve(cluster, args)
        tmp = tempfile.mkdtemp(prefix="gputui-demo-")
        kubeconfig = os.path.join(tmp, "kubeconfig")
        cluster.write_kubeconfig(kubeconfig)
        args.kubeconfig = kubeconfig
        args.context = None
        if args.headless:
            return _headless(args)
        from gputui.cli.tui import run as run_tui

        return run_tui(args, title=f"demo: {args.scenario}")
    finally:
        pulse.stop()
        extras.stop()
        cluster.stop()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def _leave_on_signals() -> None:
    """SIGTERM / SIGHUP while the demo starts (or serves) unwind through the `finally` above, so its
    Prometheus and temp dirs go too; once the TUI runs, it turns them into a quit of its own."""
    def leave(signum: int, _frame: object) -> None:
        raise SystemExit(int(ExitCode.TERMINATED))

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, leave)


class DemoExtras:
    """The demo's Prometheus (and, when available, AWS) endpoints, seeded to match the scenario."""

    def __init__(self) -> None:
        self.prometheus_url: str | None = None
        self.stops: list[Callable[[], None]] = []
        self.env: dict[str, str] = {}
        self._saved: dict[str, str | None] = {}

    @classmethod
    def start(cls, cluster: SimCluster, now: datetime | None = None) -> DemoExtras:
        """`now`: where the Prometheus history is anchored (the wall clock; screenshots pass a frozen one)."""
        self = cls()
        objects = [o for objs in cluster.scenario.objects.values() for o in objs] if cluster.scenario else []
        try:
            from gputui.sim.prometheus import start_demo_prometheus
            from gputui.sim.prometheus_local import LocalPrometheusError

            try:
                started = start_demo_prometheus(objects, now=now)
            except LocalPrometheusError as exc:
                print(f"gputui demo: Prometheus did not start ({exc}); metric checks will be skipped",
                      file=sys.stderr)
                started = None
            if started is not None:
                self.prometheus_url, stop = started
                self.stops.append(stop)
                self.env["GPUTUI_PROMETHEUS_URL"] = self.prometheus_url
        except ImportError:
            pass
        try:
            from gputui.sim.aws import on_aws, start_demo_aws

            if on_aws(cluster.scenario):  # a GKE scenario has no EC2 to simulate
                endpoint, region, stop = start_demo_aws(cluster.scenario)
                self.stops.append(stop)
                self.env.update({"AWS_ENDPOINT_URL": endpoint, "AWS_REGION": region,
                                 "AWS_ACCESS_KEY_ID": "demo", "AWS_SECRET_ACCESS_KEY": "demo",
                                 "AWS_EC2_METADATA_DISABLED": "true"})
        except ImportError:
            pass
        return self

    def apply(self, args: argparse.Namespace) -> None:
        """Point this process's sources at the demo endpoints (and nothing else)."""
        if self.prometheus_url and not getattr(args, "prometheus_url", None):
            args.prometheus_url = self.prometheus_url
        self._saved = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)

    def stop(self) -> None:
        for k, v in self._saved.items():  # leave the process environment as we found it
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        for stop in reversed(self.stops):
            try:
                stop()
            except Exception:  # noqa: BLE001 - best effort on the way out
                pass


def _headless(args: argparse.Namespace) -> int:
    from diagnostics import run as run_checks
    from gputui import clock
    from gputui.collect.one_shot import collect
    from gputui.cli.connect import connect
    from gputui.output.console import PipeSafeConsole, reader_may_leave
    from gputui.output.summary import render_summary

    from gputui.cli.config import aws_config, prometheus_settings

    api, info = connect(args)
    snap = collect(api, info, None, now=clock.now, prometheus=prometheus_settings(args), aws=aws_config(args))
    report = run_checks(snap)
    with reader_may_leave():  # `gputui demo --headless | head` is not a failure
        render_summary(snap, report, PipeSafeConsole(width=None if sys.stdout.isatty() else 160))
    return ExitCode.OK


def _serve(cluster: SimCluster, args: argparse.Namespace) -> int:
    out = Path(args.kubeconfig_out or "gputui-demo.kubeconfig").resolve()
    from gputui.output.files import NotARegularFile

    try:
        cluster.write_kubeconfig(str(out))  # written atomically, only now that the server listens
    except NotARegularFile as exc:
        raise UsageError(str(exc)) from None
    print(f"gputui demo cluster ({args.scenario}) on {cluster.url}")
    print(f"export KUBECONFIG={out}")
    for k, v in sorted(os.environ.items()):
        if k in ("GPUTUI_PROMETHEUS_URL", "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_ACCESS_KEY_ID",
                 "AWS_SECRET_ACCESS_KEY", "AWS_EC2_METADATA_DISABLED"):
            print(f"export {k}={v}")
    print("Ctrl-C to stop.", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    return ExitCode.OK
