"""The returned cache_lengths are the lengths that came in: the T new tokens are in the
cache but not counted, so the next step's positions no longer continue the rows."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "FRAGMENT_LM_MODULE"
EXPECTED_OWNER = "fragment_cache"
CLAUSE = "M10.3"

model = mutated_module(
    "fragment_lm.model", [('"cache_lengths": new_lengths,', '"cache_lengths": state.lengths,')]
)
globals().update(export_with("fragment_lm", model))
