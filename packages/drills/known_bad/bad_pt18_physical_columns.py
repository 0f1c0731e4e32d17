"""Pads are masked out, but the positions are still the physical columns 0..T-1: a padded
row's real tokens start at the pad count (and run off a small rotary table)."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT18_MODULE"
EXPECTED_OWNER = "pt18"

pt18 = mutated_module(
    "gptlab_drills.pt18",
    [
        (
            "    return (real.long().cumsum(-1) - 1).clamp(min=0)",
            "    return torch.arange(real.shape[1], device=real.device).expand(real.shape)",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt18", pt18))
