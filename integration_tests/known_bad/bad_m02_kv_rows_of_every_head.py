"""k_proj has a row block per query head (MHA shapes), not per kv head."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_checkpoint"
CLAUSE = "M02.13"

attention = mutated_module(
    "modern_lm.attention",
    [
        (
            "self.k_proj = nn.Linear(C, self.n_kv_heads * D, bias=False)",
            "self.k_proj = nn.Linear(C, self.n_heads * D, bias=False)",
        )
    ],
)
model = mutated_module(
    "modern_lm.model", rebind={"GroupedQueryAttention": attention.GroupedQueryAttention}
)
globals().update(export_with("modern_lm", model))
