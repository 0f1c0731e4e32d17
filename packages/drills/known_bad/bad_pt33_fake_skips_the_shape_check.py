"""Only the real implementation checks weight's size: a traced call with a wrong weight
gets a result where the eager one raises."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT33_MODULE"
EXPECTED_OWNER = "pt33"

pt33 = mutated_module(
    "gptlab_drills.pt33",
    [
        (
            "def _rms_norm_fake(x: Tensor, weight: Tensor, eps: float) -> Tensor:\n    _check(x, weight, eps)\n",
            "def _rms_norm_fake(x: Tensor, weight: Tensor, eps: float) -> Tensor:\n",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt33", pt33))
