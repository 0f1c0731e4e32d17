"""query_heads is never checked against the kv head count: the ratio is floored silently."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P04_MODULE"
EXPECTED_OWNER = "p04"

p04 = mutated_module("gptlab_drills.p04", [("if Hkv == 0 or query_heads % Hkv:", "if Hkv == 0:")])
globals().update(export_with("gptlab_drills.p04", p04))
