"""The flat slot is split the wrong way round: page = slot % P, offset = slot // P, as if
the pool were laid out offset-major."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT21_MODULE"
EXPECTED_OWNER = "pt21"

pt21 = mutated_module(
    "gptlab_drills.pt21",
    [
        (
            "cache[slots // page_size, slots % page_size] = values",
            "cache[slots % cache.shape[0], slots // cache.shape[0]] = values",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt21", pt21))
