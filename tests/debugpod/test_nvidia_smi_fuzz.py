"""Property tests: parse() never raises and never trips its own internal guard, on any text."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gputui.debugpod.capture import capture_sections, debug_log_for, load_capture
from gputui.debugpod.health import health_flags
from gputui.debugpod.nvidia_smi import GpuReport, parse, to_json

# Real inputs to mutate: both debug pod logs and every nvidia-smi block of the MIG capture.
SEEDS = [debug_log_for("h100"), debug_log_for("h100-mig")] + [
    s.body
    for s in capture_sections(load_capture("h100-mig"))
    if s.command in ("nvidia-smi", "nvidia-smi -q", "nvidia-smi -L")
    or (s.command or "").startswith(("nvidia-smi --query-gpu=", "nvidia-smi --query-compute-apps="))
]
PIECES = st.sampled_from(
    ["|", "+---+", ", ", "[N/A]", "N/A", ":", " : ", "=== gputui:", " ===", "\n", "MiB", "GPU ", "0x", "x", "-1", "9" * 30]
)


def _check(report: GpuReport) -> None:
    assert isinstance(report, GpuReport)
    assert not [w for w in report.warnings if w.startswith("internal parser error")], report.warnings
    to_json(report)
    health_flags(report)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=400))
def test_parse_never_raises_on_arbitrary_text(text: str) -> None:
    _check(parse(text))


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        start = draw(st.integers(0, len(text)))
        end = draw(st.integers(start, min(len(text), start + 200)))
        insert = draw(st.one_of(st.text(max_size=20), PIECES))
        text = text[:start] + insert + text[end:]
    return text


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_parse_never_raises_on_mutated_real_output(text: str) -> None:
    _check(parse(text))


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(SEEDS), st.data())
def test_truncated_real_output_still_parses(text: str, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(text)))
    _check(parse(text[:cut]))
