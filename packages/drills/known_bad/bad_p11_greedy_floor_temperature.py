"""Temperature 0 is floored to 1e-5 and sampled: greedy draws from (and advances) the generator."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P11_MODULE"
EXPECTED_OWNER = "p11"

p11 = mutated_module(
    "gptlab_drills.p11",
    [
        ("    if temperature == 0:\n        return logits.argmax(dim=-1)\n", ""),
        ("/ temperature", "/ max(temperature, 1e-5)"),
    ],
    within="sample_next_token",
)
globals().update(export_with("gptlab_drills.p11", p11))
