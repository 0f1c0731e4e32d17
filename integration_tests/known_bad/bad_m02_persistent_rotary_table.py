"""The rotary inv_freq table is a persistent buffer: a checkpoint key."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_checkpoint"
CLAUSE = "M02.12"

rotary = mutated_module(
    "modern_lm.rotary",
    [("persistent=False", "persistent=True")],
)
model = mutated_module("modern_lm.model", rebind={"RotaryEmbedding": rotary.RotaryEmbedding})
globals().update(export_with("modern_lm", model))
