"""A replicated x is handed whole to every rank and each rank's weight columns are read
against x's first I/R features: the rank-local slice of x is never taken."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT37_MODULE"
EXPECTED_OWNER = "pt37"

pt37 = mutated_module(
    "gptlab_drills.pt37",
    [
        (
            "return list(x.chunk(world_size, dim=-1))",
            "return [x[..., : x.shape[-1] // world_size]] * world_size",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt37", pt37))
