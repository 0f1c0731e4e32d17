"""The loss scores token t's logits against label t, not label t + 1."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_decoder"
CLAUSE = "M02.31"

loss = mutated_module(
    "modern_lm.loss",
    [("shift_logits = logits[:, :-1]", "shift_logits = logits[:, 1:]")],
)
model = mutated_module(
    "modern_lm.model", rebind={"shifted_cross_entropy": loss.shifted_cross_entropy}
)
globals().update(export_with("modern_lm", model))
