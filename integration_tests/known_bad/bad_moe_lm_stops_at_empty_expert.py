"""The loop stops at the first expert no token chose, skipping every later expert."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MOE_LM_MODULE"
EXPECTED_OWNER = "moe_router"
CLAUSE = "M05.7"

sparse = mutated_module(
    "moe_lm.sparse_moe",
    [
        ("continue  # an expert no token chose does no work", "break"),
    ],
)
model = mutated_module(
    "moe_lm.model", rebind={"SparseMoE": sparse.SparseMoE, "MoEOutput": sparse.MoEOutput}
)
globals().update(export_with("moe_lm", sparse, model))
