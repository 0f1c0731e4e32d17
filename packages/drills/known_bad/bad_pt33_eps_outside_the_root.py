"""eps added after the square root: x / (rms + eps), a common RMSNorm slip."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT33_MODULE"
EXPECTED_OWNER = "pt33"

pt33 = mutated_module(
    "gptlab_drills.pt33",
    [
        (
            "    scale = torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + eps)",
            "    scale = 1 / (torch.sqrt(x32.pow(2).mean(dim=-1, keepdim=True)) + eps)",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt33", pt33))
