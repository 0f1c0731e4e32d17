"""RMSNorm adds eps after the square root: x / (sqrt(mean(x^2)) + eps)."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_rmsnorm"
CLAUSE = "M02.33"

norm = mutated_module(
    "modern_lm.norm",
    [
        (
            "torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + self.eps)",
            "1 / (x32.pow(2).mean(dim=-1, keepdim=True).sqrt() + self.eps)",
        )
    ],
)
model = mutated_module("modern_lm.model", rebind={"RMSNorm": norm.RMSNorm})
globals().update(export_with("modern_lm", model))
