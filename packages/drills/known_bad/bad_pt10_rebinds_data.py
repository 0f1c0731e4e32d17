"""The shard is assigned with `target.data = shard.clone()`: the values look loaded, but the
Parameter now lives in other memory (a view of a larger buffer, or an optimizer's state
keyed on that memory, never sees the load)."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT10_MODULE"
EXPECTED_OWNER = "pt10"

pt10 = mutated_module(
    "gptlab_drills.pt10",
    [("    with torch.no_grad():\n        target.copy_(shard)", "    target.data = shard.clone()")],
)
globals().update(export_with("gptlab_drills.pt10", pt10))
