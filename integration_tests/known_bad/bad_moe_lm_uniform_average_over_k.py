"""The chosen experts are averaged (1/k each) whatever their probabilities."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MOE_LM_MODULE"
EXPECTED_OWNER = "moe_router"
CLAUSE = "M05.10"

routing = mutated_module(
    "moe_lm.routing",
    [
        (
            "weights = chosen / chosen.sum(dim=-1, keepdim=True)",
            "weights = (chosen / chosen.sum(dim=-1, keepdim=True)) / experts_per_token",
        ),
    ],
)
sparse = mutated_module(
    "moe_lm.sparse_moe",
    rebind={"route": routing.route, "expert_counts": routing.expert_counts},
)
model = mutated_module(
    "moe_lm.model", rebind={"SparseMoE": sparse.SparseMoE, "MoEOutput": sparse.MoEOutput}
)
globals().update(export_with("moe_lm", sparse, model))
