"""A plain torch.topk ranks the experts: equal probabilities no longer go to the lower index."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MOE_LM_MODULE"
EXPECTED_OWNER = "moe_router"
CLAUSE = "M05.4"

routing = mutated_module(
    "moe_lm.routing",
    [
        (
            "ranked, order = probabilities.sort(dim=-1, descending=True, stable=True)",
            "ranked, order = probabilities.topk(probabilities.shape[-1], dim=-1)",
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
