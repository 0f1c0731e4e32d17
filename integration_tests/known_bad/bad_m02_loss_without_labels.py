"""Without labels the model scores the inputs anyway: loss is never None."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_decoder"
CLAUSE = "M02.23"

model = mutated_module(
    "modern_lm.model",
    [
        (
            "loss = None if labels is None else shifted_cross_entropy(logits, labels)",
            "loss = shifted_cross_entropy(logits, input_ids if labels is None else labels)",
        )
    ],
)
globals().update(export_with("modern_lm", model))
