"""The router Linear keeps a bias: an extra gate.bias in the state dict."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "MOE_LM_MODULE"
EXPECTED_OWNER = "moe_block"
CLAUSE = "M05.1"

sparse = mutated_module(
    "moe_lm.sparse_moe",
    [
        (
            "nn.Linear(hidden_size, num_experts, bias=False)",
            "nn.Linear(hidden_size, num_experts, bias=True)",
        ),
    ],
)
model = mutated_module(
    "moe_lm.model", rebind={"SparseMoE": sparse.SparseMoE, "MoEOutput": sparse.MoEOutput}
)
globals().update(export_with("moe_lm", sparse, model))
