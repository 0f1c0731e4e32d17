"""positions=None puts every token at position 0 instead of 0..T-1."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_rope"
CLAUSE = "M02.25"

model = mutated_module(
    "modern_lm.model",
    [
        (
            "return torch.arange(T, device=input_ids.device).expand_as(input_ids)",
            "return torch.zeros_like(input_ids)",
        )
    ],
)
globals().update(export_with("modern_lm", model))
