"""Bad targets, flags, kubeconfigs and contexts: each gets one line on stderr and a documented exit code.

`CASES` is the table; `CliWorld` provides what the cases point at (a simulator that wants a token, a closed
port, broken kubeconfig files); `run_case` runs one case in-process through `gputui.cli.program.main`, exactly as
the console script does. `exit_code_table` renders what was observed as README's exit-code table.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gputui.errors import ExitCode
from gputui.dev.reliability.endpoints import closed_port_url
from gputui.sim.cluster import SimCluster

TOKEN = "gputui-reliability-token"
DEBUG_POD_FAILED = 6
TERMINATED = 143

MEANINGS: dict[int, str] = {
    ExitCode.OK: "nothing at warning or above",
    ExitCode.INTERNAL: "internal error (a bug: one line, `GPUTUI_DEBUG=1` for the traceback)",
    ExitCode.USAGE: "usage error: bad target, flag, kubeconfig, context, bundle file; an unknown target",
    ExitCode.FINDINGS_ERROR: "at least one error or critical finding",
    ExitCode.FINDINGS_WARNING: ("warnings only; or not an all-clear: a check kept from looking, or a pending "
                                "pod target nothing explains"),
    ExitCode.UNREACHABLE: "cluster unreachable",
    DEBUG_POD_FAILED: "`debug`: the debug pod could not run nvidia-smi (reason printed)",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C)",
    TERMINATED: "`debug`: terminated (SIGTERM); the debug pod is deleted first",
}


@dataclass(frozen=True)
class CliCase:
    name: str
    argv: tuple[str, ...]
    """`{kc:NAME}` is replaced by the path of kubeconfig NAME (see CliWorld), `{tmp}` by a scratch dir."""
    expect: int
    needle: str
    """Text the one stderr line must contain."""
    setup: str = ""
    """`absent:RESOURCE`, `fail:STATUS` (every request), or "" - applied to the simulator for this case."""
    env: tuple[tuple[str, str | None], ...] = ()
    known_bug: str = ""
    """Non-empty when gputui does not do this yet: what it does instead (the test expects the failure)."""


def _c(name: str, argv: str, expect: int, needle: str, **kw: Any) -> CliCase:
    return CliCase(name, tuple(argv.split()), expect, needle, **kw)


CASES: tuple[CliCase, ...] = (
    # --- kubeconfig and context -----------------------------------------------------------------
    _c("empty kubeconfig", "diagnose --kubeconfig {kc:empty}", 2, "cannot read kubeconfig"),
    _c("kubeconfig is a directory", "diagnose --kubeconfig {tmp}", 2, "cannot read kubeconfig"),
    _c("kubeconfig without current-context", "diagnose --kubeconfig {kc:no-current}", 2, "current-context"),
    _c("$KUBECONFIG names a missing file", "diagnose", 2, "no kubeconfig at",
       env=(("KUBECONFIG", "{tmp}/missing-kubeconfig"),)),
    _c("context's server is a closed port", "diagnose --kubeconfig {kc:closed}", 5, "cluster unreachable"),
    _c("closed port, diagnose node", "diagnose node/x --kubeconfig {kc:closed}", 5, "cluster unreachable"),
    _c("closed port, debug", "debug node/x --kubeconfig {kc:closed}", 5, "cluster unreachable"),
    _c("closed port, debug --cleanup", "debug --cleanup --kubeconfig {kc:closed}", 5, "cluster unreachable"),
    _c("closed port, bundle", "bundle --kubeconfig {kc:closed} -o {tmp}/b.tar.gz", 5, "cluster unreachable"),
    _c("context with a bad token (401), diagnose", "diagnose --kubeconfig {kc:bad-token}", 2, "401"),
    _c("context with a bad token (401), debug", "debug node/x --kubeconfig {kc:bad-token}", 2, "401"),
    _c("every request answers 500", "diagnose --kubeconfig {kc:sim}", 5, "HTTP 500", setup="fail:500"),
    _c("a cluster with errors (the incident scenario)", "diagnose --kubeconfig {kc:sim} -o json", 3, ""),
    # --- flags and commands ---------------------------------------------------------------------
    _c("unknown subcommand", "frobnicate", 2, "invalid choice: 'frobnicate'"),
    _c("extra argument", "diagnose node/x node/y", 2, "unrecognized arguments"),
    _c("debug -o yaml", "debug node/x -o yaml", 2, "invalid choice: 'yaml'"),
    _c("debug without a node", "debug --kubeconfig {kc:sim}", 2, "give one of node/NAME"),
    _c("debug of a pod", "debug pod/x --kubeconfig {kc:sim}", 2, "gputui debug takes node/NAME"),
    _c("debug with --read-only", "debug node/x --read-only --kubeconfig {kc:sim}", 2, "--read-only"),
    _c("bad target: no name", "diagnose node/ --kubeconfig {kc:sim}", 2, "bad target 'node/'"),
    _c("bad target: empty namespace", "diagnose pod//x --kubeconfig {kc:sim}", 2, "bad target 'pod//x'"),
    _c("unknown check in --only", "diagnose --only GT999 --kubeconfig {kc:sim}", 2, "unknown check 'GT999'"),
    _c("explain an unknown code", "explain GT999", 2, "unknown check 'GT999'"),
    _c("demo of an unknown scenario", "demo --scenario nope --headless", 2, "unknown scenario 'nope'"),
    _c("--bundle of a missing file", "diagnose --bundle {tmp}/missing.tar.gz", 2, "no such file"),
    _c("global --bundle of a missing file", "--bundle {tmp}/missing.tar.gz diagnose", 2, "no such file"),
    _c("--bundle of a file that is not a bundle", "diagnose --bundle {kc:empty}", 2, "not a gzip"),
    # --- targets that do not exist --------------------------------------------------------------
    _c("nonexistent node", "diagnose node/nope --kubeconfig {kc:sim}", 2, 'node "nope" not found'),
    _c("nonexistent nodeclaim", "diagnose nodeclaim/nope --kubeconfig {kc:sim}", 2, 'nodeclaim "nope" not found'),
    _c("nonexistent nodepool", "diagnose nodepool/nope --kubeconfig {kc:sim}", 2, 'nodepool "nope" not found'),
    _c("nonexistent ec2nodeclass", "diagnose ec2nodeclass/nope --kubeconfig {kc:sim}", 2,
       'ec2nodeclass "nope" not found'),
    _c("pod in a nonexistent namespace", "diagnose pod/x -n nope --kubeconfig {kc:sim}", 2,
       "not found in namespace 'nope'"),
    _c("debug of a nonexistent node", "debug node/nope --kubeconfig {kc:sim}", 2, 'node "nope" not found'),
    _c("bundle of a nonexistent node", "bundle node/nope --kubeconfig {kc:sim} -o {tmp}/b.tar.gz", 2,
       'node "nope" not found'),
    _c("nodeclaim target, CRD absent", "diagnose nodeclaim/x --kubeconfig {kc:sim}", 2,
       "nodeclaims.karpenter.sh v1 is not installed", setup="absent:nodeclaims.karpenter.sh"),
    _c("nodepool target, CRD absent", "diagnose nodepool/x --kubeconfig {kc:sim}", 2,
       "nodepools.karpenter.sh v1 is not installed", setup="absent:nodepools.karpenter.sh"),
    _c("ec2nodeclass target, CRD absent", "diagnose ec2nodeclass/x --kubeconfig {kc:sim}", 2,
       "ec2nodeclasses.karpenter.k8s.aws v1 is not installed", setup="absent:ec2nodeclasses.karpenter.k8s.aws"),
)


def _kubeconfig(server: str, token: str, current: bool = True) -> str:
    return ("apiVersion: v1\nkind: Config\n"
            f'clusters: [{{name: c, cluster: {{server: "{server}"}}}}]\n'
            f"users: [{{name: u, user: {{token: {token}}}}}]\n"
            "contexts: [{name: real, context: {cluster: c, user: u}}]\n"
            + ("current-context: real\n" if current else ""))


class CliWorld:
    """A simulator that requires TOKEN, plus kubeconfigs: sim, bad-token, closed, empty, no-current."""

    def __init__(self, scenario: str = "incident") -> None:
        self.sim = SimCluster(scenario, shift_to_now=True, token=TOKEN)
        self._tmp = tempfile.TemporaryDirectory(prefix="gputui-cli-")
        self.tmp = Path(self._tmp.name)
        self.kubeconfigs: dict[str, Path] = {}

    def __enter__(self) -> CliWorld:
        self.sim.start()
        closed = closed_port_url()
        for name, text in (("sim", _kubeconfig(self.sim.url, TOKEN)),
                           ("bad-token", _kubeconfig(self.sim.url, "expired-token")),
                           ("closed", _kubeconfig(closed, TOKEN)),
                           ("no-current", _kubeconfig(closed, TOKEN, current=False)),
                           ("empty", "")):
            path = self.tmp / f"kubeconfig-{name}"
            path.write_text(text)
            self.kubeconfigs[name] = path
        return self

    def __exit__(self, *exc: object) -> None:
        self.sim.stop()
        self._tmp.cleanup()

    def expand(self, text: str) -> str:
        for name, path in self.kubeconfigs.items():
            text = text.replace(f"{{kc:{name}}}", str(path))
        return text.replace("{tmp}", str(self.tmp))

    @contextlib.contextmanager
    def applied(self, setup: str) -> Iterator[None]:
        kind, _, arg = setup.partition(":")
        if kind == "absent":
            self.sim.set_absent(arg)
        elif kind == "fail":
            self.sim.fail_requests(1_000_000, int(arg))
        try:
            yield
        finally:
            if kind == "absent":
                self.sim.set_absent(arg, False)
            elif kind == "fail":
                self.sim.faults.clear()


@dataclass
class CliResult:
    case: CliCase
    exit_code: int | None
    stderr: str
    seconds: float
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {"case": self.case.name, "argv": " ".join(self.case.argv), "expect": self.case.expect,
                "exit_code": self.exit_code, "stderr": self.stderr.strip(), "ok": self.ok,
                "problems": self.problems, "known_bug": self.case.known_bug}


@contextlib.contextmanager
def _env(pairs: dict[str, str | None]) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in pairs}
    for k, v in pairs.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_case(world: CliWorld, case: CliCase) -> CliResult:
    """Run one case through `gputui.cli.program.main`; `problems` lists every way the user experience is wrong."""
    from gputui.cli.program import main

    argv = [world.expand(a) for a in case.argv]
    env = {k: (world.expand(v) if v is not None else None) for k, v in case.env}
    env.setdefault("GPUTUI_DEBUG", None)
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    code: int | None = None
    with world.applied(case.setup), _env(env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = int(main(argv))
        except SystemExit as exc:  # argparse errors leave through SystemExit, as in the console script
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException as exc:  # noqa: BLE001 - escaping main() is the worst outcome
            err.write(f"escaped main(): {type(exc).__name__}: {exc}\n")
    result = CliResult(case, code, err.getvalue(), time.monotonic() - started)
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith(("gputui: error:", "gputui: internal error:"))]
    if code != case.expect:
        result.problems.append(f"exit {code}, expected {case.expect}")
    if "Traceback" in result.stderr or "escaped main()" in result.stderr:
        result.problems.append("traceback")
    if any(not ln.startswith("gputui: ") for ln in lines):
        result.problems.append("a stderr line that is not gputui's")
    if case.expect in (ExitCode.OK, ExitCode.FINDINGS_ERROR, ExitCode.FINDINGS_WARNING):
        if errors:
            result.problems.append("an error line although the command ran")
    elif len(errors) != 1:
        # Progress lines (`gputui: collecting ...`) may come first; the error itself is exactly one line.
        result.problems.append(f"{len(errors)} error lines on stderr, expected 1")
    elif case.needle not in errors[0]:
        result.problems.append(f"the error line lacks {case.needle!r}")
    return result


def run_cli_matrix(cases: tuple[CliCase, ...] = CASES, scenario: str = "incident") -> list[CliResult]:
    with CliWorld(scenario) as world:
        return [run_case(world, c) for c in cases]


def exit_code_table(results: list[CliResult], extra: dict[int, list[str]] | None = None) -> str:
    """README's exit-code table, with the situations the matrix (and `extra`) saw for each code."""
    seen: dict[int, list[str]] = {}
    for r in results:
        if r.exit_code is not None and r.ok:
            seen.setdefault(r.exit_code, []).append(r.case.name)
    for code, names in (extra or {}).items():
        seen.setdefault(code, []).extend(names)
    rows = ["| code | meaning | e.g. |", "|---|---|---|"]
    for code in sorted(set(MEANINGS) | set(seen)):
        examples = "; ".join(dict.fromkeys(seen.get(code, [])))
        rows.append(f"| {code} | {MEANINGS.get(code, '(undocumented)')} | {examples} |")
    return "\n".join(rows)
