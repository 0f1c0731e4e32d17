"""The probe restores the caller's mode with one `module.train(was_training)`, flattening a
submodule's own train/eval flag."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P17_MODULE"
EXPECTED_OWNER = "p17"

p17 = mutated_module(
    "gptlab_drills.p17",
    [
        (
            "        for sub, training in flags:\n            sub.training = training",
            "        module.train(flags[0][1])",
        )
    ],
)
globals().update(export_with("gptlab_drills.p17", p17))
