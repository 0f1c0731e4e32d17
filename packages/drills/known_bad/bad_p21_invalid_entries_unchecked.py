"""The gathered physical blocks are never checked: a -1 entry silently reads the pool's
last block, and an entry past the pool fails deep inside indexing."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P21_MODULE"
EXPECTED_OWNER = "p21"

p21 = mutated_module(
    "gptlab_drills.p21", [("    _check_blocks(blocks, positions, cache.shape[0])\n", "")]
)
globals().update(export_with("gptlab_drills.p21", p21))
