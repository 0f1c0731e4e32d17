"""The tables are registered with register_buffer's default, persistent=True: every
checkpoint carries a copy of derived state, and a checkpoint without them no longer loads."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT07_MODULE"
EXPECTED_OWNER = "pt07"

pt07 = mutated_module(
    "gptlab_drills.pt07",
    [
        ('self.register_buffer("cos", empty, persistent=False)',
         'self.register_buffer("cos", empty)'),
        ('self.register_buffer("sin", empty.clone(), persistent=False)',
         'self.register_buffer("sin", empty.clone())'),
    ],
)  # fmt: skip
globals().update(export_with("gptlab_drills.pt07", pt07))
