"""load_state_dict ignores strict: unexpected and missing keys load silently."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_checkpoint"
CLAUSE = "M02.15"

model = mutated_module(
    "modern_lm.model",
    [
        (
            "result = atomic_load(self, state_dict, strict=strict, assign=assign)",
            "result = atomic_load(self, state_dict, strict=False, assign=assign)",
        )
    ],
)
globals().update(export_with("modern_lm", model))
