"""Emptiness is read back from the result (lse == -inf): a slice whose valid entries are
all a genuine -inf is reported empty as well."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT14_MODULE"
EXPECTED_OWNER = "pt14"

pt14 = mutated_module(
    "gptlab_drills.pt14",
    [
        (
            "    empty = ~valid.any(dim=dim, keepdim=True)",
            "    empty = lse == -torch.inf",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt14", pt14))
