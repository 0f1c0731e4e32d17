"""Every row is rotated by the first row's positions (per-row [B, T] positions flattened to
one shared row)."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_P15_MODULE"
EXPECTED_OWNER = "p15"

p15 = mutated_module(
    "gptlab_drills.p15",
    [(
        "pos = positions.to(torch.float32).expand(B, T)",
        "pos = positions.to(torch.float32).reshape(-1, T)[:1].expand(B, T)",
    )],
)  # fmt: skip
globals().update(export_with("gptlab_drills.p15", p15))
