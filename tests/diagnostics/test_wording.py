"""Counted nouns: the count is written as a person would, whatever its size."""

from __future__ import annotations

from diagnostics.wording import counted, noun


def test_counts_agree_with_their_nouns() -> None:
    assert counted(1, "GPU") == "1 GPU"
    assert counted(8, "GPU") == "8 GPUs"
    assert counted(0.5, "GPU") == "0.5 GPUs"
    assert counted(2, "NodePool", "NodePools") == "2 NodePools"
    assert noun(1, "info", "info") == noun(3, "info", "info") == "info"


def test_large_counts_are_written_in_full() -> None:
    # `{n:g}` keeps 6 significant digits: 1,234,567 pods read as '1.23457e+06 pods'.
    assert counted(1_234_567, "pod") == "1234567 pods"
    assert counted(2_000_000.0, "GPU") == "2000000 GPUs"
