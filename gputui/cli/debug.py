"""`gputui debug node/NAME`: nvidia-smi in a short-lived pod on the node; `--cleanup`; `--parse FILE`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from gputui.errors import UsageError
from gputui.errors import ExitCode

DEBUG_POD_FAILED = int(ExitCode.DEBUG_POD_FAILED)
TERMINATED = 143

_EPILOG = """\
how the pod reaches the GPUs:
  default         no nvidia.com/gpu request (runs on a node whose GPUs are all allocated);
                  NVIDIA_VISIBLE_DEVICES=all lets the NVIDIA runtime inject every GPU and
                  nvidia-smi; --runtime-class auto uses RuntimeClass "nvidia" when the cluster
                  has one (GPU Operator). Pod Security "baseline" admits this pod.
  --gpus N        request N GPUs through the device plugin instead (needs N free GPUs).
  --privileged    when NVML fails with "Failed to initialize NVML: Unknown Error" or "No devices
                  were found": the device cgroup keeps unprivileged pods away from /dev/nvidia*,
                  or the runtime refuses NVIDIA_VISIBLE_DEVICES from unprivileged pods. The pod
                  then runs privileged with the host's / mounted read-only at /host and uses the
                  host's nvidia-smi (or the GPU Operator driver's). Needs a namespace that allows
                  privileged pods (e.g. -n gpu-operator). It is root on the node: use when needed.
  --host-pid      share the host's PID namespace, so nvidia-smi shows host process names for
                  the PIDs holding the GPUs (it reports host PIDs).

the pod: pinned with spec.nodeName, tolerates every taint, restartPolicy Never,
activeDeadlineSeconds = --timeout + 60 (a dead-man switch), labelled
app.kubernetes.io/managed-by=gputui; deleted on every exit (also Ctrl-C and SIGTERM).
If gputui is killed hard, `gputui debug --cleanup` removes leftovers in all namespaces.

exit codes: 0 healthy, 3 GPU health error, 4 warnings only or not every health value seen (a
table alone, a GPU whose values are all [N/A]), 2 usage, 5 cluster unreachable, 6 the debug pod
did not run or could not reach the GPUs (health unknown), 130/143 interrupted.
"""


def register(subparsers: Any, global_options: Callable[[argparse.ArgumentParser, bool], None]) -> None:
    p = subparsers.add_parser(
        "debug", help="run nvidia-smi on a node in a short-lived pod and check GPU health",
        description="Run nvidia-smi on a node in a short-lived debug pod, stream its output, show a\n"
                    "per-GPU health table (ECC, row remapping, PCIe link, MIG, processes) and delete the pod.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    global_options(p, True)
    p.add_argument("target", nargs="?", metavar="node/NAME", help="the node to run nvidia-smi on")
    p.add_argument("--image", default=None,
                   help="container image with /bin/sh (default: nvidia/cuda:12.4.1-base-ubuntu22.04); "
                        "air-gapped clusters: a mirrored copy, fully tagged")
    p.add_argument("--gpus", type=int, default=0, metavar="N",
                   help="request N nvidia.com/gpu through the device plugin (default 0: runtime injection)")
    p.add_argument("--runtime-class", default="auto", metavar="NAME|auto|none",
                   help="RuntimeClass for the pod (default auto: 'nvidia' if the cluster has it)")
    p.add_argument("--privileged", action="store_true",
                   help="privileged pod with the host's / at /host, to use the host's nvidia-smi when the "
                        "device cgroup blocks NVML (see below)")
    p.add_argument("--host-pid", action="store_true", help="share the host PID namespace (host process names)")
    p.add_argument("--timeout", type=int, default=120, metavar="SECONDS",
                   help="how long to wait for nvidia-smi (default 120)")
    p.add_argument("-o", "--output", choices=("text", "json"), default="text")
    p.add_argument("-q", "--quiet", action="store_true", help="do not stream nvidia-smi's output live")
    p.add_argument("--cleanup", action="store_true",
                   help="delete leftover gputui debug pods in all namespaces, and say how many")
    p.add_argument("--parse", metavar="FILE",
                   help="parse saved nvidia-smi output (table, -q, --query-gpu CSV, debug pod log; '-' = stdin)")


def node_name(target: str) -> str:
    """`node/NAME` (or `no/`, `nodes/`), or a bare NAME."""
    kind, sep, name = target.partition("/")
    if not sep:
        return target
    if kind.lower() not in ("node", "nodes", "no") or not name or "/" in name:
        raise UsageError(f"bad target {target!r}: gputui debug takes node/NAME")
    return name


def run(args: argparse.Namespace) -> int:
    modes = [m for m, on in (("node/NAME", bool(args.target)), ("--cleanup", args.cleanup),
                             ("--parse", args.parse is not None)) if on]
    if len(modes) != 1:
        raise UsageError("give one of node/NAME, --cleanup or --parse FILE" if not modes
                         else f"{' and '.join(modes)} cannot be combined")
    if args.parse is not None:
        return _parse(args)
    if getattr(args, "read_only", False):
        what = "delete debug pods" if args.cleanup else "start a debug pod"
        raise UsageError(f"--read-only: gputui changes nothing in the cluster, so it will not {what}")
    if args.cleanup:
        return _cleanup(args)
    return _debug(args)


def _err_console() -> Any:
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def _out_console() -> Any:
    from gputui.output.console import PipeSafeConsole

    return PipeSafeConsole(width=None if sys.stdout.isatty() else 160, highlight=False, soft_wrap=False)


def _debug(args: argparse.Namespace) -> int:
    from gputui.cli.connect import connect
    from gputui.debugpod.launch import DebugUsageError
    from gputui.debugpod.pod_spec import DEFAULT_IMAGE
    from gputui.debugpod.run import run_debug
    from gputui.debugpod.signals import Terminated, sigterm_as_interrupt
    from gputui.kube.api import Unreachable
    from gputui.output.console import stdout_to_devnull
    from gputui.output.sanitize import visible

    node = node_name(args.target)
    api, info = connect(args)
    err, out = _err_console(), _out_console()
    as_json = args.output == "json"

    def status(message: str) -> None:
        err.print(f"gputui: {visible(message, newlines=True)}", style="dim", markup=False)

    def output(line: str) -> None:
        style = "bold cyan" if line.startswith("$ ") else "dim" if line.startswith("# ") else (
            "yellow" if line.startswith("(exit ") else "")
        try:
            out.print(line, style=style or None, markup=False, highlight=False, soft_wrap=True)
        except BrokenPipeError:  # `| head` left: the run goes on, so the pod is deleted and the exit code counts
            stdout_to_devnull()

    try:
        with sigterm_as_interrupt():
            result = run_debug(api, node, namespace=getattr(args, "namespace", None),
                               context_namespace=info.namespace, image=args.image or DEFAULT_IMAGE,
                               gpus=args.gpus, runtime_class=args.runtime_class, privileged=args.privileged,
                               host_pid=args.host_pid, timeout=args.timeout,
                               on_output=None if (as_json or args.quiet) else output, on_status=status)
    except DebugUsageError as exc:
        raise UsageError(str(exc)) from None
    except Unreachable as exc:
        print(f"gputui: error: cluster unreachable: {exc}", file=sys.stderr)
        return ExitCode.UNREACHABLE
    except Terminated:
        print("gputui: terminated", file=sys.stderr)
        return TERMINATED
    _print_result(result, as_json, out, blank_line=True)
    if as_json and result.failure is not None:
        from gputui.output.sanitize import visible

        print(f"gputui: {visible(result.failure.title)}", file=sys.stderr)
    return result.exit_code


def _cleanup(args: argparse.Namespace) -> int:
    from gputui.cli.connect import connect
    from gputui.debugpod.launch import cleanup
    from gputui.kube.api import Unreachable

    api, info = connect(args)
    try:
        done = cleanup(api, getattr(args, "namespace", None) or info.namespace or "default")
    except Unreachable as exc:
        print(f"gputui: error: cluster unreachable: {exc}", file=sys.stderr)
        return ExitCode.UNREACHABLE
    if not done.deleted and not done.failed:
        print(f"no gputui debug pods found ({done.scope})")
    if done.deleted:
        print(f"deleted {len(done.deleted)} gputui debug pod(s) ({done.scope}): {', '.join(done.deleted)}")
    if done.failed:
        print(f"gputui: could not delete {len(done.failed)} debug pod(s): {', '.join(done.failed)}", file=sys.stderr)
        return DEBUG_POD_FAILED
    return ExitCode.OK


def _parse(args: argparse.Namespace) -> int:
    from gputui.debugpod.result import result_from_text

    path = args.parse
    try:
        if path == "-":
            text, source = sys.stdin.read(), "stdin"
        else:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text, source = fh.read(), path
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    result = result_from_text(text, source=source)
    _print_result(result, args.output == "json", _out_console())
    return result.exit_code


def _print_result(result: Any, as_json: bool, out: Any, *, blank_line: bool = False) -> None:
    """The result as JSON or as the health table; a reader that leaves (`| head`) stops the writing,
    not the command, so its exit code is still the GPUs' health."""
    from gputui.output.console import reader_may_leave

    with reader_may_leave():
        if as_json:
            from gputui.output.json import dumps

            sys.stdout.write(dumps(result.as_json()))
            sys.stdout.flush()
            return
        if blank_line:
            out.print()
        out.print(result.render())
