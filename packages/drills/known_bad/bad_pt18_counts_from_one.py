"""The running count of the mask is used as the position without the - 1: real tokens are
numbered 1..n, so a sequence as long as the rotary table runs off its end."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT18_MODULE"
EXPECTED_OWNER = "pt18"

pt18 = mutated_module(
    "gptlab_drills.pt18",
    [("    return (real.long().cumsum(-1) - 1).clamp(min=0)", "    return real.long().cumsum(-1)")],
)
globals().update(export_with("gptlab_drills.pt18", pt18))
