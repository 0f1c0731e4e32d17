"""Positions are checked against the rotary table's reach, not max_position_embeddings:
positions at and past the model's context run instead of failing."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "FRAGMENT_LM_MODULE"
EXPECTED_OWNER = "fragment_boundary"
CLAUSE = "M10.8"

model = mutated_module(
    "fragment_lm.model",
    [
        (
            "context_length=self.config.max_position_embeddings,",
            "context_length=2**40,",
        )
    ],
)
globals().update(export_with("fragment_lm", model))
