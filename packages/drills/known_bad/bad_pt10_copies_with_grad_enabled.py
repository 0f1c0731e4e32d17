"""The copy runs with grad enabled: into a Parameter that requires grad, copy_ is refused by
autograd ("a leaf Variable that requires grad is being used in an in-place operation")."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT10_MODULE"
EXPECTED_OWNER = "pt10"

pt10 = mutated_module(
    "gptlab_drills.pt10",
    [("    with torch.no_grad():\n        target.copy_(shard)", "    target.copy_(shard)")],
)
globals().update(export_with("gptlab_drills.pt10", pt10))
