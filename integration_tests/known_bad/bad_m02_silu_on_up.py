"""SwiGLU with SiLU on the up branch and the gate left linear."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_swiglu"
CLAUSE = "M02.20"

mlp = mutated_module(
    "modern_lm.mlp",
    [
        (
            "functional.silu(self.gate_proj(x)) * self.up_proj(x)",
            "functional.silu(self.up_proj(x)) * self.gate_proj(x)",
        )
    ],
)
model = mutated_module("modern_lm.model", rebind={"SwiGLU": mlp.SwiGLU})
globals().update(export_with("modern_lm", model))
