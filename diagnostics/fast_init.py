"""A faster `__init__` for frozen, slotted dataclasses: the records gputui builds by the hundred thousand.

A frozen dataclass's generated `__init__` sets each field through `object.__setattr__` (looked up
and called per field), about twice the cost of the whole object otherwise; at 60k pods of ~70
fields each that is a good share of a cold list. This one writes each slot through the slot's own
descriptor, which is what `object.__setattr__` ends up doing, so instances are the same and stay
frozen (assignment still raises FrozenInstanceError). Same signature, defaults, default
factories and `__post_init__`; classes with init-only variables keep the generated one.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")

_FACTORY = object()
"""Stands for 'no argument given' where the field has a default factory (as dataclasses does)."""


def _slot(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        d = klass.__dict__.get("__slots__")
        if d is not None and name in (d if not isinstance(d, str) else (d,)):
            return klass.__dict__[name]
    raise TypeError(f"{cls.__name__}.{name} is not a slot")


def fast_init(cls: type[T]) -> type[T]:
    """Give a frozen slotted dataclass `cls` the faster `__init__` (see module docstring)."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__} is not a frozen slotted dataclass")
    declared: dict[str, dataclasses.Field[Any]] = cls.__dict__["__dataclass_fields__"]
    fields = [f for f in declared.values() if f._field_type is dataclasses._FIELD]  # type: ignore[attr-defined]
    if len(fields) != len(declared):  # InitVar / ClassVar: keep the generated one
        return cls
    env: dict[str, Any] = {"_FACTORY": _FACTORY}
    args: list[str] = []
    kw_only: list[str] = []
    body: list[str] = []
    for i, f in enumerate(fields):
        env[f"_set{i}"] = _slot(cls, f.name).__set__
        has_factory = f.default_factory is not dataclasses.MISSING
        if has_factory:
            env[f"_make{i}"] = f.default_factory
        if f.init:
            param = f.name
            if has_factory:
                param += "=_FACTORY"
            elif f.default is not dataclasses.MISSING:
                env[f"_dflt{i}"] = f.default
                param += f"=_dflt{i}"
            (kw_only if f.kw_only else args).append(param)
            value = f"_make{i}() if {f.name} is _FACTORY else {f.name}" if has_factory else f.name
        elif has_factory:
            value = f"_make{i}()"
        elif f.default is not dataclasses.MISSING:
            env[f"_dflt{i}"] = f.default
            value = f"_dflt{i}"
        else:
            continue  # init=False without a default: left unset, as dataclasses does
        body.append(f"    _set{i}(self, {value})")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    params_src = ", ".join(["self", *args, *(["*", *kw_only] if kw_only else [])])
    src = f"def __init__({params_src}) -> None:\n" + ("\n".join(body) or "    pass") + "\n"
    exec(src, env)  # noqa: S102 - generated from the class's own field names, as dataclasses does
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = dict(cls.__init__.__annotations__)
    cls.__init__ = init  # type: ignore[method-assign]  # replaced on purpose, as dataclasses does
    return cls
