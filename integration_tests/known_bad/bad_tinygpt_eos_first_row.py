"""EOS stops the whole batch as soon as the first row finishes, cutting the other rows short."""

from __future__ import annotations

import inspect
import sys
from types import ModuleType
from typing import Any

import tinygpt
import tinygpt.generation
from tinygpt import CausalLMOutput, GPTConfig

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "eos_context"


def mutated_copy(module: ModuleType, old: str, new: str) -> ModuleType:
    """A fresh copy of a reference module with one source edit; the reference stays intact."""
    source = inspect.getsource(module)
    if source.count(old) != 1:
        raise RuntimeError(f"{module.__name__} no longer contains exactly one {old!r}")
    copy = ModuleType(f"{module.__name__}_known_bad")
    copy.__package__ = module.__package__  # relative imports resolve to the reference
    sys.modules[copy.__name__] = copy  # dataclasses look their module up by name
    exec(compile(source.replace(old, new), module.__file__ or "<copy>", "exec"), copy.__dict__)
    return copy


generation = mutated_copy(tinygpt.generation, "bool(finished.all())", "bool(finished.any())")


class TinyGPT(tinygpt.TinyGPT):
    def generate(self, *args: Any, **kwargs: Any) -> Any:
        return generation.generate(self, *args, **kwargs)


__all__ = ["CausalLMOutput", "GPTConfig", "TinyGPT"]
