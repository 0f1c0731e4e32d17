"""The causal mask compares positions, not indices: equal or decreasing positions open the future."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_attention"
CLAUSE = "M02.26"

attention = mutated_module(
    "modern_lm.attention",
    [("is_causal=True,", "attn_mask=self.position_mask,")],
)
model = mutated_module(
    "modern_lm.model",
    [
        (
            "        for layer in self.layers:\n            x = layer(x, cos, sin)",
            "        allowed = positions[:, None, :, None] >= positions[:, None, None, :]\n"
            "        for layer in self.layers:\n"
            "            layer.self_attn.position_mask = allowed\n"
            "            x = layer(x, cos, sin)",
        )
    ],
    rebind={"GroupedQueryAttention": attention.GroupedQueryAttention},
)
globals().update(export_with("modern_lm", model))
