"""K and V are taken from each other's columns: V's block is read as the keys."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT05_MODULE"
EXPECTED_OWNER = "pt05"

pt05 = mutated_module(
    "gptlab_drills.pt05",
    [("    q, k, v = torch.split(packed, ", "    q, v, k = torch.split(packed, ")],
)
globals().update(export_with("gptlab_drills.pt05", pt05))
