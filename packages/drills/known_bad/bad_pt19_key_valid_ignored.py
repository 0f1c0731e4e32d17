"""key_valid is not read: a left-padded row's padding keys (whose positions repeat 0) are
attended beside its first token."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT19_MODULE"
EXPECTED_OWNER = "pt19"

pt19 = mutated_module(
    "gptlab_drills.pt19",
    [("    allowed = key_valid[:, None, :] & (kpos <= qpos)", "    allowed = (kpos <= qpos)")],
)
globals().update(export_with("gptlab_drills.pt19", pt19))
