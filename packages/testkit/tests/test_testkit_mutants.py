"""Mutants for known-bad candidates: edited copies, retyped submodules, graded exports.

The reference here is a throwaway package written to a temporary folder, so these
tests depend on no gptlab package and can prove that the reference stays intact.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from types import ModuleType

import pytest
from torch import Tensor, nn

from gptlab_testkit.candidates import VARIABLES, Variable
from gptlab_testkit.mutants import (
    MutationError,
    export_with,
    mutated_module,
    retype_modules,
    retyped_class,
    retyped_factory,
)

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

TOY = "gptlab_toy_reference"
TOY_SOURCES = {
    "__init__.py": "from .core import Thing, make\n",
    "helpers.py": "def twice(x):\n    return 2 * x\n",
    "core.py": """
        from __future__ import annotations

        from dataclasses import dataclass

        from .helpers import twice


        @dataclass(frozen=True)
        class Thing:
            value: int

            def doubled(self) -> int:
                return twice(self.value)

            def tripled(self) -> int:
                return self.value * 3


        def make(value: int) -> Thing:
            return Thing(value + 0)
    """,
}


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The toy reference package, importable for this module's tests."""
    folder = tmp_path_factory.mktemp("toy")
    (folder / TOY).mkdir()
    for filename, source in TOY_SOURCES.items():
        (folder / TOY / filename).write_text(textwrap.dedent(source))
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module(TOY)
    finally:
        sys.path.remove(str(folder))
        for name in [name for name in sys.modules if name.startswith(TOY)]:
            del sys.modules[name]


@pytest.fixture
def toy_variable(toy: ModuleType, monkeypatch: pytest.MonkeyPatch) -> Variable:
    variable = Variable("TOY_MODULE", "toy", TOY, ("Thing", "make"))
    monkeypatch.setitem(VARIABLES, variable.name, variable)
    return variable


def test_edit_applies_to_a_copy_and_the_reference_is_left_intact(toy: ModuleType) -> None:
    core = sys.modules[f"{TOY}.core"]
    before = dict(vars(core))

    mutant = mutated_module(f"{TOY}.core", [("Thing(value + 0)", "Thing(value + 1)")])

    assert mutant.make(1) == mutant.Thing(2), "the edit was not applied"
    assert mutant.make(1).doubled() == 4, "relative imports must reach the reference's siblings"
    assert toy.make(1) == toy.Thing(1), "the reference changed"
    assert vars(core) == before, "the reference module's globals changed"
    assert mutant.Thing is not toy.Thing


def test_an_edit_whose_text_is_missing_fails_loudly(toy: ModuleType) -> None:
    with pytest.raises(MutationError, match=r"'Thing\(value \+ 9\)' 0 times"):
        mutated_module(f"{TOY}.core", [("Thing(value + 9)", "Thing(value)")])


def test_an_edit_whose_text_repeats_fails_loudly(toy: ModuleType) -> None:
    with pytest.raises(MutationError, match=r"'self.value' 2 times"):
        mutated_module(f"{TOY}.core", [("self.value", "self.value + 1")])


def test_within_makes_a_repeated_text_unique_to_one_function(toy: ModuleType) -> None:
    mutant = mutated_module(
        f"{TOY}.core", [("self.value", "(self.value + 1)")], within="Thing.tripled"
    )

    assert mutant.Thing(1).tripled() == 6
    assert mutant.Thing(1).doubled() == 2, "an edit reached outside `within`"


def test_within_a_missing_function_fails_loudly(toy: ModuleType) -> None:
    with pytest.raises(MutationError, match=r"no function or class 'Thing.halved'"):
        mutated_module(f"{TOY}.core", [("self.value", "0")], within="Thing.halved")


def test_rebind_replaces_a_global_the_copy_looks_up_when_called(toy: ModuleType) -> None:
    mutant = mutated_module(f"{TOY}.core", rebind={"twice": lambda x: 10 * x})

    assert mutant.Thing(1).doubled() == 10
    assert toy.Thing(1).doubled() == 2, "the reference changed"


def test_rebinding_a_name_the_module_lacks_fails_loudly(toy: ModuleType) -> None:
    with pytest.raises(MutationError, match="no global 'thrice'"):
        mutated_module(f"{TOY}.core", rebind={"thrice": print})


def test_a_copy_never_takes_a_real_modules_name(toy: ModuleType) -> None:
    with pytest.raises(ValueError, match="is taken"):
        mutated_module(f"{TOY}.core", [("value + 0", "value")], name=f"{TOY}.helpers")
    assert sys.modules[f"{TOY}.helpers"].twice(1) == 2


def test_exports_come_from_overrides_then_mutants_then_the_reference(
    toy: ModuleType, toy_variable: Variable
) -> None:
    mutant = mutated_module(f"{TOY}.core", [("Thing(value + 0)", "Thing(value + 1)")])

    assert export_with(TOY, mutant) == {"Thing": mutant.Thing, "make": mutant.make}
    assert export_with(TOY, make=len) == {"Thing": toy.Thing, "make": len}


def test_exports_refuse_a_name_the_grader_does_not_require(
    toy: ModuleType, toy_variable: Variable
) -> None:
    with pytest.raises(ValueError, match="does not grade"):
        export_with(TOY, Other=len)


def test_exports_refuse_a_mutant_without_graded_names(
    toy: ModuleType, toy_variable: Variable
) -> None:
    helpers = mutated_module(f"{TOY}.helpers", [("2 * x", "3 * x")])
    with pytest.raises(ValueError, match="its mistake would never be graded"):
        export_with(TOY, helpers)


def test_exports_refuse_to_replace_nothing(toy: ModuleType, toy_variable: Variable) -> None:
    with pytest.raises(ValueError, match="replaces nothing"):
        export_with(TOY)


class Inner(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return x


class Negated(Inner):
    def forward(self, x: Tensor) -> Tensor:
        return -x


class Outer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.ModuleList([Inner(), Inner()])


def test_retyped_class_gives_every_mapped_submodule_the_subclass() -> None:
    Mutant = retyped_class(Outer, {Inner: Negated})

    model = Mutant()

    assert [type(inner) for inner in model.inner] == [Negated, Negated]
    assert isinstance(model, Outer)
    assert [type(inner) for inner in Outer().inner] == [Inner, Inner], "the reference changed"


def test_retyped_factory_retypes_what_the_factory_builds() -> None:
    build = retyped_factory(Outer, {Inner: Negated})

    assert [type(inner) for inner in build().inner] == [Negated, Negated]


def test_retyping_a_type_the_model_lacks_fails_loudly() -> None:
    with pytest.raises(MutationError, match="no submodule of type"):
        retype_modules(Outer(), {nn.Linear: type("Wide", (nn.Linear,), {})})


def test_retyping_to_a_class_that_is_not_a_subclass_is_refused() -> None:
    with pytest.raises(ValueError, match="must subclass Inner"):
        retype_modules(Outer(), {Inner: nn.Identity})
