"""Temperature 0 has no greedy path: logits / 0 is +-inf and the softmax is NaN."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P08_MODULE"
EXPECTED_OWNER = "p08"

p08 = mutated_module(
    "gptlab_drills.p08",
    [("    if temperature == 0:\n", "    if temperature == 0 and False:\n")],
    within="temperature_probs",
)
globals().update(export_with("gptlab_drills.p08", p08))
