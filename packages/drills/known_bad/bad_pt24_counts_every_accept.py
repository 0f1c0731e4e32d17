"""Every accepted token is counted, also those after a row's first rejection (no prefix)."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT24_MODULE"
EXPECTED_OWNER = "pt24"

pt24 = mutated_module(
    "gptlab_drills.pt24",
    [("return accepted.long().cumprod(dim=1).sum(dim=1)", "return accepted.long().sum(dim=1)")],
)
globals().update(export_with("gptlab_drills.pt24", pt24))
