"""Projections and embedding start at std 1, not 0.02: the first loss is far above ln(V)."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_decoder"
CLAUSE = "M02.22"

model = mutated_module("modern_lm.model", [("INITIALIZER_RANGE = 0.02", "INITIALIZER_RANGE = 1.0")])
globals().update(export_with("modern_lm", model))
