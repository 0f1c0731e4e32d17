"""Masked target ids are replaced by 0 before the gather and only valid ids are checked:
an out-of-vocabulary id hidden by the mask is silently accepted."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT13_MODULE"
EXPECTED_OWNER = "pt13"

pt13 = mutated_module(
    "gptlab_drills.pt13",
    [
        (
            "if bool(((targets < 0) | (targets >= V)).any()):",
            "if bool((((targets < 0) | (targets >= V)) & valid).any()):",
        ),
        (
            "picked = work.gather(-1, targets.long().unsqueeze(-1))",
            "picked = work.gather(-1, targets.long().masked_fill(~valid, 0).unsqueeze(-1))",
        ),
    ],
)
globals().update(export_with("gptlab_drills.pt13", pt13))
