"""Context overflow accepted after a cache: the budget check counts the new tokens, not past + new.

A cached call that runs past context_length is not rejected with a ValueError; it goes on
to index learned positions that do not exist.
"""

from __future__ import annotations

import inspect
import sys
from types import ModuleType

import tinygpt.model
from tinygpt import GPTConfig

VARIABLE = "TINY_GPT_MODULE"
EXPECTED_OWNER = "cache_validation"


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


model = mutated_copy(
    tinygpt.model, "check_context_length(past_length + T,", "check_context_length(T,"
)
TinyGPT = model.TinyGPT
CausalLMOutput = model.CausalLMOutput

__all__ = ["CausalLMOutput", "GPTConfig", "TinyGPT"]
