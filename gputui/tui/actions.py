"""Actions that reach outside the TUI (debug pod, bundle export), imported lazily and run in workers.

Both features live in their own packages (gputui.debugpod, gputui.bundle); the TUI only asks for
confirmation, runs them off the UI thread and shows the outcome. A build without them says so.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

import yaml
from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text

from gputui.tui.screens.confirm import ConfirmScreen

if TYPE_CHECKING:
    from gputui.tui.app import GputuiApp


def optional_module(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def debug_pod_preview(node: str, namespace: str) -> RenderableType:
    """The exact pod gputui will create, as YAML (the debugpod package builds it)."""
    spec = optional_module("gputui.debugpod.pod_spec")
    build = getattr(spec, "debug_pod_manifest", None)
    if callable(build):
        try:
            manifest = build(node, namespace)
        except Exception:  # a preview must never block the action; fall back to the summary
            manifest = None
        if isinstance(manifest, dict):
            return Syntax(yaml.safe_dump(manifest, sort_keys=False), "yaml", theme="ansi_dark",
                          background_color="default")
    return Text.assemble(
        "A short-lived pod in namespace ", (namespace, "bold"), " pinned to ", (node, "bold"),
        " (spec.nodeName), labelled app.kubernetes.io/managed-by=gputui and gputui.dev/debug-node=",
        (node, "bold"), ". It runs nvidia-smi, its log is read, and it is deleted afterwards.")


def debug_node(app: GputuiApp, node: str) -> None:
    """Ctrl+D: confirm (showing the exact pod; the node's name must be typed), then run nvidia-smi on
    `node` (never under --read-only). Not `d`: that is describe in k9s, and `d y` is a reflex."""
    session = app.session
    if session is None:
        app.notify("Debug pods need a live cluster; this is a bundle opened offline.", severity="warning")
        return
    if app.read_only:
        app.notify("Read-only mode (--read-only): gputui creates nothing in the cluster, so no debug pod.",
                   title="Debug pod refused", severity="error")
        return
    mod = optional_module("gputui.debugpod.run")
    if mod is None or not callable(getattr(mod, "run_debug", None)):
        app.notify("Debug pods are not available yet in this build.", severity="warning")
        return
    namespace = app.namespace or session.info.namespace or "default"
    body = Group(Text(f"gputui will create this pod on node {node}, read its log, then delete it:", style="bold"),
                 Text(""), debug_pod_preview(node, namespace))

    def confirmed(yes: bool | None) -> None:
        if yes:
            from gputui.tui.screens.debug import DebugScreen

            app.push_screen(DebugScreen(node, app.namespace, session.info.namespace))

    app.push_screen(ConfirmScreen(f"Create a debug pod on {node}?", body, "Create", require=node), confirmed)


def export_bundle(app: GputuiApp) -> None:
    """`e`: write a redacted bundle of what is on screen (snapshot + report), off the UI thread.

    Full objects and logs are read from the API when live; from a bundle opened offline the
    snapshot's own records are written again. Nothing is created in the cluster (no debug pods).
    """
    mod = optional_module("gputui.bundle.write")
    if mod is None or not callable(getattr(mod, "write_bundle", None)):
        app.notify("Bundle export is not available yet in this build.", severity="warning")
        return
    snap, report = app.detail_snapshot, app.report  # the report with the snapshot it was made from
    if snap is None:
        app.notify("Nothing to export yet: still loading.", severity="warning")
        return
    from gputui import clock

    path = mod.default_path(clock.now())
    options = mod.BundleOptions(read_only=True, namespace=app.namespace)
    api = app.session.api if app.session is not None else None

    def work() -> None:
        try:
            result = mod.write_bundle(path, snapshot=snap, api=api, report=report, options=options)
        except mod.BundleWriteError as exc:
            app.call_from_thread(app.notify, f"Bundle not written: {exc}", severity="error", timeout=10)
            return
        except Exception as exc:  # a failed export must never take the TUI down
            app.call_from_thread(app.notify, f"Bundle export failed: {type(exc).__name__}: {exc}"[:300],
                                 severity="error", timeout=10)
            return
        masked = sum(result.redactions.values())
        app.call_from_thread(app.notify, f"Wrote {result.path} ({result.size // 1024} KiB, {masked} values redacted)",
                             title="Bundle exported", timeout=10)

    app.notify(f"Exporting a bundle to {path}…", timeout=3)
    app.run_worker(work, thread=True, group="bundle", exit_on_error=False, name="export bundle")
