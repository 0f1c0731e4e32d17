"""The chosen experts are weighted by their softmax probabilities over all experts, never
renormalised over the chosen ones: a token's weights sum to less than 1."""

from __future__ import annotations

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "FRAGMENT_LM_MODULE"
EXPECTED_OWNER = "fragment_router"
CLAUSE = "M10.6"

routing = mutated_module(
    "moe_lm.routing", [("weights = chosen / chosen.sum(dim=-1, keepdim=True)", "weights = chosen")]
)
sparse = mutated_module("moe_lm.sparse_moe", rebind={"route": routing.route})
layers = mutated_module(
    "fragment_lm.layers", rebind={"SparseMoE": sparse.SparseMoE, "MoEOutput": sparse.MoEOutput}
)
model = mutated_module("fragment_lm.model", rebind={"FragmentLayer": layers.FragmentLayer})
globals().update(export_with("fragment_lm", model))
