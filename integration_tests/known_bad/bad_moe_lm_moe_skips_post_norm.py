"""A MoE layer's experts read the residual stream, not post_attention_layernorm's output."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MOE_LM_MODULE"
EXPECTED_OWNER = "moe_model"
CLAUSE = "M05.16"

model = mutated_module(
    "moe_lm.model",
    [
        (
            "mixed = self.mlp(self.post_attention_layernorm(x))",
            "mixed = self.mlp(x) if isinstance(self.mlp, SparseMoE) else self.mlp(self.post_attention_layernorm(x))",
        ),
    ],
)
globals().update(export_with("moe_lm", model))
