"""Only the last token's logits are returned ([B, 1, V])."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_decoder"
CLAUSE = "M02.24"

model = mutated_module(
    "modern_lm.model",
    [("return ModernLMOutput(logits, loss)", "return ModernLMOutput(logits[:, -1:], loss)")],
)
globals().update(export_with("modern_lm", model))
