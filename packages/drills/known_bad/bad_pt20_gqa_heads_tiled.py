"""K/V heads are tiled (repeat) instead of interleaved: query head h reads K/V head h % Hkv,
not h // (Hq / Hkv)."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT20_MODULE"
EXPECTED_OWNER = "pt20"

pt20 = mutated_module(
    "gptlab_drills.pt20",
    [
        ("k.float().repeat_interleave(group, dim=1)", "k.float().repeat(1, group, 1)"),
        ("v.float().repeat_interleave(group, dim=1)", "v.float().repeat(1, group, 1)"),
    ],
)
globals().update(export_with("gptlab_drills.pt20", pt20))
