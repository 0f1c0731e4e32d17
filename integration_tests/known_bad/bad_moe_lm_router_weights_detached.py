"""The routing weights are detached: no gradient reaches the router."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MOE_LM_MODULE"
EXPECTED_OWNER = "moe_dispatch"
CLAUSE = "M05.11"

routing = mutated_module(
    "moe_lm.routing",
    [
        (
            "weights = chosen / chosen.sum(dim=-1, keepdim=True)",
            "weights = (chosen / chosen.sum(dim=-1, keepdim=True)).detach()",
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
