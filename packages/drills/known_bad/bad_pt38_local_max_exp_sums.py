"""Each rank's exp-sum is taken against its own shard's max and the sums are added as they
are: right only when every shard happens to share the global max (one rank, or equal maxes)."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT38_MODULE"
EXPECTED_OWNER = "pt38"

pt38 = mutated_module(
    "gptlab_drills.pt38",
    [
        (
            "    exp_sum = (logits - global_max[:, None]).exp().sum(dim=-1)",
            "    exp_sum = (logits - logits.amax(dim=-1, keepdim=True)).exp().sum(dim=-1)",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt38", pt38))
