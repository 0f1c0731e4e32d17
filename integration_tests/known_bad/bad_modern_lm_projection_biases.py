"""nn.Linear's default bias left on the attention projections."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MODERN_LM_MODULE"
EXPECTED_OWNER = "modern_checkpoint"

attention = mutated_module(
    "modern_lm.attention",
    [
        (
            "self.q_proj = nn.Linear(C, self.n_heads * D, bias=False)",
            "self.q_proj = nn.Linear(C, self.n_heads * D)",
        ),
        (
            "self.o_proj = nn.Linear(self.n_heads * D, C, bias=False)",
            "self.o_proj = nn.Linear(self.n_heads * D, C)",
        ),
    ],
)
model = mutated_module(
    "modern_lm.model", rebind={"GroupedQueryAttention": attention.GroupedQueryAttention}
)
globals().update(export_with("modern_lm", model))
