"""Text any workload can write reaches every output shown, never interpreted (issue #24, item 1).

A crafted event retitled the terminal, cleared it and wrote the clipboard (OSC 52) through
`diagnose`, `diagnose --bundle`, SUMMARY.md, `debug --parse` and the TUI's evidence view; bundle
member names in error lines were raw and unbounded.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from rich.console import Console

from diagnostics.model import Evidence, EvidenceKind, ObjectRef
from gputui.output.text import evidence_line
from tests.bundle.helpers import file_entry, make_tar_gz, members, run, served
from tests.debugpod.conftest import fixture_text

# Retitle the terminal, clear the screen, write the clipboard, a one-byte CSI, a bidi override, a CR
# that would overwrite the line, and Rich markup that must stay literal.
PAYLOAD = "\x1b]0;pwned\x07\x1b[2J\x1b]52;c;Y3VybCBldmlsfHNo\x07\x9b31m\u202eevil\r[bold red]x[/]"
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\r")


def assert_shown_not_raw(text: str) -> None:
    for ch in RAW:
        assert ch not in text, f"raw {ch!r} in output"
    assert "\\x1b]0;pwned\\x07" in text


@pytest.fixture(scope="module")
def hostile_bundle(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A bundle of the spot-shortage scenario whose ICE event message carries the payload, and the
    text `diagnose` printed live against that cluster."""
    from _pytest.monkeypatch import MonkeyPatch

    from gputui.cli.program import main

    tmp = tmp_path_factory.mktemp("hostile")
    mp = MonkeyPatch()
    try:
        with served("spot-shortage", tmp, mp) as (sim, kc):
            ice = [e for e in sim.objects("Event") if e.get("reason") == "InsufficientCapacityError"]
            assert ice
            for ev in ice:  # Karpenter's launch-failure events, as a workload-controlled text would read
                md = ev["metadata"]
                sim.patch("Event", md["name"], {"message": ev["message"] + " " + PAYLOAD}, namespace=md["namespace"])
            out = io.StringIO()
            mp.setattr("sys.stdout", out)
            code = main(["diagnose", "--kubeconfig", str(kc)])
            assert code == 3
            mp.undo()
            mp.setenv("GPUTUI_NOW", "2026-08-21T10:00:00+00:00")
            path = tmp / "b.tar.gz"
            assert main(["bundle", "--kubeconfig", str(kc), "-o", str(path)]) in (0, 3, 4)
        return path, out.getvalue()
    finally:
        mp.undo()


def test_diagnose_shows_the_event_escapes(hostile_bundle: tuple[Path, str]) -> None:
    _, out = hostile_bundle
    assert "spot-capacity-shortage" in out
    assert_shown_not_raw(out)


def test_summary_md_shows_the_event_escapes(hostile_bundle: tuple[Path, str]) -> None:
    path, _ = hostile_bundle
    summary = members(path)["SUMMARY.md"].decode()
    assert "spot-capacity-shortage" in summary
    assert_shown_not_raw(summary)


def test_the_bundles_json_stays_exact(hostile_bundle: tuple[Path, str]) -> None:
    """JSON is data, not display: its own escaping (`\\u001b`) keeps the value exact."""
    path, _ = hostile_bundle
    events = json.loads(members(path)["resources/events.json"])["items"]
    assert any(PAYLOAD in (e.get("message") or "") for e in events)


def test_diagnose_bundle_shows_the_event_escapes(hostile_bundle: tuple[Path, str],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = hostile_bundle
    code, out, err = run(capsys, "diagnose", "--bundle", str(path))
    assert code == 3, err
    assert "spot-capacity-shortage" in out
    assert_shown_not_raw(out)


def test_tui_evidence_view_shows_escapes() -> None:
    """The TUI's evidence panel renders evidence through `output.text.evidence_line`."""
    ev = Evidence(kind=EvidenceKind.EVENT, subject=ObjectRef("NodeClaim", "c" + PAYLOAD),
                  path="FailedLaunch" + PAYLOAD, value="msg " + PAYLOAD, note=PAYLOAD)
    buf = io.StringIO()
    Console(file=buf, force_terminal=True, color_system=None, width=500).print(evidence_line(ev))
    assert_shown_not_raw(buf.getvalue())
    assert "[bold red]x[/]" in buf.getvalue()


def test_debug_parse_shows_escapes_from_a_paste(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pasted = fixture_text("h100").replace("NVIDIA H100 80GB HBM3", "NVIDIA H100" + PAYLOAD)
    saved = tmp_path / "smi.txt"
    saved.write_text(pasted, encoding="utf-8")
    code, out, _ = run(capsys, "debug", "--parse", str(saved))
    assert code in (0, 3, 4)
    assert "NVIDIA H100" in out
    assert_shown_not_raw(out)


def test_debug_parse_failure_text_is_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "smi.txt"
    saved.write_text("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                     + PAYLOAD + "\n", encoding="utf-8")
    code, out, err = run(capsys, "debug", "--parse", str(saved))
    assert code == 3
    for ch in RAW:
        assert ch not in out + err


@pytest.mark.parametrize("name", ["evil\n\x1b[2J\x1b]0;x\x07/manifest.json", "A" * 100_000 + "\n" + "B" * 10])
def test_a_hostile_member_name_gives_one_short_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    name: str) -> None:
    path = make_tar_gz(tmp_path / "evil.tar.gz", [file_entry(name, b"{}")])
    code, out, err = run(capsys, "diagnose", "--bundle", str(path))
    assert code == 2 and not out
    assert len(err.strip().splitlines()) == 1 and len(err) < 1000, err[:300]
    assert "\x1b" not in err and "\x07" not in err


def test_a_directory_named_like_a_member_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tarfile.TarInfo("b/report.json")
    d.type = tarfile.DIRTYPE
    path = make_tar_gz(tmp_path / "dir.tar.gz", [file_entry("b/manifest.json", b"{}"), (d, None)])
    code, _, err = run(capsys, "diagnose", "--bundle", str(path))
    assert code == 2 and "'b/report.json' is a directory, not a file" in err


def test_an_error_line_quoting_the_server_shows_its_escapes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy's 500 message is the server's text: `cannot read pod/...: ... HTTP 500 ...` shows it escaped."""
    import gputui.collect.reads

    monkeypatch.setattr(gputui.collect.reads, "RETRY_WAITS", (0.01, 0.02))
    with served("spot-shortage", tmp_path, monkeypatch) as (sim, kc):
        sim.fail_requests(10_000, 500, path_contains="/pods", message="boom " + PAYLOAD)
        code, out, err = run(capsys, "diagnose", "pod/ml/finetune-llama-70b-0-pvdg2", "--kubeconfig", str(kc))
    assert code == 5 and len(err.strip().splitlines()) == 1
    for ch in RAW:
        assert ch not in err
