"""Label and field selector parsing and matching, with the apiserver's grammar and error texts."""

from __future__ import annotations

import re
from dataclasses import dataclass

_KEY_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_LABEL_KEY = re.compile(rf"^({_DNS_SUBDOMAIN}/)?{_KEY_NAME}$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_SET_TERM = re.compile(r"^(?P<key>\S+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")


class SelectorError(ValueError):
    """An unparsable selector; the server answers 400 BadRequest with this message."""


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # exists | !exists | = | != | in | notin | gt | lt
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!exists":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        if self.op in ("!=", "notin"):
            return not present or labels[self.key] not in self.values
        if not present:
            return False
        try:
            have = int(labels[self.key])
        except ValueError:
            return False
        limit = int(self.values[0])
        return have > limit if self.op == "gt" else have < limit


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...]

    def matches(self, labels: dict[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    def __bool__(self) -> bool:
        return bool(self.requirements)


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside `( )`."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _check_key(key: str) -> str:
    if not _LABEL_KEY.match(key) or len(key.rsplit("/", 1)[-1]) > 63:
        raise SelectorError(
            f'unable to parse requirement: <nil>: Invalid value: "{key}": name part must consist of alphanumeric '
            "characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        )
    return key


def _check_value(value: str) -> str:
    if not _LABEL_VALUE.match(value) or len(value) > 63:
        raise SelectorError(
            f'unable to parse requirement: values[0][]: Invalid value: "{value}": a valid label must be an empty '
            "string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character"
        )
    return value


def _parse_term(term: str) -> Requirement:
    term = term.strip()
    if not term:
        raise SelectorError("found '', expected: !, identifier, or 'end of string'")
    if term.startswith("!"):
        return Requirement(_check_key(term[1:].strip()), "!exists")
    m = _SET_TERM.match(term)
    if m:
        values = tuple(_check_value(v.strip()) for v in m["values"].split(",") if v.strip())
        return Requirement(_check_key(m["key"]), m["op"], values)
    for token, op in (("!=", "!="), ("==", "="), ("=", "="), (">", "gt"), ("<", "lt")):
        if token in term:
            key, value = (s.strip() for s in term.split(token, 1))
            if op in ("gt", "lt") and not re.fullmatch(r"-?\d+", value):
                raise SelectorError("unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer")
            return Requirement(_check_key(key), op, (_check_value(value),))
    if " " in term:
        raise SelectorError(f"unable to parse requirement: found '{term.split()[1]}', expected: in, notin, =, ==, !=, gt, lt")
    return Requirement(_check_key(term), "exists")


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse `a=b,c!=d,e in (x,y),!f,g` into a selector (empty string selects everything)."""
    if not text or not text.strip():
        return LabelSelector(())
    return LabelSelector(tuple(_parse_term(t) for t in _split_top_level(text)))


@dataclass(frozen=True)
class FieldSelector:
    terms: tuple[tuple[str, bool, str], ...]  # (field, equal?, value)

    def matches(self, fields: dict[str, str]) -> bool:
        return all((fields.get(f, "") == v) == eq for f, eq, v in self.terms)

    def __bool__(self) -> bool:
        return bool(self.terms)


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, cur, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cur.append(text[i : i + 2])
            i += 2
            continue
        if ch == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return parts


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def parse_field_selector(text: str | None, supported: frozenset[str]) -> FieldSelector:
    """Parse `spec.nodeName=x,status.phase!=Failed`; unknown fields raise like the apiserver does."""
    if not text or not text.strip():
        return FieldSelector(())
    terms = []
    for raw in _split_unescaped(text, ","):
        raw = raw.strip()
        if not raw:
            continue
        for token, eq in (("!=", False), ("==", True), ("=", True)):  # noqa: B007 - `eq` is read after the break
            idx = _find_unescaped(raw, token)
            if idx >= 0:
                key, value = raw[:idx].strip(), _unescape(raw[idx + len(token) :])
                break
        else:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{raw}'")
        if key not in supported:
            raise SelectorError(f'field label not supported: {key}')
        terms.append((key, eq, value))
    return FieldSelector(tuple(terms))


def _find_unescaped(text: str, token: str) -> int:
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(token, i):
            return i
        i += 1
    return -1
