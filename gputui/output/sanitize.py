"""Make text that came from a cluster, a bundle or a pasted file safe to show on a terminal.

Any workload can write an event message, a condition message or a container termination message,
and a bundle or a paste can hold anything. Printed raw, an ESC sequence in such text retitles the
terminal, clears it, or writes the clipboard (OSC 52). `visible` is the one place that text passes
through on its way to a terminal, SUMMARY.md or any other human-facing output: control characters,
escape sequences and bidirectional overrides are *shown* (``\\x1b``, ``\\u202e``), never
interpreted, and long strings are cut with a marker. JSON output stays exact (it escapes by itself).
"""

from __future__ import annotations

import re
from typing import Any

from rich.markup import escape as escape_markup
from rich.text import Text

__all__ = ["DEFAULT_LIMIT", "escape_markup", "one_line", "safe_text", "visible"]

DEFAULT_LIMIT = 2000
"""Longest piece of foreign text shown in one place before it is cut (a 100 KB message is noise)."""

# C0 controls (but not TAB/LF, decided per call), DEL, C1 controls (U+0080-U+009F: 0x9b is a one-byte
# CSI on some terminals), the bidi embeddings/overrides/isolates ("Trojan Source", CVE-2021-42574),
# line/paragraph separators (a line break to some terminals), and U+FEFF.
_ALWAYS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff"
_UNSAFE_KEEP_NL = re.compile(f"[{_ALWAYS}]")
_UNSAFE_ONE_LINE = re.compile(f"[{_ALWAYS}\t\n]")


_NAMED = {"\n": "\\n", "\t": "\\t"}


def _show(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def _marker(cut: int) -> str:
    return f"… [{cut} more characters]"


def visible(value: Any, *, limit: int | None = DEFAULT_LIMIT, newlines: bool = False) -> str:
    """`value` as text a terminal shows but never interprets.

    Args:
        value: anything; None becomes "", other non-strings go through `str`.
        limit: cut after this many characters (before escaping, so a cut never splits an escape)
            with a marker saying how much was left out; None keeps everything.
        newlines: keep LF and TAB (multi-line logs, nvidia-smi output); otherwise they are shown as
            ``\\n`` / ``\\t`` so one value stays one line. CR is always shown: it would let a value
            overwrite what was printed before it on the same line.
    """
    text = "" if value is None else value if isinstance(value, str) else str(value)
    cut = 0
    if limit is not None and len(text) - limit > len(_marker(len(text) - limit)):
        # Cut only when the marker is shorter than what it hides ("node-typ… [3 more characters]"
        # hid three characters behind twenty-one).
        cut = len(text) - limit
        text = text[:limit]
    text = (_UNSAFE_KEEP_NL if newlines else _UNSAFE_ONE_LINE).sub(_show, text)
    if cut:
        text += _marker(cut)
    return text


def one_line(value: Any, limit: int = 200) -> str:
    """A short single-line form for error lines that name something foreign (a bundle member)."""
    return visible(value, limit=limit, newlines=False)


def safe_text(value: Any, style: str = "", *, limit: int | None = DEFAULT_LIMIT, newlines: bool = False) -> Text:
    """A Rich `Text` of `visible(value)`: never parsed as markup, never interpreted by the terminal."""
    return Text(visible(value, limit=limit, newlines=newlines), style=style)
