"""Every cache slot is attended, encoder_lengths unused: a row's padding (whatever the cache
holds past its length) leaks into its output."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT16_MODULE"
EXPECTED_OWNER = "pt16"

pt16 = mutated_module(
    "gptlab_drills.pt16",
    [
        (
            "    keys = torch.arange(Te, device=q.device) < encoder_lengths[:, None]  # [B, Te]",
            "    keys = torch.ones(B, Te, dtype=torch.bool, device=q.device)",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt16", pt16))
