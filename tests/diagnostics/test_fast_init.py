"""Records built with the faster __init__ are the same records, and stay frozen."""

from __future__ import annotations

import dataclasses
import inspect
from datetime import datetime, timezone

import pytest

from diagnostics import records
from diagnostics.fast_init import fast_init

RECORD_CLASSES = [c for c in vars(records).values()
                  if isinstance(c, type) and dataclasses.is_dataclass(c) and c.__module__ == records.__name__]


def _plain_twin(cls: type) -> type:
    """The same fields in a frozen slotted dataclass that keeps the generated __init__."""
    fields = [(f.name, f.type, dataclasses.field(default=f.default, default_factory=f.default_factory,
                                                 init=f.init, kw_only=f.kw_only))
              for f in dataclasses.fields(cls)]
    return dataclasses.make_dataclass(f"Twin{cls.__name__}", fields, frozen=True, slots=True)


def test_every_record_class_uses_it() -> None:
    assert len(RECORD_CLASSES) >= 15
    for cls in RECORD_CLASSES:
        assert "_set0" in cls.__init__.__globals__, cls  # type: ignore[misc]  # fast_init's, not dataclasses'


@pytest.mark.parametrize("cls", RECORD_CLASSES, ids=lambda c: c.__name__)
def test_signature_matches_the_generated_one(cls: type) -> None:
    twin = _plain_twin(cls)
    ours = [(p.name, p.kind, p.default is not inspect.Parameter.empty)
            for p in inspect.signature(cls.__init__).parameters.values()]
    theirs = [(p.name, p.kind, p.default is not inspect.Parameter.empty)
              for p in inspect.signature(twin.__init__).parameters.values()]
    assert ours == theirs


def test_condition_holds_what_it_was_given_and_stays_frozen() -> None:
    when = datetime(2026, 1, 2, tzinfo=timezone.utc)
    c = records.Condition("Ready", "False", reason="KubeletNotReady", last_transition=when)
    assert (c.type, c.status, c.reason, c.message, c.last_transition) == ("Ready", "False", "KubeletNotReady", "", when)
    assert c == records.Condition("Ready", "False", "KubeletNotReady", "", when)
    assert hash(c) == hash(records.Condition("Ready", "False", "KubeletNotReady", "", when))
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.status = "True"  # type: ignore[misc]
    with pytest.raises(TypeError):
        records.Condition("Ready")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        records.Condition("Ready", "True", nope=1)  # type: ignore[call-arg]


def test_default_factories_give_each_instance_its_own_value() -> None:
    a, b = records.Meta(name="a"), records.Meta(name="b")
    assert a.labels == {} and a.labels is not b.labels
    assert dataclasses.replace(a, name="c") == records.Meta(name="c")


@fast_init
@dataclasses.dataclass(frozen=True, slots=True)
class _WithPostInit:
    a: int
    b: list[int] = dataclasses.field(default_factory=list)
    c: int = dataclasses.field(default=7, init=False)
    d: str = dataclasses.field(default="x", kw_only=True)

    def __post_init__(self) -> None:
        if self.a < 0:
            raise ValueError("negative")


def test_init_false_kw_only_and_post_init_behave_as_dataclasses_says() -> None:
    w = _WithPostInit(1, d="y")
    assert (w.a, w.b, w.c, w.d) == (1, [], 7, "y")
    with pytest.raises(ValueError):
        _WithPostInit(-1)
    with pytest.raises(TypeError):
        _WithPostInit(1, [], "z")  # type: ignore[misc]  # d is keyword-only


def test_refuses_what_it_cannot_speed_up() -> None:
    @dataclasses.dataclass(slots=True)
    class Mutable:
        a: int

    with pytest.raises(TypeError):
        fast_init(Mutable)
