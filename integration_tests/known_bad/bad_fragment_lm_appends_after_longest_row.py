"""Every row's new K/V go after the longest row's cache, not after the row's own prefix:
a shorter row's new tokens land beyond its positions and it attends to empty slots."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "FRAGMENT_LM_MODULE"
EXPECTED_OWNER = "fragment_cache"
CLAUSE = "M10.4"

model = mutated_module(
    "fragment_lm.model",
    [
        (
            "writer = FunctionalCacheWriter(state.past, state.lengths, T)",
            "writer = FunctionalCacheWriter(\n"
            "            state.past, state.lengths.max().expand_as(state.lengths).clone(), T\n"
            "        )",
        )
    ],
)
globals().update(export_with("fragment_lm", model))
