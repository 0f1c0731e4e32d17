"""eps is added to the root mean square instead of inside the square root."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P14_MODULE"
EXPECTED_OWNER = "p14"

p14 = mutated_module(
    "gptlab_drills.p14",
    [(
        "torch.rsqrt(xw.pow(2).mean(dim=-1, keepdim=True) + eps)",
        "1 / (xw.pow(2).mean(dim=-1, keepdim=True).sqrt() + eps)",
    )],
)  # fmt: skip
globals().update(export_with("gptlab_drills.p14", p14))
