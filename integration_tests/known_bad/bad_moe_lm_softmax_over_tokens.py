"""The router softmax runs over the tokens (dim 0), not the experts."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MOE_LM_MODULE"
EXPECTED_OWNER = "moe_router"
CLAUSE = "M05.3"

routing = mutated_module(
    "moe_lm.routing",
    [
        (
            "probabilities = router_logits.softmax(dim=-1)",
            "probabilities = router_logits.softmax(dim=0)",
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
