"""RMSNorm reduced in the input dtype: float16 squares overflow (and underflow)."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_rmsnorm"

norm = mutated_module(
    "modern_lm.norm", [("x32 = x.to(torch.promote_types(x.dtype, torch.float32))", "x32 = x")]
)
model = mutated_module("modern_lm.model", rebind={"RMSNorm": norm.RMSNorm})
globals().update(export_with("modern_lm", model))
