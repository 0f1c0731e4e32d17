"""The output is restored time-major: token (b, t) gets another token's row."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MOE_LM_MODULE"
EXPECTED_OWNER = "moe_router"
CLAUSE = "M05.8"

sparse = mutated_module(
    "moe_lm.sparse_moe",
    [
        (
            "out = combined.to(hidden_states.dtype).reshape(hidden_states.shape)",
            "out = combined.to(hidden_states.dtype).reshape(hidden_states.shape[1], hidden_states.shape[0], -1).transpose(0, 1) if hidden_states.dim() == 3 else combined.to(hidden_states.dtype).reshape(hidden_states.shape)",
        ),
    ],
)
model = mutated_module(
    "moe_lm.model", rebind={"SparseMoE": sparse.SparseMoE, "MoEOutput": sparse.MoEOutput}
)
globals().update(export_with("moe_lm", sparse, model))
