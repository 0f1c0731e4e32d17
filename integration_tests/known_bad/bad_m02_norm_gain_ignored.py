"""RMSNorm forgets its gain: every norm path returns the bare normalized value."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_rmsnorm"
CLAUSE = "M02.18"

norm = mutated_module(
    "modern_lm.norm",
    [("return self.weight * normed.to(x.dtype)", "return normed.to(x.dtype)")],
)
model = mutated_module("modern_lm.model", rebind={"RMSNorm": norm.RMSNorm})
globals().update(export_with("modern_lm", model))
