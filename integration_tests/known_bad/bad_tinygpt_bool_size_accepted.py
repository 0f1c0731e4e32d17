"""GPTConfig takes a bool for a size: isinstance(True, int) holds, so n_layers=True is 1 layer."""

from __future__ import annotations

import inspect
import sys
from types import ModuleType

import tinygpt.config
from tinygpt import CausalLMOutput, TinyGPT

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "config_validation"


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


GPTConfig = mutated_copy(
    tinygpt.config,
    "isinstance(value, bool) or not isinstance(value, int)",
    "not isinstance(value, int)",
).GPTConfig

__all__ = ["CausalLMOutput", "GPTConfig", "TinyGPT"]
