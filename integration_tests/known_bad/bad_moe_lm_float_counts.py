"""Expert counts returned as float32 instead of int64."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MOE_LM_MODULE"
EXPECTED_OWNER = "moe_block"
CLAUSE = "M05.2"

routing = mutated_module(
    "moe_lm.routing",
    [
        (
            "return torch.bincount(experts.reshape(-1), minlength=num_experts)",
            "return torch.bincount(experts.reshape(-1), minlength=num_experts).float()",
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
