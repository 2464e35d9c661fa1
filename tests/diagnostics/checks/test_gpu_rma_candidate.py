"""gpu-rma-candidate (GT709): GPUs that keep failing over a week, from a real Prometheus with 7 days of backfilled
dcgm-exporter samples (tests/prometheus/week.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from diagnostics import CheckStatus, ObjectRef, Report, Severity
from tests.prometheus.conftest import diagnose, facts, prometheus  # noqa: F401 - real Prometheus fixtures
from tests.prometheus.week import (APP, CHURN, CLUSTER, GAP, MIG, NEW_HOST, OLD_HOST, ONCE, REMAP, REPEAT, ROWS,
                                  NVLINK5, PAGES, RESET_JOB, ROWS_JOBS, SHARED_UUID)

pytestmark = pytest.mark.slow  # a real Prometheus holding a week of DCGM history


def _findings(diagnose: Callable[..., Report]) -> dict[str, object]:
    (result,) = diagnose("gpu-rma-candidate", "week", CLUSTER).results
    assert result.status is CheckStatus.FAILED
    return {f.subject.name: f for f in result.findings}


def test_xid_79_on_three_days_is_an_rma_candidate_with_its_history(diagnose: Callable[..., Report]) -> None:
    f = _findings(diagnose)[REPEAT]
    assert f.code == "GT709" and f.severity is Severity.ERROR
    assert f.title == (f"{REPEAT} GPU 2 (GPU-100220-0002) keeps failing: Xid 79 (GPU has fallen off the bus) "
                       "3 times over 6 days in the last 7 days - RMA candidate")
    (history,) = [e for e in f.evidence if isinstance(e.value, dict) and e.value.get("xid") == 79]
    assert history.value["occurrences"] == 3
    assert history.path.startswith("count_over_time((max without(GPU_I_PROFILE, GPU_I_ID) (count_values without() (\"xid\", ")
    assert "DCGM_FI_DEV_XID_ERRORS" in history.path
    assert history.note.startswith(f"Xid 79 3 time(s) on {REPEAT} GPU 2 in the last 7 days: first ")
    # A Karpenter node in AWS: replace it (Karpenter) and tell the provider, not "RMA with the vendor".
    assert "kubectl delete nodeclaim gpu-ondemand-r2d2x" in f.remediation.commands
    assert f"kubectl drain {REPEAT} --ignore-daemonsets --delete-emptydir-data" in f.remediation.commands
    assert "cloud provider" in f.remediation.text
    # The UUID already starts with GPU-: the fix names the GPU as the title does, not "GPU GPU-100220-0002".
    assert "report the instance, GPU 2 (GPU-100220-0002) and this history" in f.remediation.text
    assert "GPU GPU-" not in f.remediation.text


def test_same_gpu_under_a_replaced_node_is_one_gpu(diagnose: Callable[..., Report]) -> None:
    found = _findings(diagnose)
    f = found[NEW_HOST]  # where the GPU is now
    assert OLD_HOST not in found
    assert f"({SHARED_UUID}) keeps failing: Xid 48 (double-bit (uncorrectable) ECC error) 2 times over 4 days on " \
           "2 nodes" in f.title
    nodes = {e.value["gpu"] and e.note.split(" on ")[1].split(" GPU")[0] for e in f.evidence
             if isinstance(e.value, dict) and e.value.get("xid") == 48}
    assert nodes == {OLD_HOST, NEW_HOST}


def test_memory_it_cannot_repair(diagnose: Callable[..., Report]) -> None:
    found = _findings(diagnose)
    assert "row remapping failed" in found[REMAP].title
    assert "uncorrectable remapped rows grew 2 times" in found[ROWS].title
    # The same growth when each step came under a new job's pod label (dcgm-exporter's pod mapper).
    assert "uncorrectable remapped rows grew 2 times" in found[ROWS_JOBS].title
    # Before Ampere, memory is repaired by retiring pages: DCGM_FI_DEV_RETIRED_DBE grew on two days.
    assert "pages retired for double-bit ECC errors grew 2 times" in found[PAGES].title
    (pages,) = [e for e in found[PAGES].evidence if e.path.startswith("changes((max without(")
                and "DCGM_FI_DEV_RETIRED_DBE" in e.path]
    assert pages.note == "retired pages (double-bit ECC) changed more than once"
    # Not in the cluster and no cloud providerID: the vendor RMA route.
    assert "open an RMA with the vendor" in found[REMAP].remediation.text
    assert "GPU GPU-" not in found[REMAP].remediation.text


def test_one_failure_or_application_xids_are_not_candidates(diagnose: Callable[..., Report]) -> None:
    found = _findings(diagnose)
    assert ONCE not in found  # one Xid 79: a failure, not yet a pattern (GT704 reports it when recent)
    assert APP not in found   # Xid 13 every day is the job's bug
    assert set(found) == {REPEAT, NEW_HOST, REMAP, ROWS, ROWS_JOBS, MIG, NVLINK5, PAGES, RESET_JOB}


def test_a_held_xid_in_a_new_series_is_not_a_new_occurrence(diagnose: Callable[..., Report]) -> None:
    found = _findings(diagnose)
    # dcgm-exporter relabels every metric of a GPU with the pod holding it: five jobs on a GPU whose gauge
    # still reads the one Xid 94 of five days ago are five new series, not five failures.
    assert CHURN not in found
    # Nor is the same series seen again after a scrape gap (a Prometheus restart replaying its WAL).
    assert GAP not in found


def test_the_same_xid_after_a_reset_under_the_next_job_is_a_new_occurrence(diagnose: Callable[..., Report]) -> None:
    # The GPU's value before the step is its newest series (the next job's, reading 0 after the reset), not
    # the largest any series read in the hour (the previous job's 79): the Xid came back, it is counted.
    f = _findings(diagnose)[RESET_JOB]
    assert "GPU 0 (GPU-100233-0000) keeps failing: Xid 79 (GPU has fallen off the bus) 2 times over 1 day" in f.title


def test_blackwell_nvlink5_xids_count_like_xid_74(diagnose: Callable[..., Report]) -> None:
    # Xid 144-150 are Blackwell's NVLink5 errors (NVIDIA's catalog: WORKFLOW_NVLINK5_ERR, where Hopper has
    # Xid 74 / WORKFLOW_NVLINK_ERR); 140 is its uncorrectable ECC error that escaped containment.
    f = _findings(diagnose)[NVLINK5]
    assert "GPU 3 (GPU-100231-0003) keeps failing: Xid 145 (NVLink5 error" in f.title
    assert "2 times over 3 days" in f.title


def test_a_mig_gpu_is_one_gpu(diagnose: Callable[..., Report]) -> None:
    (result,) = diagnose("gpu-rma-candidate", "week", CLUSTER).results
    # Each GPU instance carries the Xid in its own series: one finding for the physical GPU, counted once.
    (f,) = [f for f in result.findings if f.subject.name == MIG]
    assert "GPU 0 (GPU-100229-0000) keeps failing: Xid 79 (GPU has fallen off the bus) 2 times over 4 days" in f.title
    assert "MIG" not in f.title


def test_skipped_when_the_week_was_not_queried(facts: Callable[[str], object]) -> None:
    # A bundle from before this check: its Prometheus facts hold no week of history.
    import dataclasses

    from diagnostics import run
    from diagnostics.snapshot import SourceState
    from tests.builders import snapshot

    week = facts("week")
    old = dataclasses.replace(week, queries={p: q for p, q in week.queries.items() if not p.startswith("rma_")},  # type: ignore[type-var]
                              samples={p: s for p, s in week.samples.items() if not p.startswith("rma_")})  # type: ignore[attr-defined]
    (result,) = run(snapshot(CLUSTER, sources={"prometheus": SourceState.OK}, metrics=old),
                    only=["gpu-rma-candidate"]).results
    assert result.status is CheckStatus.SKIPPED
    assert "week of Xid history was not queried" in result.reason


@pytest.mark.parametrize("purpose", ["rma_xid_events", "rma_remap_failure", "rma_remapped_rows"])
def test_skipped_when_a_week_query_failed(facts: Callable[[str], object], purpose: str) -> None:
    # A 7-day query that timed out read nothing: no all-clear about what it would have found.
    import dataclasses

    from diagnostics import run
    from diagnostics.snapshot import SourceState
    from tests.builders import snapshot

    week = facts("week")
    # A quiet week (no GPU failed) whose one query failed: skipped with the reason, never "passed".
    quiet = {p: () if p.startswith("rma_") else s for p, s in week.samples.items()}  # type: ignore[attr-defined]
    broken = dataclasses.replace(week, samples=quiet, errors={purpose: "query timed out"})  # type: ignore[type-var]
    (result,) = run(snapshot(CLUSTER, sources={"prometheus": SourceState.OK}, metrics=broken),
                    only=["gpu-rma-candidate"]).results
    assert result.status is CheckStatus.SKIPPED
    assert f"query for {purpose} failed: query timed out" in result.reason
    if purpose != "rma_xid_events":
        # The Xid history that was read still names its GPUs.
        partial = dataclasses.replace(week, samples={p: s for p, s in week.samples.items() if p != purpose},  # type: ignore[type-var, attr-defined]
                                      errors={purpose: "query timed out"})
        (result,) = run(snapshot(CLUSTER, sources={"prometheus": SourceState.OK}, metrics=partial),
                        only=["gpu-rma-candidate"]).results
        assert result.status is CheckStatus.FAILED
        assert REPEAT in {f.subject.name for f in result.findings}


def test_subject_is_the_node(diagnose: Callable[..., Report]) -> None:
    assert _findings(diagnose)[REPEAT].subject == ObjectRef("Node", REPEAT)


def test_explain_has_the_check(capsys) -> None:  # type: ignore[no-untyped-def]
    from gputui.cli.program import main

    assert main(["explain", "gpu-rma-candidate"]) == 0
    out = capsys.readouterr().out
    assert "GT709" in out and "Why it matters" in out and "RMA" in out


def test_node_page_history_line(facts: Callable[[str], object]) -> None:
    # The TUI's node page shows one line per GPU with Xids in the week (gputui.tui.objects.key_fields).
    from diagnostics.snapshot import SourceState
    from gputui.tui.objects import key_fields
    from tests.builders import snapshot

    snap = snapshot(CLUSTER, sources={"prometheus": SourceState.OK}, metrics=facts("week"))
    node = ObjectRef("Node", REPEAT)
    fields = dict(key_fields(snap, node, snap.index.node[REPEAT]))
    line = fields["GPU 2 Xid history (7 days)"]
    assert line.startswith("Xid 79 x3: ") and line.endswith(" - RMA candidate (GT709)")
    assert " .. " in line  # first .. last occurrence
    shared = dict(key_fields(snap, ObjectRef("Node", NEW_HOST), snap.index.node[NEW_HOST]))
    assert shared["GPU 5 Xid history (7 days)"].endswith("on 2 nodes - RMA candidate (GT709)")
