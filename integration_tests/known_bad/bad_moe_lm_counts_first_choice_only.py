"""Expert counts count only each token's first choice."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MOE_LM_MODULE"
EXPECTED_OWNER = "moe_router"
CLAUSE = "M05.6"

routing = mutated_module(
    "moe_lm.routing",
    [
        (
            "return torch.bincount(experts.reshape(-1), minlength=num_experts)",
            "return torch.bincount(experts[:, 0], minlength=num_experts)",
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
