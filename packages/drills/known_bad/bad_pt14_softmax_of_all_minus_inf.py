"""The weights are torch.softmax over the -inf-filled slice: a fully masked slice is all
-inf, and softmax of it is 0/0 = NaN in every weight."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT14_MODULE"
EXPECTED_OWNER = "pt14"

pt14 = mutated_module(
    "gptlab_drills.pt14",
    [
        (
            "    weights = torch.where(total > 0, exps / total, 0.0)",
            "    weights = torch.softmax(work, dim=dim)",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt14", pt14))
