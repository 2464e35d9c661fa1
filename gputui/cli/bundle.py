"""`gputui bundle [TARGET] -o FILE.tar.gz`: a redacted diagnostic bundle for a ticket."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from gputui.errors import UsageError
from gputui.errors import ExitCode

TERMINATED = 143

_EPILOG = """\
what goes in (full objects, as kubectl get -o yaml shows them, managedFields dropped):
  objects         every node, NodeClaim, NodePool, EC2NodeClass, DaemonSet, PDB, RuntimeClass; the
                  GPU-related pods (requesting GPUs, on a GPU node or nominated to one, GPU DaemonSet
                  pods); events about them; the owners (ReplicaSet -> Deployment, Job, StatefulSet) of
                  the target pod and of pending GPU pods. Never Secrets. The same with or without
                  TARGET, so `diagnose --bundle` replays what a live cluster-wide diagnose finds.
  TARGET          focuses report.json and SUMMARY.md on the chain pod -> NodeClaim -> node ->
                  NodePool -> EC2NodeClass, and the logs / nvidia-smi on its nodes
  always          report.json (the diagnosis), SUMMARY.md (paste it into the ticket), manifest.json
                  (what was collected, denied by RBAC, redacted, capped; sha256 of every file),
                  Karpenter log lines about the affected objects, device plugin / GPU Operator logs
                  on the affected nodes (and the previous run of a crashed container), the
                  Prometheus/AWS evidence the checks used

redaction (on unless --no-redact): Secrets are never read; env values are masked except GPU/runtime
settings (NVIDIA_*, CUDA_*, NCCL_*, ...); the value after a credential flag (--token X), credential
annotations and kubectl's last-applied-configuration are masked; AWS keys, bearer tokens, JWTs,
user:password@ in URLs, key=value credentials and private keys are masked in every string and log
line; the API server URL is replaced by its sha256. Regexes are best effort: review before sharing.

reopen: gputui diagnose --bundle FILE [TARGET]   |   gputui --bundle FILE (TUI, read-only)
exit codes: 0 written, 2 usage (file exists: --force), 5 cluster unreachable, 130/143 interrupted
(nothing is left behind when interrupted: the file is written to a temp name and renamed at the end)
"""


def register(subparsers: Any, global_options: Callable[[argparse.ArgumentParser, bool], None]) -> None:
    p = subparsers.add_parser(
        "bundle", help="write a redacted diagnostic bundle (.tar.gz) for a ticket",
        description="Collect the objects, events, logs and diagnosis for TARGET (or the whole cluster) into a "
                    "redacted .tar.gz that reopens offline.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    global_options(p, True)
    p.add_argument("target", nargs="?", help="pod/NAME, pod/NS/NAME, node/NAME, nodeclaim/NAME, nodepool/NAME, "
                                             "ec2nodeclass/NAME (default: the whole cluster)")
    p.add_argument("-o", "--output", metavar="FILE.tar.gz",
                   help="where to write (default: gputui-bundle-<time>.tar.gz here)")
    p.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    p.add_argument("--no-redact", action="store_true",
                   help="keep every value as read (for use inside your organisation only)")
    p.add_argument("--redact-pattern", action="append", default=[], metavar="REGEX",
                   help="also mask matches of REGEX (a named group `mask` masks just that part); repeatable; "
                        "object names are left as they are (the bundle must reopen): use --redact-names for nodes")
    p.add_argument("--redact-names", action="store_true",
                   help="replace node names, their hostnames and addresses by redacted-node-NNN everywhere in "
                        "the bundle (relations still resolve); the mapping goes to FILE.names.json beside it")
    p.add_argument("--since", default="2h", metavar="DURATION", help="log lines newer than this (default 2h)")
    p.add_argument("--max-log-lines", type=int, default=1000, metavar="N",
                   help="newest lines kept per log (default 1000)")
    p.add_argument("--max-log-size", default="1Mi", metavar="SIZE", help="per log, e.g. 512Ki (default 1Mi)")
    p.add_argument("--max-size", default="64Mi", metavar="SIZE",
                   help="total content; logs are cut first (default 64Mi)")
    p.add_argument("--with-nvidia-smi", action="store_true",
                   help="also run nvidia-smi in a short-lived debug pod on the affected GPU nodes (not with "
                        "--read-only)")
    p.add_argument("--nvidia-smi-nodes", type=int, default=4, metavar="N",
                   help="at most this many nodes for --with-nvidia-smi, nodes with findings first (default 4)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")


def _size(text: str, flag: str) -> int:
    from kubernetes.utils import parse_quantity

    try:
        value = int(parse_quantity(text))
    except (ValueError, TypeError, ArithmeticError):
        raise UsageError(f"{flag} {text!r}: use a size such as 512Ki, 1Mi or 64Mi") from None
    if value <= 0:
        raise UsageError(f"{flag} must be positive")
    return value


def _duration(text: str) -> Any:
    from datetime import timedelta

    from diagnostics.timeutil import parse_go_duration

    seconds = parse_go_duration(text)
    if seconds is None or seconds <= 0:
        raise UsageError(f"--since {text!r}: use a duration such as 30m, 2h or 1h30m")
    return timedelta(seconds=seconds)


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} MiB"


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gputui import clock
    from gputui.bundle.write import BundleWriteError, check_path, default_path, export_bundle
    from gputui.targets import TargetError, in_namespace, parse_target

    try:
        target = parse_target(args.target, getattr(args, "namespace", None))
    except TargetError as exc:
        raise UsageError(str(exc)) from None
    if args.max_log_lines <= 0:
        raise UsageError("--max-log-lines must be positive")
    if args.nvidia_smi_nodes <= 0:
        raise UsageError("--nvidia-smi-nodes must be positive")
    path = Path(args.output) if args.output else default_path(clock.now())
    options: dict[str, Any] = dict(
        redact=not args.no_redact, redact_patterns=tuple(args.redact_pattern), redact_names=args.redact_names,
        since=_duration(args.since),
        max_log_lines=args.max_log_lines, max_log_bytes=_size(args.max_log_size, "--max-log-size"),
        max_total_bytes=_size(args.max_size, "--max-size"), with_nvidia_smi=args.with_nvidia_smi,
        nvidia_smi_max_nodes=args.nvidia_smi_nodes, namespace=getattr(args, "namespace", None),
        read_only=bool(getattr(args, "read_only", False)), force=args.force, now=clock.now,
        on_status=None if args.quiet else _status)
    try:
        # Usage problems first, before connecting: a bad pattern or an existing file costs nothing.
        from gputui.bundle.write import BundleOptions, validate_options

        validate_options(BundleOptions(**options))
        check_path(path, args.force)
    except BundleWriteError as exc:
        raise UsageError(str(exc)) from None

    from gputui.collect.one_shot import TargetNotFound
    from gputui.cli.connect import connect
    from gputui.cli.config import aws_config, prometheus_settings
    from gputui.debugpod.signals import Terminated, sigterm_as_interrupt
    from gputui.kube.api import Unreachable

    api, info = connect(args)
    target = in_namespace(target, args.target, getattr(args, "namespace", None), info.namespace)
    options.update(prometheus=prometheus_settings(args), aws=aws_config(args))
    try:
        with sigterm_as_interrupt():
            result = export_bundle(api, info, target.ref, path, **options)
    except BundleWriteError as exc:
        raise UsageError(str(exc)) from None
    except TargetNotFound as exc:
        raise UsageError(str(exc)) from None
    except Unreachable as exc:
        print(f"gputui: error: cluster unreachable: {exc}", file=sys.stderr)
        return ExitCode.UNREACHABLE
    except Terminated:
        print("gputui: terminated (no bundle written)", file=sys.stderr)
        return TERMINATED
    _print_result(result)
    return ExitCode.OK


def _status(message: str) -> None:
    print(f"gputui: {message}", file=sys.stderr)


def _print_result(result: Any) -> None:
    m = result.manifest
    findings = result.report.findings
    print(f"wrote {result.path} ({_human(result.size)}, {len(result.files)} files)")
    if findings:
        from gputui.output.sanitize import visible

        top = ", ".join(f"{f.code} {visible(f.subject, limit=200)}" for f in findings[:3]) + (
            " ..." if len(findings) > 3 else "")
        print(f"  findings: {len(findings)}, worst {result.report.worst.label}: {top}")
    else:
        print("  findings: none")
    red = m["redaction"]
    if red["enabled"]:
        rules = red["rules"]
        detail = ", ".join(f"{k} {v}" for k, v in rules.items())
        print(f"  redacted: {sum(rules.values())} value(s)" + (f" ({detail})" if detail else ""))
    else:
        print("  redaction: OFF (--no-redact): review before sharing")
    if m["denied"]:
        print("  denied by RBAC: " + ", ".join(sorted({f"{d['verb']} {d['resource']}" for d in m["denied"]})))
    if m["absent"]:
        print("  not installed: " + ", ".join(sorted({d["resource"] for d in m["absent"]})))
    hit = m["caps"]["hit"]
    if hit:
        print(f"  size caps hit: {len(hit)} (see manifest.json)")
    if result.names_file is not None:
        print(f"  node names: pseudonyms; the mapping is in {result.names_file} (keep it, do not attach it)")
    print(f"  reopen: gputui diagnose --bundle {result.path}")
