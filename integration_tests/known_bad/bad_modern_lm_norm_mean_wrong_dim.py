"""RMSNorm's square-mean taken over the sequence (dim 1) instead of the channels (dim -1)."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_rmsnorm"

norm = mutated_module(
    "modern_lm.norm",
    [("x32.pow(2).mean(dim=-1, keepdim=True)", "x32.pow(2).mean(dim=1, keepdim=True)")],
)
model = mutated_module("modern_lm.model", rebind={"RMSNorm": norm.RMSNorm})
globals().update(export_with("modern_lm", model))
