"""API faults never yield a false all-clear or an internal error (issue #24, items 3 and 5).

Each fault class against the spot-shortage scenario, whose root cause (GT104, launches failing for
lack of spot capacity) is visible only in events: for the whole cluster and for a pending pod, the
exit code and what the output says could not be seen. Faults come from the simulator (real HTTP,
the official client), never from a patched client.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import gputui.collect.reads
from gputui.sim.cluster import SimCluster
from tests.bundle.helpers import members, run, served

pytestmark = pytest.mark.slow  # each API fault class on each source, end to end

POD = "pod/ml/finetune-llama-70b-0-pvdg2"
Fault = Callable[[SimCluster], None]


@pytest.fixture(scope="module")
def spot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SimCluster, Path]]:
    from _pytest.monkeypatch import MonkeyPatch

    mp = MonkeyPatch()
    with served("spot-shortage", tmp_path_factory.mktemp("faults"), mp) as (sim, kc):
        yield sim, kc
    mp.undo()


@pytest.fixture
def sim(spot: tuple[SimCluster, Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[SimCluster]:
    """The shared cluster with no fault left over; retries wait milliseconds instead of ~2 s (the
    bounded real wait has its own test below)."""
    s, _kc = spot
    monkeypatch.setenv("GPUTUI_NOW", "2026-08-21T10:00:00+00:00")
    monkeypatch.setattr(gputui.collect.reads, "RETRY_WAITS", (0.01, 0.02))
    s.faults.clear()
    yield s
    s.faults.clear()
    for r in ("events", "nodes", "pods", "nodeclaims.karpenter.sh"):
        s.allow(r)


def diagnose(capsys: pytest.CaptureFixture[str], kc: Path, *target: str) -> tuple[int, dict, str]:
    """Exit code, the JSON report, and the text a user reads (stdout and stderr of the text run)."""
    code, out, err = run(capsys, "diagnose", *target, "--kubeconfig", str(kc), "-o", "json")
    text_code, text_out, text_err = run(capsys, "diagnose", *target, "--kubeconfig", str(kc))
    assert text_code == code
    return code, json.loads(out), text_out + text_err


def _events(mode: str) -> Fault:
    return {
        "403": lambda s: s.forbid("events"),
        "500": lambda s: s.fail_requests(10_000, 500, path_contains="/events"),
        "429 forever": lambda s: s.throttle(10_000, 1, path_contains="/events"),
        "reset": lambda s: s.break_answers(10_000, "reset", path_contains="/events"),
        "truncated": lambda s: s.break_answers(10_000, "truncated", path_contains="/events"),
        "html 200": lambda s: s.break_answers(10_000, "html", path_contains="/events"),
        "malformed json": lambda s: s.break_answers(10_000, "malformed", path_contains="/events"),
    }[mode]


EVENT_FAULTS = ["403", "500", "429 forever", "reset", "truncated", "html 200", "malformed json"]


def _assert_events_not_seen(code: int, report: dict, text: str) -> None:
    assert code == 4, text[-2000:]
    events = report["sources"]["events"]
    assert events["state"] in ("forbidden", "unreachable") and events["detail"]
    gt104 = next(r for r in report["results"] if r["code"] == "GT104")
    assert gt104["status"] == "skipped" and gt104["reason"].startswith("events: ")
    assert "No problems found" not in text
    assert "could not see" in text and "cannot rule out" in text and "spot-capacity-shortage" in text
    assert "internal error" not in text and "Traceback" not in text


@pytest.mark.parametrize("mode", EVENT_FAULTS)
def test_whole_cluster_with_events_unseen_is_not_an_all_clear(sim: SimCluster, spot: tuple[SimCluster, Path],
                                                              capsys: pytest.CaptureFixture[str], mode: str) -> None:
    _events(mode)(sim)
    _assert_events_not_seen(*diagnose(capsys, spot[1]))


@pytest.mark.parametrize("mode", EVENT_FAULTS)
def test_pending_pod_with_events_unseen_is_not_an_all_clear(sim: SimCluster, spot: tuple[SimCluster, Path],
                                                            capsys: pytest.CaptureFixture[str], mode: str) -> None:
    _events(mode)(sim)
    _assert_events_not_seen(*diagnose(capsys, spot[1], POD))


@pytest.mark.parametrize("source, forbid", [("nodes", "nodes"), ("pods", "pods"),
                                            ("nodeclaims", "nodeclaims.karpenter.sh")])
@pytest.mark.parametrize("mode", ["403", "malformed json", "truncated", "html 200", "reset"])
def test_whole_cluster_with_another_source_unseen(sim: SimCluster, spot: tuple[SimCluster, Path],
                                                  capsys: pytest.CaptureFixture[str], source: str,
                                                  forbid: str, mode: str) -> None:
    """The root cause is still found; the source is marked with why it could not be read."""
    if mode == "403":
        sim.forbid(forbid)
    else:
        sim.break_answers(10_000, {"malformed json": "malformed", "html 200": "html"}.get(mode, mode),  # type: ignore[arg-type]
                          path_contains=f"/{source}")
    code, report, text = diagnose(capsys, spot[1])
    assert code == 3 and report["findings"][0]["code"] == "GT104"
    st = report["sources"][source]
    assert st["state"] == ("forbidden" if mode == "403" else "unreachable") and st["detail"]
    assert "internal error" not in text


@pytest.mark.parametrize("mode, detail", [
    ("500", "HTTP 500"), ("reset", "closed the connection without an answer"),
    ("truncated", "the answer broke off after"), ("html", "not JSON"), ("malformed", "not valid JSON")])
def test_pod_target_whose_pod_cannot_be_read_is_unreachable_not_a_verdict(
        sim: SimCluster, spot: tuple[SimCluster, Path], capsys: pytest.CaptureFixture[str], mode: str,
        detail: str) -> None:
    if mode == "500":
        sim.fail_requests(10_000, 500, path_contains="/pods")
    else:
        sim.break_answers(10_000, mode, path_contains="/pods")  # type: ignore[arg-type]
    code, out, err = run(capsys, "diagnose", POD, "--kubeconfig", str(spot[1]))
    assert code == 5 and not out
    assert err.startswith(f"gputui: error: cluster unreachable: cannot read {POD}: pods: unreachable")
    assert detail in err and len(err.strip().splitlines()) == 1


def test_pod_target_forbidden_is_a_usage_error(sim: SimCluster, spot: tuple[SimCluster, Path],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    sim.forbid("pods")
    code, _, err = run(capsys, "diagnose", POD, "--kubeconfig", str(spot[1]))
    assert code == 2 and f"cannot read {POD}: pods: forbidden" in err


@pytest.mark.parametrize("target", [(), (POD,)])
def test_one_transient_failure_on_each_first_request_is_retried(sim: SimCluster, spot: tuple[SimCluster, Path],
                                                                capsys: pytest.CaptureFixture[str],
                                                                target: tuple[str, ...]) -> None:
    for path in ("/version", "/nodes", "/pods", "/events", "/nodeclaims", "/nodepools", "/ec2nodeclasses"):
        sim.fail_requests(1, 500, path_contains=path)
    for path in ("/nodes", "/pods", "/events"):
        sim.break_answers(1, "reset", path_contains=path)
    code, report, _ = diagnose(capsys, spot[1], *target)
    assert code == 3 and report["findings"][0]["code"] == "GT104"
    assert all(st["state"] in ("ok", "not configured") for st in report["sources"].values()), report["sources"]


def test_a_pod_get_answered_with_a_pod_list_is_not_taken_for_the_pod(
        sim: SimCluster, spot: tuple[SimCluster, Path], capsys: pytest.CaptureFixture[str]) -> None:
    sim.break_answers(10_000, "list-for-get", path_contains="/pods/finetune-llama-70b-0-pvdg2")
    code, report, _ = diagnose(capsys, spot[1], POD)
    assert code == 3 and report["findings"][0]["code"] == "GT104"
    assert sim.faults.broken.get("list-for-get")


def test_403_on_everything_says_nothing_was_seen(sim: SimCluster, spot: tuple[SimCluster, Path],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    for r in ("events", "nodes", "pods", "nodeclaims.karpenter.sh", "nodepools.karpenter.sh",
              "ec2nodeclasses.karpenter.k8s.aws", "namespaces", "daemonsets.apps",
              "poddisruptionbudgets.policy", "runtimeclasses.node.k8s.io"):
        sim.forbid(r)
    try:
        code, out, err = run(capsys, "diagnose", "--kubeconfig", str(spot[1]))
    finally:
        for r in ("namespaces", "daemonsets.apps", "poddisruptionbudgets.policy", "runtimeclasses.node.k8s.io",
                  "nodepools.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws"):
            sim.allow(r)
    assert code == 4
    assert "No problems found" not in out + err and "no check could run" in out + err


def test_410_on_a_paged_lists_continue_relists(sim: SimCluster, spot: tuple[SimCluster, Path],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """More events than a page holds; the second page's `continue` is answered 410 Expired."""
    if len(sim.objects("Event")) <= 500:
        sim.bulk_load({"apiVersion": "v1", "kind": "Event", "type": "Normal", "reason": "Pulled",
                       "message": f"filler {i}", "involvedObject": {"kind": "Pod", "name": f"filler-{i}",
                                                                    "namespace": "default"},
                       "metadata": {"name": f"filler-{i:04d}", "namespace": "default"}} for i in range(600))
    sim.expire_continue(1)
    code, report, _ = diagnose(capsys, spot[1])
    assert code == 3 and report["findings"][0]["code"] == "GT104"
    assert report["sources"]["events"]["state"] == "ok"
    continued = [q for m, q in sim.requests() if m == "GET" and "/events" in q and "continue=" in q]
    assert continued, "the list was not paged: the test proves nothing"


def test_retries_are_bounded_in_time(spot: tuple[SimCluster, Path], capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The real waits: a source failing forever costs seconds, not minutes, and is then marked."""
    sim, kc = spot
    monkeypatch.setenv("GPUTUI_NOW", "2026-08-21T10:00:00+00:00")
    sim.faults.clear()
    sim.fail_requests(10_000, 503, path_contains="/events")
    try:
        t0 = time.monotonic()
        code, out, _ = run(capsys, "diagnose", "--kubeconfig", str(kc), "-o", "json")
        elapsed = time.monotonic() - t0
    finally:
        sim.faults.clear()
    assert code == 4 and json.loads(out)["sources"]["events"]["state"] == "unreachable"
    assert 1.5 <= elapsed < 8, elapsed


def test_a_bundle_taken_with_events_forbidden_reopens_honestly(sim: SimCluster, spot: tuple[SimCluster, Path],
                                                               tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    sim.forbid("events")
    path = tmp_path / "b.tar.gz"
    code, out, err = run(capsys, "bundle", "--kubeconfig", str(spot[1]), "-o", str(path))
    assert code == 0, err  # written (the bundle command's exit says whether the file was written)
    assert "No problems found" not in out + err
    assert json.loads(members(path)["manifest.json"])["sources"]["events"]["state"] == "forbidden"
    code, out, err = run(capsys, "diagnose", "--bundle", str(path))
    assert code == 4
    assert "No problems found" not in out + err and "cannot rule out" in out + err


def test_a_bundle_survives_broken_answers_while_reading_full_objects(
        sim: SimCluster, spot: tuple[SimCluster, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A reset and a truncated body on the nodes and pods reads (the one-shot lists and the full objects'
    reads) are retried: the bundle is written whole and reopens to the root cause (it used to stop at
    the first broken answer)."""
    import gputui.cli.bundle as bundle_cmd

    said = bundle_cmd._status

    def status(message: str) -> None:  # the faults start once the one-shot lists are done
        if message == "reading the full objects":
            for mode in ("reset", "truncated"):
                sim.break_answers(1, mode, path_contains="/api/v1/nodes")  # type: ignore[arg-type]
                sim.break_answers(1, mode, path_contains="/api/v1/pods")  # type: ignore[arg-type]
        said(message)

    monkeypatch.setattr(bundle_cmd, "_status", status)
    path = tmp_path / "b.tar.gz"
    code, _, err = run(capsys, "bundle", "--kubeconfig", str(spot[1]), "-o", str(path))
    assert sim.faults.broken.get("reset") and sim.faults.broken.get("truncated")
    assert code == 0, err
    manifest = json.loads(members(path)["manifest.json"])
    assert manifest["sources"]["nodes"]["state"] == "ok" and manifest["collected"]["resources"]["nodes"]
    code, _, _ = run(capsys, "diagnose", "--bundle", str(path))
    assert code == 3
