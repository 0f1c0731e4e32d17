"""Each rank reports its candidates by their column in its own shard, never adding the
shard's offset: every rank's best logit claims an id below V_r."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT39_MODULE"
EXPECTED_OWNER = "pt39"

pt39 = mutated_module(
    "gptlab_drills.pt39",
    [("return values[:, :keep], ids[:, :keep] + offset", "return values[:, :keep], ids[:, :keep]")],
)
globals().update(export_with("gptlab_drills.pt39", pt39))
