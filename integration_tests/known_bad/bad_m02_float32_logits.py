"""Logits are cast to float32 whatever the model's dtype."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_decoder"
CLAUSE = "M02.11"

model = mutated_module(
    "modern_lm.model",
    [
        (
            "logits: Tensor = self.lm_head(self.model(input_ids, positions))",
            "logits: Tensor = self.lm_head(self.model(input_ids, positions)).float()",
        )
    ],
)
globals().update(export_with("modern_lm", model))
