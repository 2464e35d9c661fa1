"""`python -m gputui.dev.reliability`: the seeded soak and the reliability matrices, as a report."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from gputui.dev.reliability import PARTS


def run_parts(parts: Sequence[str], *, faults: int, seed: int, examples: int, tui: bool,
              progress: Any = None) -> dict[str, Any]:
    """Run the chosen parts; returns their JSON (each part's own schema, see the modules)."""
    def say(text: str) -> None:
        if progress is not None:
            progress(text)

    data: dict[str, Any] = {}
    if "soak" in parts:
        from gputui.dev.reliability.soak import Soak, SoakConfig

        say(f"soak: {faults} faults, seed {seed} ...")
        data["soak"] = Soak(SoakConfig(faults=faults, seed=seed, tui=tui)).run().to_json()
    if "permissions" in parts:
        from gputui.dev.reliability.permissions import permission_matrix

        say("permissions matrix ...")
        data["permissions"] = [c.to_json() for c in permission_matrix()]
    if "rbac" in parts:
        from gputui.dev.reliability.rbac_check import check_manifests

        say("RBAC manifests ...")
        data["rbac"] = check_manifests().to_json()
    if "optional" in parts:
        from gputui.dev.reliability.optional_sources import optional_source_matrix

        say("Prometheus and AWS down / slow / denied (the slow cases wait for the timeouts) ...")
        data["optional_sources"] = [c.to_json() for c in optional_source_matrix()]
    if "bad-input" in parts:
        from gputui.dev.reliability.bad_input import diagnose_malformed, property_run

        say(f"bad input: malformed objects, {examples} generated and {examples} mutated clusters ...")
        props = []
        try:
            props = [property_run(s, examples, seed).to_json() for s in ("generated", "mutated-scenarios")]
        except ImportError as exc:  # hypothesis is a test dependency
            say(f"  property runs skipped: {exc}")
        data["bad_input"] = {"diagnose": [r.to_json() for r in diagnose_malformed()], "properties": props}
    if "cli" in parts:
        from gputui.dev.reliability.cli_matrix import TERMINATED, exit_code_table, run_cli_matrix

        say("CLI error matrix ...")
        results = run_cli_matrix()
        extra = {130: ["Ctrl-C (`debug`: after deleting its pod)"], TERMINATED: ["SIGTERM during `debug`"]}
        data["cli"] = {"results": [r.to_json() for r in results], "exit_code_table": exit_code_table(results, extra)}
    if "debug" in parts:
        from gputui.dev.reliability.debug_safety import debug_safety_matrix

        say("debug pod safety ...")
        data["debug"] = [c.to_json() for c in debug_safety_matrix()]
    if "hostile" in parts:
        from gputui.dev.reliability.hostile import hostile_matrix, summary

        say("hostile input: API fault classes, terminal escapes, planted secrets, output paths ...")
        trials = hostile_matrix(say)
        data["hostile"] = {"summary": summary(trials), "trials": [t.to_json() for t in trials]}
    return data


def ok(data: dict[str, Any]) -> bool:
    checks = [data["soak"]["ok"]] if "soak" in data else []
    checks += [c["ok"] for c in data.get("permissions", [])]
    checks += [data["rbac"]["ok"]] if "rbac" in data else []
    checks += [c["ok"] for c in data.get("optional_sources", [])]
    if "bad_input" in data:
        checks += [r["ok"] for r in data["bad_input"]["diagnose"]] + [p["ok"] for p in data["bad_input"]["properties"]]
    checks += [r["ok"] or bool(r["known_bug"]) for r in data.get("cli", {}).get("results", [])]
    checks += [c["ok"] for c in data.get("debug", [])]
    checks += [t["ok"] for t in data.get("hostile", {}).get("trials", [])]
    return all(checks)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gputui.dev.reliability", description=__doc__.splitlines()[0])
    p.add_argument("--faults", type=int, default=1000, help="faults the soak injects (default 1000)")
    p.add_argument("--seed", type=int, default=1,
                   help="random seed (default 1): the same seed, the same faults and writes")
    p.add_argument("--json", type=Path, metavar="OUT", help="also write every figure as JSON to OUT")
    p.add_argument("--only", action="append", choices=PARTS, metavar="PART",
                   help=f"run only these parts ({', '.join(PARTS)}); repeatable")
    p.add_argument("--examples", type=int, default=500, help="clusters per property run (default 500)")
    p.add_argument("--no-tui", action="store_true", help="skip the TUI responsiveness probe after the soak")
    args = p.parse_args(argv)
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    data = run_parts(args.only or PARTS, faults=args.faults, seed=args.seed, examples=args.examples,
                     tui=not args.no_tui, progress=lambda t: print(t, file=sys.stderr, flush=True))
    from gputui.dev.reliability.report import render

    print(render(data))
    if args.json:
        args.json.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2, default=str))
    return 0 if ok(data) else 1


if __name__ == "__main__":
    sys.exit(main())
