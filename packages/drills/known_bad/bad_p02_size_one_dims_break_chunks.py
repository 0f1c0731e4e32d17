"""Size-one dims are treated like any other: their stray stride breaks a chunk."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P02_MODULE"
EXPECTED_OWNER = "p02"

p02 = mutated_module(
    "gptlab_drills.p02",
    [
        (
            "        if size == 1:\n"
            "            continue  # a size-one dim has no step, whatever its stride says\n",
            "",
        )
    ],
)
globals().update(export_with("gptlab_drills.p02", p02))
