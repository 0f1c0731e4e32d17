"""The old -> new map is a running count of live rows at every row, so finished rows get
a neighbour's index instead of -1."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P22_MODULE"
EXPECTED_OWNER = "p22"

p22 = mutated_module(
    "gptlab_drills.p22",
    [
        (
            "    old_to_new[keep] = torch.arange(len(keep), device=live.device)\n",
            "    old_to_new = live.long().cumsum(0) - 1\n",
        )
    ],
)
globals().update(export_with("gptlab_drills.p22", p22))
