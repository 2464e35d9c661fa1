"""Counted nouns for titles and notes: `1 GPU`, `8 GPUs`, never `8 GPU` or `1 GPU pod(s) holding 1 GPUs`."""

from __future__ import annotations


def noun(n: float, word: str, plural: str = "") -> str:
    """`word` agreeing with n (`GPU` for 1, `GPUs` otherwise); `plural` for irregular words."""
    return word if n == 1 else plural or word + "s"


def counted(n: float, word: str, plural: str = "") -> str:
    """`1 GPU`, `0.5 GPUs`, `3 GPU pods`; a whole count in full (`{n:g}` writes 1234567 as 1.23457e+06)."""
    whole = isinstance(n, int) or float(n).is_integer()
    return f"{int(n) if whole else format(n, 'g')} {noun(n, word, plural)}"
