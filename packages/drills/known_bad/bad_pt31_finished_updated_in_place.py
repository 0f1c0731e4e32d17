"""The core updates the caller's finished flags in place (`finished |= ...`) and returns
them: the tensorized step writes an input the start only read."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT31_MODULE"
EXPECTED_OWNER = "pt31"

pt31 = mutated_module(
    "gptlab_drills.pt31",
    [
        (
            "    return tokens, finished | (tokens == eos_id), scores + best\n",
            "    finished |= tokens == eos_id\n    return tokens, finished, scores + best\n",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt31", pt31))
