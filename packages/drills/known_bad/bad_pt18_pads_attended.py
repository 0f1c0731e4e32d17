"""Positions are repaired, but attention is only causal: real tokens still attend the pads."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT18_MODULE"
EXPECTED_OWNER = "pt18"

pt18 = mutated_module(
    "gptlab_drills.pt18",
    [
        (
            "        allowed = causal & (attention_mask.bool()[:, None, None, :] | itself)",
            "        allowed = causal",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt18", pt18))
