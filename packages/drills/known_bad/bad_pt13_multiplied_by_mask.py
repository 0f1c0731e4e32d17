"""Masked positions are zeroed by multiplying with the mask: a masked -inf logprob gives
-inf * 0 = NaN, which then poisons its row's sum."""

from gptlab_testkit.mutants import export_with, mutated_module

VARIABLE = "DRILL_PT13_MODULE"
EXPECTED_OWNER = "pt13"

pt13 = mutated_module(
    "gptlab_drills.pt13",
    [
        (
            "token = torch.where(valid, picked - torch.logsumexp(work, dim=-1), 0.0)",
            "token = (picked - torch.logsumexp(work, dim=-1)) * valid",
        )
    ],
)
globals().update(export_with("gptlab_drills.pt13", pt13))
