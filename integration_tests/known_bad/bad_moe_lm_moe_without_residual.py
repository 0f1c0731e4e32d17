"""A MoE layer's output replaces the residual stream instead of adding to it."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MOE_LM_MODULE"
EXPECTED_OWNER = "moe_model"
CLAUSE = "M05.15"

model = mutated_module(
    "moe_lm.model",
    [
        (
            "return x + self.dropout(mixed.hidden_states), mixed",
            "return self.dropout(mixed.hidden_states), mixed",
        ),
    ],
)
globals().update(export_with("moe_lm", model))
