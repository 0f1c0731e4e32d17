"""RoPE rotates the values too."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_rope"
CLAUSE = "M02.28"

attention = mutated_module(
    "modern_lm.attention",
    [
        (
            "v = self._heads(self.v_proj(x), self.n_kv_heads)",
            "v = apply_rotary(self._heads(self.v_proj(x), self.n_kv_heads), cos, sin)",
        )
    ],
)
model = mutated_module(
    "modern_lm.model", rebind={"GroupedQueryAttention": attention.GroupedQueryAttention}
)
globals().update(export_with("modern_lm", model))
