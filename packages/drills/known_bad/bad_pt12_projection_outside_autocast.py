"""The whole function runs with autocast disabled, projection included: under an enclosing
bf16 autocast the caller gets a float32 result (and a float32 matmul) it did not ask for."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT12_MODULE"
EXPECTED_OWNER = "pt12"

pt12 = mutated_module(
    "gptlab_drills.pt12",
    [("        normed = (wide * inverse).to(x.dtype)\n    return F.linear(normed, weight)",
      "        normed = (wide * inverse).to(x.dtype)\n"
      "        return F.linear(normed, weight.to(normed.dtype))")],
)  # fmt: skip
globals().update(export_with("gptlab_drills.pt12", pt12))
