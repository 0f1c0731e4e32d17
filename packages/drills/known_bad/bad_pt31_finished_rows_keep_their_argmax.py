"""Only the score was tensorized: a finished row adds nothing to its score but still emits
its argmax instead of eos_id (the start's branch rewrote both; the repair kept one)."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT31_MODULE"
EXPECTED_OWNER = "pt31"

pt31 = mutated_module(
    "gptlab_drills.pt31",
    [("    tokens = torch.where(finished, eos_id, tokens)  # both outcomes, row by row\n", "")],
)
globals().update(export_with("gptlab_drills.pt31", pt31))
