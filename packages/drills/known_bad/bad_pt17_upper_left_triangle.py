"""The mask is the top-left triangle of a Tq x Tk matrix (query index >= key index),
ignoring the absolute positions, so a chunk after a cache loses the cached keys."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT17_MODULE"
EXPECTED_OWNER = "pt17"

pt17 = mutated_module(
    "gptlab_drills.pt17",
    [
        (
            "not_after = key_positions[:, None, :] <= query_positions[:, :, None]",
            "not_after = torch.ones(query_positions.shape[1], key_positions.shape[1],"
            " dtype=torch.bool, device=key_valid.device).tril()[None]",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt17", pt17))
