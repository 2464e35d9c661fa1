"""`python -m gputui.dev.screenshots`: regenerate screenshots/ from `gputui demo` under Textual's run_test.

The whole demo, as `gputui demo` runs it: the simulated cluster plus the demo's Prometheus and AWS
(moto), so the README shows the incident the demo shows (tests/tui/test_screenshots.py fails when
they differ). The same shots (scenario, size, keys) drive the SVG snapshot tests
(tests/tui/test_snapshots.py, on the cluster alone). Both run the pinned check set
(gputui.dev.pinned_checks), so a new check does not redraw them. Time is frozen at the scenario's
referenceTime (GPUTUI_NOW) and the simulator does not shift times, so every age is stable; the demo
Prometheus draws the same values whatever the day.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.pilot import Pilot

from gputui.dev.pinned_checks import PINNED_CHECKS

if TYPE_CHECKING:
    from gputui.tui.app import GputuiApp

OUT_DIR = Path(__file__).resolve().parents[2] / "screenshots"


@dataclass(frozen=True, slots=True)
class Shot:
    name: str
    """File name without `.svg`."""
    keys: tuple[str, ...] = ()
    """Keys pressed, in order, once the data has settled (Textual key names: "colon", "enter", ...)."""
    size: tuple[int, int] = (120, 40)
    scenario: str = "incident"
    read_only: bool = False


SHOTS: tuple[Shot, ...] = (
    Shot("overview"),
    Shot("overview-80x24", size=(80, 24)),
    Shot("findings", keys=("f",)),
    Shot("finding", keys=("f", "enter")),
    # The node without GPUs: filter to it, show the nodes table, open the row.
    Shot("node", keys=("slash", *"31-203", "enter", "colon", "n", "o", "enter", "enter")),
    Shot("pod", keys=("colon", *"pods", "enter", "enter")),
    Shot("help", keys=("question_mark",)),
)


@contextmanager
def frozen_clock(scenario: str) -> Iterator[None]:
    """Set GPUTUI_NOW to the scenario's referenceTime for the duration (restored afterwards)."""
    from gputui.sim.scenario import load_scenario

    ref = load_scenario(scenario).reference_time
    old = os.environ.get("GPUTUI_NOW")
    if ref is not None:
        os.environ["GPUTUI_NOW"] = ref.strftime("%Y-%m-%dT%H:%M:%SZ")
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("GPUTUI_NOW", None)
        else:
            os.environ["GPUTUI_NOW"] = old


def build_app(kubeconfig: str | Path, *, title: str, read_only: bool = False, namespace: str | None = None,
              context: str | None = None, sources: tuple[Any, Any] = (None, None),
              checks: Sequence[str] = ()) -> GputuiApp:
    """A GputuiApp on a live session against `kubeconfig` (what `gputui demo` runs); `:ctx` / `:ns`
    build new sessions from the same file. `checks` (codes or slugs) runs only those, as
    `diagnose --only` does: screenshots and snapshots use PINNED_CHECKS so a new check leaves them be."""
    from gputui.kube.api import Api, load
    from gputui.collect.live import LiveSession
    from gputui.tui.app import GputuiApp, kube_contexts

    prometheus, aws = sources
    diagnose = None
    if checks:
        from diagnostics import Report, Snapshot, run

        only = tuple(checks)

        def diagnose(snap: Snapshot) -> Report:
            return run(snap, only=only)

    def new_session(ctx: str | None, ns: str | None) -> LiveSession:
        client, info = load(str(kubeconfig), ctx)
        return LiveSession(Api(client), info, namespace=ns, prometheus=prometheus, aws=aws, pending_first=True)

    return GputuiApp(session=new_session(context, namespace), title=title, read_only=read_only, namespace=namespace,
                     new_session=new_session, contexts=lambda: kube_contexts(str(kubeconfig)), diagnose=diagnose)


async def settle(pilot: Pilot[Any], timeout: float = 20.0) -> None:
    """Wait until every source answered and the screen shows the newest snapshot."""
    app = pilot.app
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        if getattr(app, "settled", True) and not _loading(app):
            break
    else:
        raise TimeoutError("the TUI did not settle")
    await pilot.pause(0.1)
    await pilot.wait_for_scheduled_animations()


def _loading(app: object) -> bool:
    """A source (Prometheus, AWS) has not answered its first round yet."""
    from diagnostics.snapshot import SourceState

    snap = getattr(app, "snapshot", None)
    return snap is not None and any(s.state is SourceState.LOADING for s in snap.sources.values())


@contextmanager
def demo_sources(cluster: Any) -> Iterator[tuple[Any, Any]]:
    """The demo's Prometheus and AWS for `cluster`'s scenario, started as `gputui demo` starts them,
    as (PrometheusSettings or None, AwsConfig or None); stopped afterwards."""
    from gputui import clock
    from gputui.cli.demo import DemoExtras
    from gputui.cli.config import aws_config, prometheus_settings

    args = argparse.Namespace(prometheus_url=None, prometheus_selector=None, aws_profile=None, aws_region=None)
    # Anchored at the frozen clock, which the live session then asks Prometheus about: same values any day.
    extras = DemoExtras.start(cluster, now=clock.now())
    extras.apply(args)
    try:
        yield (prometheus_settings(args) if args.prometheus_url else None,
               aws_config(args) if "AWS_ENDPOINT_URL" in extras.env else None)
    finally:
        extras.stop()


async def play(pilot: Pilot[Any], keys: Sequence[str]) -> None:
    """Settle, press the shot's keys, then settle again (so the screen shows the newest data)."""
    await settle(pilot)
    for key in keys:
        await pilot.press(key)
        await pilot.pause(0.05)
    await settle(pilot)


async def capture(shot: Shot, kubeconfig: str | Path, out_dir: Path, sources: tuple[Any, Any] = (None, None)) -> Path:
    app = build_app(kubeconfig, title=f"demo: {shot.scenario}", read_only=shot.read_only, sources=sources,
                    checks=PINNED_CHECKS)
    async with app.run_test(size=shot.size) as pilot:
        await play(pilot, shot.keys)
        path = app.save_screenshot(f"{shot.name}.svg", path=str(out_dir))
    return Path(path)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gputui.dev.screenshots", description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=OUT_DIR, help=f"output directory (default {OUT_DIR})")
    p.add_argument("names", nargs="*", help="only these shots (default: all)")
    args = p.parse_args(argv)
    from gputui.sim.cluster import SimCluster

    shots = [s for s in SHOTS if not args.names or s.name in args.names]
    args.out.mkdir(parents=True, exist_ok=True)
    for scenario in dict.fromkeys(s.scenario for s in shots):
        with frozen_clock(scenario), SimCluster(scenario, shift_to_now=False) as sim, \
                tempfile.TemporaryDirectory(prefix="gputui-shots-") as tmp, demo_sources(sim) as sources:
            kubeconfig = sim.write_kubeconfig(Path(tmp) / "kubeconfig")
            for shot in (s for s in shots if s.scenario == scenario):
                path = asyncio.run(capture(shot, kubeconfig, args.out, sources))
                print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
