"""Which cache-aware model modules a suite runs against.

The contract suites run against the module `CACHE_AWARE_LM_MODULE` selects. When
that is the reference, they also run against the reference's modern variant
(grouped-query attention, rotary positions), so every collaborator suite proves
itself on both cache layouts (H_kv == H and H_kv < H).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from gptlab_testkit.candidates import candidate, is_reference

MODERN_VARIANT = "cache_aware_lm.modern"


def cache_aware_modules() -> dict[str, ModuleType]:
    """{id: module} exposing make_test_model / make_eos_test_model, for parametrize."""
    selected = candidate("CACHE_AWARE_LM_MODULE")
    if not is_reference("CACHE_AWARE_LM_MODULE"):
        return {"candidate": selected}
    return {"reference": selected, "modern": importlib.import_module(MODERN_VARIANT)}
