"""RMSNorm's gain is a buffer, not a Parameter: it is saved but never trained."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_registration"
CLAUSE = "M02.16"

norm = mutated_module(
    "modern_lm.norm",
    [
        (
            "self.weight = nn.Parameter(torch.ones(dim))",
            'self.weight: Tensor\n        self.register_buffer("weight", torch.ones(dim))',
        )
    ],
)
model = mutated_module("modern_lm.model", rebind={"RMSNorm": norm.RMSNorm})
globals().update(export_with("modern_lm", model))
