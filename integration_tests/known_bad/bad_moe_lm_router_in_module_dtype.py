"""The router computes in the module's dtype (bfloat16 in a bfloat16 module)."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MOE_LM_MODULE"
EXPECTED_OWNER = "moe_precision"
CLAUSE = "M05.12"

sparse = mutated_module(
    "moe_lm.sparse_moe",
    [
        ("dtype = router_dtype(tokens.dtype)", "dtype = tokens.dtype"),
    ],
)
model = mutated_module(
    "moe_lm.model", rebind={"SparseMoE": sparse.SparseMoE, "MoEOutput": sparse.MoEOutput}
)
globals().update(export_with("moe_lm", sparse, model))
