"""One causal triangle over the whole flat axis: a query also attends every earlier
sequence's keys (the block-diagonal part of the mask is missing)."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT20_MODULE"
EXPECTED_OWNER = "pt20"

pt20 = mutated_module(
    "gptlab_drills.pt20",
    [
        (
            "    return (sequence[:, None] == sequence[None, :]) & (rows[None, :] <= rows[:, None])",
            "    return rows[None, :] <= rows[:, None]",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt20", pt20))
