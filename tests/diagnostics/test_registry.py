"""Check identity is a public contract: unique codes and slugs, documented, each with its tests."""

from __future__ import annotations

from pathlib import Path

from diagnostics.registry import CODE_RE, LOAD_ERRORS, SLUG_RE, all_checks
from diagnostics.snapshot import KUBE_SOURCES, OTHER_SOURCES

TESTS = Path(__file__).parent / "checks"


def test_every_check_module_loads() -> None:
    all_checks()
    assert LOAD_ERRORS == {}


def test_codes_and_slugs_are_unique_and_well_formed() -> None:
    specs = all_checks()
    assert len({s.code for s in specs}) == len(specs)
    assert len({s.slug for s in specs}) == len(specs)
    for s in specs:
        assert CODE_RE.match(s.code) and SLUG_RE.match(s.slug), s


def test_docstrings_have_the_fixed_sections() -> None:
    for s in all_checks():
        assert s.summary, s.slug
        assert s.section("Why it matters"), f"{s.slug}: no 'Why it matters:' section"
        assert s.section("Fix"), f"{s.slug}: no 'Fix:' section"


def test_requires_names_known_sources() -> None:
    known = set(KUBE_SOURCES) | set(OTHER_SOURCES)
    for s in all_checks():
        assert set(s.requires) | set(s.optional) <= known, s.slug


def test_every_check_has_a_test_module() -> None:
    missing = [s.slug for s in all_checks() if not (TESTS / f"test_{s.slug.replace('-', '_')}.py").exists()]
    assert missing == []
