"""Known-bad candidates written as "the reference with one plausible mistake".

A candidate for the known-bad ladder should differ from the reference by the one
mistake it names and nothing else. These helpers keep it that short without
touching the reference, which must stay intact in the same process:

- `mutated_module` loads a fresh copy of a reference module from its source with
  exact text edits. Each edited text must occur exactly once (in the module, or
  in one function or class with ``within=``), so a refactor of the reference makes
  the candidate fail loudly instead of silently becoming correct.
- `retype_modules`, `retyped_class` and `retyped_factory` give chosen submodules
  a subclass that carries the mistake, in models the candidate builds itself.
- `export_with` returns the names the variable's grader requires: the reference's,
  except those a mutant module defines and those overridden by keyword.

A candidate then reads::

    \"\"\"EOS stops the whole batch as soon as the first row finishes.\"\"\"

    from gptlab_testkit.mutants import export_with, mutated_module

    VARIABLE = "TINY_GPT_MODULE"
    EXPECTED_OWNER = "eos_context"

    generation = mutated_module("tinygpt.generation", [("finished.all()", "finished.any()")])
    model = mutated_module("tinygpt.model", rebind={"generate": generation.generate})
    globals().update(export_with("tinygpt", model))
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import itertools
import linecache
import sys
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import ParamSpec, TypeVar, cast

from torch import nn

from gptlab_testkit.candidates import VARIABLES, Variable

M = TypeVar("M", bound=nn.Module)
P = ParamSpec("P")

ModuleClasses = Mapping[type[nn.Module], type[nn.Module]]

# Marks the modules this file made, so a name already taken by a real module is refused.
_MUTANT_OF = "__gptlab_mutant_of__"
_serial = itertools.count(1)


class MutationError(ValueError):
    """A mutation no longer fits its reference (an edit's text is missing or repeated)."""


def mutated_module(
    reference: str,
    replacements: Sequence[tuple[str, str]] = (),
    *,
    within: str | None = None,
    rebind: Mapping[str, object] | None = None,
    name: str | None = None,
) -> ModuleType:
    """A fresh copy of the module ``reference``, its source edited by ``replacements``.

    Each ``(old, new)`` replaces ``old`` by ``new``, in order; ``old`` must occur
    exactly once in the module, or in the function or class named by ``within``
    (a qualified name such as ``"PrefixCache.lookup_longest"``), else MutationError.
    ``rebind`` then replaces globals of the copy (say, a name it imported) with other
    objects; every rebound name must exist there. Functions look globals up when
    called, so they see the new objects; class bases and defaults keep the old ones.

    The copy runs as a module of its own (``name``, registered in ``sys.modules``,
    since dataclasses look their module up), with the reference's package, so its
    relative imports reach the reference's sibling modules. The reference module and
    everything in it are left as they were.
    """
    original = importlib.import_module(reference)
    source = inspect.getsource(original)
    start, end = _span(source, within, reference) if within else (0, len(source))
    where = f"{reference}.{within}" if within else reference
    edited = _replace(source[start:end], replacements, where)
    mutated = source[:start] + edited + source[end:]
    if mutated == source and not rebind:
        raise ValueError(f"mutated_module({reference!r}) needs replacements or rebind")

    name = name or f"{reference}__mutant_{next(_serial)}"
    taken = sys.modules.get(name)
    if taken is not None and not hasattr(taken, _MUTANT_OF):
        raise ValueError(f"module name {name!r} is taken by {taken!r}; pick another name")
    copy = ModuleType(name, original.__doc__)
    copy.__package__ = original.__package__  # relative imports resolve to the reference's
    copy.__file__ = original.__file__
    setattr(copy, _MUTANT_OF, reference)
    filename = f"<mutant of {original.__file__ or reference}>"
    # Tracebacks and inspect.getsource show the edited text, not the reference file's.
    linecache.cache[filename] = (len(mutated), None, mutated.splitlines(keepends=True), filename)
    code = compile(mutated, filename, "exec", dont_inherit=True)
    sys.modules[name] = copy
    try:
        exec(code, copy.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    for key, value in (rebind or {}).items():
        if key not in copy.__dict__:
            raise MutationError(f"{reference} has no global {key!r} to rebind")
        setattr(copy, key, value)
    return copy


def _replace(text: str, replacements: Sequence[tuple[str, str]], where: str) -> str:
    for old, new in replacements:
        if not old or old == new:
            raise ValueError(f"{where}: a replacement needs a non-empty old text unlike the new")
        count = text.count(old)
        if count != 1:
            raise MutationError(
                f"{where} contains {old!r} {count} times, expected exactly once: "
                "the reference changed, so update the candidate's replacement"
            )
        text = text.replace(old, new)
    return text


def _span(source: str, qualname: str, reference: str) -> tuple[int, int]:
    """Character offsets of the function or class ``qualname`` (decorators included)."""
    body: list[ast.stmt] = ast.parse(source).body
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None = None
    for part in qualname.split("."):
        node = next(
            (
                child
                for child in body
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and child.name == part
            ),
            None,
        )
        if node is None:
            raise MutationError(f"{reference} defines no function or class {qualname!r}")
        body = node.body
    assert node is not None and node.end_lineno is not None
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    # ast counts lines by "\n"; line k (1-based) starts right after the (k-1)-th newline.
    line_starts = [0, *(index + 1 for index, char in enumerate(source) if char == "\n")]
    end = line_starts[node.end_lineno] if node.end_lineno < len(line_starts) else len(source)
    return line_starts[first - 1], end


def retype_modules(model: M, classes: ModuleClasses) -> M:
    """Give every submodule (``model`` included) whose type is a key its mapped subclass.

    The instances are the caller's own; the classes are untouched. Each mapped type
    must occur at least once, so a renamed reference class fails loudly.
    """
    for old, new in classes.items():
        if not issubclass(new, old):
            raise ValueError(f"{new.__name__} must subclass {old.__name__} to replace it")
    found: set[type[nn.Module]] = set()
    for module in model.modules():
        new_class = classes.get(type(module))
        if new_class is not None:
            found.add(type(module))
            module.__class__ = new_class
    missing = sorted(old.__name__ for old in classes if old not in found)
    if missing:
        raise MutationError(f"{type(model).__name__} has no submodule of type {missing}")
    return model


def retyped_class(model_class: type[M], classes: ModuleClasses) -> type[M]:
    """A subclass of ``model_class`` that applies `retype_modules` after ``__init__``."""

    def init(self: nn.Module, *args: object, **kwargs: object) -> None:
        super(mutant, self).__init__(*args, **kwargs)
        retype_modules(self, classes)

    namespace = {"__init__": init, "__doc__": model_class.__doc__}
    mutant = cast(type[M], type(model_class.__name__, (model_class,), namespace))
    return mutant


def retyped_factory(factory: Callable[P, M], classes: ModuleClasses) -> Callable[P, M]:
    """``factory``, whose model gets `retype_modules` before it is returned."""

    @functools.wraps(factory)
    def build(*args: P.args, **kwargs: P.kwargs) -> M:
        return retype_modules(factory(*args, **kwargs), classes)

    return build


def export_with(reference: str, *mutants: ModuleType, **overrides: object) -> dict[str, object]:
    """The names the grader of ``reference``'s variable requires, ready for ``globals()``.

    A keyword override wins, then the first mutant that has the name, then the
    reference. A mutant's code uses its own classes, so exporting them keeps the
    candidate consistent (a mutated ``tinygpt.model`` brings its ``CausalLMOutput``).
    """
    variable = _variable_of(reference)
    required = variable.required_names
    unknown = sorted(set(overrides) - set(required))
    if unknown:
        raise ValueError(f"{variable.name} does not grade {unknown}; it requires {list(required)}")
    for mutant in mutants:
        if not any(hasattr(mutant, name) for name in required):
            raise ValueError(
                f"{mutant.__name__} has none of {list(required)}: rebind it into a module"
                " that does, or its mistake would never be graded"
            )
    if not mutants and not overrides:
        raise ValueError(f"export_with({reference!r}) replaces nothing: that is the reference")
    module = importlib.import_module(reference)
    exports: dict[str, object] = {}
    for name in required:
        if name in overrides:
            exports[name] = overrides[name]
        else:
            source = next((mutant for mutant in mutants if hasattr(mutant, name)), module)
            exports[name] = getattr(source, name)
    return exports


def _variable_of(reference: str) -> Variable:
    for variable in VARIABLES.values():
        if variable.default_module == reference:
            return variable
    references = sorted(variable.default_module for variable in VARIABLES.values())
    raise ValueError(f"{reference!r} is no variable's reference module; one of {references}")


__all__ = [
    "MutationError",
    "export_with",
    "mutated_module",
    "retype_modules",
    "retyped_class",
    "retyped_factory",
]
