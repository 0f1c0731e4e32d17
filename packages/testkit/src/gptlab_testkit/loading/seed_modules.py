"""This project's references under the seed's lab module names, for one-file attempts.

The seed's labs are plain modules importing each other by name: its
`cache_aware_lm.py` begins `from tiny_gpt import FeedForward, GPTConfig`. A learner
practising one mechanism writes only that mechanism's file, so the sibling it imports
is missing. Such an import (from an attempt loaded by `attempts`, when the attempt's
folder holds no module of that name) gets a stand-in: a module named like the seed's
lab, holding every public name of this project's reference for that mechanism plus
the seed's names for the few classes this project names differently
(`FeedForward` is tinygpt's `MLP`). The references keep their own names; the aliases
exist only in these stand-ins, which are never registered under the plain names, so
this project's own imports are unaffected.

Lives in gptlab_testkit beside `attempts` (its only user): it is grading machinery,
reaching the references by name at run time as the candidate variables' defaults do.
"""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType

# seed module name -> (this project's reference package, {seed's name: "module:attribute"})
SEED_MODULES: dict[str, tuple[str, dict[str, str]]] = {
    "tiny_gpt": (
        "tinygpt",
        {
            "FeedForward": "tinygpt.blocks:MLP",
            "Block": "tinygpt.blocks:Block",
            "SelfAttention": "tinygpt.attention:CausalSelfAttention",
            "CausalSelfAttention": "tinygpt.attention:CausalSelfAttention",
        },
    ),
    "cache_aware_lm": (
        "cache_aware_lm",
        {"CacheAwareCausalLMOutput": "cache_aware_lm.output:CacheAwareOutput"},
    ),
    "kv_cache": ("kv_cache", {}),
    "prefix_cache": ("prefix_cache", {}),
    "chunked_prefill": ("chunked_prefill", {}),
    "speculative_decoding": ("speculative", {}),
}


def _public_names(module: ModuleType) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [name for name in vars(module) if not name.startswith("_")]
    return list(names)


def _attribute(target: str) -> object:
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


@cache
def seed_module(name: str) -> ModuleType:
    """The stand-in for the seed's lab module `name` (a key of SEED_MODULES), built once.

    Its `__name__` is the seed's name and its `__file__` the reference's, so an
    `ImportError` for a name it lacks says which module stood in, and where it lives.
    A reference that already goes by the seed's name and names (`kv_cache`) is itself
    the answer: the attempt sees the very module this project's tests import.
    """
    package_name, aliases = SEED_MODULES[name]
    package = importlib.import_module(package_name)
    if package_name == name and not aliases:
        return package
    module = ModuleType(name, f"this project's {package_name} under the seed's name {name}")
    module.__file__ = package.__file__
    for attribute in _public_names(package):
        setattr(module, attribute, getattr(package, attribute))
    for alias, target in aliases.items():
        setattr(module, alias, _attribute(target))
    module.__all__ = sorted({*_public_names(package), *aliases})  # type: ignore[attr-defined]
    module.gptlab_reference = package_name  # type: ignore[attr-defined]
    return module


def is_seed_stand_in(module_name: str | None) -> bool:
    return module_name in SEED_MODULES


def reference_of(name: str) -> str:
    """The reference package that stands in for the seed's module `name`."""
    return SEED_MODULES[name][0]
