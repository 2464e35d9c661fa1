"""Command line: `gputui` (TUI), `diagnose`, `debug`, `bundle`, `demo`, `explain`.

Imports stay lazy: the one-shot commands never import Textual, so `gputui diagnose` starts fast.
Every user error is one line on stderr and a documented exit code, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from gputui import __version__
from gputui.errors import ExitCode, UsageError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not argparse's usage dump
        print(f"gputui: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(ExitCode.USAGE)


def _global_options(p: argparse.ArgumentParser, suppress: bool) -> None:
    d = argparse.SUPPRESS if suppress else None
    p.add_argument("--kubeconfig", default=d, help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
    p.add_argument("--context", default=d, help="kubeconfig context (default: current)")
    p.add_argument("-n", "--namespace", default=d, help="namespace for pod/NAME targets and debug pods")
    p.add_argument("--read-only", action="store_true", default=argparse.SUPPRESS if suppress else False,
                   help="never create anything in the cluster (no debug pods)")
    p.add_argument("--prometheus-url", default=d, metavar="URL",
                   help="Prometheus with DCGM/Karpenter metrics (default: $GPUTUI_PROMETHEUS_URL, else discover "
                        "an in-cluster Prometheus through the API server)")
    p.add_argument("--prometheus-selector", default=d, metavar="LABEL=VALUE[,...]",
                   help="this cluster's series in a Prometheus holding several, e.g. cluster=prod "
                        "(default: $GPUTUI_PROMETHEUS_SELECTOR)")
    p.add_argument("--aws-profile", default=d, help="AWS profile for EC2 evidence (default: boto3's chain)")
    p.add_argument("--aws-region", default=d, help="AWS region (default: the nodes' region, else AWS_REGION / boto3's chain)")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="gputui", description="Find why GPU workloads on Kubernetes + Karpenter are stuck.")
    p.add_argument("--version", action="version", version=f"gputui {__version__}")
    _global_options(p, suppress=False)
    p.add_argument("--bundle", help="open a diagnostic bundle offline instead of a cluster")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)

    d = sub.add_parser("diagnose", help="one-shot diagnosis of a pod, node, nodeclaim, nodepool or the cluster")
    _global_options(d, suppress=True)
    d.add_argument("target", nargs="?", help="pod/NAME, pod/NS/NAME, node/NAME, nodeclaim/NAME, nodepool/NAME")
    d.add_argument("-o", "--output", choices=("text", "json"), default="text")
    d.add_argument("--only", action="append", default=[], metavar="CHECK", help="run only these checks (slug/code)")
    d.add_argument("--ignore", action="append", default=[], metavar="CHECK", help="skip these checks")
    d.add_argument("--bundle", default=argparse.SUPPRESS, help="diagnose a bundle offline")
    d.add_argument("-v", "--verbose", action="store_true", help="list every passed check, not only their count")

    e = sub.add_parser("explain", help="print a check's documentation")
    e.add_argument("check", nargs="?", help="slug or code, e.g. gpu-not-advertised or GT201")
    e.add_argument("--list", action="store_true", help="list every check")

    m = sub.add_parser("demo", help="run gputui on an embedded simulated cluster")
    _global_options(m, suppress=True)
    m.add_argument("--scenario", default="incident", help="scenario name (see --list-scenarios)")
    m.add_argument("--list-scenarios", action="store_true")
    m.add_argument("--headless", action="store_true", help="print a summary and exit (scripts, tests)")
    m.add_argument("--serve", action="store_true", help="only run the demo cluster, until interrupted")
    m.add_argument("--kubeconfig-out", help="with --serve: where to write the demo kubeconfig")

    for register in _extra_commands():
        register(sub, _global_options)
    return p


def _extra_commands() -> list[Callable[..., None]]:
    """Commands whose many options live beside their code (debug, bundle) add their own parsers."""
    from gputui.cli.bundle import register as bundle_parser
    from gputui.cli.debug import register as debug_parser

    return [debug_parser, bundle_parser]


def main(argv: Sequence[str] | None = None) -> int:
    _tolerant_streams()
    args = build_parser().parse_args(argv)
    try:
        return int(dispatch(args))
    except UsageError as exc:
        from gputui.output.sanitize import visible  # a message may quote the cluster or a file: shown, never run

        print(f"gputui: error: {visible(str(exc), limit=1000)}", file=sys.stderr)
        return ExitCode.USAGE
    except Exception as exc:  # 401 from any command: the credentials, not gputui, are the problem
        from gputui.kube.api import Unauthorized

        if not isinstance(exc, Unauthorized):
            return _internal_error(exc)
        print(f"gputui: error: {exc.message}", file=sys.stderr)
        return ExitCode.USAGE
    except KeyboardInterrupt:
        print("gputui: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED


def _internal_error(exc: BaseException) -> int:
    """The last line of defence: one line, exit 1, the traceback only on request."""
    if isinstance(exc, BrokenPipeError):
        # `gputui ... | head`: the reader left; not an error worth a traceback.
        from gputui.output.console import stdout_to_devnull

        stdout_to_devnull()
        return ExitCode.OK
    if os.environ.get("GPUTUI_DEBUG"):
        raise exc
    from gputui.output.sanitize import visible

    print(f"gputui: internal error: {type(exc).__name__}: {visible(str(exc), limit=500)} "
          "(set GPUTUI_DEBUG=1 for a traceback)", file=sys.stderr)
    return ExitCode.INTERNAL


def dispatch(args: argparse.Namespace) -> int:
    from gputui.cli import run_command

    return run_command(args)


def _tolerant_streams() -> None:
    """A terminal whose encoding cannot show a character gputui prints ('—', '✓', '█' on a latin-1
    locale) gets a replacement, not a crash; a closed stdout (`gputui ... >&-`) becomes /dev/null."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115 - lives as long as the process
            continue
        encoding = (getattr(stream, "encoding", "") or "").lower().replace("-", "")
        if encoding != "utf8" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")


_no_teardown = False


def skip_teardown() -> None:
    """Called by a one-shot that has written everything and holds nothing to clean up beyond its
    atexit handlers: `entry` then leaves without the interpreter's teardown (freeing every module
    and object, ~0.1 s after the answer is already on screen)."""
    global _no_teardown
    _no_teardown = True


def entry() -> NoReturn:
    code = main()
    if _no_teardown:
        import atexit

        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:  # the reader left: let the normal exit deal with the stream
            raise SystemExit(code) from None
        # atexit still runs: the kubernetes client deletes the certificate and key files it decoded
        # from the kubeconfig there, and futures' worker threads are joined.
        atexit._run_exitfuncs()
        os._exit(code)
    raise SystemExit(code)


if __name__ == "__main__":
    entry()
