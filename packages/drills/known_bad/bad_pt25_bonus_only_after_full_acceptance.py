"""The bonus token is committed only by a row that accepted all K drafts (as if it were an
extra reward), not by every row."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT25_MODULE"
EXPECTED_OWNER = "pt25"

pt25 = mutated_module(
    "gptlab_drills.pt25",
    [
        (
            "taken = torch.cat([commit_mask, commit_mask.new_ones(B, 1)], dim=1)",
            "taken = torch.cat([commit_mask, (accepted == K)[:, None]], dim=1)",
        ),
        (
            "new_positions = positions + accepted.to(positions.dtype) + 1",
            "new_positions = positions + accepted.to(positions.dtype) + (accepted == K).to(positions.dtype)",
        ),
    ],
)
globals().update(export_with("gptlab_drills.pt25", pt25))
