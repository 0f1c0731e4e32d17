"""Each adapter's update is added unscaled: scales[a] is never applied."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT26_MODULE"
EXPECTED_OWNER = "pt26"

pt26 = mutated_module(
    "gptlab_drills.pt26",
    [(" * scales[adapter].to(wide)  # [n_a, O]", "  # [n_a, O]")],
)
globals().update(export_with("gptlab_drills.pt26", pt26))
