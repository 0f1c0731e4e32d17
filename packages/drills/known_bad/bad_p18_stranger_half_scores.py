"""A stranger's attention computes the scores in the inputs' own precision and only then
upcasts: float16 scores past 65504 overflow to inf and the weights become NaN."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P18_MODULE"
EXPECTED_OWNER = "p18"

p18 = mutated_module(
    "gptlab_drills.p18",
    [
        (
            "scores = q.float() @ k.float().transpose(-2, -1) * scale",
            "scores = (q @ k.transpose(-2, -1) * scale).float()",
        )
    ],
)
globals().update(export_with("gptlab_drills.p18", p18))
