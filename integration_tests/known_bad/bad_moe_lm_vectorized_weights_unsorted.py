"""The vectorized dispatch weights the expert-sorted rows with the token-ordered weights."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MOE_LM_MODULE"
EXPECTED_OWNER = "moe_dispatch"
CLAUSE = "M05.9"

dispatch = mutated_module(
    "moe_lm.dispatch",
    [
        (
            "weights = routing.weights.reshape(-1)[order, None]",
            "weights = routing.weights.reshape(-1)[:, None]",
        ),
    ],
)
sparse = mutated_module(
    "moe_lm.sparse_moe", rebind={"dispatch_vectorized": dispatch.dispatch_vectorized}
)
model = mutated_module(
    "moe_lm.model", rebind={"SparseMoE": sparse.SparseMoE, "MoEOutput": sparse.MoEOutput}
)
globals().update(export_with("moe_lm", sparse, model))
