"""The fresh-output fake states value's metadata, not the cache's: a compiled graph
believes the updated cache is [n, *F]."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT34_MODULE"
EXPECTED_OWNER = "pt34"

pt34 = mutated_module(
    "gptlab_drills.pt34",
    [
        (
            "    return cache.new_empty(cache.shape)  #",
            "    return value.new_empty(value.shape)  #",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt34", pt34))
