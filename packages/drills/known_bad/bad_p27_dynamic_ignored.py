"""The probe compiles with torch's default shape policy whatever `dynamic` says."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P27_MODULE"
EXPECTED_OWNER = "p27"

p27 = mutated_module(
    "gptlab_drills.p27",
    [("torch.compile(fn, backend=counting, dynamic=dynamic)",
      "torch.compile(fn, backend=counting, dynamic=None)")],
)  # fmt: skip
globals().update(export_with("gptlab_drills.p27", p27))
