"""The one sanitizer for foreign text: escapes are shown, never interpreted; long text is cut."""

from __future__ import annotations

import io

from rich.console import Console

from gputui.output.sanitize import one_line, safe_text, visible

# A crafted event message: retitle the terminal, clear it, write the clipboard (OSC 52), a one-byte
# CSI (0x9b) and a bidi override that would reverse what follows it.
HOSTILE = "ok\x1b]0;pwned\x07\x1b[2J\x1b]52;c;Y3VybCBldmlsfHNo\x07\x9b31m\u202eevil\r"


def test_escape_sequences_are_shown_not_kept() -> None:
    out = visible(HOSTILE)
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out and "\u202e" not in out
    assert "\r" not in out
    assert out.startswith("ok\\x1b]0;pwned\\x07\\x1b[2J\\x1b]52;c;")
    assert "\\x9b31m\\u202eevil\\x0d" in out


def test_newlines_only_where_the_caller_allows() -> None:
    assert visible("a\nb\tc") == "a\\nb\\tc"
    assert visible("a\nb\tc", newlines=True) == "a\nb\tc"
    assert visible("a\r\nb", newlines=True) == "a\\x0d\nb"


def test_long_text_is_cut_with_a_marker() -> None:
    out = visible("x" * 100_000, limit=50)
    assert out == "x" * 50 + "… [99950 more characters]"
    # the cut happens before escaping, so an escape is never split in half
    assert visible("\x1b" * 40, limit=3) == "\\x1b" * 3 + "… [37 more characters]"
    # a marker longer than what it would hide is not worth it: the text stays whole
    assert visible("node-type-abc", limit=10) == "node-type-abc"
    assert len(one_line("evil\n" * 20_000)) < 300 and "\n" not in one_line("evil\n" * 20_000)


def test_plain_text_and_non_strings_pass_unchanged() -> None:
    assert visible("FailedScheduling: 0/3 nodes are available — ünïcode ✓") == (
        "FailedScheduling: 0/3 nodes are available — ünïcode ✓")
    assert visible(None) == "" and visible(3) == "3"


def test_rich_never_reads_markup_or_escapes_from_safe_text() -> None:
    buf = io.StringIO()
    Console(file=buf, force_terminal=True, color_system=None, width=200).print(
        safe_text("[bold red]x[/] " + HOSTILE))
    printed = buf.getvalue()
    assert "[bold red]x[/]" in printed
    assert "\x1b" not in printed and "\x07" not in printed
