"""The mask's polarity is flipped: 0 where a key is blocked, the dtype's minimum where allowed."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P05_MODULE"
EXPECTED_OWNER = "p05"

p05 = mutated_module(
    "gptlab_drills.p05",
    [("torch.where(allowed, zero, blocked)", "torch.where(allowed, blocked, zero)")],
)
globals().update(export_with("gptlab_drills.p05", p05))
