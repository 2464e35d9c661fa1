"""Bad input never crashes gputui: malformed objects served and diagnosed, property runs over the
snapshot -> diagnostics path, and nvidia-smi text that is not clean UTF-8."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diagnostics.model import CheckStatus
from gputui.cli.program import main
from gputui.debugpod.capture import debug_log_for
from gputui.debugpod.nvidia_smi import parse, to_json
from gputui.debugpod.result import result_from_text
from gputui.dev.reliability import bad_input, strategies

pytestmark = pytest.mark.slow  # the reliability suite: faults injected end to end (README "Reliability")

PROPERTY = settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def malformed_runs() -> list[bad_input.DiagnoseRun]:
    return bad_input.diagnose_malformed()


def test_malformed_objects_are_diagnosed_without_errors(malformed_runs: list[bad_input.DiagnoseRun]) -> None:
    assert len(malformed_runs) == 2 * len(bad_input.TARGETS)
    for run in malformed_runs:
        assert run.ok, run.to_json()
    whole = next(r for r in malformed_runs if r.target == "" and r.output == "json")
    assert whole.exit_code == 3  # the odd objects are still judged: the broken EC2NodeClass is an error


def test_long_messages_are_clipped_in_findings(malformed_runs: list[bad_input.DiagnoseRun]) -> None:
    assert [t for r in malformed_runs for t in r.long_texts] == []


def _errored(objs: list[dict[str, Any]]) -> list[str]:
    report = bad_input.diagnose_objects(objs)
    return [f"{r.check}: {r.reason}" for r in report.results if r.status is CheckStatus.ERRORED]


@PROPERTY
@given(strategies.objects)
def test_no_check_errors_on_generated_objects(objs: list[dict[str, Any]]) -> None:
    assert _errored(objs) == []


@PROPERTY
@given(strategies.mutated_scenario())
def test_no_check_errors_on_demo_scenarios_with_odd_fields(objs: list[dict[str, Any]]) -> None:
    assert _errored(objs) == []


# Objects a real apiserver never serves (its schemas reject them) but a hand-edited bundle may hold:
# ingest raises before any check runs and `gputui diagnose --bundle` dies with "internal error".
IMPOSSIBLE = {
    "timestamp-not-a-string": {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "p", "namespace": "default", "creationTimestamp": []}},
    "int-field-as-text": {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d", "namespace": "x"},
                          "status": {"desiredNumberScheduled": "three"}},
    "namespace-not-a-string": {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "x"},
                               "involvedObject": {"kind": "Pod", "name": "p", "namespace": ["x"]}},
}


@pytest.mark.parametrize("name", sorted(IMPOSSIBLE))
def test_type_confused_objects_do_not_crash_ingest(name: str) -> None:
    assert _errored([IMPOSSIBLE[name]]) == []


# --- nvidia-smi text that is not clean (tests/debugpod has the fuzzing of the parser itself) -------------


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 4000))
def test_non_utf8_bytes_in_a_real_log_still_parse(junk: bytes, at: int) -> None:
    raw = debug_log_for("h100").encode()
    at = min(at, len(raw))
    text = (raw[:at] + junk + raw[at:]).decode("utf-8", "replace")
    report = parse(text)
    assert not [w for w in report.warnings if w.startswith("internal parser error")]
    to_json(report)
    result_from_text(text, source="fuzz").render()


def test_crlf_log_reads_like_lf() -> None:
    text = debug_log_for("h100-mig")
    assert to_json(parse(text.replace("\n", "\r\n"))) == to_json(parse(text))


def test_debug_parse_of_a_non_utf8_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "smi.log"
    path.write_bytes(debug_log_for("h100").encode().replace(b"NVIDIA H100", b"NVIDIA H\xff\xfe100") + b"\x80\x81\n")
    code = main(["debug", "--parse", str(path)])
    out, err = capsys.readouterr()
    assert code in (0, 3, 4), err
    assert "Traceback" not in err and "H\ufffd\ufffd100" in out
