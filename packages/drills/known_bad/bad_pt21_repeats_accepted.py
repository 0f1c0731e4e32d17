"""Duplicate destinations are not checked: the scatter writes and one token silently wins."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT21_MODULE"
EXPECTED_OWNER = "pt21"

pt21 = mutated_module(
    "gptlab_drills.pt21",
    [("    if torch.unique(slot_mapping).numel() != slot_mapping.numel():", "    if False:")],
)
globals().update(export_with("gptlab_drills.pt21", pt21))
