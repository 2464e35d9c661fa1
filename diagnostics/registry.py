"""The @check decorator and the registry of checks, discovered from diagnostics.checks.*."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from diagnostics.model import Finding, Severity
from diagnostics.snapshot import Snapshot

CheckFn = Callable[[Snapshot], Iterable[Finding | int]]
"""A check yields Findings, and may yield ints: how many subjects it examined (for "passed")."""
CODE_RE = re.compile(r"^GT\d{3}$")
SLUG_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@dataclass(frozen=True, slots=True)
class CheckSpec:
    code: str
    slug: str
    title: str
    severity: Severity
    requires: tuple[str, ...]
    fn: CheckFn
    doc: str
    optional: tuple[str, ...] = ()
    """Sources used when present; their absence lowers confidence but does not skip the check."""
    aliases: tuple[str, ...] = field(default=())
    pending_pods_suffice: bool = False
    """It reads pods only as pending pods (who waits, for what), or judges a node's pods only where all of
    them were read (`Snapshot.all_pods_read_on`): it may run while only the pending pods are read (the
    TUI's first screen). A check that reads pods without saying so waits for every pod."""

    @property
    def summary(self) -> str:
        return self.doc.strip().splitlines()[0] if self.doc.strip() else self.title

    def section(self, name: str) -> str:
        """Docstring section ('Why it matters', 'Fix') as text, '' when absent."""
        lines = inspect.cleandoc(self.doc).splitlines()
        out: list[str] = []
        on = False
        for line in lines:
            header = line.rstrip(":").strip()
            if line.endswith(":") and header and header[0].isupper() and len(header.split()) <= 4:
                on = header.lower() == name.lower()
                continue
            if on:
                out.append(line)
        return "\n".join(out).strip()


_REGISTRY: dict[str, CheckSpec] = {}


class RegistryError(Exception):
    pass


def check(*, code: str, slug: str, title: str, severity: Severity, requires: tuple[str, ...],
          optional: tuple[str, ...] = (), aliases: tuple[str, ...] = (),
          pending_pods_suffice: bool = False) -> Callable[[CheckFn], CheckFn]:
    """Register a check. Code and slug are a public contract: never reuse or change their meaning."""

    def wrap(fn: CheckFn) -> CheckFn:
        if not CODE_RE.match(code):
            raise RegistryError(f"bad check code {code!r}")
        if not SLUG_RE.match(slug):
            raise RegistryError(f"bad check slug {slug!r}")
        for other in list(_REGISTRY.values()):  # another thread may be registering too
            if other.code == code and other.slug != slug:
                raise RegistryError(f"code {code} used by {other.slug} and {slug}")
        _REGISTRY[slug] = CheckSpec(code, slug, title, severity, requires, fn, fn.__doc__ or "",
                                    optional, aliases, pending_pods_suffice)
        return fn

    return wrap


_loaded = False
LOAD_ERRORS: dict[str, str] = {}
"""Check modules that failed to import (slug guessed from the module name -> error). One broken
check must not take the whole checklist down; the engine reports these as errored."""


_load_lock = threading.RLock()


def _load() -> None:
    """Import every check module once; the one-shot path starts this in a background thread."""
    global _loaded
    if _loaded:
        return
    with _load_lock:
        if _loaded:
            return
        import diagnostics.checks as pkg

        for mod in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
            if not mod.name.startswith("_"):
                try:
                    importlib.import_module(f"diagnostics.checks.{mod.name}")
                except Exception as exc:  # noqa: BLE001 - reported as an errored check
                    LOAD_ERRORS[mod.name.replace("_", "-")] = f"{type(exc).__name__}: {exc}"
        _loaded = True


def all_checks() -> list[CheckSpec]:
    """Every registered check, ordered by code (the checklist order users see)."""
    _load()
    return sorted(_REGISTRY.values(), key=lambda s: s.code)


def find(name: str) -> CheckSpec | None:
    """By slug, code (case-insensitive) or alias."""
    _load()
    key = name.strip()
    if key in _REGISTRY:
        return _REGISTRY[key]
    for spec in _REGISTRY.values():
        if spec.code.lower() == key.lower() or key in spec.aliases:
            return spec
    return None


def iter_checks(only: Iterable[str] = (), ignore: Iterable[str] = ()) -> Iterator[CheckSpec]:
    """Checks selected by slug/code; unknown names raise so a typo is not a silent no-op."""
    only_specs = [_resolve(n) for n in only]
    ignore_specs = {_resolve(n).slug for n in ignore}
    chosen = {s.slug for s in only_specs}
    for spec in all_checks():
        if chosen and spec.slug not in chosen:
            continue
        if spec.slug in ignore_specs:
            continue
        yield spec


def _resolve(name: str) -> CheckSpec:
    spec = find(name)
    if spec is None:
        raise RegistryError(f"unknown check {name!r} (see `gputui explain --list`)")
    return spec
