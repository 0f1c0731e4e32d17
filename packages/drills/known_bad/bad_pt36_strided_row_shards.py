"""Rank r takes every R-th row of weight (rows r, r+R, ...) instead of the block
r*O/R..(r+1)*O/R: each rank computes real outputs, but not its own, and the gather
puts them in the wrong columns."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT36_MODULE"
EXPECTED_OWNER = "pt36"

pt36 = mutated_module(
    "gptlab_drills.pt36",
    [
        (
            "weight_shards = weight.chunk(world_size, dim=0)",
            "weight_shards = [weight[r::world_size] for r in range(world_size)]",
        ),
        (
            "list(bias.chunk(world_size))",
            "[bias[r::world_size] for r in range(world_size)]",
        ),
    ],
)
globals().update(export_with("gptlab_drills.pt36", pt36))
