"""The `/` filter: case-insensitive substring over a row's cells, or `key=value` label terms (k9s-like).

Pure (no Textual) so the semantics are tested directly. Terms are separated by spaces or commas and
all must match: `gpu-1 karpenter.sh/nodepool=gpu` keeps rows that mention gpu-1 AND carry the label.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RowFilter:
    text: str = ""
    substrings: tuple[str, ...] = ()
    labels: tuple[tuple[str, str, bool], ...] = ()
    """(key, value, negated): `k=v`, `k==v` or `k!=v`."""

    @classmethod
    def parse(cls, text: str) -> RowFilter:
        subs: list[str] = []
        labels: list[tuple[str, str, bool]] = []
        for term in text.replace(",", " ").split():
            if "!=" in term:
                k, v = term.split("!=", 1)
                labels.append((k, v, True))
            elif "=" in term:
                k, v = term.split("=", 1)
                labels.append((k, v.lstrip("="), False))
            else:
                subs.append(term.lower())
        return cls(text.strip(), tuple(subs), tuple(labels))

    @property
    def active(self) -> bool:
        return bool(self.substrings or self.labels)

    def matches(self, cells: Iterable[object], labels: Mapping[str, str] | None = None) -> bool:
        if self.substrings:
            hay = " ".join(str(c) for c in cells).lower()
            if not all(s in hay for s in self.substrings):
                return False
        for key, value, negated in self.labels:
            have = (labels or {}).get(key)
            hit = have is not None and (value in ("", "*") or have == value)
            if hit == negated:
                return False
        return True
