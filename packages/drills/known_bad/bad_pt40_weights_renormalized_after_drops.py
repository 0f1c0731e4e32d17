"""A token that loses a route to capacity has its kept weights renormalized to sum to 1,
against the stated policy (normalize over all K routes, then drop): the dropped share is
handed to the surviving experts."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT40_MODULE"
EXPECTED_OWNER = "pt40"

pt40 = mutated_module(
    "gptlab_drills.pt40",
    [
        (
            "    normalized = top_weights / top_weights.sum(dim=-1, keepdim=True)",
            "    kept = (inverse.view(T, K) >= 0).to(top_weights.dtype)\n"
            "    normalized = top_weights / (top_weights * kept).sum(dim=-1, keepdim=True)",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt40", pt40))
