"""Every row takes the first row's start, as one batch-wide slice x[:, s:s + width] would."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT01_MODULE"
EXPECTED_OWNER = "pt01"

pt01 = mutated_module(
    "gptlab_drills.pt01",
    [
        (
            "steps = starts.long()[:, None] + torch.arange",
            "steps = starts.long()[:1, None] + torch.arange",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt01", pt01))
