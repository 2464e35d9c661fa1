"""`python -m gputui.dev.new_check_drill`: adding a check touches exactly its file, its test module and
README's generated checks table (issue #23).

In a temporary copy of the checkout (its tracked files and the new ones git does not ignore, as they
are on disk), made its own git repository, the drill adds a check that reads pods and nodes
(`diagnostics/checks/`) and its test module (`tests/diagnostics/checks/`), regenerates README's table
with `python -m gputui.dev.docs`, runs the tests that would notice a new check (registry, README
table, engine, the golden JSON report, the SVG snapshots and README screenshots, which run the
pinned check set of gputui/dev/pinned_checks.py, and every demo scenario's expected root cause)
plus the new test, and asks git what changed: exactly those three paths, or the drill fails. The
checkout is never written to.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PINNING_TESTS: tuple[str, ...] = (
    "tests/diagnostics/test_registry.py",
    "tests/diagnostics/test_engine.py",
    "tests/test_readme.py",
    "tests/cli/test_diagnose_scenarios.py",
    "tests/tui/test_snapshots.py",
    "tests/tui/test_screenshots.py",
)
"""The tests whose expected output lists every check, or counts or documents them, and each demo
scenario's expected root cause (a new check must not push it from the top)."""

SLUG = "gpu-pod-on-cordoned-node"
MODULE = SLUG.replace("-", "_")

CHECK = '''\
"""__SLUG__: a running GPU pod on a cordoned node (written by `python -m gputui.dev.new_check_drill`)."""

from __future__ import annotations

from collections.abc import Iterator

from diagnostics.model import Evidence, Finding, Remediation, Severity
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot


@check(code="__CODE__", slug="__SLUG__", title="GPU pods do not run on cordoned nodes",
       severity=Severity.INFO, requires=("pods", "nodes"))
def __MODULE__(snap: Snapshot) -> Iterator[Finding | int]:
    """A running GPU pod is on a node marked unschedulable (`kubectl cordon`).

    Why it matters:
    A cordoned node takes no new pods, and the drain that usually follows a cordon evicts the GPU
    job running there: a training job without a recent checkpoint loses its progress.

    Fix:
    Uncordon the node if the cordon was a mistake; otherwise checkpoint the job before the drain.
    """
    cordoned = {node.name: node for node in snap.nodes if node.unschedulable}
    for pod in snap.pods:
        if pod.phase != "Running" or not pod.wants_accelerator:
            continue
        yield 1
        node = cordoned.get(pod.node_name)
        if node is None:
            continue
        yield Finding(
            subject=pod.ref,
            title=f"GPU pod {pod.namespace}/{pod.name} runs on cordoned node {node.name}",
            evidence=(Evidence.field(node.ref, "spec.unschedulable", True),
                      Evidence.field(pod.ref, "spec.nodeName", node.name)),
            remediation=Remediation("Uncordon the node, or checkpoint the job before the node is drained.",
                                    (f"kubectl uncordon {node.name}",)),
            related=(node.ref,),
        )
'''

TEST = '''\
"""__SLUG__: a running GPU pod on a cordoned node is reported; on a schedulable node it passes."""

from __future__ import annotations

from diagnostics import CheckResult, CheckStatus, ObjectRef, run
from tests.builders import snapshot

NODE = """
apiVersion: v1
kind: Node
metadata: {name: ip-10-0-1-1.ec2.internal, labels: {node.kubernetes.io/instance-type: g5.xlarge}}
spec: {unschedulable: CORDONED}
status:
  capacity: {nvidia.com/gpu: "1"}
  allocatable: {nvidia.com/gpu: "1"}
  conditions: [{type: Ready, status: "True"}]
"""

POD = """
apiVersion: v1
kind: Pod
metadata: {name: train-0, namespace: ml}
spec:
  nodeName: ip-10-0-1-1.ec2.internal
  containers:
  - name: trainer
    resources: {limits: {nvidia.com/gpu: "1"}}
status: {phase: Running}
"""


def result(cordoned: str) -> CheckResult:
    report = run(snapshot(NODE.replace("CORDONED", cordoned), POD), only=["__SLUG__"])
    return next(r for r in report.results if r.check == "__SLUG__")


def test_a_gpu_pod_on_a_cordoned_node_is_reported() -> None:
    r = result("true")
    assert r.status is CheckStatus.FAILED and r.examined == 1
    (f,) = r.findings
    assert f.subject == ObjectRef("Pod", "train-0", "ml")
    assert f.remediation is not None and f.remediation.commands == ("kubectl uncordon ip-10-0-1-1.ec2.internal",)


def test_on_a_schedulable_node_it_passes() -> None:
    r = result("false")
    assert r.status is CheckStatus.PASSED and r.examined == 1
'''


def fill(template: str, code: str) -> str:
    return template.replace("__SLUG__", SLUG).replace("__MODULE__", MODULE).replace("__CODE__", code)


def free_code() -> str:
    """The first GT4xx code no check uses (pod checks are GT4xx)."""
    from diagnostics.registry import all_checks

    used = {spec.code for spec in all_checks()}
    if any(spec.slug == SLUG for spec in all_checks()):
        raise SystemExit(f"new_check_drill: a check named {SLUG} exists already; rename the drill's")
    return next(f"GT4{n:02d}" for n in range(1, 100) if f"GT4{n:02d}" not in used)


def copy_tracked(dest: Path, rev: str | None) -> None:
    """The checkout's files as they are on disk, tracked or new but not ignored (or as of `rev`), in a
    fresh repository."""
    if rev:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    else:
        listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                check=True, capture_output=True).stdout.decode().split("\0")
        for name in filter(None, listed):
            src = ROOT / name
            if src.is_file():  # a tracked file deleted in the working tree is left out
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / name)
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "-c", "user.name=drill", "-c", "user.email=drill@localhost", "commit", "-q", "-m", "base")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def drill(work: Path, rev: str | None = None, tests: Sequence[str] = PINNING_TESTS) -> list[str]:
    """Run the drill in `work` (an empty directory); the problems found, none when it holds."""
    copy_tracked(work, rev)
    code = free_code()
    check_path = f"diagnostics/checks/{MODULE}.py"
    test_path = f"tests/diagnostics/checks/test_{MODULE}.py"
    (work / check_path).write_text(fill(CHECK, code))
    (work / test_path).write_text(fill(TEST, code))
    env = {**os.environ, "PYTHONPATH": str(work), "PYTHONDONTWRITEBYTECODE": "1"}
    problems: list[str] = []
    docs = subprocess.run([sys.executable, "-m", "gputui.dev.docs"], cwd=work, env=env, capture_output=True, text=True)
    if docs.returncode != 0 or "updated" not in docs.stdout:
        problems.append(f"python -m gputui.dev.docs did not update README: {docs.stdout}{docs.stderr}")
    elif f"| {code} | `{SLUG}` |" not in (work / "README.md").read_text():
        problems.append(f"README's table has no row for {code}")
    where = subprocess.run([sys.executable, "-c", "import gputui, diagnostics.checks as c; print(c.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True).stdout.strip()
    if not where.startswith(str(work)):
        problems.append(f"the copy imports diagnostics from {where}, not from {work}")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests, test_path],
                         cwd=work, env=env, capture_output=True, text=True)
    if run.returncode != 0:
        problems.append("tests failed with the new check:\n" + textwrap.indent(run.stdout[-6000:] + run.stderr[-2000:],
                                                                               "  "))
    changed = sorted(line[3:] for line in git(work, "status", "--porcelain", "--untracked-files=all").splitlines())
    expected = sorted(["README.md", check_path, test_path])
    if changed != expected:
        problems.append(f"git status shows {changed}, expected exactly {expected}")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gputui.dev.new_check_drill", description=__doc__.splitlines()[0])
    p.add_argument("--rev", help="copy this commit instead of the files as they are on disk")
    p.add_argument("--keep", action="store_true", help="keep the temporary copy and print where it is")
    p.add_argument("tests", nargs="*", default=list(PINNING_TESTS),
                   help="test paths to run in the copy besides the new check's (default: the pinning tests)")
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="gputui-new-check-"))
    try:
        problems = drill(work, args.rev, args.tests)
    finally:
        if args.keep:
            print(f"copy kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    for problem in problems:
        print(f"new_check_drill: {problem}", file=sys.stderr)
    if not problems:
        print("new_check_drill: ok: the new check touched only its file, its test module and README's table")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
