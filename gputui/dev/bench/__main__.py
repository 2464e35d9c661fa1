"""`python -m gputui.dev.bench --scale S|M|L [--repeat N] [--json OUT]`: run the fleet benchmark, print a table."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from gputui.dev.bench.fleet import SCALES
from gputui.dev.bench.report import markdown, render, summarize
from gputui.dev.bench.runner import Bench, Options


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gputui.dev.bench", description=__doc__.split(":", 1)[1].strip())
    p.add_argument("--scale", choices=sorted(SCALES), default="S",
                   help="S: 100 nodes/1k pods (CI), M: 1k/12k, L: 5k nodes (2k GPU)/60k pods")
    p.add_argument("--repeat", type=int, default=3,
                   help="runs (pairs) per measurement; a verdict needs at least 5, from the median of per-pair ratios")
    p.add_argument("--json", type=Path, help="write raw runs, summary and machine facts here")
    p.add_argument("--markdown", type=Path, help="write the README's verdict table for this run here")
    p.add_argument("--burst-rate", type=float, default=1000.0, help="pod changes per second in the watch burst")
    p.add_argument("--burst-seconds", type=float, default=None,
                   help="length of the watch burst (default 20 s; 5 s at S, a smoke test)")
    p.add_argument("--models-timeout", type=float, default=300.0,
                   help="cap (s) for the kubernetes client's model deserialization")
    p.add_argument("--diag-runs", type=int, default=5, help="diagnostics runs per cache process")
    p.add_argument("--no-tui", action="store_true", help="skip the TUI measurements")
    p.add_argument("--key-rounds", type=int, default=None, help="rounds of timed keys per TUI run (default 2; 1 at S)")
    p.add_argument("--no-cold-start", action="store_true",
                   help="skip the cold-start comparisons (kubectl and the client's models take minutes at L)")
    p.add_argument("--profile", action="store_true", help="cProfile one diagnostics run into the work directory")
    p.add_argument("--workdir", type=Path, help="keep kubeconfig, logs and profiles here (default: a temp dir)")
    p.add_argument("--kubectl", help="kubectl binary (default: from PATH)")
    args = p.parse_args(argv)
    burst_seconds = args.burst_seconds if args.burst_seconds is not None else (5.0 if args.scale == "S" else 20.0)
    opts = Options(scale=args.scale, repeat=max(1, args.repeat), burst_rate=args.burst_rate,
                   burst_seconds=burst_seconds, models_timeout=args.models_timeout, diag_runs=args.diag_runs,
                   tui=not args.no_tui, profile=args.profile, workdir=args.workdir, key_rounds=args.key_rounds if args.key_rounds is not None else (1 if args.scale == "S" else 2),
                   cold_start=not args.no_cold_start)
    if args.kubectl:
        opts.kubectl = args.kubectl
    if not opts.kubectl:
        print("gputui bench: kubectl not found; its comparisons are skipped", file=sys.stderr)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    res = Bench(opts, log).run()
    res["summary"] = summarize(res)
    print(render(res, res["summary"]))
    if args.markdown:
        args.markdown.write_text(markdown(res, res["summary"]) + "\n")
        log(f"wrote {args.markdown}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(res, indent=2) + "\n")
        log(f"wrote {args.json}")
    return 1 if res["summary"]["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
