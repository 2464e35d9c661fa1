"""Label selectors and node requirements, with the Kubernetes semantics checks rely on."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from diagnostics.records import Requirement


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics: an empty selector matches everything."""
    if not selector:
        return True
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or ():
        req = Requirement(expr.get("key", ""), expr.get("operator", ""), tuple(expr.get("values") or ()))
        if not requirement_matches(req, labels):
            return False
    return True


def requirement_matches(req: Requirement, labels: Mapping[str, str]) -> bool:
    """NodeSelectorRequirement against a label set (In, NotIn, Exists, DoesNotExist, Gt, Lt)."""
    present = req.key in labels
    value = labels.get(req.key, "")
    op = req.operator
    if op == "In":
        return present and value in req.values
    if op == "NotIn":
        return not present or value not in req.values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and len(req.values) == 1:
        a, b = go_int(value), go_int(req.values[0])
        if a is None or b is None:
            return False
        return a > b if op == "Gt" else a < b
    return False


_GO_INT = re.compile(r"[+-]?[0-9]+")


def go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64), which Gt/Lt use (apimachinery labels.Requirement.Matches): ASCII digits
    with an optional sign, in int64 - not Python's int() ('1_6', ' 8', other scripts' digits)."""
    if not _GO_INT.fullmatch(text):
        return None
    n = int(text)
    return n if -(2**63) <= n < 2**63 else None


def node_matches(node_selector: Mapping[str, str], affinity_terms: Iterable[Iterable[Requirement]],
                 labels: Mapping[str, str]) -> bool:
    """A pod's nodeSelector AND any one of its required nodeSelectorTerms."""
    if any(labels.get(k) != v for k, v in node_selector.items()):
        return False
    terms = [tuple(t) for t in affinity_terms]
    if not terms:
        return True
    return any(all(requirement_matches(r, labels) for r in term) for term in terms)


def allowed_values(reqs: Iterable[Requirement], key: str) -> tuple[set[str] | None, set[str]]:
    """What a requirement list allows for `key`: (allowed set or None = unconstrained, excluded set)."""
    allowed: set[str] | None = None
    excluded: set[str] = set()
    for r in reqs:
        if r.key != key:
            continue
        if r.operator == "In":
            allowed = set(r.values) if allowed is None else allowed & set(r.values)
        elif r.operator == "NotIn":
            excluded |= set(r.values)
        elif r.operator == "DoesNotExist":
            allowed = set()
    return allowed, excluded


def compatible(pool_reqs: Iterable[Requirement], key: str, wanted: Iterable[str],
               pool_labels: Mapping[str, str] | None = None) -> bool:
    """Could a node from a pool with these requirements carry `key` with one of `wanted` values?

    Karpenter intersects pod requirements with NodePool requirements (and template labels).
    Keys the pool does not constrain are compatible only if Karpenter knows them as instance
    labels; we treat unconstrained keys as compatible (the caller warns separately).
    """
    reqs = list(pool_reqs)
    wanted_set = set(wanted)
    if pool_labels and key in pool_labels:
        return pool_labels[key] in wanted_set
    allowed, excluded = allowed_values(reqs, key)
    candidates = wanted_set - excluded
    if allowed is None:
        return bool(candidates)
    return bool(candidates & allowed)
