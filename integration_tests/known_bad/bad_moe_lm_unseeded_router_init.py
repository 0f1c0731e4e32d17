"""The router is initialised from a fresh, unseeded generator."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MOE_LM_MODULE"
EXPECTED_OWNER = "moe_block"
CLAUSE = "M05.13"

sparse = mutated_module(
    "moe_lm.sparse_moe",
    [
        (
            "self.gate = nn.Linear(hidden_size, num_experts, bias=False)",
            "self.gate = nn.Linear(hidden_size, num_experts, bias=False)\n        nn.init.normal_(self.gate.weight, generator=torch.Generator().manual_seed(torch.seed()))",
        ),
    ],
)
model = mutated_module(
    "moe_lm.model", rebind={"SparseMoE": sparse.SparseMoE, "MoEOutput": sparse.MoEOutput}
)
globals().update(export_with("moe_lm", sparse, model))
