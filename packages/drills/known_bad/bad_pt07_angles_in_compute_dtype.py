"""The angles p * freq are computed in the compute dtype: in bf16 or fp16 a position of a
few hundred has lost its last bits before cos and sin are taken."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT07_MODULE"
EXPECTED_OWNER = "pt07"

pt07 = mutated_module(
    "gptlab_drills.pt07",
    [
        ("        self.cos = angles.cos().to(dtype)\n        self.sin = angles.sin().to(dtype)",
         "        angles = torch.arange(length, device=device).to(dtype)[:, None] * freqs.to(dtype)\n"
         "        self.cos = angles.cos()\n        self.sin = angles.sin()"),
    ],
)  # fmt: skip
globals().update(export_with("gptlab_drills.pt07", pt07))
